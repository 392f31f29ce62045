#!/usr/bin/env bash
# tls-selftest: the TLS modes of ttrpc-peer against each other (Go's crypto/tls
# on both sides), with a throwaway CA made by openssl: proves the Go side
# before it is pointed at kin's TLS port. Not part of make check.
#   tests/interop/tls-selftest.sh      (after make build/ttrpc-peer)
# Prints a PASS or FAIL line per check; exit 0 when all pass.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PEER=$PWD/$BUILD/ttrpc-peer
[ -x "$PEER" ] || { echo "tls-selftest: no $PEER (make $BUILD/ttrpc-peer)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "tls-selftest: no openssl" >&2; exit 2; }
T=$(mktemp -d /tmp/kin-tls-selftest.XXXXXX)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

fails=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; fails=$((fails + 1)); }

# ca NAME: a self-signed EC P-256 CA in $T/NAME.{crt,key}.
ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
		-subj "/CN=$1" -keyout "$T/$1.key" -out "$T/$1.crt" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>"$T/openssl.log"
}
# leaf CA NAME CN EXTENSIONS: $T/NAME.{crt,key} signed by CA.
leaf() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$3" -keyout "$T/$2.key" -out "$T/$2.csr" 2>>"$T/openssl.log" &&
		printf '%b\n' "$4" >"$T/$2.ext" &&
		openssl x509 -req -in "$T/$2.csr" -CA "$T/$1.crt" -CAkey "$T/$1.key" \
			-set_serial "0x$(openssl rand -hex 8)" -days 1 -extfile "$T/$2.ext" \
			-out "$T/$2.crt" 2>>"$T/openssl.log"
}
SRV='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost'
CLI='basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\nsubjectAltName=URI:spiffe://test/ops'
if ca ca && ca other && leaf ca server localhost "$SRV" && leaf ca client ops "$CLI" &&
	leaf other stranger ops "$CLI"; then
	pass certificates
else
	fail certificates "$(cat "$T/openssl.log")"
	exit 1
fi

# server-tls on a free port (0: the kernel picks; it prints the one bound).
"$PEER" server-tls 127.0.0.1:0 "$T/server.crt" "$T/server.key" "$T/ca.crt" >"$T/server.log" 2>&1 &
spid=$!
for _ in $(seq 250); do grep -q '^ready ' "$T/server.log" && break; sleep 0.02; done
ADDR=$(sed -n 's/^ready //p' "$T/server.log")
if [ -n "$ADDR" ]; then pass "server_tls_ready ($ADDR)"; else
	fail server_tls_ready "$(cat "$T/server.log")"
	exit 1
fi
C=("$T/client.crt" "$T/client.key" "$T/ca.crt")

# run NAME CMD...: the command's exit code in rc, its stdout and stderr in $T/NAME.{out,err}.
run() {
	local name=$1; shift
	timeout 30 "$@" >"$T/$name.out" 2>"$T/$name.err"; rc=$?
}
show() { tr '\n' '|' <"$T/$1.out"; tr '\n' '|' <"$T/$1.err"; }

run ok "$PEER" client-tls "$ADDR" "${C[@]}"
[ $rc -eq 0 ] && grep -q "200 concurrent calls: ok" "$T/ok.out" && grep -q "^TLS: TLS 1.3" "$T/ok.out" &&
	pass "client_tls ($(head -1 "$T/ok.out"))" || fail client_tls "exit $rc: $(show ok)"

run name "$PEER" client-tls "$ADDR" "${C[@]}" localhost
[ $rc -eq 0 ] && pass client_tls_server_name_localhost || fail client_tls_server_name_localhost "exit $rc: $(show name)"

run badname "$PEER" client-tls "$ADDR" "${C[@]}" wrong.example
[ $rc -ne 0 ] && grep -q "wrong.example" "$T/badname.err" && pass "client_tls_wrong_server_name_refused" ||
	fail client_tls_wrong_server_name_refused "exit $rc: $(show badname)"

run stranger "$PEER" client-tls "$ADDR" "$T/stranger.crt" "$T/stranger.key" "$T/ca.crt"
[ $rc -ne 0 ] && grep -q "certificate" "$T/stranger.err" &&
	pass "client_cert_of_another_ca_refused ($(head -c 200 "$T/stranger.err"))" ||
	fail client_cert_of_another_ca_refused "exit $rc: $(show stranger)"

run untrusted "$PEER" client-tls "$ADDR" "$T/client.crt" "$T/client.key" "$T/other.crt"
[ $rc -ne 0 ] && grep -q "certificate" "$T/untrusted.err" && pass server_of_another_ca_refused ||
	fail server_of_another_ca_refused "exit $rc: $(show untrusted)"

# No client certificate at all, and TLS 1.2: refused by server-tls.
# (s_client's stdin held open a moment: the server's alert comes after its handshake)
out=$( (sleep 0.5) | openssl s_client -connect "$ADDR" -CAfile "$T/ca.crt" -tls1_3 2>&1); orc=$?
if [ $orc -ne 0 ] && echo "$out" | grep -qi "alert"; then pass no_client_cert_refused; else
	fail no_client_cert_refused "exit $orc: $(echo "$out" | tail -5 | tr '\n' '|')"
fi
if ! openssl s_client -connect "$ADDR" -CAfile "$T/ca.crt" -cert "$T/client.crt" -key "$T/client.key" \
	-tls1_2 </dev/null >"$T/tls12.out" 2>&1; then pass tls12_refused; else
	fail tls12_refused "$(tail -5 "$T/tls12.out" | tr '\n' '|')"
fi

run call_ok "$PEER" call-tls "$ADDR" "${C[@]}" kin.v1.Health Check
[ $rc -eq 0 ] && [ "$(cat "$T/call_ok.out")" = OK ] && pass call_tls_ok || fail call_tls_ok "exit $rc: $(show call_ok)"

run call_nope "$PEER" call-tls "$ADDR" "${C[@]}" kin.v1.Health Nope
[ $rc -eq 1 ] && [ "$(cat "$T/call_nope.out")" = "UNIMPLEMENTED: method Nope" ] &&
	pass "call_tls_status ($(cat "$T/call_nope.out"))" || fail call_tls_status "exit $rc: $(show call_nope)"

run call_svc "$PEER" call-tls "$ADDR" "${C[@]}" kin.v1.Cell List
[ $rc -eq 1 ] && [ "$(cat "$T/call_svc.out")" = "UNIMPLEMENTED: service kin.v1.Cell" ] &&
	pass "call_tls_unknown_service ($(cat "$T/call_svc.out"))" || fail call_tls_unknown_service "exit $rc: $(show call_svc)"

run call_stranger "$PEER" call-tls "$ADDR" "$T/stranger.crt" "$T/stranger.key" "$T/ca.crt" kin.v1.Health Check
[ $rc -eq 3 ] && [ ! -s "$T/call_stranger.out" ] && grep -q certificate "$T/call_stranger.err" &&
	pass call_tls_refused_exit_3 || fail call_tls_refused_exit_3 "exit $rc: $(show call_stranger)"

run bench "$PEER" bench-tls "$ADDR" "${C[@]}" 8 5000
if [ $rc -eq 0 ] && [ "$(wc -w <"$T/bench.out")" -eq 5 ]; then
	read -r med p99 t1 tn conn <"$T/bench.out"
	pass "bench_tls (median $med us, p99 $p99 us, 1 client $t1/s, 8 clients $tn/s, connect+first call $conn us)"
else
	fail bench_tls "exit $rc: $(show bench)"
fi

kill $spid 2>/dev/null; wait $spid; src=$?
spid=
[ $src -eq 0 ] && pass server_tls_stops_on_sigterm || fail server_tls_stops_on_sigterm "exit $src: $(tr '\n' '|' <"$T/server.log")"

[ $fails -eq 0 ] && echo "tls-selftest: all passed" || echo "tls-selftest: $fails failed"
[ $fails -eq 0 ]
