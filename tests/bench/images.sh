#!/usr/bin/env bash
# Benchmark: the first import of a multi-layer image — every blob hashed,
# every layer decompressed, hashed again (diff_id) and unpacked — by a
# daemon kin (`kin ctl image import oci:…`, a fresh store each run) next to
# `umoci unpack` (Debian's umoci) of the same OCI layout into a fresh
# bundle, on this host. The image: three gzip layers made here from the
# host's own files (python3's library, perl's, busybox), about 75 MB and
# 3000 files unpacked. Median of RUNS runs each, wall time.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
RUNS=${BENCH_IMAGES_RUNS:-3}
command -v umoci >/dev/null || { echo "== images: skipped (no umoci; scripts/deps.sh installs it)"; exit 0; }
command -v python3 >/dev/null || { echo "== images: skipped (no python3)"; exit 0; }
T=$(mktemp -d /var/tmp/kin-bench-images.XXXXXX)
cleanup() {
	[ -n "${DPID:-}" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

layers=()
for d in /usr/lib/python3.11 /usr/share/perl /usr/lib/x86_64-linux-gnu/perl; do
	[ -d "$d" ] && layers+=("$d")
done
mkdir -p "$T/bb/bin"
cp /bin/busybox "$T/bb/bin/busybox"
layers+=("$T/bb")
python3 tests/oci/mkimage.py --format oci --out "$T/img" --tag big "${layers[@]}" >/dev/null ||
	{ echo "== images: building the image failed"; exit 1; }
files=$(for d in "${layers[@]}"; do find "$d" | wc -l; done | awk '{s+=$1} END {print s}')
mb=$(du -smc "${layers[@]}" | tail -1 | cut -f1)

"$KIN" init --socket "$T/k.sock" --image-store "$T/store" >"$T/kin.log" 2>&1 &
DPID=$!
for _ in $(seq 250); do grep -q 'ready:' "$T/kin.log" && break; sleep 0.02; done
now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

kin_ms=() umoci_ms=()
for i in $(seq "$RUNS"); do
	rm -rf "$T/store" "$T/bundle"
	sync
	t0=$(now_ms)
	"$KIN" ctl --socket "$T/k.sock" image import "oci:$T/img:big" --name big >/dev/null ||
		{ echo "== images: kin import failed"; exit 1; }
	kin_ms+=($(($(now_ms) - t0)))
	sync
	t0=$(now_ms)
	umoci unpack --image "$T/img:big" "$T/bundle" >/dev/null 2>&1 ||
		{ echo "== images: umoci unpack failed"; exit 1; }
	umoci_ms+=($(($(now_ms) - t0)))
done
k=$(printf '%s\n' "${kin_ms[@]}" | median)
u=$(printf '%s\n' "${umoci_ms[@]}" | median)
printf '== images: first import of a 3-layer gzip image (%s MB, %s files), median of %s\n' "$mb" "$files" "$RUNS"
printf '  %-58s %7s ms\n' "kin ctl image import (verify + unpack each layer)" "$k"
printf '  %-58s %7s ms\n' "umoci unpack (peer)" "$u"
printf '  %-58s %.2f\n' "ratio kin / umoci (goal <= 1)" "$(awk -v k="$k" -v u="$u" 'BEGIN{print k/u}')"
