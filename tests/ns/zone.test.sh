#!/usr/bin/env bash
# Zones (zone/): a parent kin — here build/zone-driver, the zone library in
# its own loop, until rpc/ routes kin-target calls — makes zones on the
# host's cgroup2 under <mount>/kin-ztest-PID (removed afterwards): the zone
# kin is PID 1 of new namespaces in the zone's cell, role zone, exec'd from
# a sealed memfd; a --net zone pings its parent over its veth; stop and kill
# leave no process, cgroup, mount or veth; the depth limit and bad names
# are refused before any side effect; a zone kin's output goes to its
# capped log file, not ours; a zone's own --net zones take addresses from
# the range its parent delegated (the driver run again inside a zone, as
# the zone kin's workload, until the zone kin serves zone RPC).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin zone
DRIVER=$PWD/$BUILD/zone-driver
ns_need_cgroup2
TOP=kin-ztest-$$
mkdir -p "$CG/$TOP"
cleanup() {
	cgroup_tree_remove "$CG/$TOP"
	veths_remove kz
}
trap 'cleanup; rm -rf "$T"' EXIT

# A root for zones with a workload: busybox, and kin's loader and libraries
# when kin is dynamically linked (SANITIZE=1).
BB=$T/bbroot
ns_busybox_root "$BB" "$DRIVER"
printf '#!/bin/busybox sh\n/bin/busybox sleep 1000 &\n/bin/busybox sleep 1000\n' >"$BB/bin/work"
chmod +x "$BB/bin/work"
# The driver goes in too (its libraries came with it), for two levels.
cp "$DRIVER" "$BB/bin/zone-driver"

n=0
# drive [DRIVER FLAGS --] COMMAND...: one driver run, output in $T/out.
drive() {
	local flags=()
	if [ "${1:-}" = --flags ]; then flags=($2); shift 2; fi
	n=$((n + 1))
	mkdir -p "$CG/$TOP/t$n"
	BASE_DIR=$CG/$TOP/t$n
	printf '%s\n' "$@" | timeout 120 "$DRIVER" --base "$TOP/t$n" --self "$KIN" \
		--state-dir "$T/state" "${flags[@]}" >"$T/out" 2>&1
	grep -h 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' "$T/out" >>"$T/san"
}
has() { grep -q -- "$1" "$T/out"; }
val() { sed -nE "s/^ok create $1 .* $2 ([^ ]+).*/\\1/p" "$T/out" | head -1; }
# Everything a zone could leave behind on the host.
leftovers() {
	local pid=$1 what=
	[ -n "$pid" ] && [ -d "/proc/$pid" ] && what="$what process $pid;"
	[ -n "$(find "$BASE_DIR/cells" -mindepth 1 -type d 2>/dev/null)" ] &&
		what="$what cgroups $(find "$BASE_DIR/cells" -mindepth 1 -type d | tr '\n' ' ');"
	grep -q "$T/state" /proc/self/mountinfo && what="$what mounts;"
	ip -o link show 2>/dev/null | grep -q ': kz' && what="$what veth $(ip -o link show | grep -o 'kz[^:@]*');"
	echo "$what"
}

t_minimal_root() {
	drive "create a" "version a" \
		"sh grep -q 'NSpid:.*[[:space:]]1\$' /proc/\$ZPID/status && echo CHECK pid1" \
		"sh for ns in pid mnt uts ipc cgroup; do [ \"\$(readlink /proc/\$ZPID/ns/\$ns)\" != \"\$(readlink /proc/self/ns/\$ns)\" ] || echo SAMENS \$ns; done; [ \"\$(readlink /proc/\$ZPID/ns/net)\" = \"\$(readlink /proc/self/ns/net)\" ] && echo CHECK net_shared" \
		"sh cat \$ZCELLDIR/cgroup.procs \$ZCELLDIR/init/cgroup.procs 2>/dev/null | grep -qx \$ZPID && echo CHECK in_cell" \
		"sh readlink /proc/\$ZPID/exe | grep -q '^/memfd:kin' && echo CHECK memfd" \
		"sh awk '\$5 == \"/\" {print \"ROOTFS\", \$9, \$6}' /proc/\$ZPID/mountinfo" \
		"sh awk '\$5 == \"/\" {print \"HOSTROOT\", \$9}' /proc/self/mountinfo" \
		"sh awk '\$5 == \"/tmp\" {print \"TMPFS\", \$9, \$6}' /proc/\$ZPID/mountinfo" \
		"sh for m in /proc /sys /dev /run /dev/pts /tmp; do awk -v m=\$m '\$5 == m {f=1} END {exit !f}' /proc/\$ZPID/mountinfo || echo MISSING \$m; done" \
		"sh c=\$(tr '\\0' ' ' </proc/\$ZPID/cmdline); for f in '--zone a ' '--zone-depth 1 ' '--rpc-fd 3 '; do case \"\$c\" in *\"\$f\"*) ;; *) exit 0;; esac; done; echo CHECK cmdline" \
		"sh echo ZPID \$ZPID" \
		"stop a"
	local pid
	pid=$(sed -n 's/^ZPID //p' "$T/out")
	has '^ok create a pid' || { bad minimal_root "create failed"; return; }
	has '^version role=zone zone=a pid=1 hostname=a$' && ok zone_kin_role_over_rpc_fd ||
		bad zone_kin_role_over_rpc_fd "Version over the socketpair did not say role zone, pid 1"
	has '^CHECK pid1' && ok zone_kin_is_pid1 || bad zone_kin_is_pid1 "NSpid does not end in 1"
	! has '^SAMENS' && has '^CHECK net_shared' && ok new_namespaces ||
		bad new_namespaces "$(grep '^SAMENS' "$T/out" | tr '\n' ' ')"
	has '^CHECK in_cell' && ok in_zone_cell || bad in_zone_cell "zone kin not in its cell (or the cell's init leaf)"
	has '^CHECK memfd' && ok exec_from_sealed_memfd || bad exec_from_sealed_memfd "exe is not a memfd"
	# No root given: the parent's own, read-only, with a writable /tmp.
	local hostfs
	hostfs=$(sed -n 's/^HOSTROOT //p' "$T/out")
	has "^ROOTFS $hostfs ro," && has '^TMPFS tmpfs rw,' && ! has '^MISSING' &&
		ok parent_root_read_only || bad parent_root_read_only "$(grep '^ROOTFS\|^TMPFS\|^MISSING\|^HOSTROOT' "$T/out" | tr '\n' ' ')"
	has '^CHECK cmdline' && ok zone_flags || bad zone_flags "no --zone a --zone-depth 1 --rpc-fd 3"
	has '^stopped a status 0$' && ok stop_graceful || bad stop_graceful "no 'stopped a status 0'"
	local left
	left=$(leftovers "$pid")
	[ -z "$left" ] && ok stop_leaves_nothing || bad stop_leaves_nothing "$left"
}

t_net() {
	drive "create p net root=$BB -- /bin/busybox ping -c 1 -W 5 10.88.0.1" "wait p" \
		"create n1 net" "create n2 net" \
		"sh ip -o -4 addr show \$ZIF | grep -q ' 10.88.0.5/30 ' && echo CHECK host_end" \
		"sh [ \"\$(readlink /proc/\$ZPID/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ] && echo CHECK own_netns" \
		"sh nsenter -t \$ZPID -n ip -o -4 addr show eth0 | grep -q ' 10.88.0.6/30 ' && nsenter -t \$ZPID -n ip route | grep -q 'default via 10.88.0.5' && echo CHECK zone_end" \
		"sh nsenter -t \$ZPID -n ip -o link show lo | grep -q 'UP' && echo CHECK lo_up" \
		"stop n1" "stop n2"
	has '^gone p status 0$' && ok net_zone_pings_parent ||
		bad net_zone_pings_parent "the zone's ping of 10.88.0.1 failed: $(grep '^gone p\|packet' "$T/out" | tr '\n' ' ')"
	[ "$(val n1 addr)" = 10.88.0.2/30 ] && [ "$(val n2 addr)" = 10.88.0.6/30 ] && ok subnets_never_collide ||
		bad subnets_never_collide "n1 $(val n1 addr), n2 $(val n2 addr)"
	has '^CHECK host_end' && has '^CHECK zone_end' && has '^CHECK own_netns' && has '^CHECK lo_up' &&
		ok veth_addresses_route || bad veth_addresses_route "$(grep '^CHECK' "$T/out" | tr '\n' ' ')"
	local left
	left=$(leftovers "")
	has '^stopped n1 status 0$' && has '^stopped n2 status 0$' && [ -z "$left" ] &&
		ok net_stop_leaves_nothing || bad net_stop_leaves_nothing "${left:-not stopped}"
}

t_kill() {
	drive "create k root=$BB -- /bin/busybox sh /bin/work" \
		"sh sleep 0.3; echo PIDS \$(cat \$(find \$ZCELLDIR -name cgroup.procs) | tr '\\n' ' ')" "kill k"
	local pids left=
	pids=$(sed -n 's/^PIDS //p' "$T/out")
	for p in $pids; do [ -d "/proc/$p" ] && left="$left $p"; done
	[ "$(echo $pids | wc -w)" -ge 3 ] || { bad kill_leaves_nothing "expected kin and two sleeps, saw: $pids"; return; }
	has '^killed k status 137$' && [ -z "$left$(leftovers "")" ] && ok kill_leaves_nothing ||
		bad kill_leaves_nothing "alive:$left $(leftovers "")"
}

t_stop_workload() {
	drive "create w root=$BB -- /bin/busybox sh /bin/work" \
		"sh sleep 0.3; echo PIDS \$(cat \$(find \$ZCELLDIR -name cgroup.procs) | tr '\\n' ' ')" "stop w"
	local pids left=
	pids=$(sed -n 's/^PIDS //p' "$T/out")
	for p in $pids; do [ -d "/proc/$p" ] && left="$left $p"; done
	has '^stopped w status' && [ "$(echo $pids | wc -w)" -ge 3 ] && [ -z "$left$(leftovers "")" ] && ok stop_takes_workload ||
		bad stop_takes_workload "pids [$pids] alive:$left $(leftovers "")"
}

t_depth_limit() {
	drive --flags "--depth 4 --depth-max 4" "create deep"
	has '^error FAILED_PRECONDITION: zone "deep": depth limit reached (this kin is at depth 4, the limit is 4)' &&
		[ -z "$(leftovers "")" ] && ok depth_limit_refused || bad depth_limit_refused "$(tail -3 "$T/out" | tr '\n' ' ')"
	drive --flags "--depth 3 --depth-max 4" "create ok3" "sh tr '\\0' ' ' </proc/\$ZPID/cmdline | grep -q -- '--zone-depth 4' && echo CHECK depth4" "stop ok3"
	has '^CHECK depth4' && has '^stopped ok3' && ok depth_passed_on || bad depth_passed_on "$(tail -4 "$T/out" | tr '\n' ' ')"
}

t_bad_names() {
	drive "create ../x" "create a/b" "create .." "create -x" \
		"create $(printf 'x%.0s' $(seq 65))" "create r root=/nonexistent/kin" "create r2 root=relative" \
		"create f root=/etc/hostname" "create dup" "create dup"
	local want=(
		'error INVALID_ARGUMENT: zone "../x"'
		'error INVALID_ARGUMENT: zone "a/b"'
		'error INVALID_ARGUMENT: zone ".."'
		'error INVALID_ARGUMENT: zone "-x"'
		'error INVALID_ARGUMENT: name too long'
		'error NOT_FOUND: zone "r": root /nonexistent/kin'
		'error INVALID_ARGUMENT: zone "r2": root "relative" is not an absolute path'
		'error INVALID_ARGUMENT: zone "f": root /etc/hostname is not a directory'
		'error ALREADY_EXISTS: zone "dup" already exists'
	)
	local miss=
	for w in "${want[@]}"; do grep -qF -- "$w" "$T/out" || miss="$miss [$w]"; done
	# Only "dup" was made; nothing for the refused ones.
	local dirs
	dirs=$(find "$BASE_DIR/cells" -mindepth 1 -type d 2>/dev/null | sed "s|$BASE_DIR/cells/||" | grep -v '^zones/dup' | grep -vx zones | tr '\n' ' ')
	[ -z "$miss" ] && [ -z "$dirs" ] && ok bad_names_refused_first || bad bad_names_refused_first "missing:$miss; dirs: $dirs"
	[ -z "$(leftovers "")" ] && ok driver_exit_leaves_nothing || bad driver_exit_leaves_nothing "$(leftovers "")"
}

t_bad_subnet() {
	drive --flags "--subnet 10.88.0.1/16" "create x"
	has 'error INVALID_ARGUMENT: zones: subnet "10.88.0.1/16"' && ok bad_subnet_refused ||
		bad bad_subnet_refused "$(head -2 "$T/out" | tr '\n' ' ')"
}

t_log() {
	printf '#!/bin/busybox sh\necho hello-from-zone\necho to-stderr >&2\n/bin/busybox seq 1 5000\n' >"$BB/bin/chatty"
	chmod +x "$BB/bin/chatty"
	drive --flags "--log-bytes 8192" "create c root=$BB -- /bin/busybox sh /bin/chatty" "wait c" "log c" \
		"sh wc -c <$T/state/c.log | sed 's/^/SIZE /'; wc -c <$T/state/c.log.1 | sed 's/^/SIZE1 /'"
	has '^gone c status 0$' || { bad zone_output_to_log "zone c did not end well: $(tail -3 "$T/out" | tr '\n' ' ')"; return; }
	# Not on our stdout/stderr: only in the log (read back as "log| ").
	! grep -q '^hello-from-zone\|^to-stderr\|^4999$' "$T/out" && has '^log| 5000$' &&
		ok zone_output_to_log || bad zone_output_to_log "$(grep -v '^log|' "$T/out" | head -5 | tr '\n' ' ')"
	local size size1
	size=$(sed -n 's/^SIZE //p' "$T/out") size1=$(sed -n 's/^SIZE1 //p' "$T/out")
	# 5000 numbers are 23893 bytes: rotated, each file at most the cap.
	[ "${size:-99999}" -le 8192 ] && [ "${size1:-0}" -eq 8192 ] && ! has '^log| hello-from-zone' &&
		ok zone_log_capped || bad zone_log_capped "log $size bytes, log.1 $size1 bytes"
}

t_two_level() {
	# Outer zone: --net, its workload is the driver as the zone's own kin
	# would be; it makes "in" (--net, pings its parent, the outer zone) and
	# "in2" once "in" is gone (the delegation "in" held is free again),
	# then prints its log of "in".
	# The inner zones' root (not the outer's /: pivot_root needs a mount
	# that is not the current root): busybox, and kin's libraries if any.
	ln -sf busybox "$BB/bin/sh" # the driver's sh command is system(3)
	mkdir -p "$BB/inroot/bin"
	cp /bin/busybox "$BB/inroot/bin/"
	for d in usr lib lib64; do [ -e "$BB/$d" ] && cp -a "$BB/$d" "$BB/inroot/"; done
	cat >"$BB/inner.script" <<-'EOS'
	create in net root=/inroot -- /bin/busybox ping -c 1 -W 5 10.88.128.1
	sh /bin/busybox ip -o -4 addr show | /bin/busybox grep ' kz' | /bin/busybox sed 's/^/INNER-ADDR /'
	wait in
	create in2 root=/inroot
	stop in2
	log in
	EOS
	printf '#!/bin/busybox sh\n/bin/busybox mkdir -p /sys/fs/cgroup/inner &&\n/bin/zone-driver --as-zone --base inner --state-dir /run/zd </inner.script\n' >"$BB/bin/inner"
	drive "create outer net root=$BB -- /bin/busybox sh /bin/inner" \
		"wait outer" "log outer"
	has '^ok create outer .* addr 10.88.0.2/30 .* subnet 10.88.128.0/21 ' && has '^log| as-zone depth 1 subnet 10.88.128.0/21$' &&
		ok subnet_delegated || bad subnet_delegated "$(grep '^ok create outer\|as-zone' "$T/out" | tr '\n' ' ')"
	grep -q '^log| ok create in .* depth 2 .* addr 10.88.128.2/30 gw 10.88.128.1 subnet 10.88.132.0/26 ' "$T/out" &&
		grep -q '^log| ok create in2 .* addr - gw - subnet 10.88.132.0/26 ' "$T/out" &&
		grep -q '^log| INNER-ADDR .* 10.88.128.1/30 ' "$T/out" &&
		ok nested_zone_uses_delegated_range || bad nested_zone_uses_delegated_range "$(grep '^log|' "$T/out" | head -12 | tr '\n' ' ')"
	grep -q '^log| gone in status 0$' "$T/out" && has '^gone outer status 0$' &&
		ok nested_net_zone_pings_its_parent_zone || bad nested_net_zone_pings_its_parent_zone "$(grep '^log|' "$T/out" | tail -8 | tr '\n' ' ')"
	[ -z "$(leftovers "")" ] && ok two_levels_leave_nothing || bad two_levels_leave_nothing "$(leftovers "")"
}

t_minimal_root
t_log
t_two_level
t_net
t_kill
t_stop_workload
t_depth_limit
t_bad_names
t_bad_subnet
# Under SANITIZE=1 both the driver and the zone kins are ASan+UBSan builds.
[ ! -s "$T/san" ] && ok no_sanitizer_reports || bad no_sanitizer_reports "$(head -3 "$T/san" | tr '\n' ' ')"
ns_suite_end
