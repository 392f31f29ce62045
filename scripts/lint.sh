#!/usr/bin/env bash
# make lint and make format.
#   scripts/lint.sh          clang-format --dry-run --Werror over the C files,
#                            cppcheck over the production sources, the layer
#                            check (scripts/layers.sh), the size check
#                            (scripts/sizes.sh); exit 1 on any finding
#   scripts/lint.sh format   clang-format -i over the very same C files
# The Makefile passes LINT_SRCS (the modules' .c, not generated ones) and
# LINT_CPPFLAGS (the build's -I and -D flags); the generated headers exist.
set -uo pipefail
cd "$(dirname "$0")/.."

# Every tracked .c/.h (build/ is never tracked); outside git, the same
# files found on disk.
c_files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -- '*.c' '*.h'
	else
		find . -path ./build -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
			sed 's|^\./||' | sort
	fi
}

if [ "${1:-}" = "format" ]; then
	c_files | xargs -r clang-format -i
	exit
fi

fail=0

echo "  LINT clang-format"
if ! c_files | xargs -r clang-format --dry-run --Werror; then
	echo "lint: clang-format: files differ from .clang-format (run make format)" >&2
	fail=1
fi

# cppcheck: errors, warnings, performance and portability (style is mostly
# noise on _cleanup_ variables). System headers are not parsed (too slow,
# and not ours), except protobuf-c's: the generated headers #error without
# its version macros, which would hide every file that includes them.
echo "  LINT cppcheck"
read -ra srcs <<<"${LINT_SRCS:?LINT_SRCS: the sources to analyse (run through make lint)}"
read -ra flags <<<"${LINT_CPPFLAGS:-}"
report=$(cppcheck -q -j"${LINT_JOBS:-2}" --std=c11 --library=posix --inline-suppr \
	--enable=warning,performance,portability \
	--include=/usr/include/protobuf-c/protobuf-c.h \
	--suppressions-list=.cppcheck-suppressions \
	--template='{file}:{line}: {severity}/{id}: {message}' \
	"${flags[@]}" "${srcs[@]}" 2>&1)

# Drops memleak/resourceLeak reports on a variable the reported function
# declares _cleanup_..._ (see .cppcheck-suppressions): the function starts
# at the last "{" in column 0 above the reported line.
cleanup_fp() { # FILE LINE VAR
	awk -v line="$2" -v var="$3" '
		NR > line { exit }
		/^\{/ { cleanup = 0 }
		/_cleanup_/ {
			decl = $0; sub(/;.*/, "", decl)
			# Not the arguments of a call: "x = f(a, fd)" declares no fd.
			while (gsub(/\([^()]*\)/, "", decl)) ;
			if (decl ~ ("[ *]" var "([ =,;[]|$)")) cleanup = 1
		}
		END { exit !cleanup }' "$1"
}
findings=0
while IFS= read -r l; do
	[ -n "$l" ] || continue
	if [[ $l =~ ^([^:]+):([0-9]+):\ error/(memleak|resourceLeak):\ .*:\ ([A-Za-z_][A-Za-z0-9_]*)$ ]] &&
		cleanup_fp "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[4]}"; then
		continue
	fi
	echo "$l"
	findings=$((findings + 1))
done <<<"$report"
if [ "$findings" -gt 0 ]; then
	echo "lint: cppcheck: $findings finding(s); fix them, or list a false positive in .cppcheck-suppressions with why" >&2
	fail=1
fi

echo "  LINT layers"
scripts/layers.sh || fail=1

echo "  LINT sizes"
scripts/sizes.sh || fail=1

exit $fail
