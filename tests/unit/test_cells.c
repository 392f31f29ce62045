/* cells: names, limits, the output ring, backoff, seccomp profiles and the
 * text forms of an executable's spec. Pure parts only; the cgroup side runs
 * in tests/ns/cells.test.sh. */
#include "cells/cells-int.h"
#include "unit.h"

#include <linux/capability.h>
#include <seccomp.h>

TEST(cells_names)
{
	CHECK(cell_name_valid("web"));
	CHECK(cell_name_valid("a.b-c_D9"));
	CHECK(cell_name_valid("..."));
	CHECK(!cell_name_valid("."));
	CHECK(!cell_name_valid(".."));
	CHECK(!cell_name_valid(""));
	CHECK(!cell_name_valid(NULL));
	CHECK(!cell_name_valid("a/b"));
	CHECK(!cell_name_valid("a b"));
	CHECK(!cell_name_valid("é"));
	CHECK(cell_name_valid("getty@tty1.service"));
	CHECK(!cell_name_valid("@private"));
	char n64[65], n65[66];
	memset(n64, 'x', 64), n64[64] = '\0';
	memset(n65, 'x', 65), n65[65] = '\0';
	CHECK(cell_name_valid(n64));
	CHECK(!cell_name_valid(n65));

	struct err err = {0};
	CHECK_EQ(cell_path_check("a/b/c", &err), 0);
	CHECK_EQ(cell_path_check("/a", &err), -EINVAL);
	CHECK_EQ(err.code, ERR_INVALID_ARGUMENT);
	CHECK_EQ(cell_path_check("a/", &err), -EINVAL);
	CHECK_EQ(cell_path_check("a//b", &err), -EINVAL);
	CHECK_EQ(cell_path_check("a/../b", &err), -EINVAL);
	CHECK_EQ(cell_path_check("a/./b", &err), -EINVAL);
	CHECK_EQ(cell_path_check("", &err), -EINVAL);
	CHECK_EQ(cell_path_check("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p", &err), 0);
	CHECK_EQ(cell_path_check("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", &err), -EINVAL);
	CHECK(strstr(err.msg, "deeper") != NULL);
}

TEST(cells_limit_parse)
{
	struct cell_limits l = {0};
	struct err err = {0};
	char buf[64];
	CHECK_EQ(cell_limit_parse(&l, "memory.max", "512M", &err), 0);
	CHECK(l.memory_max == 512ull << 20);
	CHECK(l.set & (1u << CELL_MEMORY_MAX));
	CHECK_EQ(cell_limit_format(&l, CELL_MEMORY_MAX, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "536870912");
	CHECK_EQ(cell_limit_parse(&l, "memory.high", "max", &err), 0);
	CHECK(l.memory_high == CELL_UNLIMITED);
	CHECK_EQ(cell_limit_format(&l, CELL_MEMORY_HIGH, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "max");
	CHECK_EQ(cell_limit_parse(&l, "memory.swap.max", "1G", &err), 0);
	CHECK(l.memory_swap_max == 1ull << 30);
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "50000 100000", &err), 0);
	CHECK_EQ(cell_limit_format(&l, CELL_CPU_MAX, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "50000 100000");
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "max", &err), 0);
	CHECK_EQ(cell_limit_format(&l, CELL_CPU_MAX, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "max 100000");
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "20000", &err), 0);
	CHECK(l.cpu_period_us == 100000);
	CHECK_EQ(cell_limit_parse(&l, "io.weight", "200", &err), 0);
	CHECK_EQ(cell_limit_format(&l, CELL_IO_WEIGHT, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "default 200");
	CHECK_EQ(cell_limit_parse(&l, "pids.max", "max", &err), 0);
	CHECK_EQ(cell_limit_parse(&l, "pids.max", "100", &err), 0);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.cpus", "0-3,6", &err), 0);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.mems", "0", &err), 0);
	CHECK_EQ(cell_limits_validate(&l, &err), 0);
}

TEST(cells_limit_ranges)
{
	struct cell_limits l = {0};
	struct err err = {0};
	CHECK_EQ(cell_limit_parse(&l, "cpu.weight", "0", &err), -ERANGE);
	CHECK_EQ(err.code, ERR_INVALID_ARGUMENT);
	CHECK(strstr(err.msg, "cpu.weight") != NULL);
	CHECK_EQ(cell_limit_parse(&l, "cpu.weight", "10001", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "cpu.weight", "10000", &err), 0);
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "999 100000", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "1000 999", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "1000 1000001", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "cpu.max", "", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "memory.max", "-1", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "memory.max", "12X", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "memory.max", "2000000T", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "pids.max", "4194305", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "io.weight", "0", &err), -ERANGE);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.cpus", "3-1", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.cpus", "1,,2", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.cpus", "a", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "cpuset.mems", "1024", &err), -EINVAL);
	CHECK_EQ(cell_limit_parse(&l, "memory.bogus", "1", &err), -EINVAL);
	CHECK(strstr(err.msg, "unknown limit") != NULL);
	/* A refused value leaves the limit unset. */
	CHECK(!(l.set & (1u << CELL_IO_WEIGHT)));
	CHECK(l.set == (1u << CELL_CPU_WEIGHT));
	/* Filled in directly (as rpc/ will), still range-checked. */
	struct cell_limits d = {.set = 1u << CELL_PIDS_MAX, .pids_max = 5000000};
	CHECK_EQ(cell_limits_validate(&d, &err), -ERANGE);
	d = (struct cell_limits){.set = 1u << 20};
	CHECK_EQ(cell_limits_validate(&d, &err), -EINVAL);
	CHECK_STR(cell_limit_controller(CELL_MEMORY_SWAP_MAX), "memory");
	CHECK_STR(cell_limit_name(CELL_IO_WEIGHT), "io.weight");
}

TEST(cells_ring_wraparound)
{
	struct exec_ring r;
	char out[16];
	uint64_t pos = 0, dropped = 0;
	CHECK_EQ(exec_ring_init(&r, 8), 0);
	exec_ring_write(&r, "abcde", 5);
	CHECK_EQ(exec_ring_read(&r, &pos, out, sizeof(out), &dropped), 5);
	CHECK(memcmp(out, "abcde", 5) == 0);
	CHECK_EQ(dropped, 0);
	exec_ring_write(&r, "fghij", 5); /* wraps: keeps cdefghij */
	CHECK_EQ(exec_ring_start(&r), 2);
	CHECK_EQ(exec_ring_read(&r, &pos, out, sizeof(out), &dropped), 5);
	CHECK(memcmp(out, "fghij", 5) == 0);
	uint64_t old = 0;
	CHECK_EQ(exec_ring_read(&r, &old, out, sizeof(out), &dropped), 8);
	CHECK(memcmp(out, "cdefghij", 8) == 0);
	CHECK_EQ(dropped, 2);
	exec_ring_write(&r, "0123456789ABCDEF", 16); /* larger than the ring */
	CHECK_EQ(r.end, 26);
	old = 0;
	CHECK_EQ(exec_ring_read(&r, &old, out, 3, &dropped), 3);
	CHECK(memcmp(out, "89A", 3) == 0);
	CHECK_EQ(dropped, 18);
	CHECK_EQ(exec_ring_read(&r, &old, out, sizeof(out), &dropped), 5);
	CHECK(memcmp(out, "BCDEF", 5) == 0);
	CHECK_EQ(exec_ring_read(&r, &old, out, sizeof(out), &dropped), 0);
	exec_ring_free(&r);
}

TEST(cells_backoff)
{
	CHECK_EQ(exec_backoff_ms(0, 100, 30000), 100);
	CHECK_EQ(exec_backoff_ms(1, 100, 30000), 200);
	CHECK_EQ(exec_backoff_ms(3, 100, 30000), 800);
	CHECK_EQ(exec_backoff_ms(8, 100, 30000), 25600);
	CHECK_EQ(exec_backoff_ms(9, 100, 30000), 30000);
	CHECK_EQ(exec_backoff_ms(UINT32_MAX, 100, 30000), 30000);
	CHECK_EQ(exec_backoff_ms(70, 1, UINT64_MAX - 1), UINT64_MAX - 1);
	CHECK_EQ(exec_backoff_ms(0, 0, 0), EXEC_BACKOFF_BASE_MS);
	CHECK_EQ(exec_backoff_ms(100, 0, 0), EXEC_BACKOFF_CAP_MS);
	CHECK_EQ(exec_backoff_ms(2, 5000, 1000), 1000);
}

TEST(cells_seccomp_profile)
{
	static struct exec_sc_profile p;
	struct err err = {0};
	CHECK_EQ(exec_sc_parse("# comment\n\ndefault allow\nkeyctl errno EPERM\n"
	                       "ptrace kill  # trailing\nmount errno 13\nchroot log\n",
	                       &p, &err),
	         0);
	CHECK_EQ(p.def_action, EXEC_SC_ALLOW);
	CHECK_EQ(p.nrules, 4);
	CHECK_EQ(p.rules[0].nr, seccomp_syscall_resolve_name("keyctl"));
	CHECK_EQ(p.rules[0].action, EXEC_SC_ERRNO);
	CHECK_EQ(p.rules[0].errno_val, EPERM);
	CHECK_EQ(p.rules[1].action, EXEC_SC_KILL);
	CHECK_EQ(p.rules[2].errno_val, 13);
	CHECK_EQ(exec_sc_parse("default errno ENOSYS\nread allow\n", &p, &err), 0);
	CHECK_EQ(p.def_action, EXEC_SC_ERRNO);
	CHECK_EQ(p.def_errno, ENOSYS);

	CHECK_EQ(exec_sc_parse("nosuchcall errno\n", &p, &err), -EINVAL);
	CHECK(strstr(err.msg, "line 1") && strstr(err.msg, "nosuchcall"));
	CHECK_EQ(exec_sc_parse("read allow\nread kill\n", &p, &err), -EINVAL);
	CHECK(strstr(err.msg, "line 2") != NULL);
	CHECK_EQ(exec_sc_parse("read explode\n", &p, &err), -EINVAL);
	CHECK_EQ(exec_sc_parse("read errno 0\n", &p, &err), -EINVAL);
	CHECK_EQ(exec_sc_parse("read errno 4096\n", &p, &err), -EINVAL);
	CHECK_EQ(exec_sc_parse("read\n", &p, &err), -EINVAL);
	CHECK_EQ(exec_sc_parse("default allow\ndefault kill\n", &p, &err), -EINVAL);

	/* Both kinds build into BPF. */
	struct sock_fprog prog = {0};
	CHECK_EQ(exec_sc_parse("default allow\nkeyctl errno\n", &p, &err), 0);
	CHECK_EQ(exec_sc_build(&p, 0, &prog, &err), 0);
	CHECK(prog.len > 0);
	free(prog.filter);
	CHECK_EQ(exec_sc_build(NULL, EXEC_CAPS_DEFAULT, &prog, &err), 0);
	CHECK(prog.len > 10);
	free(prog.filter);
}

TEST(cells_seccomp_default_set)
{
	const char *denied[] = {
	    "keyctl",     "add_key",           "request_key", "bpf",          "perf_event_open",
	    "kexec_load", "open_by_handle_at", "mount",       "umount2",      "reboot",
	    "swapon",     "swapoff",           "init_module", "finit_module", "delete_module"};
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++)
		CHECK(exec_sc_default_denies(denied[i], EXEC_CAPS_DEFAULT));
	CHECK(!exec_sc_default_denies("read", EXEC_CAPS_DEFAULT));
	CHECK(!exec_sc_default_denies("mount", 1ull << CAP_SYS_ADMIN));
	CHECK(exec_sc_default_denies("keyctl", ~0ull));
	CHECK(!exec_sc_default_denies("reboot", 1ull << CAP_SYS_BOOT));
}

TEST(cells_spec_text)
{
	struct err err = {0};
	uint64_t caps = 0;
	CHECK_EQ(exec_caps_parse("CHOWN,cap_kill,Net_Admin", &caps, &err), 0);
	CHECK(caps == ((1ull << CAP_CHOWN) | (1ull << CAP_KILL) | (1ull << CAP_NET_ADMIN)));
	CHECK_EQ(exec_caps_parse("none", &caps, &err), 0);
	CHECK(caps == 0);
	CHECK_EQ(exec_caps_parse("CHOWN,BOGUS", &caps, &err), -EINVAL);
	CHECK(strstr(err.msg, "BOGUS") != NULL);
	/* The documented default is the container default set. */
	CHECK_EQ(exec_caps_parse("CHOWN,DAC_OVERRIDE,FSETID,FOWNER,MKNOD,NET_RAW,SETGID,SETUID,"
	                         "SETFCAP,SETPCAP,NET_BIND_SERVICE,SYS_CHROOT,KILL,AUDIT_WRITE",
	                         &caps, &err),
	         0);
	CHECK(caps == EXEC_CAPS_DEFAULT);

	struct exec_rlimit rl;
	CHECK_EQ(exec_rlimit_parse("nofile=1024:4096", &rl, &err), 0);
	CHECK_EQ(rl.resource, RLIMIT_NOFILE);
	CHECK_EQ(rl.soft, 1024);
	CHECK_EQ(rl.hard, 4096);
	CHECK_EQ(exec_rlimit_parse("core=unlimited", &rl, &err), 0);
	CHECK(rl.soft == RLIM_INFINITY && rl.hard == RLIM_INFINITY);
	CHECK_EQ(exec_rlimit_parse("nofile=10:5", &rl, &err), -EINVAL);
	CHECK_EQ(exec_rlimit_parse("bogus=1", &rl, &err), -EINVAL);
	CHECK_EQ(exec_rlimit_parse("nofile", &rl, &err), -EINVAL);

	uint32_t ns = 0;
	CHECK_EQ(exec_ns_parse("pid,net,user", &ns, &err), 0);
	CHECK(ns == (EXEC_NS_PID | EXEC_NS_NET | EXEC_NS_USER));
	CHECK_EQ(exec_ns_parse("pid,time", &ns, &err), -EINVAL);
}

TEST(cells_spec_validate)
{
	struct exec_spec s;
	struct err err = {0};
	char *argv[] = {"/bin/true", NULL}, *env[] = {"A=1", NULL}, *bad_env[] = {"=x", NULL};
	exec_spec_init(&s);
	CHECK(s.caps == EXEC_CAPS_DEFAULT && s.umask == 022 && s.seccomp == EXEC_SECCOMP_DEFAULT);
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* no argv */
	s.argv = argv;
	s.env = env;
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	s.env = bad_env;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	s.env = env;
	s.hostname = "box";
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* no uts namespace */
	s.namespaces = EXEC_NS_UTS;
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	s.ambient = 1ull << 21; /* CAP_SYS_ADMIN, not in caps */
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	s.ambient = 0;
	s.cwd = "relative";
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	s.cwd = NULL;
	s.nuid_map = 1;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* maps without user ns */
	s.nuid_map = 0;
	s.log_bytes = 100;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	s.log_bytes = 0;
	s.seccomp = EXEC_SECCOMP_FILE;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	s.seccomp = EXEC_SECCOMP_NONE;
	s.root = "/srv/root";
	CHECK_EQ(exec_spec_validate(&s, &err), 0);

	struct exec_spec *copy = NULL;
	CHECK_EQ(exec_spec_copy(&s, &copy), 0);
	CHECK(copy && copy->argv != s.argv);
	CHECK_STR(copy->argv[0], "/bin/true");
	CHECK(copy->argv[1] == NULL);
	CHECK_STR(copy->env[0], "A=1");
	CHECK_STR(copy->root, "/srv/root");
	CHECK(copy->namespaces & EXEC_NS_MNT); /* a root implies a mount namespace */
	CHECK_STR(exec_env_get(copy->env, "A"), "1");
	CHECK(exec_env_get(copy->env, "PATH") == NULL);
	exec_spec_free(copy);
}

/* A terminal: no stdio paths with it; a window size of both 1-4096 or
 * neither; carried by a copy. */
TEST(cells_spec_terminal)
{
	struct exec_spec s;
	struct err err = {0};
	char *argv[] = {"/bin/sh", NULL};
	exec_spec_init(&s);
	s.argv = argv;
	s.terminal = true;
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	s.stdio_paths[1] = "/tmp/out";
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	CHECK(strstr(err.msg, "terminal") != NULL);
	s.stdio_paths[1] = NULL;
	s.rows = 40;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* cols missing */
	s.cols = EXEC_TTY_SIZE_MAX + 1;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL);
	CHECK(strstr(err.msg, "1-4096") != NULL);
	s.cols = 132;
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	struct exec_spec *copy = NULL;
	CHECK_EQ(exec_spec_copy(&s, &copy), 0);
	CHECK(copy && copy->terminal && copy->rows == 40 && copy->cols == 132);
	exec_spec_free(copy);
}

static void count_release(void *data)
{
	(*(int *)data)++;
}

/* The overlay root and the masked/read-only lists: checked together,
 * deep-copied; the release hook runs once, when the copy goes. */
TEST(exec_spec_overlay_and_masks)
{
	char *argv[] = {"/bin/true", NULL};
	const char *masked[] = {"/proc/kcore", NULL}, *ro[] = {"/proc/sys", NULL};
	const char *rel[] = {"proc/kcore", NULL};
	struct exec_spec s, *copy = NULL;
	struct err err = {0};
	int released = 0;
	exec_spec_init(&s);
	s.argv = argv;
	s.root_lowerdirs = "/l2:/l1";
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* not all three, no root */
	s.root_upperdir = "/u";
	s.root_workdir = "/w";
	s.root = "/r";
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	s.masked_paths = rel;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* relative */
	s.masked_paths = masked;
	s.readonly_paths = ro;
	CHECK_EQ(exec_spec_validate(&s, &err), 0);
	s.release = count_release;
	s.release_data = &released;
	CHECK_EQ(exec_spec_copy(&s, &copy), 0);
	CHECK_STR(copy->root_lowerdirs, "/l2:/l1");
	CHECK_STR(copy->root_workdir, "/w");
	CHECK(copy->masked_paths != s.masked_paths);
	CHECK_STR(copy->masked_paths[0], "/proc/kcore");
	CHECK(copy->masked_paths[1] == NULL);
	CHECK_STR(copy->readonly_paths[0], "/proc/sys");
	CHECK_STR(copy->argv[0], "/bin/true");
	CHECK_EQ(released, 0);
	exec_spec_free(copy);
	CHECK_EQ(released, 1);
	char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	s.root_lowerdirs = big;
	CHECK_EQ(exec_spec_validate(&s, &err), -EINVAL); /* past a page of mount data */
}

TEST(cells_codes)
{
	CHECK_EQ(err_code_from_errno(-ENOENT), ERR_NOT_FOUND);
	CHECK_EQ(err_code_from_errno(-EEXIST), ERR_ALREADY_EXISTS);
	CHECK_EQ(err_code_from_errno(-EINVAL), ERR_INVALID_ARGUMENT);
	CHECK_EQ(err_code_from_errno(-EBUSY), ERR_FAILED_PRECONDITION);
	CHECK_EQ(err_code_from_errno(-ENOSPC), ERR_RESOURCE_EXHAUSTED);
	CHECK_EQ(ERR_FAILED_PRECONDITION, 9); /* gRPC's numbering */
	CHECK_STR(err_code_name(ERR_NOT_FOUND), "NOT_FOUND");
}
