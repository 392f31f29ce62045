/* units: the kin.v1.Units service over the service manager (units/):
 * list, status, jobs, daemon-reload, enable/disable/mask/unmask on the
 * unit files, is-enabled, cat, and a service's output as a server stream
 * (its cell's rings, through the cells library as Exec/Logs reads them).
 * What outlives a handler — job calls waiting for their job's end, log
 * followers — is kept here so a client that leaves is detached and kin's
 * stop ends them all. Every error is the manager's code and sentence. */
#include "api/units-int.h"

#include <stdio.h>
#include <string.h>

/* ---- bookkeeping ---------------------------------------------------------------- */

static bool units_ready(struct rpc_call *call, void *userdata)
{
	struct api_units *svc = userdata;
	if (svc->units)
		return true;
	rpc_call_fail(call, ERR_FAILED_PRECONDITION, "%s", svc->why);
	return false;
}

int api_units_fail(struct rpc_call *call, int r, const struct err *err)
{
	if (r == -ENOMEM && !err->msg[0])
		return r;
	return rpc_call_fail_err(call, err, r);
}

int api_units_check_name(const char *name, struct err *err)
{
	size_t len = strnlen(name, UNIT_NAME_MAX + 1);
	if (len == 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "a unit name is needed");
	if (len > UNIT_NAME_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit name of %zu bytes: longer than %d", strlen(name),
		               UNIT_NAME_MAX);
	if (!unit_name_valid(name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit name \"%s\" is not valid (NAME.service, NAME.socket, ...)",
		               name);
	return 0;
}

/* ---- messages --------------------------------------------------------------------- */

void api_units_status_fill(struct api_units_status_msg *sm, const struct unit_status *st)
{
	Kin__V1__UnitStatus *m = &sm->m;
	kin__v1__unit_status__init(m);
	m->name = (char *)st->name;
	m->description = (char *)st->description;
	m->load_state = (char *)st->load_state;
	m->load_error = (char *)st->load_error;
	m->active_state = (char *)unit_active_name(st->active);
	m->sub_state = (char *)st->sub;
	m->result = (char *)st->result;
	m->fragment = (char *)st->fragment;
	m->unit_file_state = (char *)st->unit_file_state;
	m->job = (char *)st->job;
	m->cell = (char *)st->cell;
	m->status_text = (char *)st->status_text;
	m->condition = (char *)st->condition;
	m->main_pid = st->main_pid;
	m->control_pid = st->control_pid;
	m->exit_code = st->exit_code;
	m->exit_signal = st->exit_signal;
	m->exited = st->exited;
	m->restarts = st->restarts;
	m->active_enter_us = st->active_enter_us;
	m->inactive_enter_us = st->inactive_enter_us;
	m->has_memory = st->has_memory;
	m->memory_current = st->memory_current;
	m->has_tasks = st->has_tasks;
	m->tasks_current = st->tasks_current;
	const char *type =
	    st->type >= 0 && st->type < UNIT_TYPE_COUNT ? unit_type_name(st->type) : "";
	m->type = (char *)(type ? type : "");
	m->triggered_by = (char *)st->triggered_by;
	m->next_elapse_us = st->next_elapse_us;
	m->can_reload = st->can_reload;
	m->service_type = (char *)st->service_type;
	m->restart = (char *)st->restart;
}

/* ---- List ------------------------------------------------------------------------- */

struct list_ctx {
	struct unit_status *v;
	size_t n, cap;
};

static int list_visit(const struct unit_status *st, void *data)
{
	struct list_ctx *c = data;
	if (c->n == UNITS_MAX * 2)
		return -E2BIG; /* loaded units and files not loaded: never more */
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct unit_status *p = reallocarray(c->v, cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->v = p;
		c->cap = cap;
	}
	c->v[c->n++] = *st;
	return 0;
}

static int serve_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__ListUnitsRequest *req = (const Kin__V1__ListUnitsRequest *)in;
	struct list_ctx c = {0};
	int r = units_list(svc->units, req->all, list_visit, &c);
	if (r < 0) {
		free(c.v);
		return rpc_call_fail(call, err_code_from_errno(r), "units: listing: %s",
		                     strerror(-r));
	}
	/* Messages once the visit is over: the records moved while growing. */
	_cleanup_free_ struct api_units_status_msg *msgs = calloc(c.n + 1, sizeof(*msgs));
	_cleanup_free_ Kin__V1__UnitStatus **ptrs = calloc(c.n + 1, sizeof(*ptrs));
	r = -ENOMEM;
	if (msgs && ptrs) {
		for (size_t i = 0; i < c.n; i++) {
			api_units_status_fill(&msgs[i], &c.v[i]);
			ptrs[i] = &msgs[i].m;
		}
		Kin__V1__ListUnitsResponse out = KIN__V1__LIST_UNITS_RESPONSE__INIT;
		out.n_units = c.n;
		out.units = ptrs;
		r = rpc_call_reply(call, &out.base);
	}
	free(c.v);
	return r;
}

/* ---- Status ------------------------------------------------------------------------ */

static int serve_status(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitStatusRequest *req = (const Kin__V1__UnitStatusRequest *)in;
	struct err err = {0};
	struct unit_status st;
	struct api_units_status_msg sm;
	struct api_units_tail tail = {0};
	int r = api_units_check_name(req->name, &err);
	if (r == 0 && req->log_lines > API_UNITS_LOG_LINES_MAX)
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT,
		            "unit \"%s\": log_lines %u: at most %d", req->name, req->log_lines,
		            API_UNITS_LOG_LINES_MAX);
	if (r == 0)
		r = units_status(svc->units, req->name, &st, &err);
	if (r < 0)
		return api_units_fail(call, r, &err);
	if (req->log_lines && st.type == UNIT_SERVICE)
		api_units_log_tail(svc, req->name, req->log_lines, &tail);
	api_units_status_fill(&sm, &st);
	Kin__V1__UnitStatusResponse out = KIN__V1__UNIT_STATUS_RESPONSE__INIT;
	out.unit = &sm.m;
	out.n_log = tail.n;
	out.log = tail.lines;
	r = rpc_call_reply(call, &out.base);
	api_units_tail_free(&tail);
	return r;
}

/* ---- Job ----------------------------------------------------------------------------- */

static int job_type_parse(const char *s, enum units_job_type *ret)
{
	for (int t = 0; t < UNITS_JOB_TYPE_COUNT; t++) {
		const char *name = units_job_type_name(t);
		if (name && strcmp(name, s) == 0) {
			*ret = t;
			return 0;
		}
	}
	return -EINVAL;
}

static int reply_job(struct api_units *svc, struct rpc_call *call, const char *name, bool queued)
{
	struct err err = {0};
	struct unit_status st;
	struct api_units_status_msg sm;
	int r = units_status(svc->units, name, &st, &err);
	if (r < 0)
		return api_units_fail(call, r, &err);
	api_units_status_fill(&sm, &st);
	Kin__V1__UnitJobResponse out = KIN__V1__UNIT_JOB_RESPONSE__INIT;
	out.unit = &sm.m;
	out.queued = queued;
	return rpc_call_reply(call, &out.base);
}

static void pending_free(struct api_units_pending *p)
{
	list_remove(&p->node);
	free(p);
}

/* The job ended: the manager no longer holds p. */
static void job_done(int result, const struct err *err, void *data)
{
	struct api_units_pending *p = data;
	if (p->call && p->svc->units) {
		if (result < 0) {
			struct err e = err ? *err : (struct err){0};
			if (!e.msg[0])
				err_set(&e, result, err_code_from_errno(result),
				        "unit \"%s\": job %s failed", p->name, p->type);
			rpc_call_fail_err(p->call, &e, result);
		} else {
			reply_job(p->svc, p->call, p->name, false);
		}
	}
	pending_free(p);
}

static void job_cancelled(struct rpc_call *call, void *data)
{
	struct api_units_pending *p = data;
	(void)call;
	p->call = NULL; /* the manager still holds p: freed by job_done */
}

static int serve_job(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitJobRequest *req = (const Kin__V1__UnitJobRequest *)in;
	struct err err = {0};
	enum units_job_type type = UNITS_JOB_START;
	int r = api_units_check_name(req->name, &err);
	if (r == 0 && job_type_parse(req->type, &type) < 0)
		r = err_set(
		    &err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "unit \"%s\": job type \"%.32s\": expected start, stop, restart, reload, "
		    "try-restart, reload-or-restart or try-reload-or-restart",
		    req->name, req->type);
	if (r < 0)
		return api_units_fail(call, r, &err);
	struct api_units_pending *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->svc = svc;
	p->call = call;
	(void)str_copy(p->name, sizeof(p->name), req->name);
	(void)str_copy(p->type, sizeof(p->type), req->type);
	list_push(&svc->pending, &p->node);
	r = units_job(svc->units, req->name, type, req->no_block, job_done, p, &err);
	if (r == 1) {
		rpc_call_on_cancel(call, job_cancelled, p);
		return 0;
	}
	pending_free(p);
	if (r < 0)
		return api_units_fail(call, r, &err);
	return reply_job(svc, call, req->name, req->no_block);
}

/* ---- files ----------------------------------------------------------------------------- */

static int serve_daemon_reload(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	struct err err = {0};
	(void)in;
	int r = units_daemon_reload(svc->units, &err);
	if (r < 0)
		return api_units_fail(call, r, &err);
	Kin__V1__DaemonReloadResponse out = KIN__V1__DAEMON_RELOAD_RESPONSE__INIT;
	return rpc_call_reply(call, &out.base);
}

static int serve_file_state(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitRequest *req = (const Kin__V1__UnitRequest *)in;
	struct err err = {0};
	char state[32];
	int r = api_units_check_name(req->name, &err);
	if (r < 0)
		return api_units_fail(call, r, &err);
	r = unit_file_state(units_paths(svc->units), req->name, state, sizeof(state));
	if (r == -ENOENT)
		return rpc_call_fail(call, ERR_NOT_FOUND, "unit \"%s\": no such unit file",
		                     req->name);
	if (r < 0)
		return rpc_call_fail(call, err_code_from_errno(r), "unit \"%s\": %s", req->name,
		                     strerror(-r));
	Kin__V1__UnitFileStateResponse out = KIN__V1__UNIT_FILE_STATE_RESPONSE__INIT;
	out.state = state;
	return rpc_call_reply(call, &out.base);
}

static int serve_cat(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitRequest *req = (const Kin__V1__UnitRequest *)in;
	struct err err = {0};
	_cleanup_free_ char *text = NULL;
	int r = api_units_check_name(req->name, &err);
	if (r == 0)
		r = units_cat(svc->units, req->name, &text, &err);
	if (r < 0)
		return api_units_fail(call, r, &err);
	Kin__V1__UnitCatResponse out = KIN__V1__UNIT_CAT_RESPONSE__INIT;
	out.text = text;
	return rpc_call_reply(call, &out.base);
}

/* ---- start and end ------------------------------------------------------------------------ */

static const struct api_method units_methods[] = {
    {serve_list, 0},
    {serve_status, 0},
    {serve_job, 0},
    {serve_daemon_reload, 0},
    {api_units_serve_enable, 0},
    {api_units_serve_disable, 0},
    {api_units_serve_mask, 0},
    {api_units_serve_unmask, 0},
    {serve_file_state, 0},
    {serve_cat, 0},
    {api_units_serve_logs, RPC_METHOD_SERVER_STREAM},
};
static const struct api_handlers units_handlers = {&kin__v1__units__descriptor, units_methods,
                                                   ARRAY_SIZE(units_methods), units_ready};

#define NO_MANAGER "no service manager: kin runs units only as a host's init or with --unit-dir"

static int units_start(struct api *api, const struct api_config *cfg)
{
	_cleanup_free_ struct api_units *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->units = cfg->units;
	svc->cells = cfg->cells;
	(void)str_copy(svc->why, sizeof(svc->why), NO_MANAGER);
	list_init(&svc->pending);
	list_init(&svc->streams);
	int r = api_bind(cfg->rpc, &svc->binding, &units_handlers, svc);
	if (r < 0)
		return r;
	api->units = TAKE_PTR(svc);
	return 0;
}

/* Pending job calls and log streams end UNAVAILABLE and the manager is let
 * go: before units_free and cells_free (the streams follow cells' rings). */
static void units_shutdown_svc(struct api *api)
{
	struct api_units *svc = api->units;
	struct api_units_pending *p;
	if (!svc)
		return;
	api_logs_end(&svc->streams);
	list_for_each(p, &svc->pending, node) {
		if (p->call) {
			struct rpc_call *call = p->call;
			p->call = NULL;
			rpc_call_fail(call, ERR_UNAVAILABLE, "kin is stopping");
		}
	}
	(void)str_copy(svc->why, sizeof(svc->why), "kin is stopping");
	svc->units = NULL;
	svc->cells = NULL;
}

/* After rpc_server_free and units_free: a job the manager never ended
 * leaves its record to us. */
static void units_free_svc(struct api *api)
{
	struct api_units *svc = api->units;
	struct api_units_pending *p, *p_next;
	if (!svc)
		return;
	list_for_each_safe(p, p_next, &svc->pending, node)
		pending_free(p);
	api_logs_free(&svc->streams);
	api_binding_release(&svc->binding);
	free(svc);
	api->units = NULL;
}

const struct api_service api_service_units = {
    .name = "the Units service",
    .start = units_start,
    .shutdown = units_shutdown_svc,
    .free = units_free_svc,
};
