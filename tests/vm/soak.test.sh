#!/usr/bin/env bash
# Soak with faults in a real guest (#15; tests/ns/soak is the host's): a
# host kin daemon runs a VM (QEMU, TCG) whose kin, PID 1, runs cells with
# real limits — restarting executables printing numbered lines ("RUN-i",
# RUN the run's pid), a fork bomb held by pids.max, a hog OOM-killed again
# and again by memory.max — while clients call through the host, follow a
# log and poll the VM; meanwhile the test re-executes the guest's kin and
# the host kin, kills random workload processes in the guest, and
# SIGKILLs the host kin and starts a successor on its state directory (it
# adopts the VM). At the end: every run's lines once each and in order,
# every exit accounted for (restarts = runs - 1), pids.current never over
# pids.max, OOM kills counted and the hog restarted after each, no zombie
# in the guest, the guest kin's RSS flat and its re-execs counted, the
# same QEMU throughout, no client error but "retry", the host kin's fds
# steady, every name reusable, a clean stop. SOAK_SECONDS long (30 in
# `make check`, `make soak` longer).
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin soak
SECS=${SOAK_SECONDS:-30}

S=$T/host.sock
C() { "$KIN" ctl --socket "$S" "$@"; }
G() { "$KIN" ctl --socket "$S" --target vm/g1 "$@"; }
"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
host_kin_start vmsoak --state-dir "$T/state"
if [ -z "$BASE" ]; then
	echo "SKIP vm/soak: no cgroup of its own for the host kin (adoption needs cells)"
	vm_suite_end
	exit
fi
BG=
stop_bg() { [ -n "$BG" ] || return 0; for p in $BG; do kill "$p" 2>/dev/null; done; wait $BG 2>/dev/null; BG=; }
trap 'stop_bg; host_kin_cleanup' EXIT
successor() { host_kin_successor --state-dir "$T/state"; }
gserving() { # the guest's kin through the host, within 60 s
	for _ in $(seq 600); do
		[ "$(G --timeout 2s health 2>/dev/null)" = SERVING ] && return 0
		sleep 0.1
	done
	return 1
}
# gone PID: ended (a zombie until the real init, its parent after an
# adoption, reaps it)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
json_num() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9]*\).*/\1/p"; }
host_fds() { kin_fds "$HOST" | wc -l; }
# guest CMD...: a busybox shell command run in the guest's cell probe, its output
n_probe=0
guest() {
	n_probe=$((n_probe + 1))
	G exec start probe "p$n_probe" -- /bin/busybox sh -c "$*" >/dev/null 2>&1 &&
		G exec wait probe "p$n_probe" >/dev/null 2>&1
	G exec logs probe "p$n_probe" 2>&1
	G exec delete probe "p$n_probe" >/dev/null 2>&1
}

C vm start g1 --kernel "$KERNEL" --image "$T/guest.cpio" --cpus 2 --memory 512 >"$T/out" 2>&1 && gserving &&
	ok vm_serving || { bad vm_serving "$(cat "$T/out")" "$T/host.log"; vm_suite_end; exit; }
QEMU=$(C vm status g1 -o json 2>/dev/null | json_num pid)
# The guest's late boot (modules after ready) ends first: a machine kin
# does not re-execute while it runs.
wait_for "grep -q 'boot complete' '$T/vm/g1/console.log'" 600

# The guest's workload: tickers (restart always), a fork bomb under
# pids.max, a hog under memory.max (both restart after each end).
B=/bin/busybox
G cell create probe >/dev/null 2>&1
G cell create tick >/dev/null 2>&1
for w in w1 w2 w3; do
	G exec start tick $w --restart always --backoff 100ms:1s -- $B sh -c \
		"i=0; while [ \$i -lt 1000000 ]; do i=\$((i+1)); echo \$\$-\$i; $B sleep 0.05; done" >/dev/null 2>&1
done
G cell create pids pids.max=16 >/dev/null 2>&1
G exec start pids bomb --restart always --backoff 200ms:1s -- $B sh -c \
	"for i in \$($B seq 40); do $B sleep 3 & done; wait" >/dev/null 2>&1
G cell create mem memory.max=24M memory.swap.max=0 >/dev/null 2>&1
G exec start mem hog --restart always --backoff 200ms:2s -- $B sh -c \
	"x=\$($B head -c 100000000 /dev/zero | $B tr '\\0' x); echo survived" >"$T/out" 2>&1
[ $? -eq 0 ] && [ "$(G exec list 2>/dev/null | grep -c ' running ')" -ge 4 ] && ok workload_started ||
	bad workload_started "$(cat "$T/out"; G exec list 2>&1)"

# Clients: through the host to the guest, and to the host, without pause;
# a log follower through the host, started again when it ends.
mkdir -p "$T/cl"
T0=$(date +%s%N)
for c in 1 2 3 4 5 6; do
	(
		n=0
		while :; do
			t0=$(date +%s%N)
			if [ $((c % 2)) = 0 ]; then out=$(G --timeout 10s health 2>&1); else out=$(C --timeout 10s vm status g1 2>&1); fi
			r=$?
			echo "$(((t0 - T0) / 1000000)) $((($(date +%s%N) - t0) / 1000000)) $r $([ $r -eq 0 ] || echo "$out" | head -1 | tr ' ' _ | cut -c1-90)" >>"$T/cl/$c.calls"
			[ $r -eq 0 ] && n=$((n + 1)) && echo "$n" >"$T/cl/$c.ok" || echo "rc $r: $out" >>"$T/cl/$c.err"
			sleep 0.05
		done
	) &
	BG="$BG $!"
done
(while :; do G exec logs -f tick w1 >/dev/null 2>&1; sleep 0.1; done) &
BG="$BG $!"
sleep 1
rss() { guest "$B grep VmRSS /proc/1/status" | awk '{print $2}'; }
rss0=$(rss)

# Faults, one every ~2 s, in turn.
kills=0 greexecs=0 hreexecs=0 hkills=0 maxpids=0
end=$(($(date +%s) + SECS))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
	round=$((round + 1))
	echo "$((($(date +%s%N) - T0) / 1000000)):$((round % 5))" >>"$T/faults.at"
	case $((round % 5)) in
	1) G reexec >>"$T/faults" 2>&1 && greexecs=$((greexecs + 1)) ;;
	2) w=w$((RANDOM % 3 + 1))
	   G exec signal tick $w KILL >>"$T/faults" 2>&1 && kills=$((kills + 1)) ;;
	3) C reexec >>"$T/faults" 2>&1 && hreexecs=$((hreexecs + 1)) ;;
	4) cur=$(G -o json cell show pids 2>/dev/null | json_num pids_current)
	   [ "${cur:-0}" -gt "$maxpids" ] && maxpids=$cur ;;
	0) if [ $hkills -lt 2 ]; then
		   kill -KILL "$HOST"
		   wait "$HOST" 2>/dev/null
		   successor
		   hkills=$((hkills + 1))
	   fi ;;
	esac
	sleep 2
done
echo "    (${SECS}s: $greexecs guest re-execs, $hreexecs host re-execs, $hkills host SIGKILLs, $kills workload kills)"
# The guest answers through the host again (after the last SIGKILL the
# successor asks the guest's kin until it answers: seconds under TCG and
# this load), then the clients go on a while without faults.
back=$(date +%s%N)
gserving
sv=$?
back=$((($(date +%s%N) - back) / 1000000))
quiet=$((($(date +%s%N) - T0) / 1000000))
sleep 4
stop_bg
[ "$greexecs" -ge 2 ] && [ "$hreexecs" -ge 1 ] && [ "$hkills" -ge 1 ] && [ $sv -eq 0 ] && ok faults_survived ||
	bad faults_survived "guest re-execs $greexecs, host $hreexecs, SIGKILLs $hkills, serving $sv" "$T/faults"
echo "    (the guest answered through the host again $back ms after the faults)"

# Every client was answered once the faults ended; their errors only the
# retryable kind (UNAVAILABLE while a kin re-executes or a route is not
# back yet, or the host's socket unreachable while it is dead). What the
# clients saw is printed: calls, answered, the longest (ms), and the
# calls over a second (client@ms since start+took(rc)) next to the faults
# (ms:kind: 1 guest re-exec, 2 workload kill, 3 host re-exec, 0 SIGKILL).
echo "    (clients, calls/answered/longest ms: $(for c in 1 2 3 4 5 6; do
	awk -v c=$c '{n++; if ($3 == 0) a++; if ($2 > m) m = $2} END {printf "%s: %d/%d/%d; ", c, n, a, m}' "$T/cl/$c.calls"
done))"
echo "    (calls over 1 s: $(for c in 1 2 3 4 5 6; do awk -v c=$c '$2 > 1000 {printf "c%s@%s+%s(rc%s %s) ", c, $1, $2, $3, $4}' "$T/cl/$c.calls"; done) faults at: $(tr '\n' ' ' <"$T/faults.at"))"
errs=
for c in 1 2 3 4 5 6; do
	awk -v q=$quiet '$1 >= q && $3 == 0 {ok = 1} END {exit !ok}' "$T/cl/$c.calls" ||
		errs="$errs client $c not answered after the faults ($(tail -1 "$T/cl/$c.err" 2>/dev/null));"
	[ -f "$T/cl/$c.err" ] && errs="$errs$(grep -v 'UNAVAILABLE\|cannot reach kin\|rc 3:' "$T/cl/$c.err" | head -2 | tr '\n' ' ')"
done
[ -z "$errs" ] && ok clients_only_retry || bad clients_only_retry "$errs"

# Every run's lines once each and in order: a run (its pid) counts 1, 2,
# ... with no gap or repeat and never comes back; restarts = runs - 1.
lost=
for w in w1 w2 w3; do
	G exec logs tick $w >"$T/log.$w" 2>&1
	bad_lines=$(awk -F- '
		NF != 2 { print "line " NR ": " $0; next }
		$1 == run { if ($2 != n + 1) print "run " run ": " n " then " $2; n = $2; next }
		{ if (seen[$1]++) print "run " $1 " again at line " NR
		  if (NR > 1 && $2 != 1) print "run " $1 " starts at " $2
		  run = $1; n = $2; runs++ }
		END { print "RUNS " runs }' "$T/log.$w")
	runs=$(echo "$bad_lines" | sed -n 's/^RUNS //p')
	restarts=$(G -o json exec status tick $w 2>/dev/null | json_num restarts)
	[ -z "$(echo "$bad_lines" | grep -v '^RUNS')" ] && [ -n "$runs" ] && [ "${restarts:-x}" = $((runs - 1)) ] ||
		lost="$lost $w: $(echo "$bad_lines" | head -3 | tr '\n' ' ') restarts ${restarts:-?};"
done
[ -z "$lost" ] && ok every_line_once_in_order || bad every_line_once_in_order "$lost"

# The limits held; each OOM kill was followed by a restart. The hog's
# pace is the guest's (TCG on a loaded machine: one kill may take most of
# the soak), so its second kill and restart are waited for, up to 60 s.
for _ in $(seq 60); do
	G -o json cell show mem >"$T/mem" 2>&1
	ooms=$(json_num memory_events_oom_kill <"$T/mem")
	hog=$(G -o json exec status mem hog 2>/dev/null | json_num restarts)
	[ "${ooms:-0}" -ge 2 ] && [ "${hog:-0}" -ge 1 ] && break
	sleep 1
done
pev=$(guest "$B cat /sys/fs/cgroup/cells/pids/pids.events" | sed -n 's/^max //p')
[ "${ooms:-0}" -ge 2 ] && [ "${hog:-0}" -ge 1 ] && [ "$maxpids" -le 16 ] && [ "${pev:-0}" -ge 1 ] &&
	ok limits_held || bad limits_held "oom_kill ${ooms:-?}, hog restarts ${hog:-?}, pids.current max $maxpids, pids.events max ${pev:-?}"

# Nothing left behind in the guest: no zombie (a moment's one is reaped:
# asked three times), kin's RSS flat, its re-execs counted, still PID 1.
for _ in 1 2 3; do
	z=$(guest "for s in /proc/[0-9]*/stat; do $B cat \$s 2>/dev/null; echo; done" | awk '$3 == "Z"' | wc -l)
	[ "$z" -eq 0 ] && break
	sleep 0.5
done
[ "$z" -eq 0 ] && ok no_zombie_in_guest || bad no_zombie_in_guest "$z zombies"
rss1=$(rss)
[ -n "$rss0" ] && [ -n "$rss1" ] && [ "$rss1" -le $((rss0 * 3 / 2 + 4096)) ] && ok guest_rss_flat ||
	bad guest_rss_flat "VmRSS ${rss0:-?} kB -> ${rss1:-?} kB"
G -o json version >"$T/out" 2>&1
[ "$(json_num reexecs <"$T/out")" = "$greexecs" ] && grep -qE '"pid":1[,}]' "$T/out" && ok guest_kin_reexecs_counted ||
	bad guest_kin_reexecs_counted "want $greexecs: $(cat "$T/out")"
[ -n "$QEMU" ] && [ "$(C vm status g1 -o json 2>/dev/null | json_num pid)" = "$QEMU" ] && ok same_qemu ||
	bad same_qemu "QEMU ${QEMU:-?} -> $(C vm status g1 -o json 2>&1)"

# The host kin's fds steady across more re-execs (after its fallback's
# 5 s timer), its cells only the VM's.
C reexec >/dev/null 2>&1
sleep 6
fd0=$(host_fds)
for _ in 1 2 3; do C reexec >/dev/null 2>&1; sleep 0.3; done
sleep 6
fd1=$(host_fds)
[ "$fd1" -le "$fd0" ] && ok host_fds_steady || bad host_fds_steady "$fd0 -> $fd1"
left=$(cd "$BASE/cells" && find . -mindepth 1 -type d | sort | tr '\n' ' ')
[ "$left" = "./vms ./vms/g1 " ] && ok host_cells_only_the_vm || bad host_cells_only_the_vm "$left"

# Every name reusable in the guest; then a clean stop of all.
n_ok=0
for c in tick pids mem; do
	G cell delete --force $c >/dev/null 2>&1 && G cell create $c >/dev/null 2>&1 &&
		G exec start $c w1 -- $B true >/dev/null 2>&1 && n_ok=$((n_ok + 1))
done
[ $n_ok -eq 3 ] && ok names_reusable || bad names_reusable "$n_ok of 3"
out=$(C vm stop --timeout 60s g1 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "state:    exited" && gone "$QEMU" &&
	[ ! -e "$BASE/cells/vms/g1" ] && ok vm_stops_clean || bad vm_stops_clean "rc $rc: $out" "$T/host.log"
C poweroff >/dev/null 2>&1
wait "$HOST" 2>/dev/null
for _ in $(seq 50); do kill -0 "$HOST" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$HOST" 2>/dev/null && [ ! -e "$T/state/state" ] && ok host_stops_clean || bad host_stops_clean "still running or state left" "$T/host.log"
grep -E "AddressSanitizer|runtime error|LeakSanitizer" "$T/host.log" && bad host_sanitizer_clean "see above" ||
	ok host_sanitizer_clean
vm_suite_end
