/* cond: Condition*= and Assert*= of [Unit], checked against what the
 * caller says the machine is (struct unit_cond_env) and the files below
 * its root. systemd's rules: every plain condition must hold, and of the
 * trigger ('|') ones at least one; conditions are checked before asserts;
 * a type kin cannot check (Security=, ACPower=) holds. */
#include "units/files-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>

static const char *const cond_names[UNIT_COND_TYPE_COUNT] = {
    [UNIT_COND_PATH_EXISTS] = "PathExists",
    [UNIT_COND_PATH_EXISTS_GLOB] = "PathExistsGlob",
    [UNIT_COND_PATH_IS_DIRECTORY] = "PathIsDirectory",
    [UNIT_COND_PATH_IS_SYMBOLIC_LINK] = "PathIsSymbolicLink",
    [UNIT_COND_PATH_IS_MOUNT_POINT] = "PathIsMountPoint",
    [UNIT_COND_PATH_IS_READ_WRITE] = "PathIsReadWrite",
    [UNIT_COND_DIRECTORY_NOT_EMPTY] = "DirectoryNotEmpty",
    [UNIT_COND_FILE_NOT_EMPTY] = "FileNotEmpty",
    [UNIT_COND_FILE_IS_EXECUTABLE] = "FileIsExecutable",
    [UNIT_COND_KERNEL_COMMAND_LINE] = "KernelCommandLine",
    [UNIT_COND_VIRTUALIZATION] = "Virtualization",
    [UNIT_COND_CAPABILITY] = "Capability",
    [UNIT_COND_HOST] = "Host",
    [UNIT_COND_ARCHITECTURE] = "Architecture",
    [UNIT_COND_FIRST_BOOT] = "FirstBoot",
    [UNIT_COND_NEEDS_UPDATE] = "NeedsUpdate",
    [UNIT_COND_CONTROL_GROUP_CONTROLLER] = "ControlGroupController",
    [UNIT_COND_USER] = "User",
    [UNIT_COND_GROUP] = "Group",
    [UNIT_COND_SECURITY] = "Security",
    [UNIT_COND_AC_POWER] = "ACPower",
};

/* capability(7) numbers by name, as ConditionCapability= spells them. */
static const char *const cap_names[] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

/* The root's view of a path: an fd beneath env->root (O_PATH unless
 * flags say more), following links unless nofollow. */
static int open_in_root(const struct unit_cond_env *env, const char *path, int flags)
{
	struct unit_paths p = {0};
	struct unit_dirs d;
	if (path[0] != '/')
		return -EINVAL;
	if (env->root && env->root[0] && str_copy(p.root, sizeof(p.root), env->root) < 0)
		return -ENAMETOOLONG;
	int r = unit_dirs_open(&p, &d, NULL);
	if (r < 0)
		return r;
	r = unit_dirs_openat(&d, path, flags);
	unit_dirs_close(&d);
	return r;
}

static int stat_in_root(const struct unit_cond_env *env, const char *path, int flags,
                        struct stat *st)
{
	_cleanup_close_ int fd = open_in_root(env, path, O_PATH | flags);
	if (fd < 0)
		return fd;
	return fstat(fd, st) < 0 ? -errno : 0;
}

static bool path_glob(const struct unit_cond_env *env, const char *pattern)
{
	char full[PATH_MAX];
	const char *root = env->root && env->root[0] ? env->root : "";
	if (snprintf(full, sizeof(full), "%s%s", root, pattern) >= (int)sizeof(full))
		return false;
	glob_t g;
	bool any = glob(full, GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return any;
}

static bool mount_point(const struct unit_cond_env *env, const char *path)
{
	struct stat st, parent;
	char up[PATH_MAX];
	if (stat_in_root(env, path, 0, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if (unit_path_join(path, "..", up, sizeof(up)) < 0 || stat_in_root(env, up, 0, &parent) < 0)
		return false;
	/* Another device, or the root of its own (a bind mount of the same fs
	 * is missed, as without statx's mount id). */
	return st.st_dev != parent.st_dev || st.st_ino == parent.st_ino;
}

static bool dir_not_empty(const struct unit_cond_env *env, const char *path)
{
	int fd = open_in_root(env, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return false;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	bool any = false;
	for (struct dirent *e; !any && (e = readdir(d));)
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

/* KernelCommandLine=: "word" matches the word or "word=..."; "k=v" the word. */
static bool cmdline_has(const char *cmdline, const char *arg)
{
	bool with_value = strchr(arg, '=') != NULL;
	size_t alen = strlen(arg);
	for (const char *p = cmdline ? cmdline : ""; *p;) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		const char *w = p;
		bool quoted = false;
		while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n')))
			quoted ^= *p++ == '"';
		size_t n = (size_t)(p - w);
		if (n == 0)
			break;
		if (n == alen && memcmp(w, arg, n) == 0)
			return true;
		if (!with_value && n > alen && w[alen] == '=' && memcmp(w, arg, alen) == 0)
			return true;
	}
	return false;
}

static bool virt_is(const struct unit_cond_env *env, const char *arg)
{
	const char *v = env->virtualization ? env->virtualization : "";
	bool b;
	if (unit_bool_parse(arg, &b) == 0)
		return b == (v[0] != '\0');
	if (strcmp(arg, "vm") == 0)
		return v[0] && !env->container;
	if (strcmp(arg, "container") == 0)
		return v[0] && env->container;
	return strcmp(v, arg) == 0;
}

static bool has_cap(const struct unit_cond_env *env, const char *arg)
{
	for (size_t i = 0; i < ARRAY_SIZE(cap_names); i++)
		if (strcasecmp(arg, cap_names[i]) == 0)
			return (env->caps >> i) & 1;
	return false;
}

static bool host_is(const struct unit_cond_env *env, const char *arg)
{
	if (env->machine_id && strlen(arg) == 32 && strcasecmp(arg, env->machine_id) == 0)
		return true;
	return env->hostname && fnmatch(arg, env->hostname, FNM_CASEFOLD) == 0;
}

static bool controllers_present(const struct unit_cond_env *env, const char *arg)
{
	_cleanup_free_ char *v = strdup(arg);
	if (!v)
		return false;
	bool all = true, any = false;
	for (char *save = NULL, *w = strtok_r(v, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		bool have = strcmp(w, "v2") == 0;
		for (int c = 0; c < CELLS_CTL_COUNT && !have; c++)
			have = strcmp(w, cells_controller_name((enum cells_controller)c)) == 0 &&
			       (env->controllers >> c) & 1;
		all &= have;
		any = true;
	}
	return any && all;
}

static bool needs_update(const struct unit_cond_env *env, const char *dir)
{
	struct stat usr, stamp;
	char path[PATH_MAX];
	if (stat_in_root(env, "/usr", 0, &usr) < 0)
		return false;
	if (snprintf(path, sizeof(path), "%s/.updated", dir) >= (int)sizeof(path))
		return false;
	if (stat_in_root(env, path, 0, &stamp) < 0)
		return true;
	return usr.st_mtim.tv_sec > stamp.st_mtim.tv_sec ||
	       (usr.st_mtim.tv_sec == stamp.st_mtim.tv_sec &&
	        usr.st_mtim.tv_nsec > stamp.st_mtim.tv_nsec);
}

/* User= and Group= hold for the manager's own (root): by number, "root",
 * or "@system" for a user. */
static bool ids_match(const char *arg, bool user)
{
	unsigned long long id = user ? (unsigned long long)getuid() : (unsigned long long)getgid();
	uint64_t v;
	if (str_to_u64(arg, UINT32_MAX, &v) == 0)
		return v == id;
	if (user && strcmp(arg, "@system") == 0)
		return id < 1000;
	return strcmp(arg, "root") == 0 && id == 0;
}

static bool cond_holds(const struct unit_condition *c, const struct unit_cond_env *env)
{
	const char *a = c->arg ? c->arg : "";
	struct stat st;
	bool b;
	switch (c->type) {
	case UNIT_COND_PATH_EXISTS:
		return stat_in_root(env, a, 0, &st) == 0;
	case UNIT_COND_PATH_EXISTS_GLOB:
		return path_glob(env, a);
	case UNIT_COND_PATH_IS_DIRECTORY:
		return stat_in_root(env, a, 0, &st) == 0 && S_ISDIR(st.st_mode);
	case UNIT_COND_PATH_IS_SYMBOLIC_LINK:
		return stat_in_root(env, a, O_NOFOLLOW, &st) == 0 && S_ISLNK(st.st_mode);
	case UNIT_COND_PATH_IS_MOUNT_POINT:
		return mount_point(env, a);
	case UNIT_COND_PATH_IS_READ_WRITE: {
		struct statvfs sv;
		_cleanup_close_ int fd = open_in_root(env, a, O_PATH);
		return fd >= 0 && fstatvfs(fd, &sv) == 0 && !(sv.f_flag & ST_RDONLY);
	}
	case UNIT_COND_DIRECTORY_NOT_EMPTY:
		return dir_not_empty(env, a);
	case UNIT_COND_FILE_NOT_EMPTY:
		return stat_in_root(env, a, 0, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	case UNIT_COND_FILE_IS_EXECUTABLE:
		return stat_in_root(env, a, 0, &st) == 0 && S_ISREG(st.st_mode) &&
		       (st.st_mode & 0111);
	case UNIT_COND_KERNEL_COMMAND_LINE:
		return cmdline_has(env->cmdline, a);
	case UNIT_COND_VIRTUALIZATION:
		return virt_is(env, a);
	case UNIT_COND_CAPABILITY:
		return has_cap(env, a);
	case UNIT_COND_HOST:
		return host_is(env, a);
	case UNIT_COND_ARCHITECTURE:
		return strcmp(a, "native") == 0 ||
		       (env->architecture && strcmp(a, env->architecture) == 0);
	case UNIT_COND_FIRST_BOOT:
		return unit_bool_parse(a, &b) == 0 && b == env->first_boot;
	case UNIT_COND_NEEDS_UPDATE:
		return needs_update(env, a);
	case UNIT_COND_CONTROL_GROUP_CONTROLLER:
		return controllers_present(env, a);
	case UNIT_COND_USER:
		return ids_match(a, true);
	case UNIT_COND_GROUP:
		return ids_match(a, false);
	case UNIT_COND_SECURITY:
	case UNIT_COND_AC_POWER:
	case UNIT_COND_TYPE_COUNT:
		break;
	}
	return true;
}

static void why_set(char *why, size_t size, const struct unit_condition *c)
{
	if (why && size)
		snprintf(why, size, "%s%s=%s%s%s", c->assert ? "Assert" : "Condition",
		         c->type < UNIT_COND_TYPE_COUNT ? cond_names[c->type] : "?",
		         c->trigger ? "|" : "", c->negate ? "!" : "", c->arg ? c->arg : "");
}

/* One group (conditions, or asserts): 1 holds, 0 not (why names one). */
static int group_check(const struct unit_condition *c, size_t n, bool asserts,
                       const struct unit_cond_env *env, char *why, size_t why_size)
{
	const struct unit_condition *first_trigger = NULL;
	bool trigger_ok = false;
	for (size_t i = 0; i < n; i++) {
		if (c[i].assert != asserts)
			continue;
		bool ok = cond_holds(&c[i], env) != c[i].negate;
		if (c[i].trigger) {
			first_trigger = first_trigger ? first_trigger : &c[i];
			trigger_ok |= ok;
		} else if (!ok) {
			why_set(why, why_size, &c[i]);
			return 0;
		}
	}
	if (first_trigger && !trigger_ok) {
		why_set(why, why_size, first_trigger);
		return 0;
	}
	return 1;
}

int unit_conditions_check(const struct unit_condition *c, size_t n, const struct unit_cond_env *env,
                          char *why, size_t why_size)
{
	static const struct unit_cond_env none = {0};
	if (why && why_size)
		why[0] = '\0';
	env = env ? env : &none;
	if (group_check(c, n, false, env, why, why_size) == 0)
		return 0;
	return group_check(c, n, true, env, why, why_size) == 0 ? -EPERM : 1;
}

int unit_cond_type_from_name(const char *name)
{
	for (int t = 0; t < UNIT_COND_TYPE_COUNT; t++)
		if (strcmp(name, cond_names[t]) == 0)
			return t;
	return -EINVAL;
}
