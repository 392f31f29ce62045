#!/usr/bin/env bash
# kin-vm pods: a private containerd (Debian's 1.6, CRI plugin on) runs
# io.containerd.kin-vm.v2, so each pod is a microVM booted under QEMU (TCG
# here) with kin as the guest's PID 1, the shim's config naming the cached
# kernel and an image built here. Through ctr: output, exit status, 128+N,
# stdin relayed into the guest, run -d with exec (and its stdin), ps,
# pause/resume, metrics from the guest's cgroups, the pod through the
# shim's kin API, the shim's kin re-executed with output and stdin
# flowing, containerd restarted mid-pod, a shim SIGKILLed then
# cleaned up by delete (its QEMU too). Through the Python CRI client: the
# flow of tests/ns/cri with handler kin-vm, with an OOM kill reported as
# OOMKilled (the guest has every cgroup controller). Nothing is left.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin kin-vm
PY=/usr/bin/python3
skip() {
	echo "SKIP vm/kin-vm: $1"
	echo "0 passed, 0 failed"
	exit 0
}
for c in containerd ctr $PY; do
	command -v $c >/dev/null || skip "no $c (scripts/deps.sh installs containerd)"
done
[ -x /bin/busybox ] || skip "no /bin/busybox (busybox-static)"
NS=kinvm$$
CD=$T/cd
CG=$(cgroup2_mount)
cleanup() {
	for id in $(ctr -a "$CD/sock" -n $NS t ls -q 2>/dev/null); do
		ctr -a "$CD/sock" -n $NS t kill -s KILL "$id" >/dev/null 2>&1
	done
	[ -n "${CPID:-}" ] && kill "$CPID" 2>/dev/null && wait "$CPID" 2>/dev/null
	pkill -KILL -f "containerd-shim-kin-vm-v2 -namespace ($NS|k8s.io) -id .* -address $CD/sock " 2>/dev/null
	sleep 0.3
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for d in /run/kin/shim/$NS/*/pod; do umount -l "$d" 2>/dev/null; done
	rm -rf "/run/kin/shim/$NS"
	[ -n "$CG" ] && cgroup_tree_remove "$CG/$NS"
	ip link del "${BR:-none}" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$CD/bin" "$CD/logs"
ln -s "$KIN" "$CD/bin/containerd-shim-kin-vm-v2"
"$KIN" image build -o "$T/guest.cpio" >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
cat >"$T/shim.conf" <<EOF
# kin-vm pods of this suite
vm.kernel = $KERNEL
vm.image = $T/guest.cpio
vm.memory = 384M
EOF
cat >"$CD/config.toml" <<EOF
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
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kin-vm]
    runtime_type = "io.containerd.kin-vm.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CD/cni"
EOF
BR=kinvm$(($$ % 10000))
NET=10.$((100 + $$ % 100)).$(($$ / 100 % 250 + 1)).0/24
mkdir -p "$CD/cni"
cat >"$CD/cni/10-kin.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "kinvmtest", "plugins": [
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$NET"}]], "dataDir": "$CD/ipam"}},
  {"type": "loopback"}]}
EOF
cd_start() {
	KIN_SHIM_CONFIG=$T/shim.conf PATH=$CD/bin:$PATH containerd --config "$CD/config.toml" \
		>>"$CD/log" 2>&1 &
	CPID=$!
	wait_for "ctr -a '$CD/sock' version >/dev/null 2>&1" 250
}
cd_start || skip "containerd does not start here"
C="ctr -a $CD/sock -n $NS"
R="--runtime io.containerd.kin-vm.v2"

L=$T/layer
busybox_layer "$L" sh echo cat ls sleep true hostname ps id kill seq
for img in pause bb; do
	python3 tests/oci/mkimage.py --format oci-archive --out "$T/$img.tar" --tag kin.test/$img:1 \
		--config '{"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}' "$L" >/dev/null || bad mkimage "$img"
done
$C image import --all-platforms "$T/bb.tar" >"$T/out" 2>&1 || bad image_import "ctr import" "$T/out"
for img in pause bb; do
	ctr -a "$CD/sock" -n k8s.io image import --all-platforms "$T/$img.tar" >"$T/out" 2>&1 ||
		bad image_import_k8s "kin.test/$img:1" "$T/out"
done
IMG=kin.test/bb:1

# run: the guest's kernel, output on stdout and stderr, the exit status.
timeout 120 $C run --rm $R $IMG t1 /bin/sh -c 'echo to-out; echo to-err >&2; uname -r; exit 3' \
	>"$T/o1" 2>"$T/e1"
rc=$?
[ $rc -eq 3 ] && grep -qx to-out "$T/o1" && grep -q to-err "$T/e1" && ok run_output_status ||
	{ cat "$T/o1" "$T/e1" >"$T/out"; bad run_output_status "rc $rc" "$T/out"; }
guest=$(basename "$KERNEL" | sed 's/^vmlinuz-//')
grep -qx "$guest" "$T/o1" && ok runs_in_guest_kernel ||
	bad runs_in_guest_kernel "uname -r is not $guest" "$T/o1"
echo piped-in | timeout 120 $C run --rm $R $IMG t2 /bin/cat >"$T/out" 2>&1
grep -qx piped-in "$T/out" && ok run_stdin_relayed || bad run_stdin_relayed "no echo" "$T/out"
seq 1 20000 | timeout 120 $C run --rm $R $IMG t3 /bin/cat >"$T/big" 2>&1
[ "$(wc -l <"$T/big")" = 20000 ] && [ "$(tail -1 "$T/big")" = 20000 ] && ok relay_no_loss ||
	bad relay_no_loss "$(wc -l <"$T/big") of 20000 lines came back"

# run -d, then what a user does with a running task.
timeout 120 $C run -d $R $IMG d1 /bin/sleep 1000 >"$T/out" 2>&1 || bad run_detached "failed" "$T/out"
$C t ls 2>&1 | grep -q '^d1 .*RUNNING' && ok detached_running || bad detached_running "not RUNNING"
$C t exec --exec-id e1 d1 /bin/sh -c 'cat /proc/1/cmdline; echo; exit 4' >"$T/out" 2>&1
rc=$?
[ $rc -eq 4 ] && tr '\0' ' ' <"$T/out" | grep -q '^/bin/sleep 1000' && ok exec_in_container ||
	bad exec_in_container "rc $rc" "$T/out"
echo via-exec | $C t exec --exec-id e2 d1 /bin/cat >"$T/out" 2>&1
grep -qx via-exec "$T/out" && ok exec_stdin || bad exec_stdin "no echo" "$T/out"
$C t exec --exec-id e3 d1 /bin/sleep 100 >/dev/null 2>&1 &
EX=$!
wait_for "$C t ps d1 2>/dev/null | grep -c '^[0-9]' | grep -qx 2" 250
$C t kill --exec-id e3 -s TERM d1 >/dev/null 2>&1
wait $EX
rc=$?
[ $rc -eq 143 ] && ok exec_signalled_143 || bad exec_signalled_143 "rc $rc"
$C t pause d1 >"$T/out" 2>&1 && $C t ls 2>&1 | grep -q '^d1 .*PAUSED' &&
	$C t resume d1 >>"$T/out" 2>&1 && $C t ls 2>&1 | grep -q '^d1 .*RUNNING' &&
	ok pause_resume || bad pause_resume "state did not follow" "$T/out"
$C t metrics d1 >"$T/out" 2>&1
grep -q 'cpu.usage_usec' "$T/out" && awk '$1 == "memory.usage" {exit !($2 > 0)}' "$T/out" &&
	ok metrics_from_guest || bad metrics_from_guest "no cgroup v2 metrics" "$T/out"
KS=/run/kin/shim/$NS/d1/kin.sock
"$KIN" ctl --socket "$KS" zone list >"$T/out" 2>&1 && grep -q '^pod .*vm' "$T/out" &&
	"$KIN" ctl --socket "$KS" --target pod exec list >"$T/out" 2>&1 &&
	grep -q '^d1 *init *running' "$T/out" && ok kin_api_sees_pod_vm ||
	bad kin_api_sees_pod_vm "no VM zone or exec" "$T/out"

# The shim's kin re-executes itself (an upgrade in place) three times while
# a process in the pod's VM prints numbered lines on both streams and
# another echoes its stdin back: every line reaches containerd once and in
# order, stdin goes on, the exit statuses are seen; the same shim and QEMU.
SHIM=$(pgrep -f "containerd-shim-kin-vm-v2 -namespace $NS -id d1 ")
QEMU=$(pgrep -f "qemu-system-x86_64 -name pod .*/run/kin/shim/$NS/d1/")
timeout 300 $C t exec --exec-id e5 d1 /bin/sh -c \
	'i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo n$i; echo m$i >&2; sleep 0.02; done; exit 6' \
	>"$T/o5" 2>"$T/e5" &
X5=$!
(for i in $(seq 1 200); do echo s$i; sleep 0.03; done) | timeout 300 $C t exec --exec-id e6 d1 /bin/cat \
	>"$T/o6" 2>&1 &
X6=$!
sleep 1
n_ok=0
: >"$T/rx"
for i in 1 2 3; do
	"$KIN" ctl --socket "$KS" reexec >>"$T/rx" 2>&1 && n_ok=$((n_ok + 1))
	sleep 1
done
wait $X5
r5=$?
wait $X6
r6=$?
[ $n_ok -eq 3 ] && [ -n "$SHIM" ] && [ -n "$QEMU" ] && kill -0 "$SHIM" && kill -0 "$QEMU" &&
	[ "$(pgrep -f "containerd-shim-kin-vm-v2 -namespace $NS -id d1 ")" = "$SHIM" ] &&
	ok shim_reexec || bad shim_reexec "$n_ok of 3 re-execs (shim ${SHIM:-none}, qemu ${QEMU:-none})" "$T/rx"
seq 1 300 | sed 's/^/n/' | cmp -s - "$T/o5" && seq 1 300 | sed 's/^/m/' | cmp -s - "$T/e5" &&
	[ $r5 -eq 6 ] && ok shim_reexec_output_once_in_order ||
	{ cat "$T/o5" "$T/e5" >"$T/out"; bad shim_reexec_output_once_in_order "exit $r5, $(wc -l <"$T/o5") + $(wc -l <"$T/e5") of 300 + 300 lines" "$T/out"; }
seq 1 200 | sed 's/^/s/' | cmp -s - "$T/o6" && [ $r6 -eq 0 ] && ok shim_reexec_stdin_goes_on ||
	bad shim_reexec_stdin_goes_on "exit $r6, $(wc -l <"$T/o6") of 200 lines" "$T/o6"

# A hostile caller of the kin-vm shim's Task service (tests/shim/hostile.c,
# as in ns/shim): each bad request answered with its code and a sentence,
# the task in the VM untouched, the shim serving.
SOCK=$(sed 's|^unix://||' "$CD/state/io.containerd.runtime.v2.task/$NS/d1/address" 2>/dev/null)
mkdir -p "$T/hostile"
"$PWD/$BUILD/shim-hostile" "$SOCK" d1 "$T/hostile" >"$T/hostile.out" 2>&1
while read -r verdict name why; do
	case $verdict in
	ok) ok "hostile/$name" ;;
	bad) echo "$why" >"$T/out"; bad "hostile/$name" "$why" ;;
	esac
done <"$T/hostile.out"
grep -q '^ok task_still_running' "$T/hostile.out" || bad hostile "no verdict" "$T/hostile.out"

# containerd restarted: the pod's VM goes on, and exec and kill work after.
kill "$CPID" && wait "$CPID" 2>/dev/null
cd_start || bad containerd_restart "containerd did not come back"
$C t ls 2>&1 | grep -q '^d1 .*RUNNING' && ok restart_task_kept || bad restart_task_kept "not RUNNING"
$C t exec --exec-id e4 d1 /bin/echo after-restart >"$T/out" 2>&1
grep -qx after-restart "$T/out" && ok restart_exec || bad restart_exec "no output" "$T/out"
$C t kill -a -s KILL d1 >/dev/null 2>&1
wait_for "$C t ls 2>/dev/null | grep -q '^d1 .*STOPPED'" 250 && ok restart_kill_all ||
	bad restart_kill_all "no STOPPED after kill"
$C t rm d1 >"$T/out" 2>&1 && $C c rm d1 >>"$T/out" 2>&1 && ok delete || bad delete "rm failed" "$T/out"
wait_for "[ ! -e /run/kin/shim/$NS/d1 ]" 250 && ok shim_gone_after_delete ||
	bad shim_gone_after_delete "its state directory is still there"

# A shim killed outright: delete leaves nothing, its QEMU included.
timeout 120 $C run -d $R $IMG d2 /bin/sleep 1000 >"$T/out" 2>&1
SHIM=$(pgrep -f "containerd-shim-kin-vm-v2 -namespace $NS -id d2 ")
QEMU=$(pgrep -f "qemu-system-x86_64 -name pod .*/run/kin/shim/$NS/d2/")
[ -n "$SHIM" ] && [ -n "$QEMU" ] && kill -KILL "$SHIM"
wait_for "! $C t ls 2>/dev/null | grep -q '^d2 .*RUNNING'" 250
$C t rm -f d2 >/dev/null 2>&1
$C c rm d2 >"$T/out" 2>&1
wait_for "[ ! -e /run/kin/shim/$NS/d2 ] && ! kill -0 '${QEMU:-0}' 2>/dev/null" 250 &&
	[ -n "$QEMU" ] && ! grep -q "/$NS/d2" /proc/self/mountinfo && ok shim_killed_delete_cleans ||
	bad shim_killed_delete_cleans "something of d2 is left (qemu ${QEMU:-none})"

# The CRI flow with handler kin-vm: host network with the OOM check, then
# a CNI network.
flow() { # NAME [SCRIPT] ARGS...
	local name=$1 script=cri_flow.py
	shift
	case ${1:-} in *.py) script=$1; shift ;; esac
	timeout 600 $PY tests/cri/$script "$CD/sock" "$T/gen" kin-vm "$IMG" "$CD/logs" "$@" \
		>"$T/flow" 2>&1
	while read -r verdict rest; do
		case $verdict in
		PASS) ok "$name/${rest#cri/}" ;;
		FAIL) echo "${rest#*: }" >"$T/out"; rest=${rest#cri/}; bad "$name/${rest%%:*}" "${rest#*: }" ;;
		esac
	done <"$T/flow"
	grep -q '^PASS\|^FAIL' "$T/flow" || bad "$name/flow" "no result" "$T/flow"
}
if $PY -c 'import grpc, grpc_tools' 2>/dev/null; then
	flow cri-host --host-network --oom yes
	# A CNI network (bridge + host-local): the VM's NIC is a tap in the
	# pod's netns redirected to and from eth0 and the guest takes eth0's
	# address, so the container has the IP CRI reports.
	if [ -x /usr/lib/cni/bridge ]; then
		rm -f "$CD/logs"/*.log
		flow cri-cni
		# critest's specs as the kin flow runs them (tests/cri/cri_conform.py):
		# privileged, pod sysctls (the guest's command line), volume
		# propagation, Pause/Resume of the sandbox (the VM paused); hostIPC
		# and rshared volumes refused, named (a VM has a kernel of its own).
		flow cri-conform cri_conform.py
	else
		echo "SKIP vm/kin-vm/cri-cni: no CNI plugins (containernetworking-plugins)"
	fi
else
	echo "SKIP vm/kin-vm/cri: no python3-grpcio/python3-grpc-tools"
fi

sleep 0.3
left=$(ls /run/kin/shim/$NS 2>/dev/null)
[ -z "$left" ] && ! grep -q "$CD/state\|/$NS/" /proc/self/mountinfo &&
	[ -z "$(pgrep -f "containerd-shim-kin-vm-v2 -namespace ($NS|k8s.io) -id .* -address $CD/sock ")" ] &&
	ok nothing_left || { echo "$left" >"$T/out"; bad nothing_left "shim state, mounts or shims left" "$T/out"; }
vm_suite_end
