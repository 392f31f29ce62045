#!/usr/bin/env bash
# Benchmark: a stock Debian disk booted with kin as its init, next to the
# same packages booted by Debian's own systemd. Both disks come from `kin
# image build --distribution debian` on the same cached base with the same
# packages (those of tests/vm/debian.test.sh); the systemd one adds
# systemd-sysv and udev, and then the builder leaves Debian's /sbin/init in
# place. Both boot in the same VM (QEMU TCG, the same kernel, kin's
# initramfs switching root to the disk, 2 CPUs, 1536 MiB), a fresh copy of
# the disk each boot. Two probe units on both disks write to the console:
#   - "sshd": started with no dependencies, it polls 127.0.0.1:22 until sshd
#     answers with its banner — the time sshd first accepts;
#   - "ready": ordered After= every service the packages enable — the time
#     all of them are ready (started, notified, PID file written) — then,
#     5 s later, PID 1's VmRSS and MemTotal - MemAvailable.
# Times are from VMM start, seen by the host on the console file (QEMU's
# start, the firmware and the kernel's unpacking under TCG are in both),
# and from the guest kernel's start by its own uptime. Figures, not
# pass/fail. The disks are built once into /var/cache/kin/bench (minutes
# the first time; apt needs Debian's mirror).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
RUNS=${BENCH_DEBIAN_RUNS:-3}
command -v qemu-system-x86_64 >/dev/null || { echo "== debian: skipped (no qemu-system-x86_64)"; exit 0; }
command -v debugfs >/dev/null || { echo "== debian: skipped (no debugfs)"; exit 0; }
KERNEL=$("$KIN" image kernel 2>/dev/null | tail -1)
[ -f "$KERNEL" ] || { echo "== debian: skipped (no guest kernel)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-debian.XXXXXX)
trap 'rm -rf "$T"' EXIT

PKGS=openssh-server,nginx-light,cron,rsyslog,redis-server,memcached,postgresql,dbus,procps
SERVICES="ssh.service nginx.service cron.service rsyslog.service redis-server.service memcached.service postgresql.service postgresql@15-main.service dbus.socket"
CACHE=${KIN_BENCH_CACHE:-/var/cache/kin/bench}
mkdir -p "$CACHE"

A=$T/add
mkdir -p "$A/etc/systemd/system/multi-user.target.wants" "$A/usr/local/lib/kin-bench"
cat >"$A/usr/local/lib/kin-bench/sshd" <<'EOF'
#!/bin/bash
until (exec 3<>/dev/tcp/127.0.0.1/22 && read -t 2 -r l <&3 && [ "${l#SSH-}" != "$l" ]) 2>/dev/null; do
	sleep 0.05
done
read -r up _ </proc/uptime
echo "KIN-BENCH sshd $up" >/dev/console
EOF
cat >"$A/usr/local/lib/kin-bench/ready" <<'EOF'
#!/bin/bash
read -r up _ </proc/uptime
echo "KIN-BENCH ready $up" >/dev/console
sleep 5
rss=$(awk '/^VmRSS:/ {print $2}' /proc/1/status)
used=$(awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {print t-a}' /proc/meminfo)
echo "KIN-BENCH mem $rss $used $(cat /proc/1/comm)" >/dev/console
EOF
chmod 755 "$A/usr/local/lib/kin-bench/"*
printf '[Unit]\nDescription=bench probe: sshd accepting\nDefaultDependencies=no\n[Service]\nExecStart=/usr/local/lib/kin-bench/sshd\n[Install]\nWantedBy=multi-user.target\n' \
	>"$A/etc/systemd/system/kin-bench-sshd.service"
printf '[Unit]\nDescription=bench probe: every enabled service ready\nAfter=%s\n[Service]\nExecStart=/usr/local/lib/kin-bench/ready\n[Install]\nWantedBy=multi-user.target\n' \
	"$SERVICES" >"$A/etc/systemd/system/kin-bench-ready.service"
for u in kin-bench-sshd kin-bench-ready; do
	ln -s "/etc/systemd/system/$u.service" "$A/etc/systemd/system/multi-user.target.wants/$u.service"
done

# image VARIANT PACKAGES: the cached disk's path on stdout, built if missing.
image() {
	local key img
	key=$( (cat rootfs/*.c; echo "$2"; find "$A" -type f | sort | xargs cat) | sha256sum | cut -c1-16)
	img=$CACHE/$1-$key.ext4
	if [ ! -f "$img" ]; then
		rm -f "$CACHE/$1"-*.ext4
		echo "  building the $1 disk (once; cached in $CACHE)" >&2
		"$KIN" image build --format ext4 --distribution debian --release bookworm --packages "$2" \
			--size 2G --add "$A/etc:/etc" --add "$A/usr/local:/usr/local" -o "$img.tmp" \
			>"$T/build-$1.log" 2>&1 && mv "$img.tmp" "$img" ||
			{ tail -20 "$T/build-$1.log" >&2; return 1; }
	fi
	echo "$img"
}
KIN_IMG=$(image kin "$PKGS") || { echo "== debian: skipped (the kin disk did not build)"; exit 0; }
SD_IMG=$(image systemd "$PKGS,systemd-sysv,udev") || { echo "== debian: skipped (the systemd disk did not build)"; exit 0; }
"$KIN" image build -o "$T/initrd.cpio" >/dev/null 2>&1

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# boot VARIANT IMAGE: one boot; appends "sshd_ms ready_ms rss_kb used_kb
# sshd_uptime_ms ready_uptime_ms" to $T/VARIANT.
boot() {
	local v=$1 st=$T/state-$1 con t0 pid sshd="" ready="" mem="" up
	rm -rf "$st"
	cp --sparse=always "$2" "$T/root.ext4"
	if [ "$v" = kin ]; then # this build's kin as the disk's init
		debugfs -w -R "rm /usr/sbin/init" "$T/root.ext4" >/dev/null 2>&1
		printf 'write %s /usr/sbin/init\nsif /usr/sbin/init mode 0100755\n' "$KIN" |
			debugfs -w -f - "$T/root.ext4" >/dev/null 2>&1
	fi
	con=$st/b/console.log
	t0=$(date +%s%N)
	"$KIN" vm run --quiet --kernel "$KERNEL" --image "$T/initrd.cpio" --disk "$T/root.ext4" \
		--cpus 2 --memory 1536 --state-dir "$st" --name b --timeout 400s --stop-timeout 2s \
		>"$T/run-$v.log" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null && [ -z "$mem" ]; do
		[ -z "$sshd" ] && grep -q "KIN-BENCH sshd" "$con" 2>/dev/null && sshd=$(ms_since "$t0")
		[ -z "$ready" ] && grep -q "KIN-BENCH ready" "$con" 2>/dev/null && ready=$(ms_since "$t0")
		[ -n "$ready" ] && mem=$(sed -n 's/.*KIN-BENCH mem \([0-9]*\) \([0-9]*\) .*/\1 \2/p' "$con" 2>/dev/null)
		sleep 0.01
	done
	kill -TERM $pid 2>/dev/null
	wait $pid 2>/dev/null || true
	if [ -z "$mem" ]; then
		echo "  $v: no figures from this boot (console tail:)" >&2
		tail -n 5 "$con" >&2 2>/dev/null
		return 1
	fi
	# The guest's own clock: uptime, from the kernel's start.
	up=$(sed -n 's/.*KIN-BENCH \(sshd\|ready\) \([0-9.]*\).*/\2/p' "$con" | awk '{printf "%d ", $1 * 1000}')
	echo "$sshd $ready $mem $up" >>"$T/$v"
}
for i in $(seq "$RUNS"); do
	boot kin "$KIN_IMG" || true
	boot systemd "$SD_IMG" || true
done
[ -s "$T/kin" ] && [ -s "$T/systemd" ] || { echo "== debian: failed (a variant gave no figures)"; exit 1; }
col() { awk -v c="$1" '{print $c}' "$T/$2" | median; }
printf '== debian: bookworm disk (%s), QEMU TCG 2 CPUs 1536 MiB, %d boots each (median)\n' \
	"${PKGS//,/ }" "$RUNS"
printf '  %-44s %10s %10s %7s\n' "" kin systemd ratio
row() {
	local k s
	k=$(col "$2" kin) s=$(col "$2" systemd)
	printf '  %-44s %7s %s %7s %s %7s\n' "$1" "$k" "$3" "$s" "$3" \
		"$(awk -v k="$k" -v s="$s" 'BEGIN{printf "%.2f", k/s}')"
}
row "VMM start -> sshd accepting" 1 ms
row "VMM start -> every enabled service ready" 2 ms
row "  in the guest: kernel start -> sshd" 5 ms
row "  in the guest: kernel start -> every ready" 6 ms
row "PID 1 RSS (5 s after ready)" 3 KiB
row "memory in use, MemTotal-MemAvailable" 4 KiB
echo "  goal: kin <= 0.50x systemd's time to sshd accepting, <= 0.10x its PID 1 RSS"
