# Shared by every test, bench and demo script (sourced through tests/ns/lib.sh
# and tests/vm/lib.sh, or directly).

# cgroup2_mount: prints where the cgroup2 hierarchy is mounted (from
# /proc/self/mountinfo, never assumed: /sys/fs/cgroup/unified on a hybrid
# host, /sys/fs/cgroup in a guest), or nothing.
cgroup2_mount() {
	awk '{for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break }}' /proc/self/mountinfo
}
