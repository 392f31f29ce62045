/* config_svc: the [Service], [Socket] and [Timer] directives
 * (systemd.service(5), systemd.kill(5), systemd.socket(5),
 * systemd.timer(5)) into struct unit_service, unit_socket and unit_timer. */
#include "units/config-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cfg_exec_free(struct unit_exec *e);
void cfg_service_free(struct unit_def *d);

void cfg_service_free(struct unit_def *d)
{
	struct unit_service *s = &d->service;
	free(s->pid_file);
	free(s->bus_name);
	struct unit_cmds *cmds[] = {&s->exec_start_pre, &s->exec_start, &s->exec_start_post,
	                            &s->exec_reload,    &s->exec_stop,  &s->exec_stop_post,
	                            &s->exec_condition};
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		unit_cmds_clear(cmds[i]);
	unit_strv_clear(&s->sockets);
	free(s->file_descriptor_store);
	for (size_t i = 0; i < d->socket.nlisten; i++)
		free(d->socket.listen[i].address);
	free(d->socket.socket_user);
	free(d->socket.socket_group);
	free(d->socket.file_descriptor_name);
	free(d->socket.service);
	for (size_t i = 0; i < d->timer.non_calendar; i++)
		free(d->timer.on_calendar_text[i]);
	free(d->timer.unit);
}

/* A word of an enum directive: the index of v in names, or cfg_bad. */
static int pick(struct cfg *c, const char *v, const char *const *names, size_t n, int *ret)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], v) == 0)
			return *ret = (int)i, 0;
	return cfg_bad(c, "\"%.60s\" is not a value of %s=", v, c->a->key);
}

/* ---- [Service] ------------------------------------------------------------------ */

static int cfg_type(struct cfg *c, const char *v)
{
	static const char *const names[] = {
	    [UNIT_SVC_SIMPLE] = "simple",   [UNIT_SVC_EXEC] = "exec",
	    [UNIT_SVC_FORKING] = "forking", [UNIT_SVC_ONESHOT] = "oneshot",
	    [UNIT_SVC_NOTIFY] = "notify",   [UNIT_SVC_IDLE] = "idle",
	    [UNIT_SVC_DBUS] = "dbus"};
	int t = 0;
	/* notify-reload (systemd 253) is notify with SIGHUP for reload: kin
	 * reloads through ExecReload= only. */
	if (strcmp(v, "notify-reload") == 0)
		v = "notify";
	int r = pick(c, v, names, ARRAY_SIZE(names), &t);
	if (r >= 0)
		c->d->service.type = (enum unit_service_type)t;
	return r;
}

static int cfg_restart(struct cfg *c, const char *v)
{
	static const char *const names[] = {
	    [UNIT_RESTART_NO] = "no",
	    [UNIT_RESTART_ALWAYS] = "always",
	    [UNIT_RESTART_ON_SUCCESS] = "on-success",
	    [UNIT_RESTART_ON_FAILURE] = "on-failure",
	    [UNIT_RESTART_ON_ABNORMAL] = "on-abnormal",
	    [UNIT_RESTART_ON_ABORT] = "on-abort",
	    [UNIT_RESTART_ON_WATCHDOG] = "on-watchdog",
	};
	int t = 0;
	int r = pick(c, v, names, ARRAY_SIZE(names), &t);
	if (r >= 0)
		c->d->service.restart = (enum unit_restart)t;
	return r;
}

static int cfg_kill_mode(struct cfg *c, const char *v)
{
	static const char *const names[] = {[UNIT_KILL_CONTROL_GROUP] = "control-group",
	                                    [UNIT_KILL_MIXED] = "mixed",
	                                    [UNIT_KILL_PROCESS] = "process",
	                                    [UNIT_KILL_NONE] = "none"};
	int t = 0;
	int r = pick(c, v, names, ARRAY_SIZE(names), &t);
	if (r >= 0)
		c->d->service.kill_mode = (enum unit_kill_mode)t;
	return r;
}

static int cfg_notify_access(struct cfg *c, const char *v)
{
	static const char *const names[] = {[UNIT_NOTIFY_NONE] = "none",
	                                    [UNIT_NOTIFY_MAIN] = "main",
	                                    [UNIT_NOTIFY_EXEC] = "exec",
	                                    [UNIT_NOTIFY_ALL] = "all"};
	int t = 0;
	int r = pick(c, v, names, ARRAY_SIZE(names), &t);
	if (r >= 0)
		c->d->service.notify_access = (enum unit_notify_access)t;
	return r;
}

/* PIDFile=: a relative path is below /run, /var/run/ is /run/ (systemd
 * rewrites the legacy directory as well). */
static int cfg_pid_file(struct cfg *c, const char *v)
{
	char buf[PATH_MAX];
	if (!*v)
		return cfg_string(c, v);
	if (str_startswith(v, "/var/run/"))
		v += STRLEN("/var");
	int n = snprintf(buf, sizeof(buf), "%s%s", *v == '/' ? "" : "/run/", v);
	if (n < 0 || (size_t)n >= sizeof(buf) || strstr(buf, "/../"))
		return cfg_bad(c, "\"%.60s\" is not a PID file path", v);
	return cfg_string(c, buf);
}

/* Exec*=: the value's commands appended whole or not at all. */
static int cfg_cmds(struct cfg *c, const char *v)
{
	struct unit_cmds *l = CFG_FIELD(c, struct unit_cmds);
	if (!*v) {
		unit_cmds_clear(l);
		return 0;
	}
	struct unit_cmds add = {0};
	struct err e = {0};
	int r = unit_cmd_parse(v, c->ctx, &add, &e);
	if (r >= 0 && l->n + add.n > UNIT_CMDS_MAX)
		r = -E2BIG;
	struct unit_cmd *nv = NULL;
	if (r >= 0 && add.n && !(nv = realloc(l->v, (l->n + add.n) * sizeof(*nv))))
		r = -ENOMEM;
	if (r < 0) {
		unit_cmds_clear(&add);
		if (r == -ENOMEM || r == -E2BIG)
			return r;
		return cfg_bad(c, "%s", e.msg[0] ? e.msg : "not a command line");
	}
	if (add.n) {
		memcpy(nv + l->n, add.v, add.n * sizeof(*nv));
		l->v = nv;
		l->n += add.n;
	}
	free(add.v);
	return 0;
}

/* SuccessExitStatus= & co.: exit codes 0..255 and signal names; "" resets. */
static int cfg_exit_set(struct cfg *c, const char *v)
{
	struct unit_exit_set *s = CFG_FIELD(c, struct unit_exit_set);
	char w[64];
	int r;
	if (!*v) {
		*s = (struct unit_exit_set){0};
		return 0;
	}
	while ((r = cfg_word(&v, w, sizeof(w))) != 0) {
		uint32_t code;
		int sig = -EINVAL;
		if (r > 0 && str_to_u32(w, &code) == 0 && code <= 255) {
			if (s->ncodes >= UNIT_SUCCESS_MAX)
				return -E2BIG;
			s->codes[s->ncodes++] = (int)code;
		} else if (r > 0 && (sig = cfg_signal_parse(w)) > 0) {
			if (s->nsignals >= UNIT_SUCCESS_MAX)
				return -E2BIG;
			s->signals[s->nsignals++] = sig;
		} else {
			cfg_word_bad(c, "\"%.60s\" is not an exit status or a signal",
			             r < 0 ? "(too long)" : w);
		}
	}
	return 0;
}

static int cfg_timeout_both(struct cfg *c, const char *v)
{
	uint64_t us;
	if (unit_timespan_parse(v, 1000000, &us) < 0)
		return cfg_bad(c, "\"%.60s\" is not a time span", v);
	c->d->service.timeout_start_us = c->d->service.timeout_stop_us = us ? us : UNIT_INFINITY;
	return 0;
}

/* A span where 0 and infinity both mean none (RuntimeMaxSec=, WatchdogSec=). */
static int cfg_span_none(struct cfg *c, const char *v)
{
	uint64_t us;
	if (unit_timespan_parse(v, 1000000, &us) < 0)
		return cfg_bad(c, "\"%.60s\" is not a time span", v);
	*CFG_FIELD(c, uint64_t) = us == UNIT_INFINITY ? 0 : us;
	return 0;
}

/* ---- [Socket] ------------------------------------------------------------------- */

/* Listen*=: one address per line, as given (the socket unit reads it);
 * an empty value drops every earlier one. */
static int cfg_listen(struct cfg *c, const char *v)
{
	struct unit_socket *s = &c->d->socket;
	if (!*v) {
		for (size_t i = 0; i < s->nlisten; i++)
			free(s->listen[i].address);
		s->nlisten = 0;
		return 0;
	}
	enum unit_listen_type type = (enum unit_listen_type)c->dir->arg;
	if (strpbrk(v, " \t") && v[0] != '@')
		return cfg_bad(c, "\"%.60s\" is not one address", v);
	if (type == UNIT_LISTEN_FIFO && v[0] != '/')
		return cfg_bad(c, "\"%.60s\" is not an absolute path", v);
	if (s->nlisten >= UNIT_LISTENS_MAX)
		return -E2BIG;
	char *a = strdup(v);
	if (!a)
		return -ENOMEM;
	s->listen[s->nlisten++] = (struct unit_listen){.type = type, .address = a};
	return 0;
}

static int cfg_bind_ipv6_only(struct cfg *c, const char *v)
{
	static const char *const names[] = {"both", "ipv6-only", "default"};
	int t = 0;
	int r = pick(c, v, names, ARRAY_SIZE(names), &t);
	if (r >= 0)
		c->d->socket.bind_ipv6_only = t == 2 ? -1 : t;
	return r;
}

/* FileDescriptorName=: what LISTEN_FDNAMES carries, ':'-joined there. */
static int cfg_fd_name(struct cfg *c, const char *v)
{
	if (strlen(v) > 255 || strchr(v, ':'))
		return cfg_bad(c, "\"%.60s\" is not a file descriptor name", v);
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return cfg_bad(c, "a control character in the name");
	return cfg_string(c, v);
}

/* A unit name directive of one name (Service=, Unit=); arg: the type it
 * must be, UNIT_TYPE_INVALID any but the unit's own type. */
static int cfg_one_unit(struct cfg *c, const char *v)
{
	enum unit_type t = unit_type_from_suffix(v);
	if (*v && !unit_name_valid(v))
		return cfg_bad(c, "\"%.60s\" is not a unit name", v);
	if (*v && c->dir->arg != UNIT_TYPE_INVALID && t != (enum unit_type)c->dir->arg)
		return cfg_bad(c, "\"%.60s\" is not a .%s unit", v,
		               unit_type_name((enum unit_type)c->dir->arg));
	if (*v && t == c->d->name.type)
		return cfg_bad(c, "\"%.60s\" is a unit of the same type", v);
	return cfg_string(c, v);
}

/* ---- [Timer] -------------------------------------------------------------------- */

static int cfg_calendar(struct cfg *c, const char *v)
{
	struct unit_timer *t = &c->d->timer;
	if (!*v) {
		for (size_t i = 0; i < t->non_calendar; i++)
			free(t->on_calendar_text[i]);
		t->non_calendar = 0;
		return 0;
	}
	struct unit_calendar cal;
	struct err e = {0};
	if (unit_calendar_parse(v, &cal, &e) < 0)
		return cfg_bad(c, "%s", e.msg[0] ? e.msg : "not a calendar spec");
	if (t->non_calendar >= UNIT_CALENDARS_MAX)
		return -E2BIG;
	char *text = strdup(v);
	if (!text)
		return -ENOMEM;
	t->on_calendar[t->non_calendar] = cal;
	t->on_calendar_text[t->non_calendar++] = text;
	return 0;
}

/* On*Sec=: kin keeps one of each (the last); "" drops it. */
static int cfg_timer_span(struct cfg *c, const char *v)
{
	if (!*v) {
		*CFG_FIELD(c, uint64_t) = 0;
		return 0;
	}
	return cfg_timespan(c, v);
}

#define SVC(key, fn, field, flags)                                                                 \
	{                                                                                          \
		key, CFG_SERVICE, fn, CFG_OFF(service.field), 0, flags                             \
	}
#define KILL(key, fn, field)                                                                       \
	{                                                                                          \
		key, CFG_SERVICE | CFG_SOCKET, fn, CFG_OFF(service.field), 0, 0                    \
	}
#define SOCK(key, fn, field, flags)                                                                \
	{                                                                                          \
		key, CFG_SOCKET, fn, CFG_OFF(socket.field), 0, flags                               \
	}
#define TIMER(key, fn, field)                                                                      \
	{                                                                                          \
		key, CFG_TIMER, fn, CFG_OFF(timer.field), 0, 0                                     \
	}

const struct cfg_directive cfg_service_table[] = {
    {"Type", CFG_SERVICE, cfg_type, 0, 0, 0},
    SVC("RemainAfterExit", cfg_bool, remain_after_exit, 0),
    SVC("GuessMainPID", cfg_bool, guess_main_pid, 0),
    SVC("PIDFile", cfg_pid_file, pid_file, CFG_SPEC),
    SVC("BusName", cfg_string, bus_name, CFG_SPEC),
    SVC("ExecCondition", cfg_cmds, exec_condition, 0),
    SVC("ExecStartPre", cfg_cmds, exec_start_pre, 0),
    SVC("ExecStart", cfg_cmds, exec_start, 0),
    SVC("ExecStartPost", cfg_cmds, exec_start_post, 0),
    SVC("ExecReload", cfg_cmds, exec_reload, 0),
    SVC("ExecStop", cfg_cmds, exec_stop, 0),
    SVC("ExecStopPost", cfg_cmds, exec_stop_post, 0),
    {"Restart", CFG_SERVICE, cfg_restart, 0, 0, 0},
    SVC("RestartSec", cfg_timespan, restart_us, 0),
    SVC("SuccessExitStatus", cfg_exit_set, success_exit_status, 0),
    SVC("RestartPreventExitStatus", cfg_exit_set, restart_prevent, 0),
    SVC("RestartForceExitStatus", cfg_exit_set, restart_force, 0),
    {"TimeoutSec", CFG_SERVICE, cfg_timeout_both, 0, 0, 0},
    SVC("TimeoutStartSec", cfg_timeout, timeout_start_us, 0),
    SVC("TimeoutStopSec", cfg_timeout, timeout_stop_us, 0),
    SVC("TimeoutAbortSec", cfg_timeout, timeout_abort_us, 0),
    SVC("RuntimeMaxSec", cfg_span_none, runtime_max_us, 0),
    SVC("WatchdogSec", cfg_span_none, watchdog_us, 0),
    {"KillMode", CFG_SERVICE | CFG_SOCKET, cfg_kill_mode, 0, 0, 0},
    KILL("KillSignal", cfg_signal, kill_signal),
    KILL("RestartKillSignal", cfg_signal, restart_kill_signal),
    KILL("FinalKillSignal", cfg_signal, final_kill_signal),
    KILL("SendSIGKILL", cfg_bool, send_sigkill),
    KILL("SendSIGHUP", cfg_bool, send_sighup),
    {"NotifyAccess", CFG_SERVICE, cfg_notify_access, 0, 0, 0},
    {"Sockets", CFG_SERVICE, cfg_unit_names, CFG_OFF(service.sockets), 1, CFG_SPEC},
    SVC("FileDescriptorStoreMax", cfg_string, file_descriptor_store, 0),
    SVC("NonBlocking", cfg_bool, non_blocking, 0),
    /* [Socket] */
    {"ListenStream", CFG_SOCKET, cfg_listen, 0, UNIT_LISTEN_STREAM, CFG_SPEC},
    {"ListenDatagram", CFG_SOCKET, cfg_listen, 0, UNIT_LISTEN_DATAGRAM, CFG_SPEC},
    {"ListenSequentialPacket", CFG_SOCKET, cfg_listen, 0, UNIT_LISTEN_SEQPACKET, CFG_SPEC},
    {"ListenFIFO", CFG_SOCKET, cfg_listen, 0, UNIT_LISTEN_FIFO, CFG_SPEC},
    SOCK("Accept", cfg_bool, accept, 0),
    SOCK("SocketMode", cfg_mode, socket_mode, 0),
    SOCK("DirectoryMode", cfg_mode, directory_mode, 0),
    SOCK("SocketUser", cfg_string, socket_user, CFG_SPEC),
    SOCK("SocketGroup", cfg_string, socket_group, CFG_SPEC),
    SOCK("FileDescriptorName", cfg_fd_name, file_descriptor_name, CFG_SPEC),
    {"Service", CFG_SOCKET, cfg_one_unit, CFG_OFF(socket.service), UNIT_SERVICE, CFG_SPEC},
    SOCK("Backlog", cfg_u32, backlog, 0),
    SOCK("PassCredentials", cfg_bool, pass_credentials, 0),
    SOCK("PassSecurity", cfg_bool, pass_security, 0),
    SOCK("RemoveOnStop", cfg_bool, remove_on_stop, 0),
    SOCK("ReusePort", cfg_bool, reuse_port, 0),
    SOCK("FreeBind", cfg_bool, free_bind, 0),
    {"BindIPv6Only", CFG_SOCKET, cfg_bind_ipv6_only, 0, 0, 0},
    SOCK("MaxConnections", cfg_u32, max_connections, 0),
    /* [Timer] */
    {"OnCalendar", CFG_TIMER, cfg_calendar, 0, 0, CFG_SPEC},
    TIMER("OnBootSec", cfg_timer_span, on_boot_us),
    TIMER("OnStartupSec", cfg_timer_span, on_startup_us),
    TIMER("OnActiveSec", cfg_timer_span, on_active_us),
    TIMER("OnUnitActiveSec", cfg_timer_span, on_unit_active_us),
    TIMER("OnUnitInactiveSec", cfg_timer_span, on_unit_inactive_us),
    TIMER("Persistent", cfg_bool, persistent),
    TIMER("RandomizedDelaySec", cfg_timespan, randomized_delay_us),
    TIMER("AccuracySec", cfg_timespan, accuracy_us),
    TIMER("WakeSystem", cfg_bool, wake_system),
    TIMER("RemainAfterElapse", cfg_bool, remain_after_elapse),
    {"Unit", CFG_TIMER, cfg_one_unit, CFG_OFF(timer.unit), UNIT_TYPE_INVALID, CFG_SPEC},
    {NULL, 0, NULL, 0, 0, 0},
};
