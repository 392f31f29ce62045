/* job: what the manager was asked to do and in which order.
 *
 * A job (start, stop, restart, reload) sits on one unit; asking for one
 * pulls in more (the transaction): a start starts what the unit Requires=,
 * Wants=, BindsTo= and stops what it Conflicts= with; a stop stops what
 * Requires=/BindsTo=/PartOf= it. A waiting job runs once no unit it is
 * ordered after (After=) has a job left — for stops the order is reversed —
 * so a boot is a walk of the graph with as much at once as the order
 * allows. A failed start fails the jobs that required it. Jobs only ever
 * wait on other jobs: when none runs and none may, the order has a cycle,
 * which is logged and broken at the oldest job. */
#include "units/units-int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static const char *const job_names[] = {
    [JOB_START] = "start", [JOB_STOP] = "stop", [JOB_RESTART] = "restart", [JOB_RELOAD] = "reload"};

const char *job_type_name(enum job_type t)
{
	return job_names[t];
}

static const char *const units_job_names[UNITS_JOB_TYPE_COUNT] = {
    [UNITS_JOB_START] = "start",
    [UNITS_JOB_STOP] = "stop",
    [UNITS_JOB_RESTART] = "restart",
    [UNITS_JOB_RELOAD] = "reload",
    [UNITS_JOB_TRY_RESTART] = "try-restart",
    [UNITS_JOB_RELOAD_OR_RESTART] = "reload-or-restart",
    [UNITS_JOB_TRY_RELOAD_OR_RESTART] = "try-reload-or-restart",
};

const char *units_job_type_name(enum units_job_type t)
{
	return t < UNITS_JOB_TYPE_COUNT ? units_job_names[t] : "invalid";
}

int job_wait_add(struct job *j, units_job_done_fn done, void *data)
{
	if (j->nwaiters >= JOB_WAITERS_MAX)
		return -E2BIG;
	j->waiters[j->nwaiters++] = (struct job_waiter){done, data};
	return 0;
}

static void job_unlink(struct units *m, struct job *j)
{
	for (struct job **p = &m->jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			m->njobs--;
			break;
		}
	if (j->u->job == j)
		j->u->job = NULL;
}

/* Ends j: its waiters hear result, the next dispatch sees it gone. */
static void job_finish(struct job *j, int result, const struct err *err)
{
	struct units *m = j->u->m;
	log_debug("units: %s %s: %s", job_type_name(j->type), j->u->name,
	          result < 0 ? (err && err->msg[0] ? err->msg : strerror(-result)) : "done");
	job_unlink(m, j);
	struct err ok = {0};
	for (size_t i = 0; i < j->nwaiters; i++)
		if (j->waiters[i].done)
			j->waiters[i].done(result, err ? err : &ok, j->waiters[i].data);
	free(j);
	units_dispatch_later(m);
}

static struct job *job_new(struct units *m, struct unit *u, enum job_type type)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->u = u;
	j->type = type;
	j->state = JOB_WAITING;
	struct job **p = &m->jobs;
	while (*p)
		p = &(*p)->next;
	*p = j;
	m->njobs++;
	u->job = j;
	return j;
}

static bool usable(const struct unit *u)
{
	return u->def && !u->def->source.masked;
}

static int add_rec(struct units *m, struct unit *u, enum job_type type, unsigned depth,
                   struct job **ret, struct err *err);

static void add_deps_of_start(struct units *m, struct unit *u, unsigned depth)
{
	static const enum unit_dep pulled[] = {UNIT_DEP_REQUIRES, UNIT_DEP_BINDS_TO, UNIT_DEP_WANTS,
	                                       UNIT_DEP_UPHOLDS};
	for (size_t k = 0; k < ARRAY_SIZE(pulled); k++)
		for (size_t i = 0; i < u->deps[pulled[k]].n; i++) {
			struct unit *x = u->deps[pulled[k]].v[i];
			if (!usable(x)) /* a missing Requires= fails u when it runs */
				continue;
			if (x->active == UNIT_ACTIVE_ACTIVE && !x->job)
				continue;
			add_rec(m, x, JOB_START, depth + 1, NULL, NULL);
		}
	for (size_t i = 0; i < u->deps[UNIT_DEP_CONFLICTS].n; i++) {
		struct unit *x = u->deps[UNIT_DEP_CONFLICTS].v[i];
		if (x->active != UNIT_ACTIVE_INACTIVE && x->active != UNIT_ACTIVE_FAILED)
			add_rec(m, x, JOB_STOP, depth + 1, NULL, NULL);
		else if (x->job && x->job->type != JOB_STOP && x->job->state == JOB_WAITING) {
			struct err e = {0};
			err_set(&e, -ECANCELED, ERR_ABORTED, "unit \"%s\": conflicts with %s",
			        x->name, u->name);
			job_finish(x->job, -ECANCELED, &e);
		}
	}
}

static void add_deps_of_stop(struct units *m, struct unit *u, unsigned depth)
{
	for (int k = 0; k < UNIT_RDEP_COUNT; k++)
		for (size_t i = 0; i < u->rdeps[k].n; i++) {
			struct unit *x = u->rdeps[k].v[i];
			if (x->active != UNIT_ACTIVE_INACTIVE ||
			    (x->job && x->job->type != JOB_STOP))
				add_rec(m, x, JOB_STOP, depth + 1, NULL, NULL);
		}
}

static int add_rec(struct units *m, struct unit *u, enum job_type type, unsigned depth,
                   struct job **ret, struct err *err)
{
	if (depth > UNITS_MAX)
		return 0;
	struct job *j = u->job;
	if (j && j->type == type) {
		if (ret)
			*ret = j;
		return 0;
	}
	if (j && j->state == JOB_RUNNING) {
		if (type != JOB_STOP || j->type == JOB_STOP) {
			/* the running job stands for the new one (a start asked
			 * while one runs waits for that start) */
			if (ret)
				*ret = j;
			return 0;
		}
		/* A stop replaces a running start: the start's callers hear
		 * it was cancelled, the type's stop interrupts the start. */
		struct err e = {0};
		err_set(&e, -ECANCELED, ERR_ABORTED, "unit \"%s\": its %s was replaced by a stop",
		        u->name, job_type_name(j->type));
		job_unlink(m, j);
		for (size_t i = 0; i < j->nwaiters; i++)
			if (j->waiters[i].done)
				j->waiters[i].done(-ECANCELED, &e, j->waiters[i].data);
		free(j);
		j = NULL;
	}
	if (j) /* waiting: the new kind wins (stop after start = stop) */
		j->type = type;
	else if (!(j = job_new(m, u, type)))
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	if (ret)
		*ret = j;
	if (type == JOB_START || type == JOB_RESTART)
		add_deps_of_start(m, u, depth);
	if (type == JOB_STOP || type == JOB_RESTART)
		add_deps_of_stop(m, u, depth);
	return 0;
}

int units_job_add(struct units *m, struct unit *u, enum job_type type, struct job **ret,
                  struct err *err)
{
	struct job *j = NULL;
	int r = add_rec(m, u, type, 0, &j, err);
	if (r < 0)
		return r;
	if (!j)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION, "unit \"%s\": job not queued",
		               u->name);
	if (ret)
		*ret = j;
	return 0;
}

/* ---- running ----------------------------------------------------------------- */

static bool is_stopping(const struct job *j)
{
	return j->type == JOB_STOP || (j->type == JOB_RESTART && !j->restart_stopped);
}

/* A job may run when no unit ordered before it (for starts) or after it
 * (for stops) still has a job. A stop always goes before a start of
 * units ordered either way (systemd's rule). */
static bool runnable(const struct job *j)
{
	const struct unit *u = j->u;
	if (is_stopping(j)) {
		for (size_t i = 0; i < u->deps[UNIT_DEP_BEFORE].n; i++) {
			const struct job *o = u->deps[UNIT_DEP_BEFORE].v[i]->job;
			if (o && is_stopping(o))
				return false;
		}
		return true;
	}
	for (size_t i = 0; i < u->deps[UNIT_DEP_AFTER].n; i++)
		if (u->deps[UNIT_DEP_AFTER].v[i]->job)
			return false;
	for (size_t i = 0; i < u->deps[UNIT_DEP_BEFORE].n; i++) {
		const struct job *o = u->deps[UNIT_DEP_BEFORE].v[i]->job;
		if (o && is_stopping(o))
			return false;
	}
	return true;
}

/* A dependency this start needs and does not have: the job fails. */
static int check_requirements(struct unit *u, struct err *err)
{
	static const enum unit_dep hard[] = {UNIT_DEP_REQUIRES, UNIT_DEP_BINDS_TO,
	                                     UNIT_DEP_REQUISITE};
	for (size_t k = 0; k < ARRAY_SIZE(hard); k++)
		for (size_t i = 0; i < u->deps[hard[k]].n; i++) {
			struct unit *x = u->deps[hard[k]].v[i];
			if (!usable(x))
				return err_set(err, -ENOENT, ERR_FAILED_PRECONDITION,
				               "unit \"%s\": %s=%s is %s", u->name,
				               unit_dep_name(hard[k]), x->name, x->load_state);
			if (x->active != UNIT_ACTIVE_ACTIVE && x->active != UNIT_ACTIVE_RELOADING)
				return err_set(err, -ENOLINK, ERR_FAILED_PRECONDITION,
				               "unit \"%s\": dependency %s is %s (%s)", u->name,
				               x->name, unit_active_name(x->active),
				               x->result[0] ? x->result : "not started");
		}
	return 0;
}

static void job_run(struct job *j)
{
	struct unit *u = j->u;
	struct err err = {0};
	int r;
	j->state = JOB_RUNNING;
	log_debug("units: %s %s", job_type_name(j->type), u->name);
	if (is_stopping(j)) {
		r = u->ops->stop ? u->ops->stop(u, &err) : 0;
		if (r == 0 && !u->ops->stop)
			unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
	} else if (j->type == JOB_RELOAD) {
		r = u->ops->reload ? u->ops->reload(u, &err)
		                   : err_set(&err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		                             "unit \"%s\" cannot be reloaded", u->name);
	} else if (!usable(u)) {
		r = err_set(&err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\" is %s", u->name,
		            u->load_state);
	} else if ((r = check_requirements(u, &err)) >= 0) {
		r = u->ops->start ? u->ops->start(u, &err) : 0;
		if (r == 0 && !u->ops->start)
			unit_set_active(u, UNIT_ACTIVE_ACTIVE, "active");
	}
	if (r != 1)
		unit_job_done(u, r < 0 ? r : 0, r < 0 ? &err : NULL);
}

void unit_job_done(struct unit *u, int result, const struct err *err)
{
	struct job *j = u->job;
	if (!j || j->state != JOB_RUNNING)
		return;
	if (j->type == JOB_RESTART && !j->restart_stopped && result >= 0) {
		j->restart_stopped = true; /* now the start half, in order again */
		j->state = JOB_WAITING;
		units_dispatch_later(u->m);
		return;
	}
	if (result < 0 && err && (j->type == JOB_START || j->type == JOB_RESTART))
		log_warn("units: %s", err->msg);
	job_finish(j, result, err);
}

void unit_went_inactive(struct unit *u)
{
	struct units *m = u->m;
	for (size_t i = 0; i < u->rdeps[UNIT_RDEP_REQUIRED_BY].n; i++) {
		struct unit *x = u->rdeps[UNIT_RDEP_REQUIRED_BY].v[i];
		/* BindsTo=: x goes with u (Requires= alone does not stop x) */
		bool bound = false;
		for (size_t k = 0; k < x->deps[UNIT_DEP_BINDS_TO].n; k++)
			bound |= x->deps[UNIT_DEP_BINDS_TO].v[k] == u;
		if (bound && x->active != UNIT_ACTIVE_INACTIVE && x->active != UNIT_ACTIVE_FAILED)
			units_job_add(m, x, JOB_STOP, NULL, NULL);
	}
	units_dispatch_later(m);
}

static void dispatch(struct units *m)
{
	if (m->dispatching) {
		m->dispatch_again = true;
		return;
	}
	m->dispatching = true;
	do {
		m->dispatch_again = false;
		bool any_running = false, ran = false;
		for (struct job *j = m->jobs; j; j = j->next)
			any_running |= j->state == JOB_RUNNING;
		for (struct job *j = m->jobs, *next; j; j = next) {
			next = j->next;
			if (j->state == JOB_WAITING && runnable(j)) {
				job_run(j);
				ran = true;
				m->dispatch_again = true; /* the list changed: walk it again */
				break;
			}
		}
		if (!ran && !any_running && m->jobs) {
			struct job *j = m->jobs;
			log_warn(
			    "units: ordering cycle among %zu waiting jobs; starting %s %s first",
			    m->njobs, job_type_name(j->type), j->u->name);
			job_run(j);
			m->dispatch_again = true;
		}
	} while (m->dispatch_again);
	m->dispatching = false;
	if (!m->jobs && m->shutting_down && m->shutdown_done) {
		void (*done)(void *) = m->shutdown_done;
		m->shutdown_done = NULL;
		done(m->shutdown_data);
	}
}

static void on_dispatch(struct ev_source *src, uint32_t events)
{
	struct units *m = src->data;
	uint64_t v;
	(void)events;
	if (read(src->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_debug("units: eventfd: %m");
	m->dispatch_armed = false;
	dispatch(m);
}

void units_dispatch_later(struct units *m)
{
	if (m->dispatch_armed || m->dispatch_src.fd < 0)
		return;
	uint64_t one = 1;
	if (write(m->dispatch_src.fd, &one, sizeof(one)) == sizeof(one))
		m->dispatch_armed = true;
}

int units_dispatch_init(struct units *m)
{
	m->dispatch_src = (struct ev_source){.fd = -1, .fn = on_dispatch, .data = m};
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	m->dispatch_src.fd = fd;
	int r = ev_add(m->loop, &m->dispatch_src, EPOLLIN);
	if (r < 0) {
		close(fd);
		m->dispatch_src.fd = -1;
	}
	return r;
}

void units_dispatch_free(struct units *m)
{
	if (m->dispatch_src.fd < 0)
		return;
	ev_del(m->loop, &m->dispatch_src);
	close(m->dispatch_src.fd);
	m->dispatch_src.fd = -1;
}
