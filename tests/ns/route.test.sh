#!/usr/bin/env bash
# Recursive addressing (kin-target) on the host: build/rpc-route plays a
# parent kin whose routes lead to a real `kin init --rpc-fd 3` (kid), to a
# second routing parent (mid, with its own kid and a test stream service),
# and to fake children that never answer (slow), are gone (gone) or send
# garbage (evil1..4). Everything is driven through `kin ctl --target`.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin route
R=$PWD/$BUILD/rpc-route
S=$T/p.sock
C() { "$KIN" ctl --socket "$S" "$@"; }

"$R" parent "$S" "$KIN" >"$T/out" 2>"$T/err" &
PARENT=$!
trap 'kill $PARENT 2>/dev/null; wait $PARENT 2>/dev/null; rm -rf "$T"' EXIT
wait_for "grep -q ready '$T/out'" || { bad setup "rpc-route parent never got ready"; ns_suite_end; exit; }
ok setup

out=$(C --target kid -o json version 2>&1)
echo "$out" | grep -q '"role":"daemon"' && ok one_hop_to_kin || bad one_hop_to_kin "$out"
out=$(C --target mid/kid -o json version 2>&1)
kidpid=$(echo "$out" | sed -nE 's/.*"pid":([0-9]+).*/\1/p')
[ -n "$kidpid" ] && [ "$(cat /proc/"$kidpid"/comm 2>/dev/null)" = kin ] &&
	echo "$out" | grep -q '"role":"daemon"' && ok two_hops_to_kin || bad two_hops_to_kin "$out"
out=$(C --target mid version 2>&1)
echo "$out" | grep -q "role:     mid" && ok hop_to_parent_of_parent || bad hop_to_parent_of_parent "$out"
out=$(C health 2>&1)
[ "$out" = SERVING ] && ok no_target_is_local || bad no_target_is_local "$out"

out=$(C --target nope health 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'NOT_FOUND: target "nope": no zone or VM "nope" in this kin' &&
	ok unknown_first_hop || bad unknown_first_hop "rc $rc: $out"
out=$(C --target mid/nope/deeper health 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'NOT_FOUND: target "mid/nope/deeper": no zone or VM "nope" in "mid"' &&
	ok unknown_deeper_hop_named || bad unknown_deeper_hop_named "rc $rc: $out"
out=$(C --target vm/nope health 2>&1)
echo "$out" | grep -q 'NOT_FOUND: .*no zone or VM "vm/nope"' && ok vm_namespace || bad vm_namespace "$out"
n=0
for t in vm 'a//b' '/a' 'a/' '../x' 'vm/a/vm' "$(printf 'x%.0s' $(seq 70))"; do
	C --target "$t" health >/dev/null 2>&1; [ $? -eq 2 ] && n=$((n + 1))
done
[ $n -eq 7 ] && ok bad_targets_usage_error || bad bad_targets_usage_error "only $n of 7 refused with exit 2"
out=$(C --target gone health 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'UNAVAILABLE: target "gone": gone: the child kin closed its channel' &&
	ok child_gone_unavailable || bad child_gone_unavailable "rc $rc: $out"

fds_before=$(ls /proc/$PARENT/fd | wc -l)
for i in 1 2 3 4; do
	out=$(C --timeout 3s --target evil$i health 2>&1); rc=$?
	out2=$(C --target evil$i health 2>&1)
	if [ $rc -eq 1 ] && echo "$out" | grep -q "UNAVAILABLE: evil$i: the child sent a malformed" &&
		echo "$out2" | grep -q "UNAVAILABLE: target \"evil$i\""; then
		ok hostile_child_$i
	else
		bad hostile_child_$i "rc $rc: $out / $out2"
	fi
done
out=$(C --target mid/kid health 2>&1)
[ "$out" = SERVING ] && [ "$(C health)" = SERVING ] && ok others_unharmed_by_hostile_children ||
	bad others_unharmed_by_hostile_children "$out"

out=$("$R" count "$S" mid 2000 2>&1) && ok stream_relayed_2000 || bad stream_relayed_2000 "$out"
out=$("$R" count "$S" mid 0 2>&1) && ok stream_relayed_empty || bad stream_relayed_empty "$out"
out=$("$R" cancel "$S" mid 2>&1) && ok stream_cancel_reaches_child || bad stream_cancel_reaches_child "$out"
grep -q "a follower left" "$T/err" && ok child_ran_its_cancel_callback || bad child_ran_its_cancel_callback "no 'a follower left'"

C --timeout 500ms --target slow health >/dev/null 2>&1
wait_for "[ \$(grep -c 'cancel seen' '$T/out') -ge 1 ]" 100 && ok unary_cancel_reaches_child ||
	bad unary_cancel_reaches_child "the slow child saw no Route/Cancel"
out=$("$R" flood "$S" slow 9 120 2>&1)
[ "$out" = "56 RESOURCE_EXHAUSTED, 0 other answers" ] && ok inflight_bound_per_route ||
	bad inflight_bound_per_route "$out (expected 1080 - 1024 = 56 refused)"
wait_for "[ \$(grep -c 'cancel seen' '$T/out') -ge 1025 ]" 150 && ok flood_callers_cancelled ||
	bad flood_callers_cancelled "$(grep -c 'cancel seen' "$T/out") cancels seen, expected 1025"
out=$(C --target kid health 2>&1)
[ "$out" = SERVING ] && ok serving_after_flood || bad serving_after_flood "$out"

# Deadlines (a Request's timeout): a call kept for later ends
# DEADLINE_EXCEEDED in about its timeout, its cancel callback runs, and
# the kin keeps serving meanwhile. rpc-route waits 5 s past the timeout,
# so the answer is the server's, not the client giving up.
out=$("$R" deadline "$S" - test.Stall Wait 600 2>&1)
echo "$out" | grep -q '^DEADLINE_EXCEEDED after .*: test.Stall/Wait: deadline exceeded: no answer within the caller.s timeout of 600 ms$' &&
	wait_for "grep -q 'rpc-route parent: a stall was cancelled' '$T/err'" 50 && ok deadline_local ||
	bad deadline_local "$out; cancel callback: $(grep -c 'parent: a stall' "$T/err")"
cancels=$(grep -c 'cancel seen' "$T/out")
"$R" deadline "$S" slow kin.v1.Health Check 1500 >"$T/dl" 2>&1 &
dl=$!
t0=$(date +%s%N)
h1=$(C health 2>&1); h2=$(C --target mid/kid health 2>&1)
t1=$(( ($(date +%s%N) - t0) / 1000000 ))
wait $dl; rc=$?
[ $rc -eq 0 ] && grep -q 'DEADLINE_EXCEEDED after .*: target "slow": kin.v1.Health/Check: deadline exceeded' "$T/dl" &&
	ok deadline_relayed || bad deadline_relayed "rc $rc: $(cat "$T/dl")"
[ "$h1 $h2" = "SERVING SERVING" ] && [ $t1 -lt 1200 ] && ok served_while_deadline_pending ||
	bad served_while_deadline_pending "'$h1' '$h2' in $t1 ms"
wait_for "[ \$(grep -c 'cancel seen' '$T/out') -gt $cancels ]" 100 && ok deadline_cancel_reaches_child ||
	bad deadline_cancel_reaches_child "the slow child saw no Route/Cancel after the deadline"
# The child was given what was left of 1500 ms, not 1500 ms again.
left=$(sed -nE 's/^slow: kin.v1.Health\/Check timeout ([0-9]+) ms$/\1/p' "$T/out" | tail -1)
[ -n "$left" ] && [ "$left" -le 1499 ] && [ "$left" -ge 1000 ] && ok remaining_timeout_relayed ||
	bad remaining_timeout_relayed "the child got a timeout of '${left}' ms for a 1500 ms call"
# Two hops: the middle kin's stalled call is cancelled too (by the
# parent's Route/Cancel or its own deadline, whichever comes first).
out=$("$R" deadline "$S" mid test.Stall Wait 700 2>&1)
echo "$out" | grep -q '^DEADLINE_EXCEEDED after .*test.Stall/Wait: deadline exceeded' &&
	wait_for "grep -q 'rpc-route mid: a stall was cancelled' '$T/err'" 50 && ok deadline_two_hops ||
	bad deadline_two_hops "$out; mid cancel: $(grep -c 'mid: a stall' "$T/err")"
fds_after=$(ls /proc/$PARENT/fd | wc -l)
# evil1..4 were closed: four fewer fds than before them, nothing leaked.
[ "$fds_after" -le "$fds_before" ] && ok no_fd_leak || bad no_fd_leak "$fds_before fds before, $fds_after after"

out=$(C --target mid/kid reboot 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "FAILED_PRECONDITION: reboot: not for a daemon kin" &&
	ok reboot_refused_off_machine || bad reboot_refused_off_machine "rc $rc: $out"
out=$(C --target mid/kid poweroff 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$out" = "stop (daemon kin)" ] && ok poweroff_answered || bad poweroff_answered "rc $rc: $out"
wait_for "[ ! -e /proc/$kidpid ] || grep -q '^State:.*Z' /proc/$kidpid/status" 250 && ok poweroff_stops_the_kin || bad poweroff_stops_the_kin "pid $kidpid still there"
out=$(C --target mid/kid health 2>&1)
echo "$out" | grep -q 'UNAVAILABLE: .*kid: the child kin closed its channel' && ok stopped_child_unavailable ||
	bad stopped_child_unavailable "$out"

kill -TERM $PARENT; wait $PARENT; rc=$?
[ $rc -eq 0 ] && ok parent_stops_clean || bad parent_stops_clean "exit $rc"
grep -E "ERROR|AddressSanitizer|runtime error" "$T/err" && bad sanitizer_clean "reports above" || ok sanitizer_clean
ns_suite_end
