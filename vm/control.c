/* control: what is asked of a running VM. Monitor requests (shutdown,
 * pause, resume; snapshot and restore where a backend has them) go to the
 * backend, one talk per VM at a time, in the loop. The stop escalates on
 * its own: power off over the link (the owner's hook: vm/ speaks no RPC),
 * else a shutdown request through the monitor, and SIGKILL of the VMM at
 * the deadline; its end is the VMM's exit, told as every exit is. */
#include "vm/manager-int.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

const char *vm_op_name(enum vm_op op)
{
	static const char *const names[] = {"shutdown", "pause", "resume", "snapshot", "restore"};
	return (unsigned)op < ARRAY_SIZE(names) ? names[op] : "?";
}

static void on_talk_done(void *data, const struct err *err)
{
	struct vm_entry *e = data;
	enum vm_op op = e->talk_op;
	vm_request_done_fn done = e->talk_done;
	void *done_data = e->talk_data;
	e->talk = NULL;
	e->talk_done = NULL;
	if (err)
		log_msg(op == VM_OP_SHUTDOWN ? LOG_WARN_ : LOG_INFO_, "%s", err->msg);
	else
		log_debug("vm \"%s\": the VMM took %s", e->info.name, vm_op_name(op));
	if (!err && (op == VM_OP_PAUSE || op == VM_OP_RESUME))
		e->info.paused = op == VM_OP_PAUSE;
	if (done)
		done(done_data, e->info.name, op, err);
}

static vm_monitor_fn backend_op(const struct vm_backend *b, enum vm_op op)
{
	switch (op) {
	case VM_OP_SHUTDOWN:
		return b->shutdown;
	case VM_OP_PAUSE:
		return b->pause;
	case VM_OP_RESUME:
		return b->resume;
	case VM_OP_SNAPSHOT:
		return b->snapshot;
	case VM_OP_RESTORE:
		return b->restore;
	}
	return NULL;
}

int vm_request(struct vm_manager *m, const char *name, enum vm_op op, vm_request_done_fn done,
               void *data, struct err *err)
{
	struct vm_entry *e = vm_entry_find(m, name);
	const char *what = vm_op_name(op);
	if (!e)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "vm \"%s\" does not exist", name);
	if (e->info.state == VM_STATE_EXITED)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION,
		               "vm \"%s\": %s: its VMM has exited", name, what);
	if (e->starting || e->job)
		return err_set(err, -EAGAIN, ERR_UNAVAILABLE, "vm \"%s\": %s: it is starting", name,
		               what);
	vm_monitor_fn fn = backend_op(m->backend, op);
	if (!fn)
		return err_set(err, -EOPNOTSUPP, ERR_UNIMPLEMENTED,
		               "vm \"%s\": the %s backend cannot %s", name, m->backend->name, what);
	if (e->talk)
		return err_set(err, -EBUSY, ERR_UNAVAILABLE,
		               "vm \"%s\": %s: its VMM's monitor is busy with %s", name, what,
		               vm_op_name(e->talk_op));
	const struct vm_monitor_req q = {.loop = m->loop,
	                                 .name = name,
	                                 .monitor = e->info.paths.monitor,
	                                 .timeout_ms = VM_MONITOR_TIMEOUT_MS,
	                                 .done = on_talk_done,
	                                 .data = e};
	int r = fn(&q, &e->talk, err);
	if (r < 0) {
		e->talk = NULL;
		return r;
	}
	e->talk_op = op;
	e->talk_done = done;
	e->talk_data = data;
	/* Asked to end: kin counts it as stopping from here. */
	if (op == VM_OP_SHUTDOWN)
		e->info.state = VM_STATE_STOPPING;
	return 0;
}

int vm_request_shutdown(struct vm_manager *m, const char *name)
{
	struct vm_entry *e = vm_entry_find(m, name);
	struct err err;
	if (e && e->talk && e->talk_op == VM_OP_SHUTDOWN)
		return 0; /* under way */
	return vm_request(m, name, VM_OP_SHUTDOWN, NULL, NULL, &err);
}

/* ---- the stop ---- */

void vm_manager_set_stop_hooks(struct vm_manager *m, const struct vm_stop_hooks *h)
{
	m->stop_hooks = h ? *h : (struct vm_stop_hooks){0};
}

void vm_stop_over(struct vm_entry *e)
{
	ev_close(e->m->loop, &e->stop.timer);
	e->stop.on = false;
}

void vm_control_end(struct vm_entry *e)
{
	if (e->talk)
		e->m->backend->talk_cancel(e->talk);
	e->talk = NULL;
	e->talk_done = NULL;
	vm_stop_over(e);
}

/* The next step: power off over the link, else (it cannot be asked, or it
 * failed) a shutdown request through the monitor. The deadline's SIGKILL
 * is the timer's. */
static void stop_step(struct vm_entry *e)
{
	struct vm_manager *m = e->m;
	const char *name = e->info.name;
	if (!e->stop.poweroff_asked) {
		e->stop.poweroff_asked = true;
		if (m->stop_hooks.poweroff &&
		    m->stop_hooks.poweroff(m->stop_hooks.data, name) == 0) {
			log_info("vm \"%s\": asked its kin to power off", name);
			return;
		}
	}
	if (!e->stop.shutdown_asked) {
		struct err err = {0};
		e->stop.shutdown_asked = true;
		int r = vm_request(m, name, VM_OP_SHUTDOWN, NULL, NULL, &err);
		if (r == -EBUSY && e->talk_op == VM_OP_SHUTDOWN)
			r = 0; /* asked already */
		if (r < 0)
			log_info("%s", err.msg);
		else
			log_info("vm \"%s\": shutdown asked through the VMM's monitor", name);
	}
}

static void on_stop_deadline(struct ev_source *src, uint32_t events)
{
	struct vm_entry *e = src->data;
	(void)events;
	ev_close(e->m->loop, &e->stop.timer); /* once */
	if (e->stop.killed || e->info.state == VM_STATE_EXITED)
		return;
	log_warn("vm \"%s\": still running after the stop timeout; killing the VMM", e->info.name);
	vm_kill(e->m, e->info.name, SIGKILL);
}

/* The timer at the stop's deadline (re-armed when it comes nearer). */
static int stop_arm(struct vm_entry *e)
{
	struct ev_source *t = &e->stop.timer;
	if (t->fd < 0) {
		*t = (struct ev_source){
		    .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK),
		    .fn = on_stop_deadline,
		    .data = e};
		if (t->fd < 0)
			return -errno;
		int r = ev_add(e->m->loop, t, EPOLLIN);
		if (r < 0) {
			close(t->fd);
			t->fd = -1;
			return r;
		}
	}
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(e->stop.deadline_ns / 1000000000ull),
	                 .tv_nsec = (long)(e->stop.deadline_ns % 1000000000ull)}};
	return timerfd_settime(t->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

int vm_stop(struct vm_manager *m, const char *name, uint64_t timeout_ms, struct err *err)
{
	struct vm_entry *e = vm_entry_find(m, name);
	if (!e)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "vm \"%s\" does not exist", name);
	if (e->info.state == VM_STATE_EXITED)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION, "vm \"%s\" has exited", name);
	uint64_t deadline = now_monotonic_ns() +
	                    (timeout_ms ? timeout_ms : VM_STOP_TIMEOUT_DEFAULT_MS) * 1000000ull;
	if (e->stop.on) { /* the most impatient caller wins */
		if (deadline < e->stop.deadline_ns) {
			e->stop.deadline_ns = deadline;
			stop_arm(e);
		}
		return 0;
	}
	if (e->job) /* its files still checked: no VMM to ask, the start ends */
		return vm_kill(m, name, SIGKILL);
	e->stop.on = true;
	e->stop.poweroff_asked = e->stop.shutdown_asked = e->stop.killed = false;
	e->stop.deadline_ns = deadline;
	int r = stop_arm(e);
	if (r < 0) { /* no deadline to keep: the VMM goes now */
		log_warn("vm \"%s\": no timer for the stop (%s); killing the VMM", name,
		         strerror(-r));
		return vm_kill(m, name, SIGKILL);
	}
	e->info.state = VM_STATE_STOPPING;
	stop_step(e);
	return 0;
}

void vm_stop_poweroff_failed(struct vm_manager *m, const char *name)
{
	struct vm_entry *e = vm_entry_find(m, name);
	if (e && e->stop.on && !e->stop.killed && e->info.state != VM_STATE_EXITED)
		stop_step(e);
}
