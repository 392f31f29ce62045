/* seccomp: the `default` profile (what container runtimes deny by default),
 * profile files, and building either into a BPF program in the parent, so
 * the child only installs it. Format of a profile file (README "Seccomp"):
 *
 *     # comment
 *     default allow            # or: errno [NAME|N], kill, trap, log
 *     keyctl errno EPERM
 *     ptrace kill
 *
 * Syscall names are the native (x86_64) ones; an unknown name is an error
 * naming its line, as is a duplicate. Other architectures (i386 via int 0x80,
 * x32) are killed, so they cannot be used to slip past the list. */
#include "cells/cells-int.h"

#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define NO_CAP (-1)

/* Denied with EPERM unless the executable keeps the capability that makes
 * the call meaningful (then the kernel's own permission checks apply). */
static const struct {
	const char *name;
	int allow_cap;
} default_denied[] = {
    {"keyctl", NO_CAP},
    {"add_key", NO_CAP},
    {"request_key", NO_CAP},
    {"uselib", NO_CAP},
    {"ustat", NO_CAP},
    {"sysfs", NO_CAP},
    {"_sysctl", NO_CAP},
    {"nfsservctl", NO_CAP},
    {"bpf", CAP_SYS_ADMIN},
    {"perf_event_open", CAP_SYS_ADMIN},
    {"fanotify_init", CAP_SYS_ADMIN},
    {"lookup_dcookie", CAP_SYS_ADMIN},
    {"mount", CAP_SYS_ADMIN},
    {"umount2", CAP_SYS_ADMIN},
    {"pivot_root", CAP_SYS_ADMIN},
    {"setns", CAP_SYS_ADMIN},
    {"fsopen", CAP_SYS_ADMIN},
    {"fsconfig", CAP_SYS_ADMIN},
    {"fsmount", CAP_SYS_ADMIN},
    {"fspick", CAP_SYS_ADMIN},
    {"move_mount", CAP_SYS_ADMIN},
    {"open_tree", CAP_SYS_ADMIN},
    {"mount_setattr", CAP_SYS_ADMIN},
    {"quotactl", CAP_SYS_ADMIN},
    {"swapon", CAP_SYS_ADMIN},
    {"swapoff", CAP_SYS_ADMIN},
    {"kexec_load", CAP_SYS_BOOT},
    {"kexec_file_load", CAP_SYS_BOOT},
    {"reboot", CAP_SYS_BOOT},
    {"init_module", CAP_SYS_MODULE},
    {"finit_module", CAP_SYS_MODULE},
    {"delete_module", CAP_SYS_MODULE},
    {"open_by_handle_at", CAP_DAC_READ_SEARCH},
    {"acct", CAP_SYS_PACCT},
    {"settimeofday", CAP_SYS_TIME},
    {"clock_settime", CAP_SYS_TIME},
    {"clock_adjtime", CAP_SYS_TIME},
    {"iopl", CAP_SYS_RAWIO},
    {"ioperm", CAP_SYS_RAWIO},
    {"syslog", CAP_SYSLOG},
    {"vhangup", CAP_SYS_TTY_CONFIG},
    {"process_vm_readv", CAP_SYS_PTRACE},
    {"process_vm_writev", CAP_SYS_PTRACE},
    {"kcmp", CAP_SYS_PTRACE},
    {"userfaultfd", CAP_SYS_PTRACE},
};

static bool caps_have(uint64_t caps, int cap)
{
	return cap != NO_CAP && (caps >> cap) & 1;
}

bool exec_sc_default_denies(const char *syscall, uint64_t caps)
{
	for (size_t i = 0; i < ARRAY_SIZE(default_denied); i++)
		if (strcmp(default_denied[i].name, syscall) == 0)
			return !caps_have(caps, default_denied[i].allow_cap);
	return false;
}

static const struct {
	const char *name;
	int val;
} errno_names[] = {
    {"EPERM", EPERM},   {"ENOENT", ENOENT}, {"EACCES", EACCES},         {"EINVAL", EINVAL},
    {"ENOSYS", ENOSYS}, {"EIO", EIO},       {"EFAULT", EFAULT},         {"ENOMEM", ENOMEM},
    {"EBUSY", EBUSY},   {"EAGAIN", EAGAIN}, {"EOPNOTSUPP", EOPNOTSUPP},
};

static int parse_errno(const char *s, int *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
		if (strcmp(s, errno_names[i].name) == 0) {
			*ret = errno_names[i].val;
			return 0;
		}
	uint64_t v;
	if (str_to_u64(s, 4095, &v) < 0 || v == 0)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

/* "allow" | "errno [E]" | "kill" | "trap" | "log" from words w[0..n). */
static int parse_action(char **w, int n, enum exec_sc_action *act, int *eno)
{
	*eno = EPERM;
	if (n < 1)
		return -EINVAL;
	if (strcmp(w[0], "errno") == 0) {
		*act = EXEC_SC_ERRNO;
		return n == 1 ? 0 : n == 2 ? parse_errno(w[1], eno) : -EINVAL;
	}
	if (n != 1)
		return -EINVAL;
	if (strcmp(w[0], "allow") == 0)
		*act = EXEC_SC_ALLOW;
	else if (strcmp(w[0], "kill") == 0)
		*act = EXEC_SC_KILL;
	else if (strcmp(w[0], "trap") == 0)
		*act = EXEC_SC_TRAP;
	else if (strcmp(w[0], "log") == 0)
		*act = EXEC_SC_LOG;
	else
		return -EINVAL;
	return 0;
}

int exec_sc_parse(const char *text, struct exec_sc_profile *p, struct err *err)
{
	memset(p, 0, sizeof(*p));
	p->def_action = EXEC_SC_ALLOW;
	if (strlen(text) > EXEC_SC_FILE_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT,
		               "seccomp profile: larger than %d bytes", EXEC_SC_FILE_MAX);
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	unsigned lineno = 0;
	bool have_default = false;
	for (char *line = copy, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *w[4];
		int n = 0;
		for (char *save = NULL, *tok = strtok_r(line, " \t\r", &save); tok;
		     tok = strtok_r(NULL, " \t\r", &save)) {
			if (n == (int)ARRAY_SIZE(w))
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "seccomp profile line %u: too many words", lineno);
			w[n++] = tok;
		}
		if (n == 0)
			continue;
		enum exec_sc_action act;
		int eno;
		if (parse_action(w + 1, n - 1, &act, &eno) < 0)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "seccomp profile line %u: expected \"%s allow|errno "
			               "[ERRNO]|kill|trap|log\"",
			               lineno, w[0]);
		if (strcmp(w[0], "default") == 0) {
			if (have_default)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "seccomp profile line %u: second default", lineno);
			have_default = true;
			p->def_action = act;
			p->def_errno = eno;
			continue;
		}
		int nr = seccomp_syscall_resolve_name(w[0]);
		if (nr == __NR_SCMP_ERROR)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "seccomp profile line %u: unknown syscall \"%s\"", lineno,
			               w[0]);
		for (size_t i = 0; i < p->nrules; i++)
			if (p->rules[i].nr == nr)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "seccomp profile line %u: \"%s\" listed twice",
				               lineno, w[0]);
		if (p->nrules == EXEC_SC_RULES_MAX)
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "seccomp profile: more than %d rules", EXEC_SC_RULES_MAX);
		p->rules[p->nrules++] =
		    (struct exec_sc_rule){.nr = nr, .action = act, .errno_val = eno};
	}
	return 0;
}

static uint32_t scmp_action(enum exec_sc_action a, int eno)
{
	switch (a) {
	case EXEC_SC_ALLOW:
		return SCMP_ACT_ALLOW;
	case EXEC_SC_ERRNO:
		return SCMP_ACT_ERRNO((uint32_t)eno);
	case EXEC_SC_KILL:
		return SCMP_ACT_KILL_PROCESS;
	case EXEC_SC_TRAP:
		return SCMP_ACT_TRAP;
	case EXEC_SC_LOG:
		return SCMP_ACT_LOG;
	}
	return SCMP_ACT_KILL_PROCESS;
}

static int add_default_rules(scmp_filter_ctx ctx, uint64_t caps)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int r;
	for (size_t i = 0; i < ARRAY_SIZE(default_denied); i++) {
		if (caps_have(caps, default_denied[i].allow_cap))
			continue;
		int nr = seccomp_syscall_resolve_name(default_denied[i].name);
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue; /* not a syscall of this architecture */
		if ((r = seccomp_rule_add(ctx, eperm, nr, 0)) < 0)
			return r;
	}
	if (caps_have(caps, CAP_SYS_ADMIN))
		return 0;
	/* A user namespace hands the process a full set of capabilities over
	 * new namespaces: the classic way out of a container's limits. */
	if ((r = seccomp_rule_add(ctx, eperm, SCMP_SYS(unshare), 1,
	                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))) < 0 ||
	    (r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
	                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))) < 0)
		return r;
	/* clone3's flags sit behind a pointer seccomp cannot follow: ENOSYS
	 * makes libc fall back to clone, which the rule above checks. */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

/* libseccomp 2.5 exports BPF only to an fd: a memfd, read back. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
	_cleanup_close_ int fd = memfd_create("kin-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	off_t len = lseek(fd, 0, SEEK_END);
	if (len <= 0 || len % (off_t)sizeof(struct sock_filter) ||
	    len / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -E2BIG;
	struct sock_filter *f = malloc((size_t)len);
	if (!f)
		return -ENOMEM;
	if (pread(fd, f, (size_t)len, 0) != len) {
		free(f);
		return -EIO;
	}
	*ret = (struct sock_fprog){.len = (unsigned short)(len / (off_t)sizeof(*f)), .filter = f};
	return 0;
}

int exec_sc_build(const struct exec_sc_profile *fp, uint64_t caps, struct sock_fprog *ret_prog,
                  struct err *err)
{
	uint32_t def = fp ? scmp_action(fp->def_action, fp->def_errno) : SCMP_ACT_ALLOW;
	scmp_filter_ctx ctx = seccomp_init(def);
	int r;
	if (!ctx)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "seccomp: out of memory");
	/* kin decides no_new_privs itself (the executable's spec says). */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r == 0 && fp) {
		for (size_t i = 0; i < fp->nrules && r == 0; i++) {
			uint32_t a = scmp_action(fp->rules[i].action, fp->rules[i].errno_val);
			if (a != def) /* libseccomp refuses rules that repeat the default */
				r = seccomp_rule_add(ctx, a, fp->rules[i].nr, 0);
		}
	} else if (r == 0) {
		r = add_default_rules(ctx, caps);
	}
	if (r == 0)
		r = export_bpf(ctx, ret_prog);
	seccomp_release(ctx);
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "seccomp: cannot build filter: %s",
		               strerror(-r));
	return 0;
}
