#!/usr/bin/env bash
# RPC against the real kin: as a daemon and as PID 1 of new namespaces, a
# socket in a temp dir. kin ctl and its exit codes, permissions, Go ttrpc
# interop, 1000 connections x 100 calls, hostile clients (no fd leak; with
# SANITIZE=1 no ASan/LSan report), slow clients cut by the frame time
# limit, stale and busy sockets, vsock.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin rpc
LOAD=$PWD/$BUILD/rpc-load
PEER=$PWD/$BUILD/ttrpc-peer
chmod 755 "$T" # kin's own socket dir stays 0700; the uid tests need to reach it

# daemon_start NAME ARGS...: kin init as a daemon with output in $T/NAME.log;
# waits for its socket; sets DPID.
daemon_start() {
	local name=$1; shift
	"$KIN" init --log-level debug "$@" >"$T/$name.log" 2>&1 &
	DPID=$!
	wait_for "grep -q 'ready:' '$T/$name.log'" 250
}
daemon_stop() {
	kill -TERM "$1" 2>/dev/null
	wait "$1"
}
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# No sanitizer report in a log (SANITIZE=1 builds report leaks at exit).

S=$T/d/kin.sock
daemon_start d --socket "$S"

t_ctl_health() {
	local out rc
	out=$("$KIN" ctl --socket "$S" health 2>&1); rc=$?
	[ $rc -eq 0 ] && [ "$out" = SERVING ] && ok ctl_health || bad ctl_health "exit $rc, '$out'"
}

t_ctl_version_json() {
	local out rc
	out=$("$KIN" ctl --connect "unix:$S" -o json version 2>&1); rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q '"role":"daemon"' &&
		echo "$out" | grep -q "\"kernel_release\":\"$(uname -r)\"" &&
		echo "$out" | grep -q "\"pid\":$DPID" && ok ctl_version_json ||
		bad ctl_version_json "exit $rc, '$out'"
}

t_socket_modes() {
	local sm dm
	sm=$(stat -c %a "$S"); dm=$(stat -c %a "$(dirname "$S")")
	[ "$sm" = 600 ] && [ "$dm" = 700 ] && ok socket_modes || bad socket_modes "socket $sm dir $dm, want 600 and 700"
}

t_ctl_exit_codes() {
	local rc1 rc2 rc3 rc4 rc5
	"$KIN" ctl --socket "$T/nothing.sock" health >"$T/out" 2>&1; rc1=$?
	"$KIN" ctl --bogus health >>"$T/out" 2>&1; rc2=$?
	"$KIN" ctl --socket "$S" frobnicate >>"$T/out" 2>&1; rc3=$?
	"$KIN" ctl --connect tcp:1.2.3.4:5 health >>"$T/out" 2>&1; rc4=$?
	"$KIN" ctl --socket "$S" -o yaml health >>"$T/out" 2>&1; rc5=$?
	[ "$rc1 $rc2 $rc3 $rc4 $rc5" = "3 2 2 2 2" ] && grep -q "cannot reach kin at $T/nothing.sock" "$T/out" &&
		ok ctl_exit_codes || bad ctl_exit_codes "exits $rc1 $rc2 $rc3 $rc4 $rc5, want 3 2 2 2 2"
}

t_not_ttrpc_is_unreachable() {
	# A unix socket that answers garbage: exit 3, not a hang or a crash.
	"$PEER" server "$T/go.sock" >/dev/null 2>&1 &
	local g=$!
	wait_for "[ -S '$T/go.sock' ]" 100
	local out rc
	out=$("$KIN" ctl --socket "$T/go.sock" version 2>&1); rc=$?
	kill $g; wait $g 2>/dev/null
	# Go's server is a real ttrpc server: kin ctl talks to it too.
	[ $rc -eq 0 ] && echo "$out" | grep -q "role:     peer" && ok ctl_talks_to_go_server ||
		bad ctl_talks_to_go_server "exit $rc, '$out'"
}

t_go_interop() {
	"$PEER" client "$S" >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 0 ] && grep -q "200 concurrent calls: ok" "$T/out" && ok go_ttrpc_client ||
		bad go_ttrpc_client "exit $rc"
}

t_load() {
	local before after
	before=$(fds $DPID)
	"$LOAD" load "$S" 1000 100 >"$T/out" 2>&1; local rc=$?
	wait_for "[ \$(fds $DPID) -eq $before ]" 100
	after=$(fds $DPID)
	local line; line=$(grep '^load:' "$T/out")
	[ $rc -eq 0 ] && [ "$after" -eq "$before" ] && ok "load_1000x100 (${line#load: })" ||
		bad load_1000x100 "exit $rc, fds $before -> $after: $line"
}

t_hostile() {
	local before after
	before=$(fds $DPID)
	"$LOAD" bad "$S" >"$T/out" 2>&1; local rc=$?
	wait_for "[ \$(fds $DPID) -eq $before ]" 150
	after=$(fds $DPID)
	[ $rc -eq 0 ] && [ "$after" -eq "$before" ] && "$KIN" ctl --socket "$S" health >/dev/null &&
		ok hostile_clients || bad hostile_clients "exit $rc, fds $before -> $after"
}

t_busy_socket() {
	# A second kin on a live socket refuses it (explicit --socket: fatal for a daemon).
	timeout 10 "$KIN" init --socket "$S" >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 1 ] && grep -q "another kin serves there" "$T/out" &&
		"$KIN" ctl --socket "$S" health >/dev/null && ok busy_socket_refused ||
		bad busy_socket_refused "exit $rc"
}

t_ctl_health
t_ctl_version_json
t_socket_modes
t_ctl_exit_codes
t_not_ttrpc_is_unreachable
t_go_interop
t_load
t_hostile
t_busy_socket
daemon_stop $DPID
[ ! -e "$S" ] && clean_log "$T/d.log" && ok socket_removed_no_leak_report ||
	bad socket_removed_no_leak_report "socket left behind or a sanitizer report: $(grep -m3 -E 'Sanitizer|runtime error' "$T/d.log")"

t_stale_socket() {
	daemon_start s --socket "$T/s/kin.sock"
	kill -KILL $DPID; wait $DPID 2>/dev/null
	[ -S "$T/s/kin.sock" ] || { bad stale_socket "no socket left by kill -9"; return; }
	daemon_start s2 --socket "$T/s/kin.sock"
	"$KIN" ctl --socket "$T/s/kin.sock" health >/dev/null; local rc=$?
	daemon_stop $DPID
	[ $rc -eq 0 ] && ok stale_socket_replaced || bad stale_socket_replaced "exit $rc"
}

t_permissions() {
	if ! command -v setpriv >/dev/null; then
		echo "SKIP ns/rpc/permissions: no setpriv to run kin ctl as another uid"
		return
	fi
	daemon_start p --socket "$T/p/kin.sock" --allow-uid 4242
	local sm out1 rc1 out2 rc2
	sm=$(stat -c %a "$T/p/kin.sock")
	out1=$(setpriv --reuid 4242 --regid 4242 --clear-groups "$KIN" ctl --socket "$T/p/kin.sock" health 2>&1); rc1=$?
	out2=$(setpriv --reuid 4343 --regid 4343 --clear-groups "$KIN" ctl --socket "$T/p/kin.sock" health 2>&1); rc2=$?
	daemon_stop $DPID
	[ "$sm" = 666 ] && [ $rc1 -eq 0 ] && [ "$out1" = SERVING ] && [ $rc2 -eq 1 ] &&
		echo "$out2" | grep -q "PERMISSION_DENIED: uid:4343 may not call kin.v1.Health/Check: no rule names uid:4343" &&
		ok permissions_peercred || bad permissions_peercred "mode $sm; allowed: $rc1 '$out1'; other: $rc2 '$out2'"
}

# A non-root client's connection goes along a re-exec: the new kin asks
# the socket who it is again and applies its own rules — the allowed uid
# still answered on the same connection, the other still refused.
t_permissions_across_reexec() {
	command -v setpriv >/dev/null && [ -x /usr/bin/python3 ] || return
	daemon_start pr --socket "$T/pr/kin.sock" --allow-uid 4242
	cp tests/ns/health_conn.py "$T/" # where the other uids can read it
	local out1 out2 c1 c2 rrc
	for u in 4242 4343; do
		setpriv --reuid $u --regid $u --clear-groups /usr/bin/python3 "$T/health_conn.py" \
			"$T/pr/kin.sock" "$T/pr-go" twice >"$T/pr-out$u" 2>&1 &
		[ $u = 4242 ] && c1=$! || c2=$!
	done
	wait_for "[ -s '$T/pr-out4242' ] && [ -s '$T/pr-out4343' ]" 250
	"$KIN" ctl --socket "$T/pr/kin.sock" reexec >/dev/null 2>&1
	rrc=$?
	touch "$T/pr-go"
	wait $c1 $c2
	out1=$(tr '\n' ' ' <"$T/pr-out4242")
	out2=$(tr '\n' ' ' <"$T/pr-out4343")
	daemon_stop $DPID
	[ $rrc -eq 0 ] && [ "$out1" = "ok ok " ] && [ "$out2" = "denied denied " ] &&
		ok permissions_across_reexec ||
		bad permissions_across_reexec "reexec rc $rrc; uid 4242: $out1; uid 4343: $out2"
}

t_stopping() {
	# During the grace period Check says STOPPING.
	daemon_start st --socket "$T/st/kin.sock" --grace 3s -- \
		sh -c "trap '' TERM; touch '$T/st.trap'; sleep 30 & wait; sleep 30"
	wait_for "[ -e '$T/st.trap' ]" 250 # the workload ignores SIGTERM from now on
	kill -TERM $DPID
	wait_for "grep -q 'stopping' '$T/st.log'" 100
	local out; out=$("$KIN" ctl --socket "$T/st/kin.sock" health 2>&1)
	wait $DPID
	[ "$out" = STOPPING ] && ok health_stopping || bad health_stopping "got '$out'"
}

t_ns_pid1() {
	# kin as PID 1 of new namespaces (zone role), socket in the temp dir.
	ns_start "$T/out" "$KIN" init --zone z1 --socket "$T/z/kin.sock"
	wait_for "[ -S '$T/z/kin.sock' ]" 250
	local out; out=$("$KIN" ctl --socket "$T/z/kin.sock" -o json version 2>&1)
	local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$NS_PID1/status")
	kill -TERM "$NS_PID1"; wait $NS_UNSHARE; local rc=$?
	echo "$out" | grep -q '"role":"zone","zone":"z1"' && echo "$out" | grep -qE '"pid":1[,}]' && [ $rc -eq 0 ] &&
		ok "ns_pid1_zone (idle RSS ${rss} kB)" || bad ns_pid1_zone "exit $rc, '$out'"
}

t_container_default_off() {
	# Container init is tini: no socket unless --socket is given.
	unshare --pid --mount --fork --mount-proc "$KIN" init --log-level debug -- true >"$T/out" 2>&1
	local rc=$?
	unshare --pid --mount --fork --mount-proc "$KIN" init --socket "$T/c/kin.sock" -- \
		"$KIN" ctl --socket "$T/c/kin.sock" version >"$T/out2" 2>&1
	local rc2=$?
	[ $rc -eq 0 ] && ! grep -q "rpc:" "$T/out" && [ $rc2 -eq 0 ] && grep -q "role:     container" "$T/out2" &&
		ok container_socket_opt_in || bad container_socket_opt_in "exits $rc $rc2"
}

t_vsock() {
	local port=$((20000 + RANDOM % 20000))
	daemon_start v --socket none --vsock $port
	if grep -q "no vsock in this kernel" "$T/v.log"; then
		echo "SKIP ns/rpc/vsock: no AF_VSOCK in this kernel; the VM tests cover vsock"
		daemon_stop $DPID
		return
	fi
	grep -q "listening on vsock port $port" "$T/v.log" || { bad vsock "not listening: $(cat "$T/v.log")"; daemon_stop $DPID; return; }
	local out rc
	out=$("$KIN" ctl --connect "vsock:1:$port" --timeout 2s health 2>&1); rc=$?
	daemon_stop $DPID
	if [ $rc -eq 0 ] && [ "$out" = SERVING ]; then
		ok vsock_loopback
	elif [ $rc -eq 3 ]; then
		echo "SKIP ns/rpc/vsock_loopback: kin listens on vsock port $port, but this kernel has no vsock loopback (vsock_loopback not available: $out); the VM tests call it from the host"
	else
		bad vsock_loopback "exit $rc, '$out'"
	fi
}

t_slow_client() {
	# kin.rpc.frame-timeout=: a frame left half sent is cut after the
	# limit, one warning naming the peer each; an idle connection and a
	# good client are untouched; no fd left behind.
	echo "kin.rpc.frame-timeout=1s" >"$T/sl.cmdline"
	daemon_start sl --socket "$T/sl/kin.sock" --cmdline "$T/sl.cmdline"
	local before after
	before=$(fds $DPID)
	"$LOAD" slow "$T/sl/kin.sock" 1000 >"$T/out" 2>&1; local rc=$?
	wait_for "[ \$(fds $DPID) -eq $before ]" 100
	after=$(fds $DPID)
	local cut; cut=$(grep -c "rpc: closing the connection of pid [0-9]* uid 0: a frame stayed incomplete for 1000 ms" "$T/sl.log")
	daemon_stop $DPID
	[ $rc -eq 0 ] && [ "$after" -eq "$before" ] && [ "$cut" -eq 2 ] && clean_log "$T/sl.log" &&
		ok "slow_client_cut ($(sed -n 's/^slow: //p' "$T/out" | cut -d';' -f1))" ||
		bad slow_client_cut "exit $rc, fds $before -> $after, $cut warnings (want 2)"
}

t_slow_client
t_stale_socket
t_permissions
t_permissions_across_reexec
t_stopping
t_ns_pid1
t_container_default_off
t_vsock
ns_suite_end
