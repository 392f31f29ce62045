#!/usr/bin/env bash
# A root disk: kin's initramfs loads virtio_blk and ext4, switches root to
# the ext4 disk `kin image build --format ext4` made, and the disk's kin
# boots on as PID 1 with the kernel line's workload carried across. One
# boot; in-guest checks (tests/vm/disk-checks.sh, from the disk) and
# host-side ones.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin disk

"$KIN" image build -o "$T/initrd.cpio" >"$T/build.log" 2>&1 &&
	"$KIN" image build --format ext4 -o "$T/root.ext4" --add-binary /bin/busybox \
		--add tests/vm/disk-checks.sh:/test/checks.sh >>"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
ok image_build

timeout 300 "$KIN" vm run --kernel "$KERNEL" --image "$T/initrd.cpio" --disk "$T/root.ext4" \
	--state-dir "$T/state" --name disk --timeout 240s -- /usr/bin/busybox sh /test/checks.sh \
	>"$T/run.log" 2>&1
rc=$?
con="$T/state/disk/console.log"
[ -f "$con" ] || { bad boot "no console log" "$T/run.log"; vm_suite_end; exit; }

grep -q "root: switched to /dev/vda" "$con" && ok switched_root ||
	bad switched_root "no 'root: switched' line" "$con"
grep -q "ready: role machine, pid 1" "$con" && ok ready_as_machine_init ||
	bad ready_as_machine_init "no ready line for role machine" "$con"
n=0
while read -r _ name verdict why; do
	n=$((n + 1))
	[ "$verdict" = ok ] && ok "guest/$name" || bad "guest/$name" "$why"
done < <(grep -a '^CHECK ' "$con" | tr -d '\r')
[ $n -ge 9 ] && ok guest_checks_ran || bad guest_checks_ran "only $n guest checks reported (did the workload cross the switch?)" "$con"
grep -q "poweroff now" "$con" && grep -q "reboot: Power down" "$con" && ok clean_poweroff ||
	bad clean_poweroff "console shows no clean poweroff" "$con"
[ $rc -eq 0 ] && ok vmm_exit_0 || bad vmm_exit_0 "kin vm run exited $rc" "$T/run.log"
vm_suite_end
