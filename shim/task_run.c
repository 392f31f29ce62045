/* task_run: a task's processes — Start (the container's executable
 * started in its cell of the zone, its end then waited for through the
 * zone kin), Wait, Kill, Delete, CloseIO, and Exec (refused for now). The
 * sandbox task is the zone: it is "started" by being ready, killed by
 * stopping the zone, and ends with the zone kin. */
#include "shim/task-int.h"
#include "cells/cells.h"
#include "oci/oci.h"
#include "proto/cells.pb-c.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static int task_proc_get(struct shim_task *svc, struct rpc_call *call, const char *id,
                         const char *exec_id, struct task **ret_t, struct tproc **ret_p)
{
	struct task *t = task_find(svc, id);
	if (!t)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s not found", id);
	struct tproc *p = proc_find(t, exec_id);
	if (!p)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %s: exec %.80s not found", id,
		                     exec_id);
	if (t->create_call)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s is still being created", id);
	*ret_t = t;
	*ret_p = p;
	return 1;
}

static uint32_t status_of(const Kin__V1__ExecStatus *st)
{
	if (!st->exited)
		return 128 + SIGKILL;
	return st->signal ? 128 + (uint32_t)st->signal : (uint32_t)st->exit_code;
}

/* ---- Start ---------------------------------------------------------------------------- */

static void exec_waited(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zref *z = data;
	struct tproc *p = zref_proc(z);
	free(z);
	if (p)
		p->wait_id = 0;
	if (!p || p->state == T_STOPPED)
		return;
	uint32_t status = 128 + SIGKILL; /* the zone went with it */
	if (st->code == ERR_OK) {
		Kin__V1__ExecStatus *es = kin__v1__exec_status__unpack(NULL, len, payload);
		if (es)
			status = status_of(es);
		kin__v1__exec_status__free_unpacked(es, NULL);
	} else {
		log_warn("shim: task %s: waiting in the zone: %s", p->t->id, st->msg);
	}
	if (p->t->svc->vm)
		task_vm_exited(p, status);
	else
		proc_exited(p, status);
}

static void proc_wait_in_zone(struct tproc *p)
{
	struct shim_task *svc = p->t->svc;
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	in.cell = p->t->cell;
	in.name = p->kname;
	int r = zone_call(svc, "kin.v1.Exec", "Wait", &in.base, exec_waited,
	                  zref_new(svc, p->t->id, p->exec_id), &p->wait_id);
	if (r < 0) {
		log_warn("shim: task %s: cannot wait in the zone: %s", p->t->id, strerror(-r));
		proc_exited(p, 128 + SIGKILL);
	}
}

/* After a re-exec: the previous kin's Wait in the zone is cancelled (the
 * zone kin gives its slot back; its answer would reach nobody), then this
 * kin waits. */
void task_proc_rewait(struct tproc *p)
{
	if (p->wait_id)
		rpc_route_cancel(p->t->svc->rpc, SHIM_ZONE_NAME, p->wait_id);
	p->wait_id = 0;
	proc_wait_in_zone(p);
}

static void start_cancelled(struct rpc_call *call, void *data)
{
	struct tproc *p = data;
	(void)call;
	p->start_call = NULL;
}

static void started(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zref *z = data;
	struct tproc *p = zref_proc(z);
	free(z);
	if (!p)
		return;
	struct rpc_call *call = p->start_call;
	p->start_call = NULL;
	p->starting = false;
	if (call)
		rpc_call_on_cancel(call, NULL, NULL);
	if (st->code != ERR_OK) {
		if (call)
			rpc_call_fail(call, st->code, "task %s: %s", p->t->id, st->msg);
		return;
	}
	Kin__V1__ExecStatus *es = kin__v1__exec_status__unpack(NULL, len, payload);
	char dir[PATH_MAX];
	if (es && p->t->svc->vm) /* the guest's pid: all there is */
		p->pid = es->pid > 0 ? (uint32_t)es->pid : 0;
	else if (es && task_cell_dir(p->t->svc, p->t, dir, sizeof(dir)) == 0)
		p->pid = task_host_pid(dir, es->pid);
	kin__v1__exec_status__free_unpacked(es, NULL);
	p->state = T_RUNNING;
	if (p->t->svc->vm)
		task_vm_relay_start(p);
	if (call) {
		Kin__Shim__StartResponse out = KIN__SHIM__START_RESPONSE__INIT;
		out.pid = p->pid;
		rpc_call_reply(call, &out.base);
	}
	if (p->exec_id[0]) {
		Kin__Shim__TaskExecStarted ev = KIN__SHIM__TASK_EXEC_STARTED__INIT;
		ev.container_id = p->t->id;
		ev.exec_id = p->exec_id;
		ev.pid = p->pid;
		task_publish(p->t->svc, "/tasks/exec-started", "containerd.events.TaskExecStarted",
		             &ev.base);
	} else {
		Kin__Shim__TaskStart ev = KIN__SHIM__TASK_START__INIT;
		ev.container_id = p->t->id;
		ev.pid = p->pid;
		task_publish(p->t->svc, "/tasks/start", "containerd.events.TaskStart", &ev.base);
		task_oom_watch(p->t);
	}
	proc_wait_in_zone(p);
}

static int start_sandbox(struct shim_task *svc, struct rpc_call *call, struct task *t)
{
	if (svc->zone != ZN_READY)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s: the pod's zone is %s",
		                     t->id, svc->zone == ZN_GONE ? "gone" : "not ready");
	if (t->init.state == T_CREATED) {
		t->init.state = T_RUNNING;
		Kin__Shim__TaskStart ev = KIN__SHIM__TASK_START__INIT;
		ev.container_id = t->id;
		ev.pid = t->init.pid;
		task_publish(svc, "/tasks/start", "containerd.events.TaskStart", &ev.base);
	}
	Kin__Shim__StartResponse out = KIN__SHIM__START_RESPONSE__INIT;
	out.pid = t->init.pid;
	return rpc_call_reply(call, &out.base);
}

int task_serve_start(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__StartRequest *m = (const Kin__Shim__StartRequest *)in;
	struct task *t;
	struct tproc *p;
	int r = task_proc_get(svc, call, m->id, m->exec_id, &t, &p);
	if (r <= 0)
		return r;
	if (t->sandbox && p == &t->init)
		return start_sandbox(svc, call, t);
	if (p->state != T_CREATED || p->starting)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s%s%s: %s", t->id,
		                     p->exec_id[0] ? " exec " : "", p->exec_id,
		                     p->state == T_STOPPED && !p->pid
		                         ? "ended before it started (killed while created)"
		                         : "already started");
	static const char *const names[] = {"stdin", "stdout", "stderr"};
	char bundle[PATH_MAX / 2], io[3][PATH_MAX];
	Kin__V1__ExecSpec spec = KIN__V1__EXEC_SPEC__INIT;
	if (proc_dir(p, true, bundle, sizeof(bundle)) < 0)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT, "task %s: path too long", t->id);
	spec.bundle = bundle;
	if (p->exec_id[0])
		spec.join = t->init.kname;
	char **paths[3] = {&spec.stdin_path, &spec.stdout_path, &spec.stderr_path};
	spec.stdin_pipe = svc->vm && p->stdio[0][0]; /* kin-vm: relayed (task_vm.c) */
	for (int i = 0; i < 3; i++) {
		if (!p->stdio[i][0] || svc->vm)
			continue;
		snprintf(io[i], sizeof(io[i]), "%s/%s", bundle, names[i]);
		*paths[i] = io[i];
	}
	Kin__V1__StartRequest req = KIN__V1__START_REQUEST__INIT;
	req.cell = t->cell;
	req.name = p->kname;
	req.spec = &spec;
	r = zone_call(svc, "kin.v1.Exec", "Start", &req.base, started,
	              zref_new(svc, t->id, p->exec_id), NULL);
	if (r < 0)
		return rpc_call_fail(call, ERR_UNAVAILABLE, "task %s: the pod's zone: %s", t->id,
		                     strerror(-r));
	p->starting = true;
	p->start_call = call;
	rpc_call_on_cancel(call, start_cancelled, p);
	return 0;
}

/* ---- Wait ----------------------------------------------------------------------------- */

static void wait_cancelled(struct rpc_call *call, void *data)
{
	struct tproc *p = data;
	for (size_t i = 0; i < TASK_WAITERS_MAX; i++)
		if (p->waiters[i] == call)
			p->waiters[i] = NULL;
}

int task_serve_wait(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__WaitRequest *m = (const Kin__Shim__WaitRequest *)in;
	struct task *t = task_find(svc, m->id);
	struct tproc *p = t ? proc_find(t, m->exec_id) : NULL;
	if (!p)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s%s%.80s not found", m->id,
		                     m->exec_id[0] ? " exec " : "", m->exec_id);
	if (p->state == T_STOPPED) {
		Kin__Shim__Timestamp ts;
		Kin__Shim__WaitResponse out = KIN__SHIM__WAIT_RESPONSE__INIT;
		task_timestamp(&p->exited_at, &ts);
		out.exit_status = p->exit_status;
		out.exited_at = &ts;
		return rpc_call_reply(call, &out.base);
	}
	for (size_t i = 0; i < TASK_WAITERS_MAX; i++)
		if (!p->waiters[i]) {
			p->waiters[i] = call;
			rpc_call_on_cancel(call, wait_cancelled, p);
			return 0;
		}
	return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "task %s: %d Wait calls already", t->id,
	                     TASK_WAITERS_MAX);
}

/* ---- Kill ----------------------------------------------------------------------------- */

static void signalled(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	(void)payload, (void)len;
	zref_answer(data, st);
	free(data);
}

/* Every process of the container's cell (kill --all), from this side. */
static int kill_all(struct shim_task *svc, struct task *t, int sig)
{
	char dir[PATH_MAX], procs[PATH_MAX + 16];
	_cleanup_free_ char *list = NULL;
	int r = task_cell_dir(svc, t, dir, sizeof(dir));
	if (r < 0)
		return r;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	r = file_read_small(procs, 1 << 20, &list, NULL);
	if (r < 0)
		return r;
	for (char *save = NULL, *s = strtok_r(list, "\n", &save); s;
	     s = strtok_r(NULL, "\n", &save)) {
		uint32_t pid;
		if (str_to_u32(s, &pid) == 0 && pid > 1)
			kill((pid_t)pid, sig);
	}
	return 0;
}

int task_serve_kill(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__KillRequest *m = (const Kin__Shim__KillRequest *)in;
	Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
	struct task *t;
	struct tproc *p;
	int r = task_proc_get(svc, call, m->id, m->exec_id, &t, &p);
	if (r <= 0)
		return r;
	if (m->signal < 1 || m->signal > 64)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT, "task %s: signal %u", t->id,
		                     m->signal);
	if (p->state == T_STOPPED)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %s: process already finished",
		                     t->id);
	if (t->sandbox && p == &t->init) {
		r = svc->pods.end(svc->pods.impl, SHIM_ZONE_NAME, m->signal == SIGKILL);
		if (r < 0 && r != -ENOENT)
			return rpc_call_fail(call, ERR_INTERNAL,
			                     "task %s: stopping the pod's zone: %s", t->id,
			                     strerror(-r));
		return rpc_call_reply(call, &out.base);
	}
	if (p->state == T_CREATED && !p->starting) { /* never ran: it ends here */
		proc_exited(p, 128 + m->signal);
		return rpc_call_reply(call, &out.base);
	}
	if (m->all && svc->vm && m->signal == SIGKILL) { /* cgroup.kill in the guest */
		Kin__V1__CellRequest kreq = KIN__V1__CELL_REQUEST__INIT;
		kreq.path = t->cell;
		return zone_call_for(call, svc, t->id, p->exec_id, "kin.v1.Cells", "Kill",
		                     &kreq.base, signalled);
	}
	/* kin-vm: other signals with all go to the container's process (the
	 * guest kin signals executables, not whole cells) */
	if (m->all && !svc->vm) {
		r = kill_all(svc, t, (int)m->signal);
		if (r < 0)
			return rpc_call_fail(call, ERR_INTERNAL, "task %s: signalling its cell: %s",
			                     t->id, strerror(-r));
		return rpc_call_reply(call, &out.base);
	}
	Kin__V1__SignalRequest req = KIN__V1__SIGNAL_REQUEST__INIT;
	req.cell = t->cell;
	req.name = p->kname;
	req.signal = (int32_t)m->signal;
	return zone_call_for(call, svc, t->id, p->exec_id, "kin.v1.Exec", "Signal", &req.base,
	                     signalled);
}

/* ---- Delete --------------------------------------------------------------------------- */

static void zone_done_ignored(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zref *z = data;
	(void)payload, (void)len;
	if (st->code != ERR_OK && st->code != ERR_NOT_FOUND && st->code != ERR_UNAVAILABLE)
		log_warn("shim: task %s: cleanup in the zone: %s", z->id, st->msg);
	free(z);
}

static int reply_deleted(struct rpc_call *call, const struct tproc *p)
{
	Kin__Shim__Timestamp ts;
	Kin__Shim__DeleteResponse out = KIN__SHIM__DELETE_RESPONSE__INIT;
	task_timestamp(&p->exited_at, &ts);
	out.pid = p->pid;
	out.exit_status = p->exit_status;
	out.exited_at = p->state == T_STOPPED ? &ts : NULL;
	return rpc_call_reply(call, &out.base);
}

static int delete_exec(struct shim_task *svc, struct rpc_call *call, struct task *t,
                       struct tproc *p)
{
	if (p->state == T_RUNNING || p->state == T_PAUSED || p->starting)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s exec %s is running: kill it first", t->id,
		                     p->exec_id);
	Kin__V1__ExecRequest req = KIN__V1__EXEC_REQUEST__INIT;
	req.cell = t->cell;
	req.name = p->kname;
	if (p->state == T_STOPPED)
		zone_call(svc, "kin.v1.Exec", "Delete", &req.base, zone_done_ignored,
		          zref_new(svc, t->id, p->exec_id), NULL);
	reply_deleted(call, p);
	list_remove(&p->node);
	t->nexecs--;
	proc_unmount(p);
	proc_release(p);
	free(p);
	return 0;
}

int task_serve_delete(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__DeleteRequest *m = (const Kin__Shim__DeleteRequest *)in;
	struct task *t;
	struct tproc *p;
	int r = task_proc_get(svc, call, m->id, m->exec_id, &t, &p);
	if (r <= 0)
		return r;
	if (p != &t->init)
		return delete_exec(svc, call, t, p);
	if (p->starting || p->state == T_RUNNING || p->state == T_PAUSED)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s is running: kill it first", t->id);
	if (t->sandbox && svc->zone == ZN_READY)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s: the pod's zone still runs: kill it first", t->id);
	if (!t->sandbox) {
		Kin__V1__DeleteCellRequest req = KIN__V1__DELETE_CELL_REQUEST__INIT;
		req.path = t->cell;
		req.force = true;
		zone_call(svc, "kin.v1.Cells", "Delete", &req.base, zone_done_ignored,
		          zref_new(svc, t->id, NULL), NULL);
		container_unmount(t);
	}
	if (p->state != T_STOPPED) /* created, never started: it ends now */
		proc_exited(p, 128 + SIGKILL);
	reply_deleted(call, p);
	Kin__Shim__Timestamp ts;
	task_timestamp(&p->exited_at, &ts);
	Kin__Shim__TaskDelete ev = KIN__SHIM__TASK_DELETE__INIT;
	ev.container_id = t->id;
	ev.id = t->id;
	ev.pid = p->pid;
	ev.exit_status = p->exit_status;
	ev.exited_at = &ts;
	task_publish(svc, "/tasks/delete", "containerd.events.TaskDelete", &ev.base);
	task_free(t);
	return 0;
}

/* ---- Exec, CloseIO ------------------------------------------------------------------------ */

/* The exec's bundle: the container's config (as the zone reads it) with
 * containerd's process in place of its own. */
static int exec_config(struct task *t, struct tproc *p, const Kin__Shim__Any *spec, struct err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], rootfs[PATH_MAX + 16];
	struct oci_json *j = NULL;
	if (!spec || spec->value.len > OCI_SPEC_JSON_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec %s: a process spec (JSON) of at most %d bytes is needed",
		               p->exec_id, OCI_SPEC_JSON_MAX);
	snprintf(path, sizeof(path), "%s/config.json", t->dir);
	int r = oci_json_load(path, &j, err);
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "exec %s: %s: unreadable", p->exec_id, path);
	if (oci_json_set_process(j, (const char *)spec->value.data, spec->value.len) < 0) {
		oci_json_free(j);
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec %s: the process spec is not a JSON object", p->exec_id);
	}
	proc_dir(&t->init, true, dir, sizeof(dir));
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	oci_json_set_root_path(j, rootfs);
	proc_dir(p, false, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/config.json", dir);
	r = oci_json_save(j, path, err);
	oci_json_free(j);
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "exec %s: %s: cannot write", p->exec_id, path);
	struct oci_spec *o = NULL;
	r = oci_spec_load(dir, &o, err);
	if (r == 0 && o->terminal)
		r = err_set(err, -EOPNOTSUPP, ERR_UNIMPLEMENTED,
		            "exec %s: terminals are not supported by kin's shim", p->exec_id);
	oci_spec_free(o);
	return r;
}

int task_serve_exec(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__ExecProcessRequest *m = (const Kin__Shim__ExecProcessRequest *)in;
	struct task *t = task_find(svc, m->id);
	if (!t)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s not found", m->id);
	if (t->sandbox || t->init.state != T_RUNNING)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s: %s", t->id,
		                     t->sandbox ? "a pod's sandbox runs no execs"
		                                : "exec needs a running container");
	if (!cell_name_valid(m->exec_id) || strcmp(m->exec_id, t->init.kname) == 0)
		return rpc_call_fail(
		    call, ERR_INVALID_ARGUMENT,
		    "task %s: exec id \"%.80s\": 1-64 of [A-Za-z0-9_.-], not \"%s\"", t->id,
		    m->exec_id, t->init.kname);
	if (proc_find(t, m->exec_id))
		return rpc_call_fail(call, ERR_ALREADY_EXISTS, "task %s: exec %s already exists",
		                     t->id, m->exec_id);
	if (t->nexecs >= TASK_EXECS_MAX)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "task %s: %d execs already",
		                     t->id, TASK_EXECS_MAX);
	if (m->terminal)
		return rpc_call_fail(call, ERR_UNIMPLEMENTED,
		                     "task %s: exec %s: terminals are not supported by kin's shim",
		                     t->id, m->exec_id);
	const char *io[3] = {m->stdin, m->stdout, m->stderr};
	for (int i = 0; i < 3; i++)
		if (io[i][0] && (io[i][0] != '/' || strlen(io[i]) >= PATH_MAX))
			return rpc_call_fail(
			    call, ERR_INVALID_ARGUMENT,
			    "task %s: exec %s: stdio \"%.200s\": FIFO or file paths only", t->id,
			    m->exec_id, io[i]);
	struct tproc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	proc_init(p, t, m->exec_id);
	str_copy(p->kname, sizeof(p->kname), m->exec_id);
	for (int i = 0; i < 3; i++)
		str_copy(p->stdio[i], sizeof(p->stdio[i]), io[i]);
	struct err err = {0};
	int r = proc_bind_stdio(p, &err);
	if (r == 0)
		r = exec_config(t, p, m->spec, &err);
	if (r < 0) {
		proc_unmount(p);
		free(p);
		return rpc_call_fail_err(call, &err, r);
	}
	proc_hold(p);
	list_append(&t->execs, &p->node);
	t->nexecs++;
	Kin__Shim__TaskExecAdded ev = KIN__SHIM__TASK_EXEC_ADDED__INIT;
	ev.container_id = t->id;
	ev.exec_id = p->exec_id;
	task_publish(svc, "/tasks/exec-added", "containerd.events.TaskExecAdded", &ev.base);
	Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
	return rpc_call_reply(call, &out.base);
}

/* A process reads its stdin FIFO itself (kin's shim relays nothing), so
 * it sees EOF when the writer containerd gave it closes: there is nothing
 * of the shim's to close. */
int task_serve_close_io(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__CloseIORequest *m = (const Kin__Shim__CloseIORequest *)in;
	struct task *t = task_find(svc, m->id);
	if (!t || !proc_find(t, m->exec_id))
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s not found", m->id);
	Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
	return rpc_call_reply(call, &out.base);
}
