/* events: the kin.v1.Events service — the cells library's events as a
 * server stream (Subscribe), all of them or a subtree's. A client that
 * reads too slowly loses events (the connection's output is full), and the
 * next event it gets says how many it missed (Event.dropped): memory stays
 * bounded by the server's per-connection output cap. Started and ended
 * with Cells (api/cells.c). */
#include "api/cells-int.h"

#include <string.h>

static bool in_subtree(const char *filter, const char *path)
{
	size_t n = strlen(filter);
	return !n || (path && strncmp(path, filter, n) == 0 && (path[n] == '\0' || path[n] == '/'));
}

static void events_event(const struct cells_event *ev, void *data)
{
	struct api_cells_stream *st = data;
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
	m.status_unknown = ev->status_unknown;
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
	struct api_cells_stream *st = data;
	if (st->closing)
		return; /* our own unlisten: the caller finishes */
	if (st->call)
		rpc_call_close(st->call, ERR_UNAVAILABLE, "kin is stopping");
	api_cells_stream_free(st);
}

static const struct cells_listener_ops events_ops = {
    .event = events_event,
    .closed = events_closed,
};

static void events_cancelled(struct rpc_call *call, void *data)
{
	struct api_cells_stream *st = data;
	(void)call;
	st->call = NULL;
	st->closing = true;
	cells_unlisten(st->svc->cells, st->listener);
	api_cells_stream_free(st);
}

static int serve_events_subscribe(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_cells *svc = userdata;
	const Kin__V1__EventsRequest *req = (const Kin__V1__EventsRequest *)in;
	struct err err = {0};
	if (api_cells_req_events(req, &err) < 0)
		return api_cells_fail(call, &err);
	struct api_cells_stream *st = api_cells_stream_new(svc, call);
	if (!st)
		return -ENOMEM;
	(void)str_copy(st->filter, sizeof(st->filter), req->cell);
	int r = cells_listen(svc->cells, &events_ops, st, &st->listener);
	if (r < 0) {
		api_cells_stream_free(st);
		if (r == -EUSERS)
			return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED,
			                     "already %d event subscribers", CELLS_LISTENERS_MAX);
		return r;
	}
	rpc_call_on_cancel(call, events_cancelled, st);
	return 0;
}

static const struct api_method events_methods[] = {
    {serve_events_subscribe, RPC_METHOD_SERVER_STREAM},
};
const struct api_handlers api_cells_events_handlers = {&kin__v1__events__descriptor, events_methods,
                                                       ARRAY_SIZE(events_methods), api_cells_ready};
