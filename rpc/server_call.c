/* server_call: calls in flight and their dispatch. A call lives from its
 * Request frame until its answer is queued, or until its connection
 * closes and cancels it; a handler holds it through rpc.h's rpc_call_*
 * and may answer from any later event. A Request naming a kin-target is
 * route.c's to forward, whatever its method. */
#include "rpc/server-int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- calls --------------------------------------------------------------------- */

void rpc_call_report(struct rpc_call *call, int code)
{
	struct rpc_conn *c = call->conn;
	if (!call->report || !c)
		return;
	call->report = false;
	struct rpc_server *s = c->server;
	const char *target = rpc_call_metadata(call, RPC_TARGET_KEY);
	struct rpc_call_info info = {.peer = &c->peer,
	                             .service = call->req.service,
	                             .method = call->req.method,
	                             .target = target && *target ? target : NULL,
	                             .payload = call->req.payload,
	                             .payload_len = call->req.payload_len};
	if (s->guard.ended)
		s->guard.ended(&info, code, s->guard.data);
}

void rpc_call_set_status(struct rpc_call *call, int code)
{
	call->status = code;
}

void rpc_call_free(struct rpc_call *call)
{
	struct rpc_conn *c = call->conn;
	rpc_call_report(call, call->status);
	if (c) {
		list_remove(&call->node);
		c->inflight--;
		c->server->stats.inflight--;
		if (c->server->dispatching == call)
			c->server->dispatching = NULL;
		rpc_server_timer_remove(c->server, &call->deadline);
	}
	rpc_request_done(&call->req);
	free(call);
}

int rpc_call_reply(struct rpc_call *call, const ProtobufCMessage *out)
{
	if (call->cancelling)
		return -EPIPE;
	struct rpc_conn *c = call->conn;
	int r = c ? rpc_conn_queue_response(c, call->stream_id, ERR_OK, NULL, out) : -EPIPE;
	call->status = ERR_OK;
	rpc_call_free(call);
	return r;
}

static int call_fail_v(struct rpc_call *call, int code, const char *fmt, va_list ap)
{
	if (call->cancelling)
		return -EPIPE;
	char msg[ERR_MSG_MAX];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	struct rpc_conn *c = call->conn;
	int r = c ? rpc_conn_queue_response(c, call->stream_id, code, msg, NULL) : -EPIPE;
	call->status = code;
	rpc_call_free(call);
	return r;
}

int rpc_call_fail(struct rpc_call *call, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = call_fail_v(call, code == ERR_OK ? ERR_UNKNOWN : code, fmt, ap);
	va_end(ap);
	return r;
}

int rpc_call_fail_err(struct rpc_call *call, const struct err *err, int r)
{
	int code = err && err->code != ERR_OK ? (int)err->code : err_code_from_errno(r);
	return rpc_call_fail(call, code == ERR_OK ? ERR_INTERNAL : code, "%s",
	                     err && err->msg[0] ? err->msg : strerror(-r));
}

void rpc_call_abort(struct rpc_call *call, int code, const char *fmt, ...)
{
	struct rpc_conn *c = call->conn;
	char msg[ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	call->cancelling = true;
	if (call->cancel)
		call->cancel(call, call->cancel_data);
	call->cancelling = false;
	rpc_conn_queue_response(c, call->stream_id, code, msg, NULL);
	call->status = code;
	rpc_call_free(call);
}

/* "250 ms", "1.5 s": a client's timeout, for messages. */
static void duration_str(uint64_t ns, char *buf, size_t size)
{
	if (ns < 1000000000ull)
		snprintf(buf, size, "%llu ms", (unsigned long long)(ns / 1000000));
	else
		snprintf(buf, size, "%.1f s", (double)ns / 1e9);
}

/* A call's deadline passed before it was answered: the client has
 * stopped waiting, so whatever it waits for is cancelled (a relayed
 * call's child is told through Route/Cancel). */
static void call_deadline_passed(struct rpc_timer *t, uint64_t now_ns)
{
	struct rpc_call *call = container_of(t, struct rpc_call, deadline);
	const char *target = rpc_call_metadata(call, RPC_TARGET_KEY);
	char took[32];
	(void)now_ns;
	duration_str((uint64_t)call->req.timeout_ns, took, sizeof(took));
	call->conn->server->stats.deadlines_passed++;
	log_debug("rpc: stream %u: %s/%s: deadline of %s passed", call->stream_id,
	          call->req.service, call->req.method, took);
	rpc_call_abort(call, ERR_DEADLINE_EXCEEDED,
	               "%s%.200s%s%s/%s: deadline exceeded: no answer within the caller's "
	               "timeout of %s",
	               target ? "target \"" : "", target ? target : "", target ? "\": " : "",
	               call->req.service, call->req.method, took);
}

static int queue_data(struct rpc_conn *c, uint32_t stream_id, uint8_t flags,
                      const ProtobufCMessage *msg)
{
	size_t plen = msg ? protobuf_c_message_get_packed_size(msg) : 0;
	uint8_t *p;
	if (plen > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	if (!msg)
		flags |= RPC_FLAG_NO_DATA;
	int r = rpc_conn_out_reserve(c, RPC_HEADER_SIZE + plen, &p);
	if (r < 0)
		return r;
	struct rpc_header h = {.length = (uint32_t)plen,
	                       .stream_id = stream_id,
	                       .type = RPC_TYPE_DATA,
	                       .flags = flags};
	rpc_header_encode(&h, p);
	if (plen)
		protobuf_c_message_pack(msg, p + RPC_HEADER_SIZE);
	buf_out_commit(&c->out, RPC_HEADER_SIZE + plen);
	rpc_conn_output_queued(c);
	return 0;
}

int rpc_call_relay(struct rpc_call *call, uint8_t type, uint8_t flags, const uint8_t *data,
                   size_t len)
{
	if (call->cancelling)
		return -EPIPE;
	struct rpc_conn *c = call->conn;
	bool last = type == RPC_TYPE_RESPONSE || (flags & RPC_FLAG_REMOTE_CLOSED);
	int r = -EPIPE;
	uint8_t *p;
	if (c && !c->broken) {
		r = rpc_conn_out_reserve(c, RPC_HEADER_SIZE + len, &p);
		if (r < 0) {
			/* Not reading what it asked for: cut it, as a direct
			 * answer would (the cancel reaches the child). */
			c->broken = "output queue over its cap";
			rpc_conn_output_queued(c);
			return r;
		}
		struct rpc_header h = {.length = (uint32_t)len,
		                       .stream_id = call->stream_id,
		                       .type = type,
		                       .flags = flags};
		rpc_header_encode(&h, p);
		if (len)
			memcpy(p + RPC_HEADER_SIZE, data, len);
		buf_out_commit(&c->out, RPC_HEADER_SIZE + len);
		rpc_conn_output_queued(c);
	}
	if (last) {
		if (type == RPC_TYPE_DATA)
			call->status = ERR_OK; /* a Response's: route.c set it */
		rpc_call_free(call);
	}
	return r;
}

int rpc_call_send(struct rpc_call *call, const ProtobufCMessage *msg)
{
	if (!(call->method->flags & RPC_METHOD_SERVER_STREAM) || !msg)
		return -EINVAL;
	if (!call->conn || call->conn->broken || call->cancelling)
		return -EPIPE;
	return queue_data(call->conn, call->stream_id, 0, msg);
}

int rpc_call_close(struct rpc_call *call, int code, const char *fmt, ...)
{
	if (code != ERR_OK) {
		va_list ap;
		va_start(ap, fmt);
		int r = call_fail_v(call, code, fmt, ap);
		va_end(ap);
		return r;
	}
	if (call->cancelling)
		return -EPIPE;
	struct rpc_conn *c = call->conn;
	int r = -EPIPE;
	if (c) {
		r = queue_data(c, call->stream_id, RPC_FLAG_REMOTE_CLOSED, NULL);
		if (r < 0) {
			c->broken =
			    "output queue over its cap"; /* a stream's end must not be lost */
			rpc_conn_output_queued(c);
		}
	}
	call->status = ERR_OK;
	rpc_call_free(call);
	return r;
}

void rpc_call_on_cancel(struct rpc_call *call, rpc_cancel_fn fn, void *data)
{
	call->cancel = fn;
	call->cancel_data = data;
}

const char *rpc_call_service(const struct rpc_call *call)
{
	return call->req.service;
}

const char *rpc_call_method(const struct rpc_call *call)
{
	return call->req.method;
}

const char *rpc_call_metadata(const struct rpc_call *call, const char *key)
{
	for (size_t i = 0; i < call->req.n_metadata; i++) {
		struct rpc_kv kv = rpc_request_metadata(&call->req, i);
		if (strcmp(kv.key, key) == 0)
			return kv.value;
	}
	return NULL;
}

size_t rpc_call_metadata_count(const struct rpc_call *call)
{
	return call->req.n_metadata;
}

struct rpc_kv rpc_call_metadata_at(const struct rpc_call *call, size_t i)
{
	return rpc_request_metadata(&call->req, i);
}

uint64_t rpc_call_deadline_ns(const struct rpc_call *call)
{
	return call->deadline_ns;
}

const struct rpc_request *rpc_call_request(const struct rpc_call *call)
{
	return &call->req;
}

const struct rpc_peer *rpc_call_peer(const struct rpc_call *call)
{
	static const struct rpc_peer gone = {.transport = RPC_TRANSPORT_OTHER};
	return call->conn ? &call->conn->peer : &gone;
}

/* ---- dispatch -------------------------------------------------------------------- */

int rpc_server_register(struct rpc_server *s, const struct rpc_method *methods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct rpc_method *m = &methods[i];
		if (!m->service || !m->method || !m->input || !m->handler)
			return -EINVAL;
		for (size_t j = 0; j < s->n_methods; j++)
			if (strcmp(s->methods[j]->service, m->service) == 0 &&
			    strcmp(s->methods[j]->method, m->method) == 0)
				return -EEXIST;
		if (s->n_methods == RPC_METHODS_MAX)
			return -E2BIG;
		s->methods[s->n_methods++] = m;
	}
	return 0;
}

static const struct rpc_method *method_find(const struct rpc_server *s, const char *service,
                                            const char *method, bool *ret_service_known)
{
	*ret_service_known = false;
	for (size_t i = 0; i < s->n_methods; i++)
		if (strcmp(s->methods[i]->service, service) == 0) {
			*ret_service_known = true;
			if (strcmp(s->methods[i]->method, method) == 0)
				return s->methods[i];
		}
	return NULL;
}

static struct rpc_call *call_find(struct rpc_conn *c, uint32_t stream_id)
{
	struct rpc_call *call;
	list_for_each(call, &c->calls, node)
		if (call->stream_id == stream_id)
			return call;
	return NULL;
}

/* A call in c's table, owning req. NULL when out of memory. */
static struct rpc_call *call_new(struct rpc_conn *c, const struct rpc_method *m,
                                 const struct rpc_request *req, uint32_t id, bool report)
{
	struct rpc_call *call = calloc(1, sizeof(*call));
	if (!call)
		return NULL;
	*call = (struct rpc_call){.conn = c,
	                          .method = m,
	                          .req = *req,
	                          .stream_id = id,
	                          .report = report,
	                          .status = ERR_CANCELLED};
	call->deadline.fn = call_deadline_passed;
	if (req->timeout_ns > 0) {
		call->deadline_ns = now_monotonic_ns() + (uint64_t)req->timeout_ns;
		if (rpc_server_timer_add(c->server, &call->deadline, call->deadline_ns) < 0) {
			free(call);
			return NULL;
		}
	}
	list_push(&c->calls, &call->node);
	c->inflight++;
	c->server->stats.inflight++;
	c->server->stats.calls++;
	return call;
}

/* kin.v1.Route/Cancel: a parent kin relaying calls over this connection
 * says the caller of one of them went away. The call is cancelled as if
 * its own connection had closed, and its stream ended CANCELLED. */
int rpc_server_route_cancel(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__CancelRequest *m = (const Kin__V1__CancelRequest *)in;
	struct rpc_conn *c = call->conn;
	(void)userdata;
	struct rpc_call *victim = call_find(c, m->stream_id);
	if (victim && victim != call)
		rpc_call_abort(victim, ERR_CANCELLED, "stream %u: cancelled by the caller",
		               victim->stream_id);
	Kin__V1__CancelResponse out = KIN__V1__CANCEL_RESPONSE__INIT;
	out.found = victim && victim != call;
	return rpc_call_reply(call, &out.base);
}

/* Whether a new request on c may go on: its peer is allowed, its stream id
 * is new and the connection has room for one more call. Answers it if not. */
static bool conn_admit(struct rpc_conn *c, uint32_t id)
{
	struct rpc_server *s = c->server;
	if (!c->peer.allowed) {
		if (c->peer.transport == RPC_TRANSPORT_VSOCK)
			rpc_conn_queue_status(
			    c, id, ERR_PERMISSION_DENIED,
			    "vsock peer cid %u is not allowed to call kin (the host, cid 2, "
			    "and this machine, cid 1, are)",
			    c->peer.cid);
		else
			rpc_conn_queue_status(
			    c, id, ERR_PERMISSION_DENIED,
			    "uid %u is not allowed to call kin (root and kin's own uid are; a "
			    "policy names others: --policy, kin.rpc.uids=/kin.rpc.gids=)",
			    (unsigned)c->peer.uid);
		return false;
	}
	if (id <= c->last_stream) {
		rpc_conn_queue_status(c, id, ERR_INVALID_ARGUMENT,
		                      "stream %u: stream ids must increase (last was %u)", id,
		                      c->last_stream);
		return false;
	}
	c->last_stream = id;
	if (c->inflight >= s->cfg.max_inflight) {
		rpc_conn_queue_status(
		    c, id, ERR_RESOURCE_EXHAUSTED,
		    "stream %u: too many calls in flight on this connection (at most %u)", id,
		    s->cfg.max_inflight);
		return false;
	}
	return true;
}

static const char *request_target(const struct rpc_request *req)
{
	for (size_t i = 0; i < req->n_metadata; i++) {
		struct rpc_kv kv = rpc_request_metadata(req, i);
		if (strcmp(kv.key, RPC_TARGET_KEY) == 0)
			return kv.value;
	}
	return NULL;
}

static void message_freep(ProtobufCMessage **m)
{
	if (*m)
		protobuf_c_message_free_unpacked(*m, NULL);
}

/* A call for a child kin: forwarded as it is, whatever the method. The
 * call takes req. */
static void conn_forward(struct rpc_conn *c, const struct rpc_header *h, struct rpc_request *req,
                         const char *target, bool report)
{
	struct rpc_server *s = c->server;
	uint32_t id = h->stream_id;
	if (h->flags & RPC_FLAG_REMOTE_OPEN) {
		rpc_conn_queue_status(c, id, ERR_INVALID_ARGUMENT,
		                      "%s/%s: client streams are not relayed to a target",
		                      req->service, req->method);
		return;
	}
	struct rpc_call *call = call_new(c, &rpc_route_method, req, id, report);
	if (!call) {
		rpc_conn_queue_status(c, id, ERR_RESOURCE_EXHAUSTED, "%s/%s: out of memory",
		                      req->service, req->method);
		return;
	}
	*req = (struct rpc_request){0}; /* the call's now */
	s->dispatching = call;
	rpc_route_forward(s, call, target, h->flags);
	if (s->dispatching == call)
		s->dispatching = NULL;
}

/* A call of a method registered here: its input unpacked, its handler run.
 * The call takes req. */
static void conn_dispatch(struct rpc_conn *c, const struct rpc_header *h, struct rpc_request *req,
                          bool report)
{
	struct rpc_server *s = c->server;
	uint32_t id = h->stream_id;
	bool service_known;
	const struct rpc_method *m = method_find(s, req->service, req->method, &service_known);
	if (!m) {
		rpc_conn_queue_status(
		    c, id, ERR_UNIMPLEMENTED, "%s %s: %s", service_known ? "method" : "service",
		    service_known ? req->method : req->service,
		    service_known ? "no such method in this service" : "no such service");
		return;
	}
	if (h->flags & RPC_FLAG_REMOTE_OPEN) {
		rpc_conn_queue_status(c, id, ERR_INVALID_ARGUMENT,
		                      "%s/%s takes no stream of requests (remote-open flag set)",
		                      m->service, m->method);
		return;
	}
	_cleanup_(message_freep) ProtobufCMessage *in =
	    protobuf_c_message_unpack(m->input, NULL, req->payload_len, req->payload);
	if (!in) {
		rpc_conn_queue_status(c, id, ERR_INVALID_ARGUMENT,
		                      "%s/%s: payload is not a valid %s", m->service, m->method,
		                      m->input->name);
		return;
	}
	struct rpc_call *call = call_new(c, m, req, id, report);
	if (!call) {
		rpc_conn_queue_status(c, id, ERR_RESOURCE_EXHAUSTED, "%s/%s: out of memory",
		                      m->service, m->method);
		return;
	}
	*req = (struct rpc_request){0}; /* the call's now */
	s->dispatching = call;
	int r = m->handler(call, in, m->userdata);
	if (s->dispatching == call) {
		s->dispatching = NULL;
		if (r < 0)
			rpc_call_fail(call, err_code_from_errno(r), "%s/%s: %s", m->service,
			              m->method, strerror(-r));
	}
}

/* The guard's word on a request: < 0 refused (and answered), 1 go on
 * and report its end, 0 go on. */
static int guard_admit(struct rpc_conn *c, uint32_t id, const struct rpc_request *req,
                       const char *target)
{
	struct rpc_server *s = c->server;
	if (!s->guard.admit || c->peer.relay_hop)
		return 0;
	struct rpc_call_info info = {.peer = &c->peer,
	                             .service = req->service,
	                             .method = req->method,
	                             .target = target,
	                             .payload = req->payload,
	                             .payload_len = req->payload_len};
	struct err err = {0};
	int r = s->guard.admit(&info, &err, s->guard.data);
	if (r < 0)
		rpc_conn_queue_status(c, id, err.code ? err.code : ERR_PERMISSION_DENIED, "%s",
		                      err.msg[0] ? err.msg : "not allowed");
	return r < 0 ? -1 : r > 0;
}

void rpc_conn_handle_request(struct rpc_conn *c, const struct rpc_header *h, const uint8_t *data)
{
	if (!conn_admit(c, h->stream_id))
		return;
	_cleanup_(rpc_request_done) struct rpc_request req = {0};
	if (rpc_request_decode(data, h->length, &req) < 0) {
		rpc_conn_queue_status(
		    c, h->stream_id, ERR_INVALID_ARGUMENT,
		    "stream %u: malformed request (not a ttrpc Request, or names, "
		    "metadata or timeout out of range)",
		    h->stream_id);
		return;
	}
	const char *target = request_target(&req);
	if (target && !*target)
		target = NULL;
	int report = guard_admit(c, h->stream_id, &req, target);
	if (report < 0)
		return;
	if (target)
		conn_forward(c, h, &req, target, report);
	else
		conn_dispatch(c, h, &req, report);
}

void rpc_conn_handle_data(struct rpc_conn *c, const struct rpc_header *h)
{
	struct rpc_call *call = call_find(c, h->stream_id);
	if (!call) {
		rpc_conn_queue_status(c, h->stream_id, ERR_INVALID_ARGUMENT,
		                      "stream %u is not active", h->stream_id);
		return;
	}
	/* A server stream's client may only confirm it sends nothing more. */
	if (h->flags == (RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_NO_DATA))
		return;
	rpc_call_fail(call, ERR_INVALID_ARGUMENT, "%s/%s takes no stream data from the client",
	              call->req.service, call->req.method);
}
