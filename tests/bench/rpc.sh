#!/usr/bin/env bash
# RPC benchmark: unary kin.v1.Health/Check over a unix socket, kin next to
# containerd's Go ttrpc (Debian's golang-github-containerd-ttrpc-dev)
# answering the same call, in one run, driven by the same client
# (tests/bench/rpc_bench.c): round trip median and p99 on one connection,
# throughput with 1 and with 64 concurrent clients.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
CLIENT=$PWD/$BUILD/bench-rpc_bench
PEER=$PWD/$BUILD/ttrpc-peer
SECS=${RPC_BENCH_SECONDS:-2}
T=$(mktemp -d /tmp/kin-bench-rpc.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

wait_sock() { for _ in $(seq 250); do [ -S "$1" ] && return 0; sleep 0.02; done; return 1; }

"$KIN" init --log-level warn --socket "$T/kin.sock" >"$T/kin.log" 2>&1 &
pids+=($!)
"$PEER" server "$T/go.sock" >"$T/go.log" 2>&1 &
pids+=($!)
wait_sock "$T/kin.sock" && wait_sock "$T/go.sock" || { echo "bench rpc: a server did not start"; cat "$T"/*.log; exit 1; }

kin=$("$CLIENT" "$T/kin.sock" "$SECS") || { echo "bench rpc: kin run failed"; exit 1; }
go=$("$CLIENT" "$T/go.sock" "$SECS") || { echo "bench rpc: Go ttrpc run failed"; exit 1; }

echo "RPC: unary kin.v1.Health/Check over a unix socket ($(nproc) cores; same client for both)"
printf '  %-26s %12s %12s %16s %17s\n' server "median" "p99" "1 client" "64 clients"
row() {
	set -- $2
	printf '  %-26s %9s us %9s us %11s/s %12s/s\n' "$NAME" "$1" "$2" "$3" "$4"
}
NAME="kin" row kin "$kin"
NAME="Go ttrpc $(dpkg-query -W -f='${Version}' golang-github-containerd-ttrpc-dev 2>/dev/null)" row go "$go"
set -- $kin
awk -v m="$1" -v t="$3" -v t64="$4" 'BEGIN {
	printf "  goal: median <= 30 us (%s), >= 50000 calls/s (%s)\n",
		(m <= 30 ? "met" : "missed"), (t >= 50000 || t64 >= 50000 ? "met" : "missed") }'
