#!/usr/bin/env bash
# Installs what building and testing kin needs, from Debian's archive, when
# it is missing. Safe to run again: a machine that has everything is left
# alone (one dpkg query, no network).
set -euo pipefail

PKGS=(
	make gcc libc6-dev clang libclang-rt-14-dev   # build, sanitizers, libFuzzer
	lld                                           # links build/kin in init/kin.order
	clang-format cppcheck                         # make lint
	util-linux procps iproute2                    # unshare, ps, ip for the tests
	qemu-system-x86 busybox-static               # guests (TCG) and the trivial-init peer
	libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev libblkid-dev
	libprotobuf-c-dev protobuf-c-compiler         # RPC messages
	golang-go golang-github-containerd-ttrpc-dev  # the Go ttrpc peer
	tini                                          # the benchmark's peer
	crun                                          # the cells benchmark's peer (run in a guest)
	busybox-static                                # a static rootfs for the cells pivot_root test
	kmod e2fsprogs cpio                           # kin image: depmod, mke2fs -d/debugfs, cpio -t in tests
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
