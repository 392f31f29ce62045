# What the tree checks share (sourced by scripts/layers.sh and sizes.sh,
# which define check ROOT and selftest REPO): PASS/FAIL lines, and the
# command line — `SCRIPT [ROOT]` checks ROOT (default: the repo), one line
# per finding, exit 1; `SCRIPT --test` is a test layer of make check: the
# real tree passes, and the script's own self test proves it catches what
# it should.
pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1"; fail=$((fail + 1)); }

# check_main WHAT GOOD WHY ARGS...: GOOD says the tree passes, WHY what a
# finding breaks.
check_main() {
	local what=$1 good=$2 why=$3 repo root out
	shift 3
	repo=$(cd "$(dirname "$0")/.." && pwd)
	if [ "${1:-}" = "--test" ]; then
		if out=$(check "$repo"); then
			ok "$what: $good"
		else
			ko "$what: the tree breaks the rule:"
			printf '%s\n' "$out"
		fi
		selftest "$repo"
		echo "$pass passed, $fail failed"
		[ "$fail" -eq 0 ]
		exit
	fi
	root=${1:-$repo}
	if ! check "$root"; then
		echo "$what: $why" >&2
		exit 1
	fi
}
