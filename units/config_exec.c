/* config_exec: the execution settings (systemd.exec(5)), the resource
 * directives that become a cell's limits (systemd.resource-control(5)),
 * and Condition*=/Assert*=. */
#include "units/config-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define EX(f)  offsetof(struct unit_def, exec.f)
#define RES(f) offsetof(struct unit_def, res.f)

static int cfg_umask(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char *end;
	unsigned long m = strtoul(v, &end, 8);
	(void)field;
	if (!*v || *end || m > 0777)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not an octal mask");
	d->exec.umask = (mode_t)m;
	d->exec.umask_set = true;
	return 0;
}

static int cfg_mode(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char *end;
	unsigned long m = strtoul(v, &end, 8);
	(void)d;
	if (!*v || *end || m > 07777)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not an octal mode");
	*(mode_t *)field = (mode_t)m;
	return 0;
}

static int cfg_int_range(const char *v, long lo, long hi, int *ret)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < lo || n > hi)
		return -EINVAL;
	*ret = (int)n;
	return 0;
}

static int cfg_nice(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (cfg_int_range(v, -20, 19, &d->exec.nice) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not in -20..19");
	d->exec.nice_set = true;
	return 0;
}

static int cfg_oom(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (cfg_int_range(v, -1000, 1000, &d->exec.oom_score_adjust) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not in -1000..1000");
	d->exec.oom_score_adjust_set = true;
	return 0;
}

/* "1024", "1024:4096", "infinity", sizes with K/M/G for the byte limits. */
static int limit_value(const char *v, bool bytes, uint64_t *ret)
{
	if (!strcmp(v, "infinity"))
		return *ret = UNIT_INFINITY, 0;
	if (bytes)
		return str_to_size(v, 1, UINT64_MAX - 1, ret);
	return str_to_u64(v, UINT64_MAX - 1, ret);
}

static const struct {
	const char *key;
	int resource;
	bool bytes;
} rlimits[] = {
    {"LimitCPU", RLIMIT_CPU, false},          {"LimitFSIZE", RLIMIT_FSIZE, true},
    {"LimitDATA", RLIMIT_DATA, true},         {"LimitSTACK", RLIMIT_STACK, true},
    {"LimitCORE", RLIMIT_CORE, true},         {"LimitRSS", RLIMIT_RSS, true},
    {"LimitNOFILE", RLIMIT_NOFILE, false},    {"LimitAS", RLIMIT_AS, true},
    {"LimitNPROC", RLIMIT_NPROC, false},      {"LimitMEMLOCK", RLIMIT_MEMLOCK, true},
    {"LimitLOCKS", RLIMIT_LOCKS, false},      {"LimitSIGPENDING", RLIMIT_SIGPENDING, false},
    {"LimitMSGQUEUE", RLIMIT_MSGQUEUE, true}, {"LimitNICE", RLIMIT_NICE, false},
    {"LimitRTPRIO", RLIMIT_RTPRIO, false},    {"LimitRTTIME", RLIMIT_RTTIME, false},
};

static int cfg_rlimit(struct unit_def *d, void *field, const char *v, struct err *err)
{
	size_t i = (size_t)(uintptr_t)field - (uintptr_t)d; /* the table index, see below */
	struct unit_exec *e = &d->exec;
	char buf[128], *colon;
	uint64_t soft, hard;
	if (str_copy(buf, sizeof(buf), v) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "too long");
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	if (limit_value(buf, rlimits[i].bytes, &soft) < 0 ||
	    limit_value(colon ? colon + 1 : buf, rlimits[i].bytes, &hard) < 0 || soft > hard)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "not a limit (N, SOFT:HARD, infinity)");
	size_t k = 0;
	while (k < e->nrlimits && e->rlimits[k].resource != rlimits[i].resource)
		k++;
	if (k == e->nrlimits) {
		if (e->nrlimits >= UNIT_RLIMITS_MAX)
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "too many limits");
		e->nrlimits++;
	}
	e->rlimits[k] = (struct unit_rlimit){rlimits[i].resource, soft, hard};
	return 0;
}

static int cfg_env(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (!*v) {
		unit_strv_clear(&d->exec.environment);
		return 0;
	}
	return unit_env_assign_parse(v, &d->exec.environment, err);
}

static int stdio_parse(const char *v, enum unit_stdio *ret, char **path, struct err *err)
{
	static const struct {
		const char *name;
		enum unit_stdio s;
	} names[] = {{"null", UNIT_STDIO_NULL},
	             {"tty", UNIT_STDIO_TTY},
	             {"tty-force", UNIT_STDIO_TTY},
	             {"tty-fail", UNIT_STDIO_TTY},
	             {"journal", UNIT_STDIO_DEFAULT},
	             {"syslog", UNIT_STDIO_DEFAULT},
	             {"kmsg", UNIT_STDIO_DEFAULT},
	             {"inherit", UNIT_STDIO_DEFAULT},
	             {"journal+console", UNIT_STDIO_DEFAULT},
	             {"syslog+console", UNIT_STDIO_DEFAULT},
	             {"kmsg+console", UNIT_STDIO_DEFAULT},
	             {"socket", UNIT_STDIO_SOCKET}};
	static const struct {
		const char *prefix;
		enum unit_stdio s;
	} files[] = {{"file:", UNIT_STDIO_FILE},
	             {"append:", UNIT_STDIO_APPEND},
	             {"truncate:", UNIT_STDIO_TRUNCATE}};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(v, names[i].name))
			return *ret = names[i].s, 0;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		if (str_startswith(v, files[i].prefix) && v[strlen(files[i].prefix)] == '/') {
			free(*path);
			*path = strdup(v + strlen(files[i].prefix));
			*ret = files[i].s;
			return *path ? 0 : -ENOMEM;
		}
	return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
	               "not a kind of standard stream kin takes");
}

static int cfg_stdin(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	return stdio_parse(v, &d->exec.std_input, &d->exec.std_input_path, err);
}
static int cfg_stdout(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	return stdio_parse(v, &d->exec.std_output, &d->exec.std_output_path, err);
}
static int cfg_stderr(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	return stdio_parse(v, &d->exec.std_error, &d->exec.std_error_path, err);
}

/* Runtime/State/Cache/Logs/ConfigurationDirectory=: relative names. */
static int cfg_dirs(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char copy[1024], *save = NULL;
	(void)d;
	if (str_copy(copy, sizeof(copy), v) < 0)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "too long");
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		if (w[0] == '/' || strstr(w, "..") || strchr(w, ':'))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "\"%.64s\" is not a relative directory name", w);
	return cfg_words(d, field, v, err);
}

/* "CAP_A CAP_B", "~CAP_C": lines merge (systemd's rule). */
static int caps_parse(const char *v, uint64_t *ret, bool *ret_invert, struct err *err)
{
	char list[2048];
	size_t o = 0;
	*ret_invert = *v == '~';
	if (*ret_invert)
		v++;
	for (; *v && o + 1 < sizeof(list); v++)
		list[o++] = (*v == ' ' || *v == '\t') ? ',' : *v;
	list[o] = '\0';
	if (!o)
		return *ret = 0, 0;
	return exec_caps_parse(list, ret, err);
}

static int cfg_bounding(struct unit_def *d, void *field, const char *v, struct err *err)
{
	uint64_t caps;
	bool inv;
	(void)field;
	if (caps_parse(v, &caps, &inv, err) < 0)
		return -EINVAL;
	if (!d->exec.caps_bounding_set) {
		d->exec.caps_bounding = inv ? ~0ull : 0;
		d->exec.caps_bounding_set = true;
	}
	if (inv)
		d->exec.caps_bounding &= ~caps;
	else
		d->exec.caps_bounding |= caps;
	return 0;
}

static int cfg_ambient(struct unit_def *d, void *field, const char *v, struct err *err)
{
	uint64_t caps;
	bool inv;
	(void)field;
	if (caps_parse(v, &caps, &inv, err) < 0)
		return -EINVAL;
	d->exec.caps_ambient = inv ? d->exec.caps_ambient & ~caps : d->exec.caps_ambient | caps;
	return 0;
}

static int cfg_protect_system(struct unit_def *d, void *field, const char *v, struct err *err)
{
	bool b;
	(void)field;
	if (unit_bool_parse(v, &b) == 0)
		d->exec.protect_system = b ? UNIT_PROTECT_SYSTEM_YES : UNIT_PROTECT_SYSTEM_NO;
	else if (!strcmp(v, "full"))
		d->exec.protect_system = UNIT_PROTECT_SYSTEM_FULL;
	else if (!strcmp(v, "strict"))
		d->exec.protect_system = UNIT_PROTECT_SYSTEM_STRICT;
	else
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not yes, no, full or strict");
	return 0;
}

static int cfg_protect_home(struct unit_def *d, void *field, const char *v, struct err *err)
{
	bool b;
	(void)field;
	if (unit_bool_parse(v, &b) == 0)
		d->exec.protect_home = b ? UNIT_PROTECT_HOME_YES : UNIT_PROTECT_HOME_NO;
	else if (!strcmp(v, "read-only"))
		d->exec.protect_home = UNIT_PROTECT_HOME_READ_ONLY;
	else if (!strcmp(v, "tmpfs"))
		d->exec.protect_home = UNIT_PROTECT_HOME_TMPFS;
	else
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "not yes, no, read-only or tmpfs");
	return 0;
}

static int cfg_protect_proc(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field, (void)err;
	d->exec.protect_proc_invisible =
	    !strcmp(v, "invisible") || !strcmp(v, "noaccess") || !strcmp(v, "ptraceable");
	return 0;
}

/* SystemCallFilter=: an allow list, or after a leading '~' a deny list;
 * the first line decides which, later lines add (or subtract). */
static int cfg_syscalls(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (!*v) {
		unit_strv_clear(&d->exec.syscall_filter);
		d->exec.syscall_filter_deny = false;
		return 0;
	}
	bool deny = *v == '~';
	if (!d->exec.syscall_filter.n)
		d->exec.syscall_filter_deny = deny;
	return cfg_words(d, &d->exec.syscall_filter, deny ? v + 1 : v, err);
}

static int cfg_syscall_errno(struct unit_def *d, void *field, const char *v, struct err *err)
{
	static const struct {
		const char *name;
		int e;
	} names[] = {{"EPERM", EPERM}, {"EACCES", EACCES}, {"ENOSYS", ENOSYS}, {"EINVAL", EINVAL}};
	(void)field;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(v, names[i].name))
			return d->exec.syscall_errno = names[i].e, 0;
	if (cfg_int_range(v, 1, 4095, &d->exec.syscall_errno) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not an errno name or number");
	return 0;
}

static int cfg_families(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (!*v || !strcmp(v, "none")) {
		unit_strv_clear(&d->exec.address_families);
		d->exec.address_families_deny = false;
		return 0;
	}
	bool deny = *v == '~';
	if (!d->exec.address_families.n)
		d->exec.address_families_deny = deny;
	return cfg_words(d, &d->exec.address_families, deny ? v + 1 : v, err);
}

static int cfg_dynamic_user(struct unit_def *d, void *field, const char *v, struct err *err)
{
	return cfg_bool(d, field, v, err);
}

#define DIRS(key, kind)                                                                            \
	{key, cfg_dirs, offsetof(struct unit_def, exec.dirs) + (kind) * sizeof(struct unit_strv)}, \
	{                                                                                          \
		key "Mode", cfg_mode,                                                              \
		    offsetof(struct unit_def, exec.dir_modes) + (kind) * sizeof(mode_t)            \
	}

const struct cfg_directive cfg_exec_table[] = {
    {"User", cfg_str, EX(user)},
    {"Group", cfg_str, EX(group)},
    {"SupplementaryGroups", cfg_words, EX(supplementary_groups)},
    {"DynamicUser", cfg_dynamic_user, EX(dynamic_user)},
    {"WorkingDirectory", cfg_str, EX(working_directory)},
    {"RootDirectory", cfg_str, EX(root_directory)},
    {"UMask", cfg_umask, 0},
    {"Nice", cfg_nice, 0},
    {"OOMScoreAdjust", cfg_oom, 0},
    {"Environment", cfg_env, 0},
    {"EnvironmentFile", cfg_line, EX(environment_files)},
    {"PassEnvironment", cfg_words, EX(pass_environment)},
    {"UnsetEnvironment", cfg_words, EX(unset_environment)},
    {"StandardInput", cfg_stdin, 0},
    {"StandardOutput", cfg_stdout, 0},
    {"StandardError", cfg_stderr, 0},
    {"TTYPath", cfg_str, EX(tty_path)},
    {"TTYReset", cfg_bool, EX(tty_reset)},
    {"TTYVHangup", cfg_bool, EX(tty_vhangup)},
    {"SyslogIdentifier", cfg_str, EX(syslog_identifier)},
    DIRS("RuntimeDirectory", UNIT_DIR_RUNTIME),
    DIRS("StateDirectory", UNIT_DIR_STATE),
    DIRS("CacheDirectory", UNIT_DIR_CACHE),
    DIRS("LogsDirectory", UNIT_DIR_LOGS),
    DIRS("ConfigurationDirectory", UNIT_DIR_CONFIG),
    {"RuntimeDirectoryPreserve", cfg_bool, EX(runtime_directory_preserve)},
    {"NoNewPrivileges", cfg_bool, EX(no_new_privileges)},
    {"CapabilityBoundingSet", cfg_bounding, 0},
    {"AmbientCapabilities", cfg_ambient, 0},
    {"PrivateTmp", cfg_bool, EX(private_tmp)},
    {"PrivateNetwork", cfg_bool, EX(private_network)},
    {"PrivateDevices", cfg_bool, EX(private_devices)},
    {"ProtectProc", cfg_protect_proc, 0},
    {"ProtectSystem", cfg_protect_system, 0},
    {"ProtectHome", cfg_protect_home, 0},
    {"ReadOnlyPaths", cfg_words, EX(read_only_paths)},
    {"ReadWritePaths", cfg_words, EX(read_write_paths)},
    {"InaccessiblePaths", cfg_words, EX(inaccessible_paths)},
    {"ReadOnlyDirectories", cfg_words, EX(read_only_paths)},
    {"ReadWriteDirectories", cfg_words, EX(read_write_paths)},
    {"InaccessibleDirectories", cfg_words, EX(inaccessible_paths)},
    {"SystemCallFilter", cfg_syscalls, 0},
    {"SystemCallErrorNumber", cfg_syscall_errno, 0},
    {"RestrictAddressFamilies", cfg_families, 0},
    {NULL, NULL, 0}, /* Limit*=: cfg_rlimit_find */
};

/* Limit*= are looked up here (their field is their index). */
static const struct cfg_directive *rlimit_directive(const char *key, struct cfg_directive *tmp)
{
	for (size_t i = 0; i < ARRAY_SIZE(rlimits); i++)
		if (!strcmp(rlimits[i].key, key)) {
			*tmp = (struct cfg_directive){rlimits[i].key, cfg_rlimit, i};
			return tmp;
		}
	return NULL;
}

/* ---- resources ------------------------------------------------------------------ */

static uint64_t phys_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* Bytes (K/M/G/T), "infinity", or N% of base. */
static int amount(const char *v, uint64_t base, uint64_t *ret)
{
	size_t n = strlen(v);
	if (!strcmp(v, "infinity"))
		return *ret = UNIT_INFINITY, 0;
	if (n > 1 && v[n - 1] == '%') {
		char num[32];
		uint64_t pct;
		if (n > sizeof(num) || !base)
			return -EINVAL;
		memcpy(num, v, n - 1);
		num[n - 1] = '\0';
		if (str_to_u64(num, 100, &pct) < 0)
			return -EINVAL;
		*ret = base / 100 * pct;
		return 0;
	}
	return str_to_size(v, 1, UINT64_MAX - 1, ret);
}

static int res_set(struct unit_def *d, enum unit_resource r)
{
	d->res.set |= 1u << r;
	return 0;
}

#define RES_MEM(fn, field, bit)                                                                    \
	static int fn(struct unit_def *d, void *f, const char *v, struct err *err)                 \
	{                                                                                          \
		(void)f;                                                                           \
		if (amount(v, phys_memory(), &d->res.field) < 0)                                   \
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,                         \
			               "not bytes, a percentage or infinity");                     \
		return res_set(d, bit);                                                            \
	}
RES_MEM(cfg_mem_min, memory_min, UNIT_RES_MEMORY_MIN)
RES_MEM(cfg_mem_low, memory_low, UNIT_RES_MEMORY_LOW)
RES_MEM(cfg_mem_high, memory_high, UNIT_RES_MEMORY_HIGH)
RES_MEM(cfg_mem_max, memory_max, UNIT_RES_MEMORY_MAX)
RES_MEM(cfg_mem_swap, memory_swap_max, UNIT_RES_MEMORY_SWAP_MAX)

static int cfg_cpu_quota(struct unit_def *d, void *f, const char *v, struct err *err)
{
	char num[32];
	uint64_t pct;
	size_t n = strlen(v);
	(void)f;
	if (n < 2 || n > sizeof(num) || v[n - 1] != '%')
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a percentage");
	memcpy(num, v, n - 1);
	num[n - 1] = '\0';
	if (str_to_u64(num, 100000, &pct) < 0 || !pct)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a percentage");
	d->res.cpu_quota_per_sec_us = pct * 10000; /* 100% = 1 s per s */
	return res_set(d, UNIT_RES_CPU_QUOTA);
}

static int weight(const char *v, uint64_t *ret)
{
	if (!strcmp(v, "idle"))
		return *ret = 1, 0;
	return str_to_u64(v, 10000, ret) < 0 || !*ret ? -EINVAL : 0;
}

static int cfg_cpu_weight(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	if (weight(v, &d->res.cpu_weight) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not 1..10000 or idle");
	return res_set(d, UNIT_RES_CPU_WEIGHT);
}

static int cfg_cpu_shares(struct unit_def *d, void *f, const char *v, struct err *err)
{
	uint64_t shares;
	(void)f;
	if (str_to_u64(v, 262144, &shares) < 0 || shares < 2)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not 2..262144");
	d->res.cpu_weight = shares * 100 / 1024 ? shares * 100 / 1024 : 1; /* 1024 = 100 */
	if (d->res.cpu_weight > 10000)
		d->res.cpu_weight = 10000;
	return res_set(d, UNIT_RES_CPU_WEIGHT);
}

static int cfg_io_weight(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	if (weight(v, &d->res.io_weight) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not 1..10000");
	return res_set(d, UNIT_RES_IO_WEIGHT);
}

static int cfg_tasks(struct unit_def *d, void *f, const char *v, struct err *err)
{
	char *pm = NULL;
	uint64_t base = 0;
	(void)f;
	if (file_read_small("/proc/sys/kernel/pid_max", 64, &pm, NULL) == 0) {
		str_to_u64(str_trim(pm), UINT64_MAX - 1, &base);
		free(pm);
	}
	if (str_to_u64(v, 4194304, &d->res.tasks_max) < 0 && amount(v, base, &d->res.tasks_max) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "not a count, percentage or infinity");
	return res_set(d, UNIT_RES_TASKS_MAX);
}

static int cfg_cpus(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	if (str_copy(d->res.allowed_cpus, sizeof(d->res.allowed_cpus), v) < 0 ||
	    strspn(v, "0123456789,- ") != strlen(v))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a CPU list");
	for (char *p = d->res.allowed_cpus; *p; p++)
		if (*p == ' ')
			*p = ',';
	return res_set(d, UNIT_RES_ALLOWED_CPUS);
}

static int cfg_mems(struct unit_def *d, void *f, const char *v, struct err *err)
{
	(void)f;
	if (str_copy(d->res.allowed_mems, sizeof(d->res.allowed_mems), v) < 0 ||
	    strspn(v, "0123456789,-") != strlen(v))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a node list");
	return res_set(d, UNIT_RES_ALLOWED_MEMS);
}

const struct cfg_directive cfg_res_table[] = {
    {"MemoryMin", cfg_mem_min, 0},
    {"MemoryLow", cfg_mem_low, 0},
    {"MemoryHigh", cfg_mem_high, 0},
    {"MemoryMax", cfg_mem_max, 0},
    {"MemoryLimit", cfg_mem_max, 0},
    {"MemorySwapMax", cfg_mem_swap, 0},
    {"CPUQuota", cfg_cpu_quota, 0},
    {"CPUWeight", cfg_cpu_weight, 0},
    {"CPUShares", cfg_cpu_shares, 0},
    {"IOWeight", cfg_io_weight, 0},
    {"BlockIOWeight", cfg_io_weight, 0},
    {"TasksMax", cfg_tasks, 0},
    {"AllowedCPUs", cfg_cpus, 0},
    {"AllowedMemoryNodes", cfg_mems, 0},
    {"Delegate", cfg_bool, RES(delegate)},
    {"CPUAccounting", NULL, 0},
    {"MemoryAccounting", NULL, 0},
    {"TasksAccounting", NULL, 0},
    {"IOAccounting", NULL, 0},
    {"BlockIOAccounting", NULL, 0},
    {NULL, NULL, 0},
};

/* ---- conditions ----------------------------------------------------------------- */

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

int cfg_condition(struct unit_def *d, const struct unit_assign *a, const struct unit_spec_ctx *ctx,
                  unit_diag_fn diag, void *data)
{
	bool assert = str_startswith(a->key, "Assert");
	const char *type = a->key + (assert ? 6 : 9);
	int t = -1;
	for (int i = 0; i < UNIT_COND_TYPE_COUNT; i++)
		if (!strcmp(cond_names[i], type))
			t = i;
	if (t < 0) {
		d->ignored++;
		if (diag)
			diag(data, a->file, a->line, "%s: [Unit] %s= is unknown; ignored",
			     d->name.full, a->key);
		return 0;
	}
	const char *v = a->value;
	if (!*v) { /* an empty value resets the list */
		for (size_t i = 0; i < d->nconds; i++)
			free(d->conds[i].arg);
		d->nconds = 0;
		return 0;
	}
	if (d->nconds >= UNIT_CONDS_MAX) {
		if (diag)
			diag(data, a->file, a->line, "%s: more than %d conditions; %s= ignored",
			     d->name.full, UNIT_CONDS_MAX, a->key);
		return 0;
	}
	struct unit_condition c = {.type = (enum unit_cond_type)t, .assert = assert};
	for (;; v++) {
		if (*v == '|')
			c.trigger = true;
		else if (*v == '!')
			c.negate = !c.negate;
		else
			break;
	}
	struct err err = {0};
	char *arg = NULL;
	if (ctx && strchr(v, '%')) {
		if (unit_specifiers_expand(v, ctx, &arg, &err) < 0) {
			if (diag)
				diag(data, a->file, a->line, "%s: %s=: %s; ignored", d->name.full,
				     a->key, err.msg);
			return 0;
		}
	} else if (!(arg = strdup(v))) {
		return -ENOMEM;
	}
	c.arg = arg;
	d->conds[d->nconds++] = c;
	return 0;
}

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
	for (int i = 0; i < UNIT_DIR_KIND_COUNT; i++)
		unit_strv_clear(&e->dirs[i]);
	unit_strv_clear(&e->read_only_paths);
	unit_strv_clear(&e->read_write_paths);
	unit_strv_clear(&e->inaccessible_paths);
	unit_strv_clear(&e->syscall_filter);
	unit_strv_clear(&e->address_families);
}

const struct cfg_directive *cfg_rlimit_find(const char *key, struct cfg_directive *tmp)
{
	return rlimit_directive(key, tmp);
}
