# A private containerd for the suites that drive kin's shim through ctr
# (tests/ns/shim, tests/ns/soak-shim): Debian's 1.6 with its own config,
# root, state and socket (CRI off), containerd-shim-kin-v2 on its PATH,
# and a hand-built busybox image imported (no registry). Source after
# tests/ns/lib.sh and ns_suite_begin; NS names the namespace.
#   cd_setup APPLET...  sets CD, BIN, C (ctr with address and namespace),
#                       R (the runtime flag), IMG; starts containerd;
#                       skips the suite when it cannot run here
#   cd_start            containerd (again), CPID its pid
#   cd_cleanup          tasks killed, containerd and shims stopped, their
#                       mounts, state and cgroups gone
for c in containerd ctr python3; do
	command -v $c >/dev/null || ns_skip "no $c (scripts/deps.sh test installs containerd)"
done
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"

cd_cleanup() {
	for id in $(ctr -a "$CD/sock" -n $NS t ls -q 2>/dev/null); do
		ctr -a "$CD/sock" -n $NS t kill -s KILL "$id" >/dev/null 2>&1
	done
	[ -n "${CPID:-}" ] && kill "$CPID" 2>/dev/null && wait "$CPID" 2>/dev/null
	pkill -KILL -f "containerd-shim-kin(-vm)?-v2 -namespace $NS " 2>/dev/null
	sleep 0.2
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	for d in /run/kin/shim/$NS/*/pod; do umount -l "$d" 2>/dev/null; done
	rm -rf "/run/kin/shim/$NS"
	cgroup_tree_remove "$CG/$NS"
}

cd_start() {
	KIN_SHIM_CONFIG=$T/shim.conf PATH=$BIN:$PATH containerd --config "$CD/config.toml" >>"$CD/log" 2>&1 &
	CPID=$!
	wait_for "ctr -a '$CD/sock' version >/dev/null 2>&1" 250
}

cd_setup() {
	BIN=$T/bin
	CD=$T/cd
	mkdir -p "$BIN" "$CD"
	ln -s "$KIN" "$BIN/containerd-shim-kin-v2"
	cat >"$CD/config.toml" <<EOC
version = 2
root = "$CD/root"
state = "$CD/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CD/sock"
[ttrpc]
  address = "$CD/sock.ttrpc"
EOC
	cd_start || { tail -5 "$CD/log"; ns_skip "containerd does not start here"; }
	C="ctr -a $CD/sock -n $NS"
	R="--runtime io.containerd.kin.v2"
	local L=$T/layer
	busybox_layer "$L" "$@"
	python3 tests/oci/mkimage.py --format oci-archive --out "$T/bb.tar" --tag bb:1 \
		--config '{"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}' "$L" >/dev/null &&
		$C image import --all-platforms "$T/bb.tar" >"$T/out" 2>&1 ||
		bad image_import "ctr could not import the image"
	IMG=bb:1
}
