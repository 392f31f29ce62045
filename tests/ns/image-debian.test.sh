#!/usr/bin/env bash
# `kin image build --distribution debian` for real: a bookworm root with
# cron (debootstrap into the cache once, apt-get in a chroot), checked with
# debugfs: kin is /sbin/init, systemctl a link to it, cron's unit and its
# multi-user.target.wants link are there, policy-rc.d, the host's
# resolv.conf, apt's lists and dpkg's log are gone, machine-id is empty,
# root is locked, fstab names the label; a second build reuses the cached
# base and gives the same bytes; a package Debian does not have is named
# and leaves no image. Needs root and Debian's mirror; the first run spends
# about a minute in debootstrap (the base is then cached).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin image-debian
command -v debootstrap >/dev/null || ns_skip "no debootstrap (scripts/deps.sh installs it)"
command -v debugfs >/dev/null || ns_skip "no debugfs (e2fsprogs)"
# A base cache of the machine's own, unless one is given: reused across runs.
export KIN_DEBIAN_CACHE=${KIN_DEBIAN_CACHE:-/var/cache/kin/debian}
# kin in the image must be static; an ASan test build passes a static one.
SELF=${KIN_IMAGE_SELF:-$KIN}

build() {
	"$KIN" image build --format ext4 --distribution debian --release bookworm \
		--no-modules --self "$SELF" "$@" >"$T/out" 2>&1
}
dbg() { debugfs -R "$1" "$IMG" 2>/dev/null; }

IMG=$T/a.ext4
start=$(date +%s)
build --packages cron --hostname testhost -o "$IMG" ||
	{ bad build "kin image build failed"; ns_suite_end; exit; }
echo "    first build: $(($(date +%s) - start)) s"
ok build

# /sbin is /usr/sbin in the merged /usr; kin is the file there, byte for byte.
dbg "dump /usr/sbin/init $T/init" && cmp -s "$T/init" "$SELF" && ok init_is_kin ||
	bad init_is_kin "/usr/sbin/init is not $SELF"
dbg "stat /usr/sbin/init" | grep -q "Mode:  0755" && ok init_mode || bad init_mode "not 0755"
dbg "stat /usr/bin/systemctl" | grep -q 'Type: symlink' &&
	dbg "stat /usr/bin/systemctl" | grep -q 'Fast link dest: "/usr/sbin/init"' &&
	ok systemctl_link || bad systemctl_link "$(dbg 'stat /usr/bin/systemctl' | head -3)"
dbg "stat /usr/lib/systemd/system/cron.service" | grep -q 'Type: regular' &&
	ok cron_unit || bad cron_unit "no /usr/lib/systemd/system/cron.service"
dbg "stat /etc/systemd/system/multi-user.target.wants/cron.service" |
	grep -q 'Fast link dest: "/lib/systemd/system/cron.service"' &&
	ok cron_wants || bad cron_wants "no multi-user.target.wants/cron.service link"
gone=
for f in /usr/sbin/policy-rc.d /etc/resolv.conf /var/log/dpkg.log /var/log/apt/term.log \
	/var/cache/apt/pkgcache.bin /var/cache/ldconfig/aux-cache; do
	dbg "stat $f" | grep -q '^Inode:' && gone="$gone $f"
done
dbg "ls /var/lib/apt/lists" | grep -q 'Packages' && gone="$gone apt-lists"
[ -z "$gone" ] && ok leftovers_removed || bad leftovers_removed "still there:$gone"
dbg "stat /etc/machine-id" | grep -qE 'Type: regular.*' &&
	dbg "stat /etc/machine-id" | grep -q 'Size: 0$' && ok machine_id_empty ||
	bad machine_id_empty "$(dbg 'stat /etc/machine-id' | head -4)"
dbg "cat /etc/shadow" | grep -q '^root:\*:' && ok root_locked ||
	bad root_locked "$(dbg 'cat /etc/shadow' | grep '^root:')"
dbg "cat /etc/fstab" | grep -q '^LABEL=kin-root / ext4' && ok fstab || bad fstab "$(dbg 'cat /etc/fstab')"
[ "$(dbg 'cat /etc/hostname')" = testhost ] && ok hostname || bad hostname "$(dbg 'cat /etc/hostname')"
dumpe2fs -h "$IMG" 2>/dev/null | grep -q 'volume name: *kin-root' && ok label || bad label "no kin-root label"

# Again: the base comes from the cache (its line says so), and the same
# inputs give the same bytes.
start=$(date +%s)
build --packages cron --hostname testhost -o "$T/b.ext4" || bad second_build "failed"
secs=$(($(date +%s) - start))
echo "    second build: $secs s"
grep -q 'debian base: reusing' "$T/out" && ! grep -q 'debootstrap --variant' "$T/out" &&
	ok base_reused || bad base_reused "no 'reusing' line"
[ "$(sha256sum <"$IMG")" = "$(sha256sum <"$T/b.ext4")" ] && ok reproducible ||
	bad reproducible "two builds from one base differ"

# A package Debian does not have: named, exit 1, no image and no .tmp left.
build --packages cron,kin-no-such-package -o "$T/c.ext4"
rc=$?
[ $rc -eq 1 ] && grep -q 'Unable to locate package kin-no-such-package' "$T/out" &&
	[ ! -e "$T/c.ext4" ] && [ ! -e "$T/c.ext4.tmp" ] && ok missing_package ||
	bad missing_package "rc $rc"
# No build directory is left in the cache by any of these.
ls -d "$KIN_DEBIAN_CACHE"/build.* >/dev/null 2>&1 && bad no_scratch_left "$(ls -d "$KIN_DEBIAN_CACHE"/build.*)" ||
	ok no_scratch_left
# Not root: said before anything is fetched.
setpriv --reuid 65534 --regid 65534 --clear-groups "$KIN" image build --format ext4 \
	--distribution debian --release bookworm --no-modules -o "$T/d.ext4" >"$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q 'needs root' "$T/out" && ok not_root || bad not_root "rc $rc"
ns_suite_end
