#!/usr/bin/env bash
# The demo: kin builds a bootable image of itself, a host kin boots a
# microVM with kin as its PID 1, and everything after that goes through
# the host kin over RPC: a cell is created inside the guest, a command
# runs there, its output comes back, and the VM is powered off.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/common.sh
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

T=$(mktemp -d /tmp/kin-demo.XXXXXX)
HOST=
cleanup() {
	[ -n "$HOST" ] && kill -TERM "$HOST" 2>/dev/null && wait "$HOST" 2>/dev/null
	[ -n "${BASE:-}" ] && find "$BASE" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

step "$("$KIN" version): $(file -b "$KIN" | grep -o 'statically linked'), $(du -k "$KIN" | cut -f1) KiB"

step "the guest image: Debian's kernel (fetched once into kin's cache) and an initramfs kin writes itself"
KERNEL=$("$KIN" image kernel 2>/dev/null | tail -1)
echo "kernel: $KERNEL"
show "$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox
ls -l "$T/guest.cpio" | awk '{print "image:  " $NF ", " $5 " bytes"}'

step "a host kin (a daemon here; PID 1 on a real host) with its RPC socket"
CG=$(cgroup2_mount)
BASE=
if [ -n "$CG" ] && mkdir "$CG/kin-demo-$$" 2>/dev/null; then BASE=$CG/kin-demo-$$; fi
S=$T/kin.sock
sh -c "${BASE:+echo \$\$ >'$BASE/cgroup.procs' && }exec '$KIN' init --socket '$S' --vm-dir '$T/vm'" \
	>"$T/host.log" 2>&1 &
HOST=$!
for _ in $(seq 100); do [ -S "$S" ] && break; sleep 0.05; done
ctl() { show "$KIN" ctl --socket "$S" "$@"; }
ctl version

step "boot a microVM with kin as its PID 1 (QEMU; TCG here, where KVM is paravirtual)"
t0=$(date +%s%N)
ctl vm start demo --kernel "$KERNEL" --image "$T/guest.cpio" --cpus 2 --memory 512
printf 'waiting for the guest kin to answer through the host kin'
until [ "$("$KIN" ctl --socket "$S" --target vm/demo --timeout 2s health 2>/dev/null)" = SERVING ]; do
	printf .; sleep 0.2
	[ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt 120 ] || { echo " timed out"; cat "$T/vm/demo/console.log"; exit 1; }
done
echo " SERVING after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
G() { show "$KIN" ctl --socket "$S" --target vm/demo "$@"; }
G version

step "a cell in the guest (real cgroup v2 limits there), a command in it, its output back on the host"
G cell create hello memory.max=64M pids.max=50
G exec start hello greet -- /bin/busybox sh -c \
	'echo "hello from $(hostname), kernel $(uname -r), pid $$ in cgroup $(cat /proc/self/cgroup)"; echo "memory.max: $(cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/memory.max)"'
G exec wait hello greet
G exec logs hello greet

step "power the VM off: Poweroff over the link, the guest's kin stops everything, the VMM exits"
ctl vm stop demo
echo "guest console, last lines:"
tail -4 "$T/vm/demo/console.log" | sed 's/^/    /'
ctl poweroff
wait "$HOST"; echo "host kin exited with $?"; HOST=
