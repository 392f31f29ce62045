#!/usr/bin/env bash
# The image builder for real: `kin image build` as cpio and ext4 (contents
# checked with cpio -t and debugfs), reproducibility (two builds, one
# sha256), an unpacked image run as a root (chroot, kin as PID 1 of a new
# PID namespace), the kernel cache, and usage errors.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin rootfs

# A synthetic kernel module tree: no network and no real modules needed.
mods=$T/kroot/lib/modules/9.9.9-kin
mkdir -p "$mods/kernel/drivers" "$mods/kernel/fs"
printf 'kernel/drivers/virtio_net.ko: kernel/drivers/virtio.ko\nkernel/drivers/virtio.ko:\nkernel/fs/ext4.ko: kernel/fs/jbd2.ko\nkernel/fs/jbd2.ko:\nkernel/fs/unused.ko:\n' >"$mods/modules.dep"
printf 'alias fs-ext4 ext4\n' >"$mods/modules.alias"
printf 'kernel/drivers/virtio_pci.ko\n' >"$mods/modules.builtin"
for m in drivers/virtio_net drivers/virtio fs/ext4 fs/jbd2 fs/unused; do
	echo "module $m" >"$mods/kernel/$m.ko"
done
mkdir -p "$T/extra/sub" && echo hello >"$T/extra/sub/greeting" && ln -s sub/greeting "$T/extra/link"

build() { "$KIN" image build "$@" >>"$T/out" 2>&1; }

t_cpio_contents() {
	: >"$T/out"
	build -o "$T/a.cpio" --kernel-dir "$T/kroot" --modules fs-ext4 \
		--add "$T/extra:/opt/extra" --add-binary /bin/sh ||
		{ bad cpio_contents "build failed"; return; }
	cpio -it <"$T/a.cpio" >"$T/list" 2>/dev/null || { bad cpio_contents "cpio -t cannot read it"; return; }
	local want missing=
	for want in init usr/sbin/init usr/bin/kin sbin dev/console proc sys dev run tmp etc/kin/modules \
		etc/kin/kernel-release usr/bin/dash usr/lib/x86_64-linux-gnu/libc.so.6 \
		usr/lib/modules/9.9.9-kin/kernel/drivers/virtio_net.ko \
		usr/lib/modules/9.9.9-kin/kernel/fs/jbd2.ko usr/lib/modules/9.9.9-kin/modules.dep \
		opt/extra/sub/greeting opt/extra/link; do
		grep -qx "$want" "$T/list" || missing="$missing $want"
	done
	grep -q 'unused.ko' "$T/list" && missing="$missing (unused.ko should not be there)"
	[ -z "$missing" ] && ok cpio_contents || bad cpio_contents "missing:$missing"
}

t_cpio_reproducible() {
	SOURCE_DATE_EPOCH=1700000000 build -o "$T/r1.cpio" --kernel-dir "$T/kroot" --add-binary /bin/sh
	touch "$T/extra/sub/greeting"
	sleep 1
	SOURCE_DATE_EPOCH=1700000000 build -o "$T/r2.cpio" --kernel-dir "$T/kroot" --add-binary /bin/sh
	local a b
	a=$(sha256sum <"$T/r1.cpio") b=$(sha256sum <"$T/r2.cpio")
	[ -s "$T/r1.cpio" ] && [ "$a" = "$b" ] && ok cpio_reproducible ||
		bad cpio_reproducible "sha256 differ: $a / $b"
}

t_image_runs() {
	# The unpacked image is a working root: its sh finds its libraries, and
	# its /init is kin, which runs a workload as PID 1 of a new namespace.
	local root=$T/unpacked
	mkdir -p "$root" && (cd "$root" && cpio -idm --quiet <"$T/a.cpio") ||
		{ bad image_runs "cannot unpack"; return; }
	local said
	said=$(chroot "$root" /bin/sh -c 'read -r x </opt/extra/link; echo "$x"' 2>&1)
	[ "$said" = hello ] || { bad image_runs "chroot sh said '$said'"; return; }
	unshare --pid --fork --mount chroot "$root" /init -- /bin/sh -c 'exit 7' >"$T/out" 2>&1
	local rc=$?
	[ $rc -eq 7 ] && ok image_runs || bad image_runs "kin as PID 1 in the image: exit $rc, want 7"
}

t_ext4() {
	: >"$T/out"
	build -o "$T/root.img" --format ext4 --label kintest --kernel-dir "$T/kroot" \
		--add-binary /bin/sh || { bad ext4 "build failed"; return; }
	local label rel
	label=$(blkid -o value -s LABEL "$T/root.img")
	rel=$(debugfs -R "cat /etc/kin/kernel-release" "$T/root.img" 2>/dev/null)
	debugfs -R "ls -p /usr/bin" "$T/root.img" 2>/dev/null | grep -q '/dash/' ||
		{ bad ext4 "no /usr/bin/dash in the image"; return; }
	e2fsck -fn "$T/root.img" >/dev/null 2>&1 || { bad ext4 "e2fsck finds errors"; return; }
	[ "$label" = kintest ] && [ "$rel" = 9.9.9-kin ] && ok ext4 ||
		bad ext4 "label '$label', kernel-release '$rel'"
}

t_ext4_reproducible() {
	build -o "$T/e1.img" --format ext4 --kernel-dir "$T/kroot"
	sleep 1.1
	build -o "$T/e2.img" --format ext4 --kernel-dir "$T/kroot"
	local a b
	a=$(sha256sum <"$T/e1.img") b=$(sha256sum <"$T/e2.img")
	[ -s "$T/e1.img" ] && [ "$a" = "$b" ] && ok ext4_reproducible ||
		bad ext4_reproducible "sha256 differ: $a / $b"
}

t_real_kernel() {
	# Debian's kernel in the cache (downloaded once, ~70 MB), its modules
	# in an image with their closure.
	: >"$T/out"
	local vmlinuz
	vmlinuz=$("$KIN" image kernel 2>>"$T/out" | tail -1)
	if [ -z "$vmlinuz" ] || [ ! -f "$vmlinuz" ]; then
		if grep -qiE "cannot tell which package|download" "$T/out"; then
			echo "SKIP ns/rootfs/real_kernel: Debian's kernel package cannot be fetched here"
			return
		fi
		bad real_kernel "kin image kernel printed '$vmlinuz'"
		return
	fi
	local rel=${vmlinuz##*/vmlinuz-}
	build -o "$T/k.cpio" --modules tun || { bad real_kernel "build with the cached kernel failed"; return; }
	cpio -it <"$T/k.cpio" >"$T/list" 2>/dev/null
	local m missing=
	for m in virtio_net virtio_blk virtio_console virtio_pci vsock vmw_vsock_virtio_transport ext4 jbd2 mbcache crc32c_generic tun; do
		grep -q "/$m\.ko$" "$T/list" || missing="$missing $m"
	done
	grep -qx "usr/lib/modules/$rel/modules.dep" "$T/list" || missing="$missing modules.dep"
	[ -z "$missing" ] && ok real_kernel || bad real_kernel "image for $rel lacks:$missing"
}

# expect_fail NAME WANT_RC PATTERN ARGS...: kin image ARGS exits WANT_RC
# and says something matching PATTERN.
expect_fail() {
	local name=$1 want=$2 pat=$3; shift 3
	"$KIN" image "$@" >"$T/out" 2>&1; local rc=$?
	[ $rc -eq "$want" ] && grep -qE -e "$pat" "$T/out" && return 0
	bad "$name" "kin image $*: exit $rc (want $want), output: $(head -c 200 "$T/out")"
	return 1
}

t_usage_errors() {
	expect_fail usage_errors 2 "unknown option '--bogus'" build -o x --bogus &&
	expect_fail usage_errors 2 "needs -o FILE" build --no-modules &&
	expect_fail usage_errors 2 "--format 'zip'" build -o x --format zip &&
	expect_fail usage_errors 2 "--add 'nocolon'" build -o x --add nocolon &&
	expect_fail usage_errors 2 "--modules 'a,,b'" build -o x --modules a,,b &&
	expect_fail usage_errors 2 "exclude each other" build -o x --no-modules --kernel-dir /x &&
	expect_fail usage_errors 2 "--label is for" build -o x --label L &&
	expect_fail usage_errors 2 "unknown command 'frobnicate'" frobnicate &&
	SOURCE_DATE_EPOCH=soon expect_fail usage_errors 2 "SOURCE_DATE_EPOCH='soon'" build -o x --no-modules &&
	expect_fail usage_errors 2 "unexpected argument 'stray'" build -o x stray &&
	ok usage_errors
}

t_build_errors() {
	expect_fail build_errors 1 "$T/nonexistent" build -o "$T/x.cpio" --no-modules --add "$T/nonexistent:/x" &&
	expect_fail build_errors 1 "module nosuchmod" build -o "$T/x.cpio" --kernel-dir "$T/kroot" --modules nosuchmod &&
	expect_fail build_errors 1 "/nonexistent/bin" build -o "$T/x.cpio" --no-modules --add-binary /nonexistent/bin &&
	expect_fail build_errors 1 "extra/lib/modules: No such file" build -o "$T/x.cpio" --kernel-dir "$T/extra" &&
	[ ! -e "$T/x.cpio" ] && ok build_errors ||
		{ [ -e "$T/x.cpio" ] && bad build_errors "a failed build left $T/x.cpio"; }
}

t_cpio_contents
t_cpio_reproducible
t_image_runs
t_ext4
t_ext4_reproducible
t_real_kernel
t_usage_errors
t_build_errors
ns_suite_end
