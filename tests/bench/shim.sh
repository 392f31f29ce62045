#!/usr/bin/env bash
# Benchmark: kin's containerd shim next to containerd's own
# io.containerd.runc.v2 (with runc, and with crun as its binary), in one
# private containerd (Debian's 1.6) on this host:
#  - `ctr run --rm` of /bin/true from a busybox image, median of RUNS;
#  - a CRI pod and one container to Running (RunPodSandbox, CreateContainer,
#    StartContainer; host network), median of RUNS, through the Python CRI
#    client;
#  - what one pod costs in memory while it runs: kin's shim daemon and the
#    pod's zone kin, next to runc's shim and the pause container it runs
#    (RSS and PSS from /proc/PID/smaps_rollup; the container itself is
#    busybox sleep in both and not counted).
# Runs interleave the runtimes so that noise hits all of them alike.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
RUNS=${BENCH_SHIM_RUNS:-9}
PY=/usr/bin/python3
for c in containerd ctr runc crun $PY; do
	command -v $c >/dev/null || { echo "== shim: skipped (no $c; scripts/deps.sh installs it)"; exit 0; }
done
$PY -c 'import grpc, grpc_tools' 2>/dev/null || { echo "== shim: skipped (no python3-grpcio)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-shim.XXXXXX)
cleanup() {
	[ -n "${HOLD:-}" ] && exec 7>&- && wait "$HOLD" 2>/dev/null
	[ -n "${CPID:-}" ] && kill "$CPID" 2>/dev/null && wait "$CPID" 2>/dev/null
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/bin" "$T/cni" "$T/l/bin" "$T/l/etc" "$T/l/proc" "$T/l/sys" "$T/l/dev"
ln -s "$KIN" "$T/bin/containerd-shim-kin-v2"
cat >"$T/config.toml" <<EOF
version = 2
root = "$T/root"
state = "$T/state"
[grpc]
  address = "$T/sock"
[ttrpc]
  address = "$T/sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "kin.bench/bb:1"
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    conf_dir = "$T/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
      BinaryName = "crun"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kin]
    runtime_type = "io.containerd.kin.v2"
EOF
KIN_SHIM_CONFIG=$T/shim.conf PATH=$T/bin:$PATH containerd --config "$T/config.toml" >"$T/log" 2>&1 &
CPID=$!
for _ in $(seq 250); do ctr -a "$T/sock" version >/dev/null 2>&1 && break; sleep 0.02; done
cp /bin/busybox "$T/l/bin/busybox"
for c in sh true sleep; do ln -s busybox "$T/l/bin/$c"; done
python3 tests/oci/mkimage.py --format oci-archive --out "$T/bb.tar" --tag kin.bench/bb:1 \
	--config '{"Entrypoint":["/bin/sleep"],"Cmd":["1000000"],"Env":["PATH=/bin"]}' "$T/l" >/dev/null &&
	for ns in default k8s.io; do
		ctr -a "$T/sock" -n $ns image import --all-platforms "$T/bb.tar" >/dev/null 2>&1 || exit 1
	done || { echo "== shim: importing the image failed"; exit 1; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
C="ctr -a $T/sock -n default"
# crun refuses hosts with hybrid cgroups (these test machines): then it is
# left out, and said so.
RTS="kin runc crun"
if ! $C run --rm --runtime io.containerd.runc.v2 --runc-binary crun kin.bench/bb:1 probe /bin/true \
	>/dev/null 2>"$T/err"; then
	RTS="kin runc"
	CRUN_WHY=$(grep -o 'OCI runtime create failed: [^:]*' "$T/err" | head -1)
fi
declare -A ms=()
for i in $(seq "$RUNS"); do
	for rt in $RTS; do
		case $rt in
		kin) opts="--runtime io.containerd.kin.v2" ;;
		runc) opts="--runtime io.containerd.runc.v2" ;;
		crun) opts="--runtime io.containerd.runc.v2 --runc-binary crun" ;;
		esac
		t0=$(now_ms)
		$C run --rm $opts kin.bench/bb:1 "b-$rt-$i" /bin/true >/dev/null 2>"$T/err" ||
			{ echo "== shim: ctr run with $rt failed: $(tail -1 "$T/err")"; exit 1; }
		ms[$rt]+="$(($(now_ms) - t0)) "
	done
done
k=$(echo ${ms[kin]} | tr ' ' '\n' | median)
r=$(echo ${ms[runc]} | tr ' ' '\n' | median)
printf '== shim: ctr run --rm of /bin/true, median of %s (wall ms)\n' "$RUNS"
printf '  %-58s %7s ms\n' "io.containerd.kin.v2 (kin's shim, a zone per pod)" "$k" \
	"io.containerd.runc.v2 with runc (peer)" "$r"
if [ -n "${ms[crun]:-}" ]; then
	c=$(echo ${ms[crun]} | tr ' ' '\n' | median)
	printf '  %-58s %7s ms\n' "io.containerd.runc.v2 with crun (peer)" "$c"
else
	printf '  %-58s %s\n' "io.containerd.runc.v2 with crun (peer)" "not run here: ${CRUN_WHY:-failed}"
fi
printf '  %-58s %.2f\n' "ratio kin / runc (goal <= 0.5)" "$(awk -v k="$k" -v r="$r" 'BEGIN{print k/r}')"
# kin-vm: a microVM booted per pod (TCG where KVM is unusable, as here); no
# VM runtime peer (kata) is packaged in Debian, so it stands alone.
KERNEL=$("$KIN" image kernel 2>/dev/null | tail -1)
if [ -f "$KERNEL" ] && command -v qemu-system-x86_64 >/dev/null &&
	"$KIN" image build -o "$T/guest.cpio" >/dev/null 2>&1; then
	printf 'vm.kernel = %s\nvm.image = %s\n' "$KERNEL" "$T/guest.cpio" >"$T/shim.conf"
	ln -s "$KIN" "$T/bin/containerd-shim-kin-vm-v2"
	VMRUNS=3
	for i in $(seq $VMRUNS); do
		t0=$(now_ms)
		$C run --rm --runtime io.containerd.kin-vm.v2 kin.bench/bb:1 \
			"v-$i" /bin/true >/dev/null 2>"$T/err" ||
			{ echo "== shim: ctr run with kin-vm failed: $(tail -1 "$T/err")"; break; }
		ms[vm]+="$(($(now_ms) - t0)) "
	done
	[ -n "${ms[vm]:-}" ] && printf '  %-58s %7s ms (median of %s)\n' \
		"io.containerd.kin-vm.v2 (a microVM per pod; TCG without KVM)" \
		"$(echo ${ms[vm]} | tr ' ' '\n' | median)" "$VMRUNS"
fi

HANDLERS="kin runc"
[ -n "${ms[crun]:-}" ] && HANDLERS="kin runc crun"
$PY tests/bench/cri_pod.py "$T/sock" "$T/gen" kin.bench/bb:1 "$RUNS" $HANDLERS >"$T/cri" 2>"$T/err" ||
	{ echo "== shim: the CRI pods failed: $(tail -1 "$T/err")"; exit 1; }
k=$(awk '$1 == "kin" {print $2}' "$T/cri")
r=$(awk '$1 == "runc" {print $2}' "$T/cri")
c=$(awk '$1 == "crun" {print $2}' "$T/cri")
printf '== shim: CRI pod + one container to Running (host network), median of %s (wall ms)\n' "$RUNS"
printf '  %-58s %7s ms\n' "handler kin" "$k" "handler runc (peer)" "$r"
[ -n "$c" ] && printf '  %-58s %7s ms\n' "handler crun (runc shim + crun, peer)" "$c"
printf '  %-58s %.2f\n' "ratio kin / runc (goal <= 0.5)" "$(awk -v k="$k" -v r="$r" 'BEGIN{print k/r}')"

# Memory of one running pod: its shim and what runs the sandbox.
mem() { # PID...: total RSS and PSS in KiB
	for p in "$@"; do cat /proc/$p/smaps_rollup 2>/dev/null; done |
		awk '/^Rss:/ {r += $2} /^Pss:/ {s += $2} END {printf "%d %d", r, s}'
}
for rt in kin runc; do
	exec 7> >($PY tests/bench/cri_pod.py "$T/sock" "$T/gen" kin.bench/bb:1 1 --hold $rt >"$T/hold" 2>&1)
	HOLD=$!
	for _ in $(seq 250); do [ -s "$T/hold" ] && break; sleep 0.02; done
	pod=$(head -1 "$T/hold")
	if [ $rt = kin ]; then
		shim=$(pgrep -f "containerd-shim-kin-v2 .*-group $pod .*serve")
		zone=$(cat /proc/$shim/task/$shim/children 2>/dev/null | awk '{print $1}')
		kin_mem=$(mem $shim $zone)
	else
		shim=$(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io -id $pod")
		pause=$(pgrep -P "$shim" | head -1)
		runc_mem=$(mem $shim $pause)
	fi
	exec 7>&-
	wait "$HOLD" 2>/dev/null
	HOLD=
done
printf '== shim: memory of one running pod (KiB; its container not counted)\n'
printf '  %-58s %s RSS, %s PSS\n' "kin: shim daemon + the pod's zone kin" $kin_mem
printf '  %-58s %s RSS, %s PSS\n' "runc: containerd-shim-runc-v2 + pause (peer)" $runc_mem
