#!/usr/bin/env bash
# containerd's Sandbox API on a kin-vm shim: tests/ns/sandbox.test.sh's
# client (tests/shim/sandbox_client.py --vm) against
# containerd-shim-kin-vm-v2 started with no config.json, the sandbox a
# host-network pod whose zone is a microVM (TCG here): hostile calls,
# create (one boot), start (QEMU's pid), status, ping, a container
# through the Task API in the guest with the pod's hostname, metrics from
# the VMM's cell, stop and wait, shutdown; nothing left.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin sandbox-vm
PY=/usr/bin/python3
skip() {
	echo "SKIP vm/sandbox-vm: $1"
	echo "0 passed, 0 failed"
	exit 0
}
$PY -c 'import grpc_tools' 2>/dev/null || skip "no python3-grpc-tools"
command -v runc >/dev/null || skip "no runc (its 'spec' makes the container's config)"
[ -x /bin/busybox ] || skip "no /bin/busybox (busybox-static)"
NS=kinsbvm$$
SB=sbvm$$
CG=$(cgroup2_mount)
cleanup() {
	[ -n "${SHIM:-}" ] && kill -KILL "$SHIM" 2>/dev/null
	sleep 0.3
	for d in /run/kin/shim/$NS/*/pod; do umount -l "$d" 2>/dev/null; done
	rm -rf "/run/kin/shim/$NS"
	[ -n "$CG" ] && cgroup_tree_remove "$CG/kin-shim/$NS-$SB"
	[ -n "${SOCK:-}" ] && rm -f "$SOCK"
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/bin" "$T/sb" "$T/c1/rootfs/bin" "$T/c1/rootfs/proc" "$T/c1/rootfs/dev" "$T/c1/rootfs/sys"
ln -s "$KIN" "$T/bin/containerd-shim-kin-vm-v2"
"$KIN" image build -o "$T/guest.cpio" >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
printf 'vm.kernel = %s\nvm.image = %s\n' "$KERNEL" "$T/guest.cpio" >"$T/shim.conf"
cp /bin/busybox "$T/c1/rootfs/bin/busybox"
for c in sh hostname readlink sleep; do ln -s busybox "$T/c1/rootfs/bin/$c"; done
(cd "$T/c1" && runc spec) || bad runc_spec "runc spec failed"
cp -a "$T/c1" "$T/c2"

ADDR=$(cd "$T/sb" && KIN_SHIM_CONFIG=$T/shim.conf "$T/bin/containerd-shim-kin-vm-v2" \
	-namespace $NS -address "$T/containerd.sock" -id $SB start 2>"$T/err")
[[ $ADDR == unix:///run/containerd/s/* ]] && ok start_without_config ||
	bad start_without_config "'$ADDR' $(cat "$T/err")"
SOCK=${ADDR#unix://}
SHIM=$(pgrep -f "containerd-shim-kin-vm-v2 -namespace $NS -id $SB " | head -1)
(cd "$T/sb" && timeout 300 $PY "$OLDPWD/tests/shim/sandbox_client.py" "$SOCK" "$SB" - \
	"$T/c1" "$T/c2" "$T" --vm) >"$T/client" 2>&1
while read -r verdict name why; do
	case $verdict in
	ok) ok "$name" ;;
	bad) bad "$name" "$why" ;;
	*) bad client "$verdict $name $why" ;;
	esac
done <"$T/client"
grep -q '^ok shutdown$' "$T/client" || bad client_ran_to_end "$(tail -3 "$T/client")"
wait_for "[ -z \"\$SHIM\" ] || [ ! -d /proc/$SHIM ]" 1000 && ok shim_exited || bad shim_exited "pid $SHIM"
[ ! -e "$SOCK" ] && [ ! -e "/run/kin/shim/$NS/$SB" ] && [ ! -d "$CG/kin-shim/$NS-$SB" ] &&
	! pgrep -f "qemu-system.*$NS" >/dev/null && ok nothing_left ||
	bad nothing_left "$(ls -d "$SOCK" "/run/kin/shim/$NS/$SB" "$CG/kin-shim/$NS-$SB" 2>&1)"
SHIM=
vm_suite_end
