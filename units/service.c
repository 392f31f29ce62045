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
#include "units/units-int.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum svc_state {
	SVC_DEAD,
	SVC_START_PRE,
	SVC_START,
	SVC_START_POST,
	SVC_RUNNING,
	SVC_EXITED,
	SVC_RELOAD,
	SVC_STOP,
	SVC_STOP_SIGTERM,
	SVC_STOP_SIGKILL,
	SVC_STOP_POST,
	SVC_FAILED,
	SVC_AUTO_RESTART,
};

static const char *const state_names[] = {
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

#define SVC_POLL_MS      50   /* how often a stop looks whether the cell is empty */
#define SVC_KILL_WAIT_MS 5000 /* after SIGKILL, at most */

struct svc {
	struct unit *u;
	enum svc_state state;
	char cell[CELLS_PATH_MAX];
	uint64_t gen; /* bumps at each command run: stale callbacks are ignored */
	pid_t main_pid;
	bool main_exec;            /* main is cells' "main" executable */
	struct child *main_child;  /* an adopted main that is kin's child */
	struct ev_source main_src; /* an adopted main that is not: its pidfd */
	const struct unit_cmds *cmds;
	size_t cmd_idx;
	bool control_running;
	pid_t control_pid;
	struct ev_source t_deadline, t_poll, t_watchdog;
	uint64_t deadline_gen;
	uint64_t watchdog_us; /* WATCHDOG_USEC= from the service, 0: WatchdogSec= */
	bool ready, started_ok, stop_requested;
	bool waiting_pid_file; /* Type=forking: the parent is gone, PIDFile= not yet there */
	char status_text[256];
	int exit_code, exit_signal;
	bool exited;
	uint32_t restarts;
	char invocation_id[33];
	char private_tmp[UNIT_NAME_MAX + 32]; /* this run's PrivateTmp= directories */
	struct unit *socket;
	struct exec_follower *follower;
	/* taken back from a re-exec's state, until resume */
	uint64_t carried_restart_ms;
	char carried_socket[UNIT_NAME_MAX + 1];
};

static void enter_stop(struct svc *s, const char *result);
static void enter_signal(struct svc *s, bool kill);
static void enter_stop_post(struct svc *s);
static void enter_start_post(struct svc *s);
static void run_next(struct svc *s);
static void forking_main(struct svc *s);
static int svc_start(struct unit *u, struct err *err);

/* ---- timers ----------------------------------------------------------------- */

static int timer_arm(struct svc *s, struct ev_source *t, uint64_t ms)
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

static void timer_disarm(struct ev_source *t)
{
	if (t->fd >= 0) {
		struct itimerspec its = {0};
		timerfd_settime(t->fd, 0, &its, NULL);
	}
}

static bool timer_fired(struct ev_source *t)
{
	uint64_t n;
	return read(t->fd, &n, sizeof(n)) == sizeof(n);
}

/* The deadline of the phase we are in (0 or infinity: none). */
static void deadline_set(struct svc *s, uint64_t us)
{
	if (us == 0 || us == UNIT_INFINITY) {
		timer_disarm(&s->t_deadline);
		return;
	}
	timer_arm(s, &s->t_deadline, us / 1000 ? us / 1000 : 1);
}

/* WatchdogSec= (or the service's own WATCHDOG_USEC=): armed while the
 * service runs, pushed back by each WATCHDOG=1. */
static void watchdog_arm(struct svc *s)
{
	uint64_t us = s->watchdog_us ? s->watchdog_us : s->u->def->service.watchdog_us;
	if (us == 0 || us == UNIT_INFINITY) {
		timer_disarm(&s->t_watchdog);
		return;
	}
	timer_arm(s, &s->t_watchdog, us / 1000 ? us / 1000 : 1);
}

/* ---- state ----------------------------------------------------------------- */

static void set_state(struct svc *s, enum svc_state st)
{
	struct unit *u = s->u;
	bool was_up = s->state == SVC_RUNNING || s->state == SVC_RELOAD;
	s->state = st;
	if (st == SVC_RUNNING && !was_up)
		watchdog_arm(s);
	else if (st != SVC_RUNNING && st != SVC_RELOAD)
		timer_disarm(&s->t_watchdog);
	switch (st) {
	case SVC_DEAD:
		unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
		break;
	case SVC_FAILED:
		unit_set_active(u, UNIT_ACTIVE_FAILED, "failed");
		break;
	case SVC_RUNNING:
	case SVC_EXITED:
		unit_set_active(u, UNIT_ACTIVE_ACTIVE, state_names[st]);
		break;
	case SVC_RELOAD:
		unit_set_active(u, UNIT_ACTIVE_RELOADING, "reload");
		break;
	case SVC_START_PRE:
	case SVC_START:
	case SVC_START_POST:
	case SVC_AUTO_RESTART:
		unit_set_active(u, UNIT_ACTIVE_ACTIVATING, state_names[st]);
		break;
	default:
		unit_set_active(u, UNIT_ACTIVE_DEACTIVATING, state_names[st]);
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

struct run_ref {
	struct svc *s;
	uint64_t gen;
	bool main;
	unsigned flags;
};

static void on_cmd_exit(struct svc *s, bool main, unsigned flags, int code, int sig);

static void on_exec_done(int result, const struct exec_status *st, void *data)
{
	struct run_ref *ref = data;
	struct svc *s = ref->s;
	bool stale = ref->gen != s->gen && !ref->main;
	bool main = ref->main;
	unsigned flags = ref->flags;
	free(ref);
	if (result == -ECANCELED || stale)
		return;
	on_cmd_exit(s, main, flags, st ? st->exit_code : 0, st ? st->signal : 0);
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
			on_cmd_exit(s, main, flags, 203, 0); /* systemd's EXIT_EXEC */
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
			enter_start_post(s);
	}
	int r = exec_wait(m->cells, s->cell, name, on_exec_done, ref, &st, NULL);
	if (r == 0) { /* already over */
		on_exec_done(0, &st, ref);
	} else if (r < 0) {
		free(ref);
		log_warn("units: %s: cannot wait for its %s process", s->u->name, name);
	}
}

static void fill_ctx(struct svc *s, struct unit_run_ctx *ctx, bool control)
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

/* Runs cmd as "main" or "control"; the end comes to on_cmd_exit. */
static int run_cmd(struct svc *s, const struct unit_cmd *cmd, bool main)
{
	struct units *m = s->u->m;
	struct unit_run_ctx ctx;
	struct unit_exec_spec spec = {0};
	struct err err = {0};
	fill_ctx(s, &ctx, !main);
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
static void run_list(struct svc *s, const struct unit_cmds *list)
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
	on_cmd_exit(s, true, 0, code, sig);
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
	char path[64], *text = NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (file_read_small(path, 4096, &text, NULL) < 0)
		return false;
	const char *p = strrchr(text, ')');
	int ppid = 0;
	bool ours = p && sscanf(p + 1, " %*c %d", &ppid) == 1 && ppid == getpid();
	free(text);
	return ours;
}

static int adopt_main(struct svc *s, pid_t pid)
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
	deadline_set(s, 0);
	s->started_ok = true;
	if (u->def->service.type == UNIT_SVC_ONESHOT && !s->main_pid) {
		if (u->def->service.remain_after_exit)
			set_state(s, SVC_EXITED);
		else {
			set_state(s, SVC_DEAD);
			unit_set_result(u, "success");
		}
	} else {
		set_state(s, s->main_pid || !u->def->service.remain_after_exit ? SVC_RUNNING
		                                                               : SVC_EXITED);
	}
	if (s->state == SVC_RUNNING && !s->main_pid)
		set_state(s, SVC_EXITED);
	unit_job_done(u, 0, NULL);
	if (s->state == SVC_DEAD) /* a oneshot that is over: a stop left to do */
		enter_stop(s, "success");
}

static void enter_start_post(struct svc *s)
{
	set_state(s, SVC_START_POST);
	run_list(s, &s->u->def->service.exec_start_post);
}

static void enter_start(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	set_state(s, SVC_START);
	s->ready = false;
	if (c->exec_start.n == 0) {
		if (c->type != UNIT_SVC_ONESHOT) {
			log_warn("units: %s: no ExecStart= (only Type=oneshot may have none)",
			         s->u->name);
			enter_stop(s, "resources");
			return;
		}
		enter_start_post(s);
		return;
	}
	if (c->type == UNIT_SVC_ONESHOT) {
		run_list(s, &c->exec_start);
		return;
	}
	if (run_cmd(s, &c->exec_start.v[0], true) < 0)
		enter_stop(s, "resources");
}

static void phase_done(struct svc *s, bool ok)
{
	switch (s->state) {
	case SVC_START_PRE:
		if (ok)
			enter_start(s);
		else
			enter_stop(s, "exit-code");
		break;
	case SVC_START: /* oneshot: every ExecStart= ran */
		if (ok)
			enter_start_post(s);
		else
			enter_stop(s, "exit-code");
		break;
	case SVC_START_POST:
		if (ok)
			enter_running(s);
		else
			enter_stop(s, "exit-code");
		break;
	case SVC_RELOAD:
		set_state(s, s->main_pid ? SVC_RUNNING : SVC_EXITED);
		unit_job_done(s->u, ok ? 0 : -EIO, NULL);
		break;
	case SVC_STOP:
		enter_signal(s, false);
		break;
	case SVC_STOP_POST:
		enter_stop_post(s); /* the list is over: finish */
		break;
	default:
		break;
	}
}

/* Type=forking, the first process gone: the daemon's pid from PIDFile=
 * (which a daemon may write a moment after its parent exits: looked at
 * again every SVC_POLL_MS until the start deadline), else the one process
 * left in the cell. */
static void forking_main(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	pid_t pid = c->pid_file ? read_pid_file(s) : 0;
	log_debug("units: %s: main pid %d (PIDFile=%s)", s->u->name, (int)pid,
	          c->pid_file ? c->pid_file : "");
	if (!pid && !c->pid_file && c->guess_main_pid)
		pid = guess_main(s);
	if (pid && adopt_main(s, pid) < 0) {
		log_warn("units: %s: pid %d from PIDFile=%s is not running", s->u->name, (int)pid,
		         c->pid_file ? c->pid_file : "(guessed)");
		enter_stop(s, "protocol");
		return;
	}
	if (!pid && c->pid_file) {
		s->waiting_pid_file = true;
		timer_arm(s, &s->t_poll, SVC_POLL_MS);
		return;
	}
	s->waiting_pid_file = false;
	enter_start_post(s);
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
				enter_stop(s, bad);
				return;
			}
			forking_main(s);
			return;
		}
		if (c->type == UNIT_SVC_ONESHOT) {
			if (!clean &&
			    !(s->cmds && s->cmd_idx > 0 &&
			      (s->cmds->v[s->cmd_idx - 1].flags & UNIT_CMD_IGNORE_FAILURE)))
				enter_stop(s, bad);
			else
				run_next(s);
			return;
		}
		enter_stop(s, clean ? "protocol" : bad); /* ended before it was ready */
		return;
	case SVC_START_POST:
	case SVC_RUNNING:
	case SVC_RELOAD:
		if (clean && c->remain_after_exit) {
			set_state(s, SVC_EXITED);
			return;
		}
		log_info("units: %s: main process ended (%s %d)", s->u->name,
		         sig ? "signal" : "status", sig ? sig : code);
		enter_stop(s, clean ? "success" : bad);
		return;
	case SVC_STOP_SIGTERM:
	case SVC_STOP_SIGKILL:
		timer_arm(s, &s->t_poll, 0); /* look at the cell now */
		return;
	default:
		return;
	}
}

static void on_cmd_exit(struct svc *s, bool main, unsigned flags, int code, int sig)
{
	log_debug("units: %s: %s process ended (%s %d) in %s", s->u->name,
	          main ? "main" : "control", sig ? "signal" : "status", sig ? sig : code,
	          state_names[s->state]);
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
		         state_names[s->state], sig ? "signal" : "status", sig ? sig : code);
	if (!ok && s->state != SVC_STOP && s->state != SVC_STOP_POST) {
		phase_done(s, false);
		return;
	}
	run_next(s);
}

/* ---- stopping ----------------------------------------------------------------- */

static bool cell_empty(struct svc *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *text = NULL;
	if (cells_cgroup_dir(s->u->m->cells, s->cell, dir, sizeof(dir)) < 0)
		return true;
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	if (file_read_small(path, 4096, &text, NULL) < 0)
		return true;
	bool populated = strstr(text, "populated 1") != NULL;
	free(text);
	return !populated;
}

static bool stop_done(struct svc *s)
{
	enum unit_kill_mode km = s->u->def->service.kill_mode;
	if (km == UNIT_KILL_CONTROL_GROUP || km == UNIT_KILL_MIXED)
		return cell_empty(s);
	return !s->main_pid && !s->control_running;
}

static void send_signal(struct svc *s, int sig, bool all)
{
	struct units *m = s->u->m;
	if (all) {
		cell_signal(m->cells, s->cell, sig, NULL);
		if (sig != SIGKILL)
			cell_signal(m->cells, s->cell, SIGCONT, NULL);
		return;
	}
	if (s->main_pid > 0) {
		kill(s->main_pid, sig);
		if (sig != SIGKILL)
			kill(s->main_pid, SIGCONT);
	}
	if (s->control_pid > 0)
		kill(s->control_pid, sig);
}

static void enter_signal(struct svc *s, bool kill_now)
{
	const struct unit_service *c = &s->u->def->service;
	enum unit_kill_mode km = c->kill_mode;
	if (kill_now && !c->send_sigkill) {
		enter_stop_post(s);
		return;
	}
	set_state(s, kill_now ? SVC_STOP_SIGKILL : SVC_STOP_SIGTERM);
	int sig = kill_now ? c->final_kill_signal : c->kill_signal;
	if (km != UNIT_KILL_NONE) {
		bool all = km == UNIT_KILL_CONTROL_GROUP || (km == UNIT_KILL_MIXED && kill_now);
		send_signal(s, sig, all);
		if (!kill_now && c->send_sighup)
			send_signal(s, SIGHUP, all);
	}
	if (stop_done(s)) {
		enter_stop_post(s);
		return;
	}
	deadline_set(s, kill_now ? SVC_KILL_WAIT_MS * 1000ull : c->timeout_stop_us);
	timer_arm(s, &s->t_poll, SVC_POLL_MS);
}

/* result: why the service ends ("success" when asked to stop). */
static void enter_stop(struct svc *s, const char *result)
{
	struct unit *u = s->u;
	if (!u->result[0] || strcmp(u->result, "success") == 0)
		unit_set_result(u, result);
	deadline_set(s, u->def->service.timeout_stop_us);
	if (s->started_ok && u->def->service.exec_stop.n) {
		set_state(s, SVC_STOP);
		run_list(s, &u->def->service.exec_stop);
		return;
	}
	enter_signal(s, false);
}

static bool should_restart(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	const char *r = s->u->result;
	if (s->stop_requested || s->u->m->shutting_down)
		return false;
	if (s->exited && unit_exit_set_has(&c->restart_prevent, s->exit_code, s->exit_signal))
		return false;
	if (s->exited && unit_exit_set_has(&c->restart_force, s->exit_code, s->exit_signal))
		return true;
	bool success = strcmp(r, "success") == 0;
	bool sig = strcmp(r, "signal") == 0 || strcmp(r, "core-dump") == 0;
	bool timeout = strcmp(r, "timeout") == 0;
	switch (c->restart) {
	case UNIT_RESTART_ALWAYS:
		return true;
	case UNIT_RESTART_ON_SUCCESS:
		return success;
	case UNIT_RESTART_ON_FAILURE:
		return !success;
	case UNIT_RESTART_ON_ABNORMAL:
		return sig || timeout || strcmp(r, "watchdog") == 0;
	case UNIT_RESTART_ON_ABORT:
		return sig;
	case UNIT_RESTART_ON_WATCHDOG:
		return strcmp(r, "watchdog") == 0;
	default:
		return false;
	}
}

/* The end of a stop: ExecStopPost= ran (or is to run), then the unit is
 * dead or failed, and Restart= decides. */
static void finish(struct svc *s)
{
	struct unit *u = s->u;
	struct units *m = u->m;
	struct unit_run_ctx ctx;
	deadline_set(s, 0);
	timer_disarm(&s->t_poll);
	if (u->def->service.kill_mode == UNIT_KILL_CONTROL_GROUP && !cell_empty(s))
		cell_kill(m->cells, s->cell, NULL); /* what ExecStopPost= left */
	fill_ctx(s, &ctx, true);
	unit_exec_dirs_remove(u->def, &ctx);
	unit_private_tmp_remove(m->root, s->private_tmp);
	s->private_tmp[0] = '\0';
	bool failed = strcmp(u->result, "success") != 0;
	bool was_start = u->job && (u->job->type == JOB_START || u->job->type == JOB_RESTART) &&
	                 !(u->job->type == JOB_RESTART && !u->job->restart_stopped);
	set_state(s, failed ? SVC_FAILED : SVC_DEAD);
	/* the empty cell goes on the next turn: this may run inside a cells
	 * callback, which must not see its records freed under it */
	timer_arm(s, &s->t_poll, 0);
	s->started_ok = false;
	if (failed)
		log_warn("units: %s failed (%s)", u->name, u->result);
	if (was_start) {
		struct err err = {0};
		err_set(&err, -EIO, ERR_FAILED_PRECONDITION, "unit \"%s\" failed to start: %s",
		        u->name, u->result);
		unit_job_done(u, failed ? -EIO : 0, failed ? &err : NULL);
	} else {
		unit_job_done(u, 0, NULL);
	}
	if (should_restart(s)) {
		set_state(s, SVC_AUTO_RESTART);
		uint64_t ms = u->def->service.restart_us / 1000;
		timer_arm(s, &s->t_deadline, ms ? ms : 1);
		return;
	}
	s->stop_requested = false;
	if (s->socket)
		socket_service_ended(s->socket);
	unit_went_inactive(u);
}

static void enter_stop_post(struct svc *s)
{
	if (s->state == SVC_STOP_POST) {
		finish(s);
		return;
	}
	timer_disarm(&s->t_poll);
	set_state(s, SVC_STOP_POST);
	deadline_set(s, s->u->def->service.timeout_stop_us);
	run_list(s, &s->u->def->service.exec_stop_post);
}

static void on_poll(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	timer_fired(src);
	if (s->state == SVC_START && s->waiting_pid_file) {
		forking_main(s);
		return;
	}
	/* A failed service keeps its (empty) cell: its last output stays in
	 * the cell's rings for status and logs until the next start. */
	if (s->state == SVC_DEAD && cell_empty(s)) {
		cell_delete(s->u->m->cells, s->cell, false, NULL, NULL, NULL);
		return;
	}
	if (s->state != SVC_STOP_SIGTERM && s->state != SVC_STOP_SIGKILL)
		return;
	if (stop_done(s))
		enter_stop_post(s);
	else
		timer_arm(s, &s->t_poll, SVC_POLL_MS);
}

/* No WATCHDOG=1 in time: systemd's answer — SIGABRT to the main process
 * (a core shows where it hung), result "watchdog", then the stop as for a
 * failure (Restart=on-watchdog and on-failure restart it). */
static void watchdog_fire(struct svc *s)
{
	uint64_t us = s->watchdog_us ? s->watchdog_us : s->u->def->service.watchdog_us;
	log_warn("units: %s: watchdog timeout (no WATCHDOG=1 in %llu ms); aborting it", s->u->name,
	         (unsigned long long)(us / 1000));
	unit_set_result(s->u, "watchdog");
	if (s->main_pid > 0)
		kill(s->main_pid, SIGABRT);
	enter_signal(s, false);
}

static void on_watchdog(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	if (timer_fired(src) && (s->state == SVC_RUNNING || s->state == SVC_RELOAD))
		watchdog_fire(s);
}

static void on_deadline(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	if (!timer_fired(src))
		return;
	switch (s->state) {
	case SVC_START_PRE:
	case SVC_START:
	case SVC_START_POST:
		log_warn("units: %s: start timed out", s->u->name);
		unit_set_result(s->u, "timeout");
		enter_signal(s, false);
		break;
	case SVC_STOP:
	case SVC_STOP_SIGTERM:
		log_warn("units: %s: stop timed out; killing", s->u->name);
		if (strcmp(s->u->result, "success") == 0)
			unit_set_result(s->u, "timeout");
		enter_signal(s, true);
		break;
	case SVC_STOP_SIGKILL:
		log_warn("units: %s: processes left after SIGKILL", s->u->name);
		enter_stop_post(s);
		break;
	case SVC_STOP_POST:
		s->cmds = NULL;
		finish(s);
		break;
	case SVC_AUTO_RESTART: {
		struct err err = {0};
		s->restarts++;
		log_info("units: %s: restarting (%u)", s->u->name, s->restarts);
		if (svc_start(s->u, &err) < 0)
			log_warn("units: %s", err.msg);
		break;
	}
	default:
		break;
	}
}

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
	s->t_deadline = (struct ev_source){.fd = -1, .fn = on_deadline, .data = s};
	s->t_poll = (struct ev_source){.fd = -1, .fn = on_poll, .data = s};
	s->t_watchdog = (struct ev_source){.fd = -1, .fn = on_watchdog, .data = s};
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

static int svc_start(struct unit *u, struct err *err)
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
		               state_names[s->state]);
	timer_disarm(&s->t_deadline);
	u->condition[0] = '\0';
	int r = unit_conditions_check(u->def->conds, u->def->nconds, &m->cfg.cond, u->condition,
	                              sizeof(u->condition));
	if (r == 0) {
		log_info("units: %s skipped: %s", u->name, u->condition);
		set_state(s, SVC_DEAD);
		return 0;
	}
	if (r < 0) {
		unit_set_result(u, "resources");
		set_state(s, SVC_FAILED);
		return err_set(err, -EPERM, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": assertion failed: %s", u->name, u->condition);
	}
	if (rate_limited(u)) {
		unit_set_result(u, "start-limit-hit");
		set_state(s, SVC_FAILED);
		return err_set(err, -EAGAIN, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": started too often (StartLimitBurst=%u in %llu s)",
		               u->name, u->def->start_limit_burst,
		               (unsigned long long)(u->def->start_limit_interval_us / 1000000));
	}
	if ((r = make_cell(s, err)) < 0) {
		unit_set_result(u, "resources");
		set_state(s, SVC_FAILED);
		return r;
	}
	struct unit_run_ctx ctx;
	fill_ctx(s, &ctx, false);
	if ((r = unit_exec_dirs_make(u->def, &ctx, err)) < 0 ||
	    (r = unit_private_tmp_make(u->def, m->root, s->private_tmp, sizeof(s->private_tmp),
	                               err)) < 0) {
		unit_set_result(u, "resources");
		set_state(s, SVC_FAILED);
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
	set_state(s, SVC_START_PRE);
	deadline_set(s, u->def->service.timeout_start_us);
	run_list(s, &u->def->service.exec_start_pre);
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
		timer_disarm(&s->t_deadline);
		set_state(s, SVC_DEAD);
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
		enter_signal(s, false);
		return 1;
	}
	enter_stop(s, "success");
	return 1;
}

static int svc_reload(struct unit *u, struct err *err)
{
	struct svc *s = u->type_data;
	if (!s || (s->state != SVC_RUNNING && s->state != SVC_EXITED))
		return err_set(err, -ENOTCONN, ERR_FAILED_PRECONDITION,
		               "unit \"%s\" is not running, cannot reload", u->name);
	set_state(s, SVC_RELOAD);
	run_list(s, &u->def->service.exec_reload);
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
	snprintf(why, size, "units: %s is in %s%s", u->name, state_names[s->state],
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
		int r = exec_wait(m->cells, s->cell, "main", on_exec_done, ref, &st, NULL);
		if (r == 0) /* it ended across the re-exec: its real status */
			on_exec_done(0, &st, ref);
		else if (r < 0) {
			free(ref);
			return snprintf(why, size, "its main process (pid %d) is not in its cell",
			                (int)s->main_pid),
			       -ESRCH;
		}
		return 0;
	}
	pid_t pid = s->main_pid;
	if (!unit_cell_holds(s->cell, pid) || adopt_main(s, pid) < 0) {
		log_warn("units: %s: its main process (pid %d) ended across the re-exec; status "
		         "unknown",
		         s->u->name, (int)pid);
		s->main_pid = 0;
		on_cmd_exit(s, true, 0, 0, 0);
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
			watchdog_arm(s);
		break;
	case SVC_AUTO_RESTART:
		timer_arm(s, &s->t_deadline, s->carried_restart_ms ? s->carried_restart_ms : 1);
		break;
	case SVC_DEAD:
		if (s->invocation_id[0]) /* its empty cell goes, as after a stop */
			timer_arm(s, &s->t_poll, 0);
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
    .start = svc_start,
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
				adopt_main(s, (pid_t)p);
		} else if (n == 11 && memcmp(line, "RELOADING=1", 11) == 0 &&
		           s->state == SVC_RUNNING)
			unit_set_active(u, UNIT_ACTIVE_RELOADING, "reload");
		else if (n == 10 && memcmp(line, "STOPPING=1", 10) == 0)
			unit_set_active(u, UNIT_ACTIVE_DEACTIVATING, "stop-sigterm");
		else if (n == 10 && memcmp(line, "WATCHDOG=1", 10) == 0 &&
		         (s->state == SVC_RUNNING || s->state == SVC_RELOAD))
			watchdog_arm(s);
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
					watchdog_arm(s);
			}
		}
	}
	if (wd_trigger) {
		watchdog_fire(s);
		return;
	}
	if (!ready)
		return;
	if (s->state == SVC_START && u->def->service.type == UNIT_SVC_NOTIFY && !s->ready) {
		s->ready = true;
		enter_start_post(s);
	} else if (s->state == SVC_RUNNING) {
		unit_set_active(u, UNIT_ACTIVE_ACTIVE, "running"); /* after RELOADING=1 */
	}
}
