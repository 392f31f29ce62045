/* service_ops: a service as the manager sees it — the unit ops (start,
 * stop, reload, status), its cell, its socket, its state across a re-exec
 * or an adoption, and sd_notify. */
#include "units/service-int.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* ---- the ops ------------------------------------------------------------------ */

static struct svc *svc_get(struct unit *u)
{
	struct svc *s = u->type_data;
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->u = u;
	s->t_deadline = (struct ev_source){.fd = -1, .fn = service_on_deadline, .data = s};
	s->t_poll = (struct ev_source){.fd = -1, .fn = service_on_poll, .data = s};
	s->t_watchdog = (struct ev_source){.fd = -1, .fn = service_on_watchdog, .data = s};
	s->main_src.fd = -1;
	if (unit_cell_path(u, s->cell, sizeof(s->cell)) < 0) {
		free(s);
		return NULL;
	}
	u->type_data = s;
	return s;
}

static bool rate_limited(struct unit *u)
{
	uint64_t now = now_monotonic_ns() / 1000;
	unsigned burst = u->def->start_limit_burst;
	uint64_t interval = u->def->start_limit_interval_us;
	if (!burst || !interval)
		return false;
	unsigned recent = 0;
	unsigned n = u->nstarts < ARRAY_SIZE(u->starts) ? u->nstarts : ARRAY_SIZE(u->starts);
	for (unsigned i = 0; i < n; i++)
		if (now - u->starts[i] < interval)
			recent++;
	if (recent >= burst)
		return true;
	u->starts[u->nstarts++ % ARRAY_SIZE(u->starts)] = now;
	return false;
}

/* The cell with the limits the unit asks for that this kernel has. */
static int make_cell(struct svc *s, struct err *err)
{
	struct units *m = s->u->m;
	const struct unit_resources *res = &s->u->def->res;
	struct cell_limits l = {0};
	int r = cell_create(m->cells, s->cell, NULL, err);
	if (r < 0 && r != -EEXIST)
		return r;
	err_clear(err);
	if (s->u->def->res.delegate) { /* the subtree is the service's to manage */
		char dir[PATH_MAX];
		if ((r = cells_cgroup_dir(m->cells, s->cell, dir, sizeof(dir))) < 0 ||
		    (r = unit_delegate_chown(s->u->def, m->root, dir, err)) < 0)
			return r;
	}
	static const struct {
		enum unit_resource ur;
		enum cell_limit cl;
	} map[] = {{UNIT_RES_MEMORY_MIN, CELL_MEMORY_MIN},
	           {UNIT_RES_MEMORY_LOW, CELL_MEMORY_LOW},
	           {UNIT_RES_MEMORY_HIGH, CELL_MEMORY_HIGH},
	           {UNIT_RES_MEMORY_MAX, CELL_MEMORY_MAX},
	           {UNIT_RES_MEMORY_SWAP_MAX, CELL_MEMORY_SWAP_MAX},
	           {UNIT_RES_CPU_WEIGHT, CELL_CPU_WEIGHT},
	           {UNIT_RES_IO_WEIGHT, CELL_IO_WEIGHT},
	           {UNIT_RES_TASKS_MAX, CELL_PIDS_MAX},
	           {UNIT_RES_CPU_QUOTA, CELL_CPU_MAX},
	           {UNIT_RES_ALLOWED_CPUS, CELL_CPUSET_CPUS},
	           {UNIT_RES_ALLOWED_MEMS, CELL_CPUSET_MEMS}};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (res->set & (1u << map[i].ur))
			l.set |= 1u << map[i].cl;
	if (!l.set)
		return 0;
	l.memory_min = res->memory_min, l.memory_low = res->memory_low;
	l.memory_high = res->memory_high, l.memory_max = res->memory_max;
	l.memory_swap_max = res->memory_swap_max;
	l.cpu_weight = res->cpu_weight, l.io_weight = res->io_weight;
	l.pids_max = res->tasks_max == UNIT_INFINITY ? CELL_UNLIMITED : res->tasks_max;
	l.cpu_period_us = 100000;
	l.cpu_quota_us = res->cpu_quota_per_sec_us / 10; /* per 100 ms */
	if (l.cpu_quota_us < 1000)
		l.cpu_quota_us = 1000;
	str_copy(l.cpuset_cpus, sizeof(l.cpuset_cpus), res->allowed_cpus);
	str_copy(l.cpuset_mems, sizeof(l.cpuset_mems), res->allowed_mems);
	uint32_t missing = 0;
	if (cell_limits_unavailable(m->cells, s->cell, &l, &missing, NULL) == 0 && missing) {
		for (int k = 0; k < CELL_LIMIT_COUNT; k++)
			if (missing & (1u << k))
				log_info("units: %s: %s not applied: this kernel gives kin no %s "
				         "controller",
				         s->u->name, cell_limit_name((enum cell_limit)k),
				         cell_limit_controller((enum cell_limit)k));
		l.set &= ~missing;
	}
	if (l.set && (r = cell_update(m->cells, s->cell, &l, err)) < 0)
		return r;
	return 0;
}

/* The socket unit whose fds this service gets: Sockets=, else the socket
 * of the same name, when it is listening. */
static struct unit *find_socket(struct unit *u)
{
	const struct unit_strv *l = &u->def->service.sockets;
	char name[UNIT_NAME_MAX + 1];
	for (size_t i = 0; i <= l->n; i++) {
		if (i < l->n)
			str_copy(name, sizeof(name), l->v[i]);
		else if (snprintf(name, sizeof(name), "%s.socket", u->def->name.prefix) >=
		         (int)sizeof(name))
			break;
		struct unit *k = units_find(u->m, name);
		const int *fds;
		size_t n;
		const char *names;
		if (k && k->type == UNIT_SOCKET && k->active == UNIT_ACTIVE_ACTIVE &&
		    socket_fds(k, &fds, &n, &names) == 0)
			return k;
	}
	/* a socket whose Service= names this unit (syslog.socket → syslog.service,
	 * rsyslog's alias) */
	for (size_t i = 0; i < u->m->nunits; i++) {
		struct unit *k = u->m->units[i];
		const int *fds;
		size_t n;
		const char *names;
		if (k->type != UNIT_SOCKET || k->active != UNIT_ACTIVE_ACTIVE || !k->def)
			continue;
		unit_triggered_name(k, name, sizeof(name));
		if (name[0] && units_find(u->m, name) == u && socket_fds(k, &fds, &n, &names) == 0)
			return k;
	}
	return NULL;
}

int service_start(struct unit *u, struct err *err)
{
	struct svc *s = svc_get(u);
	struct units *m = u->m;
	if (!s)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	if (!s->socket)
		s->socket = find_socket(u);
	if (s->state == SVC_RUNNING || s->state == SVC_EXITED)
		return 0;
	if (s->state != SVC_DEAD && s->state != SVC_FAILED && s->state != SVC_AUTO_RESTART)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION, "unit \"%s\" is %s", u->name,
		               service_state_names[s->state]);
	service_timer_disarm(&s->t_deadline);
	u->condition[0] = '\0';
	int r = unit_conditions_check(u->def->conds, u->def->nconds, &m->cfg.cond, u->condition,
	                              sizeof(u->condition));
	if (r == 0) {
		log_info("units: %s skipped: %s", u->name, u->condition);
		service_set_state(s, SVC_DEAD);
		return 0;
	}
	if (r < 0) {
		unit_set_result(u, "resources");
		service_set_state(s, SVC_FAILED);
		return err_set(err, -EPERM, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": assertion failed: %s", u->name, u->condition);
	}
	if (rate_limited(u)) {
		unit_set_result(u, "start-limit-hit");
		service_set_state(s, SVC_FAILED);
		return err_set(err, -EAGAIN, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": started too often (StartLimitBurst=%u in %llu s)",
		               u->name, u->def->start_limit_burst,
		               (unsigned long long)(u->def->start_limit_interval_us / 1000000));
	}
	if ((r = make_cell(s, err)) < 0) {
		unit_set_result(u, "resources");
		service_set_state(s, SVC_FAILED);
		return r;
	}
	struct unit_run_ctx ctx;
	service_fill_ctx(s, &ctx, false);
	if ((r = unit_exec_dirs_make(u->def, &ctx, err)) < 0 ||
	    (r = unit_private_tmp_make(u->def, m->root, s->private_tmp, sizeof(s->private_tmp),
	                               err)) < 0) {
		unit_set_result(u, "resources");
		service_set_state(s, SVC_FAILED);
		return r;
	}
	uint8_t id[16];
	if (getrandom(id, sizeof(id), GRND_NONBLOCK) != sizeof(id))
		memset(id, 0, sizeof(id));
	for (size_t i = 0; i < sizeof(id); i++)
		snprintf(s->invocation_id + 2 * i, 3, "%02x", id[i]);
	unit_set_result(u, "success");
	s->exited = false;
	s->waiting_pid_file = false;
	s->watchdog_us = 0;
	s->status_text[0] = '\0';
	service_set_state(s, SVC_START_PRE);
	service_deadline_set(s, u->def->service.timeout_start_us);
	service_run_list(s, &u->def->service.exec_start_pre);
	return 1;
}

static int svc_stop(struct unit *u, struct err *err)
{
	struct svc *s = u->type_data;
	(void)err;
	if (!s)
		return 0;
	switch (s->state) {
	case SVC_DEAD:
	case SVC_FAILED:
		return 0;
	case SVC_AUTO_RESTART:
		service_timer_disarm(&s->t_deadline);
		service_set_state(s, SVC_DEAD);
		return 0;
	case SVC_STOP:
	case SVC_STOP_SIGTERM:
	case SVC_STOP_SIGKILL:
	case SVC_STOP_POST:
		s->stop_requested = true;
		return 1; /* the stop under way ends the job */
	default:
		break;
	}
	s->stop_requested = true;
	if (s->state == SVC_START_PRE || s->state == SVC_START || s->state == SVC_START_POST) {
		s->cmds = NULL;
		unit_set_result(u, "success");
		service_enter_signal(s, false);
		return 1;
	}
	service_enter_stop(s, "success");
	return 1;
}

static int svc_reload(struct unit *u, struct err *err)
{
	struct svc *s = u->type_data;
	if (!s || (s->state != SVC_RUNNING && s->state != SVC_EXITED))
		return err_set(err, -ENOTCONN, ERR_FAILED_PRECONDITION,
		               "unit \"%s\" is not running, cannot reload", u->name);
	service_set_state(s, SVC_RELOAD);
	service_run_list(s, &u->def->service.exec_reload);
	return 1;
}

static void svc_status(struct unit *u, struct unit_status *st)
{
	struct svc *s = u->type_data;
	if (!s)
		return;
	st->main_pid = s->main_pid;
	st->control_pid = s->control_pid;
	st->exited = s->exited;
	st->exit_code = s->exit_code;
	st->exit_signal = s->exit_signal;
	st->restarts = s->restarts;
	str_copy(st->status_text, sizeof(st->status_text), s->status_text);
	if (s->state != SVC_DEAD && s->state != SVC_FAILED)
		str_copy(st->cell, sizeof(st->cell), s->cell);
	struct cell_stats stats;
	if (st->cell[0] && cell_show(u->m->cells, s->cell, NULL, &stats, NULL) == 0) {
		st->has_memory = stats.has_memory;
		st->memory_current = stats.memory_current;
		st->has_tasks = stats.has_pids || stats.procs;
		st->tasks_current = stats.has_pids ? stats.pids_current : stats.procs;
	}
}

static void svc_free(struct unit *u)
{
	struct svc *s = u->type_data;
	if (!s)
		return;
	ev_close(u->m->loop, &s->t_deadline);
	ev_close(u->m->loop, &s->t_poll);
	ev_close(u->m->loop, &s->t_watchdog);
	ev_close(u->m->loop, &s->main_src);
	/* an adopted child stays tracked by the table; its callback must not
	 * find us: it is told nothing more (the table frees it on exit) */
	free(s);
	u->type_data = NULL;
}

/* The command list being run lives in the definition: the same list of
 * the new one (its remaining commands, if it has fewer, end the phase). */
static void svc_rebind(struct unit *u, const struct unit_def *old)
{
	struct svc *s = u->type_data;
	if (!s || !s->cmds)
		return;
	size_t off = (size_t)((const char *)s->cmds - (const char *)old);
	if (off < sizeof(*old))
		s->cmds = (const struct unit_cmds *)(const void *)((const char *)u->def + off);
	else
		s->cmds = NULL;
}

/* ---- re-exec (units.h) ------------------------------------------------------- */

enum {
	SV_STATE = UNIT_STATE_TYPE_SERVICE,
	SV_MAIN_PID,
	SV_MAIN_EXEC,
	SV_RESTARTS,
	SV_EXIT_CODE,
	SV_EXIT_SIGNAL,
	SV_EXITED,
	SV_READY,
	SV_STARTED_OK,
	SV_WATCHDOG_US,
	SV_RESTART_IN_MS,
	SV_STATUS_TEXT,
	SV_INVOCATION,
	SV_PRIVATE_TMP,
	SV_SOCKET,
	SV_GEN,
};

static const struct state_num svc_nums[] = {
    STATE_NUM(SV_STATE, struct svc, state),
    STATE_NUM(SV_MAIN_PID, struct svc, main_pid),
    STATE_FLAG(SV_MAIN_EXEC, struct svc, main_exec),
    STATE_NUM(SV_RESTARTS, struct svc, restarts),
    STATE_NUM(SV_EXIT_CODE, struct svc, exit_code),
    STATE_NUM(SV_EXIT_SIGNAL, struct svc, exit_signal),
    STATE_FLAG(SV_EXITED, struct svc, exited),
    STATE_FLAG(SV_READY, struct svc, ready),
    STATE_FLAG(SV_STARTED_OK, struct svc, started_ok),
    STATE_NUM(SV_WATCHDOG_US, struct svc, watchdog_us),
    STATE_NUM(SV_RESTART_IN_MS, struct svc, carried_restart_ms),
    STATE_NUM(SV_GEN, struct svc, gen),
};

/* The states a re-exec carries: none has a command running or a phase
 * deadline (a restart's delay goes along as what is left of it). */
static bool svc_state_carried(enum svc_state st)
{
	return st == SVC_DEAD || st == SVC_FAILED || st == SVC_RUNNING || st == SVC_EXITED ||
	       st == SVC_AUTO_RESTART;
}

static bool svc_settled(const struct unit *u, char *why, size_t size)
{
	const struct svc *s = u->type_data;
	if (!s || (svc_state_carried(s->state) && !s->control_running && !s->waiting_pid_file))
		return true;
	snprintf(why, size, "units: %s is in %s%s", u->name, service_state_names[s->state],
	         s->control_running ? " with a command running" : "");
	return false;
}

bool service_tracks_child(const struct unit *u)
{
	const struct svc *s = u->type_data;
	return s && s->main_child;
}

static void svc_save(struct unit *u, struct state_w *w)
{
	struct svc *s = u->type_data;
	if (!s)
		return;
	struct itimerspec its;
	s->carried_restart_ms = 0;
	if (s->state == SVC_AUTO_RESTART && s->t_deadline.fd >= 0 &&
	    timerfd_gettime(s->t_deadline.fd, &its) == 0)
		s->carried_restart_ms = (uint64_t)its.it_value.tv_sec * 1000u +
		                        (uint64_t)its.it_value.tv_nsec / 1000000u + 1;
	state_put_nums(w, s, svc_nums, ARRAY_SIZE(svc_nums));
	state_put_str(w, SV_STATUS_TEXT, s->status_text);
	state_put_str(w, SV_INVOCATION, s->invocation_id);
	state_put_str(w, SV_PRIVATE_TMP, s->private_tmp);
	if (s->socket)
		state_put_str(w, SV_SOCKET, s->socket->name);
}

static int svc_restore(struct unit *u, struct state_in *in, const struct state_field *f)
{
	(void)in;
	struct svc *s = svc_get(u);
	if (!s)
		return -ENOMEM;
	int r = state_get_num(f, s, svc_nums, ARRAY_SIZE(svc_nums));
	if (r != 0)
		return r;
	switch (f->tag) {
	case SV_STATUS_TEXT:
		return state_get_str(f, s->status_text, sizeof(s->status_text)) < 0 ? -EBADMSG : 1;
	case SV_INVOCATION:
		return state_get_str(f, s->invocation_id, sizeof(s->invocation_id)) < 0 ? -EBADMSG
		                                                                        : 1;
	case SV_PRIVATE_TMP:
		return state_get_str(f, s->private_tmp, sizeof(s->private_tmp)) < 0 ? -EBADMSG : 1;
	case SV_SOCKET:
		return state_get_str(f, s->carried_socket, sizeof(s->carried_socket)) < 0 ? -EBADMSG
		                                                                          : 1;
	}
	return 0;
}

/* The main process, watched again: still in cells (main_exec), or an
 * adopted daemon, still kin's child. */
static int resume_main(struct svc *s, char *why, size_t size)
{
	struct units *m = s->u->m;
	if (s->main_exec) {
		struct run_ref *ref = calloc(1, sizeof(*ref));
		struct exec_status st;
		if (!ref)
			return snprintf(why, size, "out of memory"), -ENOMEM;
		*ref = (struct run_ref){.s = s, .gen = s->gen, .main = true};
		int r = exec_wait(m->cells, s->cell, "main", service_on_exec_done, ref, &st, NULL);
		if (r == 0) /* it ended across the re-exec: its real status */
			service_on_exec_done(0, &st, ref);
		else if (r < 0) {
			free(ref);
			return snprintf(why, size, "its main process (pid %d) is not in its cell",
			                (int)s->main_pid),
			       -ESRCH;
		}
		return 0;
	}
	pid_t pid = s->main_pid;
	if (!unit_cell_holds(s->cell, pid) || service_adopt_main(s, pid) < 0) {
		log_warn("units: %s: its main process (pid %d) ended across the re-exec; status "
		         "unknown",
		         s->u->name, (int)pid);
		s->main_pid = 0;
		service_on_cmd_exit(s, true, 0, 0, 0);
	}
	return 0;
}

static bool running_state(enum svc_state st)
{
	return st == SVC_RUNNING || st == SVC_AUTO_RESTART;
}

static int svc_resume(struct unit *u, char *why, size_t size)
{
	struct svc *s = u->type_data;
	if (!s)
		return 0;
	if (!svc_state_carried(s->state)) {
		snprintf(why, size, "its service was in an unsettled state (%d)", (int)s->state);
		return -EBADMSG;
	}
	if (s->main_pid < 0 || s->exit_signal < 0 || s->exit_signal > 64 ||
	    (s->main_exec && !s->main_pid)) {
		snprintf(why, size, "its record has a bad pid or signal");
		return -EBADMSG;
	}
	if (!memchr(s->invocation_id, '\0', sizeof(s->invocation_id)) ||
	    strchr(s->private_tmp, '/') || strstr(s->private_tmp, "..")) {
		snprintf(why, size, "its record has a bad invocation");
		return -EBADMSG;
	}
	if (s->carried_socket[0]) {
		struct unit *k = units_find(u->m, s->carried_socket);
		s->socket = k && k->type == UNIT_SOCKET ? k : NULL;
	}
	/* Adopted, its socket's fds must be back from the keeper: it gets
	 * them again at its next start. */
	if (s->carried_socket[0] && u->m->adopting && running_state(s->state) &&
	    !(s->socket && socket_has_fds(s->socket))) {
		snprintf(why, size, "it was started by %s, whose fds the keeper did not hand back",
		         s->carried_socket);
		return -EBADMSG;
	}
	if (s->invocation_id[0] && u->m->log_dir[0]) /* its output goes on to the file */
		units_log_reattach(u->m, u->name, s->cell, "main");
	switch (s->state) {
	case SVC_RUNNING:
		if (s->main_pid) {
			int r = resume_main(s, why, size);
			if (r < 0)
				return r;
		}
		if (s->state == SVC_RUNNING) /* it may have ended just now */
			service_watchdog_arm(s);
		break;
	case SVC_AUTO_RESTART:
		service_timer_arm(s, &s->t_deadline,
		                  s->carried_restart_ms ? s->carried_restart_ms : 1);
		break;
	case SVC_DEAD:
		if (s->invocation_id[0]) /* its empty cell goes, as after a stop */
			service_timer_arm(s, &s->t_poll, 0);
		break;
	default:
		break;
	}
	return 0;
}

const struct unit_ops units_service_ops = {
    .settled = svc_settled,
    .save = svc_save,
    .restore = svc_restore,
    .resume = svc_resume,
    .rebind = svc_rebind,
    .start = service_start,
    .stop = svc_stop,
    .reload = svc_reload,
    .status = svc_status,
    .free = svc_free,
};

void service_set_socket_fds(struct unit *u, struct unit *socket)
{
	struct svc *s = svc_get(u);
	if (s)
		s->socket = socket;
	u->triggered_by = socket;
}

/* ---- sd_notify -------------------------------------------------------------- */

void service_notify(struct unit *u, pid_t pid, const char *msg, size_t len)
{
	struct svc *s = u->type_data;
	if (!s || s->state == SVC_DEAD || s->state == SVC_FAILED)
		return;
	enum unit_notify_access acc = u->def->service.notify_access;
	if (acc == UNIT_NOTIFY_NONE && u->def->service.type == UNIT_SVC_NOTIFY)
		acc = UNIT_NOTIFY_MAIN;
	if (acc == UNIT_NOTIFY_NONE || (acc == UNIT_NOTIFY_MAIN && pid != s->main_pid) ||
	    (acc == UNIT_NOTIFY_EXEC && pid != s->main_pid && pid != s->control_pid)) {
		log_debug("units: %s: notify from pid %d refused (NotifyAccess=)", u->name,
		          (int)pid);
		return;
	}
	bool ready = false, wd_trigger = false;
	for (size_t i = 0; i < len;) {
		const char *line = msg + i;
		const char *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;
		i += n + 1;
		if (n == 7 && memcmp(line, "READY=1", 7) == 0)
			ready = true;
		else if (n > 7 && memcmp(line, "STATUS=", 7) == 0)
			snprintf(s->status_text, sizeof(s->status_text), "%.*s", (int)(n - 7),
			         line + 7);
		else if (n > 8 && memcmp(line, "MAINPID=", 8) == 0) {
			char num[16];
			uint32_t p = 0;
			snprintf(num, sizeof(num), "%.*s", (int)(n - 8), line + 8);
			if (str_to_u32(num, &p) == 0 && p > 1 && (pid_t)p != s->main_pid &&
			    !s->main_exec)
				service_adopt_main(s, (pid_t)p);
		} else if (n == 11 && memcmp(line, "RELOADING=1", 11) == 0 &&
		           s->state == SVC_RUNNING)
			unit_set_active(u, UNIT_ACTIVE_RELOADING, "reload");
		else if (n == 10 && memcmp(line, "STOPPING=1", 10) == 0)
			unit_set_active(u, UNIT_ACTIVE_DEACTIVATING, "stop-sigterm");
		else if (n == 10 && memcmp(line, "WATCHDOG=1", 10) == 0 &&
		         (s->state == SVC_RUNNING || s->state == SVC_RELOAD))
			service_watchdog_arm(s);
		else if (n == 16 && memcmp(line, "WATCHDOG=trigger", 16) == 0 &&
		         (s->state == SVC_RUNNING || s->state == SVC_RELOAD))
			wd_trigger = true;
		else if (n > 14 && memcmp(line, "WATCHDOG_USEC=", 14) == 0) {
			char num[24];
			uint64_t us;
			snprintf(num, sizeof(num), "%.*s", (int)(n - 14), line + 14);
			if (str_to_u64(num, UINT64_MAX / 2, &us) == 0 && us > 0) {
				s->watchdog_us = us;
				if (s->state == SVC_RUNNING || s->state == SVC_RELOAD)
					service_watchdog_arm(s);
			}
		}
	}
	if (wd_trigger) {
		service_watchdog_fire(s);
		return;
	}
	if (!ready)
		return;
	if (s->state == SVC_START && u->def->service.type == UNIT_SVC_NOTIFY && !s->ready) {
		s->ready = true;
		service_enter_start_post(s);
	} else if (s->state == SVC_RUNNING) {
		unit_set_active(u, UNIT_ACTIVE_ACTIVE, "running"); /* after RELOADING=1 */
	}
}
