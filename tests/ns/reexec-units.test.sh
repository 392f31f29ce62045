#!/usr/bin/env bash
# Re-exec with units (`kin ctl reexec`, docs/reexec.md): a daemon kin
# running systemd units re-executes itself three times, and no service
# notices. The same main pids (a simple service, a Type=forking daemon
# adopted from its PIDFile=), still watched: killed afterwards, each is
# restarted as Restart= says. A Type=notify service keeps talking over the
# socket it connected to before (the notify socket goes along). A socket
# unit still listens on the same socket and starts its service on the
# first connection. A failing service's restart delay and start limit go
# on to exactly three runs. A timer keeps firing. A failed unit stays
# failed, a oneshot stays exited and its ExecStop= runs at the end. Every
# line the simple service printed is there once, in order. A start under
# way is waited for; a running service whose unit file is gone is stopped
# with a log line naming it, and its name is usable again. A SIGKILLed
# kin's successor adopts the services: the keeper held the notify socket
# (a Type=notify service's connected socket still reaches kin) and the
# socket unit's listening socket (its service is adopted; after it ends
# the same socket listens again).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin reexec-units
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 for the notify and socket services"
TOP=kin-reexec-units-test-$$
BASE=$CG/$TOP/d
U=$T/units
R=$T/run
O=$T/o
S=$T/k.sock
cleanup() {
	[ -n "${KIN_TEST_KEEP:-}" ] && cp "$T/kin.log" "$KIN_TEST_KEEP" 2>/dev/null
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$U" "$R" "$O"
unit() { cat >"$U/$1"; }

unit test.target <<EOF
[Unit]
Wants=a.service c.service d.service e.service f.service o.service h.socket t.timer gone.service
EOF
unit a.service <<EOF
[Service]
ExecStart=/bin/sh -c 'echo \$\$\$\$ >$O/a.pid; i=0; while [ \$\$i -lt 100000 ]; do i=\$\$((i+1)); echo a-\$\$i; sleep 0.005; done'
Restart=always
RestartSec=100ms
EOF
unit c.service <<EOF
[Service]
Type=notify
ExecStart=/usr/bin/env python3 -c 'import os,socket,time; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect(os.environ["NOTIFY_SOCKET"]); s.send(b"READY=1"); [(s.send(("STATUS=tick %%d" %% i).encode()), open("$O/c.tick","w").write(str(i)), time.sleep(0.05)) for i in range(100000)]'
EOF
unit d.service <<EOF
[Service]
Type=forking
PIDFile=$O/d.pid
Restart=on-failure
RestartSec=100ms
ExecStart=/bin/sh -c 'sleep 1000 & echo \$! >$O/d.pid'
EOF
unit e.service <<EOF
[Unit]
StartLimitIntervalSec=60s
StartLimitBurst=3
[Service]
ExecStart=/bin/sh -c 'echo run >>$O/e.runs; exit 3'
Restart=on-failure
RestartSec=700ms
EOF
unit f.service <<EOF
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'exit 4'
EOF
unit o.service <<EOF
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'touch $O/o.stopped'
EOF
unit h.socket <<EOF
[Socket]
ListenStream=$R/h.sock
EOF
unit h.service <<EOF
[Service]
ExecStart=/usr/bin/env python3 -c 'import os,socket,time; s=socket.socket(fileno=3); c,_=s.accept(); c.send(("fds=" + os.environ["LISTEN_FDS"]).encode()); c.close(); time.sleep(1000)'
EOF
unit t.timer <<EOF
[Timer]
OnActiveSec=200ms
OnUnitActiveSec=300ms
AccuracySec=1ms
EOF
unit t.service <<EOF
[Unit]
StartLimitIntervalSec=0
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo run >>$O/t.runs'
EOF
unit gone.service <<EOF
[Service]
ExecStart=/bin/sh -c 'echo \$\$\$\$ >$O/gone.pid; exec sleep 1000'
EOF
unit slow.service <<EOF
[Service]
ExecStartPre=/bin/sleep 1
ExecStart=/bin/sh -c 'echo \$\$\$\$ >$O/slow.pid; exec sleep 1000'
EOF

ARGS="--log-level debug --grace 3s --socket $S --state-dir $T/st --unit-dir $U --unit-run-dir $R --default-target test.target"
ns_daemon_start "$T/kin.log" $ARGS
check() { # NAME CONDITION [TRIES]
	if wait_for "$2" "${3:-500}"; then ok "$1"; else bad "$1" "not: $2"; fi
}
main_pid() { kc service status "$1"; sed -n 's/^ *Main PID: \([0-9]*\).*/\1/p' "$T/out"; }
active() { kc service status "$1"; sed -n 's/^ *Active: \([a-z]*\) (\([a-z-]*\)).*/\1 \2/p' "$T/out"; }
fds() { kin_fds "$DPID" | wc -l; }
# the fewest of a few looks: a oneshot's or a restart's pipes come and go
fds_min() {
	local m=99999 n i
	for i in 1 2 3 4 5 6; do n=$(fds); [ "$n" -lt $m ] && m=$n; sleep 0.05; done
	echo $m
}

# The notify service's last tick: it rewrites the file (truncated, then
# written), so a read may find it empty for a moment.
tick() {
	local v= i
	for i in $(seq 100); do
		v=$(cat "$O/c.tick" 2>/dev/null)
		[ -n "$v" ] && break
		sleep 0.01
	done
	echo "$v"
}
check booted "[ -s $O/a.pid ] && [ -s $O/d.pid ] && [ -s $O/c.tick ] && [ -s $O/t.runs ] && [ -s $O/gone.pid ] && grep -q 'f.service failed' $T/kin.log"
wait_for "[ -s $O/e.runs ]" 300
a1=$(main_pid a.service)
d1=$(main_pid d.service)
c1=$(main_pid c.service)
sock_ino=$(stat -c %i "$R/h.sock")

# Three re-execs while the services run, e restarts and the timer fires.
n_ok=0
for i in 1 2 3; do
	kc reexec
	[ $rc -eq 0 ] && out_has "pid $DPID" && n_ok=$((n_ok + 1)) || echo "    | $(cat "$T/out")"
	sleep 0.3
	[ $i = 1 ] && fds1=$(fds_min)
	[ $i = 3 ] && fds3=$(fds_min)
done
[ $n_ok -eq 3 ] && ok reexec_three_times || bad reexec_three_times "$n_ok of 3"
[ "$fds3" -le "$((fds1 + 2))" ] && ok fds_steady || bad fds_steady "$fds1 after the first re-exec, $fds3 after the third"
grep -q 're-exec: [0-9]* units taken back' "$T/kin.log" && ok units_taken_back || bad units_taken_back "$(grep 're-exec' "$T/kin.log" | tail -3)"

[ "$(main_pid a.service)" = "$a1" ] && [ "$(main_pid c.service)" = "$c1" ] &&
	[ "$(main_pid d.service)" = "$d1" ] && [ "$(awk '{print $4}' /proc/$a1/stat)" = "$DPID" ] &&
	ok same_main_pids || bad same_main_pids "a $a1→$(main_pid a.service) c $c1→$(main_pid c.service) d $d1→$(main_pid d.service)"
[ "$(active a.service)" = "active running" ] && [ "$(active d.service)" = "active running" ] &&
	[ "$(active o.service)" = "active exited" ] && [ "$(active f.service)" = "failed failed" ] &&
	ok states_carried || bad states_carried "a $(active a.service), d $(active d.service), o $(active o.service), f $(active f.service)"

# The notify socket it connected to is still kin's.
t0=$(tick)
check notify_socket_carried "kc service status c.service; t=\$(sed -n 's/.*Status: \"tick \\([0-9]*\\)\"/\\1/p' $T/out); [ -n \"\$t\" ] && [ \$t -gt $t0 ]"

# The socket unit: the same socket, still listening, starts its service.
[ "$(stat -c %i "$R/h.sock")" = "$sock_ino" ] && [ "$(active h.socket)" = "active listening" ] &&
	ok socket_still_listening || bad socket_still_listening "$(active h.socket), inode $(stat -c %i "$R/h.sock") vs $sock_ino"
got=$(python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect("'"$R/h.sock"'"); print(s.recv(100).decode())' 2>&1)
[ "$got" = fds=1 ] && ok socket_activation_after || bad socket_activation_after "$got"

# The restart delay and the start limit went along: exactly three runs.
check start_limit_carried "[ \"\$(active e.service)\" = 'failed failed' ] && grep -q 'start-limit-hit' $T/out" 600
sleep 1
[ "$(wc -l <"$O/e.runs")" -eq 3 ] && ok three_runs_only || bad three_runs_only "$(wc -l <"$O/e.runs") runs"

# The timer goes on firing.
t_runs=$(wc -l <"$O/t.runs")
check timer_fires "[ \$(wc -l <$O/t.runs) -ge $((t_runs + 2)) ]"

# Every line a printed across the re-execs, once and in order.
kc service logs a.service
awk -v want=1 '/^a-/ { if ($0 != "a-" want) { print "line " NR ": " $0 " want a-" want; exit } want++ } END { if (want < 100) print "only " want - 1 " lines" }' "$T/out" >"$T/gaps"
[ ! -s "$T/gaps" ] && ok every_line_once_in_order || bad every_line_once_in_order "$(head -3 "$T/gaps")"

# The processes are still watched: killed, each is restarted.
kill -KILL "$a1"
check simple_restarted "[ \$(cat $O/a.pid) != $a1 ] && [ \"\$(active a.service)\" = 'active running' ]"
kill -KILL "$d1"
check forking_restarted "p=\$(main_pid d.service); [ -n \"\$p\" ] && [ \"\$p\" != $d1 ] && [ \"\$p\" != 0 ] && kill -0 \$p"
# A start under way is waited for, then carried.
kc service start --no-block slow.service
kc reexec
[ $rc -eq 0 ] && ok reexec_waits_for_start || bad reexec_waits_for_start "$(cat "$T/out")"
check slow_running "[ -s $O/slow.pid ] && [ \"\$(active slow.service)\" = 'active running' ]"

# A running service whose unit file is gone cannot be carried: stopped.
g=$(cat "$O/gone.pid")
mv "$U/gone.service" "$T/gone.service"
kc reexec
check gone_stopped "! kill -0 $g 2>/dev/null && grep -q 'unit \"gone.service\" cannot be taken over: .*processes are killed' $T/kin.log"
mv "$T/gone.service" "$U/gone.service"
kc daemon-reload
kc service start gone.service
[ $rc -eq 0 ] && [ "$(cat "$O/gone.pid")" != "$g" ] && ok gone_name_reusable || bad gone_name_reusable "$(cat "$T/out")"

errs=$(grep -E '<3>|error' "$T/kin.log" | grep -v 'gone.service')

# A SIGKILLed kin's successor adopts its services from the state file:
# the same main pids (a simple service's, an executable of its cell; a
# Type=forking daemon's, watched), their states and logs going on. The
# keeper held the notify socket and the socket unit's listening socket:
# the notify service's status goes on over the socket it connected to
# once, and the service its socket started is adopted; once it ends, the
# same socket listens again and starts it on the next connection.
a2=$(cat "$O/a.pid")
d2=$(main_pid d.service)
h2=$(main_pid h.service)
c2=$(main_pid c.service)
sleep 0.2 # the state file is rewritten within 20 ms of the last change
kill -KILL "$DPID"
wait_for "! kill -0 $DPID 2>/dev/null" 100
# A client connects while no kin runs: it waits in the socket's backlog.
python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect("'"$R/h.sock"'"); print(s.recv(100).decode())' >"$T/early" 2>&1 &
EARLY=$!
sleep 0.2
ns_daemon_start "$T/kin.log" $ARGS
check successor_adopts_services "[ \"\$(main_pid a.service)\" = $a2 ] && [ \"\$(active a.service)\" = 'active running' ] && [ \"\$(main_pid d.service)\" = $d2 ] && [ \"\$(active d.service)\" = 'active running' ]"
grep -q 'adopt: [0-9]* units taken back' "$T/kin.log" && [ "$(cat "$O/a.pid")" = "$a2" ] && ok units_adopted ||
	bad units_adopted "$(grep 'adopt' "$T/kin.log" | tail -3)"
t2=$(tick)
check notify_socket_adopted "[ \"\$(main_pid c.service)\" = $c2 ] && kc service status c.service && t=\$(sed -n 's/.*Status: \"tick \\([0-9]*\\)\"/\\1/p' $T/out) && [ -n \"\$t\" ] && [ \$t -gt $t2 ]"
check socket_service_adopted "[ \"\$(main_pid h.service)\" = ${h2:-x} ] && [ \"\$(active h.service)\" = 'active running' ] && [ \"\$(active h.socket)\" = 'active running' ]"
[ "$(stat -c %i "$R/h.sock")" = "$sock_ino" ] && ok same_socket_after_adoption ||
	bad same_socket_after_adoption "inode $(stat -c %i "$R/h.sock") vs $sock_ino"
# Its service ended, kin listens on the socket again: the client waiting
# since no kin ran starts the service, which answers it.
kill -KILL "${h2:-0}"
wait "$EARLY"
got=$(cat "$T/early")
[ "$got" = fds=1 ] && [ "$(main_pid h.service)" != "${h2:-0}" ] && ok socket_activation_after_adoption ||
	bad socket_activation_after_adoption "$got"
# An adopted main process is watched: killed, its service restarts.
kill -KILL "$a2"
check adopted_restarted "[ \$(cat $O/a.pid) != $a2 ] && [ \"\$(active a.service)\" = 'active running' ]"
kc service stop d.service
check adopted_daemon_stops "! kill -0 $d2 2>/dev/null && [ \"\$(active d.service)\" = 'inactive dead' ]"

[ -z "$errs" ] && ok no_errors || bad no_errors "$(echo "$errs" | head -3)"

kill -TERM "$DPID"
check kin_exits "! kill -0 $DPID 2>/dev/null" 1000
[ -e "$O/o.stopped" ] && ok exec_stop_ran || bad exec_stop_ran "no o.stopped"
left=$(cat $(find "$CG/$TOP" -name cgroup.procs) 2>/dev/null)
[ -z "$left" ] && ok nothing_left || bad nothing_left "processes left: $left"
[ ! -e "$R/notify" ] && ok notify_socket_removed || bad notify_socket_removed "$(ls -l "$R")"
clean_log "$T/kin.log" && ok sanitizer_clean || bad sanitizer_clean "see kin.log"
ns_suite_end
