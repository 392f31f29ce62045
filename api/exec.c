/* exec: the kin.v1.Exec service — start executables in cells, signal,
 * stop, wait, status, list, delete, stdin, and their output as a server
 * stream (Logs, api/logs.c). A spec is checked (api/cells_req.c) only for
 * what the wire adds (counts, strings to parse); everything else is
 * exec_start's, before any side effect. */
#include "api/cells-int.h"

#include <stdio.h>
#include <string.h>

void api_exec_status_fill(Kin__V1__ExecStatus *m, const struct exec_status *st)
{
	kin__v1__exec_status__init(m);
	m->cell = (char *)st->cell;
	m->name = (char *)st->name;
	m->state = (char *)exec_state_name(st->state);
	m->pid = st->pid;
	m->exited = st->exited;
	m->exit_code = st->exit_code;
	m->signal = st->signal;
	m->status_unknown = st->status_unknown;
	m->terminal = st->terminal;
	m->restarts = st->restarts;
	m->started_ns = st->started_ns;
	m->exited_ns = st->exited_ns;
	m->stdout_bytes = st->log_bytes[EXEC_STDOUT];
	m->stderr_bytes = st->log_bytes[EXEC_STDERR];
}

static int reply_status(struct api_cells *svc, struct rpc_call *call, const char *cell,
                        const char *name)
{
	struct err err = {0};
	struct exec_status st;
	Kin__V1__ExecStatus m;
	if (exec_status(svc->cells, cell, name, &st, &err) < 0)
		return api_cells_fail(call, &err);
	api_exec_status_fill(&m, &st);
	return rpc_call_reply(call, &m.base);
}

/* The child reached execve or failed (or the start was cancelled). */
static void exec_started(int result, const struct err *err, void *data)
{
	struct api_cells_pending *p = data;
	struct rpc_call *call = p->call;
	if (call) {
		/* The name is the call's until answered (a second start of it is
		 * ALREADY_EXISTS meanwhile): its status now is this run's. */
		if (result < 0)
			api_cells_fail(call, err);
		else
			reply_status(p->svc, call, p->path, p->name);
	}
	api_cells_pending_free(p);
}

/* Answered once the child reached execve or failed: the loop serves
 * everyone else meanwhile. A client that leaves does not stop the start. */
static int serve_exec_start(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__StartRequest *req = (const Kin__V1__StartRequest *)in;
	struct err err = {0};
	_cleanup_(api_cells_spec_buf_free) struct api_cells_spec_buf b = {0};
	_cleanup_(api_exec_login_free) struct api_exec_login login = {0};
	struct api_cells_pending *p = NULL;
	if (req->spec && req->spec->image[0])
		return api_exec_image_start(svc, call, req, exec_started);
	if (req->spec && req->spec->bundle[0])
		return api_exec_bundle_start(svc, call, req, exec_started);
	int r = api_cells_req_start(req, &b, &err);
	if (r == 0 && req->spec->login)
		r = api_exec_login_fill(req, &b, &login, &err);
	if (r == 0 && !(p = api_cells_pending_new(svc, call)))
		r = -ENOMEM;
	if (p) {
		(void)str_copy(p->path, sizeof(p->path), req->cell);
		(void)str_copy(p->name, sizeof(p->name), req->name);
		r = api_cells_pending_settle(
		    p, exec_start(svc->cells, req->cell, req->name, &b.s, exec_started, p, &err));
	}
	return r < 0 ? api_cells_failed(call, r, &err) : 0;
}

static int serve_exec_signal(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__SignalRequest *req = (const Kin__V1__SignalRequest *)in;
	struct err err = {0};
	if (api_cells_req_signal(req, &err) < 0 ||
	    exec_signal(svc->cells, req->cell, req->name, req->signal, &err) < 0)
		return api_cells_fail(call, &err);
	return reply_status(svc, call, req->cell, req->name);
}

static void exec_done(int result, const struct exec_status *st, void *data)
{
	struct api_cells_pending *p = data;
	if (p->call) {
		if (result < 0 || !st) {
			rpc_call_fail(p->call, result == -ECANCELED ? ERR_CANCELLED : ERR_INTERNAL,
			              "exec: %s",
			              result == -ECANCELED ? "deleted before it ended"
			                                   : strerror(-result));
		} else {
			Kin__V1__ExecStatus m;
			api_exec_status_fill(&m, st);
			rpc_call_reply(p->call, &m.base);
		}
	}
	api_cells_pending_free(p);
}

static int exec_stop_wait(struct rpc_call *call, const char *cell, const char *name,
                          struct api_cells *svc, bool stop, uint64_t grace_ms)
{
	struct err err = {0};
	struct exec_status st;
	struct api_cells_pending *p = api_cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	str_copy(p->path, sizeof(p->path), cell);
	str_copy(p->name, sizeof(p->name), name);
	p->waiting = exec_done;
	int r = api_cells_pending_settle(
	    p, stop ? exec_stop(svc->cells, cell, name, grace_ms, exec_done, p, &err)
	            : exec_wait(svc->cells, cell, name, exec_done, p, &st, &err));
	if (r == 1)
		return 0;
	if (r < 0)
		return api_cells_fail(call, &err);
	if (stop)
		return reply_status(svc, call, cell, name);
	Kin__V1__ExecStatus m;
	api_exec_status_fill(&m, &st);
	return rpc_call_reply(call, &m.base);
}

static int serve_exec_stop(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__StopRequest *req = (const Kin__V1__StopRequest *)in;
	struct err err = {0};
	uint64_t grace_ms;
	if (api_cells_req_stop(req, &grace_ms, &err) < 0)
		return api_cells_fail(call, &err);
	return exec_stop_wait(call, req->cell, req->name, svc, true, grace_ms);
}

static int serve_exec_wait(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	return exec_stop_wait(call, req->cell, req->name, svc, false, 0);
}

static int serve_exec_status(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	return reply_status(svc, call, req->cell, req->name);
}

static int exec_list_visit(const struct exec_status *st, void *data)
{
	return api_cells_vec_push(data, st);
}

static void exec_list_fill(void *msg, const void *record)
{
	api_exec_status_fill(msg, record);
}

static int serve_exec_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__ListExecRequest *req = (const Kin__V1__ListExecRequest *)in;
	struct err err = {0};
	struct api_cells_vec v = {.size = sizeof(struct exec_status)};
	int r = exec_list(svc->cells, req->cell[0] ? req->cell : NULL, exec_list_visit, &v, &err);
	Kin__V1__ListExecResponse out = KIN__V1__LIST_EXEC_RESPONSE__INIT;
	return api_cells_reply_list(call, r, &err, &v, sizeof(Kin__V1__ExecStatus), exec_list_fill,
	                            &out.base, &out.n_executables, (void ***)&out.executables);
}

static int serve_exec_delete(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	struct err err = {0};
	if (exec_delete(svc->cells, req->cell, req->name, &err) < 0)
		return api_cells_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

static int serve_exec_stdin(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__StdinRequest *req = (const Kin__V1__StdinRequest *)in;
	struct err err = {0};
	ssize_t n = 0;
	if (req->data.len) {
		n = exec_stdin_write(svc->cells, req->cell, req->name, req->data.data,
		                     req->data.len, &err);
		if (n == -EAGAIN)
			n = 0; /* the pipe is full: the client sends again */
		else if (n < 0)
			return api_cells_fail(call, &err);
	} else if (!req->close) {
		/* Nothing to do, but only for an executable that is there. */
		struct exec_status st;
		if (exec_status(svc->cells, req->cell, req->name, &st, &err) < 0)
			return api_cells_fail(call, &err);
	}
	if (req->close && (size_t)n == req->data.len &&
	    exec_stdin_close(svc->cells, req->cell, req->name, &err) < 0)
		return api_cells_fail(call, &err);
	Kin__V1__StdinResponse out = KIN__V1__STDIN_RESPONSE__INIT;
	out.written = (uint64_t)n;
	return rpc_call_reply(call, &out.base);
}

/* ---- Logs ------------------------------------------------------------------------ */

static int serve_exec_logs(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__LogsRequest *req = (const Kin__V1__LogsRequest *)in;
	struct err err = {0};
	struct exec_status status;
	unsigned want;
	const uint64_t from[2] = {req->stdout_from, req->stderr_from};
	if (api_cells_req_logs(req, &want, &err) < 0 ||
	    exec_status(svc->cells, req->cell, req->name, &status, &err) < 0 ||
	    api_logs_serve(&svc->log_streams, svc->cells, call, req->cell, req->name, want,
	                   req->follow, req->resume ? from : NULL, &err) < 0)
		return api_cells_fail(call, &err);
	return 0;
}

static int serve_exec_resize(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return api_exec_resize(userdata, call, (const Kin__V1__ResizeRequest *)in);
}

static int serve_exec_attach(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return api_exec_attach(userdata, call, (const Kin__V1__AttachRequest *)in);
}

static const struct api_method exec_methods[] = {
    {serve_exec_start, 0},
    {serve_exec_signal, 0},
    {serve_exec_stop, 0},
    {serve_exec_wait, 0},
    {serve_exec_status, 0},
    {serve_exec_list, 0},
    {serve_exec_delete, 0},
    {serve_exec_logs, RPC_METHOD_SERVER_STREAM},
    {serve_exec_stdin, 0},
    {serve_exec_resize, 0},
    {serve_exec_attach, RPC_METHOD_SERVER_STREAM},
};
const struct api_handlers api_cells_exec_handlers = {&kin__v1__exec__descriptor, exec_methods,
                                                     ARRAY_SIZE(exec_methods), api_cells_ready};
