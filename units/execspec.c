/* execspec: one command of a unit as cells runs it — systemd.exec(5)'s
 * settings mapped onto a struct exec_spec: the user and groups from the
 * root's own /etc/passwd and /etc/group, the environment in systemd's
 * order, limits, capabilities (a service has every one unless its unit
 * narrows them: it is not a container), stdio, and the sandboxing kin can
 * honour on the host's root: a mount namespace with tmpfs for PrivateTmp=,
 * read-only binds for ProtectSystem=/ReadOnlyPaths=, masks for
 * ProtectHome=/InaccessiblePaths=, a network namespace for
 * PrivateNetwork=, a seccomp profile for SystemCallFilter=. Everything a
 * spec points to lives in one arena freed with it. */
#include "units/units.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXECSPEC_USERS_MAX (1 << 20) /* /etc/passwd or /etc/group, at most */

/* The arena: every string and vector the spec points to. */
struct arena {
	void **v;
	size_t n;
};

static void *keep(struct arena *a, void *p)
{
	if (!p)
		return NULL;
	void **v = realloc(a->v, (a->n + 1) * sizeof(*v));
	if (!v) {
		free(p);
		return NULL;
	}
	a->v = v;
	v[a->n++] = p;
	return p;
}

static char *kstr(struct arena *a, const char *s)
{
	return s ? keep(a, strdup(s)) : NULL;
}

static char *kfmt(struct arena *a, const char *fmt, ...) _printf_(2, 3);
static char *kfmt(struct arena *a, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : keep(a, s);
}

void unit_exec_spec_free(struct unit_exec_spec *s)
{
	struct arena *a = s->arena;
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	free(a);
	s->arena = NULL;
}

/* ---- users --------------------------------------------------------------------- */

struct user_info {
	uint32_t uid, gid;
	char name[256], home[512], shell[256];
	bool found;
};

static int read_root_file(const char *root, const char *file, char **ret)
{
	char path[512];
	snprintf(path, sizeof(path), "%s%s", root ? root : "", file);
	return file_read_regular(path, EXECSPEC_USERS_MAX, ret, NULL);
}

static int resolve_user(const struct unit_def *d, const char *root, struct user_info *u,
                        struct err *err)
{
	const char *name = d->exec.user;
	_cleanup_free_ char *passwd = NULL;
	memset(u, 0, sizeof(*u));
	if (!name || !*name || !strcmp(name, "root") || !strcmp(name, "0")) {
		str_copy(u->name, sizeof(u->name), "root");
		str_copy(u->home, sizeof(u->home), "/root");
		str_copy(u->shell, sizeof(u->shell), "/bin/sh");
		u->found = true;
		return 0;
	}
	if (strlen(name) > 255)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit \"%s\": User= is too long",
		               d->name.full);
	if (read_root_file(root, "/etc/passwd", &passwd) < 0)
		passwd = NULL;
	uint32_t id;
	bool numeric = str_to_u32(name, &id) == 0;
	if (passwd &&
	    passwd_lookup(passwd, name, numeric, &u->uid, &u->gid, u->name, sizeof(u->name))) {
		/* home and shell: fields 5 and 6 of the line */
		for (const char *l = passwd; l && *l;
		     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			char f0[256];
			if (passwd_field(l, 0, f0, sizeof(f0)) && !strcmp(f0, u->name)) {
				passwd_field(l, 5, u->home, sizeof(u->home));
				passwd_field(l, 6, u->shell, sizeof(u->shell));
				break;
			}
		}
		u->found = true;
		return 0;
	}
	if (!numeric)
		return err_set(err, -ENOENT, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": User=%s: no such user in /etc/passwd", d->name.full,
		               name);
	u->uid = u->gid = id; /* a number the root does not list */
	snprintf(u->name, sizeof(u->name), "%u", id);
	str_copy(u->home, sizeof(u->home), "/");
	return 0;
}

static int group_id(const char *root, const char *group_text, const char *name, uint32_t *ret)
{
	(void)root;
	if (str_to_u32(name, ret) == 0)
		return 0;
	return group_text && passwd_lookup(group_text, name, false, ret, NULL, NULL, 0) ? 0
	                                                                                : -ENOENT;
}

int unit_owner_lookup(const char *root, const char *user, const char *group, uid_t *ret_uid,
                      gid_t *ret_gid)
{
	_cleanup_free_ char *text = NULL;
	uint32_t id;
	*ret_uid = (uid_t)-1;
	*ret_gid = (gid_t)-1;
	if (user && *user) {
		if (str_to_u32(user, &id) < 0 &&
		    (read_root_file(root, "/etc/passwd", &text) < 0 ||
		     !passwd_lookup(text, user, false, &id, NULL, NULL, 0)))
			return -ENOENT;
		*ret_uid = id;
	}
	free(text);
	text = NULL;
	if (group && *group) {
		if (read_root_file(root, "/etc/group", &text) < 0)
			text = NULL;
		if (group_id(root, text, group, &id) < 0)
			return -ENOENT;
		*ret_gid = id;
	}
	return 0;
}

static int set_ids(const struct unit_def *d, const struct unit_cmd *cmd, const char *root,
                   const struct user_info *u, struct exec_spec *s, struct err *err)
{
	_cleanup_free_ char *group = NULL;
	if (cmd->flags & (UNIT_CMD_FULL_PRIVILEGES | UNIT_CMD_NO_SETUID))
		return 0; /* '+', '!': as root */
	if (read_root_file(root, "/etc/group", &group) < 0)
		group = NULL;
	s->uid = u->uid;
	s->gid = u->gid;
	if (d->exec.group && *d->exec.group && group_id(root, group, d->exec.group, &s->gid) < 0)
		return err_set(err, -ENOENT, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": Group=%s: no such group in /etc/group", d->name.full,
		               d->exec.group);
	const struct unit_strv *sg = &d->exec.supplementary_groups;
	for (size_t i = 0; i < sg->n && s->ngroups < EXEC_GROUPS_MAX; i++)
		if (group_id(root, group, sg->v[i], &s->groups[s->ngroups]) == 0)
			s->ngroups++;
		else
			return err_set(err, -ENOENT, ERR_FAILED_PRECONDITION,
			               "unit \"%s\": SupplementaryGroups=%s: no such group",
			               d->name.full, sg->v[i]);
	if (d->exec.user && group) /* what initgroups would give the user */
		passwd_supplementary(group, u->name, s->gid, s->groups + s->ngroups,
		                     EXEC_GROUPS_MAX - s->ngroups, &s->ngroups);
	return 0;
}

/* ---- environment ----------------------------------------------------------------- */

struct envb {
	char **v;
	size_t n;
	struct arena *a;
};

/* Sets (replacing an earlier one of the name). */
static int env_set(struct envb *e, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return 0;
	size_t len = (size_t)(eq - kv) + 1;
	char *copy = kstr(e->a, kv);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], kv, len)) {
			e->v[i] = copy;
			return 0;
		}
	if (e->n >= EXEC_ENV_MAX)
		return -E2BIG;
	char **v = realloc(e->v, (e->n + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->v = v;
	v[e->n++] = copy;
	v[e->n] = NULL;
	return 0;
}

static void env_unset(struct envb *e, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < e->n;)
		if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=') {
			memmove(e->v + i, e->v + i + 1, (e->n - i) * sizeof(char *));
			e->n--;
		} else {
			i++;
		}
}

static int env_files(const struct unit_def *d, const char *root, struct envb *e, struct err *err)
{
	const struct unit_strv *files = &d->exec.environment_files;
	for (size_t i = 0; i < files->n; i++) {
		const char *f = files->v[i];
		bool optional = *f == '-';
		char path[512];
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		snprintf(path, sizeof(path), "%s%s", root ? root : "", optional ? f + 1 : f);
		int r = file_read_regular(path, UNIT_ENVFILE_MAX, &text, &len);
		if (r < 0) {
			if (optional)
				continue;
			return err_set(err, r, ERR_FAILED_PRECONDITION,
			               "unit \"%s\": EnvironmentFile=%s: %s", d->name.full, f,
			               strerror(-r));
		}
		struct unit_strv l = {0};
		size_t bad = 0;
		r = unit_envfile_parse(text, len, &l, &bad, err);
		for (size_t k = 0; r >= 0 && k < l.n; k++)
			r = env_set(e, l.v[k]);
		unit_strv_clear(&l);
		if (r < 0)
			return err_set(err, r, ERR_INVALID_ARGUMENT,
			               "unit \"%s\": EnvironmentFile=%s: %s", d->name.full, f,
			               strerror(-r));
	}
	return 0;
}

static const char *const dir_bases[UNIT_DIR_KIND_COUNT] = {"/run", "/var/lib", "/var/cache",
                                                           "/var/log", "/etc"};
static const char *const dir_vars[UNIT_DIR_KIND_COUNT] = {"RUNTIME_DIRECTORY", "STATE_DIRECTORY",
                                                          "CACHE_DIRECTORY", "LOGS_DIRECTORY",
                                                          "CONFIGURATION_DIRECTORY"};

static int build_env(const struct unit_def *d, const struct unit_run_ctx *ctx,
                     const struct user_info *u, struct envb *e, struct err *err)
{
	const struct unit_exec *x = &d->exec;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ctx->nmanager_env; i++)
		r = env_set(e, ctx->manager_env[i]);
	if (d->exec.user && r >= 0) {
		const char *kv[] = {kfmt(e->a, "USER=%s", u->name),
		                    kfmt(e->a, "LOGNAME=%s", u->name),
		                    kfmt(e->a, "HOME=%s", u->home),
		                    kfmt(e->a, "SHELL=%s", u->shell[0] ? u->shell : "/bin/sh")};
		for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(kv); i++)
			r = kv[i] ? env_set(e, kv[i]) : -ENOMEM;
	}
	for (size_t i = 0; r >= 0 && i < x->environment.n; i++)
		r = env_set(e, x->environment.v[i]);
	if (r >= 0 && (r = env_files(d, ctx->root, e, err)) < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < x->pass_environment.n; i++)
		for (size_t k = 0; k < ctx->nmanager_env; k++) {
			size_t len = strlen(x->pass_environment.v[i]);
			if (!strncmp(ctx->manager_env[k], x->pass_environment.v[i], len) &&
			    ctx->manager_env[k][len] == '=')
				r = env_set(e, ctx->manager_env[k]);
		}
	for (size_t i = 0; i < x->unset_environment.n; i++)
		env_unset(e, x->unset_environment.v[i]);
	char *extra[8 + UNIT_DIR_KIND_COUNT] = {0};
	size_t n = 0;
	if (ctx->main_pid > 0)
		extra[n++] = kfmt(e->a, "MAINPID=%d", (int)ctx->main_pid);
	if (ctx->notify_socket)
		extra[n++] = kfmt(e->a, "NOTIFY_SOCKET=%s", ctx->notify_socket);
	if (ctx->nfds && ctx->fd_names && !ctx->control)
		extra[n++] = kfmt(e->a, "LISTEN_FDNAMES=%s", ctx->fd_names);
	if (ctx->invocation_id && *ctx->invocation_id)
		extra[n++] = kfmt(e->a, "INVOCATION_ID=%s", ctx->invocation_id);
	uint64_t wd = d->service.watchdog_us;
	if (!ctx->control && wd && wd != UNIT_INFINITY) /* sd_watchdog_enabled() reads it */
		extra[n++] = kfmt(e->a, "WATCHDOG_USEC=%llu", (unsigned long long)wd);
	for (int k = 0; k < UNIT_DIR_KIND_COUNT; k++) {
		const struct unit_strv *l = &x->dirs[k];
		if (!l->n)
			continue;
		size_t len = 0;
		for (size_t i = 0; i < l->n; i++)
			len += strlen(dir_bases[k]) + strlen(l->v[i]) + 2;
		char *v = keep(e->a, calloc(1, len + strlen(dir_vars[k]) + 2));
		if (!v)
			return -ENOMEM;
		size_t o = (size_t)sprintf(v, "%s=", dir_vars[k]);
		for (size_t i = 0; i < l->n; i++)
			o += (size_t)sprintf(v + o, "%s%s/%s", i ? ":" : "", dir_bases[k], l->v[i]);
		extra[n++] = v;
	}
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = extra[i] ? env_set(e, extra[i]) : -ENOMEM;
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "unit \"%s\": environment: %s",
		               d->name.full, r == -E2BIG ? "too many variables" : strerror(-r));
	return 0;
}

/* ---- sandboxing ------------------------------------------------------------------- */

struct pathv {
	const char **v;
	size_t n;
};

static int pv_add(struct arena *a, struct pathv *p, const char *path)
{
	if (path[0] != '/' || strstr(path, ".."))
		return -EINVAL;
	const char **v = realloc(p->v, (p->n + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->v = v;
	v[p->n] = kstr(a, path);
	if (!v[p->n])
		return -ENOMEM;
	v[++p->n] = NULL;
	return 0;
}

/* '-' (missing is fine: cells skips missing paths anyway) and '+' taken off. */
static const char *plain_path(const char *p)
{
	while (*p == '-' || *p == '+')
		p++;
	return p;
}

static bool is_writable(const struct unit_def *d, const char *path)
{
	const struct unit_strv *w = &d->exec.read_write_paths;
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(plain_path(w->v[i]), path))
			return true;
	return false;
}

/* PrivateTmp='s /tmp and /var/tmp (the run's directories bound, else a
 * tmpfs each), then ProtectProc='s own /proc instance. */
static int sandbox_mounts(const struct unit_def *d, const struct unit_run_ctx *ctx, struct arena *a,
                          struct exec_spec *s)
{
	const struct unit_exec *x = &d->exec;
	if (!x->private_tmp && !x->protect_proc_invisible)
		return 0;
	struct exec_mount *m = keep(a, calloc(3, sizeof(*m)));
	if (!m)
		return -ENOMEM;
	static const char *const tmps[] = {"/tmp", "/var/tmp"};
	for (size_t i = 0; x->private_tmp && i < ARRAY_SIZE(tmps); i++) {
		struct exec_mount *t = &m[s->nmounts++];
		t->target = tmps[i];
		if (ctx->private_tmp && ctx->private_tmp[0]) {
			t->source = kfmt(a, "%s%s/%s/tmp", ctx->root ? ctx->root : "", tmps[i],
			                 ctx->private_tmp);
			t->flags = MS_BIND | MS_REC;
			if (!t->source)
				return -ENOMEM;
		} else {
			*t = (struct exec_mount){.source = "tmpfs",
			                         .target = tmps[i],
			                         .type = "tmpfs",
			                         .data = "mode=1777",
			                         .flags = MS_NOSUID | MS_NODEV};
		}
	}
	if (x->protect_proc_invisible)
		m[s->nmounts++] = (struct exec_mount){.source = "proc",
		                                      .target = "/proc",
		                                      .type = "proc",
		                                      .data = "hidepid=invisible",
		                                      .flags = MS_NOSUID | MS_NODEV | MS_NOEXEC};
	s->mounts = m;
	return 0;
}

static int sandbox(const struct unit_def *d, const struct unit_run_ctx *ctx, struct arena *a,
                   struct exec_spec *s, struct err *err)
{
	const struct unit_exec *x = &d->exec;
	struct pathv ro = {0}, masked = {0}, rw = {0};
	int r = sandbox_mounts(d, ctx, a, s);
	if (r < 0)
		return err_set(err, r, ERR_RESOURCE_EXHAUSTED, "out of memory");
	if (x->protect_system != UNIT_PROTECT_SYSTEM_NO) {
		static const char *const yes[] = {"/usr", "/boot", "/efi"};
		for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(yes); i++)
			if (!is_writable(d, yes[i]))
				r = pv_add(a, &ro, yes[i]);
		if (r >= 0 && x->protect_system >= UNIT_PROTECT_SYSTEM_FULL &&
		    !is_writable(d, "/etc"))
			r = pv_add(a, &ro, "/etc");
		/* strict: the whole root read-only but the API filesystems and
		 * ReadWritePaths= — kin binds the top-level directories */
		static const char *const strict[] = {"/bin", "/lib", "/lib64", "/opt",  "/sbin",
		                                     "/srv", "/var", "/home",  "/root", "/mnt"};
		for (size_t i = 0; r >= 0 && x->protect_system == UNIT_PROTECT_SYSTEM_STRICT &&
		                   i < ARRAY_SIZE(strict);
		     i++)
			if (!is_writable(d, strict[i]))
				r = pv_add(a, &ro, strict[i]);
	}
	if (r >= 0 && x->protect_home != UNIT_PROTECT_HOME_NO) {
		static const char *const homes[] = {"/home", "/root", "/run/user"};
		for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(homes); i++)
			r = pv_add(a,
			           x->protect_home == UNIT_PROTECT_HOME_READ_ONLY ? &ro : &masked,
			           homes[i]);
	}
	for (size_t i = 0; r >= 0 && i < x->read_only_paths.n; i++)
		r = pv_add(a, &ro, plain_path(x->read_only_paths.v[i]));
	for (size_t i = 0; r >= 0 && i < x->inaccessible_paths.n; i++)
		r = pv_add(a, &masked, plain_path(x->inaccessible_paths.v[i]));
	/* ReadWritePaths= below what was made read-only, made writable again;
	 * the runtime/state/... directories are writable as systemd makes them */
	for (size_t i = 0; r >= 0 && ro.n && i < x->read_write_paths.n; i++)
		r = pv_add(a, &rw, plain_path(x->read_write_paths.v[i]));
	for (int k = 0; r >= 0 && ro.n && k < UNIT_DIR_KIND_COUNT; k++)
		for (size_t i = 0; r >= 0 && i < x->dirs[k].n; i++) {
			char *p = kfmt(a, "%s/%s", dir_bases[k], x->dirs[k].v[i]);
			r = p ? pv_add(a, &rw, p) : -ENOMEM;
		}
	keep(a, ro.v);
	keep(a, masked.v);
	keep(a, rw.v);
	s->writable_paths = rw.n ? rw.v : NULL;
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT,
		               "unit \"%s\": a sandbox path is not absolute or has ..",
		               d->name.full);
	s->readonly_paths = ro.n ? ro.v : NULL;
	s->masked_paths = masked.n ? masked.v : NULL;
	if (s->nmounts || ro.n || masked.n)
		s->namespaces |= EXEC_NS_MNT;
	if (x->private_network)
		s->namespaces |= EXEC_NS_NET;
	return 0;
}

/* SystemCallFilter= and RestrictAddressFamilies= as a cells profile. */
static int syscall_profile(const struct unit_def *d, struct arena *a, struct exec_spec *s,
                           struct err *err)
{
	char *text = NULL;
	int r = unit_syscall_profile(d, &text);
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "unit \"%s\": SystemCallFilter=: %s",
		               d->name.full, strerror(-r));
	if (!text)
		return 0;
	if (!keep(a, text))
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	s->seccomp = EXEC_SECCOMP_TEXT;
	s->seccomp_file = text;
	return 0;
}

/* Every capability kin's own bounding set has (a kin in a container has
 * fewer than the kernel knows; asking for more fails). */
static uint64_t all_caps(void)
{
	char *text = NULL;
	uint64_t caps = 0;
	if (file_read_small("/proc/self/status", 8192, &text, NULL) < 0)
		return EXEC_CAPS_DEFAULT;
	const char *l = strstr(text, "\nCapBnd:");
	if (!l || sscanf(l + 9, "%" SCNx64, &caps) != 1)
		caps = EXEC_CAPS_DEFAULT;
	free(text);
	return caps;
}

static const char *stdio_path(enum unit_stdio k, const char *path, const char *tty)
{
	switch (k) {
	case UNIT_STDIO_NULL:
		return "/dev/null";
	case UNIT_STDIO_TTY:
		return tty ? tty : "/dev/console";
	case UNIT_STDIO_FILE:
	case UNIT_STDIO_APPEND:
	case UNIT_STDIO_TRUNCATE:
		return path;
	default:
		return NULL;
	}
}

int unit_exec_build(const struct unit_def *d, const struct unit_cmd *cmd,
                    const struct unit_run_ctx *ctx, struct unit_exec_spec *ret, struct err *err)
{
	struct arena *a = calloc(1, sizeof(*a));
	struct user_info u;
	struct envb e = {0};
	if (!a)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	*ret = (struct unit_exec_spec){.arena = a};
	struct exec_spec *s = &ret->spec;
	exec_spec_init(s);
	e.a = a;
	bool full = cmd->flags & UNIT_CMD_FULL_PRIVILEGES;
	int r = resolve_user(d, ctx->root, &u, err);
	if (r >= 0)
		r = set_ids(d, cmd, ctx->root, &u, s, err);
	if (r >= 0)
		r = build_env(d, ctx, &u, &e, err);
	keep(a, e.v);
	char **argv = NULL;
	if (r >= 0)
		r = unit_cmd_expand(cmd, e.v, e.n, &argv, err);
	if (r < 0) {
		unit_exec_spec_free(ret);
		return r;
	}
	for (char **p = argv; *p; p++)
		keep(a, *p);
	keep(a, argv);
	s->argv = argv;
	if (cmd->flags & UNIT_CMD_ARGV0)
		s->path = kstr(a, cmd->path); /* '@': argv[0] is the next word */
	s->env = e.v;
	const struct unit_exec *x = &d->exec;
	const char *wd = x->working_directory;
	if (wd) {
		bool optional = *wd == '-';
		const char *dir = optional ? wd + 1 : wd;
		struct stat st;
		if (!strcmp(dir, "~"))
			dir = u.home;
		if (optional && stat(dir, &st) < 0)
			dir = "/";
		s->cwd = kstr(a, dir);
	}
	s->umask = x->umask_set ? x->umask : 022;
	for (size_t i = 0; i < x->nrlimits && i < EXEC_RLIMITS_MAX; i++)
		s->rlimits[s->nrlimits++] = (struct exec_rlimit){
		    x->rlimits[i].resource,
		    x->rlimits[i].soft == UNIT_INFINITY ? RLIM_INFINITY : x->rlimits[i].soft,
		    x->rlimits[i].hard == UNIT_INFINITY ? RLIM_INFINITY : x->rlimits[i].hard};
	s->caps = all_caps();
	if (x->caps_bounding_set && !full)
		s->caps &= x->caps_bounding;
	s->ambient = (cmd->flags & UNIT_CMD_AMBIENT) || full ? 0 : x->caps_ambient & s->caps;
	s->no_new_privs = x->no_new_privileges && !full;
	s->seccomp = EXEC_SECCOMP_NONE;
	s->nice_set = x->nice_set;
	s->nice = x->nice;
	s->oom_score_adj_set = x->oom_score_adjust_set;
	s->oom_score_adj = x->oom_score_adjust;
	s->restart = EXEC_RESTART_NO;
	s->stdio_paths[0] = stdio_path(x->std_input, x->std_input_path, x->tty_path);
	s->stdio_paths[1] = stdio_path(x->std_output, x->std_output_path, x->tty_path);
	s->stdio_paths[2] = stdio_path(x->std_error, x->std_error_path, x->tty_path);
	if (x->std_error == UNIT_STDIO_DEFAULT && x->std_output != UNIT_STDIO_DEFAULT)
		s->stdio_paths[2] = s->stdio_paths[1]; /* StandardError= inherits StandardOutput= */
	if (ctx->nfds && !ctx->control) {
		s->pass_fds = ctx->fds;
		s->npass_fds = ctx->nfds;
		s->listen_env = true;
	}
	if (!full &&
	    ((r = sandbox(d, ctx, a, s, err)) < 0 || (r = syscall_profile(d, a, s, err)) < 0)) {
		unit_exec_spec_free(ret);
		return r;
	}
	/* A filter loaded without CAP_SYS_ADMIN needs no_new_privs: systemd
	 * implies NoNewPrivileges=yes then too. */
	if (s->seccomp != EXEC_SECCOMP_NONE && !(s->caps >> CAP_SYS_ADMIN & 1))
		s->no_new_privs = true;
	return 0;
}

/* ---- directories ------------------------------------------------------------------- */

int unit_exec_dirs_make(const struct unit_def *d, const struct unit_run_ctx *ctx, struct err *err)
{
	struct user_info u;
	uint32_t gid;
	int r = resolve_user(d, ctx->root, &u, err);
	if (r < 0)
		return r;
	gid = u.gid;
	for (int k = 0; k < UNIT_DIR_KIND_COUNT; k++)
		for (size_t i = 0; i < d->exec.dirs[k].n; i++) {
			const char *name = d->exec.dirs[k].v[i];
			char path[1024];
			if (name[0] == '/' || strstr(name, ".."))
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "unit \"%s\": directory \"%s\" is not relative",
				               d->name.full, name);
			snprintf(path, sizeof(path), "%s%s/%s", ctx->root ? ctx->root : "",
			         dir_bases[k], name);
			mode_t mode = d->exec.dir_modes[k];
			if ((r = mkdir_p(path, mode)) < 0 || chmod(path, mode) < 0 ||
			    lchown(path, u.uid, gid) < 0)
				return err_set(err, r < 0 ? r : -errno, ERR_FAILED_PRECONDITION,
				               "unit \"%s\": %s: %s", d->name.full, path,
				               strerror(r < 0 ? -r : errno));
		}
	return 0;
}

int unit_delegate_chown(const struct unit_def *d, const char *root, const char *cgroup_dir,
                        struct err *err)
{
	struct user_info u;
	if (!d->res.delegate)
		return 0;
	int r = resolve_user(d, root, &u, err);
	if (r < 0 || u.uid == 0)
		return r < 0 ? r : 0;
	static const char *const files[] = {"", "/cgroup.procs", "/cgroup.subtree_control",
	                                    "/cgroup.threads"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s%s", cgroup_dir, files[i]);
		if (chown(path, u.uid, u.gid) < 0 && errno != ENOENT)
			return err_set(err, -errno, ERR_INTERNAL,
			               "unit \"%s\": Delegate=: chown %s to %s: %m", d->name.full,
			               path, u.name);
	}
	return 0;
}

int unit_private_tmp_make(const struct unit_def *d, const char *root, char *ret, size_t size,
                          struct err *err)
{
	char top[1024], sub[1100];
	const char *r = root ? root : "";
	ret[0] = '\0';
	if (!d->exec.private_tmp)
		return 0;
	snprintf(top, sizeof(top), "%s/tmp/kin-private-%s-XXXXXX", r, d->name.full);
	if (!mkdtemp(top))
		return err_set(err, -errno, ERR_INTERNAL, "unit \"%s\": PrivateTmp=: %s: %m",
		               d->name.full, top);
	const char *name = strrchr(top, '/') + 1;
	snprintf(sub, sizeof(sub), "%s/tmp", top);
	int e = mkdir(sub, 0700) < 0 || chmod(sub, 01777) < 0 ? errno : 0;
	if (!e) {
		snprintf(sub, sizeof(sub), "%s/var/tmp/%s", r, name);
		e = mkdir(sub, 0700) < 0 ? errno : 0;
		snprintf(sub, sizeof(sub), "%s/var/tmp/%s/tmp", r, name);
		if (!e)
			e = mkdir(sub, 0700) < 0 || chmod(sub, 01777) < 0 ? errno : 0;
	}
	if (e) {
		err_set(err, -e, ERR_INTERNAL, "unit \"%s\": PrivateTmp=: %s: %s", d->name.full,
		        sub, strerror(e));
		unit_private_tmp_remove(root, name);
		return -e;
	}
	str_copy(ret, size, name);
	return 0;
}

void unit_private_tmp_remove(const char *root, const char *name)
{
	char path[1024];
	if (!name || !name[0] || strchr(name, '/'))
		return;
	snprintf(path, sizeof(path), "%s/tmp/%s", root ? root : "", name);
	dir_remove_tree(AT_FDCWD, path, 0);
	snprintf(path, sizeof(path), "%s/var/tmp/%s", root ? root : "", name);
	dir_remove_tree(AT_FDCWD, path, 0);
}

void unit_exec_dirs_remove(const struct unit_def *d, const struct unit_run_ctx *ctx)
{
	if (d->exec.runtime_directory_preserve)
		return;
	const struct unit_strv *l = &d->exec.dirs[UNIT_DIR_RUNTIME];
	for (size_t i = 0; i < l->n; i++) {
		char path[1024];
		if (l->v[i][0] == '/' || strstr(l->v[i], ".."))
			continue;
		snprintf(path, sizeof(path), "%s/run/%s", ctx->root ? ctx->root : "", l->v[i]);
		dir_remove_tree(AT_FDCWD, path, 0);
	}
}
