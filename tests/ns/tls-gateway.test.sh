#!/usr/bin/env bash
# The TLS gateway (tls/): build/tls-gateway-driver plays kin (binds the
# port, forks tls_gateway_run, takes the handoffs and echoes on them) and
# kin ctl (tls_client_open); openssl s_client and python3's ssl are the
# peers. Runs in a fresh network namespace, so its ports are its own.
# Checks: identities handed over, every refusal at the handshake (with
# the gateway serving on after each), deadlines on trickled and stalled
# handshakes, the connection bound, rotation on SIGHUP with a bad file
# refused, the control socket's close both ways, the client side, and
# that the seccomp filter killed nothing.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin tls-gateway
D=$PWD/$BUILD/tls-gateway-driver
[ -x "$D" ] || ns_skip "no $D (make $BUILD/tls-gateway-driver)"
command -v openssl >/dev/null || ns_skip "no openssl(1)"
command -v python3 >/dev/null || ns_skip "no python3 for the slow and long-lived peers"
NETNS=kin-tls-$$
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	ip netns del "$NETNS" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$NETNS" || ns_skip "cannot make a network namespace"
ip -n "$NETNS" link set lo up
inns() { ip netns exec "$NETNS" "$@"; }
C=$T/certs
tests/tls/certs.sh "$C" || { bad certs "tests/tls/certs.sh failed"; ns_suite_end; exit; }
cp "$C/server.pem" "$T/cert.pem"
cp "$C/server-key.pem" "$T/key.pem"

# start NAME PORT [handshake_ms] [max_conns] [max_handshakes]: a driver
# whose stdin is a FIFO we hold (closing it is kin closing the control
# socket); sets GW_PID (the gateway) and DRV_PID.
start() {
	local name=$1 port=$2
	shift 2
	mkfifo "$T/$name.in"
	inns "$D" serve 127.0.0.1 "$port" "$T/cert.pem" "$T/key.pem" "$C/ca.pem" "$C/crl.pem" "$@" \
		<"$T/$name.in" >"$T/$name.out" 2>"$T/$name.err" &
	DRV_PID=$!
	PIDS+=("$DRV_PID")
	eval "exec {FIFO_$name}>$T/$name.in"
	wait_for "grep -q 'serving' '$T/$name.err'" || bad "start_$name" "$(cat "$T/$name.err")"
	GW_PID=$(awk '/^gateway /{print $2}' "$T/$name.out")
}
# sc PORT CERT [ARGS...]: openssl s_client as that client, "ping" then "quit".
sc() {
	local port=$1 cert=$2
	shift 2
	local certargs=()
	[ "$cert" != none ] && certargs=(-cert "$C/$cert.pem" -key "$C/$cert-key.pem")
	printf 'ping\nquit\n' | inns timeout 5 openssl s_client -connect 127.0.0.1:"$port" \
		"${certargs[@]}" -CAfile "$C/ca.pem" -quiet "$@" 2>&1
}
P=7443
start main $P 1500
G=$GW_PID

# --- identities ---
out=$(sc $P admin)
echo "$out" | grep -qx 'hello cn:admin' && echo "$out" | grep -qx ping &&
	grep -qE '^handoff 127\.0\.0\.1:[0-9]+ cn:admin$' "$T/main.out" && ok identity_cn ||
	bad identity_cn "$out / $(cat "$T/main.out")"
out=$(sc $P ops)
echo "$out" | grep -qx 'hello uri:spiffe://kin.test/ops,dns:ops.kin.test,cn:ops' &&
	ok identity_uri_dns_cn || bad identity_uri_dns_cn "$out"

# refused NAME WHY_IN_LOG s_client-args...: no hello, the reason logged,
# and a good client served right after.
refused() {
	local name=$1 why=$2
	shift 2
	local out before
	before=$(grep -c refused "$T/main.err")
	out=$(sc $P "$@")
	if echo "$out" | grep -q '^hello'; then
		bad "refused_$name" "served: $out"
	elif ! wait_for "[ \$(grep -c refused '$T/main.err') -gt $before ]" ||
		! tail -n +$((before + 1)) "$T/main.err" | grep 'refused' | grep -q "$why"; then
		bad "refused_$name" "log: $(tail -3 "$T/main.err")"
	elif ! sc $P reader | grep -qx 'hello cn:reader'; then
		bad "refused_$name" "not serving after it"
	else
		ok "refused_$name"
	fi
}
refused no_cert "peer did not return a certificate" none
refused other_ca "unable to get local issuer certificate" otherca
refused expired "certificate has expired" expired
refused wrong_key_usage "unsuitable certificate purpose" wrongeku
refused revoked "certificate revoked" revoked
refused tls1_2 "unsupported protocol" admin -tls1_2
refused tls1_1 "unsupported protocol\|no protocols available" admin -tls1_1 -cipher DEFAULT@SECLEVEL=0
# ttrpc's frame header, plaintext: not a ClientHello.
before=$(grep -c refused "$T/main.err")
inns python3 -c '
import socket, struct
s = socket.create_connection(("127.0.0.1", '$P'))
s.sendall(struct.pack(">IIBB", 20, 1, 1, 0) + b"x" * 20)
s.settimeout(5)
print("eof" if s.recv(100) == b"" else "data")' >"$T/plain" 2>&1
wait_for "[ \$(grep -c refused '$T/main.err') -gt $before ]" &&
	sc $P reader | grep -qx 'hello cn:reader' && ok refused_plaintext ||
	bad refused_plaintext "$(cat "$T/plain") / $(tail -2 "$T/main.err")"

# --- deadlines (handshake_ms 1500) ---
inns python3 - $P >"$T/trickle" 2>&1 <<'PY'
import socket, ssl, sys, time
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.monotonic()
try:
    for b in hello:  # a real ClientHello, a byte every 50 ms
        s.send(bytes([b]))
        time.sleep(0.05)
    print("not cut: whole hello sent")
except OSError:
    print("cut after %.1f s" % (time.monotonic() - t0))
PY
t=$(sed -n 's/^cut after \([0-9.]*\) s$/\1/p' "$T/trickle")
[ -n "$t" ] && awk -v t="$t" 'BEGIN{exit !(t >= 1.3 && t < 4)}' && ok trickled_handshake_cut ||
	bad trickled_handshake_cut "$(cat "$T/trickle")"
out=$(inns python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", '$P'))
t0 = time.monotonic()
s.settimeout(10)
print("eof" if s.recv(10) == b"" else "data", "%.1f" % (time.monotonic() - t0))' 2>&1)
t=${out#eof }
[ "${out%% *}" = eof ] && awk -v t="$t" 'BEGIN{exit !(t >= 1.3 && t < 4)}' &&
	grep -q 'handshake not done after 1500 ms' "$T/main.err" && ok stalled_handshake_cut ||
	bad stalled_handshake_cut "$out"

# --- max_conns: a gateway of 3 connections, held by 3 silent peers ---
P2=7444
start small $P2 4000 3
inns python3 - $P2 >"$T/maxc" 2>&1 <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(2)
t0 = time.monotonic()
try:
    r = s.recv(10)
    print("fourth:", "closed" if r == b"" else "data", "%.1f" % (time.monotonic() - t0))
except socket.timeout:
    print("fourth: still open")
for h in held:
    h.settimeout(0.1)
    try:
        print("held:", "closed" if h.recv(10) == b"" else "data")
    except socket.timeout:
        print("held: open")
PY
grep -qE '^fourth: closed 0\.[0-9]$' "$T/maxc" && [ "$(grep -c 'held: open' "$T/maxc")" = 3 ] &&
	grep -q 'refused: too many connections' "$T/small.err" && ok max_conns ||
	bad max_conns "$(cat "$T/maxc") / $(tail -2 "$T/small.err")"
eval "exec {FIFO_small}>&-"

# --- max_handshakes: one at a time; the next peer waits in the backlog
# until the silent one's deadline (1500 ms) frees the slot, then is served.
P3=7446
start one $P3 1500 0 1
rm -f "$T/silent.up"
inns python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", '$P3'))
open("'$T'/silent.up", "w").close()
time.sleep(3)' &
SILENT=$!
# the silent peer connected first (a python start can take a while on a
# loaded machine), and the gateway has taken it
wait_for "[ -e '$T/silent.up' ]" 500
sleep 0.2
t0=$(date +%s%N)
out=$(sc $P3 admin)
ms=$((($(date +%s%N) - t0) / 1000000))
wait $SILENT
echo "$out" | grep -qx 'hello cn:admin' && [ $ms -ge 900 ] && [ $ms -lt 4000 ] && ok max_handshakes_backlog ||
	bad max_handshakes_backlog "after $ms ms: $out"
eval "exec {FIFO_one}>&-"

# --- rotation: a connection opened before lives on; new ones see the new cert ---
fp() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }
served_fp() {
	inns timeout 5 openssl s_client -connect 127.0.0.1:$P -cert "$C/admin.pem" \
		-key "$C/admin-key.pem" -CAfile "$C/ca.pem" </dev/null 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256 | cut -d= -f2
}
inns python3 - $P "$C" "$T/go" >"$T/long" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
port, c, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(c + "/ca.pem")
ctx.load_cert_chain(c + "/operator.pem", c + "/operator-key.pem")
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
f = s.makefile("rwb")
print(f.readline().decode().strip(), flush=True)
for _ in range(200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
f.write(b"after-rotation\n"); f.flush()
print(f.readline().decode().strip(), flush=True)
PY
LONG=$!
wait_for "grep -q hello '$T/long'"
[ "$(served_fp)" = "$(fp "$C/server.pem")" ] || bad rotation "the first cert is not the one served"
cp "$C/server2.pem" "$T/cert.new" && mv "$T/cert.new" "$T/cert.pem"
cp "$C/server2-key.pem" "$T/key.new" && mv "$T/key.new" "$T/key.pem"
kill -HUP "$G"
wait_for "grep -q 'files reloaded' '$T/main.err'"
touch "$T/go"
wait $LONG
[ "$(served_fp)" = "$(fp "$C/server2.pem")" ] && grep -qx after-rotation "$T/long" &&
	ok rotation_sighup || bad rotation_sighup "$(cat "$T/long") / $(tail -3 "$T/main.err")"
echo "not a certificate" >"$T/cert.new" && mv "$T/cert.new" "$T/cert.pem"
kill -HUP "$G"
wait_for "grep -q 'keeping the files loaded before' '$T/main.err'"
grep 'keeping the files' "$T/main.err" | grep -q "$T/cert.pem" &&
	[ "$(served_fp)" = "$(fp "$C/server2.pem")" ] && ok rotation_bad_file_kept_old ||
	bad rotation_bad_file_kept_old "$(tail -3 "$T/main.err")"
# A change noticed by the periodic stat, no SIGHUP.
n=$(grep -c 'files reloaded' "$T/main.err")
cp "$C/server2.pem" "$T/cert.new" && mv "$T/cert.new" "$T/cert.pem"
wait_for "[ \$(grep -c 'files reloaded' '$T/main.err') -gt $n ]" &&
	grep 'files reloaded' "$T/main.err" | tail -1 | grep -q 'a file changed' &&
	ok rotation_by_mtime || bad rotation_by_mtime "$(tail -3 "$T/main.err")"

# --- the client side: tls_client_open against the gateway ---
out=$(inns "$D" client 127.0.0.1 $P "$C/admin.pem" "$C/admin-key.pem" "$C/ca.pem" 2>&1)
[ "$out" = "$(printf 'hello cn:admin\nping\nrelay status 0')" ] && ok client_ip || bad client_ip "$out"
out=$(inns "$D" client localhost $P "$C/ops.pem" "$C/ops-key.pem" "$C/ca.pem" 2>&1)
echo "$out" | grep -q '^hello uri:spiffe' && ok client_localhost || bad client_localhost "$out"
out=$(inns "$D" client 127.0.0.1 $P "$C/admin.pem" "$C/admin-key.pem" "$C/ca.pem" other.kin.test 2>&1)
[ "$out" = "error: server certificate: hostname mismatch" ] && ok client_name_mismatch ||
	bad client_name_mismatch "$out"
out=$(inns "$D" client 127.0.0.1 $P "$C/admin.pem" "$C/admin-key.pem" "$C/ca2.pem" 2>&1)
# (the server sends its CA along: the chain ends in a root the client does not trust)
echo "$out" | grep -qxE "error: server certificate: (unable to get local issuer certificate|self-signed certificate in certificate chain)" &&
	ok client_wrong_ca || bad client_wrong_ca "$out"
out=$(inns "$D" client 127.0.0.1 7999 "$C/admin.pem" "$C/admin-key.pem" "$C/ca.pem" 2>&1)
[ "$out" = "error: connect 127.0.0.1:7999: Connection refused" ] && ok client_refused ||
	bad client_refused "$out"
out=$(inns "$D" client nosuch.kin.test $P "$C/admin.pem" "$C/admin-key.pem" "$C/ca.pem" 2>&1)
echo "$out" | grep -q 'not in /etc/hosts' && ok client_unknown_name || bad client_unknown_name "$out"
echo "not a certificate" >"$T/bad.pem"
out=$("$D" check server "$T/bad.pem" "$T/key.pem" "$C/ca.pem" 2>&1)
o2=$("$D" check server "$C/server.pem" "$C/server-key.pem" "$C/ca.pem" "$C/crl.pem" 2>&1)
o3=$("$D" check client "$C/admin.pem" "$C/server-key.pem" "$C/ca.pem" 2>&1)
echo "$out" | grep -q "^error: tls certificate $T/bad.pem: " && [ "$o2" = ok ] &&
	echo "$o3" | grep -q "^error: tls key $C/server-key.pem: " && ok files_check ||
	bad files_check "$out / $o2 / $o3"

# --- under the filter nothing was killed; kin's close ends it with 0 ---
st=$(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd):' /proc/$G/status | tr -s '\t ' ' ' | tr '\n' ' ')
[ "$st" = "NoNewPrivs: 1 Seccomp: 2 CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 " ] ||
	[ "$st" = "CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " ] &&
	ok sandbox_state || bad sandbox_state "$st"
kill -0 "$G" 2>/dev/null && ! grep -qi 'seccomp\|bad system call' "$T/main.err" &&
	clean_log "$T/main.err" && clean_log "$T/small.err" && clean_log "$T/one.err" &&
	ok sandbox_alive || bad sandbox_alive "the gateway is gone: $(tail -3 "$T/main.err")"
eval "exec {FIFO_main}>&-"
wait_for "grep -q 'gateway status' '$T/main.out'"
grep -qx 'kin closed the control socket; gateway status 0' "$T/main.out" && ok control_closed_exit_0 ||
	bad control_closed_exit_0 "$(tail -2 "$T/main.out")"
wait_for "grep -q 'gateway status' '$T/small.out'"
grep -qx 'kin closed the control socket; gateway status 0' "$T/small.out" ||
	bad control_closed_exit_0 "small: $(tail -2 "$T/small.out")"

# --- the gateway killed: kin (the driver) sees the control socket close ---
start kill 7445
kill -KILL "$GW_PID"
wait_for "grep -q 'gateway status' '$T/kill.out'"
grep -q '^control closed$' "$T/kill.out" && grep -qx 'gateway status 137' "$T/kill.out" &&
	ok gateway_killed_seen || bad gateway_killed_seen "$(cat "$T/kill.out")"
ns_suite_end
