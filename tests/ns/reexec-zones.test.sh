#!/usr/bin/env bash
# Re-exec with zones (docs/reexec.md): a daemon kin runs zones two deep
# (pod1 with --net, inner inside it) with an executable printing numbered
# lines at the bottom, and re-executes itself; then pod1 and inner, zone
# kins, re-execute themselves too. No zone notices: the same zone kins
# (pids), still reachable through their routes, the line counter complete
# and in order, its exit status seen, pod1's network and log going on. A
# call relayed into a zone ends UNAVAILABLE to retry, and the zone is told
# to cancel it. Stopping the zones afterwards leaves no cgroup or veth;
# the names are free again; the daemon holds no more fds than before.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin reexec-zones

ns_need_cgroup2
TOP=kin-rxz-test-$$
BASE=$CG/$TOP/d
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz${DPID:-x}."
	rm -rf "$T"
}
trap cleanup EXIT

# Roots with a static busybox (and kin's libraries for SANITIZE=1 builds).
BB=$T/bbroot
ns_busybox_root "$BB"
cp -a "$BB" "$T/iroot" && mv "$T/iroot" "$BB/iroot"

S=$T/k.sock
ns_daemon_start "$T/kin.log" --log-level debug --grace 3s --socket "$S" --zone-dir "$T/zones"
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }
zpid() { kc ${2:+--target "$2"} -o json zone status "$1"; sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/out"; }
procs_below() { find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l; }

kc zone create pod1 --net --root "$BB"
kc --target pod1 zone create inner --root /iroot
kc --target pod1 cell create w
kc --target pod1/inner cell create a
N=400
kc --target pod1/inner exec start a c -- /bin/busybox sh -c \
	"i=0; while [ \$i -lt $N ]; do i=\$((i+1)); echo n\$i; /bin/busybox sleep 0.01; done"
kc --target pod1 exec start w slow -- /bin/busybox sleep 30
p1=$(zpid pod1)
pin=$(zpid inner pod1)
[ -n "$p1" ] && [ -n "$pin" ] && ok zones_two_deep || { bad zones_two_deep "pod1 $p1, inner $pin"; exit 1; }
sleep 0.2
ns_fds >"$T/fds0"
log0=$(wc -c <"$T/zones/pod1.log")

# A call in flight through the route: it ends UNAVAILABLE, pod1 cancels it.
"$KIN" ctl --socket "$S" --target pod1 exec wait w slow >"$T/wait.out" 2>&1 &
WPID=$!
sleep 0.2

n_ok=0
for i in 1 2 3; do
	kc reexec
	[ $rc -eq 0 ] && out_has '^re-executed ' && n_ok=$((n_ok + 1))
	sleep 0.2
done
[ $n_ok -eq 3 ] && ok root_reexec_with_zones || bad root_reexec_with_zones "$n_ok of 3 ($(grep 're-exec' "$T/kin.log" | tail -3))"
grep -q 're-exec: 1 zones taken over' "$T/kin.log" && ok zones_taken_over || bad zones_taken_over "$(grep 're-exec' "$T/kin.log" | tail -3)"

wait "$WPID"
wrc=$?
[ $wrc -ne 0 ] && grep -q 'UNAVAILABLE: kin is re-executing; retry' "$T/wait.out" && ok relayed_call_unavailable ||
	bad relayed_call_unavailable "exit $wrc: $(cat "$T/wait.out")"

[ "$(zpid pod1)" = "$p1" ] && [ "$(awk '{print $4}' "/proc/$p1/stat")" = "$DPID" ] &&
	[ "$(zpid inner pod1)" = "$pin" ] && ok same_zone_kins || bad same_zone_kins "pod1 $(zpid pod1) vs $p1"
kc zone list
out_has '^pod1 +namespace running .* ready$' && out_has '^  inner +namespace running .* ready$' &&
	ok zones_listed_ready || bad zones_listed_ready "$(cat "$T/out")"

# The zone's network goes on.
gw=$(kc -o json zone status pod1; sed -n 's/.*"gateway":"\([^"]*\)".*/\1/p' "$T/out")
kc --target pod1 exec start w ping -- /bin/busybox ping -c 1 -W 2 "$gw"
kc --target pod1 exec wait w ping
[ $rc -eq 0 ] && ok net_zone_after_reexec || bad net_zone_after_reexec "gateway $gw"
kc --target pod1 exec stop w slow

# The zone kins re-execute themselves: their channels to the parent go along.
kc --target pod1 reexec
r1=$rc
kc --target pod1/inner reexec
[ $r1 -eq 0 ] && [ $rc -eq 0 ] && out_has '^re-executed /proc/self/exe: .*, pid 1,' && ok zone_reexec ||
	bad zone_reexec "pod1 rc $r1; inner rc $rc"
# pod1's log pipe went along three times: its lines since reach the file.
wait_for "grep -q 're-exec: probing /proc/self/exe' '$T/zones/pod1.log'" 100
[ "$(wc -c <"$T/zones/pod1.log")" -gt "$log0" ] && grep -q 're-exec: probing /proc/self/exe' "$T/zones/pod1.log" &&
	ok zone_log_goes_on || bad zone_log_goes_on "pod1.log: $(tail -2 "$T/zones/pod1.log")"
kc --target pod1/inner -o json version
out_has '"reexecs":"?1' && out_has '"role":"zone"' && ok zone_counts_its_reexec || bad zone_counts_its_reexec "$(cat "$T/out")"
[ "$(zpid pod1)" = "$p1" ] && [ "$(zpid inner pod1)" = "$pin" ] && ok zones_kept_their_kins ||
	bad zones_kept_their_kins "pod1 $(zpid pod1) vs $p1, inner $(zpid inner pod1) vs $pin"

kc --target pod1/inner exec wait a c
[ $rc -eq 0 ] && ok exit_status_across_reexecs || bad exit_status_across_reexecs "rc $rc"
kc --target pod1/inner exec logs a c
seq 1 $N | sed 's/^/n/' | cmp -s - "$T/out" && ok every_line_once_in_order ||
	bad every_line_once_in_order "$(wc -l <"$T/out") lines: $(seq 1 $N | sed 's/^/n/' | diff - "$T/out" | head -3 | tr '\n' ' ')"

# One more round of the root with a zone kin that re-executed: then stop.
kc reexec
[ $rc -eq 0 ] && serving && ok reexec_again || bad reexec_again "rc $rc"
# The zones keep the binary's sealed copy their kins run from (one copy,
# handed along every re-exec; not let go after the re-exec's fallback is).
sleep 5.5
zexe=$(stat -L -c %i "/proc/$(zpid pod1)/exe")
held=$(for f in /proc/$DPID/fd/*; do case $(readlink "$f") in /memfd:kin*) stat -L -c %i "$f" ;; esac; done | sort -u)
[ -n "$zexe" ] && [ "$held" = "$zexe" ] && ok zones_keep_the_binary_copy ||
	bad zones_keep_the_binary_copy "zone runs inode $zexe; kin holds ${held:-none}"
new=$(ns_fds_back "$T/fds0") && ok no_fd_leaked || bad no_fd_leaked "more than before: $new"

kc zone stop pod1
[ $rc -eq 0 ] && out_has 'state: +gone' && ok zone_stops || bad zone_stops "rc $rc"
[ -z "$(ip -o link show 2>/dev/null | grep "kz$DPID\.")" ] && ok no_veth_left || bad no_veth_left "$(ip -o link show | grep "kz$DPID\.")"
[ ! -d "$BASE/cells/zones" ] && ok no_cgroup_left || bad no_cgroup_left "$(find "$BASE/cells/zones" -type d | head -3)"
kc zone create pod1 --root "$BB"
[ $rc -eq 0 ] && ok name_reusable || bad name_reusable "rc $rc"

# A zone still starting when the re-exec comes is waited for, then goes along.
"$KIN" ctl --socket "$S" zone create pod2 --root "$BB" >"$T/create.out" 2>&1 &
CPID=$!
kc reexec
r1=$rc
wait "$CPID"
crc=$?
kc zone list
[ $r1 -eq 0 ] && [ $crc -eq 0 ] && out_has '^pod2 +namespace running .* ready$' && ok starting_zone_waited_for ||
	bad starting_zone_waited_for "reexec rc $r1, create rc $crc: $(cat "$T/create.out")"
kc zone stop pod1
kc zone stop pod2
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
drc=$?
DPID=
[ $drc -eq 0 ] && ok stops_clean || bad stops_clean "exit $drc"
clean_log "$T/kin.log" && ok no_sanitizer_reports || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
