#!/usr/bin/env bash
# A stock Debian root booted with kin as its init: `kin image build
# --distribution debian` with openssh-server, nginx, cron, rsyslog,
# redis-server, memcached, postgresql and dbus (the image cached between
# runs, keyed by the package list and the builder's sources; this build's
# kin written into a copy), booted under QEMU by a host kin (kin's
# initramfs switches to the disk, whose /sbin/init is kin). Checked over
# RPC through the host: every enabled unit active, each service doing its
# job from inside the guest (sshd takes a key login, nginx serves a page,
# redis answers PING, memcached its version, psql runs select 1, logger
# reaches /var/log/syslog through rsyslog's socket, dbus-send --system
# works through dbus.socket, a cron job runs), each service in its own
# cell, a SIGKILLed service restarted per its Restart=, a failing unit
# shown failed with its status, the guest's kin re-executed in place with
# every service keeping its main pid, a package installed with apt-get on
# the running guest started by its own maintainer scripts through kin as
# systemctl, and a clean poweroff that leaves the ext4 clean (no journal
# to replay on the next boot), a swap file in use until then.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin debian
command -v debugfs >/dev/null || { echo "SKIP vm/debian: no debugfs (e2fsprogs)"; echo "0 passed, 0 failed"; exit 0; }

PKGS=openssh-server,nginx-light,cron,rsyslog,redis-server,memcached,postgresql,dbus,procps
CACHE=${KIN_TEST_CACHE:-/var/cache/kin/test}
mkdir -p "$CACHE"
# A unit that fails (its status and last lines are checked) and a cron job.
mkdir -p "$T/add/etc/systemd/system/multi-user.target.wants" "$T/add/etc/cron.d"
cat >"$T/add/etc/systemd/system/kin-fails.service" <<'EOF'
[Unit]
Description=a unit that fails on purpose
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo kin-fails: about to fail >&2; exit 7'
[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/kin-fails.service "$T/add/etc/systemd/system/multi-user.target.wants/kin-fails.service"
echo '* * * * * root date >/tmp/cron-ran' >"$T/add/etc/cron.d/kin-test"
# A swap file turned on at boot, as hosts have: kin must swapoff it at the
# poweroff, or / stays busy and is not remounted read-only (the ext4 check).
cat >"$T/add/etc/systemd/system/kin-swap.service" <<'EOF'
[Unit]
Description=a swap file in use until the poweroff
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'dd if=/dev/zero of=/swapfile bs=1M count=16 2>/dev/null && chmod 600 /swapfile && mkswap /swapfile >/dev/null && swapon /swapfile'
[Install]
WantedBy=multi-user.target
EOF
ln -s /etc/systemd/system/kin-swap.service "$T/add/etc/systemd/system/multi-user.target.wants/kin-swap.service"
KEY=$( (cat rootfs/*.c; echo "$PKGS"; find "$T/add" -type f | sort | xargs cat) | sha256sum | cut -c1-16)
IMG=$CACHE/debian-$KEY.ext4
if [ ! -f "$IMG" ]; then
	rm -f "$CACHE"/debian-*.ext4
	"$KIN" image build --format ext4 --distribution debian --release bookworm --packages "$PKGS" \
		--size 2G --add "$T/add/etc:/etc" -o "$IMG.tmp" >"$T/build.log" 2>&1 && mv "$IMG.tmp" "$IMG" ||
		{ bad image_build "kin image build --distribution debian failed" "$T/build.log"; vm_suite_end; exit; }
fi
ok image_build
# This build's kin as the disk's /sbin/init (the cached image may hold an older one).
cp --sparse=always "$IMG" "$T/root.ext4"
debugfs -w -R "rm /usr/sbin/init" "$T/root.ext4" >/dev/null 2>&1
debugfs -w -f - "$T/root.ext4" >"$T/debugfs.log" 2>&1 <<EOF
write $KIN /usr/sbin/init
sif /usr/sbin/init mode 0100755
EOF
debugfs -R "stat /usr/sbin/init" "$T/root.ext4" 2>/dev/null | grep -q "Size: $(stat -c %s "$KIN")" && ok kin_on_disk ||
	{ bad kin_on_disk "debugfs did not write kin" "$T/debugfs.log"; vm_suite_end; exit; }
# A service package to install on the running guest (no network there):
# its unit and the maintainer scripts dh_installsystemd writes, so the
# install goes deb-systemd-helper → deb-systemd-invoke → kin as systemctl.
P=$T/pkg
mkdir -p "$P/DEBIAN" "$P/lib/systemd/system"
printf 'Package: kin-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: kin tests <kin@localhost>\nDescription: a service installed on a running kin host\n' >"$P/DEBIAN/control"
printf '[Unit]\nDescription=installed by apt on a running kin host\n[Service]\nExecStart=/bin/sh -c "echo kin-hello up; exec sleep infinity"\n[Install]\nWantedBy=multi-user.target\n' >"$P/lib/systemd/system/kin-hello.service"
cat >"$P/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = "configure" ]; then
	deb-systemd-helper unmask 'kin-hello.service' >/dev/null || true
	if deb-systemd-helper --quiet was-enabled 'kin-hello.service'; then
		deb-systemd-helper enable 'kin-hello.service' >/dev/null || true
	else
		deb-systemd-helper update-state 'kin-hello.service' >/dev/null || true
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		deb-systemd-invoke start 'kin-hello.service' >/dev/null || true
	fi
fi
EOF
chmod 755 "$P/DEBIAN/postinst"
dpkg-deb --root-owner-group --build "$P" "$T/kin-hello.deb" >/dev/null 2>&1 &&
	debugfs -w -R "write $T/kin-hello.deb /root/kin-hello.deb" "$T/root.ext4" >/dev/null 2>&1 ||
	bad package_build "dpkg-deb or debugfs failed"
"$KIN" image build -o "$T/initrd.cpio" >>"$T/build.log" 2>&1 || { bad initrd "kin image build failed" "$T/build.log"; vm_suite_end; exit; }

S=$T/host.sock
C() { "$KIN" ctl --socket "$S" "$@"; }
G() { "$KIN" ctl --socket "$S" --target vm/deb "$@"; }
host_kin_start debian
# `ro`, as Debian's bootloaders pass it: the root is fsck'ed read-only,
# then remounted read-write per fstab.
C vm start deb --kernel "$KERNEL" --image "$T/initrd.cpio" --disk "$T/root.ext4" --cpus 2 --memory 1536 --append ro \
	>"$T/out" 2>&1 || { bad vm_start "$(cat "$T/out")" "$T/host.log"; vm_suite_end; exit; }
CON=$T/vm/deb/console.log
wait_for "G health 2>/dev/null | grep -q SERVING" 9000 && ok guest_ready ||
	{ bad guest_ready "the guest's kin never answered" "$CON"; vm_suite_end; exit; }

# gx NAME CMD...: runs CMD in the guest (cell t), prints its output; $? its status.
G cell create t >/dev/null 2>&1
gx() {
	local n=$1; shift
	G exec start t "$n" -- "$@" >/dev/null 2>&1 || return 125
	local rc
	G exec wait t "$n" >/dev/null 2>&1; rc=$?
	G exec logs t "$n" 2>&1
	return $rc
}
ENABLED="ssh.service nginx.service cron.service rsyslog.service redis-server.service memcached.service postgresql.service"
all_active() {
	local s
	for s in $ENABLED; do G service status "$s" 2>/dev/null | grep -q 'Active: active' || return 1; done
}
wait_for all_active 9000 && ok enabled_units_active || bad enabled_units_active "$(G service list --all 2>&1 | head -60)" "$CON"
out=$(G service status ssh.service 2>&1)
echo "$out" | grep -q 'CGroup: /system.slice/ssh.service' && ok own_cell || bad own_cell "$out"

key=$(gx sshkey sh -c 'rm -f /root/k /root/k.pub; ssh-keygen -q -t ed25519 -N "" -f /root/k && mkdir -p /root/.ssh && cat /root/k.pub >>/root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys; ssh -i /root/k -o StrictHostKeyChecking=no -o BatchMode=yes root@127.0.0.1 echo ssh-login-ok')
echo "$key" | grep -q ssh-login-ok && ok sshd_key_login || bad sshd_key_login "$key"
out=$(gx web bash -c 'exec 3<>/dev/tcp/127.0.0.1/80; printf "GET / HTTP/1.0\r\n\r\n" >&3; head -1 <&3')
echo "$out" | grep -q '200 OK' && ok nginx_serves || bad nginx_serves "$out"
out=$(gx redis redis-cli ping)
[ "$(echo "$out" | tr -d '\r')" = PONG ] && ok redis_ping || bad redis_ping "$out"
out=$(gx memc bash -c 'exec 3<>/dev/tcp/127.0.0.1/11211; printf "version\r\n" >&3; head -1 <&3')
echo "$out" | grep -q VERSION && ok memcached_answers || bad memcached_answers "$out"
out=$(gx psql runuser -u postgres -- psql -tAc 'select 1')
[ "$(echo "$out" | tr -d '\r ')" = 1 ] && ok psql_select_1 || bad psql_select_1 "$out"
out=$(gx log sh -c 'logger -t kintest hello-from-kin-test; sleep 1; grep -c hello-from-kin-test /var/log/syslog')
[ "$(echo "$out" | tail -1)" -ge 1 ] 2>/dev/null && ok logger_reaches_syslog || bad logger_reaches_syslog "$out"
out=$(gx dbus dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ListNames)
echo "$out" | grep -q 'org.freedesktop.DBus' && ok dbus_socket_activated || bad dbus_socket_activated "$out"
cron_ran=
for i in $(seq 40); do # a minute's boundary, and some
	gx cron$i test -s /tmp/cron-ran >/dev/null 2>&1 && cron_ran=1 && break
	sleep 2
done
[ -n "$cron_ran" ] && ok cron_job_ran || bad cron_job_ran "no /tmp/cron-ran after 80 s"

out=$(gx rootrw sh -c 'grep " / " /proc/mounts; touch /kin-rw && echo root-writable')
echo "$out" | grep -q root-writable && ok root_fsck_then_rw || bad root_fsck_then_rw "$out"
out=$(gx swaps cat /proc/swaps)
echo "$out" | grep -q '^/swapfile ' && ok swap_file_on || bad swap_file_on "$out"
out=$(gx seed stat -c %s /var/lib/kin/random-seed)
[ "$(echo "$out" | tail -1)" = 512 ] && ok random_seed_saved || bad random_seed_saved "$out"

# `systemctl restart ssh` in the guest (kin as systemctl) keeps an open
# session: KillMode=process stops sshd's listener, not its sessions.
G exec start t sess -- ssh -i /root/k -o StrictHostKeyChecking=no -o BatchMode=yes root@127.0.0.1 \
	'echo session-up; exec sleep 600' >/dev/null 2>&1
wait_for "G exec logs t sess 2>/dev/null | grep -q session-up" 1500
old_sshd=$(G service status ssh.service 2>/dev/null | sed -n 's/.*Main PID: \([0-9]*\).*/\1/p')
out=$(gx restart systemctl restart ssh 2>&1); rc=$?
new_sshd=$(G service status ssh.service 2>/dev/null | sed -n 's/.*Main PID: \([0-9]*\).*/\1/p')
sess=$(G exec status t sess 2>&1)
[ $rc -eq 0 ] && [ -n "$new_sshd" ] && [ "$new_sshd" != "$old_sshd" ] && echo "$sess" | grep -q 'state: *running' &&
	ok ssh_restart_keeps_session || bad ssh_restart_keeps_session "rc $rc $out; sshd $old_sshd -> $new_sshd; $sess"
G exec signal t sess KILL >/dev/null 2>&1

# The guest's kin re-executes itself (machine role: the only upgrade
# without a reboot): every service keeps its main pid, its state and its
# work; what follows (apt-get, a restart after SIGKILL, the poweroff) runs
# on the new kin.
mains() { for s in $ENABLED; do G service status "$s" 2>/dev/null | sed -n "s/.*Main PID: \([0-9]*\).*/$s=\1/p"; done | tr '\n' ' '; }
before=$(mains)
out=$(G reexec 2>&1); rc=$?
wait_for "G health 2>/dev/null | grep -q SERVING" 3000
after=$(mains)
[ $rc -eq 0 ] && [ "$before" = "$after" ] && all_active && grep -q 're-exec: [0-9]* units taken back' "$CON" &&
	ok machine_reexec_keeps_services || bad machine_reexec_keeps_services "rc $rc: $out; before $before; after $after" "$CON"
out=$(gx redis2 redis-cli ping)
out2=$(gx web2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/80; printf "GET / HTTP/1.0\r\n\r\n" >&3; head -1 <&3')
[ "$(echo "$out" | tr -d '\r')" = PONG ] && echo "$out2" | grep -q '200 OK' && ok services_answer_after_reexec ||
	bad services_answer_after_reexec "$out / $out2"

# apt-get install of a service package on the running guest: the package's
# own scripts enable and start it, through kin as systemctl.
out=$(gx apt apt-get install -y /root/kin-hello.deb 2>&1)
st=$(G service status kin-hello.service 2>&1)
echo "$st" | grep -q 'Active: active (running)' && echo "$st" | grep -q 'CGroup: /system.slice/kin-hello.service' &&
	echo "$st" | grep -q '; enabled' && ok apt_install_runs_under_kin ||
	bad apt_install_runs_under_kin "$(echo "$out" | tail -5) / $st"

# A service SIGKILLed comes back (redis-server: Restart=always).
pid=$(G service status redis-server.service 2>/dev/null | sed -n 's/.*Main PID: \([0-9]*\).*/\1/p')
gx kill kill -KILL "$pid" >/dev/null
wait_for "G service status redis-server.service 2>/dev/null | grep -q 'Active: active' && ! G service status redis-server.service 2>/dev/null | grep -q 'Main PID: $pid\b'" 1500 &&
	ok restart_after_sigkill || bad restart_after_sigkill "$(G service status redis-server.service 2>&1)"
out=$(G service status kin-fails.service 2>&1)
echo "$out" | grep -q 'Active: failed' && echo "$out" | grep -q 'about to fail' && ok failed_unit_reported ||
	bad failed_unit_reported "$out"

out=$(C vm stop deb 2>&1)
grep -q "reboot: Power down" "$CON" && ok clean_poweroff || bad clean_poweroff "$out" "$CON"
# The disk as the next boot finds it: unmounted cleanly, no journal to replay.
fs=$(dumpe2fs -h "$T/root.ext4" 2>/dev/null)
echo "$fs" | grep -q '^Filesystem state: *clean$' && ! echo "$fs" | grep -q needs_recovery &&
	ok ext4_clean_after_poweroff || bad ext4_clean_after_poweroff "$(echo "$fs" | grep -E 'state|features')"
vm_suite_end
