#!/usr/bin/env bash
# Fetches the unit files of a few Debian packages for the unit test that
# reads real ones (tests/unit/test_units_config.c, units_debian): the .debs
# are downloaded with apt-get download (no install) and unpacked with
# dpkg-deb -x into one tree, whose lib/systemd/system the test walks.
#   scripts/debian-units.sh [DIR]     DIR defaults to build/debian-units
# Then: KIN_DEBIAN_UNITS=DIR build/unit-tests units_debian
set -euo pipefail

dir=${1:-build/debian-units}
PKGS=(
	openssh-server nginx-common cron rsyslog redis-server memcached
	postgresql-15 postgresql-common dbus dbus-daemon dbus-system-bus-common
)

mkdir -p "$dir/debs" "$dir/root"
dir=$(cd "$dir" && pwd)
cd "$dir/debs"
for p in "${PKGS[@]}"; do
	# A package missing from this release is skipped, not an error.
	if ! apt-cache show "$p" >/dev/null 2>&1; then
		echo "debian-units: $p: not in this release, skipped" >&2
		continue
	fi
	if ! ls "${p}"_*.deb >/dev/null 2>&1; then
		apt-get download -q -o APT::Sandbox::User="$(id -un)" "$p" >/dev/null
	fi
done
for deb in *.deb; do
	dpkg-deb -x "$deb" "$dir/root"
done
n=$(find "$dir/root" \( -name '*.service' -o -name '*.socket' -o -name '*.timer' \) | wc -l)
echo "debian-units: $n unit files below $dir/root"
