#!/usr/bin/env bash
# Kubernetes' path to kin: containerd's CRI plugin (Debian's 1.6, a private
# instance with its own config, root, state and socket) with a runtime
# handler "kin" of type io.containerd.kin.v2, images imported by hand into
# namespace k8s.io (the pause image too), and the kubelet's calls made by a
# Python CRI client (tests/cri/cri_flow.py): once with host-network pods,
# once with the pod's network from CNI (bridge + host-local), where the
# pod's zone joins the netns CRI made. The OOM check needs a memory
# controller, which this host's hybrid cgroups lack (a guest has it).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin cri
ns_need_cgroup2
PY=/usr/bin/python3 # Debian's, with Debian's grpcio (not a pyenv's)
for c in containerd ctr $PY; do
	command -v $c >/dev/null || ns_skip "no $c (scripts/deps.sh installs containerd, python3-grpcio)"
done
$PY -c 'import grpc, grpc_tools' 2>/dev/null || ns_skip "no python3-grpcio/python3-grpc-tools"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
[ -x /usr/lib/cni/bridge ] || ns_skip "no CNI plugins (containernetworking-plugins)"
CD=$T/cd
BR=kincri$(($$ % 10000))
NET=10.$((100 + $$ % 100)).$(($$ / 100 % 250)).0/24
cleanup() {
	[ -n "${CPID:-}" ] && kill "$CPID" 2>/dev/null && wait "$CPID" 2>/dev/null
	pkill -KILL -f "containerd-shim-kin-v2 -namespace k8s.io -id .* -address $CD/sock " 2>/dev/null
	sleep 0.2
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	ip link del "$BR" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$CD/bin" "$CD/cni" "$CD/logs"
ln -s "$KIN" "$CD/bin/containerd-shim-kin-v2"
cat >"$CD/config.toml" <<EOF2
version = 2
root = "$CD/root"
state = "$CD/state"
[grpc]
  address = "$CD/sock"
[ttrpc]
  address = "$CD/sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "kin.test/pause:1"
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kin]
    runtime_type = "io.containerd.kin.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CD/cni"
EOF2
cat >"$CD/cni/10-kin.conflist" <<EOF2
{"cniVersion": "0.4.0", "name": "kintest", "plugins": [
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NET"}]], "dataDir": "$CD/ipam"}},
  {"type": "loopback"}]}
EOF2
shims_before=$(ls /run/kin/shim/k8s.io 2>/dev/null)
cgs_before=$(ls "$CG/k8s.io" 2>/dev/null)
PATH=$CD/bin:$PATH containerd --config "$CD/config.toml" >"$CD/log" 2>&1 &
CPID=$!
wait_for "ctr -a '$CD/sock' version >/dev/null 2>&1" 250 || ns_skip "containerd does not start here"
grep -q 'failed to load plugin io.containerd.grpc.v1.cri' "$CD/log" &&
	{ grep 'io.containerd.grpc.v1.cri' "$CD/log" | tail -2 >"$T/out"; bad cri_plugin "CRI did not load"; }

L=$T/layer
busybox_layer "$L" sh echo cat sleep seq grep ls ip hostname mount mkdir test
C="ctr -a $CD/sock -n k8s.io"
# The pause image is never run (the pod's zone is the sandbox); CRI wants
# it present.
for img in pause bb; do
	python3 tests/oci/mkimage.py --format oci-archive --out "$T/$img.tar" --tag kin.test/$img:1 \
		--config '{"Cmd":["/bin/sleep","1000000"],"Env":["PATH=/bin"]}' "$L" >/dev/null &&
		$C image import --all-platforms "$T/$img.tar" >"$T/out" 2>&1 ||
		bad image_import "could not import kin.test/$img:1"
done

flow() { # NAME [SCRIPT] ARGS...: the flow's PASS/FAIL lines, renamed into this suite
	local name=$1 script=cri_flow.py
	shift
	case ${1:-} in *.py) script=$1; shift ;; esac
	timeout 300 $PY tests/cri/$script "$CD/sock" "$T/gen" "${HANDLER:-kin}" kin.test/bb:1 "$CD/logs" "$@" \
		>"$T/flow" 2>&1
	while read -r verdict rest; do
		case $verdict in
		PASS) ok "$name/${rest#cri/}" ;;
		FAIL) echo "${rest#*: }" >"$T/out"; rest=${rest#cri/}; bad "$name/${rest%%:*}" "${rest#*: }" ;;
		esac
	done <"$T/flow"
	grep -q '^PASS\|^FAIL' "$T/flow" || { cp "$T/flow" "$T/out"; bad "$name/flow" "no result"; }
}
# CRI_ONLY=SPEC,...: only those of cri_conform.py (a developer's loop)
if [ -z "${CRI_ONLY:-}" ]; then
	flow host --host-network
	rm -f "$CD/logs"/*.log
	flow cni
fi
# critest's specs the shim once failed: privileged pods, host IPC and PID,
# pod sysctls, volume propagation (tests/cri/cri_conform.py)
rm -f "$CD/logs"/*.log
flow conform cri_conform.py ${CRI_ONLY:+--only $CRI_ONLY}
[ -n "${CRI_RUNC:-}" ] && HANDLER=runc flow conform-runc cri_conform.py ${CRI_ONLY:+--only $CRI_ONLY}
echo "SKIP ns/cri/oom_killed: no memory controller in this host's cgroup2 (hybrid)"

# Every pod removed: no shim state, cgroup or mount of theirs is left.
# (a shim's state goes before its pod's cgroup is removed, and containerd
# unmounts a container's rootfs after its shim answered: wait for all)
wait_for "[ \"\$(ls /run/kin/shim/k8s.io 2>/dev/null)\" = \"$shims_before\" ] &&
	[ \"\$(ls '$CG/k8s.io' 2>/dev/null)\" = \"$cgs_before\" ] &&
	! grep -q '$CD/state\|kin-pod' /proc/self/mountinfo" 500
[ "$(ls /run/kin/shim/k8s.io 2>/dev/null)" = "$shims_before" ] &&
	[ "$(ls "$CG/k8s.io" 2>/dev/null)" = "$cgs_before" ] &&
	! grep -q "$CD/state\|kin-pod" /proc/self/mountinfo && ok nothing_left ||
	{
		{ ls /run/kin/shim/k8s.io; ls -d "$CG/k8s.io"/*/; grep "$CD/state\|kin-pod" /proc/self/mountinfo; } >"$T/out" 2>&1
		bad nothing_left "shim state, cgroups or mounts left"
	}
ns_suite_end
