#!/usr/bin/env bash
# The pod flow, as docs/oci.md shows it and a user would run it: images
# imported into a daemon kin, a pod zone (--net) made with no root of its
# own (so it sees its parent's root, image store included, read-only),
# two containers started in it from two images, one reaching the other
# over the pod's localhost (busybox httpd and wget) while each has its own
# root; the same one zone further down (pod1/inner); the issue's first
# flow (a shell in a cell of a fresh zone); a zone whose root is an image;
# and nothing left once the pods stop (processes, cgroups, mounts,
# writable layers).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin pod
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 to build test images"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
TOP=kin-pod-test-$$
S=$T/k.sock
# Not under /tmp or /run: a zone has its own of both.
VAR=/var/tmp/kin-pod-test-$$
ST=$VAR/store
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz$DPID."
	rm -rf "$T" "$VAR"
}
trap cleanup EXIT

mkdir -p "$BASE" "$VAR"
sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --socket '$S' --image-store '$ST'" \
	>"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250 || bad kin_ready "no ready line"
# logs_of TARGET CELL NAME: its output, once it has ended.
logs_of() {
	"$KIN" ctl --socket "$S" --target "$1" exec wait "$2" "$3" >/dev/null 2>&1
	"$KIN" ctl --socket "$S" --target "$1" exec logs "$2" "$3" 2>&1
}

# Two images from busybox-static: a web server, and a client.
B=$T/base W=$T/web
mkdir -p "$B/bin" "$B/etc" "$B/tmp" "$W/www"
cp /bin/busybox "$B/bin/busybox"
for c in sh echo cat ls httpd wget sleep; do ln -s busybox "$B/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\nwww:x:33:33:www:/www:/bin/sh\n' >"$B/etc/passwd"
printf 'root:x:0:\nwww:x:33:\n' >"$B/etc/group"
echo "hello from the pod" >"$W/www/index.html"
python3 tests/oci/mkimage.py --format oci --out "$T/web" --tag 1 \
	--config '{"Cmd":["httpd","-f","-p","8080","-h","/www"],"Env":["PATH=/bin"],"User":"www"}' \
	"$B" "$W" >/dev/null &&
	python3 tests/oci/mkimage.py --format docker-archive --out "$T/client.tar" --tag client:1 \
		--config '{"Entrypoint":["wget","-qO-"],"Cmd":["http://127.0.0.1:8080/"],"Env":["PATH=/bin"]}' \
		"$B" >/dev/null || bad build_images "mkimage.py failed"
kc image import "oci:$T/web:1" --name web:1 && kc image import "docker-archive:$T/client.tar" ||
	bad import "rc $rc"

# pod_flow TARGET: two containers of the pod TARGET, one serving, one
# fetching over localhost; each with a root of its own.
pod_flow() {
	local tg=$1 tag=$2 page
	kc --target "$tg" cell create c &&
		kc --target "$tg" exec start c web --image web:1 || { bad "${tag}_web" "rc $rc"; return; }
	for _ in $(seq 50); do
		kc --target "$tg" exec start c client --image client:1
		page=$(logs_of "$tg" c client)
		[ "$page" = "hello from the pod" ] && break
		sleep 0.1
	done
	[ "$page" = "hello from the pod" ] && ok "${tag}_localhost_between_containers" ||
		bad "${tag}_localhost_between_containers" "'$page'"
	kc --target "$tg" exec start c look --image web:1 --user root -- sh -c 'echo mine >/tmp/x; cat /tmp/x'
	page=$(logs_of "$tg" c look)
	kc --target "$tg" exec start c look2 --image web:1 --user root -- sh -c 'cat /tmp/x 2>&1'
	page="$page $(logs_of "$tg" c look2)"
	case "$page" in "mine "*"No such file"*) ok "${tag}_own_roots" ;; *) bad "${tag}_own_roots" "$page" ;; esac
}

kc zone create pod1 --net
[ $rc -eq 0 ] && ok pod_zone || bad pod_zone "rc $rc"
pod_flow pod1 depth1
kc --target pod1 zone create inner --net
[ $rc -eq 0 ] && ok inner_pod_zone || bad inner_pod_zone "rc $rc"
pod_flow pod1/inner depth2

# The issue's flow: a fresh zone runs what its user expects.
kc zone create p1 && kc --target p1 cell create c &&
	kc --target p1 exec start c sh -- /bin/sh -c 'echo hi'
[ "$(logs_of p1 c sh)" = hi ] && ok plain_zone_runs_a_shell || bad plain_zone_runs_a_shell "rc $rc"
kc --target p1 image import "oci:$T/web:1" --name inzone
[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION' && out_has 'read-only here' && ok zone_store_read_only ||
	bad zone_store_read_only "rc $rc"

# A zone whose root is an image: an overlay of its layers and a writable
# layer of its own, gone with the zone.
kc zone create imgz --image web:1 && kc --target imgz cell create c &&
	kc --target imgz exec start c look -- /bin/sh -c 'cat /www/index.html; echo w >/www/new; ls /www'
[ "$(logs_of imgz c look | tr '\n' ' ')" = "hello from the pod index.html new " ] &&
	[ -n "$(ls -d /run/kin/containers/zone.imgz.* 2>/dev/null)" ] && ok zone_from_image ||
	bad zone_from_image "rc $rc: $(logs_of imgz c look | tr '\n' ' ')"
kc image rm web:1
[ $rc -eq 1 ] && out_has 'in use' && ok image_of_zone_in_use || bad image_of_zone_in_use "rc $rc"
kc zone stop imgz
wait_for "[ -z \"\$(ls -d /run/kin/containers/zone.imgz.* 2>/dev/null)\" ]" 100 &&
	ok zone_image_layer_removed || bad zone_image_layer_removed "$(ls -d /run/kin/containers/zone.imgz.*)"
kc zone create both --image web:1 --root /
[ $rc -eq 1 ] && out_has 'not both' && ok zone_root_and_image_refused ||
	bad zone_root_and_image_refused "rc $rc"

kc zone stop pod1
kc zone stop p1
kc health
[ "$(cat "$T/out")" = SERVING ] && ok still_serving || bad still_serving "$(cat "$T/out")"
wait_for "[ -z \"\$(find '$BASE/cells/zones' -mindepth 1 -type d 2>/dev/null)\" ]" 250 &&
	! grep -q " overlay " /proc/self/mountinfo && ok nothing_left ||
	bad nothing_left "$(find "$BASE/cells/zones" -mindepth 1 -type d 2>/dev/null | head -3)"
kill -TERM $DPID
wait $DPID
clean_log "$T/kin.log" && ok clean_log || bad clean_log "sanitizer report"
ns_suite_end
