#!/usr/bin/env bash
# Installs what building and testing kin needs, from Debian's archive, when
# it is missing. Safe to run again: a machine that has everything is left
# alone (one dpkg query, no network).
#   scripts/deps.sh build   what `make` needs to build build/kin
#   scripts/deps.sh lint    that and what `make lint` runs
#   scripts/deps.sh [all]   everything: make check, bench, demo, lint
set -euo pipefail

BUILD_PKGS=(
	make gcc libc6-dev                            # the compiler
	lld                                           # links build/kin in init/kin.order
	libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev libblkid-dev
	libprotobuf-c-dev protobuf-c-compiler         # RPC messages
	libjansson-dev zlib1g-dev libzstd-dev         # oci/: JSON, gzip and zstd layers
	libssl-dev                                    # tls/: the TLS gateway and kin ctl over TLS (static)
)
LINT_PKGS=(
	clang-format cppcheck                         # make lint
)
TEST_PKGS=(
	clang libclang-rt-14-dev                      # sanitizers, libFuzzer
	util-linux procps iproute2                    # unshare, ps, ip for the tests
	qemu-system-x86 busybox-static               # guests (TCG) and the trivial-init peer
	golang-go golang-github-containerd-ttrpc-dev  # the Go ttrpc peer
	tini                                          # the benchmark's peer
	crun                                          # the cells benchmark's peer (run in a guest)
	busybox-static                                # a static rootfs for the cells pivot_root test
	skopeo umoci runc containerd                  # OCI peers: image transports, unpack bench, runtime specs (ctr)
	python3-grpcio python3-grpc-tools             # the CRI client of the shim tests
	containernetworking-plugins                   # CNI for CRI pods (bridge, host-local)
	kmod e2fsprogs cpio                           # kin image: depmod, mke2fs -d/debugfs, cpio -t in tests
	debootstrap                                   # kin image build --distribution debian
)

group=${1:-all}
case $group in
build) PKGS=("${BUILD_PKGS[@]}") ;;
lint) PKGS=("${BUILD_PKGS[@]}" "${LINT_PKGS[@]}") ;;
all) PKGS=("${BUILD_PKGS[@]}" "${LINT_PKGS[@]}" "${TEST_PKGS[@]}") ;;
*)
	echo "usage: scripts/deps.sh [build|lint|all]" >&2
	exit 2
	;;
esac

# One dpkg-query for all of them: the common case (all there) stays fast.
# A package dpkg has never heard of prints no line: missing too.
declare -A installed=()
while read -r p status; do
	[ "$status" = "installed" ] && installed[${p%%:*}]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null || true)
missing=()
for p in "${PKGS[@]}"; do
	[ -n "${installed[$p]:-}" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing ${missing[*]}; run as root: scripts/deps.sh $group (or apt-get install them)" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
