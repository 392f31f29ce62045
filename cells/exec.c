/* exec: executables in cells — start (preparing what the child needs, then
 * spawn.c), exits through lib's child table, restarts with exponential
 * backoff on a timerfd, stop (SIGTERM, grace, SIGKILL), wait, status, list,
 * delete. An executable's record stays after it ends, until it is deleted,
 * replaced by a new start of its name, or evicted (oldest ended first) when
 * the table is full. */
#include "cells/cells-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const char *exec_state_name(enum exec_state s)
{
	switch (s) {
	case EXEC_RUNNING:
		return "running";
	case EXEC_STOPPING:
		return "stopping";
	case EXEC_BACKOFF:
		return "backoff";
	case EXEC_EXITED:
		return "exited";
	}
	return "?";
}

int exec_get(struct cells *c, const char *cell, const char *name, struct exec **ret,
             struct cells_err *err)
{
	struct cell *ce;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	for (struct exec *e = ce->execs; e; e = e->next)
		if (name && strcmp(e->name, name) == 0) {
			*ret = e;
			return 0;
		}
	if (!cell_name_valid(name))
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
		                  "exec \"%s/%s\": names are 1-%d of [A-Za-z0-9_.-], not . or ..",
		                  cell, name ? name : "", CELLS_NAME_MAX);
	return cells_fail(err, -ENOENT, CELLS_NOT_FOUND, "exec \"%s/%s\" not found", cell, name);
}

static void fill_status(const struct exec *e, struct exec_status *st)
{
	memset(st, 0, sizeof(*st));
	str_copy(st->cell, sizeof(st->cell), e->cell->path);
	str_copy(st->name, sizeof(st->name), e->name);
	st->state = e->state;
	st->pid = e->pid;
	st->exited = e->exited;
	st->exit_code = e->exit_code;
	st->signal = e->signal;
	st->restarts = e->restarts;
	st->started_ns = e->started_ns;
	st->exited_ns = e->exited_ns;
	st->log_bytes[0] = e->ring[0].end;
	st->log_bytes[1] = e->ring[1].end;
}

static void waiters_finish(struct exec *e, int result)
{
	struct exec_status st;
	fill_status(e, &st);
	for (size_t i = 0; i < EXEC_WAITERS_MAX; i++) {
		struct exec_waiter *w = &e->waiters[i];
		if (w->used) {
			w->used = false;
			w->done(result, &st, w->data);
		}
	}
}

static int add_waiter(struct exec *e, exec_done_fn done, void *data, struct cells_err *err)
{
	if (!done)
		return 0;
	for (size_t i = 0; i < EXEC_WAITERS_MAX; i++)
		if (!e->waiters[i].used) {
			e->waiters[i] =
			    (struct exec_waiter){.done = done, .data = data, .used = true};
			return 0;
		}
	return cells_fail(err, -EUSERS, CELLS_RESOURCE_EXHAUSTED,
	                  "exec \"%s\": already %d waits pending", e->label, EXEC_WAITERS_MAX);
}

static void exec_timer_fired(struct ev_source *src, uint32_t events);

static int timer_arm(struct exec *e, uint64_t ms)
{
	if (e->timer.fd < 0) {
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		e->timer = (struct ev_source){.fd = fd, .fn = exec_timer_fired, .data = e};
		int r = ev_add(e->owner->loop, &e->timer, EPOLLIN);
		if (r < 0) {
			close(fd);
			e->timer.fd = -1;
			return r;
		}
	}
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000}};
	if (ms == 0)
		its.it_value.tv_nsec = 1; /* zero would disarm */
	return timerfd_settime(e->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static void timer_disarm(struct exec *e)
{
	struct itimerspec none = {0};
	if (e->timer.fd >= 0)
		timerfd_settime(e->timer.fd, 0, &none, NULL);
}

/* ---- one run -------------------------------------------------------------- */

static void on_child_exit(const siginfo_t *si, void *data);

static int build_caps(const struct exec_spec *s, cap_t *ret)
{
	cap_t caps = cap_init();
	if (!caps)
		return -ENOMEM;
	cap_value_t list[64];
	int n = 0;
	for (int cap = 0; cap < 64 && cap <= CAP_LAST_CAP; cap++)
		if ((s->caps >> cap) & 1)
			list[n++] = cap;
	if (n && (cap_set_flag(caps, CAP_PERMITTED, n, list, CAP_SET) < 0 ||
	          cap_set_flag(caps, CAP_EFFECTIVE, n, list, CAP_SET) < 0 ||
	          cap_set_flag(caps, CAP_INHERITABLE, n, list, CAP_SET) < 0)) {
		cap_free(caps);
		return -EINVAL;
	}
	*ret = caps;
	return 0;
}

static int build_seccomp(struct exec *e, struct sock_fprog *prog, struct cells_err *err)
{
	const struct exec_spec *s = e->spec;
	if (s->seccomp == EXEC_SECCOMP_NONE)
		return 0;
	if (s->seccomp == EXEC_SECCOMP_DEFAULT)
		return exec_sc_build(NULL, s->caps, prog, err);
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct exec_sc_profile *p = malloc(sizeof(*p));
	if (!p)
		return cells_fail(err, -ENOMEM, CELLS_RESOURCE_EXHAUSTED, "out of memory");
	int r = file_read_small(s->seccomp_file, EXEC_SC_FILE_MAX, &text, NULL);
	if (r < 0)
		return cells_fail(err, r, CELLS_INVALID_ARGUMENT, "seccomp profile %s: %s",
		                  s->seccomp_file, strerror(-r));
	r = exec_sc_parse(text, p, err);
	if (r < 0)
		return r;
	return exec_sc_build(p, s->caps, prog, err);
}

/* Prefixes err's message with the executable's name. */
static int exec_fail_prefix(struct exec *e, int r, struct cells_err *err)
{
	cells_err_prefix(err, "exec", e->label);
	return r;
}

/* Starts one run of e: everything that can fail before the child exists
 * is prepared first; whatever failed is undone by the cleanups. */
static int exec_run(struct exec *e, struct cells_err *err)
{
	const struct exec_spec *s = e->spec;
	struct spawn_req req = {.spec = s, .label = e->label};
	_cleanup_close_ int cg = -1, in_r = -1, in_w = -1, out_r = -1, out_w = -1, err_r = -1,
	                    err_w = -1;
	_cleanup_free_ struct sock_filter *filter = NULL;
	char dir[PATH_MAX];
	cap_t caps = NULL;
	int fds[2], r;

	r = build_seccomp(e, &req.seccomp, err);
	if (r < 0)
		return exec_fail_prefix(e, r, err);
	filter = req.seccomp.filter;
	if ((r = build_caps(s, &caps)) < 0)
		return cells_fail_errno(err, r, "exec \"%s\": capabilities: %s", e->label,
		                        strerror(-r));
	req.caps_state = caps;
	cells_cell_dir(e->owner, e->cell, dir, sizeof(dir));
	if ((cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = cells_fail_errno(err, -errno, "exec \"%s\": %s: %m", e->label, dir);
		goto out;
	}
	if (s->stdin_pipe ? pipe2(fds, O_CLOEXEC)
	                  : (fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		r = cells_fail_errno(err, -errno, "exec \"%s\": stdin: %m", e->label);
		goto out;
	}
	in_r = fds[0], in_w = s->stdin_pipe ? fds[1] : -1;
	if (pipe2(fds, O_CLOEXEC) < 0 ||
	    (out_r = fds[0], out_w = fds[1], pipe2(fds, O_CLOEXEC) < 0)) {
		r = cells_fail_errno(err, -errno, "exec \"%s\": output pipes: %m", e->label);
		goto out;
	}
	err_r = fds[0], err_w = fds[1];
	req.cgroup_fd = cg;
	req.stdio[0] = in_r, req.stdio[1] = out_w, req.stdio[2] = err_w;
	const char *path = exec_env_get(s->env, "PATH");
	size_t n = 0;
	if (!path)
		req.envp[n++] = (char *)"PATH=" DEFAULT_PATH;
	for (size_t i = 0; s->env && s->env[i]; i++)
		req.envp[n++] = s->env[i];
	req.envp[n] = NULL;
	req.path = path ? path : DEFAULT_PATH;

	struct exec_token *token = calloc(1, sizeof(*token));
	if (!token) {
		r = cells_fail(err, -ENOMEM, CELLS_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	pid_t pid;
	int pidfd;
	r = exec_spawn(&req, &pid, &pidfd, err);
	if (r < 0) {
		free(token);
		goto out;
	}
	token->e = e;
	r = child_track(e->owner->children, pid, pidfd, on_child_exit, token, NULL);
	if (r < 0) {
		/* Untracked, it would never be reaped: kill it now, reap it later
		 * through the owner's orphan sweep. */
		kill(pid, SIGKILL);
		free(token);
		cells_fail_errno(err, r, "exec \"%s\": cannot track pid %d: %s", e->label, (int)pid,
		                 strerror(-r));
		goto out;
	}
	e->token = token;
	e->pid = pid;
	e->state = EXEC_RUNNING;
	e->exited = false;
	e->exit_code = e->signal = 0;
	e->started_ns = now_monotonic_ns();
	if (e->stdin_fd >= 0)
		close(e->stdin_fd);
	e->stdin_fd = TAKE_FD(in_w);
	if (e->stdin_fd >= 0)
		fd_set_nonblock(e->stdin_fd, true);
	r = exec_output_attach(e, TAKE_FD(out_r), TAKE_FD(err_r));
	if (r < 0)
		log_warn("exec \"%s\": output not captured: %s", e->label, strerror(-r));
	r = 0;
	cells_emit(e->owner, &(struct cells_event){.type = CELLS_EV_EXEC_START,
	                                           .cell = e->cell->path,
	                                           .exec = e->name,
	                                           .pid = pid,
	                                           .count = e->restarts});
out:
	cap_free(caps);
	return r;
}

/* ---- exits and restarts -------------------------------------------------- */

static bool wants_restart(const struct exec *e)
{
	if (e->no_restart || e->spec->restart == EXEC_RESTART_NO)
		return false;
	if (e->spec->restart == EXEC_RESTART_ALWAYS)
		return true;
	return e->signal != 0 || e->exit_code != 0;
}

static void schedule_restart(struct exec *e)
{
	if (e->exited_ns - e->started_ns >= EXEC_BACKOFF_RESET_MS * 1000000ull)
		e->attempt = 0; /* it ran long enough: a fresh failure, not a loop */
	uint64_t delay =
	    exec_backoff_ms(e->attempt, e->spec->backoff_base_ms, e->spec->backoff_cap_ms);
	if (e->attempt < UINT32_MAX)
		e->attempt++;
	int r = timer_arm(e, delay);
	if (r < 0) {
		log_warn("exec \"%s\": cannot schedule a restart: %s", e->label, strerror(-r));
		return;
	}
	e->state = EXEC_BACKOFF;
	cells_emit(e->owner, &(struct cells_event){.type = CELLS_EV_EXEC_RESTART,
	                                           .cell = e->cell->path,
	                                           .exec = e->name,
	                                           .pid = e->pid,
	                                           .count = e->restarts + 1,
	                                           .delay_ms = delay});
}

/* A run ended (reaped, or failed to start on a restart). */
static void run_ended(struct exec *e)
{
	e->state = EXEC_EXITED;
	e->exited = true;
	e->exited_ns = now_monotonic_ns();
	timer_disarm(e);
	if (e->stdin_fd >= 0) {
		close(e->stdin_fd);
		e->stdin_fd = -1;
	}
	cells_emit(e->owner, &(struct cells_event){.type = CELLS_EV_EXEC_EXIT,
	                                           .cell = e->cell->path,
	                                           .exec = e->name,
	                                           .pid = e->pid,
	                                           .exit_code = e->exit_code,
	                                           .signal = e->signal});
	waiters_finish(e, 0);
	if (wants_restart(e))
		schedule_restart(e);
	exec_output_maybe_end(e);
}

static void on_child_exit(const siginfo_t *si, void *data)
{
	struct exec_token *token = data;
	struct exec *e = token->e;
	free(token);
	if (!e)
		return; /* its executable was forgotten while it ran */
	e->token = NULL;
	if (si->si_code == CLD_EXITED) {
		e->exit_code = si->si_status;
		e->signal = 0;
	} else {
		e->exit_code = 0;
		e->signal = si->si_status;
	}
	struct cell *cell = e->cell;
	run_ended(e);
	cells_exec_gone(e->owner, cell);
}

static void exec_timer_fired(struct ev_source *src, uint32_t events)
{
	struct exec *e = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	if (e->state == EXEC_STOPPING && e->token) {
		log_debug("exec \"%s\": grace over, SIGKILL", e->label);
		kill(e->pid, SIGKILL); /* pid is ours until reaped: not recycled */
		return;
	}
	if (e->state != EXEC_BACKOFF)
		return;
	struct cells_err err;
	e->restarts++;
	if (exec_run(e, &err) < 0) {
		log_warn("%s", err.msg);
		e->exit_code = 127;
		e->signal = 0;
		e->started_ns = now_monotonic_ns();
		run_ended(e);
	}
}

/* ---- the table -------------------------------------------------------------- */

static void exec_free(struct exec *e)
{
	struct cells *c = e->owner;
	for (struct exec **p = &e->cell->execs; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	c->nexecs--;
	if (e->token)
		e->token->e = NULL;
	waiters_finish(e, -ECANCELED);
	e->state = EXEC_EXITED;
	exec_output_free(e); /* closes the pipes, so followers end below */
	exec_output_maybe_end(e);
	if (e->timer.fd >= 0) {
		ev_del(c->loop, &e->timer);
		close(e->timer.fd);
	}
	exec_spec_free(e->spec);
	free(e);
}

void exec_free_all(struct cells *c, struct cell *cell)
{
	(void)c;
	while (cell->execs)
		exec_free(cell->execs);
}

size_t exec_count(const struct cell *cell)
{
	size_t n = 0;
	for (const struct exec *e = cell->execs; e; e = e->next)
		n++;
	return n;
}

bool exec_any_running(const struct cell *cell)
{
	for (const struct exec *e = cell->execs; e; e = e->next)
		if (e->token)
			return true;
	for (const struct cell *ch = cell->first_child; ch; ch = ch->next_sibling)
		if (exec_any_running(ch))
			return true;
	return false;
}

void exec_no_restart_subtree(struct cell *cell)
{
	for (struct exec *e = cell->execs; e; e = e->next) {
		e->no_restart = true;
		if (e->state == EXEC_BACKOFF) {
			timer_disarm(e);
			e->state = EXEC_EXITED;
			exec_output_maybe_end(e);
		}
	}
	for (struct cell *ch = cell->first_child; ch; ch = ch->next_sibling)
		exec_no_restart_subtree(ch);
}

static struct exec *oldest_ended(struct cell *cell, struct exec *best)
{
	for (struct exec *e = cell->execs; e; e = e->next)
		if (e->state == EXEC_EXITED && !e->token && (!best || e->seq < best->seq))
			best = e;
	for (struct cell *ch = cell->first_child; ch; ch = ch->next_sibling)
		best = oldest_ended(ch, best);
	return best;
}

int exec_start(struct cells *c, const char *cell, const char *name, const struct exec_spec *spec,
               struct cells_err *err)
{
	struct cell *ce;
	struct exec *old = NULL;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	if (!cell_name_valid(name))
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
		                  "exec \"%s/%s\": names are 1-%d of [A-Za-z0-9_.-], not . or ..",
		                  cell, name ? name : "", CELLS_NAME_MAX);
	if (!spec)
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT, "exec \"%s/%s\": no spec",
		                  cell, name);
	if ((r = exec_spec_validate(spec, err)) < 0) {
		char label[CELLS_PATH_MAX + CELLS_NAME_MAX + 2];
		snprintf(label, sizeof(label), "%s/%s", cell, name);
		cells_err_prefix(err, "exec", label);
		return r;
	}
	for (struct exec *e = ce->execs; e; e = e->next)
		if (strcmp(e->name, name) == 0)
			old = e;
	if (old && old->state != EXEC_EXITED)
		return cells_fail(err, -EEXIST, CELLS_ALREADY_EXISTS,
		                  "exec \"%s/%s\" is already %s", cell, name,
		                  exec_state_name(old->state));
	if (ce->delete_op.active)
		return cells_fail(err, -EBUSY, CELLS_FAILED_PRECONDITION,
		                  "exec \"%s/%s\": the cell is being deleted", cell, name);
	bool populated, frozen = ce->frozen;
	cells_read_events(c, ce, &populated, &frozen);
	if (frozen)
		return cells_fail(err, -EBUSY, CELLS_FAILED_PRECONDITION,
		                  "exec \"%s/%s\": the cell is frozen (thaw it first)", cell, name);
	if (!old && c->nexecs >= CELLS_EXEC_MAX) {
		struct exec *victim = oldest_ended(&c->top, NULL);
		if (!victim)
			return cells_fail(err, -ENOSPC, CELLS_RESOURCE_EXHAUSTED,
			                  "exec \"%s/%s\": %d executables are running", cell, name,
			                  CELLS_EXEC_MAX);
		exec_free(victim);
	}

	struct exec *e = calloc(1, sizeof(*e));
	if (!e)
		return cells_fail(err, -ENOMEM, CELLS_RESOURCE_EXHAUSTED, "out of memory");
	*e = (struct exec){
	    .owner = c, .cell = ce, .stdin_fd = -1, .timer = {.fd = -1}, .state = EXEC_EXITED};
	str_copy(e->name, sizeof(e->name), name);
	snprintf(e->label, sizeof(e->label), "%s/%s", cell, name);
	r = exec_spec_copy(spec, &e->spec);
	if (r == 0)
		r = exec_output_init(e, spec->log_bytes ? spec->log_bytes : EXEC_LOG_DEFAULT);
	if (r < 0) {
		exec_output_free(e);
		exec_spec_free(e->spec);
		free(e);
		return cells_fail(err, r, CELLS_RESOURCE_EXHAUSTED, "exec \"%s/%s\": %s", cell,
		                  name, strerror(-r));
	}
	/* Linked before the run so its START event names a known executable;
	 * unlinked again if the run fails, leaving nothing behind. */
	e->seq = ++c->exec_seq;
	e->next = ce->execs;
	ce->execs = e;
	c->nexecs++;
	r = exec_run(e, err);
	if (r < 0) {
		exec_free(e);
		return r;
	}
	if (old)
		exec_free(old);
	return 0;
}

/* ---- signal, stop, wait, status, list, delete ------------------------------- */

int exec_signal(struct cells *c, const char *cell, const char *name, int sig, struct cells_err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (sig < 0 || sig >= NSIG)
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT, "exec \"%s\": no signal %d",
		                  e->label, sig);
	if (!e->token)
		return cells_fail(err, -ESRCH, CELLS_FAILED_PRECONDITION,
		                  "exec \"%s\" is not running", e->label);
	/* The pid cannot be recycled while we have not reaped it. */
	if (kill(e->pid, sig) < 0)
		return cells_fail_errno(err, -errno, "exec \"%s\": kill: %m", e->label);
	return 0;
}

int exec_stop(struct cells *c, const char *cell, const char *name, uint64_t grace_ms,
              exec_done_fn done, void *data, struct cells_err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	e->no_restart = true;
	if (e->state == EXEC_BACKOFF) {
		timer_disarm(e);
		e->state = EXEC_EXITED;
		exec_output_maybe_end(e);
	}
	if (!e->token)
		return 0;
	if ((r = add_waiter(e, done, data, err)) < 0)
		return r;
	if (e->state == EXEC_STOPPING)
		return 1; /* the first stop's timer stands */
	e->state = EXEC_STOPPING;
	kill(e->pid, SIGTERM);
	kill(e->pid, SIGCONT);
	if ((r = timer_arm(e, grace_ms)) < 0) {
		kill(e->pid, SIGKILL);
		log_warn("exec \"%s\": no grace timer (%s): SIGKILL", e->label, strerror(-r));
	}
	return 1;
}

int exec_wait(struct cells *c, const char *cell, const char *name, exec_done_fn done, void *data,
              struct exec_status *st, struct cells_err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->state == EXEC_EXITED) {
		if (st)
			fill_status(e, st);
		return 0;
	}
	if (!done)
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
		                  "exec \"%s\": wait without a callback", e->label);
	r = add_waiter(e, done, data, err);
	return r < 0 ? r : 1;
}

int exec_status(struct cells *c, const char *cell, const char *name, struct exec_status *st,
                struct cells_err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	fill_status(e, st);
	return 0;
}

static int list_cell(struct cell *cell, bool recurse, exec_visit_fn fn, void *data)
{
	struct exec_status st;
	for (struct exec *e = cell->execs; e; e = e->next) {
		fill_status(e, &st);
		int r = fn(&st, data);
		if (r < 0)
			return r;
	}
	for (struct cell *ch = recurse ? cell->first_child : NULL; ch; ch = ch->next_sibling) {
		int r = list_cell(ch, true, fn, data);
		if (r < 0)
			return r;
	}
	return 0;
}

int exec_list(struct cells *c, const char *cell, exec_visit_fn fn, void *data,
              struct cells_err *err)
{
	if (!cell || !*cell)
		return list_cell(&c->top, true, fn, data);
	struct cell *ce;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	return list_cell(ce, false, fn, data);
}

int exec_delete(struct cells *c, const char *cell, const char *name, struct cells_err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->token || e->state == EXEC_BACKOFF)
		return cells_fail(err, -EBUSY, CELLS_FAILED_PRECONDITION,
		                  "exec \"%s\" is %s (stop it first)", e->label,
		                  exec_state_name(e->state));
	exec_free(e);
	return 0;
}
