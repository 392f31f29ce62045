#!/usr/bin/env bash
# The size check (DESIGN.md, "Habits"): files a newcomer reads in one
# sitting, functions that do one thing. make lint fails on a module's .c
# file over FILE_MAX lines or a function over FUNC_MAX lines.
#   scripts/sizes.sh [ROOT]   check the modules' .c files under ROOT (default:
#                             the repo); one line per finding, exit 1
#   scripts/sizes.sh --test   the test layer of make check: the real tree
#                             passes, and a long function and a long file
#                             injected into a copy are caught and named
# A function is what starts at a line in column 0 that ends its
# declarator with ")" (the next line "{") and ends at the next "}" in
# column 0: the layout clang-format gives every function here.
set -uo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
FILE_MAX=${FILE_MAX:-900}
FUNC_MAX=${FUNC_MAX:-100}
MODULES=(init api shim ctl zone units cells net vm rootfs oci auth tls rpc keep proto lib)

check() {
	local root=$1 m dirs=()
	for m in "${MODULES[@]}"; do [ -d "$root/$m" ] && dirs+=("$m"); done
	[ ${#dirs[@]} -gt 0 ] || return 0
	(cd "$root" && find "${dirs[@]}" -maxdepth 1 -type f -name '*.c' -print0 |
		sort -z | xargs -0r awk -v file_max="$FILE_MAX" -v func_max="$FUNC_MAX" '
		FNR == 1 { if (prev != "" && lines > file_max) too_long(prev, lines); start = 0 }
		{ prev = FILENAME; lines = FNR }
		function too_long(f, n) {
			printf "%s: %d lines (at most %d: split it by topic)\n", f, n, file_max
			bad = 1
		}
		# the line before "{" in column 0 ends a declarator: the name is
		# the last identifier before "(" on the first line of it
		/^\{/ && decl != "" { start = decl_line; name = decl_name }
		/^\}/ && start {
			n = FNR - start + 1
			if (n > func_max) {
				printf "%s:%d: %s is %d lines (at most %d)\n", FILENAME, start, name, n, func_max
				bad = 1
			}
			start = 0
		}
		/^[A-Za-z_]/ && /\(/ && !/;[[:space:]]*$/ {
			decl = $0; decl_line = FNR
			s = $0; sub(/\(.*/, "", s); k = split(s, w, /[^A-Za-z0-9_]+/)
			decl_name = w[k]
			next
		}
		!/^\{/ && !/^[[:space:]]/ && !/^$/ { decl = "" }
		END {
			if (lines > file_max) too_long(prev, lines)
			exit bad
		}')
}

# shellcheck source=scripts/check-main.sh
. "$(dirname "$SELF")/check-main.sh"

selftest() {
	local repo=$1 tmp out f n
	tmp=$(mktemp -d /tmp/kin-sizes.XXXXXX)
	mkdir -p "$tmp/lib"
	f=lib/injected.c
	{
		echo "int injected_long(int x)"
		echo "{"
		for n in $(seq $((FUNC_MAX - 3))); do echo "	x += $n;"; done
		echo "	return x;"
		echo "}"
	} >"$tmp/$f"
	out=$("$SELF" "$tmp" 2>&1)
	if [ $? -ne 0 ] && grep -qF "$f:1: injected_long is $((FUNC_MAX + 1)) lines (at most $FUNC_MAX)" <<<"$out"; then
		ok "sizes: a function of $((FUNC_MAX + 1)) lines is caught"
	else
		ko "sizes: a long function not reported: ${out:-no output}"
	fi
	{
		echo "int injected_short(int x)"
		echo "{"
		for n in $(seq $((FUNC_MAX - 4))); do echo "	x += $n;"; done
		echo "	return x;"
		echo "}"
	} >"$tmp/$f"
	if out=$("$SELF" "$tmp" 2>&1); then
		ok "sizes: a function of $FUNC_MAX lines passes"
	else
		ko "sizes: a function of $FUNC_MAX lines reported: $out"
	fi
	for n in $(seq "$FILE_MAX"); do echo "/* $n */"; done >"$tmp/$f"
	out=$("$SELF" "$tmp" 2>&1)
	if [ $? -ne 0 ] && grep -qF "$f: $FILE_MAX lines" <<<"$out"; then
		ko "sizes: a file of $FILE_MAX lines reported"
	else
		echo "/* one more */" >>"$tmp/$f"
		out=$("$SELF" "$tmp" 2>&1)
		if [ $? -ne 0 ] && grep -qF "$f: $((FILE_MAX + 1)) lines" <<<"$out"; then
			ok "sizes: a file of $((FILE_MAX + 1)) lines is caught"
		else
			ko "sizes: a long file not reported: ${out:-no output}"
		fi
	fi
	rm -rf "$tmp"
}

check_main sizes "no file over $FILE_MAX lines, no function over $FUNC_MAX" "files or functions over the limits (DESIGN.md: \"Habits\")" "$@"
