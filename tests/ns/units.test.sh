#!/usr/bin/env bash
# Units (units/): a daemon kin given --unit-dir boots that directory's
# target from unit files written here the way packages write theirs: a
# simple service and its order (After=), a oneshot with RemainAfterExit=,
# Type=notify (READY=1 over NOTIFY_SOCKET), Type=forking with PIDFile=,
# ExecStartPre/Post with Environment=, EnvironmentFile=- and $VAR
# expansion, a failing service that Restart= restarts until the start
# limit, Restart=always after a SIGKILL, KillMode=process keeping a child
# across a stop, a socket-activated service (LISTEN_FDS), a condition that
# skips a unit, a Requires= on a missing unit failing its unit and only
# it; each service in its own cell; at stop, ExecStop= runs and services
# stop in reverse order; nothing is left behind.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin units
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 for the notify and socket services"
TOP=kin-units-test-$$
BASE=$CG/$TOP/d
U=$T/units
R=$T/run
O=$T/o
cleanup() {
	[ -n "${KIN_TEST_KEEP:-}" ] && cp "$T/kin.log" "$KIN_TEST_KEEP" 2>/dev/null
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$U" "$R" "$O"

now() { date +%s%N; }
unit() { cat >"$U/$1"; }

unit test.target <<EOF
[Unit]
Description=the test's default target
Wants=a.service b.service c.service d.service e.service f.service g.service k.service
Wants=h.socket skip.service req.service s.service p.service z.service t.service w.service dlg.service
EOF
unit a.service <<EOF
[Unit]
Description=simple, restarted after a kill
[Service]
ExecStart=/bin/sh -c 'echo \$\$\$\$ >$O/a.pid; date +%%s%%N >$O/a.start;exec sleep 1000'
ExecStopPost=/bin/sh -c 'date +%%s%%N >$O/a.stopped'
Restart=always
RestartSec=200ms
EOF
unit b.service <<EOF
[Unit]
Description=oneshot after a
After=a.service
Requires=a.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'date +%%s%%N >$O/b.start'
ExecStop=/bin/sh -c 'date +%%s%%N >$O/b.stop'
EOF
unit c.service <<EOF
[Unit]
Description=notify
[Service]
Type=notify
ExecStart=/usr/bin/env python3 -c 'import os,socket,time; time.sleep(0.3); open("$O/c.before","w").write(str(time.time_ns())); s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect(os.environ["NOTIFY_SOCKET"]); s.send(b"STATUS=serving\\\\nREADY=1"); time.sleep(1000)'
EOF
unit d.service <<EOF
[Unit]
Description=forking
[Service]
Type=forking
PIDFile=$O/d.pid
ExecStart=/bin/sh -c 'sleep 1000 & echo \$! >$O/d.pid'
EOF
unit e.service <<EOF
[Unit]
Description=fails, restarted until the start limit
StartLimitIntervalSec=30s
StartLimitBurst=3
[Service]
ExecStart=/bin/sh -c 'echo run >>$O/e.runs; echo e-says-why >&2; exit 3'
Restart=on-failure
RestartSec=100ms
EOF
printf 'FROMFILE=file-value\n# a comment\nQUOTED="two words"\n' >"$T/f.env"
unit f.service <<EOF
[Unit]
Description=pre, post, environment
[Service]
Environment=ONE=1 "TWO=two words"
EnvironmentFile=$T/f.env
EnvironmentFile=-$T/missing.env
ExecStartPre=/bin/sh -c 'echo pre \$ONE >$O/f.pre'
ExecStart=/bin/sh -c 'echo "\$1|\$2|\$3" >$O/f.args;exec sleep 1000' sh \$ONE \${TWO} \$FROMFILE
ExecStartPost=/bin/sh -c 'echo post >$O/f.post'
EOF
unit g.service <<EOF
[Unit]
Description=KillMode=process keeps the child
[Service]
KillMode=process
ExecStart=/bin/sh -c 'sleep 1000 & echo \$! >$O/g.child;exec sleep 1000'
EOF
unit k.service <<EOF
[Unit]
Description=after f, stopped before it
After=f.service
[Service]
ExecStart=/bin/sh -c 'exec sleep 1000'
ExecStopPost=/bin/sh -c 'date +%%s%%N >$O/k.stopped'
EOF
unit h.socket <<EOF
[Socket]
ListenStream=$R/h.sock
SocketUser=nobody
SocketGroup=nogroup
SocketMode=0660
EOF
unit h.service <<EOF
[Service]
ExecStart=/usr/bin/env python3 -c 'import os,socket; assert int(os.environ["LISTEN_PID"]) == os.getpid(); s=socket.socket(fileno=3); c,_=s.accept(); c.send(("fds=" + os.environ["LISTEN_FDS"] + " names=" + os.environ.get("LISTEN_FDNAMES","")).encode()); c.close(); import time; time.sleep(1000)'
EOF
unit s.service <<EOF
[Unit]
Description=systemd's syscall groups and address families, as Debian units use them
[Service]
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM
RestrictAddressFamilies=AF_UNIX
ExecStart=/bin/bash -c 'touch $O/s.f; chown 1:1 $O/s.f 2>$O/s.chown; (exec 3<>/dev/tcp/127.0.0.1/9) 2>$O/s.af; echo \$\$\$\$ >$O/s.pid; exec sleep 1000'
EOF
unit p.service <<EOF
[Unit]
Description=ProtectProc=invisible: other users' processes are not in its /proc
[Service]
User=nobody
ProtectProc=invisible
ExecStart=/bin/sh -c 'if [ -e /proc/1 ]; then echo pid1-visible; else echo pid1-hidden; fi; [ -e /proc/self/status ] && echo self-visible; exec sleep 1000'
EOF
unit z.service <<EOF
[Unit]
Description=the '@' prefix: the program, then its own argv[0]
[Service]
ExecStart=@/bin/sh kin-argv0 -c 'echo "zero=\$\$0"; exec sleep 1000'
EOF
unit t.service <<EOF
[Unit]
Description=PrivateTmp=: one /tmp for all the run's commands, not the host's
[Service]
PrivateTmp=yes
ExecStartPre=/bin/sh -c 'echo shared-by-the-run >/tmp/kin-pt-marker'
ExecStart=/bin/sh -c 'echo "pt=\$\$(cat /tmp/kin-pt-marker)"; exec sleep 1000'
EOF
unit w.service <<EOF
[Unit]
Description=WatchdogSec=: pings for 1.5 s, then hangs; aborted and restarted
[Service]
Type=notify
WatchdogSec=1s
Restart=on-watchdog
RestartSec=100ms
ExecStart=/usr/bin/env python3 -c 'import os,socket,time; open("$O/w.runs","a").write(str(time.time_ns()) + " " + str(os.environ.get("WATCHDOG_USEC")) + chr(10)); s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.connect(os.environ["NOTIFY_SOCKET"]); s.send(b"READY=1"); [(time.sleep(0.3), s.send(b"WATCHDOG=1")) for i in range(5)]; time.sleep(1000)'
EOF
unit dlg.service <<EOF
[Unit]
Description=Delegate=: its cgroup is its own, below it what it makes
[Service]
Delegate=yes
User=nobody
ExecStart=/bin/sh -c 'cg=$CG\$\$(sed -n "s/^0:://p" /proc/self/cgroup); mkdir \$\$cg/sub && echo \$\$\$\$ >\$\$cg/sub/cgroup.procs && echo delegated-ok; exec sleep 1000'
EOF
unit skip.service <<EOF
[Unit]
ConditionPathExists=$T/not-there
[Service]
ExecStart=/bin/sh -c 'touch $O/skip.ran'
EOF
unit req.service <<EOF
[Unit]
Requires=missing-in-action.service
[Service]
ExecStart=/bin/sh -c 'touch $O/req.ran;exec sleep 1000'
EOF

S=$T/k.sock
mkdir -p "$BASE"
sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --log-level debug --grace 3s --socket '$S' --unit-dir '$U' --unit-run-dir '$R' --default-target test.target" \
	>"$T/kin.log" 2>&1 &
DPID=$!
cp /dev/null "$T/out"
check() { # NAME CONDITION [TRIES]
	if wait_for "$2" "${3:-500}"; then ok "$1"; else cp "$T/kin.log" "$T/out"; bad "$1" "not: $2"; fi
}
CELLS=$BASE/cells/system.slice

check simple_started "[ -s $O/a.pid ] && kill -0 \$(cat $O/a.pid)"
check own_cell "grep -qx \"\$(cat $O/a.pid)\" $CELLS/a.service/cgroup.procs"
check oneshot_after "[ -s $O/b.start ] && [ \$(cat $O/b.start) -gt \$(cat $O/a.start) ]"
check notify_ready "[ -s $O/c.before ] && grep -q 'c.service' $T/kin.log"
check forking_pid "[ -s $O/d.pid ] && kill -0 \$(cat $O/d.pid)"
check pre_post_env "[ -s $O/f.post ] && grep -qx 'pre 1' $O/f.pre && grep -qx '1|two words|file-value' $O/f.args"
check start_limit "[ \$(wc -l <$O/e.runs 2>/dev/null || echo 0) -eq 3 ] && grep -q 'e.service failed' $T/kin.log" 500
sleep 0.5
[ "$(wc -l <"$O/e.runs")" -eq 3 ] && ok start_limit_holds || bad start_limit_holds "$(wc -l <"$O/e.runs") runs"
check syscall_groups "[ -s $O/s.pid ] && kill -0 \$(cat $O/s.pid) && grep -q 'Operation not permitted' $O/s.chown && grep -q 'Address family not supported' $O/s.af"
check protect_proc "'$KIN' ctl --socket '$S' service logs p.service 2>&1 | tr '\\n' ' ' | grep -q 'pid1-hidden self-visible'"
check argv0_prefix "'$KIN' ctl --socket '$S' service logs z.service 2>&1 | grep -qx 'zero=kin-argv0'"
check private_tmp "'$KIN' ctl --socket '$S' service logs t.service 2>&1 | grep -qx 'pt=shared-by-the-run' && [ ! -e /tmp/kin-pt-marker ] && ls -d /tmp/kin-private-t.service-*/tmp /var/tmp/kin-private-t.service-*/tmp >/dev/null"
check watchdog_restart "[ \$(wc -l <$O/w.runs 2>/dev/null || echo 0) -ge 2 ] && grep -q 'w.service: watchdog timeout' $T/kin.log" 1000
w=$(head -2 "$O/w.runs" | awk 'NR==1{a=$1} NR==2{b=$1} END{print int((b-a)/1000000)}')
[ "$(head -1 "$O/w.runs" | cut -d' ' -f2)" = 1000000 ] && [ "$w" -ge 2000 ] && ok watchdog_pings_hold ||
	bad watchdog_pings_hold "$(cat "$O/w.runs"), $w ms between runs"
check delegate "'$KIN' ctl --socket '$S' service logs dlg.service 2>&1 | grep -qx delegated-ok && grep -q . $CELLS/dlg.service/sub/cgroup.procs"
check socket_owner "[ \"\$(stat -c %U:%G:%a $R/h.sock 2>/dev/null)\" = nobody:nogroup:660 ]"
check socket_activation "[ \"\$(python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"$R/h.sock\"); print(s.recv(100).decode())' 2>&1)\" = 'fds=1 names=h.socket' ]"
[ ! -e "$O/skip.ran" ] && grep -q 'skip.service skipped' "$T/kin.log" && ok condition_skips || bad condition_skips "$(grep skip "$T/kin.log")"
[ ! -e "$O/req.ran" ] && grep -q 'req.service.*missing-in-action.service' "$T/kin.log" && ok requires_missing || bad requires_missing "$(grep req.service "$T/kin.log")"
kill -0 "$(cat "$O/a.pid")" && ok others_unaffected || bad others_unaffected "a died"

old=$(cat "$O/a.pid")
kill -KILL "$old"
check restart_after_kill "[ -s $O/a.pid ] && [ \$(cat $O/a.pid) != $old ] && kill -0 \$(cat $O/a.pid)"

gchild=$(cat "$O/g.child")
kill -0 "$DPID" && ok kin_alive || bad kin_alive "kin died"

kill -TERM "$DPID"
check kin_exits "! kill -0 $DPID 2>/dev/null" 1000
check exec_stop_ran "[ -s $O/b.stop ]" 5
check reverse_order "[ -s $O/k.stopped ] && [ -s $O/a.stopped ] && [ \$(cat $O/b.stop) -lt \$(cat $O/a.stopped) ]" 5
# KillMode=process: the child outlived the service's stop (then kin's own
# stop, as a daemon, ends every descendant).
grep -q "g.service" "$T/kin.log" && ok killmode_process_logged || bad killmode_process_logged "no g.service"
left=$(cat $(find "$CG/$TOP" -name cgroup.procs) 2>/dev/null)
[ -z "$left" ] && ok nothing_left || bad nothing_left "processes left in kin's cgroups: $left"
[ ! -e "$CELLS/dlg.service" ] && ok delegated_cgroups_removed || bad delegated_cgroups_removed "$(find "$CELLS/dlg.service" -type d)"
pt=$(ls -d /tmp/kin-private-t.service-* /var/tmp/kin-private-t.service-* 2>/dev/null)
[ -z "$pt" ] && ok private_tmp_removed || bad private_tmp_removed "left: $pt"
clean_log "$T/kin.log" && ok sanitizer_clean || bad sanitizer_clean "see kin.log"
ns_suite_end
