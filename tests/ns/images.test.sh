#!/usr/bin/env bash
# The image store, through a daemon kin's kin.v1.Images: images built by
# hand here (tar, gzip/zstd and sha256 by tests/oci/mkimage.py, from
# busybox-static) import in all three transports, and as skopeo rewrites
# them (a peer's archives); layers land once, verified, with OCI whiteouts
# and opaque directories turned into overlayfs's own (checked by mounting
# the overlay); multi-arch indexes pick linux/amd64; digest mismatches,
# bad references and a layer escaping its directory are refused with
# nothing left behind; rm collects what no other image uses.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin images
command -v python3 >/dev/null || ns_skip "no python3 to build test images"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
MK=tests/oci/mkimage.py
S=$T/k.sock
ST=$T/store
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

"$KIN" init --log-level debug --socket "$S" --image-store "$ST" >"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250 || bad kin_ready "no ready line"


# Two layers: the base (busybox, passwd, a motd, /data/a and b), then one
# that whites out the motd and makes /data opaque with only c in it.
L1=$T/l1 L2=$T/l2
mkdir -p "$L1/bin" "$L1/etc" "$L1/data" "$L2/etc" "$L2/data"
cp /bin/busybox "$L1/bin/busybox"
for c in sh echo cat ls id; do ln -s busybox "$L1/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001:app:/home/app:/bin/sh\n' >"$L1/etc/passwd"
printf 'root:x:0:\napp:x:1001:\nextra:x:2000:app\n' >"$L1/etc/group"
echo one >"$L1/etc/motd"
echo a >"$L1/data/a"
echo b >"$L1/data/b"
: >"$L2/etc/.wh.motd"
: >"$L2/data/.wh..wh..opq"
echo c >"$L2/data/c"
L3=$T/l3 # a layer no other image has: its blob is read (and found corrupt)
mkdir -p "$L3"
echo three >"$L3/three"
CFG='{"Entrypoint":["/bin/echo"],"Cmd":["hello","from","bb"],"Env":["PATH=/bin","GREETING=hi"],"WorkingDir":"/data","User":"app"}'

python3 $MK --format oci --out "$T/bb" --tag v1 --config "$CFG" "$L1" "$L2" >"$T/out" 2>&1 &&
	python3 $MK --format oci-archive --comp zstd --out "$T/bb-oci.tar" --tag v2 --config "$CFG" "$L1" "$L2" &&
	python3 $MK --format docker-archive --out "$T/bb-docker.tar" --tag bb-docker:latest --config "$CFG" "$L1" "$L2" &&
	python3 $MK --format oci --comp none --multiarch --out "$T/multi" --tag m1 --config "$CFG" "$L1" &&
	python3 $MK --format oci --out "$T/bad" --tag b1 --bad-digest 1 "$L1" "$L3" ||
	bad build_images "mkimage.py failed"

kc image import "oci:$T/bb:v1"
[ $rc -eq 0 ] && out_has '^name: +bb:v1' && out_has '^layers: +2' && ok import_oci_layout ||
	bad import_oci_layout "rc $rc"
kc image import "oci-archive:$T/bb-oci.tar:v2" --name bb-zstd
[ $rc -eq 0 ] && out_has '^name: +bb-zstd' && ok import_oci_archive_zstd || bad import_oci_archive_zstd "rc $rc"
kc image import "docker-archive:$T/bb-docker.tar"
[ $rc -eq 0 ] && out_has '^name: +bb-docker:latest' && ok import_docker_archive ||
	bad import_docker_archive "rc $rc"
kc image import "oci:$T/multi"
[ $rc -eq 0 ] && out_has '^name: +multi:m1' && out_has '^layers: +1' && ok import_multiarch_amd64 ||
	bad import_multiarch_amd64 "rc $rc"

# The same layers, three imports: unpacked once (gzip, zstd and plain tar
# of one tar have one diff_id).
n=$(ls "$ST/layers" | wc -l)
[ "$n" -eq 2 ] && ok layers_shared || bad layers_shared "$n layer dirs, expected 2"

kc image list
[ $rc -eq 0 ] && out_has '^bb:v1 ' && out_has '^bb-zstd ' && out_has '^bb-docker:latest ' &&
	ok list || bad list "rc $rc"
kc -o json image inspect bb:v1
[ $rc -eq 0 ] && out_has '\\"Entrypoint\\"' && out_has '"name":"bb:v1"' && ok inspect_json ||
	bad inspect_json "rc $rc"
kc image inspect bb:v1
[ $rc -eq 0 ] && python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["config"]; sys.exit(c["WorkingDir"]!="/data")' "$T/out" &&
	ok inspect_config || bad inspect_config "rc $rc"
dg=$(awk '$1 == "digest:" {print $2}' <("$KIN" ctl --socket "$S" image import "oci:$T/bb:v1" 2>&1))
kc image inspect "${dg:7:16}"
[ $rc -eq 0 ] && ok inspect_by_digest_prefix || bad inspect_by_digest_prefix "rc $rc ($dg)"

# Whiteouts became overlayfs's: the top layer has etc/motd as a 0:0
# character device and data/ marked opaque; the overlay shows it.
top=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1][7:])' "$ST/refs/bb%3Av1")
low=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0][7:])' "$ST/refs/bb%3Av1")
[ "$(stat -c '%F %t:%T' "$ST/layers/$top/etc/motd" 2>/dev/null)" = "character special file 0:0" ] &&
	[ "$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "trusted.overlay.opaque").decode())' "$ST/layers/$top/data" 2>/dev/null)" = y ] &&
	ok whiteouts_converted || bad whiteouts_converted "$(ls -la "$ST/layers/$top/etc" 2>&1 | tail -3)"
mkdir -p "$T/merged"
seen=$(unshare --mount sh -c "mount -t overlay -o lowerdir=$ST/layers/$top:$ST/layers/$low none '$T/merged' &&
	ls '$T/merged/data' | tr '\n' ' '; ls '$T/merged/etc' | tr '\n' ' '")
[ "$seen" = "c group passwd " ] && ok overlay_view || bad overlay_view "'$seen'"

# Refusals: a blob whose bytes do not match its digest, references kin
# does not take, a tag that is not there. Nothing is recorded or kept.
kc image import "oci:$T/bad:b1"
[ $rc -eq 1 ] && out_has 'DATA_LOSS' && out_has 'digest mismatch' && [ ! -e "$ST/refs/bad%3Ab1" ] &&
	[ -z "$(ls "$ST/tmp")" ] && [ "$(ls "$ST/layers" | wc -l)" -eq 2 ] && ok digest_mismatch_refused ||
	bad digest_mismatch_refused "rc $rc"
kc image import "docker://busybox"
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && out_has 'oci:DIR' && ok unknown_transport ||
	bad unknown_transport "rc $rc"
kc image import "oci:$T/bb:nosuch"
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && out_has 'tags: v1' && ok missing_tag || bad missing_tag "rc $rc"
kc image import "oci:$T/nothere"
[ $rc -eq 1 ] && out_has 'No such file' && ok missing_dir || bad missing_dir "rc $rc"
kc image inspect nosuch:image
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && ok inspect_missing || bad inspect_missing "rc $rc"
kc image inspect '../../etc'
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && ok bad_name || bad bad_name "rc $rc"

# A layer that climbs out of its directory, in an archive: refused naming
# the entry, nothing written next to the store.
mkdir -p "$T/evil"
python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("../../escaped"); ti.size = 3
    t.addfile(ti, io.BytesIO(b"bad"))
PY
kc image import "oci-archive:$T/evil.tar"
[ $rc -eq 1 ] && out_has 'escaped' && [ ! -e "$T/escaped" ] && [ ! -e "$ST/escaped" ] &&
	[ -z "$(ls "$ST/tmp")" ] && ok archive_traversal_refused || bad archive_traversal_refused "rc $rc"

# Crafted layers, each in an image of its own: a name climbing out, a
# symlink planted to point out and then written through, a hard link to a
# file outside, a pax header of 2 MiB. Each is refused naming the layer
# and the entry; nothing lands outside (the canary dir stays empty), no
# layer is kept, tmp/ is clean.
mkdir -p "$T/outside"
python3 - "$T" <<'PY'
import io, sys, tarfile
T = sys.argv[1]
def tar(path, entries):
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for ti, data in entries:
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
def f(name, data=b"x", **kw):
    ti = tarfile.TarInfo(name); ti.size = len(data)
    for k, v in kw.items(): setattr(ti, k, v)
    return ti, data
def link(name, target, kind):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.linkname = target
    return ti, None
tar(T + "/m-traversal.tar", [f("etc/ok"), f("etc/../../../outside/escaped")])
tar(T + "/m-symlink.tar", [link("a", T + "/outside", tarfile.SYMTYPE), f("a/escaped")])
tar(T + "/m-symlink-rel.tar", [link("b", "../../../../../../../..", tarfile.SYMTYPE),
                               f("b" + T + "/outside/escaped")])
tar(T + "/m-hardlink.tar", [link("h", "../../../../../../etc/passwd", tarfile.LNKTYPE)])
tar(T + "/m-hardlink-sym.tar", [link("s", "/etc", tarfile.SYMTYPE),
                                link("h", "s/passwd", tarfile.LNKTYPE)])
big = f("etc/big")
big[0].pax_headers = {"comment": "x" * (2 << 20)}
tar(T + "/m-pax.tar", [big])
PY
for m in traversal:leaves symlink:symlink symlink-rel:symlink hardlink:leaves hardlink-sym:symlink pax:limit; do
	name=${m%%:*} why=${m#*:}
	python3 $MK --format oci --out "$T/img-$name" --tag m "$T/m-$name.tar" >/dev/null 2>&1
	kc image import "oci:$T/img-$name:m" --name "evil-$name"
	if [ $rc -eq 1 ] && out_has "layer sha256:[0-9a-f]{64}: entry (\"|[0-9])" && out_has "$why" &&
		[ -z "$(ls -A "$T/outside")" ] && [ -z "$(ls "$ST/tmp")" ] &&
		[ ! -e "$ST/refs/evil-$name" ] && [ "$(ls "$ST/layers" | wc -l)" -eq 2 ]; then
		ok "malicious_layer_$name"
	else
		bad "malicious_layer_$name" "rc $rc; outside: $(ls -A "$T/outside")"
	fi
done
grep -q root: /etc/passwd && [ "$(stat -c %h /etc/passwd)" -eq 1 ] && ok host_passwd_untouched ||
	bad host_passwd_untouched "/etc/passwd has $(stat -c %h /etc/passwd) links"

# A peer's archives: skopeo rewrites the layout as oci-archive and
# docker-archive, and kin imports what it wrote.
if command -v skopeo >/dev/null; then
	skopeo copy -q "oci:$T/bb:v1" "oci-archive:$T/sk-oci.tar:sk1" >"$T/out" 2>&1 &&
		kc image import "oci-archive:$T/sk-oci.tar" --name skopeo-oci &&
		[ $rc -eq 0 ] && ok skopeo_oci_archive || bad skopeo_oci_archive "rc ${rc:-?}"
	skopeo copy -q "oci:$T/bb:v1" "docker-archive:$T/sk-docker.tar:sk/bb:2" >"$T/out" 2>&1 &&
		kc image import "docker-archive:$T/sk-docker.tar" &&
		[ $rc -eq 0 ] && out_has '^name: +docker.io/sk/bb:2' && ok skopeo_docker_archive ||
		bad skopeo_docker_archive "rc ${rc:-?}"
else
	bad skopeo "skopeo is not installed (scripts/deps.sh installs it)"
fi

# rm: the name goes; layers stay while another image uses them, and go
# with the last one.
for i in bb:v1 bb-zstd bb-docker:latest skopeo-oci docker.io/sk/bb:2; do kc image rm "$i"; done
kc image list
! out_has '^bb:v1 ' && out_has '^multi:m1 ' && [ "$(ls "$ST/layers" | wc -l)" -eq 1 ] &&
	ok rm_collects || bad rm_collects "$(ls "$ST/layers")"
kc image rm multi:m1
[ $rc -eq 0 ] && [ -z "$(ls "$ST/layers")" ] && [ -z "$(ls "$ST/refs")" ] && ok rm_last ||
	bad rm_last "rc $rc"
kc image rm multi:m1
[ $rc -eq 1 ] && out_has NOT_FOUND && ok rm_missing || bad rm_missing "rc $rc"

kc health
[ "$(cat "$T/out")" = SERVING ] && ok still_serving || bad still_serving "$(cat "$T/out")"
kill -TERM $DPID
wait $DPID
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
