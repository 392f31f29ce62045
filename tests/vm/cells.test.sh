#!/usr/bin/env bash
# Cells in a real guest, whose kernel gives cgroup2 every controller: one
# boot of an image `kin image build` made, kin as PID 1, checks run inside
# through `kin ctl` (tests/vm/cells-checks.sh): memory.max OOM kill with
# its event and kin surviving, pids.max against a fork bomb, cpu.max
# throttling, cpuset pinning, freeze, kill, delete, namespaces.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin cells

"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox \
	--add tests/vm/cells-checks.sh:/test/checks.sh >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }

timeout 400 "$KIN" vm run --kernel "$KERNEL" --image "$T/guest.cpio" --state-dir "$T/state" \
	--name cells --cpus 2 --memory 512 --timeout 300s -- /usr/bin/busybox sh /test/checks.sh \
	>"$T/run.log" 2>&1
rc=$?
con="$T/state/cells/console.log"
[ -f "$con" ] || { bad boot "no console log" "$T/run.log"; vm_suite_end; exit; }
n=0
while read -r _ name verdict why; do
	n=$((n + 1))
	[ "$verdict" = ok ] && ok "guest/$name" || bad "guest/$name" "$why"
done < <(grep -a '^CHECK ' "$con" | tr -d '\r')
[ $n -ge 9 ] && ok guest_checks_ran || bad guest_checks_ran "only $n guest checks reported" "$con"
grep -q "cells: cgroup2 at" "$con" && ok cells_available || bad cells_available "no cells line" "$con"
[ $rc -eq 0 ] && ok vmm_exit_0 || bad vmm_exit_0 "kin vm run exited $rc" "$T/run.log"
vm_suite_end
