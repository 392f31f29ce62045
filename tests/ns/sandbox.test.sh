#!/usr/bin/env bash
# containerd's Sandbox API on kin's shim, started as containerd's sandboxed
# CRI starts it: `containerd-shim-kin-v2 ... -id SB start` in a bundle
# with no config.json (its address printed; with KIN_SHIM_BOOTSTRAP=3 the
# bootstrap version 3 JSON), then a client of our own written from the
# proto's field numbers (tests/shim/sandbox_client.py: ttrpc by hand)
# makes the calls: hostile ones first (wrong order, a bad Any, no netns,
# a netns that is none), then create, start (its pid the zone kin, in the
# netns given), platform, status, ping, a container through the Task API
# joining the zone (its hostname and netns the pod's; State again as
# containerd.task.v3.Task), metrics, wait blocking until stop ends the
# zone (killed after its timeout: a container ignores SIGTERM), and
# shutdown; the shim then gone with its socket, state and
# cgroup.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin sandbox
ns_need_cgroup2
PY=/usr/bin/python3 # Debian's, with Debian's grpcio tools
$PY -c 'import grpc_tools' 2>/dev/null || ns_skip "no python3-grpc-tools"
command -v runc >/dev/null || ns_skip "no runc (its 'spec' makes the container's config)"
command -v ip >/dev/null || ns_skip "no ip (iproute2)"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
NS=kinsb$$
SB=sb$$
NETNS=kinsb$$
cleanup() {
	[ -n "${SHIM:-}" ] && kill -KILL "$SHIM" 2>/dev/null
	sleep 0.2
	for d in /run/kin/shim/$NS/*/pod; do umount -l "$d" 2>/dev/null; done
	rm -rf "/run/kin/shim/$NS"
	cgroup_tree_remove "$CG/kin-shim/$NS-$SB"
	ip netns del "$NETNS" 2>/dev/null
	[ -n "${SOCK:-}" ] && rm -f "$SOCK"
	for m in $(awk -v t="$T" 'index($5, t) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/bin" "$T/sb" "$T/c1"
ln -s "$KIN" "$T/bin/containerd-shim-kin-v2"
ip netns add "$NETNS" || ns_skip "cannot make a network namespace"
# The container's bundle: busybox and runc's default spec.
mkdir -p "$T/c1/rootfs/bin" "$T/c1/rootfs/proc" "$T/c1/rootfs/dev" "$T/c1/rootfs/sys"
cp /bin/busybox "$T/c1/rootfs/bin/busybox"
for c in sh hostname readlink sleep; do ln -s busybox "$T/c1/rootfs/bin/$c"; done
(cd "$T/c1" && runc spec) || bad runc_spec "runc spec failed"
cp -a "$T/c1" "$T/c2"

SHIMARGS="-namespace $NS -address $T/containerd.sock -publish-binary /bin/true -id $SB"
(cd "$T/sb" && "$T/bin/containerd-shim-kin-v2" $SHIMARGS start) >"$T/addr" 2>"$T/err"
rc=$?
ADDR=$(cat "$T/addr")
[ $rc -eq 0 ] && [ ! -e "$T/sb/config.json" ] && [[ $ADDR == unix:///run/containerd/s/* ]] &&
	[ "$(cat "$T/sb/address")" = "$ADDR" ] && ok start_without_config ||
	bad start_without_config "rc $rc, '$ADDR', $(cat "$T/err")"
SOCK=${ADDR#unix://}
SHIM=$(pgrep -f "containerd-shim-kin-v2 -namespace $NS -id $SB " | head -1)
# The same shim again, answered as containerd 2.x's bootstrap version 3.
(cd "$T/sb" && KIN_SHIM_BOOTSTRAP=3 "$T/bin/containerd-shim-kin-v2" $SHIMARGS start) >"$T/boot" 2>&1
$PY -c 'import json, sys
b = json.load(open(sys.argv[1]))
assert b == {"version": 3, "address": sys.argv[2], "protocol": "ttrpc"}, b' "$T/boot" "$ADDR" &&
	ok bootstrap_v3 || bad bootstrap_v3 "$(cat "$T/boot")"

(cd "$T/sb" && timeout 120 $PY "$OLDPWD/tests/shim/sandbox_client.py" "$SOCK" "$SB" "/run/netns/$NETNS" \
	"$T/c1" "$T/c2" "$T") >"$T/client" 2>&1
while read -r verdict name why; do
	case $verdict in
	ok) ok "$name" ;;
	bad) bad "$name" "$why" ;;
	*) bad client "$verdict $name $why" ;;
	esac
done <"$T/client"
grep -q '^ok shutdown$' "$T/client" || { cp "$T/client" "$T/out"; bad client_ran_to_end "$(tail -3 "$T/client")"; }

# Shutdown leaves nothing behind.
wait_for "[ -z \"\$SHIM\" ] || [ ! -d /proc/$SHIM ]" 500 && ok shim_exited || bad shim_exited "pid $SHIM"
[ ! -e "$SOCK" ] && [ ! -e "/run/kin/shim/$NS/$SB" ] && [ ! -d "$CG/kin-shim/$NS-$SB" ] &&
	ok nothing_left || bad nothing_left "$(ls -d "$SOCK" "/run/kin/shim/$NS/$SB" 2>&1; find "$CG/kin-shim/$NS-$SB" -name cgroup.procs -exec sh -c "echo {}; cat {}" \; 2>&1 | head -20)"
SHIM=
ns_suite_end
