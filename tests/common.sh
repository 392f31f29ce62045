# Shared by every test, bench and demo script (sourced through tests/ns/lib.sh
# and tests/vm/lib.sh, or directly).

# cgroup2_mount: prints where the cgroup2 hierarchy is mounted (from
# /proc/self/mountinfo, never assumed: /sys/fs/cgroup/unified on a hybrid
# host, /sys/fs/cgroup in a guest), or nothing.
cgroup2_mount() {
	awk '{for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break }}' /proc/self/mountinfo
}

# wait_for COND_CMD [TRIES]: polls a condition every 20 ms (behaviour, not timing).
wait_for() {
	local tries=${2:-500}
	for _ in $(seq "$tries"); do
		eval "$1" && return 0
		sleep 0.02
	done
	return 1
}

# cgroup_tree_remove DIR: kills what is left below DIR (cgroup.kill is
# recursive), then removes the cgroups bottom-up, for at most 5 s.
cgroup_tree_remove() {
	[ -d "$1" ] || return 0
	for k in $(find "$1" -name cgroup.kill 2>/dev/null); do echo 1 >"$k" 2>/dev/null; done
	for _ in $(seq 50); do
		find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
		[ -d "$1" ] || return 0
		sleep 0.1
	done
}

# busybox_layer DIR APPLET...: a minimal image root for containerd's tests
# (busybox-static, the applets as links, root in passwd and group), for
# tests/oci/mkimage.py to pack.
busybox_layer() {
	local l=$1
	shift
	mkdir -p "$l/bin" "$l/etc" "$l/tmp" "$l/proc" "$l/sys" "$l/dev"
	cp /bin/busybox "$l/bin/busybox"
	for c in "$@"; do ln -s busybox "$l/bin/$c"; done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$l/etc/passwd"
	printf 'root:x:0:\n' >"$l/etc/group"
}

# euid_binary FILE: a static setuid-root program at FILE printing its
# effective uid (busybox drops setuid for its applets; images here have no
# libc).
euid_binary() {
	printf '#include <stdio.h>\n#include <unistd.h>\nint main(void) { printf("%%u\\n", geteuid()); return 0; }\n' |
		cc -static -x c -o "$1" - && chmod 4755 "$1"
}

# kin_fds PID: a kin's fds, "number what" a line, its own memfds left out
# (the binary's sealed copy, which a re-exec'd kin lets go of a while
# later, and log rings).
kin_fds() { find "/proc/$1/fd" -mindepth 1 ! -lname "/memfd:kin*" -printf '%f %l\n' | sort -n; }
