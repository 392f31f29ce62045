#!/usr/bin/env bash
# Zone spawn never stalls kin. A real setup that hangs: the zone's root is
# a directory whose proc is a symlink into a FUSE mount nobody serves
# (/dev/fuse held open by a sleeping process, never read), so the zone
# child's "mounting /proc" blocks in the kernel until it is killed. The
# FUSE mount lives only in the private mount namespace kin init (a daemon,
# in a cgroup of its own on the host's cgroup2) runs in. While such a
# create hangs: Health is answered at once, the zone is listed as
# starting, a second create of the name is ALREADY_EXISTS and another zone
# is made; the hung create ends DEADLINE_EXCEEDED after 5 s with no
# process, cgroup or veth left. A stop or kill while starting ends it at
# once (CANCELLED); kin stopping with a create pending exits clean.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin zone-spawn

ns_need_cgroup2
ns_need_fuse
TOP=kin-zsp-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	[ -n "${HOLDER:-}" ] && kill -KILL "$HOLDER" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz${KPID:-x}."
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
BASE=$CG/$TOP/d
ZCG=$BASE/cells/zones
HANG=$T/hang # the FUSE mount (kin's mount namespace only)
HROOT=$T/hroot
mkdir -p "$HANG" "$HROOT"
ln -s "$HANG/proc" "$HROOT/proc" # mounting /proc there looks up in $HANG

unshare --mount --propagation private sh -c "
	exec 7<>/dev/fuse || exit 97
	mount -i -t fuse -o fd=7,rootmode=40000,user_id=0,group_id=0 kin-hang '$HANG' || exit 98
	sleep 100000 &
	echo \$! >'$T/holder.pid'
	exec 7>&-
	mkdir -p '$BASE' && echo \$\$ >'$BASE/cgroup.procs' || exit 99
	exec '$KIN' init --log-level debug --grace 2s --socket '$S' --zone-dir '$T/zones'" >"$T/kin.log" 2>&1 &
DPID=$!
KPID=$DPID # the veths' names: kz<kin's pid>.<slot>
wait_for "grep -q 'ready:' '$T/kin.log'" 250
HOLDER=$(cat "$T/holder.pid" 2>/dev/null)

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# zstate NAME: the zone's state, "" if unknown.
zstate() { "$KIN" ctl --socket "$S" zone status "$1" 2>/dev/null | awk '$1 == "state:" {print $2}'; }
procs_below() { find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l; }
veths() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -c "^kz$KPID\."; }
# hung_create NAME OUT [ARGS...]: a create whose setup hangs, in the
# background (pid in $HPID), once kin lists it as starting.
hung_create() {
	local name=$1 out=$2
	shift 2
	"$KIN" ctl --socket "$S" --timeout 20s zone create "$@" --root "$HROOT" "$name" >"$out" 2>&1 &
	HPID=$!
	wait_for "[ \"\$(zstate $name)\" = starting ]" 100
}
# nothing_left NAME: no process, cgroup or veth of the zone.
nothing_left() { [ ! -d "$ZCG/$1" ] && [ "$(procs_below "$ZCG")" -eq 0 ] && [ "$(veths)" -eq 0 ]; }

serving && [ -n "$HOLDER" ] && grep -qE " $HANG .* - fuse " /proc/"$DPID"/mountinfo &&
	ok daemon_with_a_hanging_mount || {
	bad daemon_with_a_hanging_mount "no SERVING, or no FUSE mount in kin's namespace"
	cat "$T/kin.log"
	exit 1
}

t_hang_keeps_serving() {
	local t0 t1 h0 h1 fails=""
	t0=$(now_ms)
	hung_create hz "$T/hz.out" --net || { bad hang_keeps_serving "never listed as starting"; return; }
	h0=$(now_ms)
	for _ in 1 2 3 4 5; do serving || fails="$fails health"; done
	kc zone list
	out_has '^hz +namespace starting' || fails="$fails list"
	h1=$(now_ms)
	[ $((h1 - h0)) -lt 2000 ] || fails="$fails slow($((h1 - h0))ms)"
	kill -0 "$HPID" 2>/dev/null || fails="$fails answered-early"
	[ "$(veths)" -eq 1 ] || fails="$fails no-veth-while-starting"
	[ -z "$fails" ] && ok hang_keeps_serving || bad hang_keeps_serving "while a setup hangs:$fails"

	kc zone create hz
	[ $rc -eq 1 ] && out_has 'ALREADY_EXISTS: zone "hz" already exists' &&
		ok second_create_already_exists || bad second_create_already_exists "exit $rc"
	kc zone create ok1
	[ $rc -eq 0 ] && out_has 'route:    ok1 \(ready\)' && kill -0 "$HPID" 2>/dev/null &&
		ok other_zone_made_meanwhile || bad other_zone_made_meanwhile "exit $rc"
	kc zone stop ok1

	wait "$HPID"
	local hrc=$?
	t1=$(now_ms)
	cp "$T/hz.out" "$T/out"
	[ $hrc -eq 1 ] && out_has 'DEADLINE_EXCEEDED: zone "hz": setup did not reach execve within 5000 ms' &&
		[ $((t1 - t0)) -ge 4500 ] && [ $((t1 - t0)) -lt 12000 ] &&
		ok hung_create_times_out || bad hung_create_times_out "exit $hrc after $((t1 - t0)) ms: $(cat "$T/out")"
	kc zone status hz
	[ $rc -eq 1 ] && out_has NOT_FOUND && nothing_left hz && serving &&
		ok timeout_leaves_nothing || bad timeout_leaves_nothing "status exit $rc, $(procs_below "$ZCG") processes, $(veths) veths"
	kc zone create hz
	[ $rc -eq 0 ] && ok name_free_again || bad name_free_again "exit $rc"
	kc zone stop hz
}

t_setup_error_names_step() {
	mkdir -p "$T/badroot"
	ln -s /nonexistent/x "$T/badroot/proc"
	kc zone create --root "$T/badroot" bad
	[ $rc -eq 1 ] && out_has 'zone "bad": mounting /proc: No such file or directory' && nothing_left bad &&
		ok setup_error_names_step || bad setup_error_names_step "exit $rc: $(cat "$T/out")"
}

t_stop_while_starting() {
	local s0 s1 src hrc
	hung_create hs "$T/hs.out" --net || { bad stop_while_starting "never listed as starting"; return; }
	s0=$(now_ms)
	kc zone stop hs
	src=$rc
	s1=$(now_ms)
	cp "$T/out" "$T/stop.txt"
	wait "$HPID"
	hrc=$?
	cp "$T/hs.out" "$T/out"
	[ $src -eq 0 ] && grep -qE '^state: +gone' "$T/stop.txt" && [ $((s1 - s0)) -lt 2000 ] &&
		[ $hrc -eq 1 ] && out_has 'CANCELLED: zone "hs": stopped before its kin started' &&
		nothing_left hs && ok stop_while_starting ||
		bad stop_while_starting "stop exit $src in $((s1 - s0)) ms, create exit $hrc: $(cat "$T/out")"
}

t_kill_while_starting() {
	local hrc
	hung_create hk "$T/hk.out" || { bad kill_while_starting "never listed as starting"; return; }
	kc zone kill hk
	local krc=$rc
	wait "$HPID"
	hrc=$?
	cp "$T/hk.out" "$T/out"
	[ $krc -eq 0 ] && [ $hrc -eq 1 ] && out_has 'CANCELLED: zone "hk": killed before its kin started' &&
		wait_for "nothing_left hk" 50 && ok kill_while_starting ||
		bad kill_while_starting "kill exit $krc, create exit $hrc: $(cat "$T/out")"
}

# kin stops with a create pending: the call ends, the child is killed and
# reaped, kin exits 0, its cgroups hold nothing, no veth is left.
t_kin_stop() {
	hung_create hl "$T/hl.out" --net || { bad kin_stop_with_create_pending "never listed as starting"; return; }
	"$KIN" ctl --socket "$S" poweroff >/dev/null 2>&1
	wait_for "! kill -0 $DPID 2>/dev/null" 500
	wait "$DPID"
	local krc=$?
	wait "$HPID"
	local hrc=$?
	DPID=
	[ $krc -eq 0 ] && [ $hrc -ne 0 ] && [ -z "$(find "$CG/$TOP" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] &&
		[ "$(veths)" -eq 0 ] && ok kin_stop_with_create_pending ||
		bad kin_stop_with_create_pending "kin exit $krc, create exit $hrc, $(veths) veths"
}

t_hang_keeps_serving
t_setup_error_names_step
t_stop_while_starting
t_kill_while_starting
t_kin_stop
clean_log "$T/kin.log" && ok no_sanitizer_report || { bad no_sanitizer_report "see the log"; grep -E 'Sanitizer|runtime error' "$T/kin.log" | head; }
ns_suite_end
