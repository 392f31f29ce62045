/* seccomp: the `default` profile (what container runtimes deny by default),
 * profile files, and building either into a BPF program in the parent, so
 * the child only installs it. Format of a profile file (docs/cells.md "Seccomp profiles"):
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
#include <malloc.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define NO_CAP       (-1)
#define SC_TRIM_FREE (256u << 10) /* free heap bytes worth a malloc_trim */

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

/* "allow" | "errno [E]" | "kill" | "kill-thread" | "trap" | "log" from
 * words w[0..n); returns how many words the action took. */
static int parse_action(char **w, int n, enum exec_sc_action *act, int *eno)
{
	*eno = EPERM;
	if (n < 1)
		return -EINVAL;
	if (strcmp(w[0], "errno") == 0) {
		*act = EXEC_SC_ERRNO;
		if (n == 1 || str_startswith(w[1], "arg"))
			return 1;
		return parse_errno(w[1], eno) < 0 ? -EINVAL : 2;
	}
	if (strcmp(w[0], "allow") == 0)
		*act = EXEC_SC_ALLOW;
	else if (strcmp(w[0], "kill") == 0)
		*act = EXEC_SC_KILL;
	else if (strcmp(w[0], "kill-thread") == 0)
		*act = EXEC_SC_KILL_THREAD;
	else if (strcmp(w[0], "trap") == 0)
		*act = EXEC_SC_TRAP;
	else if (strcmp(w[0], "log") == 0)
		*act = EXEC_SC_LOG;
	else
		return -EINVAL;
	return 1;
}

/* "argN OP VALUE[:VALUE2]", OP one of ne lt le eq ge gt me (masked eq:
 * VALUE is the mask, VALUE2 what the masked argument must be). */
static int parse_arg(const char *idx, const char *op, const char *val, struct exec_sc_arg *a)
{
	static const char *const ops[] = {"ne", "lt", "le", "eq", "ge", "gt", "me"};
	uint64_t i;
	char *end;
	if (!str_startswith(idx, "arg") || str_to_u64(idx + 3, EXEC_SC_ARGS_MAX - 1, &i) < 0)
		return -EINVAL;
	a->index = (unsigned)i;
	a->op = 0;
	for (size_t k = 0; k < ARRAY_SIZE(ops); k++)
		if (strcmp(op, ops[k]) == 0)
			a->op = (int)k + SCMP_CMP_NE;
	if (!a->op)
		return -EINVAL;
	errno = 0;
	a->value = strtoull(val, &end, 0);
	a->value_two = 0;
	if (errno || end == val || val[0] == '-')
		return -EINVAL;
	if (*end == ':') {
		const char *two = end + 1;
		a->value_two = strtoull(two, &end, 0);
		if (errno || end == two || two[0] == '-')
			return -EINVAL;
	}
	return *end || (a->op == SCMP_CMP_MASKED_EQ) != (strchr(val, ':') != NULL) ? -EINVAL : 0;
}

/* The words after NAME: an action, then argument conditions. */
static int parse_rule(char **w, int n, struct exec_sc_rule *r)
{
	int k = parse_action(w, n, &r->action, &r->errno_val);
	if (k < 0)
		return k;
	r->nargs = 0;
	for (; k < n; k += 3) {
		if (k + 3 > n || r->nargs == EXEC_SC_ARGS_MAX ||
		    parse_arg(w[k], w[k + 1], w[k + 2], &r->args[r->nargs++]) < 0)
			return -EINVAL;
	}
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
	bool have_default = false, skip_unknown = false;
	for (char *line = copy, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *w[4 + 3 * EXEC_SC_ARGS_MAX];
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
		if (n == 2 && !strcmp(w[0], "unknown") && !strcmp(w[1], "skip")) {
			skip_unknown = true; /* a profile written for other kernels */
			continue;
		}
		struct exec_sc_rule rule = {0};
		if (parse_rule(w + 1, n - 1, &rule) < 0 || (!strcmp(w[0], "default") && rule.nargs))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "seccomp profile line %u: expected \"%s allow|errno "
			               "[ERRNO]|kill|kill-thread|trap|log [argN OP VALUE]...\"",
			               lineno, w[0]);
		if (strcmp(w[0], "default") == 0) {
			if (have_default)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "seccomp profile line %u: second default", lineno);
			have_default = true;
			p->def_action = rule.action;
			p->def_errno = rule.errno_val;
			continue;
		}
		int nr = seccomp_syscall_resolve_name(w[0]);
		if (nr == __NR_SCMP_ERROR && skip_unknown) {
			p->skipped++;
			continue;
		}
		if (nr == __NR_SCMP_ERROR)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "seccomp profile line %u: unknown syscall \"%s\"", lineno,
			               w[0]);
		for (size_t i = 0; i < p->nrules && !rule.nargs; i++)
			if (p->rules[i].nr == nr && !p->rules[i].nargs)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "seccomp profile line %u: \"%s\" listed twice",
				               lineno, w[0]);
		if (p->nrules == EXEC_SC_RULES_MAX)
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "seccomp profile: more than %d rules", EXEC_SC_RULES_MAX);
		rule.nr = nr;
		p->rules[p->nrules++] = rule;
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
	case EXEC_SC_KILL_THREAD:
		return SCMP_ACT_KILL_THREAD;
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
			const struct exec_sc_rule *rl = &fp->rules[i];
			uint32_t a = scmp_action(rl->action, rl->errno_val);
			struct scmp_arg_cmp cmp[EXEC_SC_ARGS_MAX];
			for (size_t k = 0; k < rl->nargs; k++)
				cmp[k] = (struct scmp_arg_cmp){
				    rl->args[k].index, (enum scmp_compare)rl->args[k].op,
				    rl->args[k].value, rl->args[k].value_two};
			if (a != def) /* libseccomp refuses rules that repeat the default */
				r = seccomp_rule_add_array(ctx, a, rl->nr, (unsigned)rl->nargs,
				                           cmp);
		}
	} else if (r == 0) {
		r = add_default_rules(ctx, caps);
	}
	if (r == 0)
		r = export_bpf(ctx, ret_prog);
	seccomp_release(ctx);
	/* libseccomp's many small allocations leave the heap holed once
	 * freed: give those pages back, or a long-lived kin keeps them. */
	if (mallinfo2().fordblks > SC_TRIM_FREE)
		malloc_trim(0);
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "seccomp: cannot build filter: %s",
		               strerror(-r));
	return 0;
}
