#!/usr/bin/env bash
# VM zones: a host kin daemon makes a zone that is a microVM (`kin ctl zone
# create vmz --vm`), with kin as the guest's PID 1 — one boot. From the
# host, through route vmz: the guest's kin answers (role machine, told its
# depth), makes a namespace zone of its own (inner), and inner answers as
# role zone at depth 2 (`--target vmz/inner`);
# `zone list` draws the tree across the VM; the depth limit reaches into
# the guest; the host kin re-executes itself with the VM zone running (it
# goes along); `zone stop vmz` powers the guest off over RPC (status 0) and
# the zone, its route and its VMM's cell (vms/vmz) are gone.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin zone

S=$T/host.sock
C() { "$KIN" ctl --socket "$S" "$@"; }

mkdir -p "$T/zroot/bin" && cp /bin/busybox "$T/zroot/bin/busybox" # a static busybox: a zone root
"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox --add "$T/zroot:/srv/zroot" \
	>"$T/build.log" 2>&1 || { bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
ok image_build

# A depth limit of 2: the guest (depth 1) may make inner (2), and inner
# (told the limit through the guest's command line) refuses a third level.
host_kin_start vmzone --zone-dir "$T/zones" --zone-max-depth 2

out=$(C zone create vmz --vm --kernel "$KERNEL" --image "$T/guest.cpio" --cpus 2 --memory 512 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "kind:     vm" && echo "$out" | grep -q "route:    vmz (not ready)" &&
	ok vm_zone_created || { bad vm_zone_created "rc $rc: $out" "$T/host.log"; vm_suite_end; exit; }
out=$(C zone create vmz --vm --kernel "$KERNEL" --image "$T/guest.cpio" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'ALREADY_EXISTS' && ok duplicate_refused || bad duplicate_refused "rc $rc: $out"

ready=
for _ in $(seq 1200); do
	[ "$(C --target vmz --timeout 2s health 2>/dev/null)" = SERVING ] && { ready=1; break; }
	sleep 0.1
done
[ -n "$ready" ] && ok guest_serving_through_route_vmz ||
	{ bad guest_serving_through_route_vmz "no SERVING in 120 s" "$T/vm/vmz/console.log"; vm_suite_end; exit; }
out=$(C --target vmz -o json version 2>&1)
echo "$out" | grep -q '"role":"machine"' && echo "$out" | grep -qE '"pid":1[,}]' && ok guest_is_machine_init ||
	bad guest_is_machine_init "$out"
out=$(C zone status vmz -o json 2>&1)
echo "$out" | grep -q '"kind":"vm"' && echo "$out" | grep -q '"state":"running"' &&
	echo "$out" | grep -q '"ready":true' && echo "$out" | grep -q '"depth":1' && ok zone_status_vm ||
	bad zone_status_vm "$out"

# A namespace zone inside the VM zone, addressed from the host.
out=$(C --target vmz zone create inner 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "depth:    2" && echo "$out" | grep -q "route:    inner (ready)" &&
	ok namespace_zone_in_vm_zone || bad namespace_zone_in_vm_zone "rc $rc: $out" "$T/vm/vmz/console.log"
out=$(C --target vmz/inner -o json version 2>&1)
echo "$out" | grep -q '"role":"zone"' && echo "$out" | grep -q '"zone":"inner"' && echo "$out" | grep -qE '"pid":1[,}]' &&
	ok inner_answers_role_zone || bad inner_answers_role_zone "$out"
# An executable in a namespace zone inside the guest (cgroup2 with every
# controller there: the zone kin must sit in a leaf of its own cell).
C --target vmz zone create rooted --root /srv/zroot >/dev/null 2>&1 &&
	C --target vmz/rooted cell create w >/dev/null 2>&1 &&
	C --target vmz/rooted exec start w hello -- /bin/busybox echo hello-from-vmz-rooted >/dev/null 2>&1 &&
	C --target vmz/rooted exec wait w hello >/dev/null 2>&1; rc=$?
out=$(C --target vmz/rooted exec logs w hello 2>&1)
[ $rc -eq 0 ] && echo "$out" | grep -q hello-from-vmz-rooted && ok exec_in_zone_in_vm ||
	bad exec_in_zone_in_vm "rc $rc: $out" "$T/vm/vmz/console.log"
C --target vmz zone stop rooted >/dev/null 2>&1
out=$(C -o json zone list 2>&1)
echo "$out" | grep -q '"path":"vmz","level":1,.*"kind":"vm"' &&
	echo "$out" | grep -q '"path":"vmz/inner","level":2,.*"kind":"namespace"' && ok list_tree_across_vm ||
	bad list_tree_across_vm "$out"
out=$(C --target vmz/inner zone create l3 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'FAILED_PRECONDITION: zone "l3": depth limit reached (this kin is at depth 2, the limit is 2)' &&
	ok depth_limit_holds_in_guest || bad depth_limit_holds_in_guest "rc $rc: $out"

# The host kin re-executes itself: the VM zone goes along — the same
# VMM, its route answering at once, listed as a VM zone, inner reached
# through it — and its stop below is the new kin's.
vmm=$(C -o json zone status vmz 2>&1 | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
out=$(C reexec 2>&1); rc=$?
st=$(C -o json zone status vmz 2>&1)
[ $rc -eq 0 ] && [ -n "$vmm" ] && echo "$st" | grep -q "\"pid\":$vmm[,}]" && echo "$st" | grep -q '"kind":"vm"' &&
	echo "$st" | grep -q '"ready":true' && [ "$(C --target vmz/inner health 2>&1)" = SERVING ] &&
	grep -q 're-exec: 1 zones taken over' "$T/host.log" && ok reexec_carries_vm_zone ||
	bad reexec_carries_vm_zone "rc $rc: $out; $st" "$T/host.log"

# Stop: the guest's kin powers off (its zones first), the VMM exits 0.
out=$(C zone stop --timeout 60s vmz 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "state:    gone (status 0)" && ok zone_stop_vm_status_0 ||
	bad zone_stop_vm_status_0 "rc $rc: $out" "$T/host.log"
# Its VMM ran as exec vmm of cell vms/vmz; the cell went with the zone.
if [ -n "$BASE" ]; then
	grep -q 'vm "vmz": started (.*), pid [0-9]*, in vms/vmz' "$T/host.log" && [ ! -e "$BASE/cells/vms/vmz" ] &&
		ok vm_zone_vmm_cell_gone || bad vm_zone_vmm_cell_gone "$(ls "$BASE/cells/vms" 2>&1)" "$T/host.log"
fi
grep -q 'zone "inner": gone: its kin exited with status 0' "$T/vm/vmz/console.log" && ok guest_stopped_its_zones ||
	bad guest_stopped_its_zones "no graceful end of inner in the console" "$T/vm/vmz/console.log"
out=$(C --target vmz health 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'NOT_FOUND: target "vmz"' && ok gone_route_not_found || bad gone_route_not_found "rc $rc: $out"
out=$(C zone list 2>&1)
! echo "$out" | grep -q vmz && ok gone_from_list || bad gone_from_list "$out"

out=$(C poweroff 2>&1); rc=$?
wait $HOST; hrc=$?
[ $rc -eq 0 ] && [ $hrc -eq 0 ] && ok host_kin_poweroff || bad host_kin_poweroff "ctl $rc, kin $hrc: $out" "$T/host.log"
grep -E "AddressSanitizer|runtime error|LeakSanitizer" "$T/host.log" && bad host_sanitizer_clean "see above" ||
	ok host_sanitizer_clean
vm_suite_end
