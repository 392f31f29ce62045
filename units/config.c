/* config: the directive table — each [Section] Key= kin knows, its parser
 * and where it goes in struct unit_def. Unknown sections and keys, and
 * bad values, are reported once per unit and directive through the diag
 * callback and ignored: a unit is never refused for one (systemd's rule).
 * The exec and resource directives are config_exec.c's; socket, timer and
 * install ones config_more.c's. */
#include "units/config-int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- value parsers shared by the tables ---------------------------------------- */

int cfg_str(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d, (void)err;
	char **f = field;
	free(*f);
	*f = *v ? strdup(v) : NULL;
	return *v && !*f ? -ENOMEM : 0;
}

int cfg_bool(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	if (unit_bool_parse(v, field) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a boolean");
	return 0;
}

int cfg_secs(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	if (unit_timespan_parse(v, 1000000, field) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a time span");
	return 0;
}

/* Space-separated words appended; an empty value empties the list. */
int cfg_words(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	struct unit_strv *l = field;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	char *copy = strdup(v), *save = NULL;
	int r = copy ? 0 : -ENOMEM;
	for (char *w = copy ? strtok_r(copy, " \t", &save) : NULL; w && r >= 0;
	     w = strtok_r(NULL, " \t", &save))
		if (!unit_strv_contains(l, w))
			r = unit_strv_push(l, w);
	free(copy);
	if (r == -E2BIG)
		err_set(err, r, ERR_INVALID_ARGUMENT, "more than %d entries", UNIT_LIST_MAX);
	return r;
}

/* The whole value as one list entry (paths with '-' kept). */
int cfg_line(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d, (void)err;
	struct unit_strv *l = field;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	return unit_strv_push(l, v);
}

static int cfg_names(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char *copy = strdup(v), *save = NULL;
	if (!copy)
		return -ENOMEM;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		if (!unit_name_valid(w)) {
			err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "\"%.64s\" is not a unit name",
			        w);
			free(copy);
			return -EINVAL;
		}
	free(copy);
	return cfg_words(d, field, v, err);
}

int cfg_signal(const char *v, int *ret)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"KILL", SIGKILL},
	            {"TERM", SIGTERM}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},   {"ABRT", SIGABRT},
	            {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"WINCH", SIGWINCH}, {"PIPE", SIGPIPE},
	            {"ALRM", SIGALRM}, {"SEGV", SIGSEGV}, {"BUS", SIGBUS},     {"FPE", SIGFPE},
	            {"ILL", SIGILL},   {"SYS", SIGSYS},   {"TRAP", SIGTRAP},   {"PWR", SIGPWR}};
	uint32_t n;
	if (str_to_u32(v, &n) == 0 && n >= 1 && n <= 64)
		return *ret = (int)n, 0;
	if (str_startswith(v, "SIG"))
		v += 3;
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		if (strcmp(v, sigs[i].name) == 0)
			return *ret = sigs[i].sig, 0;
	if (str_startswith(v, "RTMIN+") && str_to_u32(v + 6, &n) == 0 &&
	    SIGRTMIN + (int)n <= SIGRTMAX)
		return *ret = SIGRTMIN + (int)n, 0;
	return -EINVAL;
}

static int cfg_sig(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	if (cfg_signal(v, field) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a signal");
	return 0;
}

static int cfg_exit_set(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	struct unit_exit_set *s = field;
	if (!*v) {
		memset(s, 0, sizeof(*s));
		return 0;
	}
	char copy[1024], *save = NULL;
	if (str_copy(copy, sizeof(copy), v) < 0)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "too long");
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		uint32_t code;
		int sig;
		if (str_to_u32(w, &code) == 0 && code <= 255) {
			if (s->ncodes < UNIT_SUCCESS_MAX)
				s->codes[s->ncodes++] = (int)code;
		} else if (cfg_signal(w, &sig) == 0) {
			if (s->nsignals < UNIT_SUCCESS_MAX)
				s->signals[s->nsignals++] = sig;
		} else {
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "\"%.32s\" is neither an exit status nor a signal", w);
		}
	}
	return 0;
}

static int cfg_cmds(struct unit_def *d, void *field, const char *v, struct err *err)
{
	struct unit_cmds *l = field;
	if (!*v) {
		unit_cmds_clear(l);
		return 0;
	}
	/* specifiers were expanded by unit_def_apply already */
	(void)d;
	return unit_cmd_parse(v, NULL, l, err);
}

#define ENUM(fn, type, ...)                                                                        \
	static int fn(struct unit_def *d, void *field, const char *v, struct err *err)             \
	{                                                                                          \
		static const char *const names[] = {__VA_ARGS__};                                  \
		(void)d;                                                                           \
		for (size_t i = 0; i < ARRAY_SIZE(names); i++)                                     \
			if (names[i] && strcmp(v, names[i]) == 0)                                  \
				return *(type *)field = (type)i, 0;                                \
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not one of its values");       \
	}
ENUM(cfg_svc_type, enum unit_service_type, "simple", "exec", "forking", "oneshot", "notify", "idle",
     "dbus")
ENUM(cfg_restart, enum unit_restart, "no", "always", "on-success", "on-failure", "on-abnormal",
     "on-abort", "on-watchdog")
ENUM(cfg_kill_mode, enum unit_kill_mode, "control-group", "mixed", "process", "none")
ENUM(cfg_notify_access, enum unit_notify_access, "none", "main", "exec", "all")

static int cfg_start_limit_burst(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	uint32_t n;
	if (str_to_u32(v, &n) < 0 || n > 1000000)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a count");
	*(unsigned *)field = n;
	return 0;
}

static int cfg_timeout_both(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	uint64_t us;
	if (unit_timespan_parse(v, 1000000, &us) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a time span");
	d->service.timeout_start_us = d->service.timeout_stop_us = us ? us : UNIT_INFINITY;
	return 0;
}

static int cfg_pid_file(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char buf[512];
	if (*v != '/') { /* relative: below /run */
		if (snprintf(buf, sizeof(buf), "/run/%s", v) >= (int)sizeof(buf))
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "too long");
		v = buf;
	}
	return cfg_str(d, field, v, err);
}

static const struct cfg_directive unit_table[] = {
    {"Description", cfg_str, offsetof(struct unit_def, description)},
    {"Documentation", cfg_words, offsetof(struct unit_def, documentation)},
#define DEP(key, k)                                                                                \
	{                                                                                          \
		key, cfg_names, offsetof(struct unit_def, deps) + (k) * sizeof(struct unit_strv)   \
	}
    DEP("Wants", UNIT_DEP_WANTS),
    DEP("Requires", UNIT_DEP_REQUIRES),
    DEP("Requisite", UNIT_DEP_REQUISITE),
    DEP("BindsTo", UNIT_DEP_BINDS_TO),
    DEP("PartOf", UNIT_DEP_PART_OF),
    DEP("Conflicts", UNIT_DEP_CONFLICTS),
    DEP("Before", UNIT_DEP_BEFORE),
    DEP("After", UNIT_DEP_AFTER),
    DEP("OnFailure", UNIT_DEP_ON_FAILURE),
    DEP("Upholds", UNIT_DEP_UPHOLDS),
#undef DEP
    {"RequiresMountsFor", cfg_words, offsetof(struct unit_def, requires_mounts_for)},
    {"DefaultDependencies", cfg_bool, offsetof(struct unit_def, default_dependencies)},
    {"RefuseManualStart", cfg_bool, offsetof(struct unit_def, refuse_manual_start)},
    {"RefuseManualStop", cfg_bool, offsetof(struct unit_def, refuse_manual_stop)},
    {"StopWhenUnneeded", cfg_bool, offsetof(struct unit_def, stop_when_unneeded)},
    {"AllowIsolate", cfg_bool, offsetof(struct unit_def, allow_isolate)},
    {"IgnoreOnIsolate", cfg_bool, offsetof(struct unit_def, ignore_on_isolate)},
    {"StartLimitIntervalSec", cfg_secs, offsetof(struct unit_def, start_limit_interval_us)},
    {"StartLimitInterval", cfg_secs, offsetof(struct unit_def, start_limit_interval_us)},
    {"StartLimitBurst", cfg_start_limit_burst, offsetof(struct unit_def, start_limit_burst)},
    {"JobTimeoutSec", cfg_secs, offsetof(struct unit_def, job_timeout_us)},
    {NULL, NULL, 0},
};

#define SVC(f) offsetof(struct unit_def, service.f)
static const struct cfg_directive service_table[] = {
    {"Type", cfg_svc_type, SVC(type)},
    {"RemainAfterExit", cfg_bool, SVC(remain_after_exit)},
    {"GuessMainPID", cfg_bool, SVC(guess_main_pid)},
    {"PIDFile", cfg_pid_file, SVC(pid_file)},
    {"BusName", cfg_str, SVC(bus_name)},
    {"ExecStartPre", cfg_cmds, SVC(exec_start_pre)},
    {"ExecStart", cfg_cmds, SVC(exec_start)},
    {"ExecStartPost", cfg_cmds, SVC(exec_start_post)},
    {"ExecReload", cfg_cmds, SVC(exec_reload)},
    {"ExecStop", cfg_cmds, SVC(exec_stop)},
    {"ExecStopPost", cfg_cmds, SVC(exec_stop_post)},
    {"ExecCondition", cfg_cmds, SVC(exec_condition)},
    {"Restart", cfg_restart, SVC(restart)},
    {"RestartSec", cfg_secs, SVC(restart_us)},
    {"SuccessExitStatus", cfg_exit_set, SVC(success_exit_status)},
    {"RestartPreventExitStatus", cfg_exit_set, SVC(restart_prevent)},
    {"RestartForceExitStatus", cfg_exit_set, SVC(restart_force)},
    {"TimeoutSec", cfg_timeout_both, 0},
    {"TimeoutStartSec", cfg_secs, SVC(timeout_start_us)},
    {"TimeoutStopSec", cfg_secs, SVC(timeout_stop_us)},
    {"TimeoutAbortSec", cfg_secs, SVC(timeout_abort_us)},
    {"RuntimeMaxSec", cfg_secs, SVC(runtime_max_us)},
    {"WatchdogSec", cfg_secs, SVC(watchdog_us)},
    {"KillMode", cfg_kill_mode, SVC(kill_mode)},
    {"KillSignal", cfg_sig, SVC(kill_signal)},
    {"RestartKillSignal", cfg_sig, SVC(restart_kill_signal)},
    {"FinalKillSignal", cfg_sig, SVC(final_kill_signal)},
    {"SendSIGKILL", cfg_bool, SVC(send_sigkill)},
    {"SendSIGHUP", cfg_bool, SVC(send_sighup)},
    {"NotifyAccess", cfg_notify_access, SVC(notify_access)},
    {"Sockets", cfg_names, SVC(sockets)},
    {"FileDescriptorStoreMax", NULL, 0},
    {"NonBlocking", cfg_bool, SVC(non_blocking)},
    {"StartLimitInterval", cfg_secs, offsetof(struct unit_def, start_limit_interval_us)},
    {"StartLimitBurst", cfg_start_limit_burst, offsetof(struct unit_def, start_limit_burst)},
    {NULL, NULL, 0},
};
#undef SVC

/* Directives kin knows and does not act on: reported once as ignored, not
 * as unknown (the long tail of sandboxing and of systemd's own features). */
static const char *const known_ignored[] = {
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "MemoryDenyWriteExecute",
    "LockPersonality",
    "RestrictRealtime",
    "RestrictSUIDSGID",
    "RestrictNamespaces",
    "RemoveIPC",
    "PrivateUsers",
    "PrivateMounts",
    "PrivateIPC",
    "SystemCallArchitectures",
    "DevicePolicy",
    "DeviceAllow",
    "IPAddressDeny",
    "IPAddressAllow",
    "KeyringMode",
    "ProcSubset",
    "UtmpIdentifier",
    "UtmpMode",
    "IgnoreSIGPIPE",
    "OOMPolicy",
    "ReceiveBuffer",
    "SendBuffer",
    "Slice",
    "CollectMode",
    "SourcePath",
    "StartLimitAction",
    "FailureAction",
    "SuccessAction",
    "JobTimeoutAction",
    "OnFailureJobMode",
    "ReloadPropagatedFrom",
    "PropagatesReloadTo",
    "JoinsNamespaceOf",
    "LogsDirectoryMode",
    "LogRateLimitIntervalSec",
    "LogRateLimitBurst",
    "LogLevelMax",
    "LogExtraFields",
    "SyslogFacility",
    "SyslogLevel",
    "SyslogLevelPrefix",
    "CPUSchedulingPolicy",
    "CPUSchedulingPriority",
    "IOSchedulingClass",
    "IOSchedulingPriority",
    "CPUAffinity",
    "PAMName",
    "BindPaths",
    "BindReadOnlyPaths",
    "TemporaryFileSystem",
    "ProtectProc",
    "RestrictFileSystems",
    "NUMAPolicy",
    "SecureBits",
    "Personality",
    "TimerSlackNSec",
    "MountFlags",
    "CoredumpFilter",
    "ManagedOOMSwap",
    "ManagedOOMMemoryPressure",
    "StartupCPUWeight",
    "StartupIOWeight",
    "ConditionFirmware",
    "ConditionMemory",
    "ConditionCPUs",
    "FileDescriptorStoreMax",
    "WatchdogSignal",
    "USBFunctionDescriptors",
    "RuntimeRandomizedExtraSec",
    "ExitType",
    "DefaultMemoryLow",
    "DefaultMemoryMin",
    NULL,
};

static bool is_known_ignored(const char *key)
{
	for (size_t i = 0; known_ignored[i]; i++)
		if (strcmp(known_ignored[i], key) == 0)
			return true;
	return false;
}

static const struct cfg_directive *find(const struct cfg_directive *t, const char *key)
{
	for (; t && t->key; t++)
		if (strcmp(t->key, key) == 0)
			return t;
	return NULL;
}

/* The values systemd does not expand specifiers in. */
static bool expands(const char *section, const char *key)
{
	(void)section;
	return !str_startswith(key, "Exec");
}

/* ExecStart= & co.: specifiers are expanded inside the command parser
 * (words first is wrong: %I may hold blanks that must stay one word). */
static bool is_exec(const char *key)
{
	return str_startswith(key, "Exec");
}

int unit_def_apply(struct unit_def *d, const struct unit_assign *a, const struct unit_spec_ctx *ctx,
                   unit_diag_fn diag, void *data)
{
	const struct cfg_directive *dir = NULL;
	const char *s = a->section, *k = a->key;
	bool in_exec_section = !strcmp(s, "Service") || !strcmp(s, "Socket");
	if (!strcmp(s, "Unit")) {
		dir = find(unit_table, k);
		if (!dir && (str_startswith(k, "Condition") || str_startswith(k, "Assert")))
			return cfg_condition(d, a, ctx, diag, data);
	} else if (!strcmp(s, "Service")) {
		dir = find(service_table, k);
	} else if (!strcmp(s, "Install")) {
		dir = find(cfg_install_table, k);
	} else if (!strcmp(s, "Socket")) {
		dir = find(cfg_socket_table, k);
	} else if (!strcmp(s, "Timer")) {
		dir = find(cfg_timer_table, k);
	}
	struct cfg_directive tmp;
	if (!dir && in_exec_section) {
		dir = find(cfg_exec_table, k);
		if (!dir)
			dir = find(cfg_res_table, k);
		if (!dir && str_startswith(k, "Limit"))
			dir = cfg_rlimit_find(k, &tmp);
	}
	if (!dir && !strcmp(s, "Slice"))
		dir = find(cfg_res_table, k);
	if (!dir || !dir->parse) {
		bool ignored = (dir && !dir->parse) || is_known_ignored(k);
		d->ignored++;
		if (diag)
			diag(data, a->file, a->line, "%s: [%s] %s= is %s; ignored", d->name.full, s,
			     k, ignored ? "not acted on by kin" : "unknown");
		return 0;
	}
	char *expanded = NULL;
	const char *v = a->value;
	struct err err = {0};
	int r = 0;
	if (is_exec(k)) {
		if (*v) {
			struct unit_cmds *l = (struct unit_cmds *)((char *)d + dir->offset);
			r = unit_cmd_parse(v, ctx, l, &err);
		} else {
			r = dir->parse(d, (char *)d + dir->offset, v, &err);
		}
	} else {
		if (ctx && expands(s, k) && strchr(v, '%')) {
			r = unit_specifiers_expand(v, ctx, &expanded, &err);
			v = expanded;
		}
		if (r >= 0)
			r = dir->parse(d, (char *)d + dir->offset, v, &err);
	}
	free(expanded);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		d->ignored++;
		if (diag)
			diag(data, a->file, a->line, "%s: %s=%.80s: %s; ignored", d->name.full, k,
			     a->value, err.msg[0] ? err.msg : strerror(-r));
	}
	return 0;
}

int unit_def_new(const struct unit_name *name, struct unit_def **ret)
{
	struct unit_def *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->name = *name;
	d->name.instance = name->instance ? d->name.instance_buf : NULL;
	if (name->instance)
		str_copy(d->name.instance_buf, sizeof(d->name.instance_buf), name->instance);
	d->default_dependencies = true;
	d->start_limit_interval_us = 10000000;
	d->start_limit_burst = 5;
	struct unit_service *c = &d->service;
	c->type = UNIT_SVC_SIMPLE;
	c->guess_main_pid = true;
	c->restart_us = 100000;
	c->timeout_start_us = c->timeout_stop_us = 90000000;
	c->kill_mode = UNIT_KILL_CONTROL_GROUP;
	c->kill_signal = SIGTERM;
	c->final_kill_signal = SIGKILL;
	c->send_sigkill = true;
	d->socket.socket_mode = 0666;
	d->socket.directory_mode = 0755;
	d->socket.bind_ipv6_only = -1;
	d->timer.remain_after_elapse = true;
	for (int i = 0; i < UNIT_DIR_KIND_COUNT; i++)
		d->exec.dir_modes[i] = 0755;
	*ret = d;
	return 0;
}

void unit_def_free(struct unit_def *d)
{
	if (!d)
		return;
	free(d->source.fragment);
	unit_strv_clear(&d->source.dropins);
	unit_strv_clear(&d->source.aliases);
	free(d->description);
	unit_strv_clear(&d->documentation);
	for (int k = 0; k < UNIT_DEP_COUNT; k++)
		unit_strv_clear(&d->deps[k]);
	unit_strv_clear(&d->requires_mounts_for);
	for (size_t i = 0; i < d->nconds; i++)
		free(d->conds[i].arg);
	cfg_exec_free(&d->exec);
	struct unit_service *c = &d->service;
	free(c->pid_file);
	free(c->bus_name);
	free(c->file_descriptor_store);
	struct unit_cmds *cmds[] = {&c->exec_start_pre, &c->exec_start, &c->exec_start_post,
	                            &c->exec_reload,    &c->exec_stop,  &c->exec_stop_post,
	                            &c->exec_condition};
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		unit_cmds_clear(cmds[i]);
	unit_strv_clear(&c->sockets);
	cfg_more_free(d);
	unit_strv_clear(&d->wants_dir);
	unit_strv_clear(&d->requires_dir);
	free(d);
}
