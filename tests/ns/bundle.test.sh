#!/usr/bin/env bash
# Runtime-spec bundles (exec start --bundle) through a daemon kin on the
# host's cgroup2: the specs peers write — `runc spec` and `crun spec` (both
# Debian's, also --rootless) and containerd's `ctr oci spec` — run unchanged but for
# "terminal" (ctr's has no args: the argv is given), with a busybox rootfs.
# Checked from inside: the hostname, PID 1, the capability sets, rlimits,
# a read-only root, the spec's mounts (/dev/shm, /dev/mqueue, sysfs), masked
# and read-only /proc paths, the device program (no disk node); then a
# bind mount, a joined network namespace, a sysctl and a seccomp profile
# with errnoRet and argument conditions; and malformed or unsupported
# specs refused naming the JSON path; process.terminal with a consoleSize
# gives the process a pty of that size, named /dev/console in its root.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin bundle
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 to edit specs"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
TOP=kin-bundle-test-$$
S=$T/k.sock
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$BASE"
sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --socket '$S' --image-store '$T/store'" \
	>"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250 || bad kin_ready "no ready line"
run() {
	local name=$1
	shift
	kc exec start c "$name" "$@" || return
	"$KIN" ctl --socket "$S" exec wait c "$name" >/dev/null 2>&1
	rc=$?
	"$KIN" ctl --socket "$S" exec logs c "$name" >"$T/out" 2>&1
}
# bundle DIR SPEC-COMMAND...: a busybox rootfs and the peer's spec, with
# terminal false and nothing else changed.
bundle() {
	local d=$1
	shift
	mkdir -p "$d/rootfs/bin" "$d/rootfs/tmp"
	cp /bin/busybox "$d/rootfs/bin/busybox"
	for c in sh cat echo ls id hostname grep mount ip wc mknod stty tty; do ln -sf busybox "$d/rootfs/bin/$c"; done
	(cd "$d" && "$@") >"$d/spec.out" 2>&1 || return 1
	[ -f "$d/config.json" ] || mv "$d/spec.out" "$d/config.json"
	python3 - "$d/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
json.dump(c, open(p, "w"))
PY
}
kc cell create c
INSIDE='echo "host=$(hostname) pid=$$"; grep -E "^Cap(Bnd|Eff|Prm|Amb)" /proc/self/status | tr "\t\n" "  "; echo; echo "nofile=$(ulimit -n)"; touch /x 2>/dev/null && echo ROOT_RW; echo "timer_list=$(wc -c </proc/timer_list)"; echo x >/proc/sys/kernel/domainname 2>/dev/null && echo SYS_RW; grep -E " /dev/shm | /dev/mqueue | /sys " /proc/self/mounts | cut -d" " -f2 | tr "\n" " "; echo; mknod /tmp/sda b 8 0 2>/dev/null && echo MKNOD; true'

for peer in runc crun; do
	if ! command -v $peer >/dev/null; then
		bad "${peer}_spec" "$peer is not installed (scripts/deps.sh installs it)"
		continue
	fi
	bundle "$T/$peer" $peer spec || { bad "${peer}_spec" "$peer spec failed"; continue; }
	run "$peer" --bundle "$T/$peer" -- sh -c "$INSIDE"
	# runc/crun's defaults: caps AUDIT_WRITE, KILL, NET_BIND_SERVICE (0x20000420)
	# in bounding, effective and permitted; no inheritable, so no ambient.
	if [ $rc -eq 0 ] && out_has "^host=$peer pid=1$" && out_has 'CapBnd: 0000000020000420' &&
		out_has 'CapEff: 0000000020000420' && out_has 'CapAmb: 0000000000000000' &&
		out_has '^nofile=1024$' && ! out_has 'ROOT_RW|SYS_RW|MKNOD' && out_has '^timer_list=0$' &&
		out_has '/dev/shm /dev/mqueue /sys'; then
		ok "${peer}_spec_runs"
	else
		bad "${peer}_spec_runs" "rc $rc: $(tr '\n' '|' <"$T/out")"
	fi
done

# --rootless: a user namespace (0 mapped to kin's own uid) and no network
# namespace, so sysfs is the host's, bound read-only, as runc does.
for peer in runc crun; do
	command -v $peer >/dev/null || continue
	bundle "$T/$peer-rl" $peer spec --rootless || { bad "${peer}_rootless" "spec failed"; continue; }
	run "$peer-rl" --bundle "$T/$peer-rl" -- sh -c 'cat /proc/self/uid_map; readlink /proc/self/ns/user; grep " /sys " /proc/self/mounts | cut -d" " -f4 | cut -d, -f1'
	[ $rc -eq 0 ] && [ "$(sed -n 2p "$T/out")" != "$(readlink /proc/self/ns/user)" ] &&
		out_has '^ +0 +0 +1$' && out_has '^ro$' && ok "${peer}_rootless_spec_runs" ||
		bad "${peer}_rootless_spec_runs" "rc $rc: $(tr '\n' '|' <"$T/out")"
done

if command -v ctr >/dev/null; then
	bundle "$T/ctr" ctr oci spec || bad ctr_spec "ctr oci spec failed"
	run ctr --bundle "$T/ctr" -- sh -c "$INSIDE"
	# containerd's default caps (0xa80425fb) include MKNOD: the device
	# program still refuses a disk's node.
	[ $rc -eq 0 ] && out_has 'pid=1$' && out_has 'CapBnd: 00000000a80425fb' && ! out_has MKNOD &&
		out_has '^timer_list=0$' &&
		ok ctr_spec_runs || bad ctr_spec_runs "rc $rc: $(tr '\n' '|' <"$T/out")"
	kc exec start c noargs --bundle "$T/ctr"
	[ $rc -eq 1 ] && out_has 'config.json: process.args: required' && ok ctr_spec_needs_argv ||
		bad ctr_spec_needs_argv "rc $rc"
else
	bad ctr_spec "ctr is not installed (containerd)"
fi

# Beyond the defaults: a read-only bind of a host file, a sysctl in the
# container's network namespace, and joining another executable's
# network namespace by path.
echo shared >"$T/shared.txt"
cp -r "$T/runc" "$T/extra"
python3 - "$T/extra/config.json" "$T/shared.txt" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["mounts"].append({"destination": "/data/shared.txt", "type": "bind", "source": sys.argv[2],
                    "options": ["rbind", "ro"]})
c["linux"]["sysctl"] = {"net.ipv4.ip_forward": "1"}
json.dump(c, open(p, "w"))
PY
run extra --bundle "$T/extra" -- sh -c 'cat /data/shared.txt; (echo no >/data/shared.txt) 2>/dev/null || echo RO; cat /proc/sys/net/ipv4/ip_forward'
[ "$(tr '\n' ' ' <"$T/out")" = "shared RO 1 " ] && ok bind_and_sysctl || bad bind_and_sysctl "$(tr '\n' '|' <"$T/out")"
kc exec start c holder --bundle "$T/runc" -- sh -c 'sleep 30'
hpid=$("$KIN" ctl --socket "$S" -o json exec status c holder | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
cp -r "$T/runc" "$T/join"
python3 - "$T/join/config.json" "/proc/$hpid/ns/net" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["namespaces"] = [n if n["type"] != "network" else {"type": "network", "path": sys.argv[2]}
                            for n in c["linux"]["namespaces"]]
json.dump(c, open(p, "w"))
PY
run joined --bundle "$T/join" -- sh -c 'readlink /proc/self/ns/net'
[ "$(cat "$T/out")" = "$(readlink /proc/$hpid/ns/net)" ] && ok join_net_namespace ||
	bad join_net_namespace "$(cat "$T/out") vs $(readlink /proc/$hpid/ns/net)"
kc exec stop c holder

# linux.devices: a node made in the container's /dev and allowed by the
# device program above the spec's deny-all; a disk's is still refused.
if [ -c /dev/fuse ]; then
	cp -r "$T/runc" "$T/dev"
	python3 - "$T/dev/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229,
                          "fileMode": 438, "uid": 0, "gid": 0}]
json.dump(c, open(p, "w"))
PY
	# A cell of its own: device programs of one cell stack (every one must allow).
	kc cell create devc
	kc exec start devc dev --bundle "$T/dev" -- sh -c 'ls -l /dev/fuse | cut -c1-10; (exec 3<>/dev/fuse) && echo OPEN; (exec 3</dev/null) && echo NULL'
	"$KIN" ctl --socket "$S" exec wait devc dev >/dev/null 2>&1
	"$KIN" ctl --socket "$S" exec logs devc dev >"$T/out" 2>&1
	[ "$(tr '\n' ' ' <"$T/out")" = "crw-rw-rw- OPEN NULL " ] && ok linux_devices_node ||
		bad linux_devices_node "$(tr '\n' '|' <"$T/out")"
fi

# A seccomp profile in the spec's JSON: mkdir fails with the profile's
# errnoRet (38, ENOSYS), other calls work; a name this kernel lacks is
# skipped, a rule with an argument condition loads.
cp -r "$T/runc" "$T/sec"
python3 - "$T/sec/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
    "syscalls": [
        {"names": ["mkdir", "mkdirat", "no_such_syscall"], "action": "SCMP_ACT_ERRNO",
         "errnoRet": 38},
        {"names": ["rmdir"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
         "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]}]}
c["root"]["readonly"] = False
json.dump(c, open(p, "w"))
PY
run sec --bundle "$T/sec" -- sh -c 'mkdir /tmp/a 2>&1; echo > /tmp/f && echo F'
out_has 'Function not implemented' && out_has '^F$' && ok seccomp_json_errno_ret ||
	bad seccomp_json_errno_ret "$(tr '\n' '|' <"$T/out")"

# Refusals, each naming its JSON path.
refuse() { # NAME PYTHON-EDIT EXPECTED
	cp -r "$T/runc" "$T/$1"
	python3 - "$T/$1/config.json" "$2" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
exec(sys.argv[2])
json.dump(c, open(p, "w"))
PY
	kc exec start c "$1" --bundle "$T/$1"
	[ $rc -eq 1 ] && grep -qF -- "$3" "$T/out" && ok "refuses_$1" || bad "refuses_$1" "rc $rc"
}
refuse badaction 'c["linux"]["namespaces"].append({"type": "time"})' 'config.json: linux.namespaces[5]: time namespaces are not supported'
refuse badcap 'c["process"]["capabilities"]["bounding"].append("CAP_FOO")' 'config.json: process.capabilities.bounding: unknown capability "CAP_FOO"'
refuse relmount 'c["mounts"].append({"destination": "rel", "type": "tmpfs"})' 'config.json: mounts[7].destination: "rel" is not an absolute path'
refuse dupns 'c["linux"]["namespaces"].append({"type": "pid"})' 'config.json: linux.namespaces[5]: pid is listed twice'
refuse seccomp 'c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_FOO"}]}' 'config.json: linux.seccomp.syscalls[0].action: unknown action "SCMP_ACT_FOO"'
refuse hooks 'c["hooks"] = {"prestart": [{"path": "/bin/true"}]}' 'config.json: hooks: OCI hooks are not supported yet'
# process.terminal with a consoleSize: a pty of kin's, of that size.
cp -r "$T/runc" "$T/tty"
python3 - "$T/tty/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = True
c["process"]["consoleSize"] = {"height": 33, "width": 77}
json.dump(c, open(p, "w"))
PY
run tty --bundle "$T/tty" -- sh -c 'stty size; [ -t 0 ] && [ -t 2 ] && echo TTY; tty'
[ "${rc:-1}" -eq 0 ] && out_has '^33 77' && out_has '^TTY' && out_has '^/dev/console' && ok terminal_bundle ||
	bad terminal_bundle "rc ${rc:-?}: $(tr '\r\n' '||' <"$T/out")"
refuse rlimit 'c["process"]["rlimits"][0]["soft"] = 99999' 'config.json: process.rlimits[0]: soft 99999 is above hard 1024'
echo '{"ociVersion": "1.0.2", "process": ' >"$T/runc-broken.json"
mkdir -p "$T/broken" && cp "$T/runc-broken.json" "$T/broken/config.json"
kc exec start c broken --bundle "$T/broken" -- true
[ $rc -eq 1 ] && out_has 'config.json: not JSON' && ok refuses_broken_json || bad refuses_broken_json "rc $rc"

# A config.json that is a FIFO nobody writes: refused at once (kin reads
# the bundle itself and must not block on it).
mkdir -p "$T/fifo" && mkfifo "$T/fifo/config.json"
kc --timeout 5s exec start c fifo --bundle "$T/fifo" -- true
[ $rc -eq 1 ] && out_has 'config.json: not a regular file' && ok refuses_fifo_config ||
	bad refuses_fifo_config "rc $rc"

kc health
[ "$(cat "$T/out")" = SERVING ] && ok still_serving || bad still_serving "$(cat "$T/out")"
kill -TERM $DPID
wait $DPID
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
