#!/usr/bin/env bash
# Prints the table of systemd's system call groups (SystemCallFilter=@NAME)
# for units/syscalls.c, from this machine's `systemd-analyze syscall-filter`
# (Debian bookworm's systemd 252 made the committed one): one C string per
# group, its members space-separated, nested groups by their @name. @known
# (every call systemd knows) is left out.
#   scripts/syscall-groups.sh   then paste its rows between the markers and make format
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "syscall-groups: needs systemd-analyze" >&2; exit 1; }
systemd-analyze --no-pager syscall-filter | awk '
	/^@/ { if (name != "") flush(); name = $1; members = ""; next }
	/^ *#/ || /^ *$/ { next }
	{ gsub(/^ +/, ""); members = members (members == "" ? "" : " ") $0 }
	function flush() { if (name != "@known") printf "    {\"%s\", \"%s\"},\n", name, members }
	END { flush() }'
