#!/usr/bin/env bash
# RPC benchmark: unary kin.v1.Health/Check over a unix socket, kin next to
# containerd's Go ttrpc (Debian's golang-github-containerd-ttrpc-dev)
# answering the same call, in one run, driven by the same client
# (tests/bench/rpc_bench.c): round trip median and p99 on one connection,
# throughput with 1 and with 64 concurrent clients.
# Twice: server and client pinned to one core (what the server costs), and
# scheduled freely (on an idle VM a round trip between cores is dominated by
# waking the other vCPU from halt, for any server).
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

# measure NAME PIN SERVER_CMD...: prints the client's figures for one server.
measure() {
	local name=$1 pin=$2; shift 2
	local sock=$T/$name.sock
	rm -f "$sock"
	$pin "$@" "$sock" >"$T/$name.log" 2>&1 &
	local pid=$!
	pids+=($pid)
	wait_sock "$sock" || { echo "bench rpc: $name did not start: $(cat "$T/$name.log")" >&2; return 1; }
	$pin "$CLIENT" "$sock" "$SECS"
	local rc=$?
	kill $pid 2>/dev/null; wait $pid 2>/dev/null
	return $rc
}

row() {
	set -- $2
	printf '  %-30s %9s us %9s us %11s/s %12s/s\n' "$NAME" "$1" "$2" "$3" "$4"
}
go_name="Go ttrpc $(dpkg-query -W -f='${Version}' golang-github-containerd-ttrpc-dev 2>/dev/null)"
echo "RPC: unary kin.v1.Health/Check over a unix socket ($(nproc) cores; the same client for both)"
printf '  %-30s %12s %12s %16s %17s\n' server median p99 "1 client" "64 clients"
rc=0
for mode in "one core" "any core"; do
	pin=""
	[ "$mode" = "one core" ] && pin="taskset -c 0"
	k=$(measure kin "$pin" "$KIN" init --log-level warn --socket) || rc=1
	g=$(measure go "$pin" "$PEER" server) || rc=1
	NAME="kin ($mode)" row kin "$k"
	NAME="$go_name ($mode)" row go "$g"
	[ "$mode" = "one core" ] && pinned=$k
done
set -- $pinned
awk -v m="$1" -v t="$3" 'BEGIN {
	printf "  goal (one core): median <= 30 us: %s, >= 50000 calls/s: %s\n",
		(m <= 30 ? "met" : "missed"), (t >= 50000 ? "met" : "missed") }'
exit $rc
