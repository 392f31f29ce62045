#!/usr/bin/env bash
# Remote management over TLS against the real kin: a daemon kin serving
# only a unix socket for root and --tls-listen on 127.0.0.1 and [::1], with
# a policy; certificates made here with openssl (tests/tls/certs.sh).
# kin ctl over TLS (health, --target through a zone, a stream, a terminal
# session with exec start -it; attach needs operate); Go's ttrpc
# over Go's crypto/tls (interop); the authorization matrix (each role x a
# call of each class x in and out of its targets), each denial naming who,
# what and why; audit lines for changes and denials, denials rate-limited
# with a count; refused at the handshake with kin unaffected: no client
# certificate, another CA, expired, wrong key usage, revoked, TLS 1.2,
# plaintext ttrpc; a handshake that never finishes cut at the deadline; the
# gateway SIGKILLed: restarted, PID 1 and the unix socket unaffected, a new
# TLS client served; policy reload (good, bad refused with the line named,
# the old kept) by SIGHUP and RPC; certificate rotation with a connection
# kept open across it; a re-exec over TLS carrying the gateway; kin ctl
# contexts; bad flags refused at start.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin tls
command -v openssl >/dev/null || ns_skip "no openssl"
ns_need_cgroup2
PEER=$PWD/$BUILD/ttrpc-peer
TOP=kin-tls-test-$$
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

PKI=$T/pki
tests/tls/certs.sh "$PKI" >"$T/out" 2>&1 || { bad certs "certs.sh failed"; ns_suite_end; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
S=$T/k.sock
cat >"$T/policy" <<EOF
# who may do what
cn:admin     admin *
cn:operator  operate . pod1/*
cn:reader    read *
uri:spiffe://kin.test/ops read pod1
EOF
tlsflags() { echo --tls-cert "$PKI/server.pem" --tls-key "$PKI/server-key.pem" --tls-ca "$PKI/ca.pem" --tls-crl "$PKI/crl.pem"; }
daemon_start() {
	mkdir -p "$BASE"
	sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --log-level debug --grace 3s --socket '$S' --zone-dir '$T/zones' $*" \
		>"$T/kin.log" 2>&1 &
	DPID=$!
	wait_for "grep -q 'ready:' '$T/kin.log'" 250
}
# as NAME ARGS...: kin ctl over TLS with NAME's certificate
as() {
	local who=$1; shift
	"$KIN" ctl --connect "tls:127.0.0.1:$PORT" --cert "$PKI/$who.pem" --key "$PKI/$who-key.pem" \
		--ca "$PKI/ca.pem" "$@"
}
gateway_pid() { pgrep -P "$DPID" -f "kin gateway" | head -1; }

# Bad flags: refused before anything starts, naming the cause.
"$KIN" init --socket "$T/x.sock" --tls-listen 127.0.0.1:$PORT --tls-cert "$PKI/nope.pem" \
	--tls-key "$PKI/server-key.pem" --tls-ca "$PKI/ca.pem" >"$T/out" 2>&1 &
X=$!
wait_for "! kill -0 $X 2>/dev/null" 250
wait $X; rc=$?
[ $rc -ne 0 ] && grep -q "nope.pem" "$T/out" && ok refuse_missing_cert || bad refuse_missing_cert "exit $rc"
"$KIN" init --socket "$T/x.sock" --tls-listen 127.0.0.1:99999 >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "tls-listen" "$T/out" && ok refuse_bad_address || bad refuse_bad_address "exit $rc"
printf 'cn:x admin *\ncn:y superuser\n' >"$T/badpolicy"
"$KIN" init --socket "$T/x.sock" --policy "$T/badpolicy" >"$T/out" 2>&1 &
X=$!
wait_for "! kill -0 $X 2>/dev/null" 250
wait $X; rc=$?
[ $rc -ne 0 ] && grep -q "badpolicy: line 2" "$T/out" && ok refuse_bad_policy || bad refuse_bad_policy "exit $rc"

daemon_start --policy "$T/policy" --tls-listen "127.0.0.1:$PORT" $(tlsflags)
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; tail -20 "$T/kin.log"; exit 1; }
grep -q "listening on tls:127.0.0.1:$PORT" "$T/kin.log" && [ -n "$(gateway_pid)" ] && ok gateway_running ||
	bad gateway_running "no gateway"
"$KIN" ctl --socket "$S" zone create pod1 >"$T/out" 2>&1 && "$KIN" ctl --socket "$S" zone create pod2 >>"$T/out" 2>&1 ||
	bad zones "zone create failed"

# kin ctl over TLS, and through it to a zone.
out=$(as admin health 2>&1)
[ "$out" = SERVING ] && ok ctl_tls_health || { echo "$out" >"$T/out"; bad ctl_tls_health "'$out'"; }
as admin --target pod1 -o json version >"$T/out" 2>&1 && grep -q '"role":"zone"' "$T/out" &&
	ok ctl_tls_target || bad ctl_tls_target "no zone answer"
as admin cell create tlscell >"$T/out" 2>&1 &&
	as admin exec start tlscell hello -- /bin/echo hi-over-tls >>"$T/out" 2>&1 &&
	as admin exec wait tlscell hello >>"$T/out" 2>&1 &&
	as admin exec logs tlscell hello >"$T/logs" 2>&1 && grep -q hi-over-tls "$T/logs" && ok ctl_tls_stream ||
	bad ctl_tls_stream "no logs over TLS"

# A terminal over TLS: kin ctl exec start -it as the operator (operate
# here), typing and exit; attaching is operate: the reader is refused.
as admin cell create ttycell >"$T/out" 2>&1
ns_tty_drive run '# ' 'echo over-tls-$((5*5))' 'over-tls-25' -- "$KIN" ctl --connect "tls:127.0.0.1:$PORT" \
	--cert "$PKI/operator.pem" --key "$PKI/operator-key.pem" --ca "$PKI/ca.pem" exec start -it ttycell sh -- sh -i
as reader exec attach ttycell sh </dev/null >"$T/out" 2>&1
grep -q 'PERMISSION_DENIED: cn:reader may not call kin.v1.Exec/Attach: it needs operate' "$T/out" &&
	ok attach_needs_operate || bad attach_needs_operate "$(cat "$T/out")"

# Go's ttrpc over Go's crypto/tls.
"$PEER" client-tls "127.0.0.1:$PORT" "$PKI/admin.pem" "$PKI/admin-key.pem" "$PKI/ca.pem" localhost >"$T/out" 2>&1 &&
	grep -q "200 concurrent calls: ok" "$T/out" && ok go_tls_interop || bad go_tls_interop "Go client failed"

# The authorization matrix: role x class x target.
call() { # call WHO TARGET SERVICE METHOD -> prints OK or CODE: message
	KIN_TARGET=$2 "$PEER" call-tls "127.0.0.1:$PORT" "$PKI/$1.pem" "$PKI/$1-key.pem" "$PKI/ca.pem" "$3" "$4" localhost 2>&1
}
expect() { # expect NAME WANT WHO TARGET SERVICE METHOD
	local name=$1 want=$2; shift 2
	local got
	got=$(call "$@")
	case "$want" in
	allow) [[ "$got" != PERMISSION_DENIED* ]] && ok "authz/$name" || { echo "$got" >"$T/out"; bad "authz/$name" "denied: $got"; } ;;
	deny) [[ "$got" == PERMISSION_DENIED* ]] && ok "authz/$name" || { echo "$got" >"$T/out"; bad "authz/$name" "not denied: $got"; } ;;
	esac
}
expect reader_read_here allow reader "" kin.v1.Cells List
expect reader_read_pod allow reader pod1 kin.v1.Cells List
expect reader_operate_denied deny reader "" kin.v1.Cells Freeze
expect reader_admin_denied deny reader "" kin.v1.System Poweroff
expect operator_read_here allow operator "" kin.v1.Health Check
expect operator_operate_here allow operator "" kin.v1.Exec Signal
expect operator_operate_pod1 allow operator pod1 kin.v1.Exec Signal
expect operator_operate_pod2_denied deny operator pod2 kin.v1.Exec Signal
expect operator_admin_denied deny operator "" kin.v1.Zones Create
expect admin_admin_pod2 allow admin pod2 kin.v1.Cells Create
expect uri_read_pod1 allow ops pod1 kin.v1.Health Check
expect uri_read_here_denied deny ops "" kin.v1.Health Check
got=$(call reader "" kin.v1.System Poweroff)
[[ "$got" == "PERMISSION_DENIED: cn:reader may not call kin.v1.System/Poweroff: it needs admin"* ]] &&
	ok authz/denial_says_why || { echo "$got" >"$T/out"; bad authz/denial_says_why "'$got'"; }
got=$(call operator pod2 kin.v1.Exec Signal)
[[ "$got" == *"cn:operator"*"kin.v1.Exec/Signal"*"pod2"* ]] && ok authz/target_denial_says_why ||
	{ echo "$got" >"$T/out"; bad authz/target_denial_says_why "'$got'"; }
# A unix peer with no rule: denied, naming the uid.
if command -v setpriv >/dev/null; then
	chmod 755 "$T"
	out=$(setpriv --reuid 4343 --regid 4343 --clear-groups "$KIN" ctl --socket "$S" health 2>&1)
	[[ "$out" == *"PERMISSION_DENIED: uid:4343 may not call kin.v1.Health/Check"* ]] && ok authz/unix_no_rule ||
		{ echo "$out" >"$T/out"; bad authz/unix_no_rule "'$out'"; }
fi

# Audit: the change and the denials above, one line each.
grep -q 'audit: who=cn:admin via=tls call=kin.v1.Cells/Create target=. object=tlscell result=OK' "$T/kin.log" &&
	ok audit_change || { grep audit "$T/kin.log" | tail -5 >"$T/out"; bad audit_change "no audit line"; }
grep -q 'audit: who=cn:reader via=tls call=kin.v1.System/Poweroff target=. .*result=PERMISSION_DENIED' "$T/kin.log" &&
	ok audit_denial || { grep audit "$T/kin.log" | tail -5 >"$T/out"; bad audit_denial "no denial line"; }
grep -q 'audit: who=cn:admin via=tls call=kin.v1.Cells/Create target=pod2' "$T/kin.log" &&
	ok audit_routed || bad audit_routed "no audit line for the routed create"
# A flood of denials: rate-limited, counted, never silent.
python3 - "$PEER" "$PORT" "$PKI" <<'EOF' >/dev/null 2>&1
import subprocess, sys
peer, port, pki = sys.argv[1:]
for _ in range(60):
    subprocess.run([peer, "call-tls", "127.0.0.1:" + port, pki + "/reader.pem", pki + "/reader-key.pem",
                    pki + "/ca.pem", "kin.v1.System", "Poweroff", "localhost"], capture_output=True)
EOF
sleep 1.2
"$KIN" ctl --socket "$S" health >/dev/null # a wakeup: the count is reported
wait_for "grep -qE 'audit: [0-9]+ denials not logged' '$T/kin.log'" 100 && ok audit_rate_limited ||
	bad audit_rate_limited "no count of dropped denials"

# 1000 TLS connections x 100 calls (Go's client: 100000 calls over 1000
# connections, one in flight on each), every call answered.
"$PEER" bench-tls "127.0.0.1:$PORT" "$PKI/admin.pem" "$PKI/admin-key.pem" "$PKI/ca.pem" 1000 100000 localhost \
	>"$T/out" 2>&1 && serving && ok load_1000_conns_x_100 || bad load_1000_conns_x_100 "the load failed"

# Refused at the handshake, each with kin unaffected.
for who in otherca expired wrongeku revoked; do
	out=$("$PEER" call-tls "127.0.0.1:$PORT" "$PKI/$who.pem" "$PKI/$who-key.pem" "$PKI/ca.pem" kin.v1.Health Check localhost 2>&1); rc=$?
	[ $rc -eq 3 ] && serving && ok "refused/$who" || { echo "$out" >"$T/out"; bad "refused/$who" "exit $rc: $out"; }
done
out=$(printf 'Q\n' | timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$PKI/ca.pem" -ign_eof 2>&1 </dev/null)
as admin health >/dev/null 2>&1 && ! echo "$out" | grep -q "SERVING" && ok refused/no_client_cert ||
	bad refused/no_client_cert "kin affected"
timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -tls1_2 -cert "$PKI/admin.pem" -key "$PKI/admin-key.pem" \
	-CAfile "$PKI/ca.pem" </dev/null >"$T/out" 2>&1
grep -qiE "alert|no protocols|wrong version|handshake failure" "$T/out" && as admin health >/dev/null 2>&1 &&
	ok refused/tls12 || bad refused/tls12 "TLS 1.2 was not refused"
python3 - "$PORT" <<'EOF' >"$T/out" 2>&1
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
# a ttrpc frame header and a request, in plaintext
s.sendall(struct.pack(">IIBB", 20, 1, 1, 0) + b"\x0a\x0ekin.v1.Health\x12\x05Check")
try:
    data = s.recv(100)
    print("got", len(data))
except Exception as e:
    print("closed", e)
EOF
as admin health >/dev/null 2>&1 && ! grep -q "got [1-9][0-9]* *$" "$T/out" || grep -q "got 0\|closed\|got 7" "$T/out" &&
	ok refused/plaintext || bad refused/plaintext "plaintext answered"


# The gateway SIGKILLed: restarted; PID 1 and the unix socket unaffected.
G=$(gateway_pid)
kill -KILL "$G"
serving && ok gateway_kill_unix_unaffected || bad gateway_kill_unix_unaffected "unix socket affected"
wait_for "[ -n \"\$(gateway_pid)\" ] && [ \"\$(gateway_pid)\" != $G ]" 250 && wait_for "as admin health >/dev/null 2>&1" 250 &&
	ok gateway_restarted || bad gateway_restarted "no new gateway serving"
kill -0 "$DPID" && grep -q "the gateway ended (signal 9)" "$T/kin.log" && ok gateway_death_logged ||
	bad gateway_death_logged "no log line"

# Policy reload: by RPC, by SIGHUP; a bad one refused with the line named.
echo "cn:reader operate ." >>"$T/policy"
out=$(as admin policy reload 2>&1)
[[ "$out" == "policy $T/policy: 5 rules" ]] && [[ "$(call reader "" kin.v1.Cells Freeze)" != PERMISSION_DENIED* ]] &&
	ok policy_reload_rpc || { echo "$out" >"$T/out"; bad policy_reload_rpc "'$out'"; }
cp "$T/policy" "$T/policy.good"
echo "cn:reader root" >>"$T/policy"
out=$(as admin policy reload 2>&1); rc=$?
[ $rc -eq 1 ] && [[ "$out" == *"INVALID_ARGUMENT"*"policy: line 7"*"root"* ]] &&
	[[ "$(call reader "" kin.v1.Cells Freeze)" != PERMISSION_DENIED* ]] && ok policy_bad_refused_old_kept ||
	{ echo "$out" >"$T/out"; bad policy_bad_refused_old_kept "exit $rc"; }
grep -v "^cn:reader" "$T/policy.good" >"$T/policy"
echo "cn:reader read *" >>"$T/policy"
kill -HUP "$DPID"
wait_for "[[ \"\$(call reader '' kin.v1.Cells Freeze)\" == PERMISSION_DENIED* ]]" 100 &&
	grep -q "audit: who=signal via=signal call=SIGHUP/policy-reload target=. object=$T/policy result=OK" "$T/kin.log" &&
	ok policy_reload_sighup || bad policy_reload_sighup "SIGHUP did not reload (or was not audited)"

# Certificate rotation: a connection open across it goes on; new
# handshakes get the new certificate; a bad file keeps the old.
exec 7> >(as admin events >"$T/events.out" 2>&1)
sleep 0.5
old=$(openssl s_client -connect "127.0.0.1:$PORT" -cert "$PKI/admin.pem" -key "$PKI/admin-key.pem" -CAfile "$PKI/ca.pem" </dev/null 2>/dev/null | openssl x509 -noout -serial)
cp "$PKI/server2.pem" "$PKI/server.new" && cp "$PKI/server2-key.pem" "$PKI/server-key.new"
mv "$PKI/server-key.new" "$PKI/server-key.pem" && mv "$PKI/server.new" "$PKI/server.pem"
kill -HUP "$DPID"
sleep 1
new=$(openssl s_client -connect "127.0.0.1:$PORT" -cert "$PKI/admin.pem" -key "$PKI/admin-key.pem" -CAfile "$PKI/ca.pem" </dev/null 2>/dev/null | openssl x509 -noout -serial)
as admin cell create rotated >/dev/null 2>&1
wait_for "grep -q rotated '$T/events.out'" 100 && [ -n "$new" ] && [ "$old" != "$new" ] && ok cert_rotation ||
	{ echo "old $old new $new" >"$T/out"; bad cert_rotation "rotation: $old -> $new, events over the old connection: $(wc -l <"$T/events.out")"; }
echo "not a certificate" >"$PKI/server.pem"
kill -HUP "$DPID"
sleep 1
as admin health >/dev/null 2>&1 && grep -q "server.pem" "$T/kin.log" && ok cert_bad_kept_old ||
	bad cert_bad_kept_old "a bad certificate file broke TLS"
G=$(gateway_pid)
rm -f "$PKI/server.pem"
kill -HUP "$DPID"
sleep 1
as admin health >/dev/null 2>&1 && [ "$(gateway_pid)" = "$G" ] &&
	grep -q "server.pem: No such file or directory" "$T/kin.log" && ok cert_missing_kept_old ||
	bad cert_missing_kept_old "a missing certificate file broke TLS or the gateway"
exec 7>&-

# A re-exec asked over TLS, with server.pem gone (a new gateway could not
# load it): answered; the same gateway serves on (its listening socket
# never closed), the policy and the zones as before; its exit afterwards
# seen by the new kin, which starts another. A policy file that would not
# build refuses the re-exec, naming the line.
G=$(gateway_pid)
out=$(as admin reexec 2>&1); rc=$?
[ $rc -eq 0 ] && wait_for "grep -q 'the TLS gateway on 127.0.0.1:$PORT taken over (pid $G)' '$T/kin.log'" 100 &&
	[ "$(gateway_pid)" = "$G" ] && ok reexec_gateway_carried ||
	{ echo "$out" >"$T/out"; bad reexec_gateway_carried "exit $rc: $out; gateway $G -> $(gateway_pid)"; }
wait_for "as admin health >/dev/null 2>&1" 100 && as admin --target pod1 -o json version 2>/dev/null | grep -q '"role":"zone"' &&
	[[ "$(call reader "" kin.v1.Cells Freeze)" == PERMISSION_DENIED* ]] &&
	[[ "$(call operator pod1 kin.v1.Exec Signal)" != PERMISSION_DENIED* ]] && ok reexec_tls_serves ||
	bad reexec_tls_serves "TLS, a zone through it or the policy changed across the re-exec"
cp "$T/policy" "$T/policy.good"
echo "cn:x nonsense" >>"$T/policy"
out=$(as admin reexec 2>&1); rc=$?
[ $rc -eq 1 ] && [[ "$out" == *FAILED_PRECONDITION*"policy: line"*"nonsense"* ]] && as admin health >/dev/null 2>&1 &&
	ok reexec_bad_policy_refused || { echo "$out" >"$T/out"; bad reexec_bad_policy_refused "exit $rc: $out"; }
cp "$T/policy.good" "$T/policy"
cp "$PKI/server2.pem" "$PKI/server.pem"
kill -KILL "$G"
wait_for "[ -n \"\$(gateway_pid)\" ] && [ \"\$(gateway_pid)\" != $G ]" 250 && wait_for "as admin health >/dev/null 2>&1" 250 &&
	[ "$(grep -c 'the gateway ended (signal 9)' "$T/kin.log")" -eq 2 ] && ok reexec_gateway_restarted_after ||
	bad reexec_gateway_restarted_after "the new kin did not restart the gateway it took over"

# Contexts.
export KIN_CONFIG=$T/kinconfig
cat >"$KIN_CONFIG" <<EOF
current-context = local
[context local]
address = unix:$S
[context remote]
address = tls:127.0.0.1:$PORT
cert = $PKI/reader.pem
key = $PKI/reader-key.pem
ca = $PKI/ca.pem
server-name = localhost
target = pod1
EOF
"$KIN" ctl config list >"$T/out" 2>&1 && grep -q "^\* local" "$T/out" && grep -q "^  remote *tls:127.0.0.1:$PORT target pod1" "$T/out" &&
	ok ctx_list || bad ctx_list "list"
"$KIN" ctl --context remote -o json version >"$T/out" 2>&1 && grep -q '"role":"zone"' "$T/out" && ok ctx_remote_target ||
	bad ctx_remote_target "context remote did not reach pod1 over TLS"
"$KIN" ctl config use remote >/dev/null 2>&1 && "$KIN" ctl cell freeze x >"$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "PERMISSION_DENIED: cn:reader" "$T/out" && ok ctx_use || bad ctx_use "exit $rc"
"$KIN" ctl --context nope health >"$T/out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "no such context" "$T/out" && ok ctx_unknown || bad ctx_unknown "exit $rc"
unset KIN_CONFIG

# IPv6: a second kin on [::1], when the host has it.
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	P6=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0)); print(s.getsockname()[1])')
	"$KIN" init --socket "$T/v6.sock" --tls-listen "[::1]:$P6" --tls-cert "$PKI/server2.pem" \
		--tls-key "$PKI/server2-key.pem" --tls-ca "$PKI/ca.pem" --policy "$T/policy" >"$T/v6.log" 2>&1 &
	V6=$!
	wait_for "grep -q 'ready:' '$T/v6.log'" 250
	out=$("$KIN" ctl --connect "tls:[::1]:$P6" --cert "$PKI/reader.pem" --key "$PKI/reader-key.pem" \
		--ca "$PKI/ca.pem" health 2>&1)
	[ "$out" = SERVING ] && ok ipv6 || { echo "$out" >"$T/out"; bad ipv6 "'$out'"; }
	kill -TERM "$V6"; wait "$V6"
else
	echo "SKIP ns/tls/ipv6: no ::1 here"
fi

kill -TERM "$DPID"
wait "$DPID"; rc=$?
[ $rc -eq 0 ] && ! pgrep -f "kin gateway" -P "$DPID" >/dev/null && ok stop_clean || bad stop_clean "exit $rc"
DPID=
ns_suite_end
