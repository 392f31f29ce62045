/* sandbox: what the gateway gives up once its files are loaded. It parses
 * hostile bytes (TLS records, certificates) for kin, so a flaw there must
 * find a process that holds no capability, cannot gain one through exec,
 * and can make only the system calls serving connections needs: the
 * seccomp filter's default is to kill the whole process (kin restarts the
 * gateway; a compromised one dies at its first unusual call). Reloading
 * the files still works: reading them needs only open/read/stat. */
#include "tls/tls-int.h"

#include <seccomp.h>
#include <sys/capability.h>
#include <sys/prctl.h>

/* What serving, OpenSSL (its random seeding, its file loading on a
 * reload) and the log need; tests/ns/tls-gateway.test.sh runs every path
 * of the gateway under this filter and checks that nothing was killed. */
static const char *const sandbox_syscalls[] = {
    "read",
    "write",
    "readv",
    "writev",
    "recvmsg",
    "sendmsg",
    "recvfrom",
    "sendto",
    "accept4",
    "accept",
    "close",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "timerfd_settime",
    "timerfd_gettime",
    "rt_sigreturn",
    "rt_sigprocmask",
    "socketpair",
    "shutdown",
    "getsockopt",
    "setsockopt",
    "getsockname",
    "getpeername",
    "fcntl",
    "openat",
    "access", /* a file a reload cannot read: say why */
    "faccessat",
    "faccessat2",
    "open",
    "newfstatat",
    "fstat",
    "stat",
    "statx",
    "lseek",
    "mmap",
    "munmap",
    "mremap",
    "brk",
    "madvise",
    "clock_gettime",
    "gettimeofday",
    "getrandom",
    "getpid",
    "exit",
    "exit_group",
    "futex",
    "nanosleep",
    "clock_nanosleep",
    "getrlimit",
    "prlimit64",
};

static int sandbox_caps(struct err *err)
{
	/* The bounding set first: dropping from it needs CAP_SETPCAP, which
	 * goes with the rest below. Without it (not root) there is nothing
	 * we could regain anyway. */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
		if (CAP_IS_SUPPORTED(c) && cap_get_bound(c) > 0 && cap_drop_bound(c) < 0 &&
		    errno != EPERM)
			return err_set_errno(err, -errno, "tls gateway: dropping capability %d",
			                     (int)c);
	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	cap_t none = cap_init();
	if (!none)
		return err_set_errno(err, -ENOMEM, "tls gateway: capabilities");
	int r = cap_set_proc(none) < 0 ? -errno : 0;
	cap_free(none);
	if (r < 0)
		return err_set_errno(err, r, "tls gateway: clearing capabilities");
	return 0;
}

/* A sanitizer build's runtime reports through calls no gateway makes
 * (sigaltstack, ioctl, LeakSanitizer's ptrace at exit): there the filter
 * only logs them (audit), or every report would die half-written. */
#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_DEFAULT SCMP_ACT_LOG
#else
#define SANDBOX_DEFAULT SCMP_ACT_KILL_PROCESS
#endif

static int sandbox_seccomp(struct err *err)
{
	scmp_filter_ctx f = seccomp_init(SANDBOX_DEFAULT);
	if (!f)
		return err_set_errno(err, -ENOMEM, "tls gateway: seccomp filter");
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(sandbox_syscalls) && r == 0; i++) {
		int nr = seccomp_syscall_resolve_name(sandbox_syscalls[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture (open, stat on arm64) */
		r = seccomp_rule_add(f, SCMP_ACT_ALLOW, nr, 0);
	}
	if (r == 0)
		r = seccomp_load(f);
	seccomp_release(f);
	if (r < 0)
		return err_set_errno(err, r, "tls gateway: loading the seccomp filter");
	return 0;
}

int tls_sandbox_enter(struct err *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_set_errno(err, -errno, "tls gateway: no_new_privs");
	int r = sandbox_caps(err);
	if (r < 0)
		return r;
	return sandbox_seccomp(err);
}
