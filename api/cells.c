/* svc_cells: the kin.v1.Cells and kin.v1.Events services over the cells
 * library, and the bookkeeping rpc/svc_exec.c shares (pending calls, open
 * streams). Every error is the library's code and sentence, passed through.
 * Events go out as a server stream; a client that reads too slowly loses
 * events (the connection's output is full), and the next event it gets
 * says how many it missed (Event.dropped): memory stays bounded by the
 * server's per-connection output cap. */
#include "api/cells_svc.h"

#include <stdio.h>
#include <string.h>

/* ---- shared bookkeeping ------------------------------------------------------ */

static int cells_svc_dispatch(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const struct cells_method *m = userdata;
	if (!m->svc->cells)
		return rpc_call_fail(call, RPC_FAILED_PRECONDITION, "cells are not available: %s",
		                     m->svc->why);
	return m->fn(m->svc, call, in);
}

int cells_svc_register(struct rpc_server *s, struct rpc_cells_service *svc,
                       struct cells_method *methods, struct rpc_method *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		methods[i].svc = svc;
		out[i] =
		    (struct rpc_method){methods[i].service, methods[i].method, methods[i].input,
		                        cells_svc_dispatch, methods[i].flags,  &methods[i]};
	}
	return rpc_server_register(s, out, n);
}

int cells_svc_fail(struct rpc_call *call, const struct cells_err *err)
{
	int code = err->code != CELLS_OK ? (int)err->code : rpc_code_from_errno(err->err);
	if (code == RPC_OK)
		code = RPC_INTERNAL;
	return rpc_call_fail(call, code, "%s",
	                     err->msg[0] ? err->msg : strerror(err->err ? -err->err : EIO));
}

int cells_svc_failed(struct rpc_call *call, int r, const struct cells_err *err)
{
	if (r == -ENOMEM && !err->msg[0])
		return r;
	return cells_svc_fail(call, err);
}

struct cells_pending *cells_pending_new(struct rpc_cells_service *svc, struct rpc_call *call)
{
	struct cells_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->svc = svc;
	p->call = call;
	CELLS_LIST_PUSH(svc->pending, p);
	return p;
}

void cells_pending_free(struct cells_pending *p)
{
	CELLS_LIST_UNLINK(p->svc->pending, p);
	free(p);
}

static void pending_cancelled(struct rpc_call *call, void *data)
{
	struct cells_pending *p = data;
	(void)call;
	p->call = NULL; /* the library still holds p: freed by its callback */
}

int cells_pending_settle(struct cells_pending *p, int r)
{
	if (r == 1)
		rpc_call_on_cancel(p->call, pending_cancelled, p);
	else
		cells_pending_free(p);
	return r;
}

struct cells_stream *cells_stream_new(struct rpc_cells_service *svc, struct rpc_call *call)
{
	struct cells_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->svc = svc;
	st->call = call;
	CELLS_LIST_PUSH(svc->streams, st);
	return st;
}

void cells_stream_free(struct cells_stream *st)
{
	CELLS_LIST_UNLINK(st->svc->streams, st);
	free(st);
}

int cells_vec_push(struct cells_vec *v, const void *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		void *p = reallocarray(v->items, cap, v->size);
		if (!p)
			return -ENOMEM;
		v->items = p;
		v->cap = cap;
	}
	memcpy((char *)v->items + v->n++ * v->size, item, v->size);
	return 0;
}

int cells_svc_reply_list(struct rpc_call *call, int r, const struct cells_err *err,
                         struct cells_vec *v, size_t msg_size, cells_fill_fn fill,
                         ProtobufCMessage *out, size_t *ret_n, void ***ret_items)
{
	if (r < 0) {
		free(v->items);
		*v = (struct cells_vec){0};
		return cells_svc_failed(call, r, err);
	}
	/* Messages only once the visit is over: records may move while growing. */
	_cleanup_free_ char *msgs = calloc(v->n + 1, msg_size);
	_cleanup_free_ void **ptrs = calloc(v->n + 1, sizeof(*ptrs));
	r = -ENOMEM;
	if (msgs && ptrs) {
		for (size_t i = 0; i < v->n; i++) {
			ptrs[i] = msgs + i * msg_size;
			fill(ptrs[i], (const char *)v->items + i * v->size);
		}
		*ret_n = v->n;
		*ret_items = ptrs;
		r = rpc_call_reply(call, out);
	}
	free(v->items);
	*v = (struct cells_vec){0};
	return r;
}

/* ---- messages ---------------------------------------------------------------------- */

/* A Cell message over info; strings point into info and bufs. */
struct cell_msg {
	Kin__V1__Cell m;
	Kin__V1__Limit lim[CELL_LIMIT_COUNT], *limp[CELL_LIMIT_COUNT];
	char val[CELL_LIMIT_COUNT][CELL_CPUSET_LEN + 32];
	char *ctl[CELLS_CTL_COUNT];
};

static void cell_msg_fill(struct cell_msg *cm, const struct cell_info *info)
{
	kin__v1__cell__init(&cm->m);
	cm->m.path = (char *)info->path;
	cm->m.depth = info->depth;
	cm->m.populated = info->populated;
	cm->m.frozen = info->frozen;
	cm->m.executables = (uint32_t)info->nexec;
	for (int k = 0; k < CELLS_CTL_COUNT; k++)
		if (info->controllers & (1u << k))
			cm->ctl[cm->m.n_controllers++] = (char *)cells_controller_name(k);
	cm->m.controllers = cm->ctl;
	for (int k = 0; k < CELL_LIMIT_COUNT; k++) {
		if (!(info->limits.set & (1u << k)))
			continue;
		size_t i = cm->m.n_limits;
		if (cell_limit_format(&info->limits, k, cm->val[i], sizeof(cm->val[i])) < 0)
			continue;
		kin__v1__limit__init(&cm->lim[i]);
		cm->lim[i].key = (char *)cell_limit_name(k);
		cm->lim[i].value = cm->val[i];
		cm->limp[i] = &cm->lim[i];
		cm->m.n_limits++;
	}
	cm->m.limits = cm->limp;
}

static int reply_cell(struct rpc_cells_service *svc, struct rpc_call *call, const char *path)
{
	struct cells_err err = {0};
	struct cell_info info;
	struct cell_msg cm;
	if (cell_show(svc->cells, path, &info, NULL, &err) < 0)
		return cells_svc_fail(call, &err);
	cell_msg_fill(&cm, &info);
	return rpc_call_reply(call, &cm.m.base);
}

/* ---- Cells ---------------------------------------------------------------------------- */

static int cells_create_update(struct rpc_cells_service *svc, struct rpc_call *call, const void *in,
                               bool create)
{
	const Kin__V1__CreateCellRequest *req = in;
	struct cells_err err = {0};
	struct cell_limits l;
	if (cells_req_limits(req, &l, &err) < 0 ||
	    (create ? cell_create(svc->cells, req->path, &l, &err)
	            : cell_update(svc->cells, req->path, &l, &err)) < 0)
		return cells_svc_fail(call, &err);
	return reply_cell(svc, call, req->path);
}

static int cells_create(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	return cells_create_update(svc, call, in, true);
}

static int cells_update(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	return cells_create_update(svc, call, in, false);
}

static int list_visit(const struct cell_info *info, void *data)
{
	return cells_vec_push(data, info);
}

static void list_fill(void *msg, const void *record)
{
	cell_msg_fill(msg, record);
}

static int cells_list(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	const Kin__V1__ListCellsRequest *req = in;
	struct cells_err err = {0};
	struct cells_vec v = {.size = sizeof(struct cell_info)};
	int r = cell_list(svc->cells, req->path[0] ? req->path : NULL, list_visit, &v, &err);
	Kin__V1__ListCellsResponse out = KIN__V1__LIST_CELLS_RESPONSE__INIT;
	return cells_svc_reply_list(call, r, &err, &v, sizeof(struct cell_msg), list_fill,
	                            &out.base, &out.n_cells, (void ***)&out.cells);
}

static void psi_fill(Kin__V1__Psi *m, Kin__V1__PsiLine *some, Kin__V1__PsiLine *full,
                     const struct cell_psi *p)
{
	kin__v1__psi__init(m);
	kin__v1__psi_line__init(some);
	kin__v1__psi_line__init(full);
	some->avg10 = p->some.avg10;
	some->avg60 = p->some.avg60;
	some->avg300 = p->some.avg300;
	some->total_us = p->some.total_us;
	full->avg10 = p->full.avg10;
	full->avg60 = p->full.avg60;
	full->avg300 = p->full.avg300;
	full->total_us = p->full.total_us;
	m->some = some;
	m->full = full;
}

static int cells_show(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	const Kin__V1__CellRequest *req = in;
	struct cells_err err = {0};
	struct cell_info info;
	struct cell_stats s;
	struct cell_msg cm;
	if (cell_show(svc->cells, req->path, &info, &s, &err) < 0)
		return cells_svc_fail(call, &err);
	cell_msg_fill(&cm, &info);
	Kin__V1__CellStats st = KIN__V1__CELL_STATS__INIT;
	st.has_cpu = s.has_cpu;
	st.cpu_usage_us = s.cpu_usage_us;
	st.cpu_user_us = s.cpu_user_us;
	st.cpu_system_us = s.cpu_system_us;
	st.cpu_nr_periods = s.cpu_nr_periods;
	st.cpu_nr_throttled = s.cpu_nr_throttled;
	st.cpu_throttled_us = s.cpu_throttled_us;
	st.has_memory = s.has_memory;
	st.memory_current = s.memory_current;
	st.memory_peak = s.memory_peak;
	st.memory_events_low = s.mem_ev_low;
	st.memory_events_high = s.mem_ev_high;
	st.memory_events_max = s.mem_ev_max;
	st.memory_events_oom = s.mem_ev_oom;
	st.memory_events_oom_kill = s.mem_ev_oom_kill;
	st.has_pids = s.has_pids;
	st.pids_current = s.pids_current;
	st.procs = s.procs;
	Kin__V1__Psi psi[3];
	Kin__V1__PsiLine lines[6];
	const struct cell_psi *src[3] = {&s.psi_cpu, &s.psi_memory, &s.psi_io};
	Kin__V1__Psi **dst[3] = {&st.psi_cpu, &st.psi_memory, &st.psi_io};
	for (int i = 0; i < 3; i++)
		if (src[i]->present) {
			psi_fill(&psi[i], &lines[2 * i], &lines[2 * i + 1], src[i]);
			*dst[i] = &psi[i];
		}
	Kin__V1__ShowCellResponse out = KIN__V1__SHOW_CELL_RESPONSE__INIT;
	out.cell = &cm.m;
	out.stats = &st;
	return rpc_call_reply(call, &out.base);
}

/* Freeze, Thaw (p->path: answers the Cell) and Delete (answers Empty). */
static void pending_cell_done(int result, const struct cells_err *err, void *data)
{
	struct cells_pending *p = data;
	if (p->call) {
		if (result < 0) {
			struct cells_err e = err ? *err : (struct cells_err){.err = result};
			if (!e.err)
				e.err = result;
			cells_svc_fail(p->call, &e);
		} else if (p->path[0]) {
			reply_cell(p->svc, p->call, p->path);
		} else {
			rpc_call_reply(p->call, NULL);
		}
	}
	cells_pending_free(p);
}

static int cells_freeze_thaw(struct rpc_cells_service *svc, struct rpc_call *call, const void *in,
                             bool freeze)
{
	const Kin__V1__CellRequest *req = in;
	struct cells_err err = {0};
	struct cells_pending *p = cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	(void)str_copy(p->path, sizeof(p->path), req->path);
	int r = cells_pending_settle(
	    p, cell_freeze(svc->cells, req->path, freeze, pending_cell_done, p, &err));
	if (r == 1)
		return 0;
	if (r < 0)
		return cells_svc_fail(call, &err);
	return reply_cell(svc, call, req->path);
}

static int cells_freeze(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	return cells_freeze_thaw(svc, call, in, true);
}

static int cells_thaw(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	return cells_freeze_thaw(svc, call, in, false);
}

static int cells_kill(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	const Kin__V1__CellRequest *req = in;
	struct cells_err err = {0};
	if (cell_kill(svc->cells, req->path, &err) < 0)
		return cells_svc_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

static int cells_delete(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	const Kin__V1__DeleteCellRequest *req = in;
	struct cells_err err = {0};
	struct cells_pending *p = cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	int r = cells_pending_settle(
	    p, cell_delete(svc->cells, req->path, req->force, pending_cell_done, p, &err));
	if (r == 1)
		return 0;
	if (r < 0)
		return cells_svc_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

/* ---- Events ------------------------------------------------------------------------------ */

static bool in_subtree(const char *filter, const char *path)
{
	size_t n = strlen(filter);
	return !n || (path && strncmp(path, filter, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

static void events_event(const struct cells_event *ev, void *data)
{
	struct cells_stream *st = data;
	if (!st->call || !in_subtree(st->filter, ev->cell))
		return;
	Kin__V1__Event m = KIN__V1__EVENT__INIT;
	m.type = (Kin__V1__EventType)(ev->type + 1);
	m.name = (char *)cells_event_name(ev->type);
	m.cell = (char *)(ev->cell ? ev->cell : "");
	m.exec = (char *)(ev->exec ? ev->exec : "");
	m.pid = ev->pid;
	m.exit_code = ev->exit_code;
	m.signal = ev->signal;
	m.count = ev->count;
	m.delay_ms = ev->delay_ms;
	m.time_ns = ev->time_ns;
	m.dropped = st->dropped;
	int r = rpc_call_send(st->call, &m.base);
	if (r == -ENOBUFS)
		st->dropped++; /* the next event that fits says so */
	else if (r == 0)
		st->dropped = 0;
}

/* The library went away (kin is stopping) or we unlistened. */
static void events_closed(void *data)
{
	struct cells_stream *st = data;
	if (st->closing)
		return; /* our own unlisten: the caller finishes */
	if (st->call)
		rpc_call_close(st->call, RPC_UNAVAILABLE, "kin is stopping");
	cells_stream_free(st);
}

static const struct cells_listener_ops events_ops = {
    .event = events_event,
    .closed = events_closed,
};

static void events_cancelled(struct rpc_call *call, void *data)
{
	struct cells_stream *st = data;
	(void)call;
	st->call = NULL;
	st->closing = true;
	cells_unlisten(st->svc->cells, st->listener);
	cells_stream_free(st);
}

static int events_subscribe(struct rpc_cells_service *svc, struct rpc_call *call, const void *in)
{
	const Kin__V1__EventsRequest *req = in;
	struct cells_err err = {0};
	if (cells_req_events(req, &err) < 0)
		return cells_svc_fail(call, &err);
	struct cells_stream *st = cells_stream_new(svc, call);
	if (!st)
		return -ENOMEM;
	(void)str_copy(st->filter, sizeof(st->filter), req->cell);
	int r = cells_listen(svc->cells, &events_ops, st, &st->listener);
	if (r < 0) {
		cells_stream_free(st);
		if (r == -EUSERS)
			return rpc_call_fail(call, RPC_RESOURCE_EXHAUSTED,
			                     "already %d event subscribers", CELLS_LISTENERS_MAX);
		return r;
	}
	rpc_call_on_cancel(call, events_cancelled, st);
	return 0;
}

/* ---- registration ---------------------------------------------------------------------- */

int rpc_cells_register(struct rpc_server *s, struct cells *cells, const char *why,
                       struct rpc_cells_service **ret)
{
	struct rpc_cells_service *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->cells = cells;
	(void)str_copy(svc->why, sizeof(svc->why), why ? why : "no cgroup2");
	/* Kept by pointer by the server: static, one cells service per process. */
	static struct cells_method methods[] = {
	    CELLS_METHOD("Cells", "Create", create_cell_request, cells_create, 0),
	    CELLS_METHOD("Cells", "Update", create_cell_request, cells_update, 0),
	    CELLS_METHOD("Cells", "List", list_cells_request, cells_list, 0),
	    CELLS_METHOD("Cells", "Show", cell_request, cells_show, 0),
	    CELLS_METHOD("Cells", "Freeze", cell_request, cells_freeze, 0),
	    CELLS_METHOD("Cells", "Thaw", cell_request, cells_thaw, 0),
	    CELLS_METHOD("Cells", "Kill", cell_request, cells_kill, 0),
	    CELLS_METHOD("Cells", "Delete", delete_cell_request, cells_delete, 0),
	    CELLS_METHOD("Events", "Subscribe", events_request, events_subscribe,
	                 RPC_METHOD_SERVER_STREAM),
	};
	static struct rpc_method out[ARRAY_SIZE(methods)];
	int r = cells_svc_register(s, svc, methods, out, ARRAY_SIZE(methods));
	if (r == 0)
		r = cells_svc_register_exec(s, svc);
	if (r < 0) {
		free(svc);
		return r;
	}
	*ret = svc;
	return 0;
}

void rpc_cells_shutdown(struct rpc_cells_service *svc)
{
	if (!svc)
		return;
	while (svc->streams) {
		struct cells_stream *st = svc->streams;
		struct rpc_call *call = st->call;
		st->call = NULL;
		st->closing = true;
		if (st->listener)
			cells_unlisten(svc->cells, st->listener);
		if (st->follower)
			exec_log_unfollow(svc->cells, st->follower);
		if (call)
			rpc_call_close(call, RPC_UNAVAILABLE, "kin is stopping");
		cells_stream_free(st);
	}
	for (struct cells_pending *p = svc->pending; p; p = p->next)
		if (p->call) {
			struct rpc_call *call = p->call;
			p->call = NULL;
			rpc_call_fail(call, RPC_UNAVAILABLE, "kin is stopping");
		}
	if (svc->cells)
		(void)str_copy(svc->why, sizeof(svc->why), "kin is stopping");
	svc->cells = NULL;
}

void rpc_cells_free(struct rpc_cells_service *svc)
{
	if (!svc)
		return;
	while (svc->pending)
		cells_pending_free(svc->pending);
	while (svc->streams)
		cells_stream_free(svc->streams);
	free(svc);
}
