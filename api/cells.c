/* cells: the kin.v1.Cells service over the cells library, the bookkeeping
 * Exec and Events share with it (pending calls, open streams), and the
 * start and end of all three. Every error is the library's code and
 * sentence, passed through. */
#include "api/cells-int.h"

#include <stdio.h>
#include <string.h>

/* ---- shared bookkeeping ------------------------------------------------------ */

bool api_cells_ready(struct rpc_call *call, void *userdata)
{
	struct api_cells *svc = userdata;
	if (svc->cells)
		return true;
	rpc_call_fail(call, ERR_FAILED_PRECONDITION, "cells are not available: %s", svc->why);
	return false;
}

int api_cells_fail(struct rpc_call *call, const struct err *err)
{
	int code = err->code != ERR_OK ? (int)err->code : err_code_from_errno(err->errnum);
	if (code == ERR_OK)
		code = ERR_INTERNAL;
	return rpc_call_fail(call, code, "%s",
	                     err->msg[0] ? err->msg : strerror(err->errnum ? -err->errnum : EIO));
}

int api_cells_failed(struct rpc_call *call, int r, const struct err *err)
{
	if (r == -ENOMEM && !err->msg[0])
		return r;
	return api_cells_fail(call, err);
}

struct api_cells_pending *api_cells_pending_new(struct api_cells *svc, struct rpc_call *call)
{
	struct api_cells_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->svc = svc;
	p->call = call;
	list_push(&svc->pending, &p->node);
	return p;
}

void api_cells_pending_free(struct api_cells_pending *p)
{
	list_remove(&p->node);
	free(p);
}

static void pending_cancelled(struct rpc_call *call, void *data)
{
	struct api_cells_pending *p = data;
	(void)call;
	p->call = NULL; /* the library still holds p: freed by its callback */
	/* A wait's slot is the executable's (a few): given back now, not
	 * when it ends. */
	if (p->waiting && exec_unwait(p->svc->cells, p->path, p->name, p->waiting, p) == 0)
		api_cells_pending_free(p);
}

int api_cells_pending_settle(struct api_cells_pending *p, int r)
{
	if (r == 1)
		rpc_call_on_cancel(p->call, pending_cancelled, p);
	else
		api_cells_pending_free(p);
	return r;
}

struct api_cells_stream *api_cells_stream_new(struct api_cells *svc, struct rpc_call *call)
{
	struct api_cells_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->svc = svc;
	st->call = call;
	list_push(&svc->streams, &st->node);
	return st;
}

void api_cells_stream_free(struct api_cells_stream *st)
{
	list_remove(&st->node);
	free(st);
}

int api_cells_vec_push(struct api_cells_vec *v, const void *item)
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

int api_cells_reply_list(struct rpc_call *call, int r, const struct err *err,
                         struct api_cells_vec *v, size_t msg_size, api_cells_fill_fn fill,
                         ProtobufCMessage *out, size_t *ret_n, void ***ret_items)
{
	if (r < 0) {
		free(v->items);
		*v = (struct api_cells_vec){0};
		return api_cells_failed(call, r, err);
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
	*v = (struct api_cells_vec){0};
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

static int reply_cell(struct api_cells *svc, struct rpc_call *call, const char *path)
{
	struct err err = {0};
	struct cell_info info;
	struct cell_msg cm;
	if (cell_show(svc->cells, path, &info, NULL, &err) < 0)
		return api_cells_fail(call, &err);
	cell_msg_fill(&cm, &info);
	return rpc_call_reply(call, &cm.m.base);
}

/* ---- Cells ---------------------------------------------------------------------------- */

static int cells_create_update(struct api_cells *svc, struct rpc_call *call,
                               const ProtobufCMessage *in, bool create)
{
	const Kin__V1__CreateCellRequest *req = (const Kin__V1__CreateCellRequest *)in;
	struct err err = {0};
	struct cell_limits l;
	if (api_cells_req_limits(req, &l, &err) < 0 ||
	    (create ? cell_create(svc->cells, req->path, &l, &err)
	            : cell_update(svc->cells, req->path, &l, &err)) < 0)
		return api_cells_fail(call, &err);
	return reply_cell(svc, call, req->path);
}

static int serve_cells_create(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	return cells_create_update(svc, call, in, true);
}

static int serve_cells_update(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	return cells_create_update(svc, call, in, false);
}

static int list_visit(const struct cell_info *info, void *data)
{
	return api_cells_vec_push(data, info);
}

static void list_fill(void *msg, const void *record)
{
	cell_msg_fill(msg, record);
}

static int serve_cells_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__ListCellsRequest *req = (const Kin__V1__ListCellsRequest *)in;
	struct err err = {0};
	struct api_cells_vec v = {.size = sizeof(struct cell_info)};
	int r = cell_list(svc->cells, req->path[0] ? req->path : NULL, list_visit, &v, &err);
	Kin__V1__ListCellsResponse out = KIN__V1__LIST_CELLS_RESPONSE__INIT;
	return api_cells_reply_list(call, r, &err, &v, sizeof(struct cell_msg), list_fill,
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

static int serve_cells_show(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__CellRequest *req = (const Kin__V1__CellRequest *)in;
	struct err err = {0};
	struct cell_info info;
	struct cell_stats s;
	struct cell_msg cm;
	if (cell_show(svc->cells, req->path, &info, &s, &err) < 0)
		return api_cells_fail(call, &err);
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
static void pending_cell_done(int result, const struct err *err, void *data)
{
	struct api_cells_pending *p = data;
	if (p->call) {
		if (result < 0) {
			struct err e = err ? *err : (struct err){.errnum = result};
			if (!e.errnum)
				e.errnum = result;
			api_cells_fail(p->call, &e);
		} else if (p->path[0]) {
			reply_cell(p->svc, p->call, p->path);
		} else {
			rpc_call_reply(p->call, NULL);
		}
	}
	api_cells_pending_free(p);
}

static int cells_freeze_thaw(struct api_cells *svc, struct rpc_call *call,
                             const ProtobufCMessage *in, bool freeze)
{
	const Kin__V1__CellRequest *req = (const Kin__V1__CellRequest *)in;
	struct err err = {0};
	struct api_cells_pending *p = api_cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	(void)str_copy(p->path, sizeof(p->path), req->path);
	int r = api_cells_pending_settle(
	    p, cell_freeze(svc->cells, req->path, freeze, pending_cell_done, p, &err));
	if (r == 1)
		return 0;
	if (r < 0)
		return api_cells_fail(call, &err);
	return reply_cell(svc, call, req->path);
}

static int serve_cells_freeze(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	return cells_freeze_thaw(svc, call, in, true);
}

static int serve_cells_thaw(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	return cells_freeze_thaw(svc, call, in, false);
}

static int serve_cells_kill(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__CellRequest *req = (const Kin__V1__CellRequest *)in;
	struct err err = {0};
	if (cell_kill(svc->cells, req->path, &err) < 0)
		return api_cells_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

static int serve_cells_delete(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__DeleteCellRequest *req = (const Kin__V1__DeleteCellRequest *)in;
	struct err err = {0};
	struct api_cells_pending *p = api_cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	int r = api_cells_pending_settle(
	    p, cell_delete(svc->cells, req->path, req->force, pending_cell_done, p, &err));
	if (r == 1)
		return 0;
	if (r < 0)
		return api_cells_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

/* ---- start and end ---------------------------------------------------------------------- */

static const struct api_method cells_methods[] = {
    {serve_cells_create, 0}, {serve_cells_update, 0}, {serve_cells_list, 0},
    {serve_cells_show, 0},   {serve_cells_freeze, 0}, {serve_cells_thaw, 0},
    {serve_cells_kill, 0},   {serve_cells_delete, 0},
};
static const struct api_handlers cells_handlers = {&kin__v1__cells__descriptor, cells_methods,
                                                   ARRAY_SIZE(cells_methods), api_cells_ready};

static int cells_start(struct api *api, const struct api_config *cfg)
{
	_cleanup_free_ struct api_cells *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->cells = cfg->cells;
	svc->children = cfg->children;
	svc->images = api->images; /* started before: NULL if it could not start */
	(void)str_copy(svc->why, sizeof(svc->why), cfg->cells_why ? cfg->cells_why : "no cgroup2");
	list_init(&svc->pending);
	list_init(&svc->streams);
	list_init(&svc->log_streams);
	list_init(&svc->attached);
	list_init(&svc->containers);
	int r = api_bind(cfg->rpc, &svc->cells_binding, &cells_handlers, svc);
	if (r == 0)
		r = api_bind(cfg->rpc, &svc->exec_binding, &api_cells_exec_handlers, svc);
	if (r == 0)
		r = api_bind(cfg->rpc, &svc->events_binding, &api_cells_events_handlers, svc);
	if (r < 0)
		return r;
	api->cells = TAKE_PTR(svc);
	api_keep_add(api, &api_exec_images_part, api->cells);
	return 0;
}

/* Ends every open stream and pending call (UNAVAILABLE: kin is stopping)
 * and stops using the library: before cells_free. */
static void cells_shutdown(struct api *api)
{
	struct api_cells *svc = api->cells;
	struct api_cells_stream *st;
	struct api_cells_pending *p;
	if (!svc)
		return;
	/* From the head each time: ending one stream may end others. */
	while ((st = list_first_entry(&svc->streams, struct api_cells_stream, node))) {
		struct rpc_call *call = st->call;
		st->call = NULL;
		st->closing = true;
		if (st->listener)
			cells_unlisten(svc->cells, st->listener);
		if (call)
			rpc_call_close(call, ERR_UNAVAILABLE, "kin is stopping");
		api_cells_stream_free(st);
	}
	api_logs_end(&svc->log_streams);
	api_exec_attach_end(&svc->attached);
	list_for_each(p, &svc->pending, node) {
		if (p->call) {
			struct rpc_call *call = p->call;
			p->call = NULL;
			rpc_call_fail(call, ERR_UNAVAILABLE, "kin is stopping");
		}
	}
	if (svc->cells)
		(void)str_copy(svc->why, sizeof(svc->why), "kin is stopping");
	svc->cells = NULL;
}

/* After rpc_server_free and cells_free. */
static void cells_free_all(struct api *api)
{
	struct api_cells *svc = api->cells;
	struct api_cells_pending *p, *p_next;
	struct api_cells_stream *st, *st_next;
	if (!svc)
		return;
	api_keep_remove(api, svc);
	list_for_each_safe(p, p_next, &svc->pending, node)
		api_cells_pending_free(p);
	list_for_each_safe(st, st_next, &svc->streams, node)
		api_cells_stream_free(st);
	api_logs_free(&svc->log_streams);
	api_exec_attach_free(&svc->attached);
	api_binding_release(&svc->cells_binding);
	api_binding_release(&svc->exec_binding);
	api_binding_release(&svc->events_binding);
	free(svc);
	api->cells = NULL;
}

const struct api_service api_service_cells = {
    .name = "the cells services",
    .start = cells_start,
    .shutdown = cells_shutdown,
    .free = cells_free_all,
};
