#!/usr/bin/env bash
# The demo: kin as PID 1 of fresh PID+mount namespaces supervising a
# workload that leaves orphans behind, then a clean stop on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/ns/lib.sh

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "$("$KIN" version): $(file -b "$KIN" | grep -o 'statically linked'), $(du -k "$KIN" | cut -f1) KiB"

step "kin as PID 1 of new namespaces; the workload orphans 200 processes and checks /proc for zombies"
rc=0
unshare --pid --mount --fork --mount-proc "$KIN" init --log-level info -- sh -c "
	echo \"workload: I am pid \$\$; PID 1 is \$(cat /proc/1/comm)\"
	$HELPER orphans 100 && echo 'workload: no zombie left in /proc'
	exit 3" || rc=$?
echo "kin exited with the workload's status: $rc"

step "a workload that ignores SIGTERM: kin stops it (grace 1s, then SIGKILL)"
out=$(mktemp); ready=$(mktemp -u)
ns_start "$out" "$KIN" init --log-level info --grace 1s -- "$HELPER" ignore-term "$ready"
wait_for "[ -e '$ready' ]"
echo "host: kin is host pid $NS_PID1; sending SIGTERM"
kill -TERM "$NS_PID1"
rc=0; wait "$NS_UNSHARE" || rc=$?
cat "$out"; rm -f "$out" "$ready"
echo "kin exited with $rc (128 + SIGKILL)"
