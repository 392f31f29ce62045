#!/usr/bin/env bash
# The layer unpacker (oci/layer.c through build/oci-layer-unpack) against
# real archivers: one tree (setuid, sticky, owners, nanosecond times,
# symlinks, hardlinks, a FIFO, a device, long and non-ASCII names, user
# xattrs, 3 MiB of random bytes) packed by GNU tar (gnu, oldgnu, posix)
# and Python's tarfile (pax, gnu), plain, gzip and zstd, unpacked and
# compared with GNU tar's own extraction of the same archive; the diff_id
# is sha256sum of the tar; umoci unpack of a one-layer image gives the
# same tree; whiteouts in overlayfs form; and hostile archives made by
# Python and GNU tar (escaping symlinks and hardlinks, "..", GNU sparse
# files, a gzip bomb) refused with their sentence, nothing outside the
# layer's directory.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin oci-layer
UNPACK=$PWD/$BUILD/oci-layer-unpack
[ -x "$UNPACK" ] || { bad setup "no $UNPACK (make $UNPACK)"; ns_suite_end; exit; }

src=$T/src
long=$(printf 'd%.0s' $(seq 120))/$(printf 'e%.0s' $(seq 120))
mkdir -p "$src/etc" "$src/usr/bin" "$src/tmp" "$src/$long"
echo "127.0.0.1 localhost" >"$src/etc/hosts" && chmod 0640 "$src/etc/hosts"
printf 'su' >"$src/usr/bin/su" && chown 1234:5678 "$src/usr/bin/su" && chmod 4755 "$src/usr/bin/su"
ln "$src/usr/bin/su" "$src/usr/bin/su2"
ln -s /usr/share/zoneinfo/UTC "$src/etc/localtime"
ln -s ../etc/hosts "$src/usr/hosts"
head -c 3M /dev/urandom >"$src/big"
: >"$src/empty"
mkfifo "$src/fifo" && mknod "$src/null" c 1 3
echo long >"$src/$long/file-$(printf 'f%.0s' $(seq 150))"
echo unicode >"$src/$(printf 'caf\xc3\xa9-\xe2\x9c\x93')"
chmod 1777 "$src/tmp"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.kin", b"test")' "$src/etc/hosts"
find "$src" -mindepth 1 -exec touch -h -d @1700000000.123456789 {} +

# listing DIR: every entry below DIR (path, type, mode, owner, size, mtime,
# link target), the files' sha256 and their user.* xattrs.
listing() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %U:%G %s %T@ %l\n' | LC_ALL=C sort &&
		find . -mindepth 1 -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum &&
		python3 -c '
import os
for root, dirs, files in sorted(os.walk(".")):
    for n in sorted(dirs + files):
        p = os.path.join(root, n)
        if os.path.islink(p): continue
        for x in sorted(os.listxattr(p)):
            if x.startswith("user."): print(p, x, os.getxattr(p, x))')
}

# unpack ARCHIVE [FLAGS...]: into a fresh $T/l/layer; the driver's output in $T/out.
unpack() {
	local a=$1; shift
	rm -rf "$T/l" && mkdir -p "$T/l/layer"
	"$UNPACK" "$@" "$a" "$T/l/layer" >"$T/out" 2>&1
}

python3 - "$src" "$T" <<'EOF'
import sys, tarfile
src, t = sys.argv[1], sys.argv[2]
for name, fmt in (("py-pax", tarfile.PAX_FORMAT), ("py-gnu", tarfile.GNU_FORMAT)):
    with tarfile.open(f"{t}/{name}.tar", "w", format=fmt) as tf:
        tf.add(src, arcname=".")
EOF
for fmt in gnu oldgnu posix; do
	tar --format=$fmt $([ $fmt = posix ] && echo --xattrs) --numeric-owner -cf "$T/tar-$fmt.tar" -C "$src" .
done

t_formats() {
	local a fails=
	for a in "$T"/tar-*.tar "$T"/py-*.tar; do
		rm -rf "$T/ref" && mkdir "$T/ref"
		tar -xpf "$a" --xattrs --xattrs-include='user.*' --numeric-owner -C "$T/ref" ||
			{ fails+=" $(basename "$a")(GNU tar)"; continue; }
		listing "$T/ref" >"$T/want"
		gzip -1 -c "$a" >"$a.gz" && zstd -q -f "$a" -o "$a.zst"
		for blob in "$a" "$a.gz" "$a.zst"; do
			if ! unpack "$blob"; then
				fails+=" $(basename "$blob")($(cat "$T/out"))"
			elif ! listing "$T/l/layer" | diff "$T/want" - >"$T/diff"; then
				fails+=" $(basename "$blob")(differs: $(head -4 "$T/diff" | tr '\n' ' '))"
			elif [ "$(awk '{print $8}' "$T/out")" != "sha256:$(sha256sum <"$a" | cut -d' ' -f1)" ]; then
				fails+=" $(basename "$blob")(diff_id)"
			elif [ "$(awk '{print $6}' "$T/out")" != "sha256:$(sha256sum <"$blob" | cut -d' ' -f1)" ]; then
				fails+=" $(basename "$blob")(digest)"
			fi
		done
	done
	[ -z "$fails" ] && ok formats || bad formats "$fails"
}

# The nanoseconds, the xattr and the setuid bit really came through (the
# comparison above would pass if GNU tar and kin lost them alike).
t_details() {
	unpack "$T/tar-posix.tar.zst" || { bad details "$(cat "$T/out")"; return; }
	local l=$T/l/layer
	[ "$(stat -c '%a %u:%g %h' "$l/usr/bin/su")" = "4755 1234:5678 2" ] &&
		[ "$(stat -c %y "$l/etc/hosts")" = "$(stat -c %y "$src/etc/hosts")" ] &&
		[ "$(stat -c %a "$l/tmp")" = 1777 ] && [ "$(stat -c '%t:%T' "$l/null")" = "1:3" ] &&
		python3 -c 'import os, sys; assert os.getxattr(sys.argv[1], "user.kin") == b"test"' \
			"$l/etc/hosts" && ok details || bad details "$(stat -c '%n %a %u:%g %h %y' "$l/usr/bin/su" "$l/etc/hosts" "$l/tmp")"
}

# umoci, the peer the benchmark runs, makes the same tree of the same layer.
t_umoci() {
	command -v umoci >/dev/null || { echo "SKIP ns/$SUITE/umoci: no umoci"; return; }
	python3 - "$T/tar-posix.tar.gz" "$T/img" <<'EOF' || { bad umoci "no image"; return; }
import hashlib, json, os, sys, gzip
blob, img = sys.argv[1], sys.argv[2]
os.makedirs(img + "/blobs/sha256")
def put(data):
    d = hashlib.sha256(data).hexdigest()
    open(f"{img}/blobs/sha256/{d}", "wb").write(data)
    return {"digest": "sha256:" + d, "size": len(data)}
layer = open(blob, "rb").read()
diff = hashlib.sha256(gzip.decompress(layer)).hexdigest()
cfg = put(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                      "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff]}}).encode())
man = put(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": dict(cfg, mediaType="application/vnd.oci.image.config.v1+json"),
    "layers": [dict(put(layer), mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]}).encode())
json.dump({"schemaVersion": 2, "manifests": [dict(man, mediaType="application/vnd.oci.image.manifest.v1+json",
    annotations={"org.opencontainers.image.ref.name": "t"})]}, open(img + "/index.json", "w"))
open(img + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
EOF
	umoci unpack --image "$T/img:t" "$T/bundle" >"$T/out" 2>&1 || { bad umoci "umoci: $(tail -2 "$T/out")"; return; }
	unpack "$T/tar-posix.tar.gz" || { bad umoci "$(cat "$T/out")"; return; }
	if listing "$T/bundle/rootfs" | diff - <(listing "$T/l/layer") >"$T/diff"; then
		ok umoci
	else
		bad umoci "trees differ: $(head -6 "$T/diff" | tr '\n' ' ')"
	fi
}

t_whiteouts() {
	mkdir -p "$T/wh/etc" "$T/wh/x" && : >"$T/wh/.wh.gone" && : >"$T/wh/etc/.wh..wh..opq" && : >"$T/wh/x/.wh..wh.plnk"
	tar -cf "$T/wh.tar" -C "$T/wh" .
	unpack "$T/wh.tar" --whiteouts || { bad whiteouts "$(cat "$T/out")"; return; }
	local l=$T/l/layer
	[ "$(stat -c '%F %t:%T' "$l/gone")" = "character special file 0:0" ] && [ ! -e "$l/.wh.gone" ] &&
		[ ! -e "$l/x/.wh..wh.plnk" ] &&
		python3 -c 'import os, sys; assert os.getxattr(sys.argv[1], "trusted.overlay.opaque") == b"y"' "$l/etc" &&
		unpack "$T/wh.tar" && [ -f "$T/l/layer/.wh.gone" ] && ok whiteouts ||
		bad whiteouts "$(ls -la "$l" "$l/etc")"
}

# hostile NAME MESSAGE ARCHIVE [FLAGS]: refused with MESSAGE (a part of the
# sentence), nothing beside the layer's directory, nothing at $T/escaped.
hostile() {
	local name=$1 msg=$2 a=$3; shift 3
	if unpack "$a" "$@"; then
		bad "hostile_$name" "accepted: $(cat "$T/out")"
XX
	elif [ "$(ls -A "$T/l")" != layer ] || [ -e "$T/escaped" ]; then
		bad "hostile_$name" "something escaped: $(ls -A "$T/l" "$T")"
	else
		ok "hostile_$name"
	fi
}

t_hostile() {
	python3 - "$T" <<'EOF'
import io, sys, tarfile
t = sys.argv[1]
def archive(name, entries):
    with tarfile.open(f"{t}/{name}.tar", "w", format=tarfile.PAX_FORMAT) as tf:
        for n, kind, arg in entries:
            ti = tarfile.TarInfo(n)
            if kind == "file":
                ti.size = len(arg)
                tf.addfile(ti, io.BytesIO(arg))
                continue
            ti.type = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}[kind]
            ti.linkname = arg
            tf.addfile(ti)
archive("dotdot", [("../escaped", "file", b"x")])
archive("symlink", [("a", "sym", t), ("a/escaped", "file", b"x")])
archive("symlink-rel", [("a", "sym", ".."), ("a/escaped", "file", b"x")])
archive("hardlink", [("h", "hard", "../../etc/passwd")])
archive("hardlink-sym", [("l", "sym", "/etc"), ("h", "hard", "l/passwd")])
EOF
	hostile dotdot 'entry "../escaped": name leaves the layer ("..")' "$T/dotdot.tar"
	hostile symlink 'entry "a/escaped": path goes through a symlink' "$T/symlink.tar"
	hostile symlink_rel 'entry "a/escaped": path goes through a symlink' "$T/symlink-rel.tar"
	hostile hardlink 'hardlink target "../../etc/passwd" leaves the layer' "$T/hardlink.tar"
	hostile hardlink_sym 'hardlink target "l/passwd" goes through a symlink' "$T/hardlink-sym.tar"
	truncate -s 8M "$T/sparse" && echo end >>"$T/sparse"
	tar --format=gnu --sparse -cf "$T/sparse-gnu.tar" -C "$T" sparse
	tar --format=posix --sparse -cf "$T/sparse-pax.tar" -C "$T" sparse
	hostile sparse_gnu 'GNU sparse files are not supported' "$T/sparse-gnu.tar"
	hostile sparse_pax 'GNU sparse files are not supported' "$T/sparse-pax.tar"
	head -c 64M /dev/zero >"$T/zeros" && tar -cf - -C "$T" zeros | gzip -9 >"$T/bomb.tar.gz" && rm "$T/zeros"
	hostile bomb 'entry "zeros": file of 64 MiB takes the layer over its 1 MiB limit' \
		"$T/bomb.tar.gz" --max-bytes 1048576
	head -c 100 "$T/tar-gnu.tar.gz" >"$T/cut.gz"
	hostile truncated 'truncated gzip stream' "$T/cut.gz"
}

t_formats
t_details
t_umoci
t_whiteouts
t_hostile
ns_suite_end
