#!/usr/bin/env bash
# containerd and kin's shim in a real guest, whose kernel gives cgroup2
# every controller (this host's hybrid cgroups have none): one boot of an
# image with containerd and ctr from Debian, a busybox image made on the
# host, kin as PID 1 and `containerd-shim-kin-v2` a link to it; checks run
# inside (tests/vm/shim-checks.sh): a run's output and status, a memory
# limit as the container cell's memory.max and in ctr's metrics, a new
# one through Update, an OOM
# kill reported to containerd (/tasks/oom) and 137, nothing left.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin shim
for c in containerd ctr python3; do
	command -v $c >/dev/null || { echo "SKIP vm/shim: no $c"; echo "0 passed, 0 failed"; exit 0; }
done
L=$T/layer
busybox_layer "$L" sh echo head tr sleep
python3 tests/oci/mkimage.py --format oci-archive --out "$T/bb.tar" --tag bb:1 \
	--config '{"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}' "$L" >/dev/null ||
	{ bad image "mkimage.py failed"; vm_suite_end; exit; }
cat >"$T/containerd.toml" <<EOF2
version = 2
disabled_plugins = ["io.containerd.grpc.v1.cri"]
EOF2
# A copy, not a link: its name is what makes kin a shim.
cp "$KIN" "$T/shimlink"
"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox --add-binary "$(command -v containerd)" \
	--add-binary "$(command -v ctr)" --add "$T/shimlink:/usr/bin/containerd-shim-kin-v2" \
	--add-binary "$PWD/$BUILD/shim-hostile" \
	--add "$T/bb.tar:/test/bb.tar" --add "$T/containerd.toml:/test/containerd.toml" \
	--add tests/vm/shim-checks.sh:/test/checks.sh >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }

timeout 600 "$KIN" vm run --kernel "$KERNEL" --image "$T/guest.cpio" --state-dir "$T/state" \
	--name shim --cpus 2 --memory 1024 --timeout 500s -- /usr/bin/busybox sh /test/checks.sh \
	>"$T/run.log" 2>&1
rc=$?
con="$T/state/shim/console.log"
[ -f "$con" ] || { bad boot "no console log" "$T/run.log"; vm_suite_end; exit; }
n=0
while read -r _ name verdict why; do
	n=$((n + 1))
	[ "$verdict" = ok ] && ok "guest/$name" || bad "guest/$name" "$why"
done < <(grep -a '^CHECK ' "$con" | tr -d '\r')
[ $n -ge 7 ] && ok guest_checks_ran || bad guest_checks_ran "only $n guest checks reported" "$con"
[ $rc -eq 0 ] && ok vmm_exit_0 || bad vmm_exit_0 "kin vm run exited $rc" "$T/run.log"
vm_suite_end
