/* config_exec: the execution settings services and sockets share
 * (systemd.exec(5)) — identity, directories, limits, environment, stdio,
 * capabilities and the sandboxing kin honours — into struct unit_exec. */
#include "units/config-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

void cfg_exec_free(struct unit_exec *e);

void cfg_exec_free(struct unit_exec *e)
{
	free(e->user);
	free(e->group);
	unit_strv_clear(&e->supplementary_groups);
	free(e->working_directory);
	free(e->root_directory);
	unit_strv_clear(&e->environment);
	unit_strv_clear(&e->environment_files);
	unit_strv_clear(&e->pass_environment);
	unit_strv_clear(&e->unset_environment);
	free(e->std_output_path);
	free(e->std_error_path);
	free(e->std_input_path);
	free(e->tty_path);
	free(e->syslog_identifier);
	for (int k = 0; k < UNIT_DIR_KIND_COUNT; k++)
		unit_strv_clear(&e->dirs[k]);
	unit_strv_clear(&e->read_only_paths);
	unit_strv_clear(&e->read_write_paths);
	unit_strv_clear(&e->inaccessible_paths);
	unit_strv_clear(&e->syscall_filter);
	unit_strv_clear(&e->address_families);
}

/* A signed decimal in [min, max]. */
static int int_parse(const char *s, long min, long max, int *ret)
{
	char *end = NULL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || !end || *end || errno || v < min || v > max)
		return -EINVAL;
	*ret = (int)v;
	return 0;
}

static int cfg_umask(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	char *end = NULL;
	unsigned long m = *v >= '0' && *v <= '7' ? strtoul(v, &end, 8) : 01000;
	if (!end || *end || m > 0777)
		return cfg_bad(c, "\"%.60s\" is not an octal umask", v);
	e->umask = (mode_t)m;
	e->umask_set = true;
	return 0;
}

static int cfg_nice(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	if (int_parse(v, -20, 19, &e->nice) < 0)
		return cfg_bad(c, "\"%.60s\" is not a nice level (-20..19)", v);
	e->nice_set = true;
	return 0;
}

static int cfg_oom(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	if (int_parse(v, -1000, 1000, &e->oom_score_adjust) < 0)
		return cfg_bad(c, "\"%.60s\" is not an OOM score adjustment (-1000..1000)", v);
	e->oom_score_adjust_set = true;
	return 0;
}

/* ---- Limit* ---------------------------------------------------------------- */

static bool rlimit_is_size(int res)
{
	return res == RLIMIT_FSIZE || res == RLIMIT_DATA || res == RLIMIT_STACK ||
	       res == RLIMIT_CORE || res == RLIMIT_RSS || res == RLIMIT_AS ||
	       res == RLIMIT_MEMLOCK || res == RLIMIT_MSGQUEUE;
}

/* One side of a limit in the resource's own unit. */
static int rlimit_value(int res, const char *s, uint64_t *ret)
{
	if (strcmp(s, "infinity") == 0)
		return *ret = UNIT_INFINITY, 0;
	if (rlimit_is_size(res))
		return str_to_size(s, 1, UNIT_INFINITY - 1, ret);
	if (res == RLIMIT_CPU) { /* seconds, time units allowed */
		uint64_t us;
		int r = unit_timespan_parse(s, 1000000, &us);
		return r < 0 ? r : (*ret = (us + 999999) / 1000000, 0);
	}
	if (res == RLIMIT_RTTIME) /* µs */
		return unit_timespan_parse(s, 1, ret);
	if (res == RLIMIT_NICE && (*s == '+' || *s == '-')) { /* a nice level: 20 - nice */
		int nice;
		if (int_parse(s, -20, 19, &nice) < 0)
			return -EINVAL;
		return *ret = (uint64_t)(20 - nice), 0;
	}
	return str_to_u64(s, UNIT_INFINITY - 1, ret);
}

/* "65536", "1024:524288", "infinity", "8M"; an empty value drops it. */
static int cfg_rlimit(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	int res = c->dir->arg;
	size_t i = 0;
	while (i < e->nrlimits && e->rlimits[i].resource != res)
		i++;
	if (!*v) {
		if (i < e->nrlimits)
			e->rlimits[i] = e->rlimits[--e->nrlimits];
		return 0;
	}
	char buf[64];
	if (str_copy(buf, sizeof(buf), v) < 0)
		return cfg_bad(c, "\"%.60s\" is not a limit", v);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	struct unit_rlimit rl = {.resource = res};
	if (rlimit_value(res, buf, &rl.soft) < 0 ||
	    rlimit_value(res, colon ? colon + 1 : buf, &rl.hard) < 0)
		return cfg_bad(c, "\"%.60s\" is not a limit", v);
	if (rl.soft > rl.hard)
		return cfg_bad(c, "the soft limit is above the hard one");
	if (i == e->nrlimits && e->nrlimits >= UNIT_RLIMITS_MAX)
		return -E2BIG;
	e->rlimits[i] = rl;
	if (i == e->nrlimits)
		e->nrlimits++;
	return 0;
}

/* ---- environment ---------------------------------------------------------------- */

/* Environment=: parsed whole into a copy first, so a bad word drops the
 * assignment, not what came before it. */
static int cfg_environment(struct cfg *c, const char *v)
{
	struct unit_strv *l = &c->d->exec.environment;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	struct unit_strv add = {0};
	struct err e = {0};
	int r = unit_env_assign_parse(v, &add, &e);
	if (r >= 0 && l->n + add.n > UNIT_ENV_MAX)
		r = -E2BIG;
	for (size_t i = 0; r >= 0 && i < add.n; i++)
		r = unit_strv_push(l, add.v[i]);
	unit_strv_clear(&add);
	if (r == -EINVAL)
		return cfg_bad(c, "%s", e.msg[0] ? e.msg : "not K=V words");
	return r;
}

static int cfg_envfile(struct cfg *c, const char *v)
{
	const char *p = *v == '-' ? v + 1 : v;
	if (*v && *p != '/')
		return cfg_bad(c, "\"%.60s\" is not an absolute path", v);
	return cfg_strv_one(c, v);
}

/* ---- stdio ------------------------------------------------------------------------ */

/* arg: 0 input, 1 output, 2 error. */
static int cfg_stdio(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	int which = c->dir->arg;
	enum unit_stdio *f = which == 0   ? &e->std_input
	                     : which == 1 ? &e->std_output
	                                  : &e->std_error;
	char **path = which == 0   ? &e->std_input_path
	              : which == 1 ? &e->std_output_path
	                           : &e->std_error_path;
	static const struct {
		const char *prefix;
		enum unit_stdio kind;
		bool output; /* valid for output and error only */
	} files[] = {{"file:", UNIT_STDIO_FILE, false},
	             {"append:", UNIT_STDIO_APPEND, true},
	             {"truncate:", UNIT_STDIO_TRUNCATE, true}};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		if (!str_startswith(v, files[i].prefix))
			continue;
		const char *p = v + strlen(files[i].prefix);
		if ((files[i].output && which == 0) || *p != '/')
			return cfg_bad(c, "\"%.60s\" is not a file kin can use here", v);
		char *s = strdup(p);
		if (!s)
			return -ENOMEM;
		free(*path);
		*path = s;
		*f = files[i].kind;
		return 0;
	}
	enum unit_stdio kind;
	if (strcmp(v, "null") == 0)
		kind = UNIT_STDIO_NULL;
	else if (strcmp(v, "tty") == 0 || (which == 0 && str_startswith(v, "tty-")))
		kind = UNIT_STDIO_TTY;
	else if (strcmp(v, "socket") == 0)
		kind = UNIT_STDIO_SOCKET;
	else if (which > 0 && (strcmp(v, "inherit") == 0 || strcmp(v, "journal") == 0 ||
	                       strcmp(v, "syslog") == 0 || strcmp(v, "kmsg") == 0 ||
	                       strcmp(v, "journal+console") == 0 ||
	                       strcmp(v, "syslog+console") == 0 || strcmp(v, "kmsg+console") == 0))
		kind = UNIT_STDIO_DEFAULT; /* kin's ring stands for the journal */
	else
		return cfg_bad(c, "\"%.60s\" is not a stdio kin knows", v);
	*f = kind;
	return 0;
}

/* ---- directories ------------------------------------------------------------------- */

/* RuntimeDirectory= & co.: relative paths without "..", a ":DEST" link
 * name kept as written. */
static int cfg_dirs(struct cfg *c, const char *v)
{
	struct unit_strv *l = &c->d->exec.dirs[c->dir->arg];
	char w[PATH_MAX];
	int r;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	while ((r = cfg_word(&v, w, sizeof(w))) != 0) {
		if (r < 0 || w[0] == '/' || strstr(w, "..") || w[0] == ':') {
			cfg_word_bad(c, "\"%.60s\" is not a relative directory",
			             r < 0 ? "(too long)" : w);
			continue;
		}
		if (!unit_strv_contains(l, w) && (r = unit_strv_push(l, w)) < 0)
			return r;
	}
	return 0;
}

static int cfg_dir_preserve(struct cfg *c, const char *v)
{
	bool b;
	/* "restart" keeps them over restarts only: kin keeps them then too,
	 * and removes them at the stop. */
	if (strcmp(v, "restart") == 0)
		b = false;
	else if (unit_bool_parse(v, &b) < 0)
		return cfg_bad(c, "\"%.60s\" is not yes, no or restart", v);
	c->d->exec.runtime_directory_preserve = b;
	return 0;
}

static int cfg_workdir(struct cfg *c, const char *v)
{
	const char *p = *v == '-' ? v + 1 : v;
	if (*v && *p != '/' && strcmp(p, "~") != 0)
		return cfg_bad(c, "\"%.60s\" is not an absolute path or ~", v);
	return cfg_string(c, v);
}

/* ---- capabilities ------------------------------------------------------------------- */

/* Space-separated CAP_ names, '~' inverting; lines merge (OR, or AND NOT
 * for '~' ones), an empty value is the empty set (systemd.exec(5)). arg 0:
 * the bounding set, 1: the ambient set. An unknown name is reported and
 * skipped, so a capability newer than libcap does not drop the line. */
static int cfg_caps(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	bool bounding = c->dir->arg == 0;
	uint64_t *set = bounding ? &e->caps_bounding : &e->caps_ambient, all, mask = 0;
	(void)exec_caps_parse("all", &all, NULL);
	bool empty = !*v, invert = *v == '~';
	if (invert)
		v++;
	char w[64];
	int r;
	while ((r = cfg_word(&v, w, sizeof(w))) != 0) {
		uint64_t one;
		if (r < 0 || exec_caps_parse(w, &one, NULL) < 0 || strcasecmp(w, "all") == 0 ||
		    strcasecmp(w, "none") == 0) {
			cfg_word_bad(c, "\"%.60s\" is not a capability", r < 0 ? "(too long)" : w);
			continue;
		}
		mask |= one;
	}
	if (bounding && !e->caps_bounding_set) {
		*set = invert ? all : 0;
		e->caps_bounding_set = true;
	}
	/* an ambient set has no "given" flag: an empty one is where "~" starts
	 * from all, as a first assignment would */
	if (!bounding && invert && *set == 0)
		*set = all;
	if (empty)
		*set = 0;
	else if (invert)
		*set &= ~mask;
	else
		*set |= mask;
	return 0;
}

/* ---- sandboxing ---------------------------------------------------------------------- */

static int cfg_protect_proc(struct cfg *c, const char *v)
{
	/* noaccess is stricter than invisible: invisible is the closest kin has */
	if (strcmp(v, "invisible") == 0 || strcmp(v, "noaccess") == 0)
		c->d->exec.protect_proc_invisible = true;
	else if (strcmp(v, "default") == 0 || strcmp(v, "ptraceable") == 0)
		c->d->exec.protect_proc_invisible = false;
	else
		return cfg_bad(c, "\"%.60s\" is not a ProtectProc= value", v);
	return 0;
}

static int cfg_protect_system(struct cfg *c, const char *v)
{
	bool b;
	enum unit_protect_system p;
	if (strcmp(v, "full") == 0)
		p = UNIT_PROTECT_SYSTEM_FULL;
	else if (strcmp(v, "strict") == 0)
		p = UNIT_PROTECT_SYSTEM_STRICT;
	else if (unit_bool_parse(v, &b) == 0)
		p = b ? UNIT_PROTECT_SYSTEM_YES : UNIT_PROTECT_SYSTEM_NO;
	else
		return cfg_bad(c, "\"%.60s\" is not yes, no, full or strict", v);
	c->d->exec.protect_system = p;
	return 0;
}

static int cfg_protect_home(struct cfg *c, const char *v)
{
	bool b;
	enum unit_protect_home p;
	if (strcmp(v, "read-only") == 0)
		p = UNIT_PROTECT_HOME_READ_ONLY;
	else if (strcmp(v, "tmpfs") == 0)
		p = UNIT_PROTECT_HOME_TMPFS;
	else if (unit_bool_parse(v, &b) == 0)
		p = b ? UNIT_PROTECT_HOME_YES : UNIT_PROTECT_HOME_NO;
	else
		return cfg_bad(c, "\"%.60s\" is not yes, no, read-only or tmpfs", v);
	c->d->exec.protect_home = p;
	return 0;
}

/* ReadOnlyPaths= & co.: absolute paths with their '-' (missing is fine)
 * and '+' (below RootDirectory=) prefixes kept. */
static int cfg_ns_paths(struct cfg *c, const char *v)
{
	return cfg_path_list(c, v, "-+");
}

/* SystemCallFilter= (arg 0) and RestrictAddressFamilies= (arg 1): the
 * first assignment decides allow or deny ('~'); a later one of the same
 * kind adds, one of the other kind subtracts — its entries are kept with a
 * '~' prefix, applied in order by whoever builds the filter (an
 * "@system-service" list minus "~@privileged" cannot be folded here). An
 * empty value resets. */
static int cfg_filter(struct cfg *c, const char *v)
{
	struct unit_exec *e = &c->d->exec;
	bool syscalls = c->dir->arg == 0;
	struct unit_strv *l = syscalls ? &e->syscall_filter : &e->address_families;
	bool *deny = syscalls ? &e->syscall_filter_deny : &e->address_families_deny;
	if (!*v) {
		unit_strv_clear(l);
		*deny = false;
		return 0;
	}
	bool invert = *v == '~';
	if (invert)
		v++;
	if (l->n == 0)
		*deny = invert;
	bool subtract = invert != *deny;
	char w[128];
	int r;
	while ((r = cfg_word(&v, w + 1, sizeof(w) - 1)) != 0) {
		if (r < 0 || w[1] == '~') {
			cfg_word_bad(c, "\"%.60s\" is not a name", r < 0 ? "(too long)" : w + 1);
			continue;
		}
		w[0] = '~';
		const char *entry = subtract ? w : w + 1;
		if (!unit_strv_contains(l, entry) && (r = unit_strv_push(l, entry)) < 0)
			return r;
	}
	return 0;
}

static int cfg_syscall_errno(struct cfg *c, const char *v)
{
	if (strcmp(v, "kill") == 0) {
		c->d->exec.syscall_errno = 0;
		return 0;
	}
	if (unit_errno_parse(v, &c->d->exec.syscall_errno) == 0)
		return 0;
	return cfg_bad(c, "\"%.60s\" is not an errno name", v);
}

#define E(key, fn, field, flags)                                                                   \
	{                                                                                          \
		key, CFG_EXEC, fn, CFG_OFF(exec.field), 0, flags                                   \
	}
#define LIMIT(key, res)                                                                            \
	{                                                                                          \
		key, CFG_EXEC, cfg_rlimit, 0, res, 0                                               \
	}
#define DIRS(key, kind)                                                                            \
	{key, CFG_EXEC, cfg_dirs, 0, kind, CFG_SPEC},                                              \
	{                                                                                          \
		key "Mode", CFG_EXEC, cfg_mode, CFG_OFF(exec.dir_modes[kind]), 0, 0                \
	}

const struct cfg_directive cfg_exec_table[] = {
    E("User", cfg_string, user, CFG_SPEC),
    E("Group", cfg_string, group, CFG_SPEC),
    E("SupplementaryGroups", cfg_words, supplementary_groups, CFG_SPEC),
    E("DynamicUser", cfg_bool, dynamic_user, 0),
    E("WorkingDirectory", cfg_workdir, working_directory, CFG_SPEC),
    E("RootDirectory", cfg_path, root_directory, CFG_SPEC),
    {"UMask", CFG_EXEC, cfg_umask, 0, 0, 0},
    {"Nice", CFG_EXEC, cfg_nice, 0, 0, 0},
    {"OOMScoreAdjust", CFG_EXEC, cfg_oom, 0, 0, 0},
    LIMIT("LimitCPU", RLIMIT_CPU),
    LIMIT("LimitFSIZE", RLIMIT_FSIZE),
    LIMIT("LimitDATA", RLIMIT_DATA),
    LIMIT("LimitSTACK", RLIMIT_STACK),
    LIMIT("LimitCORE", RLIMIT_CORE),
    LIMIT("LimitRSS", RLIMIT_RSS),
    LIMIT("LimitNOFILE", RLIMIT_NOFILE),
    LIMIT("LimitAS", RLIMIT_AS),
    LIMIT("LimitNPROC", RLIMIT_NPROC),
    LIMIT("LimitMEMLOCK", RLIMIT_MEMLOCK),
    LIMIT("LimitLOCKS", RLIMIT_LOCKS),
    LIMIT("LimitSIGPENDING", RLIMIT_SIGPENDING),
    LIMIT("LimitMSGQUEUE", RLIMIT_MSGQUEUE),
    LIMIT("LimitNICE", RLIMIT_NICE),
    LIMIT("LimitRTPRIO", RLIMIT_RTPRIO),
    LIMIT("LimitRTTIME", RLIMIT_RTTIME),
    {"Environment", CFG_EXEC, cfg_environment, 0, 0, CFG_SPEC},
    E("EnvironmentFile", cfg_envfile, environment_files, CFG_SPEC),
    E("PassEnvironment", cfg_words, pass_environment, CFG_SPEC),
    E("UnsetEnvironment", cfg_words, unset_environment, CFG_SPEC),
    {"StandardInput", CFG_EXEC, cfg_stdio, 0, 0, CFG_SPEC},
    {"StandardOutput", CFG_EXEC, cfg_stdio, 0, 1, CFG_SPEC},
    {"StandardError", CFG_EXEC, cfg_stdio, 0, 2, CFG_SPEC},
    E("TTYPath", cfg_path, tty_path, CFG_SPEC),
    E("TTYReset", cfg_bool, tty_reset, 0),
    E("TTYVHangup", cfg_bool, tty_vhangup, 0),
    E("SyslogIdentifier", cfg_string, syslog_identifier, CFG_SPEC),
    DIRS("RuntimeDirectory", UNIT_DIR_RUNTIME),
    DIRS("StateDirectory", UNIT_DIR_STATE),
    DIRS("CacheDirectory", UNIT_DIR_CACHE),
    DIRS("LogsDirectory", UNIT_DIR_LOGS),
    DIRS("ConfigurationDirectory", UNIT_DIR_CONFIG),
    {"RuntimeDirectoryPreserve", CFG_EXEC, cfg_dir_preserve, 0, 0, 0},
    E("NoNewPrivileges", cfg_bool, no_new_privileges, 0),
    {"CapabilityBoundingSet", CFG_EXEC, cfg_caps, 0, 0, 0},
    {"AmbientCapabilities", CFG_EXEC, cfg_caps, 0, 1, 0},
    E("PrivateTmp", cfg_bool, private_tmp, 0),
    E("PrivateNetwork", cfg_bool, private_network, 0),
    E("PrivateDevices", cfg_bool, private_devices, 0),
    {"ProtectProc", CFG_EXEC, cfg_protect_proc, 0, 0, 0},
    {"ProtectSystem", CFG_EXEC, cfg_protect_system, 0, 0, 0},
    {"ProtectHome", CFG_EXEC, cfg_protect_home, 0, 0, 0},
    E("ReadOnlyPaths", cfg_ns_paths, read_only_paths, CFG_SPEC),
    E("ReadWritePaths", cfg_ns_paths, read_write_paths, CFG_SPEC),
    E("InaccessiblePaths", cfg_ns_paths, inaccessible_paths, CFG_SPEC),
    /* the old names */
    E("ReadOnlyDirectories", cfg_ns_paths, read_only_paths, CFG_SPEC),
    E("ReadWriteDirectories", cfg_ns_paths, read_write_paths, CFG_SPEC),
    E("InaccessibleDirectories", cfg_ns_paths, inaccessible_paths, CFG_SPEC),
    {"SystemCallFilter", CFG_EXEC, cfg_filter, 0, 0, 0},
    {"RestrictAddressFamilies", CFG_EXEC, cfg_filter, 0, 1, 0},
    {"SystemCallErrorNumber", CFG_EXEC, cfg_syscall_errno, 0, 0, 0},
    {NULL, 0, NULL, 0, 0, 0},
};
