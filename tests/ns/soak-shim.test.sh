#!/usr/bin/env bash
# Soak with faults for a shim pod (#15; tests/ns/soak is a daemon kin's):
# a private containerd runs kin's shim; the pod's container prints
# numbered lines on both streams to `ctr run`, while execs come and go —
# one echoing what is piped into its stdin, one killed with SIGKILL — and
# the shim's kin re-executes itself every second or so. At the end: every
# line reached ctr once and in order, and the container's exit status;
# every exec's status is what happened to it (0, or 137) and every echo is
# whole; the same shim process throughout, its re-execs counted, its fds
# steady and RSS flat, no zombie below it; the task's delete leaves
# nothing and its id is usable again. SOAK_SECONDS long (15 in `make
# check`, `make soak` longer).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin soak-shim
ns_need_cgroup2
NS=kinsoak$$
. tests/ns/containerd.sh
BG=
stop_bg() { [ -n "$BG" ] || return 0; for p in $BG; do kill "$p" 2>/dev/null; done; wait $BG 2>/dev/null; BG=; }
cleanup() {
	stop_bg
	cd_cleanup
	rm -rf "$T"
}
trap cleanup EXIT
cd_setup sh echo cat sleep true seq
SECS=${SOAK_SECONDS:-15}

# The container: numbered lines on stdout and on stderr, ~50 a second,
# until told to stop (a file an exec makes in it), then exit 7.
timeout $((SECS * 4 + 120)) $C run $R $IMG d1 /bin/sh -c \
	'i=0; while [ ! -e /stop ]; do i=$((i+1)); echo n$i; echo m$i >&2; sleep 0.02; done; exit 7' \
	>"$T/o" 2>"$T/e" &
RUN=$!
wait_for "$C t ls 2>/dev/null | grep -q '^d1 .*RUNNING'" 500 && ok pod_running ||
	{ bad pod_running "no RUNNING d1"; exit 1; }
KS=/run/kin/shim/$NS/d1/kin.sock
SHIM=$(pgrep -f "containerd-shim-kin-v2 -namespace $NS -id d1 ")
shim_fds() { kin_fds "$SHIM" | wc -l; }
shim_rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$SHIM/status"; }
"$KIN" ctl --socket "$KS" reexec >/dev/null 2>&1
sleep 6 # past the fallback's 5 s timer
fd0=$(shim_fds) rss0=$(shim_rss)

# The shim's kin re-executes itself every second or so, all along.
(
	n=0
	while :; do
		"$KIN" ctl --socket "$KS" reexec >>"$T/rx" 2>&1 && n=$((n + 1)) && echo $n >"$T/rx.n"
		sleep 1
	done
) &
BG="$BG $!"

# Execs come and go: an echo of its stdin, then one killed. A call the
# shim refused while re-executing ("kin is re-executing; retry", or
# ABORTED when it could not settle) is what its contract says — ctr does
# not retry, so that exec is counted apart (and must stay the exception);
# ctr's kill is retried as a client would.
retryable() { grep -qE 're-executing|retry' "$1"; }
k=0 fails= refused=0
end=$(($(date +%s) + SECS))
while [ "$(date +%s)" -lt "$end" ]; do
	k=$((k + 1))
	seq 1 300 | sed "s/^/s$k-/" >"$T/in.$k"
	timeout 60 $C t exec --exec-id s$k d1 /bin/cat <"$T/in.$k" >"$T/out.$k" 2>&1
	rc=$?
	if [ $rc -ne 0 ] && retryable "$T/out.$k"; then
		refused=$((refused + 1))
		tail -1 "$T/out.$k" >>"$T/refused"
	elif [ $rc -ne 0 ] || ! cmp -s "$T/in.$k" "$T/out.$k"; then
		fails="$fails s$k: rc $rc, $(wc -l <"$T/out.$k") of 300 lines;"
	fi
	timeout 60 $C t exec --exec-id k$k d1 /bin/sleep 100 >"$T/kx.$k" 2>&1 &
	EX=$!
	# Killed once it runs (a kill before its Start ends it unstarted, and
	# the Start is then refused): its start may wait out a re-exec.
	# (its sleep 100 among the task's processes: the container's own loop
	# has a sleep of its own now and then, so a count would not do)
	running() {
		local p
		for p in $($C t ps d1 2>/dev/null | awk '$1 ~ /^[0-9]+$/ {print $1}'); do
			[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "/bin/sleep 100 " ] && return 0
		done
		return 1
	}
	for _ in $(seq 300); do # until taken, or its exec ended
		! kill -0 $EX 2>/dev/null || { running && $C t kill --exec-id k$k -s KILL d1 >>"$T/kk.$k" 2>&1; } && break
		sleep 0.2
	done
	wait $EX
	rc=$?
	if [ $rc -ne 137 ] && retryable "$T/kx.$k"; then
		refused=$((refused + 1))
		tail -1 "$T/kx.$k" >>"$T/refused"
	elif [ $rc -ne 137 ]; then
		fails="$fails k$k: rc $rc ($(tail -1 "$T/kx.$k"); kill: $(tail -1 "$T/kk.$k" 2>/dev/null));"
	fi
done
stop_bg
rx=$(cat "$T/rx.n" 2>/dev/null || echo 0)
echo "    (${SECS}s: $rx re-execs of the shim's kin, $k echo and $k killed execs, $refused refused as retryable$([ -s "$T/refused" ] && echo ": $(sort "$T/refused" | uniq -c | head -3 | tr '\n' ' ')"))"
[ -z "$fails" ] && [ "$k" -ge 2 ] && [ $((refused * 3)) -le $((k * 2)) ] && ok execs_accounted ||
	bad execs_accounted "$refused of $((2 * k)) refused;$fails"
[ "$rx" -ge 3 ] && ! grep -qv '^re-executed' "$T/rx" && ok shim_reexecs ||
	bad shim_reexecs "$rx: $(grep -v '^re-executed' "$T/rx" | head -3 | tr '\n' ' ')"

# The same shim, its kin's re-execs counted; steady after more of them.
"$KIN" ctl --socket "$KS" -o json version >"$T/out" 2>&1
[ "$(pgrep -f "containerd-shim-kin-v2 -namespace $NS -id d1 ")" = "$SHIM" ] &&
	grep -qE "\"reexecs\":\"?$((rx + 1))[\",}]" "$T/out" && ok same_shim_reexecs_counted ||
	bad same_shim_reexecs_counted "shim $SHIM: $(cat "$T/out")"
for _ in 1 2 3; do "$KIN" ctl --socket "$KS" reexec >/dev/null 2>&1; done
sleep 6
fd1=$(shim_fds) rss1=$(shim_rss)
[ "$fd1" -le "$fd0" ] && ok shim_fds_steady || bad shim_fds_steady "$fd0 -> $fd1"
[ -n "$rss0" ] && [ -n "$rss1" ] && [ "$rss1" -le $((rss0 * 3 / 2 + 4096)) ] && ok shim_rss_flat ||
	bad shim_rss_flat "VmRSS ${rss0:-?} kB -> ${rss1:-?} kB"
z=$(for s in /proc/[0-9]*/stat; do cat "$s" 2>/dev/null; echo; done | awk -v p="$SHIM" '$3 == "Z" && $4 == p' | wc -l)
[ "$z" -eq 0 ] && ok no_zombie || bad no_zombie "$z zombies below the shim"

# The container ends: every line once and in order, its status.
$C t exec --exec-id stop d1 /bin/sh -c 'echo >/stop' >/dev/null 2>&1
wait $RUN
rc=$?
N=$(wc -l <"$T/o")
[ $rc -eq 7 ] && [ "$N" -gt 100 ] && seq 1 $N | sed 's/^/n/' | cmp -s - "$T/o" &&
	seq 1 $N | sed 's/^/m/' | cmp -s - "$T/e" && ok every_line_once_in_order ||
	bad every_line_once_in_order "exit $rc, $N + $(wc -l <"$T/e") lines: $(seq 1 $N | sed 's/^/n/' | diff - "$T/o" | head -3 | tr '\n' ' ')"

# The end (ctr run deleted the task): the container's delete leaves
# nothing; the id is usable again.
$C c rm d1 >"$T/out" 2>&1 && ok delete || bad delete "$(cat "$T/out")"
wait_for "[ ! -e /run/kin/shim/$NS/d1 ] && ! kill -0 $SHIM 2>/dev/null" 250 && ok nothing_left ||
	bad nothing_left "the shim or its state is still there"
timeout 60 $C run --rm $R $IMG d1 /bin/echo again >"$T/out" 2>&1 && grep -qx again "$T/out" &&
	ok id_reusable || bad id_reusable "$(cat "$T/out")"
ns_suite_end
