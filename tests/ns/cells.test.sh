#!/usr/bin/env bash
# Namespace tests of cells/: the real library, driven by build/cells-driver
# (a script of cell operations run in its own ev_loop), on the host's cgroup2
# as found through /proc/self/mountinfo (here the hybrid unified hierarchy,
# which has no controllers: limits are refused, the rest works). Every test
# gets its own subtree <mount>/kin-test-PID/tN; all of it is removed at exit.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin cells
DRIVER=$PWD/$BUILD/cells-driver
PROBE=$PWD/$BUILD/cells-probe

ns_need_cgroup2
TOP=kin-test-$$
trap 'cgroup_tree_remove "$CG/$TOP"; rm -rf "$T"' EXIT

n=0
# drive SCRIPT: runs the driver on a fresh subtree; output in $T/out.
drive() {
	n=$((n + 1))
	BASE=$TOP/t$n
	printf '%s\n' "$1" | timeout 120 "$DRIVER" --base "$BASE" --own-leaf >"$T/out" 2>&1
}
# has PATTERN: grep -E over the last driver output.
has() { grep -qE -- "$1" "$T/out"; }

t_hierarchy() {
	drive "create a
create a/b
create a/b/c
create z
list
dir a/b/c
sh test -d \$KIN_DIR && echo ISDIR
delete a/b/c
delete a/b
list"
	has '^cell a depth=1' && has '^cell a/b depth=2' && has '^cell a/b/c depth=3' ||
		{ bad hierarchy "tree not listed"; return; }
	# Parents before children, siblings in creation order.
	local order
	order=$(sed -n '/^> list/,/^ok list/p' "$T/out" | grep '^cell' | head -4 | awk '{print $2}' | tr '\n' ' ')
	[ "$order" = "a a/b a/b/c z " ] || { bad hierarchy "order '$order'"; return; }
	has "^dir $CG/$TOP/t$n/cells/a/b/c\$" && has '^ISDIR' || { bad hierarchy "cgroup dir not under the mount"; return; }
	[ -d "$CG/$BASE/cells/a" ] && [ ! -e "$CG/$BASE/cells/a/b" ] && ok hierarchy ||
		bad hierarchy "delete did not remove a/b, or removed a"
}

t_own_leaf() {
	drive "sh grep 0:: /proc/\$PPID/cgroup"
	has "^0::/$TOP/t$n/init\$" && [ -z "$(cat "$CG/$BASE/cells/cgroup.procs")" ] && ok own_leaf ||
		bad own_leaf "the driver (kin) is not in <base>/init"
}

t_bad_names() {
	local long
	long=$(printf 'x%.0s' $(seq 65))
	drive "create ../x
create /abs
create a//b
create 'a b'
create .
create $long
create ok
create ok
show nope
create nope/child
start ok bad/name -- /bin/true
update ok cpu.weight=0
sh ls \$KIN_CELLS"
	local inval
	inval=$(grep -c '^error INVALID_ARGUMENT' "$T/out")
	[ "$inval" -eq 8 ] || { bad bad_names "$inval INVALID_ARGUMENT, want 8"; return; }
	has '^error ALREADY_EXISTS: cell "ok" already exists' || { bad bad_names "no ALREADY_EXISTS"; return; }
	has '^error NOT_FOUND: cell "nope" not found' && has '^error NOT_FOUND: cell "nope/child": parent cell "nope" not found' ||
		{ bad bad_names "no NOT_FOUND"; return; }
	# Nothing but "ok" was made.
	[ "$(ls "$CG/$BASE/cells" | grep -v '^cgroup\.\|^cpu\.\|^io\.\|^memory\.' | tr '\n' ' ')" = "ok " ] &&
		ok bad_names || bad bad_names "cgroup dirs made for bad names: $(ls "$CG/$BASE/cells")"
}

t_limits_refused() {
	drive "create db memory.max=1G
create db2 cpu.weight=100
create db3 pids.max=10
create db4 'cpu.max=50000 100000'
create db5 io.weight=50
create db6 memory.max=banana
create ok
update ok memory.high=512M"
	has '^error FAILED_PRECONDITION: cell "db": memory.max: controller memory is not enabled' &&
		has 'cell "db2": cpu.weight: controller cpu is not enabled' &&
		has 'cell "db3": pids.max: controller pids is not enabled' &&
		has 'cell "db4": cpu.max: controller cpu is not enabled' &&
		has 'cell "db5": io.weight: controller io is not enabled' &&
		has '^error INVALID_ARGUMENT: memory.max: "banana"' &&
		has '^error FAILED_PRECONDITION: cell "ok": memory.high: controller memory' ||
		{ bad limits_refused "limits not refused with the controller named"; return; }
	ls -d "$CG/$BASE"/cells/db* >/dev/null 2>&1 && bad limits_refused "a refused cell was made" ||
		ok limits_refused
}

t_placement() {
	drive "create a
create a/b
start a/b p -- sh -c 'grep 0:: /proc/self/cgroup; sleep 30'
until-log a/b p 0::
pid a/b p
sh grep 0:: /proc/\$KIN_PID/cgroup
sh grep -c . \$KIN_CELLS/a/b/cgroup.procs
show a/b
delete a force"
	has "^log|" || true
	has "^0::/$TOP/t$n/cells/a/b\$" || { bad placement "/proc/PID/cgroup is not the cell"; return; }
	has '^show a/b procs=[12] ' && has '^ok delete' && ok placement || bad placement "show/delete"
}

t_freeze() {
	drive "create f
start f counter -- sh -c 'while :; do echo x >>$T/count; sleep 0.02; done'
run 300
freeze f
sh wc -c <$T/count >$T/c1
run 500
sh wc -c <$T/count >$T/c2
sh cat \$KIN_CELLS/f/cgroup.events
show f
thaw f
run 500
sh wc -c <$T/count >$T/c3
events
delete f force"
	has '^ok freeze' && has '^frozen 1' && has 'show f .* frozen=1' ||
		{ bad freeze "cell not frozen"; return; }
	local c1 c2 c3
	c1=$(cat "$T/c1") c2=$(cat "$T/c2") c3=$(cat "$T/c3")
	[ "$c1" -gt 0 ] && [ "$c1" -eq "$c2" ] && [ "$c3" -gt "$c2" ] ||
		{ bad freeze "progress $c1 -> $c2 (frozen) -> $c3 (thawed)"; return; }
	has '^event frozen cell=f' && has '^event thawed cell=f' && ok freeze ||
		bad freeze "no frozen/thawed events"
}

t_kill() {
	drive "create k
start k many -- sh -c 'sleep 300 & sleep 300 & (sleep 300 &); sleep 300'
run 300
sh grep -c . \$KIN_CELLS/k/cgroup.procs
kill k
wait k many
sh for i in \$(seq 100); do [ -s \$KIN_CELLS/k/cgroup.procs ] || break; sleep 0.05; done; echo left=\$(grep -c . \$KIN_CELLS/k/cgroup.procs)
delete k"
	has '^ok wait k/many: signal 9' && has '^left=0$' && has '^ok delete$' && ok kill ||
		bad kill "processes survived cgroup.kill, or delete refused"
}

t_events_restart() {
	drive "create e
start e once -- sh -c 'exit 4'
wait e once
start e flaky restart=on-failure backoff=20:100 -- sh -c 'exit 1'
run 800
stop e flaky 1000
status e flaky
events
delete e"
	has '^event start cell=e exec=once' && has '^event exit cell=e exec=once pid=[0-9]+ code=4' ||
		{ bad events_restart "no start/exit events"; return; }
	local restarts
	restarts=$(sed -nE 's/^exec e\/flaky .*restarts=([0-9]+).*/\1/p' "$T/out")
	[ "${restarts:-0}" -ge 3 ] && has '^event restart cell=e exec=flaky .*count=1' &&
		has '^exec e/flaky state=exited' && ok events_restart ||
		bad events_restart "restarts=${restarts:-none} (want >= 3 with 20..100 ms backoff), or not stopped"
}

# An executable restarted with fds passed to it goes along a re-exec (the
# driver's own, with cells_save and cells_restore): its restarts after it
# get the same file as fd 3, the driver having closed its own at the start.
t_pass_fds_reexec() {
	echo along >"$T/passfd"
	drive "create p
start p fd restart=always backoff=20:20 passfd=$T/passfd -- sh -c 'readlink /proc/self/fd/3 || echo none; sleep 0.2'
run 500
reexec
run 1000
status p fd
log p fd
stop p fd 1000"
	local restarts lines
	restarts=$(sed -nE 's/^exec p\/fd .*restarts=([0-9]+).*/\1/p' "$T/out")
	lines=$(grep -c "^log| $T/passfd\$" "$T/out")
	has '^ok reexec$' || { bad pass_fds_reexec "not handed over: $(grep -m1 '^error' "$T/out")"; return; }
	[ "${restarts:-0}" -ge 5 ] && [ "$lines" -ge "$restarts" ] && ! has '^log\| none' &&
		ok pass_fds_reexec || bad pass_fds_reexec "restarts=${restarts:-none}, $lines runs saw the file"
}

t_stop() {
	drive "create s
start s polite -- sleep 100
start s stubborn -- sh -c 'trap \"\" TERM; while :; do sleep 0.05; done'
run 200
stop s polite 5000
wait s polite
stop s stubborn 300
wait s stubborn
delete s force"
	has '^ok wait s/polite: signal 15' && has '^ok wait s/stubborn: signal 9' && ok stop ||
		bad stop "SIGTERM then SIGKILL after the grace period not seen"
}

t_exec_errors() {
	printf 'default allow\nkeyctl explode\n' >"$T/bad.profile"
	chmod 0644 "$T/bad.profile"
	drive "create x
start x missing -- /nonexistent/binary
start x noexec -- /etc/passwd
start x badprof seccomp=$T/bad.profile -- /bin/true
start x nocwd cwd=/nonexistent -- /bin/true
start x nopath -- no-such-program-anywhere
execs x
sh grep -c . \$KIN_CELLS/x/cgroup.procs
delete x"
	has '^error NOT_FOUND: exec "x/missing": execve: No such file or directory' &&
		has '^error PERMISSION_DENIED: exec "x/noexec": execve: Permission denied' &&
		has '^error INVALID_ARGUMENT: exec "x/badprof": seccomp profile line 2' &&
		has '^error NOT_FOUND: exec "x/nocwd": chdir: No such file' &&
		has '^error NOT_FOUND: exec "x/nopath": execve' ||
		{ bad exec_errors "errors not reported with the step and errno"; return; }
	# Nothing half-made: no record, no process, and the cell deletes.
	! has '^exec x/' && has '^0$' && has '^ok delete$' && ok exec_errors ||
		bad exec_errors "a failed start left a record or a process"
}

t_namespaces() {
	drive "create n
start n pid ns=pid -- sh -c 'echo pid=\$\$'
wait n pid
log n pid
start n uts ns=uts hostname=cellbox -- hostname
wait n uts
log n uts
start n net ns=net -- sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d \" \"; cat /sys/class/net/lo/operstate 2>/dev/null'
wait n net
log n net
start n user ns=user -- cat /proc/self/uid_map
wait n user
log n user
start n cg ns=cgroup,mnt -- cat /proc/self/cgroup
wait n cg
log n cg
delete n"
	has '^log\| pid=1$' || { bad namespaces "pid ns: not PID 1"; return; }
	has '^log\| cellbox$' && [ "$(hostname)" != cellbox ] || { bad namespaces "uts: hostname"; return; }
	local ifs
	ifs=$(sed -n '/^> log n net/,/^ok log/p' "$T/out" | grep '^log|' | awk '{print $2}' | tr '\n' ' ')
	[ "$ifs" = "lo unknown " ] || [ "$ifs" = "lo " ] || { bad namespaces "net: interfaces '$ifs', want only lo"; return; }
	has '^log\| +0 +0 +1$' || { bad namespaces "user: uid_map"; return; }
	has '^log\| 0::/$' && ok namespaces || bad namespaces "cgroup ns: cell is not /"
}

t_seccomp() {
	printf '# test profile\ndefault allow\nkeyctl errno ENOSYS\n' >"$T/enosys.profile"
	drive "create sc
start sc def -- $PROBE keyctl
wait sc def
start sc none seccomp=none -- $PROBE keyctl
wait sc none
start sc file seccomp=$T/enosys.profile -- $PROBE keyctl
wait sc file
start sc userns -- $PROBE unshare-user
wait sc userns
start sc status nnp -- $PROBE caps
wait sc status
execs
sh true
log sc def
log sc none
log sc file
log sc userns
log sc status
delete sc"
	has '^log\| keyctl: errno EPERM$' || { bad seccomp "default profile: keyctl not EPERM"; return; }
	local none
	none=$(sed -n '/^> log sc none/,/^ok log/p' "$T/out" | grep '^log|')
	[ -n "$none" ] && ! echo "$none" | grep -q EPERM || { bad seccomp "seccomp=none still denies keyctl: $none"; return; }
	has '^log\| keyctl: errno ENOSYS$' || { bad seccomp "profile file not applied"; return; }
	has '^log\| unshare-user: errno EPERM$' || { bad seccomp "user namespaces not denied"; return; }
	has '^log\| Seccomp:[[:space:]]+2$' && has '^log\| NoNewPrivs:[[:space:]]+1$' && ok seccomp ||
		bad seccomp "filter mode or no_new_privs not set"
}

t_capabilities() {
	drive "create c
start c def -- $PROBE caps
wait c def
log c def
start c none caps=none -- $PROBE caps
wait c none
log c none
start c user uid=1000 gid=1000 groups=5,6 -- sh -c '$PROBE caps; $PROBE ids'
wait c user
log c user
start c amb uid=1000 gid=1000 caps=NET_BIND_SERVICE ambient=NET_BIND_SERVICE -- $PROBE caps
wait c amb
log c amb
delete c"
	local eff
	eff=$(grep '^log| CapEff' "$T/out" | awk '{print $3}' | tr '\n' ' ')
	[ "$eff" = "00000000a80425fb 0000000000000000 0000000000000000 0000000000000400 " ] ||
		{ bad capabilities "CapEff default/none/uid 1000/ambient: '$eff'"; return; }
	has '^log\| CapBnd:[[:space:]]+00000000a80425fb' && has '^log\| uid=1000 gid=1000 groups=2$' &&
		ok capabilities || bad capabilities "bounding set or ids wrong"
}

t_pivot_root() {
	local bb
	bb=$(command -v busybox || true)
	if [ -z "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
		echo "SKIP ns/cells/pivot_root: no static busybox (Debian's busybox-static, see scripts/deps.sh)"
		return
	fi
	local R=$T/root
	mkdir -p "$R/bin" "$R/tmp"
	cp "$bb" "$R/bin/busybox"
	cp "$PROBE" "$R/bin/probe"
	for a in sh ls cat touch hostname; do ln -sf busybox "$R/bin/$a"; done
	drive "create r
start r rw root=$R ns=pid,mnt,uts hostname=rootbox env=PATH=/bin -- sh -c 'ls /; echo pid=\$\$; ls /dev; hostname; touch /tmp/w && echo wrote'
wait r rw
log r rw
start r ro root=$R ro ns=pid -- sh -c 'touch /x 2>&1; echo rc=\$?'
wait r ro
log r ro
start r missing root=$T/nonexistent -- /bin/sh
delete r"
	local top
	top=$(sed -n '/^> log r rw/,/^ok log/p' "$T/out" | grep '^log|' | head -4 | awk '{print $2}' | tr '\n' ' ')
	[ "$top" = "bin dev proc tmp " ] || { bad pivot_root "root listing '$top'"; return; }
	has '^log\| pid=1$' && has '^log\| null$' && has '^log\| urandom$' && has '^log\| rootbox$' &&
		has '^log\| wrote$' || { bad pivot_root "pid/dev/hostname/write inside the root"; return; }
	has '^log\| .*Read-only file system' && has '^log\| rc=1$' || { bad pivot_root "read-only root writable"; return; }
	[ -e "$R/tmp/w" ] && has '^error NOT_FOUND: exec "r/missing": bind root: No such file' &&
		ok pivot_root || bad pivot_root "missing root not reported as bind root ENOENT"
}

t_output() {
	drive "create o
start o big log=4096 -- sh -c 'i=0; while [ \$i -lt 2000 ]; do echo line\$i; i=\$((i+1)); done; echo done >&2'
wait o big
run 200
log o big
log o big stderr
start o cat stdin -- cat
follow o cat
stdin o cat hello-stdin
run 200
stdin-close o cat
wait o cat
run 100
delete o"
	has '^ok log 4096 bytes, [0-9]+ dropped' && has '^log\| line1999$' && has '^log\| done$' ||
		{ bad output "ring of 4096 bytes did not keep the tail"; return; }
	has '^follow\|out\| hello-stdin' && has '^follow end$' && ok output ||
		bad output "stdin pipe / follow / end"
}

t_delete_semantics() {
	drive "create d
create d/e
start d/e run -- sleep 100
delete d/e
delete d
delete d force
list
sh test -e \$KIN_CELLS/d && echo STILL"
	has '^error FAILED_PRECONDITION: cell "d/e" has running processes' &&
		has '^error FAILED_PRECONDITION: cell "d" has child cells' && has '^ok delete \(waited\)$' &&
		! has '^STILL' && ! has '^cell d' && ok delete_semantics ||
		bad delete_semantics "refusal or forced delete wrong"
}

t_hierarchy
t_own_leaf
t_bad_names
t_limits_refused
t_placement
t_freeze
t_kill
t_events_restart
t_pass_fds_reexec
t_stop
t_exec_errors
t_namespaces
t_seccomp
t_capabilities
t_pivot_root
t_output
t_delete_semantics

# Everything made is removed again.
cgroup_tree_remove "$CG/$TOP"
[ ! -e "$CG/$TOP" ] && ok cleanup || bad cleanup "$CG/$TOP still there"
ns_suite_end
