#!/usr/bin/env bash
# A real guest: the Debian kernel under QEMU booting an image `kin image
# build` made, kin as its PID 1. One boot, many checks: in-guest checks
# (tests/vm/guest-checks.sh, reported on the console) and host-side ones
# (ready line, role, clean poweroff, VMM exit status).
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin boot

"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox --modules vsock_loopback \
	--add tests/vm/guest-checks.sh:/test/checks.sh >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
ok image_build

timeout 300 "$KIN" vm run --kernel "$KERNEL" --image "$T/guest.cpio" --state-dir "$T/state" \
	--name boot --timeout 240s -- /usr/bin/busybox sh /test/checks.sh >"$T/run.log" 2>&1
rc=$?
con="$T/state/boot/console.log"
[ -f "$con" ] || { bad boot "no console log" "$T/run.log"; vm_suite_end; exit; }

grep -q "ready: role machine, pid 1" "$con" && ok ready_as_machine_init ||
	bad ready_as_machine_init "no ready line for role machine" "$con"
n=0
while read -r _ name verdict why; do
	n=$((n + 1))
	[ "$verdict" = ok ] && ok "guest/$name" || bad "guest/$name" "$why"
done < <(grep -a '^CHECK ' "$con" | tr -d '\r')
[ $n -ge 12 ] && ok guest_checks_ran || bad guest_checks_ran "only $n guest checks reported" "$con"
grep -q "poweroff now" "$con" && grep -q "reboot: Power down" "$con" && ok clean_poweroff ||
	bad clean_poweroff "console shows no clean poweroff" "$con"
[ $rc -eq 0 ] && ok vmm_exit_0 || bad vmm_exit_0 "kin vm run exited $rc" "$T/run.log"
ms=$(sed -nE 's/.*ready: role machine.*, ([0-9.]+) ms after exec.*/\1/p' "$con")
echo "    (guest kin: exec of /init to ready in ${ms:-?} ms under $(grep -o 'accel [a-z]*' "$T/run.log" | head -1))"
vm_suite_end
