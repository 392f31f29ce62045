/* route: reaching child kins. A call whose metadata names a target
 * ("kin-target: pod1/inner") is forwarded one hop: to this kin's route
 * "pod1" with the target "inner"; the child's answer — a Response, or a
 * server stream's Data frames — is relayed back on the caller's stream.
 * A route is a connected socket to a child kin (a socketpair end, a VM's
 * link socket); the calls of every caller share it, each under a stream
 * id this kin picks. A child is not trusted: its frames are checked like
 * any peer's, and anything malformed closes that route only. */
#include "rpc/rpc-int.h"
#include "lib/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* The input buffer from attach on; larger ones, in or out, are freed
 * once empty. */
#define ROUTE_BUF_MIN (64 * 1024)

struct relay {
	struct list_node node; /* in rpc_route.relays, newest first */
	struct rpc_route *route;
	uint32_t id;               /* the stream on the route */
	struct rpc_call *call;     /* the caller's; NULL for this kin's own calls */
	rpc_route_done_fn done;    /* own calls */
	rpc_route_data_fn on_data; /* own server streams: each Data frame */
	void *data;
};

struct rpc_route {
	struct list_node node; /* in rpc_routes.list, newest first */
	struct rpc_server *server;
	char name[RPC_ROUTE_NAME_MAX + 1];
	struct ev_source src;
	enum rpc_route_state state;
	char why[160];      /* why it is down */
	struct buf_in in;   /* ROUTE_BUF_MIN from attach on, grown to a frame's size */
	struct buf_out out; /* RPC_ROUTE_OUT_MAX pending */
	uint32_t next_id;
	uint32_t events;
	struct list_node relays;
	unsigned inflight;
	unsigned busy; /* inside its handler or a callback: free later */
	bool probe;    /* attached later: probe then */
	bool removed;
	void (*on_ready)(void *data); /* once, when the probe is answered */
	void *ready_data;
	struct relay *probing; /* the probe in flight, while connecting */
};

struct rpc_routes {
	struct list_node list;
	size_t n;
	struct rpc_route_names names; /* the owner's grammar */
};

static int route_method_unused(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	(void)call, (void)in, (void)data;
	return -ENOSYS;
}

const struct rpc_method rpc_route_method = {
    .service = "kin.v1.Route",
    .method = "Forward",
    .input = &kin__v1__cancel_request__descriptor,
    .handler = route_method_unused,
    .flags = RPC_METHOD_SERVER_STREAM,
};

static struct rpc_routes *routes_of(struct rpc_server *s, bool create)
{
	struct rpc_routes **rs = rpc_server_routes(s);
	if (!*rs && create) {
		*rs = calloc(1, sizeof(**rs));
		if (*rs)
			list_init(&(*rs)->list);
	}
	return *rs;
}

int rpc_route_names_set(struct rpc_server *s, const struct rpc_route_names *names)
{
	struct rpc_routes *rs = routes_of(s, true);
	if (!rs)
		return -ENOMEM;
	rs->names = names ? *names : (struct rpc_route_names){0};
	return 0;
}

/* The owner's grammar, or none (every member NULL). */
static struct rpc_route_names route_names(struct rpc_server *s)
{
	struct rpc_routes *rs = routes_of(s, false);
	return rs ? rs->names : (struct rpc_route_names){0};
}

static bool route_name_valid(struct rpc_server *s, const char *name)
{
	struct rpc_route_names g = route_names(s);
	return g.valid ? g.valid(name) : name_is_valid(name);
}

static struct rpc_route *route_find(struct rpc_server *s, const char *name)
{
	struct rpc_routes *rs = routes_of(s, false);
	struct rpc_route *r;
	if (!rs)
		return NULL;
	list_for_each(r, &rs->list, node)
		if (!r->removed && strcmp(r->name, name) == 0)
			return r;
	return NULL;
}

/* ---- relays ----------------------------------------------------------------------- */

static void relay_unlink(struct relay *rl)
{
	list_remove(&rl->node);
	rl->route->inflight--;
}

static struct relay *relay_find(struct rpc_route *r, uint32_t id)
{
	struct relay *rl;
	list_for_each(rl, &r->relays, node)
		if (rl->id == id)
			return rl;
	return NULL;
}

/* Ends a relay with a status of this kin's making. */
static void relay_fail(struct relay *rl, int code, const char *msg)
{
	relay_unlink(rl);
	if (rl->call) {
		rpc_call_on_cancel(rl->call, NULL, NULL);
		rpc_call_fail(rl->call, code, "%s", msg);
	} else if (rl->done) {
		struct err st = {.code = code};
		str_copy(st.msg, sizeof(st.msg), msg);
		rl->done(&st, NULL, 0, rl->data);
	}
	free(rl);
}

/* ---- the route's socket ------------------------------------------------------------- */

static void route_update_events(struct rpc_route *r)
{
	if (r->state == RPC_ROUTE_DOWN)
		return;
	uint32_t want = EPOLLIN | (buf_out_pending(&r->out) ? EPOLLOUT : 0);
	if (want != r->events && ev_mod(rpc_server_loop(r->server), &r->src, want) == 0)
		r->events = want;
}

static int route_attach(struct rpc_route *r, int fd, bool probe);
static void route_probe(struct rpc_route *r);
static void route_down(struct rpc_route *r, const char *fmt, ...) _printf_(2, 3);
static void route_down(struct rpc_route *r, const char *fmt, ...)
{
	char msg[ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap); /* a better reason may come later */
	va_end(ap);
	if (r->state == RPC_ROUTE_DOWN)
		return;
	log_info("rpc: route %s down: %s", r->name, r->why);
	r->state = RPC_ROUTE_DOWN;
	ev_close(rpc_server_loop(r->server), &r->src);
	buf_in_free(&r->in);
	buf_out_free(&r->out);
	snprintf(msg, sizeof(msg), "%s: %s", r->name, r->why);
	r->busy++;
	struct relay *rl;
	while ((rl = list_first_entry(&r->relays, struct relay, node)))
		relay_fail(rl, ERR_UNAVAILABLE, msg);
	r->busy--;
}

/* may_down: from the route's own handler only; elsewhere a failed send
 * is left for the handler (epoll reports the error), so a caller's relay
 * is never freed under its feet. */
static void route_flush(struct rpc_route *r, bool may_down)
{
	int e = buf_out_flush(&r->out, r->src.fd, true);
	if (e < 0 && e != -EAGAIN && may_down) {
		route_down(r, "the child's channel failed: %s", strerror(-e));
		return;
	}
	route_update_events(r);
}

/* Queues a whole frame (or nothing): -ENOBUFS past RPC_ROUTE_OUT_MAX. */
static int route_queue(struct rpc_route *r, const uint8_t *frame, size_t len)
{
	if (r->state == RPC_ROUTE_DOWN)
		return -EPIPE;
	int e = buf_out_append(&r->out, frame, len);
	if (e < 0)
		return e;
	route_flush(r, false);
	return 0;
}

static uint32_t route_next_id(struct rpc_route *r)
{
	uint32_t id = r->next_id;
	if (id >= UINT32_MAX - 2)
		return 0;
	r->next_id += 2;
	return id;
}

/* Tells the child to end its stream stream_id. */
static void route_cancel_stream(struct rpc_route *r, uint32_t stream_id)
{
	uint32_t id = route_next_id(r);
	if (id && r->state == RPC_ROUTE_READY) {
		Kin__V1__CancelRequest in = KIN__V1__CANCEL_REQUEST__INIT;
		_cleanup_free_ uint8_t *frame = NULL;
		size_t len;
		in.stream_id = stream_id;
		/* Its answer matches no relay and is dropped. */
		const ProtobufCServiceDescriptor *d = &kin__v1__route__descriptor;
		if (rpc_request_encode(id, 0, d->name, d->methods[0].name, &in.base, NULL, 0, 0,
		                       &frame, &len) == 0)
			route_queue(r, frame, len);
	}
}

/* The caller of a relayed call went away: tell the child, forget it. */
static void relay_cancel(struct relay *rl)
{
	relay_unlink(rl);
	route_cancel_stream(rl->route, rl->id);
	free(rl);
}

static void relay_cancelled(struct rpc_call *call, void *data)
{
	(void)call;
	relay_cancel(data);
}

static void route_free(struct rpc_route *r)
{
	struct rpc_routes *rs = routes_of(r->server, false);
	list_remove(&r->node);
	rs->n--;
	free(r);
}

/* One child frame, complete and with a checked header. */
static void route_frame(struct rpc_route *r, const struct rpc_header *h, const uint8_t *data)
{
	struct relay *rl = relay_find(r, h->stream_id);
	struct err st;
	if (h->type == RPC_TYPE_RESPONSE) {
		/* Checked before it goes anywhere: a caller gets a ttrpc
		 * Response or nothing. */
		Ttrpc__Response *m = ttrpc__response__unpack(NULL, h->length, data);
		if (!m) {
			route_down(r, "the child sent a malformed response");
			return;
		}
		if (rl) {
			relay_unlink(rl);
			if (rl->call) {
				rpc_call_on_cancel(rl->call, NULL, NULL);
				rpc_call_set_status(rl->call, m->status ? m->status->code : ERR_OK);
				rpc_call_relay(rl->call, h->type, h->flags, data, h->length);
			} else if (rl->done) {
				st = (struct err){.code = m->status ? m->status->code : ERR_OK};
				if (m->status && m->status->message)
					str_copy(st.msg, sizeof(st.msg), m->status->message);
				rl->done(&st, m->payload.data, m->payload.len, rl->data);
			}
			free(rl);
		}
		ttrpc__response__free_unpacked(m, NULL);
		return;
	}
	if (!rl)
		return; /* a late frame of a cancelled call */
	bool last = h->flags & RPC_FLAG_REMOTE_CLOSED;
	if (last)
		relay_unlink(rl);
	if (rl->call) {
		if (last)
			rpc_call_on_cancel(rl->call, NULL, NULL);
		rpc_call_relay(rl->call, h->type, h->flags, data, h->length);
	} else {
		if (rl->on_data && h->type == RPC_TYPE_DATA && h->length &&
		    !(h->flags & RPC_FLAG_NO_DATA))
			rl->on_data(data, h->length, rl->data);
		if (last && rl->done) {
			st = (struct err){.code = ERR_OK};
			rl->done(&st, NULL, 0, rl->data);
		}
	}
	if (last)
		free(rl);
}

/* Every complete frame in the input buffer. */
static void route_process(struct rpc_route *r)
{
	while (r->state != RPC_ROUTE_DOWN && buf_in_has(&r->in, RPC_HEADER_SIZE)) {
		struct rpc_header h;
		rpc_header_decode(buf_in_peek(&r->in), &h);
		int e = rpc_header_check(&h, false);
		if (e < 0) {
			route_down(r, "the child sent a malformed frame (%s)",
			           e == -EMSGSIZE ? "over 4 MiB"
			           : e == -EPROTO ? "bad header"
			           : e == -EBADR  ? "bad stream id"
			                          : "bad flags");
			return;
		}
		size_t need = RPC_HEADER_SIZE + (size_t)h.length;
		if (!buf_in_has(&r->in, need)) {
			/* Room for exactly this frame: checked, at most 4 MiB + 10. */
			if (buf_in_reserve(&r->in, need) < 0)
				route_down(r, "out of memory");
			break;
		}
		const uint8_t *data = buf_in_peek(&r->in) + RPC_HEADER_SIZE;
		buf_in_consume(&r->in, need); /* data stays put until buf_in_compact */
		route_frame(r, &h, data);
	}
	if (r->state != RPC_ROUTE_DOWN)
		buf_in_compact(&r->in);
}

static void route_on_event(struct ev_source *src, uint32_t events)
{
	struct rpc_route *r = src->data;
	r->busy++;
	if (events & (EPOLLOUT | EPOLLERR))
		route_flush(r, true);
	if (r->state != RPC_ROUTE_DOWN && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		/* One read per wakeup, like any connection. A full buffer
		 * cannot happen (it is grown for a whole frame): -EAGAIN. */
		ssize_t n = buf_in_read(&r->in, r->src.fd, true);
		if (n == 0)
			route_down(r, "the child kin closed its channel");
		else if (n < 0 && n != -EAGAIN)
			route_down(r, "the child's channel failed: %s", strerror((int)-n));
		else if (n > 0)
			route_process(r);
	}
	r->busy--;
	if (r->removed && !r->busy)
		route_free(r);
}

/* ---- registry ----------------------------------------------------------------------- */

static void probe_done(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct rpc_route *r = data;
	(void)payload, (void)len;
	r->probing = NULL; /* freed by the caller */
	if (r->state != RPC_ROUTE_CONNECTING)
		return;
	if (st->code == ERR_OK) {
		r->state = RPC_ROUTE_READY;
		log_info("rpc: route %s ready", r->name);
		void (*fn)(void *) = r->on_ready;
		r->on_ready = NULL;
		if (fn)
			fn(r->ready_data);
	}
}

int rpc_route_on_ready(struct rpc_server *s, const char *name, void (*fn)(void *data), void *data)
{
	struct rpc_route *r = route_find(s, name);
	if (!r)
		return -ENOENT;
	if (r->state == RPC_ROUTE_DOWN)
		return -EHOSTDOWN;
	r->on_ready = fn;
	r->ready_data = data;
	return 0;
}

static int route_send_request(struct rpc_route *r, struct relay *rl, uint8_t flags,
                              const char *service, const char *method, const ProtobufCMessage *in)
{
	_cleanup_free_ uint8_t *frame = NULL;
	size_t len;
	int e = rpc_request_encode(rl->id, flags, service, method, in, NULL, 0, 0, &frame, &len);
	if (e < 0)
		return e;
	return route_queue(r, frame, len);
}

static struct relay *relay_new(struct rpc_route *r)
{
	uint32_t id = route_next_id(r);
	if (!id)
		return NULL;
	struct relay *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	rl->route = r;
	rl->id = id;
	list_push(&r->relays, &rl->node);
	r->inflight++;
	return rl;
}

int rpc_route_add(struct rpc_server *s, const char *name, int fd, unsigned flags)
{
	if (flags & RPC_ROUTE_PRIVATE ? name[0] != '@' || !name_is_valid(name + 1)
	                              : !route_name_valid(s, name))
		return -EINVAL;
	if (route_find(s, name))
		return -EEXIST;
	struct rpc_routes *rs = routes_of(s, true);
	if (!rs)
		return -ENOMEM;
	if (rs->n >= RPC_ROUTES_MAX)
		return -ENOSPC;
	struct rpc_route *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct rpc_route){.server = s,
	                        .state = flags & RPC_ROUTE_PROBE ? RPC_ROUTE_CONNECTING
	                                                         : RPC_ROUTE_READY,
	                        .next_id = 1,
	                        .events = EPOLLIN};
	str_copy(r->name, sizeof(r->name), name);
	r->src = (struct ev_source){.fd = -1, .fn = route_on_event, .data = r};
	buf_in_init(&r->in, ROUTE_BUF_MIN, ROUTE_BUF_MIN, 0, NULL);
	buf_out_init(&r->out, RPC_ROUTE_OUT_MAX, ROUTE_BUF_MIN, 0, NULL);
	list_init(&r->relays);
	list_push(&rs->list, &r->node);
	rs->n++;
	log_debug("rpc: route %s added", name);
	if (fd < 0) {
		r->state = RPC_ROUTE_CONNECTING; /* rpc_route_attach gives the fd */
		r->probe = flags & RPC_ROUTE_PROBE;
		return 0;
	}
	int e = route_attach(r, fd, flags & RPC_ROUTE_PROBE);
	if (e < 0) {
		list_remove(&r->node);
		rs->n--;
		free(r);
	}
	return e;
}

int rpc_route_attach(struct rpc_server *s, const char *name, int fd)
{
	struct rpc_route *r = route_find(s, name);
	if (!r)
		return -ENOENT;
	if (r->src.fd >= 0 || r->state == RPC_ROUTE_DOWN)
		return -EALREADY;
	return route_attach(r, fd, r->probe);
}

static int route_attach(struct rpc_route *r, int fd, bool probe)
{
	r->src.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = r->src.fd < 0 ? -errno : buf_in_reserve(&r->in, ROUTE_BUF_MIN);
	if (e == 0)
		e = fd_set_nonblock(r->src.fd, true);
	if (e == 0)
		e = ev_add(rpc_server_loop(r->server), &r->src, EPOLLIN);
	if (e < 0) {
		if (r->src.fd >= 0)
			close(r->src.fd);
		r->src.fd = -1;
		buf_in_free(&r->in);
		return e;
	}
	r->events = EPOLLIN;
	r->state = probe ? RPC_ROUTE_CONNECTING : RPC_ROUTE_READY;
	if (probe)
		route_probe(r);
	return 0;
}

/* Asks the child's kin Health/Check; a probe still unanswered is dropped
 * first (its late answer is then ignored, as any unknown stream's). */
static void route_probe(struct rpc_route *r)
{
	if (r->probing) {
		relay_unlink(r->probing);
		free(r->probing);
		r->probing = NULL;
	}
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	struct relay *rl = relay_new(r);
	if (!rl)
		return;
	rl->done = probe_done;
	rl->data = r;
	const ProtobufCServiceDescriptor *d = &kin__v1__health__descriptor;
	if (route_send_request(r, rl, 0, d->name, d->methods[0].name, &in.base) < 0) {
		relay_unlink(rl);
		free(rl);
		return;
	}
	r->probing = rl;
}

int rpc_route_reprobe(struct rpc_server *s, const char *name)
{
	struct rpc_route *r = route_find(s, name);
	if (!r)
		return -ENOENT;
	if (r->state != RPC_ROUTE_CONNECTING || r->src.fd < 0)
		return -EALREADY;
	if (buf_out_pending(&r->out)) /* the last one is not even sent */
		return -EAGAIN;
	route_probe(r);
	return 0;
}

/* Down (its calls end UNAVAILABLE), and with remove forgotten: freed
 * now, or by the handler or callback that still holds it. */
static int route_end(struct rpc_server *s, const char *name, const char *why, bool remove)
{
	struct rpc_route *r = route_find(s, name);
	if (!r)
		return -ENOENT;
	r->busy++;
	route_down(r, "%s", why);
	r->busy--;
	if (remove)
		r->removed = true;
	if (r->removed && !r->busy)
		route_free(r);
	return 0;
}

int rpc_route_remove(struct rpc_server *s, const char *name, const char *why)
{
	return route_end(s, name, why ? why : "removed", true);
}

int rpc_route_close(struct rpc_server *s, const char *name, const char *why)
{
	return route_end(s, name, why, false);
}

enum rpc_route_state rpc_route_state(struct rpc_server *s, const char *name)
{
	struct rpc_route *r = route_find(s, name);
	return r ? r->state : RPC_ROUTE_NONE;
}

void rpc_routes_free(struct rpc_server *s)
{
	struct rpc_routes *rs = routes_of(s, false);
	if (!rs)
		return;
	struct rpc_route *r;
	while ((r = list_first_entry(&rs->list, struct rpc_route, node))) {
		r->busy++;
		route_down(r, "kin is stopping");
		r->busy--;
		list_remove(&r->node);
		free(r);
	}
	free(rs);
	*rpc_server_routes(s) = NULL;
}

int rpc_route_stream(struct rpc_server *s, const char *name, const char *service,
                     const char *method, const ProtobufCMessage *in, rpc_route_data_fn on_data,
                     rpc_route_done_fn done, void *data, uint32_t *ret_id)
{
	struct rpc_route *r = route_find(s, name);
	if (!r)
		return -ENOENT;
	if (r->state != RPC_ROUTE_READY)
		return -EAGAIN;
	if (r->inflight >= RPC_ROUTE_INFLIGHT_MAX)
		return -EBUSY;
	struct relay *rl = relay_new(r);
	if (!rl)
		return -ENOMEM;
	rl->done = done;
	rl->on_data = on_data;
	rl->data = data;
	int e = route_send_request(r, rl, 0, service, method, in);
	if (e < 0) {
		relay_unlink(rl);
		free(rl);
		return e;
	}
	if (ret_id)
		*ret_id = rl->id;
	return 0;
}

int rpc_route_call(struct rpc_server *s, const char *name, const char *service, const char *method,
                   const ProtobufCMessage *in, rpc_route_done_fn done, void *data)
{
	return rpc_route_stream(s, name, service, method, in, NULL, done, data, NULL);
}

void rpc_route_cancel(struct rpc_server *s, const char *name, uint32_t id)
{
	struct rpc_route *r = route_find(s, name);
	struct relay *rl = r ? relay_find(r, id) : NULL;
	if (rl && !rl->call)
		relay_cancel(rl);
	else if (r && !rl && id && id < r->next_id) /* a previous kin's: its ids came before */
		route_cancel_stream(r, id);
}

/* ---- forwarding ---------------------------------------------------------------------- */

/* Splits "a/b/c" into its first hop and the rest (NULL at the last hop),
 * the hop as many words as the owner's grammar says. */
static int target_split(struct rpc_server *s, const char *target, char *hop, size_t hop_size,
                        const char **ret_rest)
{
	struct rpc_route_names g = route_names(s);
	size_t words = g.hop_words ? g.hop_words(target) : 1;
	const char *end = strchr(target, '/');
	while (end && --words > 0)
		end = strchr(end + 1, '/');
	size_t n = end ? (size_t)(end - target) : strlen(target);
	if (n >= hop_size)
		return -EINVAL;
	memcpy(hop, target, n);
	hop[n] = '\0';
	*ret_rest = end ? end + 1 : NULL;
	if (!route_name_valid(s, hop) || (end && !end[1]))
		return -EINVAL;
	return 0;
}

/* The Request again, for the child: the target cut by one hop. */
static int encode_forward(const struct rpc_request *req, uint32_t id, uint8_t flags,
                          const char *rest, const char *via, int64_t timeout_ns, uint8_t **ret,
                          size_t *ret_len)
{
	Ttrpc__KeyValue kvs[RPC_METADATA_MAX], *kvp[RPC_METADATA_MAX];
	size_t n = 0;
	for (size_t i = 0; i < req->n_metadata; i++) {
		struct rpc_kv kv = rpc_request_metadata(req, i);
		if (strcmp(kv.key, RPC_TARGET_KEY) == 0 || strcmp(kv.key, RPC_TARGET_VIA_KEY) == 0)
			continue;
		if (n + 2 >= RPC_METADATA_MAX)
			return -E2BIG;
		ttrpc__key_value__init(&kvs[n]);
		kvs[n].key = (char *)kv.key;
		kvs[n].value = (char *)kv.value;
		kvp[n] = &kvs[n];
		n++;
	}
	const char *extra[2][2] = {{RPC_TARGET_VIA_KEY, via}, {RPC_TARGET_KEY, rest}};
	for (size_t i = 0; i < 2; i++) {
		if (!extra[i][1])
			continue;
		ttrpc__key_value__init(&kvs[n]);
		kvs[n].key = (char *)extra[i][0];
		kvs[n].value = (char *)extra[i][1];
		kvp[n] = &kvs[n];
		n++;
	}
	Ttrpc__Request m = TTRPC__REQUEST__INIT;
	m.service = (char *)req->service;
	m.method = (char *)req->method;
	m.payload = (ProtobufCBinaryData){.len = req->payload_len, .data = (uint8_t *)req->payload};
	m.timeout_nano = timeout_ns;
	m.n_metadata = n;
	m.metadata = kvp;
	return rpc_request_pack_frame(&m, id, flags, ret, ret_len);
}

void rpc_route_forward(struct rpc_server *s, struct rpc_call *call, const char *target,
                       uint8_t flags)
{
	const char *via = rpc_call_metadata(call, RPC_TARGET_VIA_KEY);
	const char *rest;
	char hop[RPC_ROUTE_NAME_MAX + 1];
	char full[2 * RPC_VALUE_MAX + 2];

	snprintf(full, sizeof(full), "%s%s%s", via ? via : "", via ? "/" : "", target);
	struct rpc_route_names g = route_names(s);
	if (strlen(target) > RPC_VALUE_MAX ||
	    target_split(s, target, hop, sizeof(hop), &rest) < 0) {
		rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		              "target \"%.200s\": expected hops joined by '/', each %s "
		              "([A-Za-z0-9_.-], 1-64 bytes)",
		              full, g.expect ? g.expect : "a name");
		return;
	}
	struct rpc_route *r = route_find(s, hop);
	if (!r) {
		rpc_call_fail(call, ERR_NOT_FOUND, "target \"%.200s\": no %s \"%s\" %s%s%s", full,
		              g.what ? g.what : "route", hop, via ? "in \"" : "in this kin",
		              via ? via : "", via ? "\"" : "");
		return;
	}
	if (r->state != RPC_ROUTE_READY) {
		rpc_call_fail(call, ERR_UNAVAILABLE, "target \"%.200s\": %s: %s", full, r->name,
		              r->state == RPC_ROUTE_CONNECTING ? "its kin has not answered yet"
		                                               : r->why);
		return;
	}
	if (r->inflight >= RPC_ROUTE_INFLIGHT_MAX) {
		rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED,
		              "target \"%.200s\": %u calls in flight to %s already (the limit)",
		              full, RPC_ROUTE_INFLIGHT_MAX, r->name);
		return;
	}
	char new_via[RPC_VALUE_MAX + 1];
	if (snprintf(new_via, sizeof(new_via), "%s%s%s", via ? via : "", via ? "/" : "", hop) >=
	    (int)sizeof(new_via)) {
		rpc_call_fail(call, ERR_INVALID_ARGUMENT, "target \"%.200s\": too deep", full);
		return;
	}
	/* The child gets what is left of the caller's timeout, not all of it
	 * again: each hop's deadline then falls no later than the caller's. */
	int64_t timeout_ns = 0;
	uint64_t deadline = rpc_call_deadline_ns(call), now = now_monotonic_ns();
	if (deadline) {
		if (deadline <= now) {
			rpc_call_fail(call, ERR_DEADLINE_EXCEEDED,
			              "target \"%.200s\": %s/%s: deadline exceeded before it "
			              "could be relayed to %s",
			              full, rpc_call_service(call), rpc_call_method(call), r->name);
			return;
		}
		timeout_ns = (int64_t)(deadline - now);
	}
	struct relay *rl = relay_new(r);
	if (!rl) {
		rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED,
		              "target \"%.200s\": %s: out of stream ids "
		              "or memory",
		              full, r->name);
		return;
	}
	_cleanup_free_ uint8_t *frame = NULL;
	size_t len;
	int e = encode_forward(rpc_call_request(call), rl->id, flags, rest, new_via, timeout_ns,
	                       &frame, &len);
	if (e == 0)
		e = route_queue(r, frame, len);
	if (e < 0) {
		relay_unlink(rl);
		free(rl);
		rpc_call_fail(call, e == -E2BIG ? ERR_INVALID_ARGUMENT : ERR_RESOURCE_EXHAUSTED,
		              "target \"%.200s\": cannot relay to %s: %s", full, r->name,
		              e == -E2BIG      ? "too much metadata"
		              : e == -EMSGSIZE ? "the request grows over 4 MiB"
		              : e == -ENOBUFS  ? "its queue is full"
		                               : strerror(-e));
		return;
	}
	rl->call = call;
	rpc_call_on_cancel(call, relay_cancelled, rl);
}

/* ---- re-exec: routes handed over as they are ------------------------------------------ */

enum { RT_NAME = 1, RT_FD, RT_STATE, RT_WHY, RT_NEXT_ID, RT_PROBE, RT_IN, RT_OUT };
struct route_nums {
	uint64_t state, next_id, probe;
};
static const struct state_num route_nums[] = {
    STATE_NUM(RT_STATE, struct route_nums, state),
    STATE_NUM(RT_NEXT_ID, struct route_nums, next_id),
    STATE_NUM(RT_PROBE, struct route_nums, probe),
};

static void route_save(struct rpc_route *r, struct state_w *w, uint16_t tag)
{
	if (r->src.fd >= 0)
		buf_out_flush(&r->out, r->src.fd, true); /* as far as it goes now */
	struct route_nums nums = {r->state, r->next_id, r->probe};
	size_t at = state_open(w, tag);
	state_put_str(w, RT_NAME, r->name);
	state_put_fd(w, RT_FD, r->src.fd);
	state_put_str(w, RT_WHY, r->why);
	state_put_nums(w, &nums, route_nums, ARRAY_SIZE(route_nums));
	state_put_bytes(w, RT_IN, buf_in_peek(&r->in), buf_in_pending(&r->in));
	state_put_bytes(w, RT_OUT, r->out.data + r->out.off, buf_out_pending(&r->out));
	state_close(w, at);
}

void rpc_routes_save(struct rpc_server *s, struct state_w *w, uint16_t tag)
{
	struct rpc_routes *rs = routes_of(s, false);
	struct rpc_route *r;
	if (!rs)
		return;
	list_for_each(r, &rs->list, node)
		if (!r->removed)
			route_save(r, w, tag);
}

int rpc_route_restore(struct rpc_server *s, struct state_in *in, const struct state_field *f)
{
	char name[RPC_ROUTE_NAME_MAX + 1] = "", why[sizeof(((struct rpc_route *)0)->why)] = "";
	struct route_nums nums = {.state = RPC_ROUTE_DOWN, .next_id = 1};
	struct state_field g, bytes_in = {0}, bytes_out = {0};
	struct state_r rr;
	int fd = -1, e = 0;
	state_get_record(f, &rr);
	while (e == 0 && (e = state_next(&rr, &g)) > 0) {
		if ((e = state_get_num(&g, &nums, route_nums, ARRAY_SIZE(route_nums))) != 0)
			e = e < 0 ? e : 0; /* a number, taken */
		else if (g.tag == RT_NAME)
			e = state_get_str(&g, name, sizeof(name));
		else if (g.tag == RT_FD && fd < 0)
			e = state_get_fd(in, &g, &fd);
		else if (g.tag == RT_WHY)
			e = state_get_str(&g, why, sizeof(why));
		else if (g.tag == RT_IN)
			bytes_in = g;
		else if (g.tag == RT_OUT)
			bytes_out = g;
	}
	bool named = name[0] == '@' ? name_is_valid(name + 1) : route_name_valid(s, name);
	if (e < 0 || !named || !(nums.next_id & 1) || nums.next_id >= UINT32_MAX - 2 ||
	    (nums.state != RPC_ROUTE_CONNECTING && nums.state != RPC_ROUTE_READY &&
	     nums.state != RPC_ROUTE_DOWN) ||
	    bytes_in.len > RPC_HEADER_SIZE + RPC_MESSAGE_MAX || bytes_out.len > RPC_ROUTE_OUT_MAX) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	if (route_find(s, name) || fd < 0)
		nums.state = RPC_ROUTE_DOWN;
	e = rpc_route_add(s, name, -1, RPC_ROUTE_PRIVATE * (name[0] == '@'));
	if (e < 0) {
		if (fd >= 0)
			close(fd);
		return e;
	}
	struct rpc_route *r = route_find(s, name);
	r->next_id = (uint32_t)nums.next_id;
	r->probe = nums.probe;
	if (nums.state == RPC_ROUTE_DOWN) {
		if (fd >= 0)
			close(fd);
		str_copy(r->why, sizeof(r->why), why[0] ? why : "its channel was not handed over");
		r->state = RPC_ROUTE_DOWN;
		return 0;
	}
	e = buf_in_append(&r->in, bytes_in.data, bytes_in.len);
	if (e == 0)
		e = buf_out_append(&r->out, bytes_out.data, bytes_out.len);
	/* A route still probing asks again: its probe's answer went to the
	 * previous kin's stream, which the next one does not know. */
	if (e == 0)
		e = route_attach(r, fd, nums.state == RPC_ROUTE_CONNECTING);
	close(fd);
	if (e < 0) {
		route_end(s, name, "its channel could not be taken over", false);
		return e;
	}
	r->busy++;
	route_process(r); /* what the previous kin read: late answers, dropped */
	route_flush(r, true);
	r->busy--;
	return 0;
}
