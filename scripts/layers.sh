#!/usr/bin/env bash
# The layer check: every `#include "X/..."` in a module's .c/.h must name the
# module itself or one the dependency rule below lets it use (README:
# "Layout"). tests/ may include anything and is not read.
#   scripts/layers.sh [ROOT]   check the tree at ROOT (default: the repo);
#                              one line per violation (file:line: rule), exit 1
#   scripts/layers.sh --test   the test layer of make check: the real tree
#                              passes, and an injected upward include in a
#                              copy of it is caught and named
set -uo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

MODULES=(init api ctl zone rpc cells vm net rootfs oci shim auth tls units proto lib)
declare -A ALLOW=(
	[init]="api ctl rpc proto zone cells vm net rootfs oci shim auth tls units lib"
	[api]="rpc proto zone cells vm net rootfs oci shim units lib"
	[ctl]="rpc proto tls vm lib"
	[zone]="cells net lib"
	[rpc]="proto lib"
	[cells]="lib"
	[vm]="lib"
	[net]="lib"
	[rootfs]="lib"
	[oci]="lib"
	[shim]="rpc proto oci vm lib"
	[auth]="lib"
	[tls]="lib"
	[units]="cells lib"
	[proto]=""
	[lib]="lib"
)

# check ROOT: prints "FILE:LINE: M may not include "X/..." (rule: M -> {...})"
# for each quoted include against the rule; angle includes (<net/if.h>) are
# the system's. One awk over every include line keeps it well under a second.
check() {
	local root=$1 m rules=
	for m in "${MODULES[@]}"; do rules+="$m=${ALLOW[$m]};"; done
	(cd "$root" && find "${MODULES[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null |
		sort -z | xargs -0r grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/') |
		awk -v rules="$rules" '
		BEGIN {
			n = split(rules, r, ";")
			for (i = 1; i <= n; i++) {
				if (r[i] == "") continue
				split(r[i], kv, "=")
				mod[kv[1]] = 1; allow[kv[1]] = kv[2]
			}
		}
		{
			# FILE:LINE:#include "X/rest"
			file = $0; sub(/:.*/, "", file)
			line = $0; sub(/^[^:]*:/, "", line); sub(/:.*/, "", line)
			target = $0; sub(/^[^"]*"/, "", target); sub(/".*/, "", target)
			m = file; sub(/\/.*/, "", m)
			x = target; sub(/\/.*/, "", x)
			if (x == ".." || x == ".") {
				printf "%s:%s: %s may not include \"%s\": a relative path hides the module (write \"X/...\")\n", file, line, m, target
				bad = 1; next
			}
			if (!(x in mod)) {
				printf "%s:%s: %s includes \"%s\": %s is not a module\n", file, line, m, target, x
				bad = 1; next
			}
			if (x == m || index(" " allow[m] " ", " " x " ")) next
			rule = allow[m]; gsub(/ /, ", ", rule)
			printf "%s:%s: %s may not include \"%s\" (rule: %s -> {%s})\n", file, line, m, target, m, rule
			bad = 1
		}
		END { exit bad }'
}

pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
ko() { echo "FAIL $1"; fail=$((fail + 1)); }

# Per module with forbidden neighbours, two injections into a fresh copy of
# the module sources: the highest module it may not use (upward) and the
# lowest (sideways), `#include "X/injected.h"` appended to its first file.
# The check, run as the command make lint runs, must fail and name that
# file, its line and the rule.
inject() {
	local repo=$1 tmp=$2 m=$3 x=$4 f=$5 n out rc d
	rm -rf "${tmp:?}"/*
	for d in "${MODULES[@]}"; do
		[ -d "$repo/$d" ] && cp -r "$repo/$d" "$tmp/"
	done
	echo "#include \"$x/injected.h\"" >>"$tmp/$f"
	n=$(wc -l <"$tmp/$f")
	out=$("$SELF" "$tmp" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && grep -qF "$f:$n: $m may not include \"$x/injected.h\" (rule: $m -> {" <<<"$out"; then
		ok "layers: $m including $x/ is caught ($f:$n)"
	else
		ko "layers: $m including $x/ at $f:$n not reported (exit $rc): ${out:-no output}"
	fi
}

selftest() {
	local repo=$1 tmp m f cand forbidden
	tmp=$(mktemp -d /tmp/kin-layers.XXXXXX)
	for m in "${MODULES[@]}"; do
		f=$(cd "$repo" && find "$m" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort | head -1)
		[ -n "$f" ] || continue
		forbidden=()
		for cand in "${MODULES[@]}"; do
			[ "$cand" = "$m" ] && continue
			[[ " ${ALLOW[$m]} " == *" $cand "* ]] && continue
			forbidden+=("$cand")
		done
		[ ${#forbidden[@]} -gt 0 ] || continue
		inject "$repo" "$tmp" "$m" "${forbidden[0]}" "$f"
		[ ${#forbidden[@]} -gt 1 ] && inject "$repo" "$tmp" "$m" "${forbidden[-1]}" "$f"
	done
	rm -rf "$tmp"
}

if [ "${1:-}" = "--test" ]; then
	repo=$(cd "$(dirname "$0")/.." && pwd)
	if out=$(check "$repo"); then
		ok "layers: every module's includes follow the rule"
	else
		ko "layers: the tree breaks the rule:"
		printf '%s\n' "$out"
	fi
	selftest "$repo"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if ! check "$root"; then
	echo "layers: includes against the dependency rule (README: \"Layout\")" >&2
	exit 1
fi
