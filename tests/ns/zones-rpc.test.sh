#!/usr/bin/env bash
# Zones over RPC: a root `kin init` daemon (in a cgroup of its own on the
# host's cgroup2) driven only through `kin ctl`: three levels of namespace
# zones (root -> pod1 --net -> inner), each addressed from the root with
# --target; an executable at each level (start, wait, logs); role zone at
# the bottom; events from inside relayed up; the tree in `zone list`; pod1
# pings its parent over its veth; killing pod1 leaves no process, cgroup,
# mount or veth of its subtree; stop is graceful; the depth limit holds
# (--zone-max-depth 2: the third level refused); unknown targets NOT_FOUND
# naming the element; bad names refused; the root kin serves throughout and
# stops its zones when it stops.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin zones-rpc

ns_need_cgroup2
TOP=kin-zrpc-test-$$
BASE=$CG/$TOP/d
ZCG=$BASE/cells/zones
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz${DPID:-x}."
	rm -rf "$T"
}
trap cleanup EXIT

# A root for zones that run executables: static busybox, and kin's loader
# and libraries when kin is dynamically linked (SANITIZE=1).
BB=$T/bbroot
ns_busybox_root "$BB"
# inner's root, inside pod1's: the same again.
cp -a "$BB" "$T/iroot" && mv "$T/iroot" "$BB/iroot"

S=$T/k.sock
# daemon_start [FLAGS...]: the root kin, first moved into $BASE.
daemon_start() {
	mkdir -p "$BASE"
	sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --log-level debug --grace 3s --socket '$S' --zone-dir '$T/zones' $*" \
		>"$T/kin.log" 2>&1 &
	DPID=$!
	wait_for "grep -q 'ready:' '$T/kin.log'" 250
}
# Processes in a zone's cgroup subtree (everything it runs).
procs_below() { find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l; }

daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }

# ---- three levels ---------------------------------------------------------
kc zone create pod1 --net --root "$BB"
[ $rc -eq 0 ] && out_has "route:    pod1 \(ready\)" && out_has "address:  10.88.0.2/30 via 10.88.0.1" &&
	ok create_pod1_net || { bad create_pod1_net "rc $rc"; cat "$T/kin.log" | tail; exit 1; }
POD1=$(sed -nE 's/^pid: +([0-9]+)/\1/p' "$T/out")
kc --target pod1 zone create inner --root /iroot
[ $rc -eq 0 ] && out_has "depth:    2" && out_has "route:    inner \(ready\)" && ok create_inner_through_pod1 ||
	bad create_inner_through_pod1 "rc $rc"
kc --target pod1/inner -o json version
out_has '"role":"zone"' && out_has '"zone":"inner"' && out_has '"hostname":"inner"' && out_has '"pid":1[,}]' &&
	ok inner_version_role_zone || bad inner_version_role_zone "rc $rc"
kc --target pod1 -o json version
out_has '"zone":"pod1"' && ok pod1_version_role_zone || bad pod1_version_role_zone "rc $rc"

kc -o json zone list
grep -q '"path":"pod1","level":1,.*"depth":1,"net":true,"ready":true' "$T/out" &&
	grep -q '"path":"pod1/inner","level":2,.*"depth":2,"net":false,"ready":true' "$T/out" &&
	ok list_tree_json || bad list_tree_json "rc $rc"
kc zone list
grep -qE '^pod1 +namespace running' "$T/out" && grep -qE '^  inner +namespace running' "$T/out" &&
	ok list_tree_text || bad list_tree_text "rc $rc"
kc zone list --depth 1
out_has '^pod1 ' && ! out_has 'inner' && ok list_depth_bound || bad list_depth_bound "rc $rc"

# An executable at each level, all from the root: start, wait, logs.
run_at() { # run_at TARGET-or-- WORD CMD...
	local tg=()
	[ "$1" != - ] && tg=(--target "$1")
	shift
	local word=$1; shift
	"$KIN" ctl --socket "$S" "${tg[@]}" cell create w >/dev/null 2>&1
	"$KIN" ctl --socket "$S" "${tg[@]}" exec start w e -- "$@" >/dev/null 2>&1 || return 1
	"$KIN" ctl --socket "$S" "${tg[@]}" exec wait w e >/dev/null 2>&1 || return 1
	[ "$("$KIN" ctl --socket "$S" "${tg[@]}" exec logs w e 2>&1)" = "$word" ]
}
run_at - root /bin/echo root && ok exec_at_root || bad exec_at_root "no 'root' in its log"
run_at pod1 pod1 /bin/busybox hostname && ok exec_at_pod1 || bad exec_at_pod1 "no 'pod1' in its log"
run_at pod1/inner inner /bin/busybox hostname && ok exec_at_inner || bad exec_at_inner "no 'inner' in its log"

# Events from inside, relayed up two hops.
timeout 20 "$KIN" ctl --socket "$S" --target pod1/inner -o json events >"$T/events" 2>&1 &
EV=$!
sleep 0.5
"$KIN" ctl --socket "$S" --target pod1/inner exec start w ev -- /bin/busybox true >/dev/null 2>&1
wait_for "grep -q '\"type\":\"EXEC_EXIT\".*\"exec\":\"ev\"' '$T/events'" 250
kill $EV 2>/dev/null; wait $EV 2>/dev/null
grep -q '"type":"EXEC_START","cell":"w","exec":"ev"' "$T/events" &&
	grep -q '"type":"EXEC_EXIT","cell":"w","exec":"ev"' "$T/events" && ok events_relayed_from_inner ||
	bad events_relayed_from_inner "$(head -c 400 "$T/events")"

# --net: pod1 reaches its parent over the veth.
kc --target pod1 exec start w ping -- /bin/busybox ping -c 1 -W 2 10.88.0.1
"$KIN" ctl --socket "$S" --target pod1 exec wait w ping >/dev/null 2>&1; prc=$?
[ $prc -eq 0 ] && ok net_zone_pings_parent ||
	bad net_zone_pings_parent "exit $prc: $("$KIN" ctl --socket "$S" --target pod1 exec logs w ping 2>&1)"

# ---- errors ---------------------------------------------------------------
kc --target pod1/nope version
[ $rc -eq 1 ] && out_has 'NOT_FOUND: target "pod1/nope": no zone or VM "nope" in "pod1"' &&
	ok unknown_target_names_element || bad unknown_target_names_element "rc $rc"
kc --target nope zone list
[ $rc -eq 1 ] && out_has 'NOT_FOUND: .*"nope"' && ok unknown_first_hop || bad unknown_first_hop "rc $rc"
n=0
for name in 'a/b' '..' 'has space' "$(printf 'x%.0s' $(seq 70))" 'under_score' vm; do
	"$KIN" ctl --socket "$S" zone create "$name" >"$T/out" 2>&1
	[ $? -eq 1 ] && grep -q INVALID_ARGUMENT "$T/out" && n=$((n + 1))
done
[ $n -eq 6 ] && ok bad_names_refused || bad bad_names_refused "only $n of 6 refused INVALID_ARGUMENT"
kc zone create pod1
[ $rc -eq 1 ] && out_has 'ALREADY_EXISTS: zone "pod1" already exists' && ok duplicate_refused ||
	bad duplicate_refused "rc $rc"
kc zone create lim pids.max=nope
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && ok bad_limit_refused || bad bad_limit_refused "rc $rc"
kc zone create nonet --root /nonexistent
[ $rc -eq 1 ] && out_has 'NOT_FOUND: zone "nonet": root /nonexistent' && ok missing_root_refused ||
	bad missing_root_refused "rc $rc"
kc zone create v --vm
[ $rc -eq 2 ] && ok vm_without_kernel_usage || bad vm_without_kernel_usage "rc $rc"
kc zone status nope
[ $rc -eq 1 ] && out_has 'NOT_FOUND: zone "nope" does not exist' && ok status_unknown || bad status_unknown "rc $rc"
kc zone frobnicate x
[ $rc -eq 2 ] && ok unknown_subcommand_usage || bad unknown_subcommand_usage "rc $rc"
[ "$(find "$ZCG" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 1 ] && ok refusals_leave_nothing ||
	bad refusals_leave_nothing "$(ls "$ZCG")"
serving && ok serving_after_errors || bad serving_after_errors "no SERVING"

# ---- kill the middle: nothing of its subtree is left -----------------------
inner_pids=$(find "$ZCG/pod1" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')
veth=$(ip -o link show | grep -o "kz$DPID\.[0-9]*" | head -1)
[ -n "$inner_pids" ] && [ -n "$veth" ] && ok before_kill_subtree_seen || bad before_kill_subtree_seen "pids '$inner_pids' veth '$veth'"
kc zone kill pod1
[ $rc -eq 0 ] && ok kill_answered || bad kill_answered "rc $rc"
wait_for "! '$KIN' ctl --socket '$S' zone status pod1 >/dev/null 2>&1" 250
left=
for p in $inner_pids; do [ -d /proc/$p ] && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null && left="$left $p"; done
[ -z "$left" ] && ok kill_no_process_left || bad kill_no_process_left "still running:$left"
[ ! -d "$ZCG/pod1" ] && ok kill_no_cgroup_left || bad kill_no_cgroup_left "$(find "$ZCG/pod1" -type d | head)"
! ip -o link show | grep -q "kz$DPID\." && ok kill_no_veth_left || bad kill_no_veth_left "$(ip -o link show | grep -o "kz$DPID[^:@]*")"
! grep -q "$T" /proc/$DPID/mountinfo && ! grep -q "$T" /proc/self/mountinfo &&
	ok kill_no_mount_left || bad kill_no_mount_left "mounts remain"
kc --target pod1/inner version
[ $rc -eq 1 ] && out_has 'NOT_FOUND: target "pod1/inner": no zone or VM "pod1"' && ok killed_zone_not_found ||
	bad killed_zone_not_found "rc $rc"
grep -q 'zone "pod1": gone: its kin exited with status 137' "$T/kin.log" && ok gone_reported ||
	bad gone_reported "no 'gone' line in kin's log"

# ---- stop is graceful: the zone kin stops its cells and exits 0 ------------
kc zone create pod2 --root "$BB"
kc --target pod2 cell create w
kc --target pod2 exec start w sl -- /bin/busybox sleep 1000
kc zone stop --timeout 10s pod2
[ $rc -eq 0 ] && out_has "state:    gone \(status 0\)" && ok stop_graceful_status_0 || bad stop_graceful_status_0 "rc $rc"
[ ! -d "$ZCG/pod2" ] && ok stop_no_cgroup_left || bad stop_no_cgroup_left "$(ls "$ZCG/pod2")"
kc zone create pod2 --root "$BB"
[ $rc -eq 0 ] && ok name_reusable_after_stop || bad name_reusable_after_stop "rc $rc"

# The root kin stops its zones when it stops; nothing is left.
kc --target pod2 zone create deep
kc poweroff
wait $DPID; drc=$?
DPID=
[ $drc -eq 0 ] && ok root_stop_exit_0 || bad root_stop_exit_0 "exit $drc"
[ ! -d "$ZCG" ] && ok root_stop_no_cgroup_left || bad root_stop_no_cgroup_left "$(find "$ZCG" -type d)"
grep -q 'zone "pod2": gone: its kin exited with status 0' "$T/kin.log" && ok root_stop_zone_graceful ||
	bad root_stop_zone_graceful "no graceful end of pod2"
grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$T/kin.log" "$T/zones/"*.log* &&
	bad sanitizer_clean "reports in the logs" || ok sanitizer_clean
cp "$T/kin.log" "$T/kin1.log"
rmdir "$BASE/cells/w" 2>/dev/null

# ---- the depth limit: --zone-max-depth 2 refuses a third level -------------
daemon_start --zone-max-depth 2
kc zone create l1 && kc --target l1 zone create l2
[ $rc -eq 0 ] && ok two_levels_under_limit || bad two_levels_under_limit "rc $rc"
kc --target l1/l2 zone create l3
[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION: zone "l3": depth limit reached \(this kin is at depth 2, the limit is 2\)' &&
	ok depth_limit_refuses_third || bad depth_limit_refuses_third "rc $rc"
kc --target l1/l2 -o json zone list
[ $rc -eq 0 ] && ok limited_kin_serving || bad limited_kin_serving "rc $rc"
kc poweroff
wait $DPID; drc=$?
DPID=
[ $drc -eq 0 ] && [ ! -d "$ZCG" ] && ok second_root_stop_clean ||
	bad second_root_stop_clean "exit $drc"
ns_suite_end
