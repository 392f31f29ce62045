#!/usr/bin/env bash
# Benchmark: a microVM booting kin as its PID 1, next to the same QEMU
# command booting a trivial busybox-static /init that powers off at once
# (same kernel, same machine). Figures, not pass/fail.
#   - VMM start -> guest kin ready (RPC listening), seen from the host
#   - VMM start -> trivial init powered off (the floor: kernel boot under QEMU)
#   - inside the guest: exec of /init -> ready, from the guest's monotonic clock
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
RUNS=${BENCH_VM_RUNS:-3}
command -v qemu-system-x86_64 >/dev/null || { echo "== vm: skipped (no qemu-system-x86_64)"; exit 0; }
KERNEL=$("$KIN" image kernel 2>/dev/null | tail -1)
[ -f "$KERNEL" ] || { echo "== vm: skipped (no guest kernel)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-vm.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$KIN" image build -o "$T/kin.cpio" --add-binary /bin/busybox >/dev/null
# The peer: busybox-static as /init, powering off at once.
mkdir -p "$T/triv/bin" "$T/triv/dev" "$T/triv/proc"
cp /bin/busybox "$T/triv/bin/busybox"
printf '#!/bin/busybox sh\n/bin/busybox poweroff -f\n' >"$T/triv/init"
chmod +x "$T/triv/init"
(cd "$T/triv" && find . | sort | cpio -o -H newc --quiet) >"$T/triv.cpio"

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

kin_ready=() kin_inner=() kin_own=() kin_kern=() triv=()
for i in $(seq "$RUNS"); do
	rm -rf "$T/state"
	t0=$(date +%s%N)
	"$KIN" vm run --quiet --kernel "$KERNEL" --image "$T/kin.cpio" --state-dir "$T/state" \
		--name b --timeout 120s -- /usr/bin/busybox sleep 600 >"$T/run.log" 2>&1 &
	pid=$!
	until grep -q "ready: role machine" "$T/state/b/console.log" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.005
	done
	kin_ready+=("$(ms_since "$t0")")
	kin_inner+=("$(sed -nE 's/.*ready: role machine.*, ([0-9.]+) ms after exec.*/\1/p' "$T/state/b/console.log")")
	kin_own+=("$(sed -nE "s/.*ready: role machine.* ([0-9.]+) ms kin's own.*/\1/p" "$T/state/b/console.log")")
	kin_kern+=("$(sed -nE 's/.*ready: role machine.*\(([0-9.]+) ms in the kernel.*/\1/p' "$T/state/b/console.log")")
	kill -TERM $pid
	wait $pid || true

	t0=$(date +%s%N)
	qemu-system-x86_64 -machine q35,accel=tcg -cpu max -m 512 -nodefaults -no-user-config \
		-no-reboot -display none -serial "file:$T/triv.log" -kernel "$KERNEL" \
		-initrd "$T/triv.cpio" -append "console=ttyS0 panic=-1 quiet" >/dev/null 2>&1
	triv+=("$(ms_since "$t0")")
done
printf '== vm: QEMU TCG q35, Debian kernel %s, %d runs each (median)\n' "$(basename "$KERNEL" | sed 's/vmlinuz-//')" "$RUNS"
k=$(printf '%s\n' "${kin_ready[@]}" | median)
b=$(printf '%s\n' "${triv[@]}" | median)
printf '  VMM start -> guest kin ready (host view)      %6s ms\n' "$k"
printf '  VMM start -> busybox /init powered off (peer) %6s ms\n' "$b"
printf '  ratio kin/peer                                %6s\n' "$(awk -v k="$k" -v b="$b" 'BEGIN{printf "%.2f", k/b}')"
printf '  in guest: exec of /init -> ready              %6s ms   (runs: %s)\n' \
	"$(printf '%s\n' "${kin_inner[@]}" | median)" "${kin_inner[*]}"
kk=$(printf '%s\n' "${kin_kern[@]}" | grep . | median)
ko=$(printf '%s\n' "${kin_own[@]}" | grep . | median)
printf '    of which finit_module (kernel work)         %6s ms\n' "${kk:-n/a}"
printf "    of which kin's own                          %6s ms   (runs: %s)\n" "${ko:-n/a}" \
	"$(printf '%s ' "${kin_own[@]}")"
