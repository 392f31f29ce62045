/* service: a .service unit's life, systemd's state machine on cells.
 *
 * Each service runs in its own cell (SLICE/NAME.service). Its main process
 * is the cells executable "main"; ExecStartPre/Post, ExecReload, ExecStop
 * and ExecStopPost run one at a time as "control". Type= decides when the
 * start is over: simple/exec/idle at execve, notify at READY=1, forking
 * when the first process exits and the daemon's pid is known (PIDFile=, or
 * the one process left in the cell), oneshot when every ExecStart= has
 * ended. A stop runs ExecStop=, signals as KillMode= says, waits
 * TimeoutStopSec= for the cell (or the main process) to empty, SIGKILLs,
 * then runs ExecStopPost=. Restart= and the start rate limit decide what
 * follows an end that nobody asked for. Every wait is a loop source with a
 * deadline; a callback that arrives for an older run is recognised by its
 * generation and ignored. */
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

const char *const service_state_names[] = {
    [SVC_DEAD] = "dead",
    [SVC_START_PRE] = "start-pre",
    [SVC_START] = "start",
    [SVC_START_POST] = "start-post",
    [SVC_RUNNING] = "running",
    [SVC_EXITED] = "exited",
    [SVC_RELOAD] = "reload",
    [SVC_STOP] = "stop",
    [SVC_STOP_SIGTERM] = "stop-sigterm",
    [SVC_STOP_SIGKILL] = "stop-sigkill",
    [SVC_STOP_POST] = "stop-post",
    [SVC_FAILED] = "failed",
    [SVC_AUTO_RESTART] = "auto-restart",
};

static void run_next(struct svc *s);

/* ---- timers ----------------------------------------------------------------- */

int service_timer_arm(struct svc *s, struct ev_source *t, uint64_t ms)
{
	if (t->fd < 0) {
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (fd < 0)
			return -errno;
		t->fd = fd;
		if (ev_add(s->u->m->loop, t, EPOLLIN) < 0) {
			close(fd);
			t->fd = -1;
			return -EIO;
		}
	}
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L}};
	if (ms == 0)
		its.it_value.tv_nsec = 1;
	return timerfd_settime(t->fd, 0, &its, NULL) < 0 ? -errno : 0;
}

void service_timer_disarm(struct ev_source *t)
{
	if (t->fd >= 0) {
		struct itimerspec its = {0};
		timerfd_settime(t->fd, 0, &its, NULL);
	}
}

bool service_timer_fired(struct ev_source *t)
{
	uint64_t n;
	return read(t->fd, &n, sizeof(n)) == sizeof(n);
}

/* The deadline of the phase we are in (0 or infinity: none). */
void service_deadline_set(struct svc *s, uint64_t us)
{
	if (us == 0 || us == UNIT_INFINITY) {
		service_timer_disarm(&s->t_deadline);
		return;
	}
	service_timer_arm(s, &s->t_deadline, us / 1000 ? us / 1000 : 1);
}

/* WatchdogSec= (or the service's own WATCHDOG_USEC=): armed while the
 * service runs, pushed back by each WATCHDOG=1. */
void service_watchdog_arm(struct svc *s)
{
	uint64_t us = s->watchdog_us ? s->watchdog_us : s->u->def->service.watchdog_us;
	if (us == 0 || us == UNIT_INFINITY) {
		service_timer_disarm(&s->t_watchdog);
		return;
	}
	service_timer_arm(s, &s->t_watchdog, us / 1000 ? us / 1000 : 1);
}

/* ---- state ----------------------------------------------------------------- */

void service_set_state(struct svc *s, enum svc_state st)
{
	struct unit *u = s->u;
	bool was_up = s->state == SVC_RUNNING || s->state == SVC_RELOAD;
	s->state = st;
	if (st == SVC_RUNNING && !was_up)
		service_watchdog_arm(s);
	else if (st != SVC_RUNNING && st != SVC_RELOAD)
		service_timer_disarm(&s->t_watchdog);
	switch (st) {
	case SVC_DEAD:
		unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
		break;
	case SVC_FAILED:
		unit_set_active(u, UNIT_ACTIVE_FAILED, "failed");
		break;
	case SVC_RUNNING:
	case SVC_EXITED:
		unit_set_active(u, UNIT_ACTIVE_ACTIVE, service_state_names[st]);
		break;
	case SVC_RELOAD:
		unit_set_active(u, UNIT_ACTIVE_RELOADING, "reload");
		break;
	case SVC_START_PRE:
	case SVC_START:
	case SVC_START_POST:
	case SVC_AUTO_RESTART:
		unit_set_active(u, UNIT_ACTIVE_ACTIVATING, service_state_names[st]);
		break;
	default:
		unit_set_active(u, UNIT_ACTIVE_DEACTIVATING, service_state_names[st]);
		break;
	}
}

bool service_is_running(const struct unit *u)
{
	const struct svc *s = u->type_data;
	return s && s->state != SVC_DEAD && s->state != SVC_FAILED;
}

static bool clean_end(const struct svc *s, int code, int sig)
{
	const struct unit_service *c = &s->u->def->service;
	if (sig)
		return sig == SIGHUP || sig == SIGINT || sig == SIGTERM || sig == SIGPIPE ||
		       unit_exit_set_has(&c->success_exit_status, 0, sig);
	return code == 0 || unit_exit_set_has(&c->success_exit_status, code, 0);
}

/* ---- running commands ---------------------------------------------------------- */

void service_on_exec_done(int result, const struct exec_status *st, void *data)
{
	struct run_ref *ref = data;
	struct svc *s = ref->s;
	bool stale = ref->gen != s->gen && !ref->main;
	bool main = ref->main;
	unsigned flags = ref->flags;
	free(ref);
	if (result == -ECANCELED || stale)
		return;
	service_on_cmd_exit(s, main, flags, st ? st->exit_code : 0, st ? st->signal : 0);
}

static void on_exec_started(int result, const struct err *err, void *data)
{
	struct run_ref *ref = data;
	struct svc *s = ref->s;
	struct units *m = s->u->m;
	const char *name = ref->main ? "main" : "control";
	if (result == -ECANCELED) {
		free(ref);
		return;
	}
	if (result < 0) {
		log_warn("units: %s: %s", s->u->name, err ? err->msg : "start failed");
		bool main = ref->main;
		unsigned flags = ref->flags;
		bool stale = ref->gen != s->gen && !main;
		free(ref);
		if (!stale)
			service_on_cmd_exit(s, main, flags, 203, 0); /* systemd's EXIT_EXEC */
		return;
	}
	struct exec_status st;
	units_log_attach(m, s->u->name, s->cell, name);
	if (exec_status(m->cells, s->cell, name, &st, NULL) == 0) {
		if (ref->main) {
			s->main_pid = st.pid;
			s->main_exec = true;
		} else {
			s->control_pid = st.pid;
		}
	}
	if (ref->main && s->state == SVC_START) {
		enum unit_service_type t = s->u->def->service.type;
		if (t != UNIT_SVC_NOTIFY && t != UNIT_SVC_FORKING && t != UNIT_SVC_ONESHOT)
			service_enter_start_post(s);
	}
	int r = exec_wait(m->cells, s->cell, name, service_on_exec_done, ref, &st, NULL);
	if (r == 0) { /* already over */
		service_on_exec_done(0, &st, ref);
	} else if (r < 0) {
		free(ref);
		log_warn("units: %s: cannot wait for its %s process", s->u->name, name);
	}
}

void service_fill_ctx(struct svc *s, struct unit_run_ctx *ctx, bool control)
{
	struct units *m = s->u->m;
	*ctx = (struct unit_run_ctx){.root = m->root,
	                             .manager_env = m->env,
	                             .nmanager_env = m->nenv,
	                             .main_pid = s->main_pid,
	                             .invocation_id = s->invocation_id,
	                             .control = control,
	                             .private_tmp = s->private_tmp};
	const struct unit_service *c = &s->u->def->service;
	if (c->type == UNIT_SVC_NOTIFY || c->notify_access != UNIT_NOTIFY_NONE)
		ctx->notify_socket = units_notify_path(m->notify);
	if (!control && s->socket)
		socket_fds(s->socket, &ctx->fds, &ctx->nfds, &ctx->fd_names);
}

/* Runs cmd as "main" or "control"; the end comes to service_on_cmd_exit. */
static int run_cmd(struct svc *s, const struct unit_cmd *cmd, bool main)
{
	struct units *m = s->u->m;
	struct unit_run_ctx ctx;
	struct unit_exec_spec spec = {0};
	struct err err = {0};
	service_fill_ctx(s, &ctx, !main);
	int r = unit_exec_build(s->u->def, cmd, &ctx, &spec, &err);
	if (r < 0) {
		log_warn("units: %s", err.msg);
		return r;
	}
	struct run_ref *ref = calloc(1, sizeof(*ref));
	if (!ref) {
		unit_exec_spec_free(&spec);
		return -ENOMEM;
	}
	*ref = (struct run_ref){.s = s, .gen = ++s->gen, .main = main, .flags = cmd->flags};
	const char *name = main ? "main" : "control";
	/* a last run's record of the name is replaced by this one (cells) */
	r = exec_start(m->cells, s->cell, name, &spec.spec, on_exec_started, ref, &err);
	unit_exec_spec_free(&spec);
	if (r < 0) {
		free(ref);
		log_warn("units: %s", err.msg);
		return r;
	}
	if (!main)
		s->control_running = true;
	return 0;
}

/* Runs the commands of list one after another (the '-' prefix ignores a
 * failure), then calls what follows the phase. */
void service_run_list(struct svc *s, const struct unit_cmds *list)
{
	s->cmds = list;
	s->cmd_idx = 0;
	run_next(s);
}

static void phase_done(struct svc *s, bool ok);

static void run_next(struct svc *s)
{
	if (!s->cmds || s->cmd_idx >= s->cmds->n) {
		phase_done(s, true);
		return;
	}
	const struct unit_cmd *cmd = &s->cmds->v[s->cmd_idx++];
	bool main = s->state == SVC_START; /* oneshot's ExecStart= lines are main */
	if (run_cmd(s, cmd, main) < 0) {
		if (cmd->flags & UNIT_CMD_IGNORE_FAILURE)
			run_next(s);
		else
			phase_done(s, false);
	}
}

/* ---- the main process when it is not cells' (forking, MAINPID=) --------------- */

static void main_gone(struct svc *s, int code, int sig)
{
	s->main_child = NULL;
	ev_close(s->u->m->loop, &s->main_src);
	service_on_cmd_exit(s, true, 0, code, sig);
}

static void on_adopted_exit(const siginfo_t *si, void *data)
{
	struct svc *s = data;
	main_gone(s, si->si_code == CLD_EXITED ? si->si_status : 0,
	          si->si_code == CLD_EXITED ? 0 : si->si_status);
}

static void on_adopted_pidfd(struct ev_source *src, uint32_t events)
{
	(void)events;
	main_gone(src->data, 0, 0); /* not our child: its status is not ours to know */
}

static bool is_our_child(pid_t pid)
{
	return proc_ppid(pid) == getpid();
}

int service_adopt_main(struct svc *s, pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -errno;
	s->main_pid = pid;
	s->main_exec = false;
	if (is_our_child(pid))
		return child_track(s->u->m->children, pid, fd, on_adopted_exit, s, &s->main_child);
	s->main_src = (struct ev_source){.fd = fd, .fn = on_adopted_pidfd, .data = s};
	int r = ev_add(s->u->m->loop, &s->main_src, EPOLLIN);
	if (r < 0) {
		close(fd);
		s->main_src.fd = -1;
	}
	return r;
}

/* The pid of the one process left in the cell, 0 when none or several. */
static pid_t guess_main(struct svc *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *text = NULL;
	if (cells_cgroup_dir(s->u->m->cells, s->cell, dir, sizeof(dir)) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (file_read_small(path, 65536, &text, NULL) < 0)
		return 0;
	long a = 0, b = 0;
	int n = sscanf(text, "%ld %ld", &a, &b);
	free(text);
	return n == 1 && a > 0 ? (pid_t)a : 0;
}

static pid_t read_pid_file(struct svc *s)
{
	char path[512], *text = NULL;
	const char *f = s->u->def->service.pid_file;
	snprintf(path, sizeof(path), "%s%s", s->u->m->root, f);
	if (file_read_small(path, 64, &text, NULL) < 0)
		return 0;
	uint32_t pid = 0;
	int r = str_to_u32(str_trim(text), &pid);
	free(text);
	return r < 0 || pid < 2 || pid > 4194304 ? 0 : (pid_t)pid;
}

/* ---- phases ----------------------------------------------------------------- */

static void enter_running(struct svc *s)
{
	struct unit *u = s->u;
	service_deadline_set(s, 0);
	s->started_ok = true;
	if (u->def->service.type == UNIT_SVC_ONESHOT && !s->main_pid) {
		if (u->def->service.remain_after_exit)
			service_set_state(s, SVC_EXITED);
		else {
			service_set_state(s, SVC_DEAD);
			unit_set_result(u, "success");
		}
	} else {
		service_set_state(s, s->main_pid || !u->def->service.remain_after_exit
		                         ? SVC_RUNNING
		                         : SVC_EXITED);
	}
	if (s->state == SVC_RUNNING && !s->main_pid)
		service_set_state(s, SVC_EXITED);
	unit_job_done(u, 0, NULL);
	if (s->state == SVC_DEAD) /* a oneshot that is over: a stop left to do */
		service_enter_stop(s, "success");
}

void service_enter_start_post(struct svc *s)
{
	service_set_state(s, SVC_START_POST);
	service_run_list(s, &s->u->def->service.exec_start_post);
}

static void enter_start(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	service_set_state(s, SVC_START);
	s->ready = false;
	if (c->exec_start.n == 0) {
		if (c->type != UNIT_SVC_ONESHOT) {
			log_warn("units: %s: no ExecStart= (only Type=oneshot may have none)",
			         s->u->name);
			service_enter_stop(s, "resources");
			return;
		}
		service_enter_start_post(s);
		return;
	}
	if (c->type == UNIT_SVC_ONESHOT) {
		service_run_list(s, &c->exec_start);
		return;
	}
	if (run_cmd(s, &c->exec_start.v[0], true) < 0)
		service_enter_stop(s, "resources");
}

static void phase_done(struct svc *s, bool ok)
{
	switch (s->state) {
	case SVC_START_PRE:
		if (ok)
			enter_start(s);
		else
			service_enter_stop(s, "exit-code");
		break;
	case SVC_START: /* oneshot: every ExecStart= ran */
		if (ok)
			service_enter_start_post(s);
		else
			service_enter_stop(s, "exit-code");
		break;
	case SVC_START_POST:
		if (ok)
			enter_running(s);
		else
			service_enter_stop(s, "exit-code");
		break;
	case SVC_RELOAD:
		service_set_state(s, s->main_pid ? SVC_RUNNING : SVC_EXITED);
		unit_job_done(s->u, ok ? 0 : -EIO, NULL);
		break;
	case SVC_STOP:
		service_enter_signal(s, false);
		break;
	case SVC_STOP_POST:
		service_enter_stop_post(s); /* the list is over: service_finish */
		break;
	default:
		break;
	}
}

/* Type=forking, the first process gone: the daemon's pid from PIDFile=
 * (which a daemon may write a moment after its parent exits: looked at
 * again every SVC_POLL_MS until the start deadline), else the one process
 * left in the cell. */
void service_forking_main(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	pid_t pid = c->pid_file ? read_pid_file(s) : 0;
	log_debug("units: %s: main pid %d (PIDFile=%s)", s->u->name, (int)pid,
	          c->pid_file ? c->pid_file : "");
	if (!pid && !c->pid_file && c->guess_main_pid)
		pid = guess_main(s);
	if (pid && service_adopt_main(s, pid) < 0) {
		log_warn("units: %s: pid %d from PIDFile=%s is not running", s->u->name, (int)pid,
		         c->pid_file ? c->pid_file : "(guessed)");
		service_enter_stop(s, "protocol");
		return;
	}
	if (!pid && c->pid_file) {
		s->waiting_pid_file = true;
		service_timer_arm(s, &s->t_poll, SVC_POLL_MS);
		return;
	}
	s->waiting_pid_file = false;
	service_enter_start_post(s);
}

static void on_main_exit(struct svc *s, int code, int sig)
{
	const struct unit_service *c = &s->u->def->service;
	bool clean = clean_end(s, code, sig);
	s->main_pid = 0;
	s->main_exec = false;
	s->exited = true;
	s->exit_code = code;
	s->exit_signal = sig;
	const char *bad =
	    sig ? (sig == SIGSEGV || sig == SIGABRT || sig == SIGBUS ? "core-dump" : "signal")
	        : "exit-code";
	switch (s->state) {
	case SVC_START:
		if (c->type == UNIT_SVC_FORKING) {
			if (!clean) {
				service_enter_stop(s, bad);
				return;
			}
			service_forking_main(s);
			return;
		}
		if (c->type == UNIT_SVC_ONESHOT) {
			if (!clean &&
			    !(s->cmds && s->cmd_idx > 0 &&
			      (s->cmds->v[s->cmd_idx - 1].flags & UNIT_CMD_IGNORE_FAILURE)))
				service_enter_stop(s, bad);
			else
				run_next(s);
			return;
		}
		service_enter_stop(s, clean ? "protocol" : bad); /* ended before it was ready */
		return;
	case SVC_START_POST:
	case SVC_RUNNING:
	case SVC_RELOAD:
		if (clean && c->remain_after_exit) {
			service_set_state(s, SVC_EXITED);
			return;
		}
		log_info("units: %s: main process ended (%s %d)", s->u->name,
		         sig ? "signal" : "status", sig ? sig : code);
		service_enter_stop(s, clean ? "success" : bad);
		return;
	case SVC_STOP_SIGTERM:
	case SVC_STOP_SIGKILL:
		service_timer_arm(s, &s->t_poll, 0); /* look at the cell now */
		return;
	default:
		return;
	}
}

void service_on_cmd_exit(struct svc *s, bool main, unsigned flags, int code, int sig)
{
	log_debug("units: %s: %s process ended (%s %d) in %s", s->u->name,
	          main ? "main" : "control", sig ? "signal" : "status", sig ? sig : code,
	          service_state_names[s->state]);
	if (main && s->state != SVC_START_PRE && s->state != SVC_START_POST &&
	    s->state != SVC_STOP && s->state != SVC_STOP_POST &&
	    !(s->state == SVC_RELOAD && s->control_running)) {
		on_main_exit(s, code, sig);
		return;
	}
	if (main) { /* a main that ended while control commands run */
		s->main_pid = 0;
		s->exited = true;
		s->exit_code = code;
		s->exit_signal = sig;
		return;
	}
	s->control_running = false;
	s->control_pid = 0;
	bool ok = (code == 0 && !sig) || (flags & UNIT_CMD_IGNORE_FAILURE);
	if (!ok)
		log_warn("units: %s: %s command ended with %s %d", s->u->name,
		         service_state_names[s->state], sig ? "signal" : "status",
		         sig ? sig : code);
	if (!ok && s->state != SVC_STOP && s->state != SVC_STOP_POST) {
		phase_done(s, false);
		return;
	}
	run_next(s);
}
