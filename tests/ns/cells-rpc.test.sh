#!/usr/bin/env bash
# Cells over RPC: the real `kin init --socket` as a daemon (in a cgroup of
# its own on the host's cgroup2) and as PID 1 of new namespaces, driven only
# through `kin ctl`: every cell and exec operation, the events stream, logs
# -f, `exec wait`'s exit status, bad input (names, NOT_FOUND, ALREADY_EXISTS,
# limits refused naming the controller on this host, malformed flags),
# hostile clients (random bytes, extreme values: tests/cells/hostile.c), kin
# still serving after each, executables stopped with kin, no cgroup left.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin cells-rpc

ns_need_cgroup2
TOP=kin-rpc-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
BASE=$CG/$TOP/d
CELLS=$BASE/cells
# daemon_start: kin init as a daemon, first moved into $BASE (kin then moves
# itself into $BASE/init and keeps cells in $BASE/cells).
daemon_start() {
	mkdir -p "$BASE"
	sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --log-level debug --grace 2s --socket '$S'" \
		>"$T/kin.log" 2>&1 &
	DPID=$!
	wait_for "grep -q 'ready:' '$T/kin.log'" 250
}
# kc ARGS...: kin ctl against the daemon; output in $T/out, exit code in $rc.

daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }

t_own_leaf() {
	grep -qx "$DPID" "$BASE/init/cgroup.procs" && [ -d "$CELLS" ] && ok own_leaf_and_cells_dir ||
		bad own_leaf_and_cells_dir "kin not in $BASE/init or no $CELLS"
}

t_create_list_show() {
	kc cell create a && kc cell create a/b && kc cell create z || { bad create "exit $rc"; return; }
	[ -d "$CELLS/a/b" ] && [ -d "$CELLS/z" ] || { bad create "no cgroup dirs"; return; }
	kc cell list
	local order
	order=$(awk '{print $1}' "$T/out" | tr '\n' ' ')
	[ $rc -eq 0 ] && [ "$order" = "a a/b z " ] || { bad list "exit $rc, order '$order'"; return; }
	kc -o json cell list a
	out_has '"cells":\[\{"path":"a","depth":1' && out_has '"path":"a/b","depth":2' &&
		! out_has '"path":"z"' || { bad list_subtree_json "$(cat "$T/out")"; return; }
	kc cell show a/b
	[ $rc -eq 0 ] && out_has '^path: +a/b$' && out_has '^depth: +2$' && out_has '^processes: +0$' ||
		{ bad show "exit $rc"; return; }
	kc -o json cell show a
	[ $rc -eq 0 ] && out_has '"cell":\{"path":"a"' && out_has '"stats":\{"has_cpu":' &&
		ok create_list_show || bad create_list_show "json show: $(cat "$T/out")"
}

t_duplicate() {
	kc cell create a
	[ $rc -eq 1 ] && out_has 'ALREADY_EXISTS: cell "a" already exists' && serving &&
		ok duplicate_already_exists || bad duplicate_already_exists "exit $rc"
	kc exec start a d1 -- sleep 30
	kc exec start a d1 -- sleep 30
	[ $rc -eq 1 ] && out_has 'ALREADY_EXISTS' && ok duplicate_exec_already_exists ||
		bad duplicate_exec_already_exists "exit $rc"
	kc exec stop --grace 100ms a d1
	kc exec delete a d1
}

# Options may follow CELL NAME, as docs/rpc.md writes them.
t_options_after_names() {
	kc exec start a o1 --env K=v1 --log-size 64K -- /bin/sh -c 'echo "$K"'
	[ $rc -eq 0 ] || { bad options_after_names "start: exit $rc: $(cat "$T/out")"; return; }
	kc exec wait a o1 -o json
	[ $rc -eq 0 ] && out_has '"exit_code":0' || { bad options_after_names "wait: exit $rc: $(cat "$T/out")"; return; }
	kc exec logs a o1
	[ "$(cat "$T/out")" = v1 ] || { bad options_after_names "logs: '$(cat "$T/out")'"; return; }
	kc cell show a -o json
	out_has '"cell":\{"path":"a"' && ok options_after_names || bad options_after_names "show: $(cat "$T/out")"
	kc exec delete a o1
}

t_bad_names() {
	local n fails=""
	for n in 'bad name' '../x' 'a//b' '/a' 'a/' '.' "$(printf 'x%.0s' $(seq 65))"; do
		kc cell create "$n"
		[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' || fails="$fails '$n'(exit $rc)"
	done
	kc exec start a 'b/c' -- true
	[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' || fails="$fails exec-name(exit $rc)"
	[ -z "$(find "$CELLS" -name '*bad*' -o -name x)" ] || fails="$fails dir-made"
	[ -z "$fails" ] && serving && ok bad_names_invalid_argument || bad bad_names_invalid_argument "$fails"
}

t_not_found() {
	local fails=""
	kc cell show nope; [ $rc -eq 1 ] && out_has 'NOT_FOUND: cell "nope"' || fails="$fails show($rc)"
	kc cell create nope/child; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails parent($rc)"
	kc cell delete nope; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails delete($rc)"
	kc cell freeze nope; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails freeze($rc)"
	kc exec start nope x -- true; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails start($rc)"
	kc exec status a ghost; [ $rc -eq 1 ] && out_has 'NOT_FOUND: exec "a/ghost"' || fails="$fails status($rc)"
	kc exec wait a ghost; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails wait($rc)"
	kc exec logs -f a ghost; [ $rc -eq 1 ] && out_has NOT_FOUND || fails="$fails logs($rc)"
	kc -o json cell show nope
	[ $rc -eq 1 ] && out_has '^\{"error":\{"code":"NOT_FOUND","message":"cell \\"nope\\"' || fails="$fails json($rc)"
	[ -z "$fails" ] && serving && ok unknown_not_found || bad unknown_not_found "$fails"
}

t_limits_refused() {
	local k fails=""
	for k in memory.max=64M cpu.max=50000 pids.max=10 cpuset.cpus=0 io.weight=100; do
		local ctl=${k%%.*}
		kc cell create lim "$k"
		[ $rc -eq 1 ] && out_has "FAILED_PRECONDITION: cell \"lim\": ${k%%=*}: controller $ctl is not enabled" ||
			fails="$fails $k(exit $rc: $(head -c 200 "$T/out"))"
		[ -e "$CELLS/lim" ] && fails="$fails $k(dir left)"
	done
	kc cell create lim memory.max=lots
	[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && out_has 'memory.max' || fails="$fails bad-value($rc)"
	kc cell update a pids.max=5
	[ $rc -eq 1 ] && out_has 'controller pids is not enabled' || fails="$fails update($rc)"
	[ -z "$fails" ] && serving && ok limits_refused_naming_controller || bad limits_refused_naming_controller "$fails"
}

t_usage_errors() {
	local args fails=""
	while IFS= read -r args; do
		eval "kc $args"
		[ $rc -eq 2 ] || fails="$fails [$args](exit $rc)"
	done <<'EOF'
cell
cell frobnicate a
cell create
cell create a novalue
cell update a
cell show
cell show a b
cell list --bogus
cell delete --force
cell freeze --force a
exec
exec start a x
exec start a x --
exec start --uid abc a x -- true
exec start --log-size 1Q a x -- true
exec start --uid-map 1:2 a x -- true
exec start --bogus a x -- true
exec signal a x NOSUCHSIG
exec signal a x
exec stop --grace forever a x
exec logs a
exec wait a x extra
exec status --cwd / a x
events extra
events --cell
cell list -o yaml
EOF
	[ -z "$fails" ] && serving && ok malformed_flags_exit_2 || bad malformed_flags_exit_2 "$fails"
}

t_exec_wait_status() {
	kc exec start a seven -- sh -c 'exit 7'
	[ $rc -eq 0 ] && out_has '^started a/seven pid [0-9]+$' || { bad exec_wait_status "start exit $rc"; return; }
	kc exec wait a seven
	local r1=$rc
	kc exec start a killed -- sh -c 'kill -9 $$'
	kc exec wait a killed
	local r2=$rc
	kc exec start a zero -- true
	kc exec wait a zero
	local r3=$rc
	kc -o json exec status a seven
	[ "$r1 $r2 $r3" = "7 137 0" ] && out_has '"exited":true,"exit_code":7' &&
		ok exec_wait_exits_with_status || bad exec_wait_exits_with_status "exits $r1 $r2 $r3, want 7 137 0"
	kc exec start a seven -- sh -c 'exit 8' # an ended name is replaced
	kc exec wait a seven
	[ $rc -eq 8 ] && ok exec_restart_name_replaces || bad exec_restart_name_replaces "exit $rc"
}

t_exec_errors() {
	kc exec start a nobin -- /no/such/binary
	[ $rc -eq 1 ] && out_has 'exec "a/nobin": execve: No such file or directory' || {
		bad exec_error_named "exit $rc: $(cat "$T/out")"; return; }
	kc exec status a nobin
	[ $rc -eq 1 ] && out_has NOT_FOUND || { bad exec_error_named "a record was left"; return; }
	kc exec start --caps NOT_A_CAP a badcap -- true
	[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT: exec "a/badcap": caps' &&
		ok exec_error_named || bad exec_error_named "caps: exit $rc: $(cat "$T/out")"
}

t_logs() {
	kc exec start a out -- sh -c 'echo to-stdout; echo to-stderr >&2'
	kc exec wait a out
	"$KIN" ctl --socket "$S" exec logs a out >"$T/o1" 2>"$T/e1"
	"$KIN" ctl --socket "$S" exec logs --stderr a out >"$T/o2" 2>"$T/e2"
	kc -o json exec logs --stdout a out
	[ "$(cat "$T/o1")" = to-stdout ] && [ "$(cat "$T/e1")" = to-stderr ] && [ ! -s "$T/o2" ] &&
		[ "$(cat "$T/e2")" = to-stderr ] && out_has '^\{"stream":"STDOUT","data":"to-stdout\\n","dropped":0\}$' &&
		ok logs_read || bad logs_read "o1='$(cat "$T/o1")' e1='$(cat "$T/e1")' e2='$(cat "$T/e2")' json=$(cat "$T/out")"
}

t_logs_follow() {
	kc exec start a talk -- sh -c 'echo line1; sleep 0.6; echo line2; sleep 0.6; echo line3'
	"$KIN" ctl --socket "$S" exec logs -f a talk >"$T/follow" 2>&1 &
	local f=$!
	# Followed live: line1 arrives while the executable still runs.
	wait_for "grep -q line1 '$T/follow'" 50 || { bad logs_follow "line1 not streamed"; kill $f; return; }
	kc exec status a talk
	out_has 'state: +running' || { bad logs_follow "executable ended before line1 was seen"; kill $f; wait $f; return; }
	wait_for "! kill -0 $f 2>/dev/null" 250 || { bad logs_follow "logs -f did not end with the executable"; kill $f; return; }
	wait $f; local r=$?
	[ $r -eq 0 ] && [ "$(tr '\n' ' ' <"$T/follow")" = "line1 line2 line3 " ] && ok logs_follow_until_end ||
		bad logs_follow_until_end "exit $r, '$(cat "$T/follow")'"
}

t_follow_client_goes_away() {
	# 40 followers killed mid-stream (over the 16 per executable): each must
	# be unfollowed, or the 17th would be refused.
	kc exec start a chatty -- sh -c 'while :; do echo tick; sleep 0.05; done'
	local i p
	for i in $(seq 40); do
		"$KIN" ctl --socket "$S" exec logs -f a chatty >/dev/null 2>"$T/ferr" &
		p=$!
		sleep 0.05
		kill -TERM $p; wait $p 2>/dev/null
	done
	"$KIN" ctl --socket "$S" exec logs -f a chatty >"$T/follow2" 2>&1 &
	p=$!
	wait_for "grep -q tick '$T/follow2'" 100 && ! grep -q RESOURCE_EXHAUSTED "$T/follow2" &&
		ok follow_client_gone_unfollows || bad follow_client_gone_unfollows "$(head -3 "$T/follow2")"
	kill $p; wait $p 2>/dev/null
	kc exec stop --grace 100ms a chatty
}

t_events() {
	"$KIN" ctl --socket "$S" events >"$T/ev" 2>&1 &
	local e=$!
	sleep 0.3
	kc cell create ev
	kc exec start ev once -- sh -c 'exit 3'
	kc exec wait ev once
	kc exec start --restart on-failure --backoff 50ms ev flaky -- sh -c 'exit 1'
	wait_for "grep -q 'restart  *ev/flaky' '$T/ev'" 100
	kc exec stop --grace 100ms ev flaky
	kc exec start ev sleeper -- sleep 30
	kc cell freeze ev
	kc cell thaw ev
	kc cell delete --force ev
	wait_for "grep -q 'deleted  *ev' '$T/ev'" 100
	kill -TERM $e; wait $e 2>/dev/null
	local want fails=""
	for want in 'created +ev$' 'start +ev/once pid=' 'exit +ev/once pid=[0-9]+ status=3' \
		'restart +ev/flaky .*count=1 delay=50ms' 'frozen +ev$' 'thawed +ev$' \
		'exit +ev/sleeper pid=[0-9]+ signal=9' 'deleted +ev$'; do
		grep -qE "$want" "$T/ev" || fails="$fails '$want'"
	done
	[ -z "$fails" ] && ok events_stream || bad events_stream "missing$fails: $(tr '\n' '|' <"$T/ev")"
	[ ! -e "$CELLS/ev" ] && ok delete_force_leaves_no_cgroup || bad delete_force_leaves_no_cgroup "$CELLS/ev left"
}

t_events_json_filter() {
	"$KIN" ctl --socket "$S" -o json events --cell z >"$T/evj" 2>&1 &
	local e=$!
	sleep 0.3
	kc cell create z/in
	kc cell create outside
	kc cell delete z/in
	kc cell delete outside
	wait_for "grep -q CELL_DELETED '$T/evj'" 100
	kill $e; wait $e 2>/dev/null
	grep -q '"type":"CELL_CREATED","cell":"z/in"' "$T/evj" && ! grep -q outside "$T/evj" &&
		ok events_json_subtree_filter || bad events_json_subtree_filter "$(cat "$T/evj")"
}

t_events_client_goes_away() {
	# 80 subscribers that go away (over the 64 listeners): each must be
	# unlistened, or the 65th would be refused.
	local i p
	for i in $(seq 80); do
		"$KIN" ctl --socket "$S" events >/dev/null 2>&1 &
		p=$!
		sleep 0.02
		kill $p; wait $p 2>/dev/null
	done
	"$KIN" ctl --socket "$S" events >"$T/ev2" 2>&1 &
	p=$!
	sleep 0.3
	kc cell create late
	wait_for "grep -q 'created  *late' '$T/ev2'" 100 && ok events_client_gone_unlistens ||
		bad events_client_gone_unlistens "$(head -3 "$T/ev2")"
	kill $p; wait $p 2>/dev/null
	kc cell delete late
}

t_freeze_halts_progress() {
	kc cell create fr
	kc exec start fr count -- sh -c "i=0; while :; do i=\$((i+1)); echo \$i >>'$T/count'; sleep 0.02; done"
	wait_for "[ -s '$T/count' ]" 100
	kc cell freeze fr
	[ $rc -eq 0 ] && out_has '^frozen fr$' || { bad freeze "exit $rc"; return; }
	kc -o json cell show fr
	out_has '"frozen":true' || { bad freeze "not shown frozen"; return; }
	local a b c
	a=$(wc -l <"$T/count"); sleep 0.5; b=$(wc -l <"$T/count")
	kc cell thaw fr
	sleep 0.3; c=$(wc -l <"$T/count")
	[ "$a" = "$b" ] && [ "$c" -gt "$b" ] && ok freeze_halts_thaw_resumes ||
		bad freeze_halts_thaw_resumes "counts $a $b $c"
}

t_kill_leaves_no_process() {
	kc exec start fr extra -- sleep 100
	kc cell kill fr
	[ $rc -eq 0 ] || { bad kill "exit $rc"; return; }
	wait_for "[ ! -s '$CELLS/fr/cgroup.procs' ]" 100
	kc exec wait fr extra
	local r=$rc
	kc -o json cell show fr
	[ ! -s "$CELLS/fr/cgroup.procs" ] && [ $r -eq 137 ] && out_has '"populated":false' &&
		ok kill_leaves_no_process || bad kill_leaves_no_process "procs '$(cat "$CELLS/fr/cgroup.procs")', wait $r"
	kc cell delete fr
	[ $rc -eq 0 ] && [ ! -e "$CELLS/fr" ] && ok delete_leaves_no_cgroup || bad delete_leaves_no_cgroup "exit $rc"
}

t_signal_stop_grace() {
	kc exec start a stubborn -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
	kc exec signal a stubborn USR1 # sh dies of USR1: default action
	kc exec wait a stubborn
	[ $rc -eq $((128 + 10)) ] || { bad signal "wait exit $rc after USR1"; return; }
	ok signal_delivered
	kc exec start a stubborn -- sh -c 'trap "" TERM; while :; do sleep 0.05; done'
	sleep 0.2
	local t0=$(date +%s%N)
	kc -o json exec stop --grace 300ms a stubborn
	local ms=$((($(date +%s%N) - t0) / 1000000))
	[ $rc -eq 0 ] && out_has '"signal":9' && [ $ms -ge 250 ] && ok stop_sigkill_after_grace ||
		bad stop_sigkill_after_grace "exit $rc after $ms ms: $(cat "$T/out")"
}

t_list_delete() {
	kc exec list a
	[ $rc -eq 0 ] && out_has '^a +seven +exited' || { bad exec_list "$(cat "$T/out")"; return; }
	kc -o json exec list
	out_has '"executables":\[' || { bad exec_list "json"; return; }
	kc exec start a longrun -- sleep 100
	kc exec delete a longrun
	[ $rc -eq 1 ] && out_has FAILED_PRECONDITION || { bad exec_delete "running one deleted: exit $rc"; return; }
	kc exec stop a longrun
	kc exec delete a longrun
	kc exec status a longrun
	[ $rc -eq 1 ] && out_has NOT_FOUND && ok exec_list_delete || bad exec_list_delete "exit $rc"
}

# exec logs --from OUT[:ERR]: each stream from a byte counted since the
# first start; what the ring no longer keeps is said as missed.
t_logs_from() {
	local total fails=""
	kc exec start a lf --log-size 4K -- /bin/sh -c 'seq 1 2000; echo e1 >&2; echo e2 >&2'
	kc exec wait a lf
	total=$(seq 1 2000 | wc -c)
	kc exec logs --stdout --from $((total - 10)) a lf
	[ "$(cat "$T/out")" = "$(seq 1 2000 | tail -c 10)" ] || fails="$fails tail($(head -c 80 "$T/out"))"
	kc exec logs --stdout --from 0 a lf
	out_has "^kin ctl: \[$((total - 4096)) bytes missed" && [ "$(tail -1 "$T/out")" = 2000 ] ||
		fails="$fails missed($(head -1 "$T/out"))"
	kc exec logs -f --from $total:3 a lf
	[ "$(cat "$T/out")" = e2 ] || fails="$fails out:err($(cat "$T/out"))"
	kc exec logs --from $((total + 99)) a lf
	[ $rc -eq 0 ] && [ ! -s "$T/out" ] || fails="$fails past-the-end($rc)"
	kc exec logs --from x a lf
	[ $rc -eq 2 ] && out_has "--from 'x'" || fails="$fails bad-value($rc)"
	kc exec status --from 1 a lf
	[ $rc -eq 2 ] || fails="$fails not-for-status($rc)"
	[ -z "$fails" ] && serving && ok logs_from || bad logs_from "$fails"
	kc exec delete a lf
}

# A waiter that goes away gives its slot back (an executable has a few):
# twenty clients gone in the middle of exec wait, then a wait is answered.
t_wait_slots_given_back() {
	local i
	kc exec start a ws -- sleep 1000
	for i in $(seq 20); do timeout -s KILL 0.3 "$KIN" ctl --socket "$S" exec wait a ws >/dev/null 2>&1; done
	timeout 10 "$KIN" ctl --socket "$S" exec wait a ws >"$T/out" 2>&1 &
	local w=$!
	sleep 0.5
	kc exec stop --grace 100ms a ws
	wait $w
	local rc=$?
	[ $rc -eq 143 ] && serving && ok wait_slots_given_back || bad wait_slots_given_back "wait rc $rc: $(cat "$T/out")"
	kc exec delete a ws
}

t_stdin() {
	kc exec start --stdin a reader -- sh -c 'read x; echo got $x'
	echo hello | "$KIN" ctl --socket "$S" exec stdin --close a reader >"$T/out" 2>&1
	local r=$?
	kc exec wait a reader
	"$KIN" ctl --socket "$S" exec logs a reader >"$T/o3" 2>&1
	[ $r -eq 0 ] && [ "$(cat "$T/o3")" = "got hello" ] && ok stdin_pipe || bad stdin_pipe "exit $r, '$(cat "$T/o3")'"
	kc exec stdin a seven <<<x
	[ $rc -eq 1 ] && out_has FAILED_PRECONDITION && ok stdin_refused_without_pipe ||
		bad stdin_refused_without_pipe "exit $rc"
}

# 1 MiB to a reader that starts late: the pipe fills, kin takes what it can
# and kin ctl sends the rest again, all over its one connection.
t_stdin_large() {
	kc exec start --stdin a slowreader -- sh -c 'sleep 0.5; wc -c'
	head -c 1048576 /dev/zero | "$KIN" ctl --socket "$S" exec stdin --close a slowreader >"$T/out" 2>&1
	local r=$?
	kc exec wait a slowreader
	"$KIN" ctl --socket "$S" exec logs --stdout a slowreader >"$T/o4" 2>&1
	[ $r -eq 0 ] && [ "$(tr -d ' ' <"$T/o4")" = 1048576 ] && ok stdin_large_slow_reader ||
		bad stdin_large_slow_reader "exit $r, '$(cat "$T/o4")'"
}

t_delete_refused() {
	kc exec start z busy -- sleep 100
	kc cell delete z
	[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION' && [ -d "$CELLS/z" ] && ok delete_refused_while_running ||
		bad delete_refused_while_running "exit $rc"
}

t_hostile_clients() {
	# tests/cells/hostile.c: random bytes and extreme values to every
	# Cells/Exec/Events method; a clean status each, Health after each
	# batch, kin's fd count back where it was. One verdict per line.
	local verdict name why
	"$PWD/$BUILD/cells-hostile" "$S" "$DPID" >"$T/hostile" 2>&1
	local r=$?
	while read -r verdict name why; do
		case $verdict in
		ok) ok "hostile_$name" ;;
		bad) bad "hostile_$name" "$why" ;;
		'#') echo "    # $name $why" ;;
		esac
	done <"$T/hostile"
	grep -q '^ok hostile_start' "$T/hostile" && [ $r -ne 0 ] && ! grep -q '^bad ' "$T/hostile" &&
		bad hostile_exit "exit $r: $(tail -3 "$T/hostile")"
	grep -q '^ok hostile_start' "$T/hostile" || bad hostile_start "$(tail -3 "$T/hostile")"
	return 0
}

t_stop_kin_stops_executables() {
	kc exec start a lingering -- sleep 1000
	local pid
	pid=$("$KIN" ctl --socket "$S" -o json exec status a lingering | sed -nE 's/.*"pid":([0-9]+).*/\1/p')
	kill -TERM "$DPID"
	wait_for "! kill -0 $DPID 2>/dev/null" 250
	wait "$DPID" 2>/dev/null
	local procs
	procs=$(find "$CELLS" -name cgroup.procs -exec cat {} + 2>/dev/null)
	[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && [ -z "$procs" ] &&
		grep -q 'cells: stopping [0-9]* executables' "$T/kin.log" && ok kin_stop_stops_executables ||
		bad kin_stop_stops_executables "pid '$pid' alive or procs '$procs'"
	clean_log "$T/kin.log" && ok no_sanitizer_report || bad no_sanitizer_report "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
	DPID=
}

t_own_leaf
t_create_list_show
t_duplicate
t_options_after_names
t_bad_names
t_not_found
t_limits_refused
t_usage_errors
t_exec_wait_status
t_exec_errors
t_logs
t_logs_follow
t_follow_client_goes_away
t_events
t_events_json_filter
t_events_client_goes_away
t_freeze_halts_progress
t_kill_leaves_no_process
t_signal_stop_grace
t_list_delete
t_stdin
t_stdin_large
t_logs_from
t_wait_slots_given_back
t_delete_refused
t_hostile_clients
serving && ok still_serving_after_all || bad still_serving_after_all "kin stopped answering"
t_stop_kin_stops_executables

# As PID 1 of new namespaces (zone role), where cgroup2 is gone from its
# mount namespace: kin runs, and the cells services say why they cannot.
t_pid1_without_cgroup2() {
	local S2=$T/z.sock
	ns_start "$T/z.log" sh -c "umount -l '$CG' && exec '$KIN' init --zone z --socket '$S2'"
	wait_for "grep -q 'ready:' '$T/z.log'" 250
	"$KIN" ctl --socket "$S2" cell list >"$T/out" 2>&1; local r=$?
	"$KIN" ctl --socket "$S2" health >>"$T/out" 2>&1; local h=$?
	kill -TERM "$NS_PID1" 2>/dev/null; wait "$NS_UNSHARE" 2>/dev/null
	[ $r -eq 1 ] && [ $h -eq 0 ] && grep -q 'FAILED_PRECONDITION: cells are not available: .*cgroup2' "$T/out" &&
		ok pid1_no_cgroup2_failed_precondition || bad pid1_no_cgroup2_failed_precondition "exit $r/$h: $(cat "$T/out")"
}

t_pid1_cells() {
	# kin as PID 1 of namespaces, in a cgroup of its own: cells work there too.
	local S3=$T/p.sock B=$CG/$TOP/p
	mkdir -p "$B"
	ns_start "$T/p.log" sh -c "echo \$\$ >'$B/cgroup.procs' && exec '$KIN' init --zone p --socket '$S3'"
	wait_for "grep -q 'ready:' '$T/p.log'" 250
	"$KIN" ctl --socket "$S3" cell create c >"$T/out" 2>&1 &&
		"$KIN" ctl --socket "$S3" exec start c sl -- sleep 1000 >>"$T/out" 2>&1
	local r=$?
	local in_cell
	in_cell=$(cat "$B/cells/c/cgroup.procs" 2>/dev/null | wc -l)
	kill -TERM "$NS_PID1" 2>/dev/null; wait "$NS_UNSHARE" 2>/dev/null
	[ $r -eq 0 ] && [ "$in_cell" = 1 ] && [ -z "$(cat "$B/cells/c/cgroup.procs" 2>/dev/null)" ] &&
		ok pid1_cells_and_stop || bad pid1_cells_and_stop "exit $r, $in_cell in cell: $(cat "$T/out")"
}
t_pid1_without_cgroup2
t_pid1_cells
ns_suite_end
