/* task: containerd's Task service (containerd.task.v2.Task), served by a
 * shim kin on the socket containerd was given (see task-int.h for the
 * model). This file holds the records of tasks and processes, the calls to
 * the zone kin, State, Connect, Shutdown, the calls kin does not do, and
 * the service itself; Create is task_create.c's, the processes'
 * lifecycle task_run.c's, what a cell answers task_ops.c's. */
#include "shim/task-int.h"
#include "cells/cells.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- records ----------------------------------------------------------------------- */

struct task *task_find(struct shim_task *svc, const char *id)
{
	struct task *t;
	list_for_each(t, &svc->tasks, node)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

struct tproc *proc_find(struct task *t, const char *exec_id)
{
	if (!exec_id || !exec_id[0])
		return &t->init;
	struct tproc *p;
	list_for_each(p, &t->execs, node)
		if (strcmp(p->exec_id, exec_id) == 0)
			return p;
	return NULL;
}

void task_timestamp(const struct timespec *ts, Kin__Shim__Timestamp *ret)
{
	kin__shim__timestamp__init(ret);
	ret->seconds = ts->tv_sec;
	ret->nanos = (int32_t)ts->tv_nsec;
}

void proc_init(struct tproc *p, struct task *t, const char *exec_id)
{
	p->t = t;
	str_copy(p->exec_id, sizeof(p->exec_id), exec_id ? exec_id : "");
	for (int i = 0; i < 3; i++)
		p->hold[i] = -1;
}

/* Holds the output FIFOs open for reading (O_RDWR never waits): a
 * containerd that restarts finds them still alive, and the process's
 * writes never fail for want of a reader. */
void proc_hold(struct tproc *p)
{
	for (int i = 1; i < 3; i++) {
		struct stat st;
		if (!p->stdio[i][0] || stat(p->stdio[i], &st) < 0 || !S_ISFIFO(st.st_mode))
			continue;
		p->hold[i] = open(p->stdio[i], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	}
}

void proc_release(struct tproc *p)
{
	task_vm_relay_free(p);
	if (p->start_call) {
		rpc_call_on_cancel(p->start_call, NULL, NULL);
		rpc_call_fail(p->start_call, ERR_NOT_FOUND, "task %s: deleted", p->t->id);
		p->start_call = NULL;
	}
	for (size_t i = 0; i < TASK_WAITERS_MAX; i++)
		if (p->waiters[i]) {
			rpc_call_on_cancel(p->waiters[i], NULL, NULL);
			rpc_call_fail(p->waiters[i], ERR_NOT_FOUND, "task %s: deleted", p->t->id);
			p->waiters[i] = NULL;
		}
	for (int i = 0; i < 3; i++)
		if (p->hold[i] >= 0) {
			close(p->hold[i]);
			p->hold[i] = -1;
		}
	free(p->spec_json);
	p->spec_json = NULL;
}

/* Every Wait on p is answered with its end. */
void proc_answer_waiters(struct tproc *p)
{
	Kin__Shim__Timestamp ts;
	Kin__Shim__WaitResponse out = KIN__SHIM__WAIT_RESPONSE__INIT;
	task_timestamp(&p->exited_at, &ts);
	out.exit_status = p->exit_status;
	out.exited_at = &ts;
	for (size_t i = 0; i < TASK_WAITERS_MAX; i++) {
		struct rpc_call *call = p->waiters[i];
		if (!call)
			continue;
		p->waiters[i] = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		rpc_call_reply(call, &out.base);
	}
}

/* p has ended with status: recorded, published, its waiters answered. */
void proc_exited(struct tproc *p, uint32_t status)
{
	if (p->state == T_STOPPED)
		return;
	if (p == &p->t->init) { /* an OOM kill is told before the exit it caused */
		task_oom_check(p->t);
		task_oom_unwatch(p->t);
	}
	p->state = T_STOPPED;
	p->exit_status = status;
	/* Our read ends go: containerd sees EOF once the process's own
	 * writers (it and what it forked) are gone, and ends its copy. */
	for (int i = 0; i < 3; i++)
		if (p->hold[i] >= 0) {
			close(p->hold[i]);
			p->hold[i] = -1;
		}
	clock_gettime(CLOCK_REALTIME, &p->exited_at);
	Kin__Shim__Timestamp ts;
	task_timestamp(&p->exited_at, &ts);
	Kin__Shim__TaskExit ev = KIN__SHIM__TASK_EXIT__INIT;
	ev.container_id = p->t->id;
	ev.id = p->exec_id[0] ? p->exec_id : p->t->id;
	ev.pid = p->pid;
	ev.exit_status = status;
	ev.exited_at = &ts;
	task_publish(p->t->svc, "/tasks/exit", "containerd.events.TaskExit", &ev.base);
	proc_answer_waiters(p);
}

void task_free(struct task *t)
{
	struct tproc *p, *next;
	list_for_each_safe(p, next, &t->execs, node) {
		list_remove(&p->node);
		proc_release(p);
		free(p);
	}
	proc_release(&t->init);
	task_oom_unwatch(t);
	if (t->create_call) {
		rpc_call_on_cancel(t->create_call, NULL, NULL);
		rpc_call_fail(t->create_call, ERR_UNAVAILABLE, "task %s: ended before created",
		              t->id);
	}
	if (t->create)
		kin__shim__create_task_request__free_unpacked(t->create, NULL);
	list_remove(&t->node);
	t->svc->ntasks--;
	free(t);
}

/* ---- calls to the zone kin ------------------------------------------------------------ */

struct zref *zref_new(struct shim_task *svc, const char *id, const char *exec_id)
{
	struct zref *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->svc = svc;
	str_copy(z->id, sizeof(z->id), id);
	str_copy(z->exec_id, sizeof(z->exec_id), exec_id ? exec_id : "");
	return z;
}

static void zref_cancelled(struct rpc_call *call, void *data)
{
	struct zref *z = data;
	(void)call;
	z->call = NULL;
}

void zref_keep(struct zref *z, struct rpc_call *call)
{
	z->call = call;
	rpc_call_on_cancel(call, zref_cancelled, z);
}

struct rpc_call *zref_take_call(struct zref *z)
{
	struct rpc_call *call = z->call;
	z->call = NULL;
	if (call)
		rpc_call_on_cancel(call, NULL, NULL);
	return call;
}

void zref_answer(struct zref *z, const struct err *st)
{
	struct rpc_call *call = zref_take_call(z);
	Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
	if (call && st->code != ERR_OK)
		rpc_call_fail(call, st->code, "task %s: %s", z->id, st->msg);
	else if (call)
		rpc_call_reply(call, &out.base);
}

struct tproc *zref_proc(const struct zref *z)
{
	struct task *t = task_find(z->svc, z->id);
	return t ? proc_find(t, z->exec_id) : NULL;
}

int zone_call(struct shim_task *svc, const char *service, const char *method,
              const ProtobufCMessage *in, rpc_route_done_fn done, struct zref *z, uint32_t *ret_id)
{
	if (!z)
		return -ENOMEM;
	int r = svc->zone == ZN_READY ? rpc_route_stream(svc->rpc, SHIM_ZONE_NAME, service, method,
	                                                 in, NULL, done, z, ret_id)
	                              : -EHOSTDOWN;
	if (r < 0)
		free(z);
	return r;
}

int zone_call_for(struct rpc_call *call, struct shim_task *svc, const char *id, const char *exec_id,
                  const char *service, const char *method, const ProtobufCMessage *in,
                  rpc_route_done_fn done)
{
	struct zref *z = zref_new(svc, id, exec_id);
	int r = zone_call(svc, service, method, in, done, z, NULL);
	if (r < 0)
		return rpc_call_fail(call, ERR_UNAVAILABLE, "task %s: the pod's zone: %s", id,
		                     strerror(-r));
	zref_keep(z, call);
	return 0;
}

struct rpc_call *zref_reply_to(struct zref *z, const struct err *st)
{
	struct rpc_call *call = zref_take_call(z);
	free(z);
	if (call && st->code != ERR_OK) {
		rpc_call_fail(call, st->code, "the pod's zone: %s", st->msg);
		call = NULL;
	}
	return call;
}

/* ---- State, Connect, Shutdown, and what kin does not do -------------------------------- */

static int serve_state(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__StateRequest *m = (const Kin__Shim__StateRequest *)in;
	struct task *t = task_find(svc, m->id);
	struct tproc *p = t ? proc_find(t, m->exec_id) : NULL;
	if (!p)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s%s%.80s not found", m->id,
		                     m->exec_id[0] ? " exec " : "", m->exec_id);
	static const Kin__Shim__Status status[] = {
	    [T_CREATED] = KIN__SHIM__STATUS__CREATED,
	    [T_RUNNING] = KIN__SHIM__STATUS__RUNNING,
	    [T_PAUSED] = KIN__SHIM__STATUS__PAUSED,
	    [T_STOPPED] = KIN__SHIM__STATUS__STOPPED,
	};
	Kin__Shim__Timestamp ts;
	Kin__Shim__StateResponse out = KIN__SHIM__STATE_RESPONSE__INIT;
	out.id = t->id;
	out.exec_id = p->exec_id;
	out.bundle = t->bundle;
	out.pid = p->pid;
	out.status = status[p->state];
	out.stdin = p->stdio[0];
	out.stdout = p->stdio[1];
	out.stderr = p->stdio[2];
	out.terminal = p->terminal;
	out.exit_status = p->exit_status;
	if (p->state == T_STOPPED) {
		task_timestamp(&p->exited_at, &ts);
		out.exited_at = &ts;
	}
	return rpc_call_reply(call, &out.base);
}

static int serve_connect(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__ConnectRequest *m = (const Kin__Shim__ConnectRequest *)in;
	struct task *t = task_find(svc, m->id);
	Kin__Shim__ConnectResponse out = KIN__SHIM__CONNECT_RESPONSE__INIT;
	out.shim_pid = (uint32_t)getpid();
	out.task_pid = t ? t->init.pid : 0;
	out.version = (char *)svc->version;
	return rpc_call_reply(call, &out.base);
}

/* containerd asks after each task's Delete; the shim ends once its pod has
 * no task left (its zone goes with kin's stop). */
static int serve_shutdown(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const char *action;
	(void)in;
	Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
	rpc_call_reply(call, &out.base);
	if (svc->ntasks == 0 && !svc->shutting_down && !sandbox_holds(svc) && svc->stop &&
	    svc->stop(false, true, &action, svc->stop_data) == 0) {
		svc->shutting_down = true;
		log_info("shim: no task left: stopping");
		svc->stop(false, false, &action, svc->stop_data);
	}
	return 0;
}

static int serve_unimplemented(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	(void)in, (void)data;
	return rpc_call_fail(
	    call, ERR_UNIMPLEMENTED, "%s: not supported by kin's shim%s", rpc_call_method(call),
	    strcmp(rpc_call_method(call), "ResizePty") == 0 ? " (no terminals)" : "");
}

/* ---- the service -------------------------------------------------------------------- */

static const struct {
	const char *name;
	const ProtobufCMessageDescriptor *input;
	rpc_handler_fn fn;
	unsigned flags;
} task_methods[] = {
    {"State", &kin__shim__state_request__descriptor, serve_state, 0},
    {"Create", &kin__shim__create_task_request__descriptor, task_serve_create, 0},
    {"Start", &kin__shim__start_request__descriptor, task_serve_start, 0},
    {"Delete", &kin__shim__delete_request__descriptor, task_serve_delete, 0},
    {"Pids", &kin__shim__pids_request__descriptor, task_serve_pids, 0},
    {"Pause", &kin__shim__pause_request__descriptor, task_serve_pause, 0},
    {"Resume", &kin__shim__resume_request__descriptor, task_serve_resume, 0},
    {"Checkpoint", &kin__shim__checkpoint_task_request__descriptor, serve_unimplemented, 0},
    {"Kill", &kin__shim__kill_request__descriptor, task_serve_kill, 0},
    {"Exec", &kin__shim__exec_process_request__descriptor, task_serve_exec, 0},
    {"ResizePty", &kin__shim__resize_pty_request__descriptor, serve_unimplemented, 0},
    {"CloseIO", &kin__shim__close_iorequest__descriptor, task_serve_close_io, 0},
    {"Update", &kin__shim__update_task_request__descriptor, task_serve_update, 0},
    /* Asked again of the next kin across a re-exec: containerd takes a
     * Wait that fails for the process's end. */
    {"Wait", &kin__shim__wait_request__descriptor, task_serve_wait, RPC_METHOD_REPLAY},
    {"Stats", &kin__shim__stats_request__descriptor, task_serve_stats, 0},
    {"Connect", &kin__shim__connect_request__descriptor, serve_connect, 0},
    {"Shutdown", &kin__shim__shutdown_request__descriptor, serve_shutdown, 0},
};

/* The pod's cgroup, for `delete` after this shim is gone. */
static void note_cgroup(struct shim_task *svc)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	if (!svc->cells || cells_cgroup_dir(svc->cells, NULL, dir, sizeof(dir)) < 0)
		return;
	char *slash = strrchr(dir, '/'); /* BASE/cells: BASE is the shim's */
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/cgroup", svc->cfg->state);
	if (file_create_str(path, dir, 0600) < 0)
		log_warn("shim: %s: cannot write", path);
}

int shim_task_start(const struct shim_task_config *cfg, struct shim_task **ret)
{
	struct shim_task *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	*svc = (struct shim_task){.rpc = cfg->rpc,
	                          .loop = cfg->loop,
	                          .cells = cfg->cells,
	                          .cfg = cfg->serve,
	                          .pods = cfg->pods,
	                          .vm = cfg->serve->flavor == SHIM_FLAVOR_VM,
	                          .stop = cfg->stop,
	                          .stop_data = cfg->stop_data,
	                          .version = cfg->version};
	list_init(&svc->tasks);
	task_events_init(svc);
	task_oom_init(svc);
	static_assert(ARRAY_SIZE(task_methods) == ARRAY_SIZE(svc->methods), "methods");
	for (size_t i = 0; i < ARRAY_SIZE(task_methods); i++)
		svc->methods[i] = (struct rpc_method){.service = TASK_SERVICE,
		                                      .method = task_methods[i].name,
		                                      .input = task_methods[i].input,
		                                      .handler = task_methods[i].fn,
		                                      .flags = task_methods[i].flags,
		                                      .userdata = svc};
	int r = rpc_server_register(svc->rpc, svc->methods, ARRAY_SIZE(svc->methods));
	if (r == 0)
		r = sandbox_start(svc);
	if (r == 0 && !cfg->listening)
		r = rpc_server_listen_fd(svc->rpc, cfg->serve->listen_fd, cfg->serve->socket);
	if (r < 0) {
		sandbox_free(svc);
		task_oom_free(svc);
		task_events_free(svc);
		free(svc);
		return r;
	}
	note_cgroup(svc);
	*ret = svc;
	struct keep_part part = shim_task_part;
	part.data = svc;
	if (cfg->keep && (r = keep_register(cfg->keep, &part)) < 0)
		log_error("shim: the tasks cannot go along a re-exec: %s", strerror(-r));
	svc->keep = r < 0 ? NULL : cfg->keep;
	log_info("shim: serving containerd's Task API on %s (namespace %s, pod %s)",
	         cfg->serve->socket, cfg->serve->ns, cfg->serve->group);
	return 0;
}

void shim_task_shutdown(struct shim_task *svc)
{
	struct task *t, *next;
	if (!svc)
		return;
	sandbox_shutdown(svc);
	list_for_each_safe(t, next, &svc->tasks, node) {
		if (!t->sandbox)
			container_unmount(t);
		task_free(t);
	}
	task_oom_free(svc);
	task_events_free(svc);
	shim_unmount_all(svc->cfg->pod_dir);
}

void shim_task_free(struct shim_task *svc)
{
	if (svc && svc->keep)
		keep_unregister(svc->keep, svc);
	sandbox_free(svc);
	free(svc);
}
