/* server: ttrpc served from PID 1's epoll loop. One ev_source per listener
 * and per connection, level-triggered, one read per wakeup so a flooding
 * client cannot starve the others. Everything is bounded: connections,
 * calls in flight per connection, the input buffer (one frame of at most
 * 4 MiB, sized from a checked header), the output queue. A connection
 * whose output passes RPC_OUT_HIGH stops being read until it drains; one
 * that passes out_max is cut. Nothing here frees a connection except its
 * own event handler and rpc_server_free, so a handler answering calls of
 * other connections never re-enters anything. */
#include "rpc/internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define RPC_METHODS_MAX 256
#define RPC_IN_MIN 4096		  /* first input buffer; grows to a frame's size */
#define RPC_IN_KEEP (64 * 1024)	  /* larger buffers are freed once empty */
#define RPC_OUT_HIGH (256 * 1024) /* stop reading requests past this */
#define RPC_ACCEPT_BATCH 64
/* All connections together: big frames being received, answers queued.
 * Per-connection caps alone would let 4096 clients claim 4 MiB each. */
#define RPC_IN_BUDGET (64u << 20)
#define RPC_OUT_BUDGET (64u << 20)

struct rpc_listener {
	struct ev_source src;
	struct rpc_server *server;
	enum rpc_transport transport;
	char path[108]; /* unix: unlinked at free if it is still ours */
	dev_t dev;
	ino_t ino;
	struct rpc_listener *next;
};

struct rpc_conn {
	struct ev_source src;
	struct rpc_server *server;
	struct rpc_peer peer;
	uint8_t *in;
	size_t in_len, in_cap;
	uint64_t skip; /* bytes of a refused frame still to discard */
	uint8_t *out;
	size_t out_off, out_len, out_cap;
	uint32_t last_stream;
	uint32_t events; /* the epoll mask set now */
	unsigned inflight;
	bool in_event;	  /* inside its own handler: flush there, not via EPOLLOUT */
	bool not_socket;  /* a character device (virtio-serial port): read/write */
	rpc_conn_closed_fn on_close; /* told when the connection ends */
	void *on_close_data;
	bool read_closed; /* the client shut its side: answer, then close */
	const char *broken; /* why it is closed at the next chance, or NULL */
	struct rpc_call *calls;
	struct rpc_conn *prev, *next;
};

struct rpc_call {
	struct rpc_conn *conn;
	struct rpc_call *prev, *next;
	const struct rpc_method *method;
	struct rpc_request req;
	uint32_t stream_id;
	uint64_t deadline_ns;
	rpc_cancel_fn cancel;
	void *cancel_data;
	bool cancelling; /* inside its cancel callback: answers are no-ops */
};

struct rpc_server {
	struct ev_loop *loop;
	struct rpc_server_config cfg;
	const struct rpc_method *methods[RPC_METHODS_MAX];
	size_t n_methods;
	struct rpc_listener *listeners;
	struct rpc_conn *conns;
	struct rpc_call *dispatching; /* the call whose handler runs now */
	struct rpc_server_stats stats;
	size_t in_total, out_total; /* bytes of every connection's buffers */
	int reserve_fd; /* given up to accept-and-close when out of fds */
	bool freeing;	/* rpc_server_free: no on_close callbacks */
	struct rpc_routes *routes; /* children reached through kin-target (route.c) */
};

struct ev_loop *rpc_server_loop(const struct rpc_server *s)
{
	return s->loop;
}

struct rpc_routes **rpc_server_routes(struct rpc_server *s)
{
	return &s->routes;
}

void rpc_server_config_defaults(struct rpc_server_config *cfg)
{
	*cfg = (struct rpc_server_config){
		.max_conns = RPC_MAX_CONNS_DEFAULT,
		.max_inflight = RPC_MAX_INFLIGHT_DEFAULT,
		.out_max = RPC_OUT_MAX_DEFAULT,
	};
}

int rpc_parse_id_list(const char *s, uint32_t *ids, size_t max, size_t *ret_n)
{
	size_t n = 0;
	char word[16];

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s;;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(word) || n == max)
			return -EINVAL;
		memcpy(word, p, len);
		word[len] = '\0';
		if (str_to_u32(word, &ids[n]) < 0 || ids[n] == UINT32_MAX)
			return -EINVAL;
		n++;
		p += len;
		if (!*p)
			break;
		p++;
	}
	*ret_n = n;
	return 0;
}

/* ---- output queue ------------------------------------------------------------ */

static size_t out_pending(const struct rpc_conn *c)
{
	return c->out_len - c->out_off;
}

/* Room for n more bytes at out + out_len; -ENOBUFS past the cap. */
static int out_reserve(struct rpc_conn *c, size_t n, uint8_t **ret)
{
	if (out_pending(c) + n > c->server->cfg.out_max)
		return -ENOBUFS;
	if (c->out_len + n > c->out_cap && c->out_off) {
		memmove(c->out, c->out + c->out_off, out_pending(c));
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + n)
			cap *= 2;
		if (cap > RPC_IN_KEEP && c->server->out_total - c->out_cap + cap > RPC_OUT_BUDGET)
			return -ENOBUFS;
		uint8_t *p = realloc(c->out, cap);
		if (!p)
			return -ENOMEM;
		c->server->out_total += cap - c->out_cap;
		c->out = p;
		c->out_cap = cap;
	}
	*ret = c->out + c->out_len;
	return 0;
}

static void conn_update_events(struct rpc_conn *c)
{
	uint32_t want = 0;
	if (!c->read_closed && !c->broken && out_pending(c) < RPC_OUT_HIGH)
		want |= EPOLLIN;
	if (out_pending(c) || c->broken)
		want |= EPOLLOUT;
	if (want != c->events && ev_mod(c->server->loop, &c->src, want) == 0)
		c->events = want;
}

/* Called after queueing output: inside the connection's handler the flush
 * happens on the way out; from elsewhere, EPOLLOUT brings us back. */
static void conn_output_queued(struct rpc_conn *c)
{
	if (c->in_event)
		return;
	/* To be cut: shutting the socket down makes it report a hang-up, so
	 * its handler runs even if the client reads nothing. */
	if (c->broken)
		shutdown(c->src.fd, SHUT_RDWR);
	conn_update_events(c);
}

static int queue_response(struct rpc_conn *c, uint32_t stream_id, int code, const char *msg,
			  const ProtobufCMessage *payload)
{
	size_t msg_len = msg ? strlen(msg) : 0;
	size_t plen = payload ? protobuf_c_message_get_packed_size(payload) : 0;
	uint8_t *p;
	if (plen > RPC_MESSAGE_MAX) {
		/* Our own answer is too big: say so rather than send it. */
		msg = "response exceeds the 4 MiB message limit";
		msg_len = strlen(msg);
		code = RPC_RESOURCE_EXHAUSTED;
		payload = NULL;
		plen = 0;
	}
	size_t n = rpc_response_frame_size(code, msg_len, plen);
	int r = out_reserve(c, n, &p);
	if (r < 0) {
		/* Not reading its answers while asking more: cut it. */
		c->broken = "output queue over its cap";
		conn_output_queued(c);
		return r;
	}
	rpc_response_frame_write(p, stream_id, code, msg, msg_len, payload, plen);
	c->out_len += n;
	conn_output_queued(c);
	return 0;
}

static void queue_status(struct rpc_conn *c, uint32_t stream_id, int code, const char *fmt, ...)
	_printf_(4, 5);
static void queue_status(struct rpc_conn *c, uint32_t stream_id, int code, const char *fmt, ...)
{
	char msg[RPC_STATUS_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	queue_response(c, stream_id, code, msg, NULL);
}

/* ---- calls --------------------------------------------------------------------- */

static void call_free(struct rpc_call *call)
{
	struct rpc_conn *c = call->conn;
	if (c) {
		if (call->prev)
			call->prev->next = call->next;
		else
			c->calls = call->next;
		if (call->next)
			call->next->prev = call->prev;
		c->inflight--;
		c->server->stats.inflight--;
		if (c->server->dispatching == call)
			c->server->dispatching = NULL;
	}
	rpc_request_done(&call->req);
	free(call);
}

int rpc_call_reply(struct rpc_call *call, const ProtobufCMessage *out)
{
	if (call->cancelling)
		return -EPIPE;
	struct rpc_conn *c = call->conn;
	int r = c ? queue_response(c, call->stream_id, RPC_OK, NULL, out) : -EPIPE;
	call_free(call);
	return r;
}

static int call_fail_v(struct rpc_call *call, int code, const char *fmt, va_list ap)
{
	if (call->cancelling)
		return -EPIPE;
	char msg[RPC_STATUS_MESSAGE_MAX];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	struct rpc_conn *c = call->conn;
	int r = c ? queue_response(c, call->stream_id, code, msg, NULL) : -EPIPE;
	call_free(call);
	return r;
}

int rpc_call_fail(struct rpc_call *call, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = call_fail_v(call, code == RPC_OK ? RPC_UNKNOWN : code, fmt, ap);
	va_end(ap);
	return r;
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
	int r = out_reserve(c, RPC_HEADER_SIZE + plen, &p);
	if (r < 0)
		return r;
	struct rpc_header h = {.length = (uint32_t)plen,
			       .stream_id = stream_id,
			       .type = RPC_TYPE_DATA,
			       .flags = flags};
	rpc_header_encode(&h, p);
	if (plen)
		protobuf_c_message_pack(msg, p + RPC_HEADER_SIZE);
	c->out_len += RPC_HEADER_SIZE + plen;
	conn_output_queued(c);
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
		r = out_reserve(c, RPC_HEADER_SIZE + len, &p);
		if (r < 0) {
			/* Not reading what it asked for: cut it, as a direct
			 * answer would (the cancel reaches the child). */
			c->broken = "output queue over its cap";
			conn_output_queued(c);
			return r;
		}
		struct rpc_header h = {.length = (uint32_t)len,
				       .stream_id = call->stream_id,
				       .type = type,
				       .flags = flags};
		rpc_header_encode(&h, p);
		if (len)
			memcpy(p + RPC_HEADER_SIZE, data, len);
		c->out_len += RPC_HEADER_SIZE + len;
		conn_output_queued(c);
	}
	if (last)
		call_free(call);
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
	if (code != RPC_OK) {
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
			c->broken = "output queue over its cap"; /* a stream's end must not be lost */
			conn_output_queued(c);
		}
	}
	call_free(call);
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
	for (struct rpc_call *call = c->calls; call; call = call->next)
		if (call->stream_id == stream_id)
			return call;
	return NULL;
}

/* A call in c's table, owning req. NULL when out of memory. */
static struct rpc_call *call_new(struct rpc_conn *c, const struct rpc_method *m,
				 const struct rpc_request *req, uint32_t id)
{
	struct rpc_call *call = calloc(1, sizeof(*call));
	if (!call)
		return NULL;
	*call = (struct rpc_call){.conn = c, .method = m, .req = *req, .stream_id = id};
	if (req->timeout_ns > 0)
		call->deadline_ns = now_monotonic_ns() + (uint64_t)req->timeout_ns;
	call->next = c->calls;
	if (c->calls)
		c->calls->prev = call;
	c->calls = call;
	c->inflight++;
	c->server->stats.inflight++;
	c->server->stats.calls++;
	return call;
}

/* kin.v1.Route/Cancel: a parent kin relaying calls over this connection
 * says the caller of one of them went away. The call is cancelled as if
 * its own connection had closed, and its stream ended CANCELLED. */
static int route_cancel(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__CancelRequest *m = (const Kin__V1__CancelRequest *)in;
	struct rpc_conn *c = call->conn;
	(void)userdata;
	struct rpc_call *victim = call_find(c, m->stream_id);
	if (victim && victim != call) {
		victim->cancelling = true;
		if (victim->cancel)
			victim->cancel(victim, victim->cancel_data);
		victim->cancelling = false;
		queue_status(c, victim->stream_id, RPC_CANCELLED, "stream %u: cancelled by the caller",
			     victim->stream_id);
		call_free(victim);
	}
	Kin__V1__CancelResponse out = KIN__V1__CANCEL_RESPONSE__INIT;
	out.found = victim && victim != call;
	return rpc_call_reply(call, &out.base);
}

static void handle_request(struct rpc_conn *c, const struct rpc_header *h, const uint8_t *data)
{
	struct rpc_server *s = c->server;
	uint32_t id = h->stream_id;

	if (!c->peer.allowed) {
		if (c->peer.transport == RPC_TRANSPORT_VSOCK)
			queue_status(c, id, RPC_PERMISSION_DENIED,
				     "vsock peer cid %u is not allowed to call kin (the host, cid 2, "
				     "and this machine, cid 1, are)",
				     c->peer.cid);
		else
			queue_status(c, id, RPC_PERMISSION_DENIED,
				     "uid %u is not allowed to call kin (root, kin's own uid and "
				     "those in kin.rpc.uids=/kin.rpc.gids= are)",
				     (unsigned)c->peer.uid);
		return;
	}
	if (id <= c->last_stream) {
		queue_status(c, id, RPC_INVALID_ARGUMENT,
			     "stream %u: stream ids must increase (last was %u)", id,
			     c->last_stream);
		return;
	}
	c->last_stream = id;
	if (c->inflight >= s->cfg.max_inflight) {
		queue_status(c, id, RPC_RESOURCE_EXHAUSTED,
			     "stream %u: too many calls in flight on this connection (at most %u)",
			     id, s->cfg.max_inflight);
		return;
	}
	struct rpc_request req;
	if (rpc_request_decode(data, h->length, &req) < 0) {
		queue_status(c, id, RPC_INVALID_ARGUMENT,
			     "stream %u: malformed request (not a ttrpc Request, or names, "
			     "metadata or timeout out of range)",
			     id);
		return;
	}
	const char *target = NULL;
	for (size_t i = 0; i < req.n_metadata && !target; i++) {
		struct rpc_kv kv = rpc_request_metadata(&req, i);
		if (strcmp(kv.key, RPC_TARGET_KEY) == 0)
			target = kv.value;
	}
	if (target && *target) {
		/* For a child kin: forwarded as it is, whatever the method. */
		if (h->flags & RPC_FLAG_REMOTE_OPEN) {
			queue_status(c, id, RPC_INVALID_ARGUMENT,
				     "%s/%s: client streams are not relayed to a target",
				     req.service, req.method);
			rpc_request_done(&req);
			return;
		}
		struct rpc_call *call = call_new(c, &rpc_route_method, &req, id);
		if (!call) {
			rpc_request_done(&req);
			queue_status(c, id, RPC_RESOURCE_EXHAUSTED, "%s/%s: out of memory",
				     req.service, req.method);
			return;
		}
		s->dispatching = call;
		rpc_route_forward(s, call, target, h->flags);
		if (s->dispatching == call)
			s->dispatching = NULL;
		return;
	}
	bool service_known;
	const struct rpc_method *m = method_find(s, req.service, req.method, &service_known);
	if (!m) {
		queue_status(c, id, RPC_UNIMPLEMENTED, "%s %s: %s", service_known ? "method" : "service",
			     service_known ? req.method : req.service,
			     service_known ? "no such method in this service" : "no such service");
		rpc_request_done(&req);
		return;
	}
	if (h->flags & RPC_FLAG_REMOTE_OPEN) {
		queue_status(c, id, RPC_INVALID_ARGUMENT,
			     "%s/%s takes no stream of requests (remote-open flag set)", m->service,
			     m->method);
		rpc_request_done(&req);
		return;
	}
	ProtobufCMessage *in = protobuf_c_message_unpack(m->input, NULL, req.payload_len,
							 req.payload);
	if (!in) {
		queue_status(c, id, RPC_INVALID_ARGUMENT, "%s/%s: payload is not a valid %s",
			     m->service, m->method, m->input->name);
		rpc_request_done(&req);
		return;
	}
	struct rpc_call *call = call_new(c, m, &req, id);
	if (!call) {
		protobuf_c_message_free_unpacked(in, NULL);
		rpc_request_done(&req);
		queue_status(c, id, RPC_RESOURCE_EXHAUSTED, "%s/%s: out of memory", m->service,
			     m->method);
		return;
	}

	s->dispatching = call;
	int r = m->handler(call, in, m->userdata);
	protobuf_c_message_free_unpacked(in, NULL);
	if (s->dispatching == call) {
		s->dispatching = NULL;
		if (r < 0)
			rpc_call_fail(call, rpc_code_from_errno(r), "%s/%s: %s", m->service,
				      m->method, strerror(-r));
	}
}

static void handle_data(struct rpc_conn *c, const struct rpc_header *h)
{
	struct rpc_call *call = call_find(c, h->stream_id);
	if (!call) {
		queue_status(c, h->stream_id, RPC_INVALID_ARGUMENT, "stream %u is not active",
			     h->stream_id);
		return;
	}
	/* A server stream's client may only confirm it sends nothing more. */
	if (h->flags == (RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_NO_DATA))
		return;
	rpc_call_fail(call, RPC_INVALID_ARGUMENT, "%s/%s takes no stream data from the client",
		      call->req.service, call->req.method);
}

/* ---- connections ------------------------------------------------------------------- */

static void conn_close(struct rpc_conn *c)
{
	struct rpc_server *s = c->server;
	/* Cancel what is still running; a cancel callback may answer other
	 * connections' calls, never this one's (conn is already NULL). */
	while (c->calls) {
		struct rpc_call *call = c->calls;
		c->calls = call->next;
		call->conn = NULL;
		c->inflight--;
		s->stats.inflight--;
		call->cancelling = true; /* the callback may not finish it itself */
		if (call->cancel)
			call->cancel(call, call->cancel_data);
		call_free(call);
	}
	ev_del(s->loop, &c->src);
	close(c->src.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->stats.conns--;
	s->in_total -= c->in_cap;
	s->out_total -= c->out_cap;
	free(c->in);
	free(c->out);
	rpc_conn_closed_fn fn = s->freeing ? NULL : c->on_close;
	void *fn_data = c->on_close_data;
	free(c);
	if (fn)
		fn(fn_data);
}

static int conn_flush(struct rpc_conn *c)
{
	while (out_pending(c)) {
		ssize_t n = c->not_socket
				    ? write(c->src.fd, c->out + c->out_off, out_pending(c))
				    : send(c->src.fd, c->out + c->out_off, out_pending(c),
					   MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	if (c->out_cap > RPC_IN_KEEP) {
		c->server->out_total -= c->out_cap;
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return 0;
}

/* Handles every complete frame in the input buffer while the output has
 * room. Returns -EPROTO when the stream cannot be trusted any more. */
static int conn_process(struct rpc_conn *c)
{
	size_t pos = 0;
	int r = 0;

	while (!c->broken && out_pending(c) < RPC_OUT_HIGH) {
		if (c->skip) {
			size_t n = c->in_len - pos < c->skip ? c->in_len - pos : (size_t)c->skip;
			pos += n;
			c->skip -= n;
			if (c->skip)
				break;
		}
		if (c->in_len - pos < RPC_HEADER_SIZE)
			break;
		struct rpc_header h;
		rpc_header_decode(c->in + pos, &h);
		r = rpc_header_check(&h, true);
		if (r == -EPROTO) {
			c->server->stats.proto_errors++;
			break;
		}
		if (r < 0) {
			/* Answer on the stream, drop the data unread, as ttrpc does. */
			if (r == -EMSGSIZE)
				queue_status(c, h.stream_id, RPC_RESOURCE_EXHAUSTED,
					     "message of %u bytes exceeds the maximum of %u bytes",
					     h.length, RPC_MESSAGE_MAX);
			else if (r == -EBADR)
				queue_status(c, h.stream_id, RPC_INVALID_ARGUMENT,
					     "stream id %u: client streams must have odd ids",
					     h.stream_id);
			else
				queue_status(c, h.stream_id, RPC_INVALID_ARGUMENT,
					     "stream %u: flags 0x%x are not valid for message type %u",
					     h.stream_id, h.flags, h.type);
			pos += RPC_HEADER_SIZE;
			c->skip = h.length;
			r = 0;
			continue;
		}
		if (c->in_len - pos < RPC_HEADER_SIZE + (size_t)h.length) {
			/* Incomplete: make room for exactly this frame (checked above). */
			size_t need = RPC_HEADER_SIZE + h.length;
			if (need > c->in_cap - pos) {
				memmove(c->in, c->in + pos, c->in_len - pos);
				c->in_len -= pos;
				pos = 0;
				if (need > c->in_cap && need > RPC_IN_KEEP &&
				    c->server->in_total - c->in_cap + need > RPC_IN_BUDGET) {
					/* Too many big frames arriving at once: refuse this
					 * one like an oversize one, unread. */
					queue_status(c, h.stream_id, RPC_RESOURCE_EXHAUSTED,
						     "message of %u bytes refused: kin is receiving "
						     "too many large messages at once; retry",
						     h.length);
					pos += RPC_HEADER_SIZE;
					c->skip = h.length;
					continue;
				}
				if (need > c->in_cap) {
					uint8_t *p = realloc(c->in, need);
					if (!p) {
						r = -ENOMEM;
						break;
					}
					c->server->in_total += need - c->in_cap;
					c->in = p;
					c->in_cap = need;
				}
			}
			break;
		}
		const uint8_t *data = c->in + pos + RPC_HEADER_SIZE;
		pos += RPC_HEADER_SIZE + h.length;
		if (h.type == RPC_TYPE_REQUEST)
			handle_request(c, &h, data);
		else
			handle_data(c, &h);
	}
	if (pos) {
		memmove(c->in, c->in + pos, c->in_len - pos);
		c->in_len -= pos;
	}
	if (c->in_len == 0 && c->in_cap > RPC_IN_KEEP) {
		c->server->in_total -= c->in_cap;
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	return r;
}

static bool in_has_frame(const struct rpc_conn *c)
{
	struct rpc_header h;
	if (c->skip || c->in_len < RPC_HEADER_SIZE)
		return false;
	rpc_header_decode(c->in, &h);
	return c->in_len - RPC_HEADER_SIZE >= h.length;
}

/* One read(2) per wakeup. Returns 0, or -errno to close. */
static int conn_read(struct rpc_conn *c)
{
	if (!c->in) {
		c->in = malloc(RPC_IN_MIN);
		if (!c->in)
			return -ENOMEM;
		c->in_cap = RPC_IN_MIN;
		c->server->in_total += RPC_IN_MIN;
	}
	if (c->in_len == c->in_cap)
		return 0; /* a full buffer holds a frame waiting for output room */
	ssize_t n = c->not_socket ? read(c->src.fd, c->in + c->in_len, c->in_cap - c->in_len)
				  : recv(c->src.fd, c->in + c->in_len, c->in_cap - c->in_len,
					 MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0) {
		c->read_closed = true;
		return 0;
	}
	c->in_len += (size_t)n;
	return 0;
}

static void conn_on_event(struct ev_source *src, uint32_t events)
{
	struct rpc_conn *c = src->data;
	int r = 0;

	c->in_event = true;
	/* A hang-up is the peer gone both ways: nobody to answer. */
	if (events & (EPOLLERR | EPOLLHUP))
		c->broken = events & EPOLLERR ? "socket error" : "hung up";
	if (!c->broken && (events & EPOLLIN) && !c->read_closed)
		r = conn_read(c);
	/* Frames held back by a full output go as soon as it drains. */
	do {
		if (r == 0 && !c->broken)
			r = conn_process(c);
		if (r == 0 && !c->broken)
			r = conn_flush(c);
	} while (r == 0 && !c->broken && !out_pending(c) && in_has_frame(c));
	c->in_event = false;
	if (r < 0 || c->broken) {
		log_debug("rpc: closing connection (uid %u): %s", (unsigned)c->peer.uid,
			  r == -EPROTO ? "malformed frame" : r < 0 ? strerror(-r) : c->broken);
		conn_close(c);
		return;
	}
	/* Half-closed and nothing left to answer: done. Leftover bytes there
	 * are a truncated frame that can never complete. */
	if (c->read_closed && !c->inflight && !out_pending(c)) {
		conn_close(c);
		return;
	}
	conn_update_events(c);
}

int rpc_server_add_conn(struct rpc_server *s, int fd, const struct rpc_peer *peer)
{
	return rpc_server_add_conn_notify(s, fd, peer, NULL, NULL);
}

int rpc_server_add_conn_notify(struct rpc_server *s, int fd, const struct rpc_peer *peer,
			       rpc_conn_closed_fn on_close, void *data)
{
	if (s->stats.conns >= s->cfg.max_conns) {
		s->stats.refused++;
		close(fd);
		return -EMFILE;
	}
	struct rpc_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	struct stat st;
	*c = (struct rpc_conn){.src = {.fd = fd, .fn = conn_on_event, .data = c},
			       .server = s,
			       .peer = *peer,
			       .events = EPOLLIN,
			       .not_socket = fstat(fd, &st) == 0 && !S_ISSOCK(st.st_mode),
			       .on_close = on_close,
			       .on_close_data = data};
	int r = fd_set_nonblock(fd, true);
	if (r == 0)
		r = ev_add(s->loop, &c->src, c->events);
	if (r < 0) {
		close(fd);
		free(c);
		return r;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->stats.conns++;
	s->stats.accepted++;
	return 0;
}

/* ---- listeners ------------------------------------------------------------------------- */

static void listener_on_event(struct ev_source *src, uint32_t events)
{
	struct rpc_listener *l = src->data;
	struct rpc_server *s = l->server;
	(void)events;

	for (int i = 0; i < RPC_ACCEPT_BATCH; i++) {
		int fd = accept4(src->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of fds: accept with the reserve and close at once,
				 * or the listener stays readable and spins the loop. */
				if (s->reserve_fd >= 0) {
					close(s->reserve_fd);
					fd = accept4(src->fd, NULL, NULL, SOCK_CLOEXEC);
					if (fd >= 0)
						close(fd);
					s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				}
				s->stats.refused++;
				log_warn("rpc: out of file descriptors; refusing a connection");
			}
			return;
		}
		struct rpc_peer peer;
		if (rpc_peer_identify(fd, l->transport, &peer) < 0) {
			close(fd);
			continue;
		}
		if (peer.transport == RPC_TRANSPORT_UNIX && !peer.allowed) {
			bool ok = peer.uid == 0 || peer.uid == geteuid();
			for (size_t k = 0; !ok && k < s->cfg.allow_n_uids; k++)
				ok = peer.uid == s->cfg.allow_uids[k];
			for (size_t k = 0; !ok && k < s->cfg.allow_n_gids; k++)
				ok = peer.gid == s->cfg.allow_gids[k];
			if (!ok && s->cfg.allow_n_gids) {
				gid_t groups[256];
				socklen_t len = sizeof(groups);
				if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
					for (size_t g = 0; !ok && g < len / sizeof(gid_t); g++)
						for (size_t k = 0; !ok && k < s->cfg.allow_n_gids; k++)
							ok = groups[g] == s->cfg.allow_gids[k];
			}
			peer.allowed = ok;
		}
		if (rpc_server_add_conn(s, fd, &peer) == -EMFILE)
			log_debug("rpc: %u connections already; refused one", s->cfg.max_conns);
	}
}

static int listener_add(struct rpc_server *s, int fd, enum rpc_transport t, const char *path)
{
	struct rpc_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	*l = (struct rpc_listener){
		.src = {.fd = fd, .fn = listener_on_event, .data = l}, .server = s, .transport = t};
	if (path) {
		struct stat st;
		str_copy(l->path, sizeof(l->path), path);
		if (stat(path, &st) == 0) {
			l->dev = st.st_dev;
			l->ino = st.st_ino;
		}
	}
	int r = ev_add(s->loop, &l->src, EPOLLIN);
	if (r < 0) {
		if (path)
			unlink(path);
		close(fd);
		free(l);
		return r;
	}
	l->next = s->listeners;
	s->listeners = l;
	return 0;
}

int rpc_server_listen_unix(struct rpc_server *s, const char *path)
{
	int fd;
	bool open_to_others = s->cfg.allow_n_uids || s->cfg.allow_n_gids;
	int r = rpc_listen_unix(path, open_to_others ? 0666 : 0600, &fd);
	if (r < 0)
		return r;
	return listener_add(s, fd, RPC_TRANSPORT_UNIX, path);
}

int rpc_server_listen_vsock(struct rpc_server *s, uint32_t port)
{
	int fd;
	int r = rpc_listen_vsock(port, &fd);
	if (r < 0)
		return r;
	return listener_add(s, fd, RPC_TRANSPORT_VSOCK, NULL);
}

int rpc_server_new(struct ev_loop *loop, const struct rpc_server_config *cfg,
		   struct rpc_server **ret)
{
	struct rpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	if (cfg)
		s->cfg = *cfg;
	else
		rpc_server_config_defaults(&s->cfg);
	if (!s->cfg.max_conns)
		s->cfg.max_conns = RPC_MAX_CONNS_DEFAULT;
	if (!s->cfg.max_inflight)
		s->cfg.max_inflight = RPC_MAX_INFLIGHT_DEFAULT;
	/* Room for at least one largest answer, or no big answer could go. */
	if (s->cfg.out_max < RPC_MESSAGE_MAX + 64 * 1024)
		s->cfg.out_max = RPC_MESSAGE_MAX + 64 * 1024;
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	static const struct rpc_method builtin[] = {
		{"kin.v1.Route", "Cancel", &kin__v1__cancel_request__descriptor, route_cancel, 0,
		 NULL},
	};
	int r = rpc_server_register(s, builtin, ARRAY_SIZE(builtin));
	if (r < 0) {
		rpc_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void rpc_server_free(struct rpc_server *s)
{
	if (!s)
		return;
	s->freeing = true;
	rpc_routes_free(s); /* their calls end UNAVAILABLE while callers are still here */
	while (s->conns)
		conn_close(s->conns);
	while (s->listeners) {
		struct rpc_listener *l = s->listeners;
		s->listeners = l->next;
		ev_del(s->loop, &l->src);
		close(l->src.fd);
		struct stat st;
		/* Unlink only our socket: another kin may have replaced it. */
		if (l->path[0] && stat(l->path, &st) == 0 && st.st_dev == l->dev &&
		    st.st_ino == l->ino)
			unlink(l->path);
		free(l);
	}
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	free(s);
}

void rpc_server_get_stats(const struct rpc_server *s, struct rpc_server_stats *ret)
{
	*ret = s->stats;
}
