#!/usr/bin/env bash
# Runs every libFuzzer target for FUZZ_SECONDS (short in make check, long in
# make fuzz) over its corpus in tests/fuzz/corpus/TARGET; new inputs go to a
# scratch dir, so the committed corpus only changes by hand.
set -uo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-10}
pass=0 fail=0
for f in build/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	case "$f" in *-replay) continue ;; esac
	name=$(basename "$f")
	corpus=tests/fuzz/corpus/$name
	scratch=$(mktemp -d /tmp/kin-fuzz.XXXXXX)
	mkdir -p "$corpus"
	log=$scratch/log
	if "$f" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$scratch/" "$scratch" "$corpus" >"$log" 2>&1; then
		runs=$(grep -oE 'Done [0-9]+ runs' "$log" | awk '{print $2}')
		echo "PASS fuzz/$name (${runs:-?} inputs in ${secs}s, no crash)"
		pass=$((pass + 1))
	else
		echo "FAIL fuzz/$name: see reproducer below"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/    /'
		cp "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* tests/fuzz/ 2>/dev/null
		fail=$((fail + 1))
	fi
	rm -rf "$scratch"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
