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
#include <sys/epoll.h>
#include <sys/timerfd.h>

const char *exec_state_name(enum exec_state s)
{
	switch (s) {
	case EXEC_STARTING:
		return "starting";
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
             struct err *err)
{
	struct cell *ce;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	struct exec *e;
	list_for_each(e, &ce->execs, node)
		if (name && strcmp(e->name, name) == 0) {
			*ret = e;
			return 0;
		}
	if (!cell_name_valid(name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s/%s\": names are 1-%d of [A-Za-z0-9_.-], not . or ..",
		               cell, name ? name : "", CELLS_NAME_MAX);
	return err_set(err, -ENOENT, ERR_NOT_FOUND, "exec \"%s/%s\" not found", cell, name);
}

void exec_fill_status(const struct exec *e, struct exec_status *st)
{
	memset(st, 0, sizeof(*st));
	str_copy(st->cell, sizeof(st->cell), e->cell->path);
	str_copy(st->name, sizeof(st->name), e->name);
	st->state = e->state;
	st->pid = e->pid;
	st->exited = e->exited;
	st->exit_code = e->exit_code;
	st->signal = e->signal;
	st->status_unknown = e->status_unknown;
	st->terminal = e->spec && e->spec->terminal;
	st->restarts = e->restarts;
	st->started_ns = e->started_ns;
	st->exited_ns = e->exited_ns;
	st->log_bytes[0] = e->ring[0].end;
	st->log_bytes[1] = e->ring[1].end;
}

void exec_waiters_finish(struct exec *e, int result)
{
	struct exec_status st;
	exec_fill_status(e, &st);
	for (size_t i = 0; i < EXEC_WAITERS_MAX; i++) {
		struct exec_waiter *w = &e->waiters[i];
		if (w->used) {
			w->used = false;
			w->done(result, &st, w->data);
		}
	}
}

static int add_waiter(struct exec *e, exec_done_fn done, void *data, struct err *err)
{
	if (!done)
		return 0;
	for (size_t i = 0; i < EXEC_WAITERS_MAX; i++)
		if (!e->waiters[i].used) {
			e->waiters[i] =
			    (struct exec_waiter){.done = done, .data = data, .used = true};
			return 0;
		}
	return err_set(err, -EUSERS, ERR_RESOURCE_EXHAUSTED,
	               "exec \"%s\": already %d waits pending", e->label, EXEC_WAITERS_MAX);
}

int exec_kill(struct exec *e, int sig)
{
	if (!e->token)
		return -ESRCH;
	if (e->token->child)
		return child_signal(e->token->child, sig);
	/* Tracked but not linked yet (a start's first steps): unreaped, so
	 * the pid cannot be recycled. */
	return kill(e->pid, sig) < 0 ? -errno : 0;
}

static void exec_timer_fired(struct ev_source *src, uint32_t events);

int exec_timer_arm(struct exec *e, uint64_t ms)
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
	if (timerfd_settime(e->timer.fd, 0, &its, NULL) < 0)
		return -errno;
	e->timer_due = now_monotonic_ns() + ms * 1000000ull;
	return 0;
}

void exec_timer_disarm(struct exec *e)
{
	struct itimerspec none = {0};
	e->timer_due = 0;
	if (e->timer.fd >= 0)
		timerfd_settime(e->timer.fd, 0, &none, NULL);
}

/* ---- exits and restarts -------------------------------------------------- */

static bool wants_restart(const struct exec *e)
{
	if (e->no_restart || e->spec->restart == EXEC_RESTART_NO)
		return false;
	if (e->spec->restart == EXEC_RESTART_ALWAYS)
		return true;
	return e->signal != 0 || e->exit_code != 0 || e->status_unknown;
}

static void schedule_restart(struct exec *e)
{
	if (e->exited_ns - e->started_ns >= EXEC_BACKOFF_RESET_MS * 1000000ull)
		e->attempt = 0; /* it ran long enough: a fresh failure, not a loop */
	uint64_t delay =
	    exec_backoff_ms(e->attempt, e->spec->backoff_base_ms, e->spec->backoff_cap_ms);
	if (e->attempt < UINT32_MAX)
		e->attempt++;
	int r = exec_timer_arm(e, delay);
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

void exec_run_ended(struct exec *e)
{
	e->state = EXEC_EXITED;
	e->exited = true;
	e->exited_ns = now_monotonic_ns();
	exec_timer_disarm(e);
	if (e->stdin_fd >= 0) {
		close(e->stdin_fd);
		e->stdin_fd = -1;
	}
	cells_emit(e->owner, &(struct cells_event){.type = CELLS_EV_EXEC_EXIT,
	                                           .cell = e->cell->path,
	                                           .exec = e->name,
	                                           .pid = e->pid,
	                                           .exit_code = e->exit_code,
	                                           .signal = e->signal,
	                                           .status_unknown = e->status_unknown});
	exec_waiters_finish(e, 0);
	if (wants_restart(e))
		schedule_restart(e);
	exec_output_maybe_end(e);
}

void exec_on_child_exit(const siginfo_t *si, void *data)
{
	struct exec_token *token = data;
	struct exec *e = token->e;
	free(token);
	if (!e)
		return; /* its executable was forgotten while it ran */
	e->token = NULL;
	e->status_unknown = !child_status_known(si);
	if (e->status_unknown) {
		e->exit_code = e->signal = 0;
	} else if (si->si_code == CLD_EXITED) {
		e->exit_code = si->si_status;
		e->signal = 0;
	} else {
		e->exit_code = 0;
		e->signal = si->si_status;
	}
	struct cells *c = e->owner;
	struct cell *cell = e->cell;
	if (e->state != EXEC_STARTING || exec_start_reaped(e, si))
		exec_run_ended(e);
	cells_exec_gone(c, cell);
}

static void exec_timer_fired(struct ev_source *src, uint32_t events)
{
	struct exec *e = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	e->timer_due = 0;
	if (e->state == EXEC_STARTING) {
		exec_start_timeout(e);
		return;
	}
	if (e->state == EXEC_STOPPING && e->token) {
		log_debug("exec \"%s\": grace over, SIGKILL", e->label);
		exec_kill(e, SIGKILL);
		return;
	}
	if (e->state != EXEC_BACKOFF)
		return;
	struct err err;
	e->restarts++;
	if (exec_run(e, &err) < 0) {
		log_warn("%s", err.msg);
		e->exit_code = 127;
		e->signal = 0;
		e->started_ns = now_monotonic_ns();
		exec_run_ended(e);
	}
}

/* ---- the table -------------------------------------------------------------- */

struct exec *exec_alloc(struct cells *c, struct cell *cell, const char *name)
{
	struct exec *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	*e = (struct exec){.owner = c,
	                   .cell = cell,
	                   .stdin_fd = -1,
	                   .timer = {.fd = -1},
	                   .status = {.fd = -1},
	                   .state = EXEC_EXITED};
	str_copy(e->name, sizeof(e->name), name);
	snprintf(e->label, sizeof(e->label), "%s/%s", cell->path, name);
	return e;
}

int exec_fds_hold(struct exec *e, struct err *err)
{
	int *fds = (int *)e->spec->pass_fds; /* the record's copy of the spec */
	if (e->spec->restart == EXEC_RESTART_NO || !e->spec->npass_fds)
		return 0;
	for (size_t i = 0; i < e->spec->npass_fds; i++) {
		int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			int r = -errno;
			e->spec->npass_fds = i; /* only the copies made are closed */
			e->fds_held = true;
			exec_fds_drop(e);
			return err_set(err, r, ERR_INVALID_ARGUMENT,
			               "exec \"%s\": fd %d to pass: %s", e->label, fds[i],
			               strerror(-r));
		}
		fds[i] = fd;
	}
	e->fds_held = true;
	return 0;
}

void exec_fds_drop(struct exec *e)
{
	if (!e->spec || !e->fds_held)
		return;
	for (size_t i = 0; i < e->spec->npass_fds; i++)
		close(e->spec->pass_fds[i]);
	e->spec->npass_fds = 0;
	e->fds_held = false;
}

void exec_free(struct exec *e)
{
	struct cells *c = e->owner;
	list_remove(&e->node);
	c->nexecs--;
	exec_start_forget(e);
	if (e->token)
		e->token->e = NULL;
	exec_waiters_finish(e, -ECANCELED);
	e->state = EXEC_EXITED;
	exec_output_free(e); /* closes the pipes, so followers end below */
	exec_output_maybe_end(e);
	if (e->timer.fd >= 0) {
		ev_del(c->loop, &e->timer);
		close(e->timer.fd);
	}
	exec_fds_drop(e);
	exec_spec_free(e->spec);
	free(e);
}

void exec_free_all(struct cells *c, struct cell *cell)
{
	(void)c;
	while (!list_is_empty(&cell->execs))
		exec_free(list_first_entry(&cell->execs, struct exec, node));
}

size_t exec_count(const struct cell *cell)
{
	size_t n = 0;
	const struct exec *e;
	list_for_each(e, &cell->execs, node)
		n++;
	return n;
}

bool exec_any_running(const struct cell *cell)
{
	const struct exec *e;
	list_for_each(e, &cell->execs, node)
		if (e->token)
			return true;
	const struct cell *ch;
	list_for_each(ch, &cell->children, sibling)
		if (exec_any_running(ch))
			return true;
	return false;
}

void exec_no_restart_subtree(struct cell *cell)
{
	struct exec *e;
	list_for_each(e, &cell->execs, node) {
		e->no_restart = true;
		if (e->state == EXEC_BACKOFF) {
			exec_timer_disarm(e);
			e->state = EXEC_EXITED;
			exec_output_maybe_end(e);
		}
	}
	struct cell *ch;
	list_for_each(ch, &cell->children, sibling)
		exec_no_restart_subtree(ch);
}

/* ---- signal, stop, wait, status, list, delete ------------------------------- */

int exec_signal(struct cells *c, const char *cell, const char *name, int sig, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (sig < 0 || sig >= NSIG)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "exec \"%s\": no signal %d",
		               e->label, sig);
	if (!e->token)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION, "exec \"%s\" is not running",
		               e->label);
	if ((r = exec_kill(e, sig)) < 0)
		return err_set_errno(err, r, "exec \"%s\": kill: %s", e->label, strerror(-r));
	return 0;
}

int exec_stop(struct cells *c, const char *cell, const char *name, uint64_t grace_ms,
              exec_done_fn done, void *data, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	e->no_restart = true;
	if (e->state == EXEC_BACKOFF) {
		exec_timer_disarm(e);
		e->state = EXEC_EXITED;
		exec_output_maybe_end(e);
	}
	if (!e->token)
		return 0;
	if ((r = add_waiter(e, done, data, err)) < 0)
		return r;
	if (e->state == EXEC_STARTING) {
		/* kin's own setup code runs, not the program: nothing to be
		 * graceful with. Answered with the run's end, once reaped. */
		exec_start_cancel(e);
		if (e->state == EXEC_STARTING)
			return 1;
	}
	if (e->state == EXEC_STOPPING)
		return 1; /* the first stop's timer stands */
	e->state = EXEC_STOPPING;
	exec_kill(e, SIGTERM);
	exec_kill(e, SIGCONT);
	if ((r = exec_timer_arm(e, grace_ms)) < 0) {
		exec_kill(e, SIGKILL);
		log_warn("exec \"%s\": no grace timer (%s): SIGKILL", e->label, strerror(-r));
	}
	return 1;
}

int exec_wait(struct cells *c, const char *cell, const char *name, exec_done_fn done, void *data,
              struct exec_status *st, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->state == EXEC_EXITED) {
		if (st)
			exec_fill_status(e, st);
		return 0;
	}
	if (!done)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s\": wait without a callback", e->label);
	r = add_waiter(e, done, data, err);
	return r < 0 ? r : 1;
}

int exec_unwait(struct cells *c, const char *cell, const char *name, exec_done_fn done, void *data)
{
	struct exec *e;
	if (exec_get(c, cell, name, &e, NULL) < 0)
		return -ENOENT;
	for (size_t i = 0; i < EXEC_WAITERS_MAX; i++)
		if (e->waiters[i].used && e->waiters[i].done == done &&
		    e->waiters[i].data == data) {
			e->waiters[i].used = false;
			return 0;
		}
	return -ENOENT;
}

int exec_status(struct cells *c, const char *cell, const char *name, struct exec_status *st,
                struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	exec_fill_status(e, st);
	return 0;
}

static int list_cell(struct cell *cell, bool recurse, exec_visit_fn fn, void *data)
{
	struct exec_status st;
	struct exec *e;
	list_for_each(e, &cell->execs, node) {
		exec_fill_status(e, &st);
		int r = fn(&st, data);
		if (r < 0)
			return r;
	}
	struct cell *ch;
	if (recurse)
		list_for_each(ch, &cell->children, sibling) {
			int r = list_cell(ch, true, fn, data);
			if (r < 0)
				return r;
		}
	return 0;
}

int exec_list(struct cells *c, const char *cell, exec_visit_fn fn, void *data, struct err *err)
{
	if (!cell || !*cell)
		return list_cell(&c->top, true, fn, data);
	struct cell *ce;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	return list_cell(ce, false, fn, data);
}

int exec_release_set(struct cells *c, const char *cell, const char *name,
                     void (*release)(void *data), void *data, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->spec->release || !e->spec->release_carried)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION, "exec \"%s\": %s", e->label,
		               e->spec->release ? "it has a release hook already"
		                                : "its spec carried no release hook");
	e->spec->release = release;
	e->spec->release_data = data;
	return 0;
}

int exec_delete(struct cells *c, const char *cell, const char *name, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (e->token || e->state == EXEC_BACKOFF)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
		               "exec \"%s\" is %s (stop it first)", e->label,
		               exec_state_name(e->state));
	exec_free(e);
	return 0;
}

static void stopped(int result, const struct exec_status *st, void *data)
{
	(void)result, (void)st, (void)data;
}

struct stop_ctx {
	struct cells *cells;
	uint64_t grace_ms;
	size_t n;
};

static int stop_one(const struct exec_status *st, void *data)
{
	struct stop_ctx *sc = data;
	if (st->state == EXEC_EXITED)
		return 0;
	/* Visiting is read-only: exec_stop only signals and arms a timer. */
	if (exec_stop(sc->cells, st->cell, st->name, sc->grace_ms, stopped, NULL, NULL) == 1)
		sc->n++;
	return 0;
}

size_t exec_stop_all(struct cells *c, uint64_t grace_ms)
{
	struct stop_ctx sc = {.cells = c, .grace_ms = grace_ms};
	exec_list(c, NULL, stop_one, &sc, NULL);
	return sc.n;
}
