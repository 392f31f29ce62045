/* server_conn: one ttrpc connection — a read per wakeup, the input cut
 * into frames (a bad or oversize one refused on its stream and skipped
 * unread), and the output queue with its caps. Only a connection's own
 * event handler and rpc_server_free close it, so answers queued from
 * anywhere else never free what a caller still holds. */
#include "rpc/server-int.h"
#include "lib/state.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* ---- output queue ------------------------------------------------------------ */

int rpc_conn_out_reserve(struct rpc_conn *c, size_t n, uint8_t **ret)
{
	return buf_out_reserve(&c->out, n, ret);
}

/* Who is on the other end, for a log line. */
static void conn_describe(const struct rpc_conn *c, char *buf, size_t size)
{
	if (c->peer.transport == RPC_TRANSPORT_VSOCK)
		snprintf(buf, size, "vsock cid %u", c->peer.cid);
	else if (c->peer.transport == RPC_TRANSPORT_UNIX && c->peer.pid > 0)
		snprintf(buf, size, "pid %d uid %u", (int)c->peer.pid, (unsigned)c->peer.uid);
	else if (c->peer.transport == RPC_TRANSPORT_TLS)
		snprintf(buf, size, "TLS peer %.40s (%.40s)", c->peer.addr,
		         c->peer.n_names ? c->peer.names[0] : "no name");
	else
		snprintf(buf, size, "fd %d (%s)", c->src.fd, c->not_socket ? "device" : "socket");
}

/* The frame time limit ran out: cut the connection. Only its own handler
 * closes it; shutting the socket down brings that handler here. */
static void conn_frame_late(struct rpc_timer *t, uint64_t now_ns)
{
	struct rpc_conn *c = container_of(t, struct rpc_conn, frame_timer);
	struct rpc_server *s = c->server;
	if (c->broken)
		return;
	if (c->frame_deadline_ns > now_ns) {
		/* A frame completed since: the limit runs for the next one. */
		if (rpc_server_timer_add(s, t, c->frame_deadline_ns) == 0)
			return;
	}
	char who[128];
	conn_describe(c, who, sizeof(who));
	size_t have = buf_in_pending(&c->in);
	if (!c->skip && have >= RPC_HEADER_SIZE) {
		struct rpc_header h;
		rpc_header_decode(buf_in_peek(&c->in), &h);
		log_warn("rpc: closing the connection of %s: a frame stayed incomplete for "
		         "%u ms (%zu of %u bytes received)",
		         who, s->cfg.frame_timeout_ms, have, RPC_HEADER_SIZE + h.length);
	} else {
		log_warn("rpc: closing the connection of %s: a frame stayed incomplete for "
		         "%u ms (%s)",
		         who, s->cfg.frame_timeout_ms,
		         c->skip ? "the data of a refused frame" : "a partial header");
	}
	s->stats.frame_timeouts++;
	c->broken = "a frame stayed incomplete past the time limit";
	rpc_conn_output_queued(c);
}

/* Times the frame being received, if one has started and the connection
 * is being read (one held back by its unread answers is the client's to
 * drain, not late). A new limit starts with each frame. */
static void conn_watch_frame(struct rpc_conn *c, bool reading)
{
	struct rpc_server *s = c->server;
	if (!reading || (buf_in_pending(&c->in) == 0 && !c->skip)) {
		rpc_server_timer_remove(s, &c->frame_timer);
		return;
	}
	if (c->frame_timer.slot && c->frames == c->frames_at_arm)
		return; /* the same frame: its limit stands */
	c->frame_deadline_ns = now_monotonic_ns() + (uint64_t)s->cfg.frame_timeout_ms * 1000000;
	c->frames_at_arm = c->frames;
	/* Queued already: left early, moved on when it fires. Out of memory:
	 * the frame goes untimed, as before there were limits. */
	if (!c->frame_timer.slot)
		rpc_server_timer_add(s, &c->frame_timer, c->frame_deadline_ns);
}

static void conn_update_events(struct rpc_conn *c)
{
	uint32_t want = 0;
	if (!c->read_closed && !c->broken && buf_out_pending(&c->out) < RPC_OUT_HIGH)
		want |= EPOLLIN;
	if (buf_out_pending(&c->out) || c->broken)
		want |= EPOLLOUT;
	if (want != c->events && ev_mod(c->server->loop, &c->src, want) == 0)
		c->events = want;
	conn_watch_frame(c, want & EPOLLIN);
}

void rpc_conn_output_queued(struct rpc_conn *c)
{
	if (c->in_event)
		return;
	/* To be cut: shutting the socket down makes it report a hang-up, so
	 * its handler runs even if the client reads nothing. */
	if (c->broken)
		shutdown(c->src.fd, SHUT_RDWR);
	conn_update_events(c);
}

int rpc_conn_queue_response(struct rpc_conn *c, uint32_t stream_id, int code, const char *msg,
                            const ProtobufCMessage *payload)
{
	size_t msg_len = msg ? strlen(msg) : 0;
	size_t plen = payload ? protobuf_c_message_get_packed_size(payload) : 0;
	uint8_t *p;
	if (plen > RPC_MESSAGE_MAX) {
		/* Our own answer is too big: say so rather than send it. */
		msg = "response exceeds the 4 MiB message limit";
		msg_len = strlen(msg);
		code = ERR_RESOURCE_EXHAUSTED;
		payload = NULL;
		plen = 0;
	}
	size_t n = rpc_response_frame_size(code, msg_len, plen);
	int r = rpc_conn_out_reserve(c, n, &p);
	if (r < 0) {
		/* Not reading its answers while asking more: cut it. */
		c->broken = "output queue over its cap";
		rpc_conn_output_queued(c);
		return r;
	}
	rpc_response_frame_write(p, stream_id, code, msg, msg_len, payload, plen);
	buf_out_commit(&c->out, n);
	rpc_conn_output_queued(c);
	return 0;
}

void rpc_conn_queue_status(struct rpc_conn *c, uint32_t stream_id, int code, const char *fmt, ...)
{
	char msg[ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rpc_conn_queue_response(c, stream_id, code, msg, NULL);
}

/* ---- connections ------------------------------------------------------------------- */

void rpc_conn_close(struct rpc_conn *c)
{
	struct rpc_server *s = c->server;
	/* Cancel what is still running; a cancel callback may answer other
	 * connections' calls, never this one's (conn is already NULL). */
	struct rpc_call *call;
	while ((call = list_first_entry(&c->calls, struct rpc_call, node))) {
		rpc_call_report(call, ERR_CANCELLED); /* while its peer is known */
		list_remove(&call->node);
		rpc_server_timer_remove(s, &call->deadline);
		call->conn = NULL;
		c->inflight--;
		s->stats.inflight--;
		call->cancelling = true; /* the callback may not finish it itself */
		if (call->cancel)
			call->cancel(call, call->cancel_data);
		rpc_call_free(call);
	}
	rpc_server_timer_remove(s, &c->frame_timer);
	ev_del(s->loop, &c->src);
	close(c->src.fd);
	list_remove(&c->node);
	s->stats.conns--;
	buf_in_free(&c->in);
	buf_out_free(&c->out);
	rpc_conn_closed_fn fn = s->freeing ? NULL : c->on_close;
	void *fn_data = c->on_close_data;
	free(c->peer_names);
	free(c);
	if (fn)
		fn(fn_data);
}

static int conn_flush(struct rpc_conn *c)
{
	int r = buf_out_flush(&c->out, c->src.fd, !c->not_socket);
	return r == -EAGAIN ? 0 : r;
}

/* A frame refused on its header (r: rpc_header_check's error, or
 * -ENOBUFS for one over the input budget): answered on its stream, its
 * data dropped unread, as ttrpc does. */
static void conn_refuse_frame(struct rpc_conn *c, const struct rpc_header *h, int r)
{
	if (r == -EMSGSIZE)
		rpc_conn_queue_status(c, h->stream_id, ERR_RESOURCE_EXHAUSTED,
		                      "message of %u bytes exceeds the maximum of %u bytes",
		                      h->length, RPC_MESSAGE_MAX);
	else if (r == -EBADR)
		rpc_conn_queue_status(c, h->stream_id, ERR_INVALID_ARGUMENT,
		                      "stream id %u: client streams must have odd ids",
		                      h->stream_id);
	else if (r == -ENOBUFS)
		/* Too many big frames arriving at once: refused like an
		 * oversize one. */
		rpc_conn_queue_status(c, h->stream_id, ERR_RESOURCE_EXHAUSTED,
		                      "message of %u bytes refused: kin is receiving "
		                      "too many large messages at once; retry",
		                      h->length);
	else
		rpc_conn_queue_status(c, h->stream_id, ERR_INVALID_ARGUMENT,
		                      "stream %u: flags 0x%x are not valid for message type %u",
		                      h->stream_id, h->flags, h->type);
	buf_in_consume(&c->in, RPC_HEADER_SIZE);
	c->skip = h->length;
}

/* Drops what is left of a refused frame. True once it is all gone. */
static bool conn_skip(struct rpc_conn *c)
{
	size_t have = buf_in_pending(&c->in);
	size_t n = have < c->skip ? have : (size_t)c->skip;
	buf_in_consume(&c->in, n);
	c->skip -= n;
	if (c->skip)
		return false;
	c->frames++;
	return true;
}

/* Handles every complete frame in the input buffer while the output has
 * room. Returns -EPROTO when the stream cannot be trusted any more. */
static int conn_process(struct rpc_conn *c)
{
	int r = 0;

	while (!c->broken && buf_out_pending(&c->out) < RPC_OUT_HIGH) {
		if (c->skip && !conn_skip(c))
			break;
		if (!buf_in_has(&c->in, RPC_HEADER_SIZE))
			break;
		struct rpc_header h;
		rpc_header_decode(buf_in_peek(&c->in), &h);
		r = rpc_header_check(&h, true);
		if (r == -EPROTO) {
			c->server->stats.proto_errors++;
			break;
		}
		if (r < 0) {
			conn_refuse_frame(c, &h, r);
			r = 0;
			continue;
		}
		size_t need = RPC_HEADER_SIZE + (size_t)h.length;
		if (!buf_in_has(&c->in, need)) {
			/* Incomplete: make room for exactly this frame (checked above). */
			r = buf_in_reserve(&c->in, need);
			if (r == -ENOBUFS) {
				conn_refuse_frame(c, &h, r);
				r = 0;
				continue;
			}
			break;
		}
		const uint8_t *data = buf_in_peek(&c->in) + RPC_HEADER_SIZE;
		buf_in_consume(&c->in, need); /* data stays put until buf_in_compact */
		c->frames++;
		if (h.type == RPC_TYPE_REQUEST)
			rpc_conn_handle_request(c, &h, data);
		else
			rpc_conn_handle_data(c, &h);
	}
	buf_in_compact(&c->in);
	return r;
}

static bool in_has_frame(const struct rpc_conn *c)
{
	struct rpc_header h;
	if (c->skip || !buf_in_has(&c->in, RPC_HEADER_SIZE))
		return false;
	rpc_header_decode(buf_in_peek(&c->in), &h);
	return buf_in_has(&c->in, RPC_HEADER_SIZE + (size_t)h.length);
}

/* One read(2) per wakeup. Returns 0, or -errno to close. */
static int conn_read(struct rpc_conn *c)
{
	ssize_t n = buf_in_read(&c->in, c->src.fd, !c->not_socket);
	if (n == 0)
		c->read_closed = true;
	return n == -EAGAIN || n >= 0 ? 0 : (int)n;
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
	} while (r == 0 && !c->broken && !buf_out_pending(&c->out) && in_has_frame(c));
	c->in_event = false;
	if (r < 0 || c->broken) {
		log_debug("rpc: closing connection (uid %u): %s", (unsigned)c->peer.uid,
		          r == -EPROTO ? "malformed frame"
		          : r < 0      ? strerror(-r)
		                       : c->broken);
		rpc_conn_close(c);
		return;
	}
	/* Half-closed and nothing left to answer: done. Leftover bytes there
	 * are a truncated frame that can never complete. */
	if (c->read_closed && !c->inflight && !buf_out_pending(&c->out)) {
		rpc_conn_close(c);
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
	size_t names_len = 0;
	for (size_t i = 0; i < peer->n_names && i < RPC_PEER_NAMES_MAX; i++)
		names_len += strlen(peer->names[i]) + 1;
	char *names = names_len ? malloc(names_len) : NULL;
	if (names_len && !names) {
		free(c);
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
	                       .on_close_data = data,
	                       .frame_timer = {.fn = conn_frame_late}};
	c->peer_names = names;
	c->peer.n_names = 0;
	for (size_t i = 0; names && i < peer->n_names && i < RPC_PEER_NAMES_MAX; i++) {
		size_t n = strlen(peer->names[i]) + 1;
		c->peer.names[c->peer.n_names++] = memcpy(names, peer->names[i], n);
		names += n;
	}
	buf_in_init(&c->in, RPC_IN_MIN, RPC_IN_KEEP, RPC_IN_BUDGET, &s->in_total);
	buf_out_init(&c->out, s->cfg.out_max, RPC_IN_KEEP, RPC_OUT_BUDGET, &s->out_total);
	list_init(&c->calls);
	int r = fd_set_nonblock(fd, true);
	if (r == 0)
		r = ev_add(s->loop, &c->src, c->events);
	if (r < 0) {
		close(fd);
		free(c->peer_names);
		free(c);
		return r;
	}
	list_push(&s->conns, &c->node);
	s->stats.conns++;
	s->stats.accepted++;
	return 0;
}

/* ---- re-exec: carried connections ------------------------------------------------------ */

enum {
	CN_FD = 1,
	CN_TRANSPORT,
	CN_FLAGS,
	CN_IN,
	CN_SKIP,
	CN_OUT,
	CN_LAST_STREAM,
	CN_READ_CLOSED,
	CN_REPLAY, /* the request frames of calls sent again, before CN_IN */
};
enum { CN_ALLOWED = 1, CN_SUPERUSER = 2, CN_RELAY_HOP = 4 };
struct conn_nums {
	uint64_t transport, flags, skip, last, read_closed;
};
static const struct state_num conn_nums[] = {
    STATE_NUM(CN_TRANSPORT, struct conn_nums, transport),
    STATE_NUM(CN_FLAGS, struct conn_nums, flags),
    STATE_NUM(CN_SKIP, struct conn_nums, skip),
    STATE_NUM(CN_LAST_STREAM, struct conn_nums, last),
    STATE_NUM(CN_READ_CLOSED, struct conn_nums, read_closed),
};

bool rpc_call_replayed(const struct rpc_call *call)
{
	return call->conn && rpc_conn_carried(call->conn) && call->method &&
	       (call->method->flags & RPC_METHOD_REPLAY) && call->req.owned_;
}

/* The calls going along as requests: their frames, oldest stream first
 * (calls are kept newest first), and the stream id the next kin must
 * take as the last one seen (below the first of them). */
static void replay_save(struct rpc_conn *c, struct state_w *w, uint32_t *last)
{
	struct rpc_call *call;
	_cleanup_free_ uint8_t *all = NULL;
	size_t total = 0;
	list_for_each_reverse(call, &c->calls, node) {
		uint8_t *f, *grown;
		size_t len;
		if (!rpc_call_replayed(call) ||
		    rpc_request_frame(&call->req, call->stream_id, &f, &len) < 0)
			continue; /* out of memory: the client is not answered */
		if ((grown = realloc(all, total + len))) {
			memcpy(grown + total, f, len);
			all = grown;
			total += len;
			if (call->stream_id <= *last)
				*last = call->stream_id - 1;
		}
		free(f);
	}
	if (total)
		state_put_bytes(w, CN_REPLAY, all, total);
}

static void conn_save(struct rpc_conn *c, struct state_w *w, uint16_t tag)
{
	struct conn_nums nums = {.transport = c->peer.transport,
	                         .flags = (c->peer.allowed ? CN_ALLOWED : 0) |
	                                  (c->peer.superuser ? CN_SUPERUSER : 0) |
	                                  (c->peer.relay_hop ? CN_RELAY_HOP : 0),
	                         .skip = c->skip,
	                         .last = c->last_stream,
	                         .read_closed = c->read_closed};
	size_t at = state_open(w, tag);
	uint32_t last = c->last_stream;
	replay_save(c, w, &last);
	nums.last = last;
	state_put_fd(w, CN_FD, c->src.fd);
	state_put_nums(w, &nums, conn_nums, ARRAY_SIZE(conn_nums));
	state_put_bytes(w, CN_IN, buf_in_peek(&c->in), buf_in_pending(&c->in));
	state_put_bytes(w, CN_OUT, c->out.data + c->out.off, buf_out_pending(&c->out));
	state_close(w, at);
}

bool rpc_conn_carried(const struct rpc_conn *c)
{
	return !c->broken && (c->peer.carry || c->peer.transport == RPC_TRANSPORT_UNIX);
}

void rpc_server_save(struct rpc_server *s, struct state_w *w, uint16_t route_tag, uint16_t conn_tag)
{
	struct rpc_conn *c;
	rpc_routes_save(s, w, route_tag);
	list_for_each(c, &s->conns, node)
		if (rpc_conn_carried(c))
			conn_save(c, w, conn_tag);
}

int rpc_conn_restore(struct rpc_server *s, struct state_in *in, const struct state_field *f)
{
	struct conn_nums nums = {.transport = RPC_TRANSPORT_OTHER};
	struct state_field g, bytes_in = {0}, bytes_out = {0}, replay = {0};
	struct state_r rr;
	int fd = -1, e = 0;
	state_get_record(f, &rr);
	while (e == 0 && (e = state_next(&rr, &g)) > 0) {
		if ((e = state_get_num(&g, &nums, conn_nums, ARRAY_SIZE(conn_nums))) != 0)
			e = e < 0 ? e : 0; /* a number, taken */
		else if (g.tag == CN_FD && fd < 0)
			e = state_get_fd(in, &g, &fd);
		else if (g.tag == CN_IN)
			bytes_in = g;
		else if (g.tag == CN_OUT)
			bytes_out = g;
		else if (g.tag == CN_REPLAY)
			replay = g;
	}
	if (e < 0 || fd < 0 ||
	    (nums.transport != RPC_TRANSPORT_OTHER && nums.transport != RPC_TRANSPORT_UNIX) ||
	    nums.last > UINT32_MAX || nums.skip > RPC_MESSAGE_MAX ||
	    bytes_in.len > RPC_HEADER_SIZE + RPC_MESSAGE_MAX || bytes_out.len > s->cfg.out_max ||
	    replay.len > (size_t)s->cfg.max_inflight * (RPC_HEADER_SIZE + RPC_MESSAGE_MAX)) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_OTHER,
	                        .allowed = nums.flags & CN_ALLOWED,
	                        .superuser = nums.flags & CN_SUPERUSER,
	                        .relay_hop = nums.flags & CN_RELAY_HOP,
	                        .carry = true};
	/* A local client: who it is, asked of the socket again, and what it
	 * may do, as this kin's guard says (a re-exec may bring a new policy). */
	if (nums.transport == RPC_TRANSPORT_UNIX) {
		if ((e = rpc_peer_identify(fd, RPC_TRANSPORT_UNIX, &peer)) < 0) {
			close(fd);
			return e;
		}
		rpc_peer_admit_unix(s, fd, &peer);
	}
	e = rpc_server_add_conn(s, fd, &peer); /* takes fd */
	if (e < 0)
		return e;
	struct rpc_conn *c = list_first_entry(&s->conns, struct rpc_conn, node);
	if (!c)
		return -ENOENT;
	c->skip = nums.skip;
	c->last_stream = (uint32_t)nums.last;
	c->read_closed = nums.read_closed;
	/* Mid-way through skipping a refused frame, what is read next is
	 * its rest: no room for the calls before it. Cut, the client sees. */
	if (replay.len && c->skip)
		c->broken = "its calls in flight could not be handed over (a refused frame's "
		            "data was being skipped)";
	e = c->broken ? 0 : buf_in_append(&c->in, replay.data, replay.len);
	if (e == 0)
		e = buf_in_append(&c->in, bytes_in.data, bytes_in.len);
	if (e == 0)
		e = buf_out_append(&c->out, bytes_out.data, bytes_out.len);
	if (e < 0)
		c->broken = "its buffers could not be taken over";
	conn_on_event(&c->src, 0); /* frames already read, answers already queued */
	return e;
}

enum { L_FD = 1, L_TRANSPORT, L_PATH, L_PARENT };

void rpc_listener_save(struct state_w *w, uint16_t tag, const struct rpc_listen_fd *l)
{
	size_t at = state_open(w, tag);
	state_put_fd(w, L_FD, l->fd);
	state_put_u64(w, L_TRANSPORT, l->transport);
	state_put_str(w, L_PATH, l->path);
	state_put_u64(w, L_PARENT, l->parent);
	state_close(w, at);
}

int rpc_listener_read(struct state_in *in, const struct state_field *f, struct rpc_listen_fd *ret)
{
	uint64_t transport = RPC_TRANSPORT_OTHER, parent = 0;
	struct state_r r;
	struct state_field g;
	*ret = (struct rpc_listen_fd){.fd = -1};
	state_get_record(f, &r);
	while (state_next(&r, &g) > 0) {
		if (g.tag == L_FD && state_get_fd(in, &g, &ret->fd) < 0)
			ret->fd = -1;
		else if (g.tag == L_TRANSPORT)
			state_get_u64(&g, &transport);
		else if (g.tag == L_PATH)
			state_get_str(&g, ret->path, sizeof(ret->path));
		else if (g.tag == L_PARENT)
			state_get_u64(&g, &parent);
	}
	ret->transport = (enum rpc_transport)transport;
	ret->parent = parent != 0;
	return ret->fd < 0 ? -EBADF : 0;
}
