#!/usr/bin/env bash
# kin.v1.Units from the outside: a daemon kin given --unit-dir runs a
# directory's units; `kin ctl service` lists, shows, starts, stops,
# restarts, enables, disables, cats and reads the logs of them (text and
# -o json), `kin ctl daemon-reload` sees a unit added; kin called as
# systemctl answers is-active, is-enabled and show as systemctl does (exit
# codes included); bad input is refused by name (an unknown unit
# NOT_FOUND, a 10 kB name INVALID_ARGUMENT) and kin serves on.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin units-ctl
ns_need_cgroup2
TOP=kin-units-ctl-$$
BASE=$CG/$TOP/d
U=$T/units
R=$T/run
O=$T/o
M=kin-units-ctl-marker-$$ # in every service's command line, for the cleanup
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	pkill -KILL -f "$M" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$U" "$R" "$O" "$T/bin"
ln -s "$KIN" "$T/bin/systemctl"

unit() { cat >"$U/$1"; }
unit test.target <<EOF
[Unit]
Description=the test's default target
Wants=web.service
EOF
unit web.service <<EOF
[Unit]
Description=a web server that says hello
[Service]
ExecStart=/bin/sh -c 'echo hello from web; echo \$\$\$\$ >$O/web.pid; exec sleep 1000'
ExecReload=/bin/sh -c 'echo reloaded >>$O/web.reloads'
[Install]
WantedBy=test.target
EOF
unit idle.service <<EOF
[Unit]
Description=started by hand only
[Service]
ExecStart=/bin/sh -c 'echo idle up; exec sleep 1000'
[Install]
WantedBy=test.target
EOF

S=$T/k.sock
mkdir -p "$BASE"
sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --grace 3s --socket '$S' --unit-dir '$U' --unit-run-dir '$R' --default-target test.target" \
	>"$T/kin.log" 2>&1 &
DPID=$!

# kc ARGS...: kin ctl on the daemon; output in $T/out, exit code in $rc.
# sc ARGS...: kin as systemctl on the daemon's socket.
sc() { KIN_SOCKET=$S "$T/bin/systemctl" "$@" >"$T/out" 2>&1; rc=$?; }
out_has() { grep -q -- "$1" "$T/out"; }

wait_for "[ -S $S ] && [ -s $O/web.pid ]" 500 && ok booted || {
	cp "$T/kin.log" "$T/out"
	bad booted "no socket or web never started"
	ns_suite_end
	exit
}

# list and status
kc service list
[ $rc -eq 0 ] && out_has 'web.service' && out_has 'active' && ! out_has 'idle.service' &&
	ok list || bad list "rc $rc"
kc service list --all
[ $rc -eq 0 ] && out_has 'idle.service' && ok list_all || bad list_all "rc $rc"
kc service status web
[ $rc -eq 0 ] && out_has '● web.service - a web server that says hello' &&
	out_has "Loaded: loaded ($U/web.service" && out_has 'Active: active (running) since' &&
	out_has "Main PID: $(cat "$O/web.pid")" && out_has 'CGroup: /system.slice/web.service' &&
	out_has '^hello from web$' && ok status_text || bad status_text "rc $rc"
kc -o json service status web
[ $rc -eq 0 ] && out_has '"name":"web.service"' && out_has '"active_state":"active"' &&
	out_has '"sub_state":"running"' && out_has '"log":\[' && ok status_json ||
	bad status_json "rc $rc"
kc service status ssh # ssh → ssh.service, not in the directory
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && out_has 'ssh.service' && ok status_unknown ||
	bad status_unknown "rc $rc"

# start, stop, restart, reload
kc service start idle
[ $rc -eq 0 ] && out_has 'idle.service: active (running)' && ok start || bad start "rc $rc"
kc -o json service stop idle.service
[ $rc -eq 0 ] && out_has '"active_state":"inactive"' && ok stop_json || bad stop_json "rc $rc"
old=$(cat "$O/web.pid")
kc service restart web
wait_for "[ \"\$(cat $O/web.pid)\" != $old ]" 250 && [ $rc -eq 0 ] && ! kill -0 "$old" 2>/dev/null &&
	ok restart || bad restart "rc $rc, pid $old → $(cat "$O/web.pid")"
kc service reload web
[ $rc -eq 0 ] && wait_for "grep -q reloaded $O/web.reloads" 250 && ok reload || bad reload "rc $rc"
kc service reload idle # inactive, and no ExecReload=
[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION' && out_has 'idle.service' &&
	ok reload_refused || bad reload_refused "rc $rc"

# enable, disable, cat, logs
kc service enable idle
[ $rc -eq 0 ] && out_has 'Created symlink' && out_has 'test.target.wants/idle.service' &&
	ok enable || bad enable "rc $rc"
sc is-enabled idle.service
[ $rc -eq 0 ] && out_has '^enabled$' && ok systemctl_is_enabled || bad systemctl_is_enabled "rc $rc"
kc -o json service disable idle
[ $rc -eq 0 ] && out_has '"type":"removed"' && ok disable_json || bad disable_json "rc $rc"
sc is-enabled idle.service
[ $rc -eq 1 ] && out_has '^disabled$' && ok systemctl_is_disabled ||
	bad systemctl_is_disabled "rc $rc"
kc service cat web
[ $rc -eq 0 ] && out_has "^# $U/web.service" && out_has '^ExecReload=' && ok cat || bad cat "rc $rc"
kc service logs web
[ $rc -eq 0 ] && out_has '^hello from web$' && ok logs || bad logs "rc $rc"
"$KIN" ctl --socket "$S" service logs -f web >"$T/follow" 2>&1 &
FPID=$!
wait_for "grep -q 'hello from web' $T/follow" 250 && kill -0 $FPID && ok logs_follow ||
	bad logs_follow "$(cat "$T/follow")"
kill $FPID 2>/dev/null
wait $FPID 2>/dev/null

# daemon-reload sees a new unit
unit late.service <<EOF
[Service]
ExecStart=/bin/sh -c 'exec sleep 1000'
EOF
kc daemon-reload
kc service start late
[ $rc -eq 0 ] && ok daemon_reload || bad daemon_reload "rc $rc"
kc service stop late

# systemctl: is-active's codes, show, status's codes
sc is-active web.service
[ $rc -eq 0 ] && out_has '^active$' && ok systemctl_is_active || bad systemctl_is_active "rc $rc"
sc is-active idle.service
[ $rc -eq 3 ] && out_has '^inactive$' && ok systemctl_is_inactive ||
	bad systemctl_is_inactive "rc $rc"
sc --quiet is-active nosuch.service
[ $rc -eq 3 ] && [ ! -s "$T/out" ] && ok systemctl_is_active_unknown ||
	bad systemctl_is_active_unknown "rc $rc"
sc show -p MainPID --value web.service
[ $rc -eq 0 ] && [ "$(cat "$T/out")" = "$(cat "$O/web.pid")" ] && ok systemctl_show_value ||
	bad systemctl_show_value "rc $rc"
sc show -p ActiveState,SubState,NoSuchThing web
[ $rc -eq 0 ] && [ "$(cat "$T/out")" = "$(printf 'ActiveState=active\nSubState=running')" ] &&
	ok systemctl_show_props || bad systemctl_show_props "rc $rc"
sc status web
[ $rc -eq 0 ] && ok systemctl_status_running || bad systemctl_status_running "rc $rc"
sc status idle
[ $rc -eq 3 ] && ok systemctl_status_dead || bad systemctl_status_dead "rc $rc"
sc frobnicate web
[ $rc -eq 1 ] && out_has 'verb frobnicate is not supported by kin' && ok systemctl_bad_verb ||
	bad systemctl_bad_verb "rc $rc"

# bad input, and kin serves on
big=$(head -c 10240 /dev/zero | tr '\0' a).service
kc service status "$big"
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && ok name_10k || bad name_10k "rc $rc"
kc service start 'a/b.service'
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && ok name_slash || bad name_slash "rc $rc"
kc service start nosuch.service
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && out_has 'nosuch.service' && ok start_unknown ||
	bad start_unknown "rc $rc"
kc health
[ $rc -eq 0 ] && out_has SERVING && ok serving_after || bad serving_after "rc $rc"

kill -TERM "$DPID"
wait_for "! kill -0 $DPID" 500 && ok stopped || bad stopped "kin still running"
wait "$DPID" 2>/dev/null
DPID=
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
