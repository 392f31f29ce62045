#!/usr/bin/env bash
# Terminals (docs/cells.md "Terminals"): executables with a pty of kin's,
# driven by `kin ctl exec start -it` and `kin ctl exec attach` on a real pty
# on the client side (tests/ns/tty_client.py holds its master). A daemon kin
# on the host's cgroup2: typed input echoed, `stty size` shows the size set
# and a resize, Ctrl-C reaches the foreground job and not kin ctl, `exit 3`
# is kin ctl's exit code, the client's terminal modes are restored (at the
# end, at a detach, after SIGTERM); a detach and a re-attach sees the output
# in between; two clients at once; -i on pipes; 16 attachments at most; a flooding terminal with an attached client that does not
# read neither stalls the workload nor kin, and the client is cut off;
# hostile requests (0x0, 65535x65535, -t on an executable without a
# terminal, input after the end) get clear errors; the master is carried
# across `kin ctl reexec` and a crash (the keeper): the shell is neither
# hung up nor deaf after either. `kin ctl shell`: a login shell of
# /etc/passwd's. The same sessions at depth 2 (--target z1/z2, zones in
# zones).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin tty
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 for the client's pty"
TOP=kin-tty-test-$$
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz${DPID:-x}."
	rm -rf "$T"
}
trap cleanup EXIT
S=$T/k.sock
SD=$T/state
CTL=("$KIN" ctl --socket "$S")
daemon_start() {
	ns_daemon_start "$T/kin.log" --log-level debug --grace 2s --socket "$S" --state-dir "$SD" \
		--zone-dir "$T/zones"
}
drive() { ns_tty_drive "$@"; }
field() { "${CTL[@]}" -o json exec status "$@" 2>/dev/null | sed -n "s/.*\"pid\":\([0-9]*\).*/\1/p"; }
logs_have() { wait_for "\"\${CTL[@]}\" exec logs $1 $2 2>/dev/null | grep -q -- '$3'" 50; }

daemon_start
serving && ok daemon_serving || { bad daemon_serving "$(tail -5 "$T/kin.log")"; exit 1; }
kc cell create c

# -it: a shell on a pty of kin's, the client's terminal raw.
drive interactive 30 100 '# ' -- "${CTL[@]}" exec start -it c sh1 -- sh -i
kc exec status c sh1
out_has 'exit status 3' && ok sh1_ended_3 || bad sh1_ended_3 "$(cat "$T/out")"
drive sigterm '# ' -- "${CTL[@]}" exec start -it c sh2 -- sh -i
kc exec status c sh2
out_has 'state: +running' && ok sigterm_leaves_it_running || bad sigterm_leaves_it_running "$(cat "$T/out")"

# kin ctl shell: root's login shell from /etc/passwd, on a pty, its
# record gone at the end; a user kin's /etc/passwd lacks is refused.
drive run '# ' 'echo "home=$HOME user=$USER shell=$0 tty=$(tty)"' 'home=/root user=root shell=-bash tty=/dev/pts/' \
	-- "${CTL[@]}" shell
kc exec list shell
! out_has 'shell-' && ok shell_record_gone || bad shell_record_gone "$(cat "$T/out")"
# kin ctl shell ended by a signal (its terminal gone): the shell is hung
# up, its record gone; the client's terminal restored.
drive sigterm '# ' -- "${CTL[@]}" shell
wait_for "! \"\${CTL[@]}\" exec list shell 2>/dev/null | grep -q shell-" 50 && ok shell_hung_up_by_signal ||
	bad shell_hung_up_by_signal "$("${CTL[@]}" exec list shell 2>&1)"
kc shell --user 4242 </dev/null
[ $rc -eq 1 ] && out_has 'login: user "4242" is not in /etc/passwd' && ok shell_unknown_user_refused ||
	bad shell_unknown_user_refused "rc $rc: $(cat "$T/out")"

# Detach, input while nobody is attached, attach again: it is all there.
drive detach '# ' -- "${CTL[@]}" exec attach c sh2
printf 'echo between-$((3*3))\r' | "${CTL[@]}" exec stdin c sh2 >/dev/null 2>&1
drive expect 'between-9' -- "${CTL[@]}" exec attach c sh2
# ... and from a position: only what came after it.
kc exec status c sh2
pos=$(sed -nE 's/^output: +([0-9]+) bytes stdout.*/\1/p' "$T/out")
printf 'echo later-$((4*4))\r' | "${CTL[@]}" exec stdin c sh2 >/dev/null 2>&1
logs_have c sh2 later-16
timeout 5 "${CTL[@]}" exec attach c sh2 --from "$pos:0" </dev/null >"$T/from" 2>&1 &
sleep 1
kill -TERM $! 2>/dev/null
wait $! 2>/dev/null
grep -q later-16 "$T/from" && ! grep -q between-9 "$T/from" && ok attach_from_position ||
	bad attach_from_position "$(tr '\r\n' '||' <"$T/from")"

# Two clients at once: both see the output, the input of either goes in.
drive pair '# ' -- "${CTL[@]}" exec attach c sh2
# -i without -t: pipes, kin ctl's stdin to its stdin, closed at the end.
printf 'one\ntwo\n' | "${CTL[@]}" exec start -i c cat -- sh -c 'cat; echo done >&2; exit 5' >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 5 ] && [ "$(cat "$T/out")" = "$(printf 'one\ntwo')" ] && grep -qx done "$T/err" &&
	ok interactive_pipes || bad interactive_pipes "rc $rc: $(cat "$T/out" "$T/err")"

# Hostile requests.
kc exec resize c sh2 0x0
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT: exec "c/sh2": window size 0x0: rows and columns are 1-4096' &&
	ok resize_0x0_refused || bad resize_0x0_refused "rc $rc: $(cat "$T/out")"
kc exec resize c sh2 65535x65535
[ $rc -eq 1 ] && out_has 'window size 65535x65535: rows and columns are 1-4096' &&
	ok resize_65535_refused || bad resize_65535_refused "rc $rc: $(cat "$T/out")"
kc exec start c plain -- sleep 100000
kc exec attach -t c plain
[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION: exec "c/plain" has no terminal' &&
	ok attach_t_needs_a_terminal || bad attach_t_needs_a_terminal "rc $rc: $(cat "$T/out")"
kc exec resize c plain 10x10
[ $rc -eq 1 ] && out_has 'has no terminal' && ok resize_needs_a_terminal || bad resize_needs_a_terminal "rc $rc"
kc exec start -t --stdout-to /tmp/x c both -- true
[ $rc -eq 1 ] && out_has 'terminal: its own, not stdio paths too' && ok terminal_and_paths_refused ||
	bad terminal_and_paths_refused "rc $rc: $(cat "$T/out")"
printf 'x' | "${CTL[@]}" exec stdin c sh1 >"$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] && out_has 'exec "c/sh1": no stdin pipe \(not asked for, closed, or ended\)' &&
	ok input_after_exit_refused || bad input_after_exit_refused "rc $rc: $(cat "$T/out")"
kc exec attach c sh1 </dev/null
[ $rc -eq 3 ] && ok attach_to_ended_gives_its_status || bad attach_to_ended_gives_its_status "rc $rc"
# Attachments are followers: 16 per executable, the 17th refused.
ATT=()
for i in $(seq 16); do
	"${CTL[@]}" exec attach c plain </dev/null >/dev/null 2>&1 &
	ATT+=($!)
done
wait_for "[ \"\$(ls -l /proc/$DPID/fd 2>/dev/null | grep -c socket)\" -ge 32 ]" 100
sleep 0.5
kc exec attach c plain </dev/null
[ $rc -eq 1 ] && out_has 'RESOURCE_EXHAUSTED: exec "c/plain": already 16 log followers' &&
	ok attach_17th_refused || bad attach_17th_refused "rc $rc: $(cat "$T/out")"
kill "${ATT[@]}" 2>/dev/null
wait "${ATT[@]}" 2>/dev/null
serving && ok serving_after_attach_storm || bad serving_after_attach_storm "not serving"

# A flood through the terminal and an attached client that does not read:
# the workload ends at its own pace, kin answers meanwhile, the client is
# cut off (kin queued at most its per-connection cap for it).
"${CTL[@]}" exec start -t c flood -- sh -c 'sleep 1; head -c 40000000 /dev/zero | tr "\0" x; echo; echo FLOOD-DONE' >/dev/null
mkfifo "$T/slow"
"${CTL[@]}" exec attach c flood </dev/null >"$T/slow" 2>"$T/slow.err" &
SLOW=$!
exec 8<"$T/slow" # opened, never read
t0=$(date +%s%N)
wait_for "\"\${CTL[@]}\" exec status c flood | grep -q 'state: *exited'" 300
t1=$(date +%s%N)
kc exec status c flood
out_has 'exit status 0' && serving && ok flood_not_stalled_by_a_slow_client ||
	bad flood_not_stalled_by_a_slow_client "$(cat "$T/out")"
echo "    (40 MB through the terminal in $(((t1 - t0) / 1000000)) ms with a client that does not read)"
cat <&8 >/dev/null &
DRAIN=$!
wait $SLOW
src=$?
kill $DRAIN 2>/dev/null
exec 8<&-
[ $src -eq 1 ] && grep -q 'RESOURCE_EXHAUSTED: exec "c/flood": attached client cut off' "$T/slow.err" &&
	ok slow_client_cut_off || bad slow_client_cut_off "rc $src: $(cat "$T/slow.err")"

# A big ring (64 MiB kept): an attach sends its last 1 MiB, not more than
# the connection's cap takes at once (which would cut the client off).
kc exec start --log-size 64M c big -- sh -c 'head -c 20000000 /dev/zero | tr "\0" y; echo BIG-END'
wait_for "\"\${CTL[@]}\" exec status c big | grep -q 'state: *exited'" 300
"${CTL[@]}" exec attach c big </dev/null >"$T/big" 2>"$T/big.err"
rc=$?
size=$(stat -c %s "$T/big")
[ $rc -eq 0 ] && [ "$(tail -c 8 "$T/big")" = "BIG-END" ] && [ "$size" -le $((1024 * 1024)) ] &&
	[ "$size" -gt 1000000 ] && ok attach_big_ring_last_mib || bad attach_big_ring_last_mib "rc $rc, $size bytes: $(cat "$T/big.err")"

# The master across a re-exec and a crash: the same shell, not hung up.
kc exec start -t c keep -- sh -i
keep=$(field c keep)
kc reexec
[ $rc -eq 0 ] && ok reexec || bad reexec "$(cat "$T/out")"
printf 'echo after-reexec-$((40+1))\r' | "${CTL[@]}" exec stdin c keep >/dev/null 2>&1
logs_have c keep after-reexec-41 && [ "$(field c keep)" = "$keep" ] && ok terminal_across_reexec ||
	bad terminal_across_reexec "$("${CTL[@]}" exec logs c keep 2>&1 | tail -3)"
# An attached client across a re-exec: attached again where it was.
drive reexec '# ' "$KIN ctl --socket $S reexec" -- "${CTL[@]}" exec attach c keep
wait_for "[ -s '$SD/state' ]" 100
sleep 0.2
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
sleep 0.3
daemon_start
serving && ok successor_serving || { bad successor_serving "$(tail -5 "$T/kin.log")"; exit 1; }
printf 'echo after-crash-$((50+2))\r' | "${CTL[@]}" exec stdin c keep >/dev/null 2>&1
logs_have c keep after-crash-52 && [ "$(field c keep)" = "$keep" ] && ok terminal_across_crash ||
	{ bad terminal_across_crash "$("${CTL[@]}" exec status c keep 2>&1 | tr '\n' '|')"; grep -E 'adopt|keep' "$T/kin.log" | tail -20; }
drive expect 'after-crash-52' -- "${CTL[@]}" exec attach c keep

# Depth 2: zones in zones, a busybox shell on a pty of the inner kin.
BB=$T/bbroot
ns_busybox_root "$BB"
for a in sh stty sleep cat; do ln -s busybox "$BB/bin/$a"; done
cp -a "$BB" "$T/iroot" && mv "$T/iroot" "$BB/iroot"
kc zone create z1 --root "$BB"
[ $rc -eq 0 ] && kc --target z1 zone create z2 --root /iroot
[ $rc -eq 0 ] && kc --target z1/z2 cell create c
if [ $rc -eq 0 ]; then
	drive interactive 25 90 '# ' -- "${CTL[@]}" --target z1/z2 exec start -it c sh -- /bin/busybox sh -i
	drive sigterm '# ' -- "${CTL[@]}" --target z1/z2 exec start -it c sh2 -- /bin/busybox sh -i
	drive run '# ' 'echo "home=$HOME shell=$0"' 'home=/ shell=-sh' -- "${CTL[@]}" --target z1/z2 shell
	# A flood at depth 2 with a client that does not read: the inner
	# workload ends at its pace, every kin on the way serves, the client
	# is cut off.
	Z2=("${CTL[@]}" --target z1/z2)
	yes | head -c 16000000 >"$BB/iroot/big" # z2's root: cat is quicker than busybox's head
	"${Z2[@]}" exec start -t c flood -- sh -c 'sleep 1; cat /big; echo FLOOD-DONE' >/dev/null
	rm -f "$T/slow" && mkfifo "$T/slow"
	"${Z2[@]}" exec attach c flood </dev/null >"$T/slow" 2>"$T/slow.err" &
	SLOW=$!
	exec 8<"$T/slow"
	wait_for "\"\${Z2[@]}\" exec status c flood | grep -q 'state: *exited'" 1200
	kc --target z1/z2 exec status c flood
	out_has 'exit status 0' && serving && "${CTL[@]}" --target z1 health >/dev/null 2>&1 &&
		ok depth2_flood_not_stalled || bad depth2_flood_not_stalled "$(cat "$T/out")"
	cat <&8 >/dev/null &
	DRAIN=$!
	wait $SLOW
	src=$?
	kill $DRAIN 2>/dev/null
	exec 8<&-
	[ $src -eq 1 ] && grep -q 'cut off' "$T/slow.err" && ok depth2_slow_client_cut_off ||
		bad depth2_slow_client_cut_off "rc $src: $(cat "$T/slow.err")"
else
	bad depth2_zones "rc $rc: $(cat "$T/out")"
fi

kill -TERM "$DPID"
wait "$DPID"
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
