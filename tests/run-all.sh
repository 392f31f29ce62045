#!/usr/bin/env bash
# Runs every test layer and ends with one line: "N passed, N failed".
# Each layer prints PASS/FAIL/SKIP lines and its own "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD

total_pass=0 total_fail=0 total_skip=0
run_layer() {
	local name=$1; shift
	local out rc
	echo "== $name"
	local log
	log=$(mktemp /tmp/kin-layer.XXXXXX)
	"$@" >"$log" 2>&1
	rc=$?
	out=$(cat "$log")
	printf '%s\n' "$out"
	rm -f "$log"
	local line
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
	if [ -z "$line" ]; then
		echo "FAIL $name: layer printed no summary (exit $rc)"
		total_fail=$((total_fail + 1))
		return
	fi
	local p f
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + $(printf '%s\n' "$out" | grep -c '^SKIP ' || true)))
	if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then
		echo "FAIL $name: exit $rc with no failed test"
		total_fail=$((total_fail + 1))
	fi
}

# The dependency rule between modules (README: "Layout"), and proof the
# check catches an include against it.
run_layer layers scripts/layers.sh --test
# Files and functions within their sizes, and proof the check catches them.
run_layer sizes scripts/sizes.sh --test
run_layer unit "$BUILD/unit-tests"
for suite in tests/ns/*.test.sh; do
	run_layer "ns/$(basename "$suite" .test.sh)" "$suite"
done
for suite in tests/vm/*.test.sh; do
	[ -e "$suite" ] && run_layer "vm/$(basename "$suite" .test.sh)" "$suite"
done
run_layer fuzz tests/fuzz/run.sh
echo
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
