#!/usr/bin/env bash
# Re-exec with containers from images (docs/reexec.md): a daemon kin
# runs executables from an image (one printing numbered lines, one that
# restarts on failure and counts its runs in its writable layer) and a
# zone whose root is an image, and re-executes itself, then the zone kin
# re-executes itself too. Nothing notices: the same pids, every line once
# and in order, the restarts go on in the same writable layer (an overlay
# mounted again at each run), the images still in use (rm refused). Then
# kin is killed with SIGKILL: its successor adopts the executables and the
# zone with their containers. Once
# the executables are deleted and the zones stopped, every writable layer
# is gone and the images can be removed; no fd leaked.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin reexec-images
ns_need_cgroup2
command -v python3 >/dev/null || ns_skip "no python3 to build test images"
[ -x /bin/busybox ] || ns_skip "no /bin/busybox (busybox-static)"
TOP=kin-rxi-test-$$
S=$T/k.sock
# Not under /tmp or /run: a zone has its own of both.
VAR=/var/tmp/kin-rxi-test-$$
BASE=$CG/$TOP/d
# Names unique to this run: the containers directory is the host's.
C=rxi$$
Z=rxiz$$
K=/run/kin/containers
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T" "$VAR" "$K/$C".* "$K/zone.$Z".*
}
trap cleanup EXIT
mkdir -p "$VAR"

SD=$T/state
daemon_start() {
	ns_daemon_start "$T/kin.log" --log-level debug --grace 2s --socket "$S" --image-store "$VAR/store" \
		--zone-dir "$T/zones" --state-dir "$SD"
}
daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }
pid_of() { kc ${2:+--target "$2"} -o json exec status "$C" "$1"; sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/out"; }
zpid() { kc -o json zone status "$1"; sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/out"; }
layers() { ls -d "$K/$1".* 2>/dev/null | wc -l; }

# (with kin's libraries for SANITIZE=1 builds: the zone's kin runs there)
B=$T/base
ns_busybox_root "$B"
mkdir -p "$B/etc" "$B/data"
for c in sh echo cat wc sleep; do ln -s busybox "$B/bin/$c"; done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$B/etc/passwd"
printf 'root:x:0:\n' >"$B/etc/group"
python3 tests/oci/mkimage.py --format oci --out "$T/img" --tag 1 \
	--config '{"Cmd":["/bin/sh"],"Env":["PATH=/bin"]}' "$B" >/dev/null ||
	bad build_image "mkimage.py failed"
kc image import "oci:$T/img:1" --name bb:1 || bad import "rc $rc: $(cat "$T/out")"

N=300
kc cell create "$C"
kc exec start "$C" tick --image bb:1 -- sh -c \
	"i=0; while [ \$i -lt $N ]; do i=\$((i+1)); echo n\$i; sleep 0.01; done"
# Each run appends to /data/runs in its writable layer and prints the count
# (its restart backoff doubles up to 30 s: the waits for a next run below
# are that long, as a loaded machine needs).
kc exec start --restart always "$C" again --image bb:1 -- sh -c \
	'echo x >>/data/runs; wc -l </data/runs; sleep 0.2; exit 3'
kc exec start "$C" forever --image bb:1 -- sleep 100000
kc zone create "$Z" --image bb:1
kc --target "$Z" cell create w && kc --target "$Z" exec start w z -- sleep 100000 ||
	bad zone_from_image "rc $rc: $(cat "$T/out")"
sleep 0.3
pf=$(pid_of forever)
pz=$(zpid "$Z")
[ -n "$pf" ] && [ -n "$pz" ] && [ "$(layers "$C")" = 3 ] && [ "$(layers "zone.$Z")" = 1 ] &&
	ok running_from_images || bad running_from_images "pid $pf, zone $pz, layers $(ls "$K")"
ns_fds >"$T/fds0"

n_ok=0
for i in 1 2 3; do
	kc reexec
	[ $rc -eq 0 ] && out_has '^re-executed ' && n_ok=$((n_ok + 1)) || echo "    | $(cat "$T/out")"
	sleep 0.3
done
[ $n_ok -eq 3 ] && ok reexec_with_containers || bad reexec_with_containers "$n_ok of 3: $(grep 're-exec' "$T/kin.log" | tail -3)"
grep -q 'not taken over' "$T/kin.log" && bad containers_taken_over "$(grep 'not taken over' "$T/kin.log")" ||
	ok containers_taken_over

# The zone kin re-executes itself too (its binary: the parent's sealed copy).
kc --target "$Z" reexec
[ $rc -eq 0 ] && [ "$(zpid "$Z")" = "$pz" ] && ok zone_from_image_reexecs ||
	bad zone_from_image_reexecs "rc $rc: $(cat "$T/out")"

[ "$(pid_of forever)" = "$pf" ] && [ "$(awk '{print $4}' "/proc/$pf/stat" 2>/dev/null)" = "$DPID" ] &&
	ok same_child || bad same_child "pid $(pid_of forever) vs $pf"
kc exec wait "$C" tick
kc exec logs "$C" tick
seq 1 $N | sed 's/^/n/' | cmp -s - "$T/out" && ok every_line_once_in_order ||
	bad every_line_once_in_order "$(wc -l <"$T/out") lines"
kc image rm bb:1
[ $rc -eq 1 ] && out_has 'in use' && ok image_still_in_use || bad image_still_in_use "rc $rc: $(cat "$T/out")"

# Restarts after the re-execs: the same writable layer, mounted again.
kc exec logs "$C" again
n0=$(tail -1 "$T/out")
wait_for "kc exec logs '$C' again; [ \"\$(tail -1 '$T/out')\" -gt $n0 ] 2>/dev/null" 1500
kc exec logs "$C" again
[ "$(tail -1 "$T/out")" -gt "$n0" ] && seq 1 "$(tail -1 "$T/out")" | cmp -s - "$T/out" &&
	ok restarts_in_same_layer || bad restarts_in_same_layer "$(tr '\n' ' ' <"$T/out")"

kc --target "$Z" exec status w z
out_has 'running' && ok zone_workload_runs || bad zone_workload_runs "$(cat "$T/out")"
new=$(ns_fds_back "$T/fds0") && ok no_fd_leaked || bad no_fd_leaked "more than before: $new"

# A zone's layer goes with it after the re-execs, as ever.
kc zone stop "$Z"
wait_for "[ \$(layers 'zone.$Z') = 0 ]" 100 && ok zone_layer_removed || bad zone_layer_removed "$(ls "$K")"

# Killed with SIGKILL: the successor adopts the executables from images
# (same pids, their containers: the image still in use, restarts in the
# same layer), and a zone from an image with its container (its layer
# removed once it stops).
kc zone create "$Z" --image bb:1 || bad zone_again "rc $rc: $(cat "$T/out")"
pz2=$(zpid "$Z")
kc exec logs "$C" again
n1=$(tail -1 "$T/out")
wait_for "[ -s '$SD/state' ] && [ \$(layers 'zone.$Z') = 1 ]" 100
sleep 0.1 # the state is rewritten within 20 ms of the last change
# A layer the killed kin made in its last moments (its state does not name
# it): its name has the kin's epoch, so the successor removes it; another
# epoch's (another kin's) is left alone.
ep=$(ls -d "$K/$C"* | head -1 | sed -n 's/.*\.\([0-9a-f-]*\)\.[0-9]*$/\1/p')
LEAK=$K/$C.leak.$ep.999 OTHER=$K/$C.other.1.1
mkdir -p "$LEAK/upper" "$OTHER/upper"
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
daemon_start
serving && ok successor_serving || { bad successor_serving "$(tail -5 "$T/kin.log")"; exit 1; }
[ "$(pid_of forever)" = "$pf" ] && grep -q "adopt: exec \"$C/forever\": pid $pf adopted" "$T/kin.log" &&
	grep -q 'adopt: 3 executables. containers adopted' "$T/kin.log" && ok image_execs_adopted ||
	bad image_execs_adopted "pid $(pid_of forever) vs $pf: $(grep 'adopt' "$T/kin.log" | tail -5)"
wait_for "kc zone list; out_has '^$Z .*running.*ready'" 100
[ "$(zpid "$Z")" = "$pz2" ] && [ "$(layers "zone.$Z")" = 1 ] && ok image_zone_adopted ||
	bad image_zone_adopted "pid $(zpid "$Z") vs $pz2: $(ls "$K"): $(grep "zone" "$T/kin.log" | tail -3)"
wait_for "[ ! -e '$LEAK' ]" 100 && [ -n "$ep" ] && [ -d "$OTHER" ] &&
	grep -q "adopt: the writable layer $LEAK is removed" "$T/kin.log" && ok last_moment_layer_removed ||
	bad last_moment_layer_removed "epoch '$ep': $(ls -d "$K/$C"*)"
rm -rf "$OTHER"
kc zone stop "$Z"
wait_for "[ \$(layers 'zone.$Z') = 0 ]" 100 && ok adopted_zone_layer_removed ||
	bad adopted_zone_layer_removed "$(ls "$K")"
kc zone create "$Z" --image bb:1 &&
	ep2=$(ls -d "$K/zone.$Z".* | head -1 | sed -n 's/.*\.\([0-9a-f-]*\)\.[0-9]*$/\1/p') &&
	kc zone stop "$Z" && ok zone_name_reusable || bad zone_name_reusable "rc $rc: $(cat "$T/out")"
wait_for "kc exec logs '$C' again; [ \"\$(tail -1 '$T/out')\" -gt $n1 ] 2>/dev/null" 1500
kc exec logs "$C" again
[ "$(tail -1 "$T/out")" -gt "$n1" ] && ok adopted_restarts_in_same_layer ||
	bad adopted_restarts_in_same_layer "$(tr '\n' ' ' <"$T/out")"
kc image rm bb:1
[ $rc -eq 1 ] && out_has 'in use' && ok image_in_use_after_adoption ||
	bad image_in_use_after_adoption "rc $rc: $(cat "$T/out")"

# The owners release the layers as ever after all that.
for x in tick again forever; do
	kc exec stop "$C" "$x" >/dev/null
	kc exec delete "$C" "$x"
done
wait_for "[ \$(layers '$C') = 0 ] && [ \$(layers 'zone.$Z') = 0 ]" 100 && ok layers_removed ||
	bad layers_removed "$(ls "$K")"

# Killed when its state names no container: the state gives its epoch all
# the same, so a layer it made in its last moments is removed.
LEAK2=$K/$C.leak2.$ep2.7
mkdir -p "$LEAK2/upper"
sleep 0.1
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
daemon_start
wait_for "[ ! -e '$LEAK2' ]" 100 && [ -n "$ep2" ] &&
	grep -q "adopt: the writable layer $LEAK2 is removed" "$T/kin.log" && ok last_moment_layer_of_none_removed ||
	bad last_moment_layer_of_none_removed "epoch '$ep2': $(ls "$K")"
kc image rm bb:1
[ $rc -eq 0 ] && ok image_removable || bad image_removable "rc $rc: $(cat "$T/out")"
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
drc=$?
DPID=
[ $drc -eq 0 ] && ok stops_clean || bad stops_clean "exit $drc"
clean_log "$T/kin.log" && ok no_sanitizer_reports || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
