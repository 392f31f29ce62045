#!/usr/bin/env bash
# Benchmark: a cell created, /bin/true started in it, its exit observed —
# kin (PID 1 of a guest, driven over its RPC socket by build/cells-bench on
# one connection) next to crun (Debian's package) running /bin/true from a
# busybox bundle with the same namespaces, in the same guest (crun refuses
# the host's hybrid cgroups). Median and p90 over RUNS runs each:
#   kin, no new namespaces
#   kin, new pid+mnt+uts+ipc namespaces
#   kin, the same namespaces + pivot_root into the bundle's rootfs, read-only
#   kin, the same namespaces, a container from an image of the same rootfs
#     (imported first: overlay of its layer + a fresh writable layer, masked
#     /proc, the writable layer removed with the cell)
#   crun run, pid+mnt+uts+ipc namespaces, the bundle's rootfs (read-only)
# The first two run Debian's /bin/true (dynamic: ld.so's work is in the
# figure), the last two busybox-static's true from the bundle.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
BENCH=$PWD/$BUILD/cells-bench
RUNS=${BENCH_CELLS_RUNS:-200}
command -v qemu-system-x86_64 >/dev/null || { echo "== cells: skipped (no qemu-system-x86_64)"; exit 0; }
command -v crun >/dev/null || { echo "== cells: skipped (no crun; scripts/deps.sh installs it)"; exit 0; }
KERNEL=$("$KIN" image kernel 2>/dev/null | tail -1)
[ -f "$KERNEL" ] || { echo "== cells: skipped (no guest kernel)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-cells.XXXXXX)
trap 'rm -rf "$T"' EXIT

# The bundle: busybox-static as the rootfs, crun's own spec with /bin/true,
# no terminal, and exactly pid, mount, uts and ipc namespaces.
mkdir -p "$T/bundle/rootfs/bin" "$T/bundle/rootfs/proc" "$T/bundle/rootfs/dev" "$T/bundle/rootfs/sys"
cp /bin/busybox "$T/bundle/rootfs/bin/busybox"
ln -s busybox "$T/bundle/rootfs/bin/true"
ln -s busybox "$T/bundle/rootfs/bin/sh"
(cd "$T/bundle" && crun spec)
# The same rootfs as an OCI image (one layer), for kin's image variant.
python3 tests/oci/mkimage.py --format oci --out "$T/img" --tag bb --config '{"Env":["PATH=/bin"]}' \
	"$T/bundle/rootfs" >/dev/null
python3 - "$T/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
c["linux"]["namespaces"] = [{"type": t} for t in ("pid", "mount", "uts", "ipc")]
json.dump(c, open(p, "w"), indent=1)
PY

cat >"$T/run.sh" <<GUEST
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
bb=/usr/bin/busybox
/usr/bin/busybox mkdir -p /run/crun
echo "BENCH import \$(kin ctl image import oci:/bench/img:bb --name bb 2>&1 | \$bb tail -1)"
for v in plain ns root image crun; do
	case \$v in
	plain) r=\$(cells-bench kin /run/kin/kin.sock $RUNS 2>&1) ;;
	ns) r=\$(cells-bench kin /run/kin/kin.sock $RUNS --ns pid,mnt,uts,ipc 2>&1) ;;
	root) r=\$(cells-bench kin /run/kin/kin.sock $RUNS --ns pid,mnt,uts,ipc --root /bundle/rootfs 2>&1) ;;
	image) r=\$(cells-bench kin /run/kin/kin.sock $RUNS --ns pid,mnt,uts,ipc --image bb 2>&1) ;;
	crun) r=\$(cells-bench crun /bundle $RUNS 2>&1) ;;
	esac
	echo "BENCH \$v \$(echo "\$r" | \$bb tr '\n' ' ')"
done
\$bb sync
kill -USR2 1
GUEST

# An ext4 root disk (pivot_root cannot leave an initramfs), booted through
# a plain kin initramfs that switches root to it.
"$KIN" image build -o "$T/initrd.cpio" --modules overlay >"$T/build.log" 2>&1 &&
	"$KIN" image build --format ext4 --size 256M -o "$T/root.ext4" --modules overlay --add-binary /bin/busybox \
		--add-binary /usr/bin/true --add-binary /usr/bin/crun --add "$BENCH:/usr/bin/cells-bench" \
		--add "$T/bundle:/bundle" --add "$T/img:/bench/img" --add "$T/run.sh:/bench/run.sh" \
		>>"$T/build.log" 2>&1 ||
	{ echo "== cells: kin image build failed"; cat "$T/build.log"; exit 1; }
timeout 1800 "$KIN" vm run --quiet --kernel "$KERNEL" --image "$T/initrd.cpio" --disk "$T/root.ext4" --state-dir "$T/state" \
	--name cb --cpus 2 --memory 1024 --timeout 1500s -- /usr/bin/busybox sh /bench/run.sh \
	>"$T/run.log" 2>&1 || true
con=$T/state/cb/console.log
grep -a '^BENCH ' "$con" | tr -d '\r' >"$T/results" || true

printf '== cells: create a cell, start /bin/true, observe its exit — in a guest (QEMU TCG, 2 vCPUs), %s runs each\n' "$RUNS"
field() { awk -v v="$1" -v f="$2" '$2 == v && $3 == "RESULT" {print $(f)}' "$T/results"; }
row() { # row VARIANT LABEL
	local med p90 del
	med=$(field "$1" 4); p90=$(field "$1" 5); del=$(field "$1" 8)
	if [ -z "$med" ]; then
		printf '  %-58s failed: %s\n' "$2" "$(grep -a "^BENCH $1 " "$T/results" | cut -c1-200)"
		return
	fi
	printf '  %-58s median %7.2f ms  p90 %7.2f ms%s\n' "$2" "$(echo "$med" | awk '{print $1/1000}')" \
		"$(echo "$p90" | awk '{print $1/1000}')" \
		"${del:+  (with cell delete: $(echo "$del" | awk '{printf "%.2f", $1/1000}') ms)}"
}
row plain "kin, no new namespaces"
row ns "kin, new pid+mnt+uts+ipc namespaces"
row root "kin, pid+mnt+uts+ipc + pivot_root into the bundle (ro)"
row image "kin, pid+mnt+uts+ipc, a container from an image (overlay)"
[ -n "$(field image 4)" ] || grep -a '^BENCH import' "$T/results" | sed 's/^/    /'  # why
row crun "crun run, pid+mnt+uts+ipc, the same bundle (peer)"
c=$(field crun 4)
for v in plain ns root image; do
	k=$(field $v 4)
	[ -n "$k" ] && [ -n "$c" ] && printf '  %-58s %.2f\n' "ratio kin ($v) / crun (goal <= 0.33)" \
		"$(awk -v k="$k" -v c="$c" 'BEGIN{print k/c}')"
done
[ -s "$T/results" ] || { echo "  no results on the guest console"; tail -20 "$con"; exit 1; }
