#!/usr/bin/env bash
# Containers from images (exec start --image), through a daemon kin in a
# cgroup of its own on the host's cgroup2: the image's Entrypoint, Cmd,
# Env, WorkingDir and User as defaults, each replaced from the request as
# docker run does; users and groups from the image's own /etc/passwd and
# /etc/group; a root that is an overlay of the store's layers with a
# private writable layer (writes land there, never in the shared layers;
# whiteouts show); masked and read-only /proc paths; image rm refused
# while a container's record holds the image; the writable layer and every
# mount gone with the record.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin exec-image
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 to build test images"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
TOP=kin-xi-test-$$
S=$T/k.sock
ST=$T/store
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$BASE"
sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --log-level debug --socket '$S' \
	--image-store '$ST'" >"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250 || bad kin_ready "no ready line"
# run NAME ARGS...: starts an executable of cell c, waits, logs in $T/out.
run() {
	local name=$1
	shift
	kc exec start c "$name" "$@" || return
	"$KIN" ctl --socket "$S" exec wait c "$name" >/dev/null 2>&1
	rc=$?
	"$KIN" ctl --socket "$S" exec logs c "$name" >"$T/out" 2>&1
}

L1=$T/l1 L2=$T/l2
mkdir -p "$L1/bin" "$L1/etc" "$L1/data" "$L1/tmp" "$L2/data"
cp /bin/busybox "$L1/bin/busybox"
for c in sh echo cat ls id pwd wc; do ln -s busybox "$L1/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001:app:/home/app:/bin/sh\n' >"$L1/etc/passwd"
printf 'root:x:0:\napp:x:1001:\nextra:x:2000:app\n' >"$L1/etc/group"
echo a >"$L1/data/a"
: >"$L2/data/.wh.a"
echo c >"$L2/data/c"
python3 tests/oci/mkimage.py --format oci --out "$T/img" --tag echo \
	--config '{"Entrypoint":["/bin/echo"],"Cmd":["hello","from","bb"],"Env":["PATH=/bin"]}' \
	"$L1" "$L2" >/dev/null &&
	python3 tests/oci/mkimage.py --format oci --out "$T/img2" --tag sh \
		--config '{"Cmd":["/bin/sh"],"Env":["PATH=/bin","GREETING=hi"],"WorkingDir":"/data","User":"app"}' \
		"$L1" "$L2" >/dev/null || bad build_images "mkimage.py failed"
kc image import "oci:$T/img:echo" --name bb-echo && kc image import "oci:$T/img2:sh" --name bb-sh ||
	bad import "rc $rc"
kc cell create c

run e1 --image bb-echo
[ $rc -eq 0 ] && [ "$(cat "$T/out")" = "hello from bb" ] && ok entrypoint_and_cmd ||
	bad entrypoint_and_cmd "rc $rc: $(cat "$T/out")"
run e2 --image bb-echo -- other words
[ "$(cat "$T/out")" = "other words" ] && ok argv_replaces_cmd || bad argv_replaces_cmd "$(cat "$T/out")"

run s1 --image bb-sh -- sh -c 'echo $GREETING; pwd; id -u; id -g; id -G; ls /data'
[ "$(tr '\n' ' ' <"$T/out")" = "hi /data 1000 1001 1001 2000 c " ] && ok image_config_defaults ||
	bad image_config_defaults "$(tr '\n' ' ' <"$T/out")"
run s2 --image bb-sh --env GREETING=yo --cwd / --user root -- sh -c 'echo $GREETING; pwd; id -u'
[ "$(tr '\n' ' ' <"$T/out")" = "yo / 0 " ] && ok request_overrides || bad request_overrides "$(tr '\n' ' ' <"$T/out")"
run s3 --image bb-sh --user 4242:extra -- sh -c 'id -u; id -g'
[ "$(tr '\n' ' ' <"$T/out")" = "4242 2000 " ] && ok numeric_user_named_group ||
	bad numeric_user_named_group "$(tr '\n' ' ' <"$T/out")"
kc exec start c s4 --image bb-sh --user nosuch -- true
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && out_has "user \"nosuch\" is not in the image's /etc/passwd" &&
	ok unknown_user_refused || bad unknown_user_refused "rc $rc"
kc exec start c s5 --image bb-sh --uid 5 -- true
[ $rc -eq 1 ] && out_has 'INVALID_ARGUMENT' && out_has 'user' && ok uid_with_image_refused ||
	bad uid_with_image_refused "rc $rc"
kc exec start c s6 --image nosuch:image -- true
[ $rc -eq 1 ] && out_has 'NOT_FOUND' && ok unknown_image_refused || bad unknown_image_refused "rc $rc"

# Writes go to the container's own layer; the store's layers stay as they were.
run w1 --image bb-sh --user root -- sh -c 'echo new >/data/new && echo changed >/etc/motd && ls /data'
up=$(ls -d /run/kin/containers/c.w1.* 2>/dev/null | head -1)
[ "$(tr '\n' ' ' <"$T/out")" = "c new " ] && [ -f "$up/upper/data/new" ] &&
	[ -z "$(find "$ST/layers" -name new -o -name motd)" ] && ok writes_in_private_layer ||
	bad writes_in_private_layer "$(tr '\n' ' ' <"$T/out") upper=$up"
run w2 --image bb-sh -- sh -c 'ls /data; cat /etc/motd 2>&1 | wc -l'
[ "$(tr '\n' ' ' <"$T/out")" = "c 1 " ] && ok layers_private_per_container ||
	bad layers_private_per_container "$(tr '\n' ' ' <"$T/out")"

run m1 --image bb-sh --user root -- sh -c 'wc -c </proc/timer_list; echo x >/proc/sys/kernel/domainname && echo WROTE; grep -c " /proc/keys " /proc/self/mounts'
[ "$(head -1 "$T/out")" = 0 ] && ! out_has WROTE && out_has 'Read-only file system' && out_has '^1$' &&
	ok masked_and_read_only_proc || bad masked_and_read_only_proc "$(tr '\n' ' ' <"$T/out")"

# The device program: root in the container keeps CAP_MKNOD, yet a disk's
# node cannot be made (or opened); kin's /dev works.
run d1 --image bb-sh --user root -- sh -c 'mknod /tmp/sda b 8 0 && echo MADE; cat /tmp/sda >/dev/null 2>&1 && echo READ; echo x >/dev/null && echo NULL'
out_has '^NULL$' && out_has 'mknod: /tmp/sda: Operation not permitted' && ! out_has 'MADE|READ' &&
	ok device_program_denies_disk || bad device_program_denies_disk "$(tr '\n' ' ' <"$T/out")"

# In use: rm refused; the record's deletion gives the image back and
# removes the writable layer.
kc image rm bb-sh
[ $rc -eq 1 ] && out_has FAILED_PRECONDITION && out_has 'in use by [0-9]+ executable' &&
	ok rm_refused_while_used || bad rm_refused_while_used "rc $rc"
kc image list
out_has '^bb-sh .* [1-9][0-9]*$' && ok users_counted || bad users_counted "$(cat "$T/out")"
for n in s1 s2 s3 w1 w2 m1 d1; do kc exec delete c "$n"; done
wait_for "[ ! -e '$up' ]" 100 && ok writable_layer_removed || bad writable_layer_removed "$up is still there"
kc image rm bb-sh
[ $rc -eq 0 ] && ok rm_after_delete || bad rm_after_delete "rc $rc"
# A new start of the name replaces the record: the old run's layer goes.
run e3 --image bb-echo
first=$(ls -d /run/kin/containers/c.e3.* 2>/dev/null)
run e3 --image bb-echo
wait_for "[ ! -e '$first' ]" 100 && [ "$(ls -d /run/kin/containers/c.e3.* | wc -l)" -eq 1 ] &&
	ok restart_replaces_layer || bad restart_replaces_layer "$(ls -d /run/kin/containers/c.e3.*)"

kc cell delete --force c
kc health
[ "$(cat "$T/out")" = SERVING ] && ok still_serving || bad still_serving "$(cat "$T/out")"
wait_for "[ -z \"\$(ls /run/kin/containers 2>/dev/null | grep '^c\\.')\" ]" 100 &&
	! grep -q " overlay " /proc/self/mountinfo && ok nothing_left ||
	bad nothing_left "$(ls /run/kin/containers) $(grep -c ' overlay ' /proc/self/mountinfo) overlays"
kill -TERM $DPID
wait $DPID
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
