#!/usr/bin/env bash
# TLS benchmark: unary kin.v1.Health/Check over mutual TLS 1.3, kin's
# gateway next to kin's own unix socket and next to containerd's Go ttrpc
# served over Go's crypto/tls (tests/interop server-tls), in one run, all
# driven by the same Go client (ttrpc-peer bench / bench-tls): handshake +
# first call on a fresh connection, then the steady round trip (median, p99)
# on one connection and calls/s with 1 and 64 clients. And kin's idle PID 1
# RSS with and without --tls-listen: the TLS code runs in the gateway, so
# PID 1 should not grow.
# Goal (#14): steady TLS round trip <= 2x kin's unix one and ahead of Go's.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
PEER=$PWD/$BUILD/ttrpc-peer
CALLS=${TLS_BENCH_CALLS:-20000}
T=$(mktemp -d /tmp/kin-bench-tls.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
command -v openssl >/dev/null || { echo "bench tls: no openssl"; exit 0; }
tests/tls/certs.sh "$T/pki" || { echo "bench tls: certs.sh failed" >&2; exit 1; }
P=$T/pki
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_log() { for _ in $(seq 250); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.02; done; return 1; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

echo "cn:admin admin *" >"$T/policy"
KP=$(port)
"$KIN" init --log-level warn --socket "$T/k.sock" --policy "$T/policy" --tls-listen "127.0.0.1:$KP" \
	--tls-cert "$P/server.pem" --tls-key "$P/server-key.pem" --tls-ca "$P/ca.pem" >"$T/kin.log" 2>&1 &
KPID=$!
pids+=($KPID)
"$KIN" init --log-level warn --socket "$T/plain.sock" >"$T/plain.log" 2>&1 &
PLAIN=$!
pids+=($PLAIN)
GP=$(port)
"$PEER" server-tls "127.0.0.1:$GP" "$P/server.pem" "$P/server-key.pem" "$P/ca.pem" >"$T/go.log" 2>&1 &
pids+=($!)
for _ in $(seq 250); do [ -S "$T/k.sock" ] && [ -S "$T/plain.sock" ] && break; sleep 0.02; done
wait_log "$T/go.log" ready || { echo "bench tls: Go's server did not start: $(cat "$T/go.log")" >&2; exit 1; }
# The gateway is up once a TLS call goes through.
for _ in $(seq 250); do
	"$PEER" call-tls "127.0.0.1:$KP" "$P/admin.pem" "$P/admin-key.pem" "$P/ca.pem" kin.v1.Health Check localhost \
		>/dev/null 2>&1 && break
	sleep 0.02
done

line() { # line NAME FIGURES
	local name=$1; set -- $2
	printf '  %-34s %8s us %8s us %9s/s %10s/s %10s\n' "$name" "$1" "$2" "$3" "$4" "${5:+$5 us}"
}
go_name="Go ttrpc $(dpkg-query -W -f='${Version}' golang-github-containerd-ttrpc-dev 2>/dev/null) + crypto/tls"
echo "TLS: unary kin.v1.Health/Check, mutual TLS 1.3 ($(nproc) cores; one Go client for all)"
printf '  %-34s %11s %11s %11s %12s %10s\n' server median p99 "1 client" "64 clients" "connect"
rc=0
u=$("$PEER" bench "$T/k.sock" 64 "$CALLS") || rc=1
k=$("$PEER" bench-tls "127.0.0.1:$KP" "$P/admin.pem" "$P/admin-key.pem" "$P/ca.pem" 64 "$CALLS" localhost) || rc=1
g=$("$PEER" bench-tls "127.0.0.1:$GP" "$P/admin.pem" "$P/admin-key.pem" "$P/ca.pem" 64 "$CALLS" localhost) || rc=1
line "kin, unix socket" "$u"
line "kin, TLS (gateway)" "$k"
line "$go_name" "$g"
set -- $u; um=$1
set -- $k; km=$1
set -- $g; gm=$1
awk -v u="$um" -v k="$km" -v g="$gm" 'BEGIN {
	printf "  goal: TLS round trip <= 2x unix (%.2fx): %s; ahead of Go (%.2fx): %s\n",
		k / u, (k <= 2 * u ? "met" : "missed"), k / g, (k < g ? "met" : "missed") }'
# The same unix load on the kin without TLS, so the RSS figures differ
# only by what TLS costs PID 1.
"$PEER" bench "$T/plain.sock" 64 "$CALLS" >/dev/null || rc=1
sleep 0.5
echo "  PID 1 RSS idle after the run: with --tls-listen $(rss_kb $KPID) KiB, without $(rss_kb $PLAIN) KiB" \
	"(the gateway itself: $(rss_kb "$(pgrep -P $KPID -f 'kin gateway' | head -1)") KiB)"
exit $rc
