/* rpc server, in process: a socketpair per test, the server in its own
 * ev_loop pumped by the test. Unary calls, errors, limits, streams,
 * deferred calls and their cancellation, pipelining, partial frames,
 * half-close, garbage. */
#include "rpc/rpc-int.h"
#include "api/api-int.h"
#include "unit.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

struct srv {
	struct ev_loop *loop;
	struct rpc_server *s;
	struct api *api; /* Health */
	int fd;          /* the client's end */
	uint8_t buf[8 << 20];
	size_t len;
};
static struct srv S;

static struct rpc_call *kept[8];
static int n_kept, n_cancelled, stream_sent, stream_nobufs;
static char seen_target[64];

static void on_cancel(struct rpc_call *call, void *data)
{
	(void)data;
	n_cancelled++;
	/* Answering a cancelled call is refused, not a double free. */
	if (rpc_call_fail(call, ERR_CANCELLED, "gone") != -EPIPE)
		unit_failures++;
}

static int h_defer(struct rpc_call *call, const ProtobufCMessage *in, void *u)
{
	(void)in;
	(void)u;
	const char *t = rpc_call_metadata(call, "x-trace");
	str_copy(seen_target, sizeof(seen_target), t ? t : "");
	kept[n_kept++ % 8] = call;
	rpc_call_on_cancel(call, on_cancel, NULL);
	return 0;
}

static int h_errno(struct rpc_call *call, const ProtobufCMessage *in, void *u)
{
	(void)call;
	(void)in;
	(void)u;
	return -ENOENT;
}

static int h_stream(struct rpc_call *call, const ProtobufCMessage *in, void *u)
{
	(void)in;
	(void)u;
	Kin__V1__VersionResponse v = KIN__V1__VERSION_RESPONSE__INIT;
	for (int i = 0; i < 3; i++) {
		v.pid = (uint32_t)i;
		if (rpc_call_send(call, &v.base) == 0)
			stream_sent++;
	}
	return rpc_call_close(call, ERR_OK, NULL);
}

static int h_flood(struct rpc_call *call, const ProtobufCMessage *in, void *u)
{
	(void)in;
	(void)u;
	static char big[1 << 20];
	memset(big, 'x', sizeof(big) - 1);
	Kin__V1__VersionResponse v = KIN__V1__VERSION_RESPONSE__INIT;
	v.hostname = big;
	for (int i = 0; i < 64; i++) {
		int r = rpc_call_send(call, &v.base);
		if (r == -ENOBUFS) {
			stream_nobufs++;
			break;
		}
		stream_sent++;
	}
	rpc_call_on_cancel(call, on_cancel, NULL);
	kept[n_kept++ % 8] = call;
	return 0;
}

static const struct rpc_method test_methods[] = {
    {"test.Svc", "Defer", &kin__v1__check_request__descriptor, h_defer, 0, NULL},
    {"test.Svc", "Errno", &kin__v1__check_request__descriptor, h_errno, 0, NULL},
    {"test.Svc", "Stream", &kin__v1__check_request__descriptor, h_stream, RPC_METHOD_SERVER_STREAM,
     NULL},
    {"test.Svc", "Flood", &kin__v1__check_request__descriptor, h_flood, RPC_METHOD_SERVER_STREAM,
     NULL},
};

static bool stopping_never(void *d)
{
	(void)d;
	return false;
}

static void srv_start(const struct rpc_server_config *cfg, bool allowed)
{
	static const struct api_service *const health[] = {&api_service_health};
	int sv[2];
	S.len = 0;
	n_kept = n_cancelled = stream_sent = stream_nobufs = 0;
	ev_loop_new(&S.loop);
	rpc_server_new(S.loop, cfg, &S.s);
	struct api_config acfg = {.rpc = S.s,
	                          .loop = S.loop,
	                          .health = {.version = "t",
	                                     .role = "daemon",
	                                     .zone = "",
	                                     .started_ns = now_monotonic_ns(),
	                                     .stopping = stopping_never}};
	CHECK_EQ(api_start(&acfg, health, ARRAY_SIZE(health), &S.api), 0);
	CHECK_EQ(rpc_server_register(S.s, test_methods, ARRAY_SIZE(test_methods)), 0);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_UNIX, .uid = 1234, .allowed = allowed};
	CHECK_EQ(rpc_server_add_conn(S.s, sv[0], &peer), 0);
	S.fd = sv[1];
	fcntl(S.fd, F_SETFL, O_NONBLOCK);
}

static void srv_stop(void)
{
	close(S.fd);
	rpc_server_free(S.s);
	api_free(S.api);
	ev_loop_free(S.loop);
}

static size_t conns(void)
{
	struct rpc_server_stats st;
	rpc_server_get_stats(S.s, &st);
	return st.conns;
}

/* Runs the server and collects what it sent; -1 once the server closed. */
static int pump(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		ev_run_once(S.loop, 1);
		for (;;) {
			if (S.len == sizeof(S.buf))
				break;
			ssize_t n = recv(S.fd, S.buf + S.len, sizeof(S.buf) - S.len, 0);
			if (n == 0)
				return -1;
			if (n < 0)
				break;
			S.len += (size_t)n;
		}
	}
	return 0;
}

static void send_raw(const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = send(S.fd, b, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN) {
				pump(1);
				continue;
			}
			return;
		}
		b += w;
		n -= (size_t)w;
	}
}

static void send_call(uint32_t id, uint8_t flags, const char *svc, const char *method,
                      const struct rpc_kv *md, size_t n_md)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	uint8_t *buf;
	size_t len;
	rpc_request_encode(id, flags, svc, method, &in.base, md, n_md, 0, &buf, &len);
	send_raw(buf, len);
	free(buf);
}

/* A call whose client waits timeout_ms. */
static void send_call_timeout(uint32_t id, const char *svc, const char *method, uint64_t timeout_ms)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	uint8_t *buf;
	size_t len;
	rpc_request_encode(id, 0, svc, method, &in.base, NULL, 0, (int64_t)timeout_ms * 1000000,
	                   &buf, &len);
	send_raw(buf, len);
	free(buf);
}

/* Takes the next frame from what the server sent, pumping as needed. */
static bool next_frame(struct rpc_header *h, uint8_t **data)
{
	static uint8_t frame[RPC_MESSAGE_MAX + RPC_HEADER_SIZE];
	for (int i = 0; i < 2000; i++) {
		if (S.len >= RPC_HEADER_SIZE) {
			rpc_header_decode(S.buf, h);
			if (S.len >= RPC_HEADER_SIZE + h->length) {
				size_t n = RPC_HEADER_SIZE + h->length;
				memcpy(frame, S.buf, n);
				memmove(S.buf, S.buf + n, S.len - n);
				S.len -= n;
				*data = frame + RPC_HEADER_SIZE;
				return true;
			}
		}
		if (pump(1) < 0 && S.len < RPC_HEADER_SIZE)
			return false;
	}
	return false;
}

static int next_status(uint32_t want_id, char *msg, size_t size)
{
	struct rpc_header h;
	uint8_t *data;
	struct err st;
	if (!next_frame(&h, &data))
		return -1;
	if (h.type != RPC_TYPE_RESPONSE || h.stream_id != want_id) {
		printf("    frame type %u stream %u, want a response on %u\n", h.type, h.stream_id,
		       want_id);
		return -2;
	}
	if (rpc_response_decode(data, h.length, NULL, &st, NULL) < 0)
		return -3;
	if (msg)
		str_copy(msg, size, st.msg);
	return st.code;
}

static bool closed_by_server(void)
{
	for (int i = 0; i < 200; i++)
		if (pump(1) < 0)
			return true;
	return false;
}

TEST(rpc_server_health_and_errors)
{
	char msg[512];
	srv_start(NULL, true);
	send_call(1, 0, "kin.v1.Health", "Check", NULL, 0);
	struct rpc_header h;
	uint8_t *data;
	CHECK(next_frame(&h, &data));
	struct err st;
	ProtobufCMessage *out = NULL;
	CHECK_EQ(
	    rpc_response_decode(data, h.length, &kin__v1__check_response__descriptor, &st, &out),
	    0);
	CHECK_EQ(st.code, ERR_OK);
	CHECK(out && ((Kin__V1__CheckResponse *)out)->status ==
	                 KIN__V1__CHECK_RESPONSE__SERVING_STATUS__SERVING);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);

	send_call(3, 0, "kin.v1.Nope", "Check", NULL, 0);
	CHECK_EQ(next_status(3, msg, sizeof(msg)), ERR_UNIMPLEMENTED);
	CHECK(strstr(msg, "kin.v1.Nope") != NULL);
	send_call(5, 0, "kin.v1.Health", "Nope", NULL, 0);
	CHECK_EQ(next_status(5, msg, sizeof(msg)), ERR_UNIMPLEMENTED);
	CHECK(strstr(msg, "Nope") != NULL);
	send_call(7, 0, "test.Svc", "Errno", NULL, 0);
	CHECK_EQ(next_status(7, msg, sizeof(msg)), ERR_NOT_FOUND);
	CHECK_STR(msg, "test.Svc/Errno: No such file or directory");
	/* stream ids: reused, even, zero */
	send_call(7, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(7, NULL, 0), ERR_INVALID_ARGUMENT);
	send_call(10, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(10, NULL, 0), ERR_INVALID_ARGUMENT);
	send_call(0, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(0, NULL, 0), ERR_INVALID_ARGUMENT);
	/* bad flags: answered, the data skipped, the connection goes on */
	send_call(11, 0x3, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(11, NULL, 0), ERR_INVALID_ARGUMENT);
	send_call(13, 0x80, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(13, NULL, 0), ERR_INVALID_ARGUMENT);
	/* remote-open: kin has no client-streaming method */
	send_call(15, RPC_FLAG_REMOTE_OPEN, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(15, NULL, 0), ERR_INVALID_ARGUMENT);
	/* payload that is not a CheckRequest */
	{
		Ttrpc__Request r = TTRPC__REQUEST__INIT;
		uint8_t junk[] = {0xff, 0xff, 0xff};
		r.service = "kin.v1.Health";
		r.method = "Check";
		r.payload = (ProtobufCBinaryData){sizeof(junk), junk};
		uint8_t buf[128];
		size_t n = ttrpc__request__pack(&r, buf + RPC_HEADER_SIZE);
		struct rpc_header hh = {(uint32_t)n, 17, RPC_TYPE_REQUEST, 0};
		rpc_header_encode(&hh, buf);
		send_raw(buf, RPC_HEADER_SIZE + n);
		CHECK_EQ(next_status(17, msg, sizeof(msg)), ERR_INVALID_ARGUMENT);
		CHECK(strstr(msg, "CheckRequest") != NULL);
	}
	/* a Request frame whose data is not a Request */
	{
		uint8_t buf[RPC_HEADER_SIZE + 3] = {0};
		struct rpc_header hh = {3, 19, RPC_TYPE_REQUEST, 0};
		rpc_header_encode(&hh, buf);
		memset(buf + RPC_HEADER_SIZE, 0xff, 3);
		send_raw(buf, sizeof(buf));
		CHECK_EQ(next_status(19, NULL, 0), ERR_INVALID_ARGUMENT);
	}
	/* data on a stream that is not open */
	{
		uint8_t buf[RPC_HEADER_SIZE];
		struct rpc_header hh = {0, 21, RPC_TYPE_DATA, RPC_FLAG_REMOTE_CLOSED};
		rpc_header_encode(&hh, buf);
		send_raw(buf, sizeof(buf));
		CHECK_EQ(next_status(21, msg, sizeof(msg)), ERR_INVALID_ARGUMENT);
	}
	send_call(23, 0, "kin.v1.Health", "Version", NULL, 0);
	CHECK_EQ(next_status(23, NULL, 0), ERR_OK);
	CHECK_EQ(conns(), 1);
	srv_stop();
}

TEST(rpc_server_oversize_refused_without_reading)
{
	srv_start(NULL, true);
	/* Header says 4 MiB + 1: answered at once, before any data is sent. */
	uint8_t hb[RPC_HEADER_SIZE];
	struct rpc_header h = {RPC_MESSAGE_MAX + 1, 1, RPC_TYPE_REQUEST, 0};
	rpc_header_encode(&h, hb);
	send_raw(hb, sizeof(hb));
	char msg[256];
	CHECK_EQ(next_status(1, msg, sizeof(msg)), ERR_RESOURCE_EXHAUSTED);
	CHECK(strstr(msg, "4194305") != NULL);
	/* Then its data is skipped, and the connection serves on. */
	static uint8_t zeros[RPC_MESSAGE_MAX + 1];
	send_raw(zeros, sizeof(zeros));
	send_call(3, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(3, NULL, 0), ERR_OK);
	srv_stop();
}

TEST(rpc_server_garbage_closes)
{
	const char *inputs[] = {
	    "GET / HTTP/1.1\r\nHost: x\r\n\r\n",        /* reserved byte set */
	    "\x00\x00\x00\x00\x00\x00\x00\x01\x09\x00", /* unknown type */
	    "\x00\x00\x00\x00\x00\x00\x00\x01\x02\x00", /* a client's Response */
	    "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00", /* type 0 */
	};
	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
		srv_start(NULL, true);
		send_raw(inputs[i], i == 0 ? strlen(inputs[i]) : 10);
		CHECK(closed_by_server());
		CHECK_EQ(conns(), 0);
		srv_stop();
	}
}

TEST(rpc_server_partial_and_pipelined)
{
	srv_start(NULL, true);
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	uint8_t *buf;
	size_t len;
	rpc_request_encode(1, 0, "kin.v1.Health", "Check", &in.base, NULL, 0, 0, &buf, &len);
	/* byte by byte, the server running in between */
	for (size_t i = 0; i < len; i++) {
		send_raw(buf + i, 1);
		pump(1);
	}
	free(buf);
	CHECK_EQ(next_status(1, NULL, 0), ERR_OK);
	/* 500 requests in one write */
	size_t total = 0;
	static uint8_t many[500 * 64];
	for (uint32_t i = 0; i < 500; i++) {
		rpc_request_encode(3 + 2 * i, 0, "kin.v1.Health", "Check", &in.base, NULL, 0, 0,
		                   &buf, &len);
		memcpy(many + total, buf, len);
		total += len;
		free(buf);
	}
	send_raw(many, total);
	int ok = 0;
	for (uint32_t i = 0; i < 500; i++)
		ok += next_status(3 + 2 * i, NULL, 0) == ERR_OK;
	CHECK_EQ(ok, 500);
	srv_stop();
}

TEST(rpc_server_half_close_answers_then_closes)
{
	srv_start(NULL, true);
	send_call(1, 0, "kin.v1.Health", "Check", NULL, 0);
	send_call(3, 0, "kin.v1.Health", "Version", NULL, 0);
	shutdown(S.fd, SHUT_WR);
	CHECK_EQ(next_status(1, NULL, 0), ERR_OK);
	CHECK_EQ(next_status(3, NULL, 0), ERR_OK);
	CHECK(closed_by_server());
	CHECK_EQ(conns(), 0);
	srv_stop();

	/* A truncated frame before the half-close is dropped with the connection. */
	srv_start(NULL, true);
	send_raw("\x00\x00\x00\x20\x00\x00\x00\x01\x01\x00"
	         "abc",
	         13);
	shutdown(S.fd, SHUT_WR);
	CHECK(closed_by_server());
	CHECK_EQ(conns(), 0);
	srv_stop();
}

TEST(rpc_server_permission_denied)
{
	srv_start(NULL, false);
	char msg[512];
	send_call(1, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(1, msg, sizeof(msg)), ERR_PERMISSION_DENIED);
	CHECK(strstr(msg, "uid 1234") != NULL);
	srv_stop();
}

TEST(rpc_server_inflight_limit_and_cancel)
{
	struct rpc_server_config cfg;
	rpc_server_config_defaults(&cfg);
	cfg.max_inflight = 2;
	srv_start(&cfg, true);
	struct rpc_kv md[] = {{"x-trace", "zone-a/zone-b"}};
	send_call(1, 0, "test.Svc", "Defer", md, 1);
	send_call(3, 0, "test.Svc", "Defer", NULL, 0);
	send_call(5, 0, "test.Svc", "Defer", NULL, 0);
	CHECK_EQ(next_status(5, NULL, 0), ERR_RESOURCE_EXHAUSTED);
	CHECK_EQ(n_kept, 2);
	CHECK_STR(seen_target, "");
	/* a kept call answers later, from outside the connection's handler */
	CHECK_EQ(rpc_call_metadata_count(kept[0]), 1);
	CHECK_STR(rpc_call_metadata(kept[0], "x-trace"), "zone-a/zone-b");
	CHECK_EQ(rpc_call_peer(kept[0])->uid, 1234);
	Kin__V1__CheckResponse out = KIN__V1__CHECK_RESPONSE__INIT;
	CHECK_EQ(rpc_call_reply(kept[0], &out.base), 0);
	CHECK_EQ(next_status(1, NULL, 0), ERR_OK);
	/* the client leaves: the other is cancelled */
	close(S.fd);
	S.fd = -1;
	for (int i = 0; i < 10; i++)
		ev_run_once(S.loop, 1);
	CHECK_EQ(n_cancelled, 1);
	CHECK_EQ(conns(), 0);
	rpc_server_free(S.s);
	api_free(S.api);
	ev_loop_free(S.loop);
}

TEST(rpc_server_free_cancels_calls)
{
	srv_start(NULL, true);
	send_call(1, 0, "test.Svc", "Defer", NULL, 0);
	pump(5);
	CHECK_EQ(n_kept, 1);
	srv_stop();
	CHECK_EQ(n_cancelled, 1);
}

TEST(rpc_server_stream)
{
	srv_start(NULL, true);
	send_call(1, RPC_FLAG_REMOTE_CLOSED, "test.Svc", "Stream", NULL, 0);
	struct rpc_header h;
	uint8_t *data;
	for (uint32_t i = 0; i < 3; i++) {
		CHECK(next_frame(&h, &data));
		CHECK_EQ(h.type, RPC_TYPE_DATA);
		CHECK_EQ(h.flags, 0);
		CHECK_EQ(h.stream_id, 1);
		CHECK_EQ(rpc_header_check(&h, false), 0);
		Kin__V1__VersionResponse *v =
		    kin__v1__version_response__unpack(NULL, h.length, data);
		CHECK(v && v->pid == i);
		if (v)
			kin__v1__version_response__free_unpacked(v, NULL);
	}
	CHECK(next_frame(&h, &data));
	CHECK_EQ(h.type, RPC_TYPE_DATA);
	CHECK_EQ(h.flags, RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_NO_DATA);
	CHECK_EQ(h.length, 0);
	CHECK_EQ(stream_sent, 3);
	/* a unary method cannot stream */
	send_call(3, 0, "test.Svc", "Defer", NULL, 0);
	pump(3);
	Kin__V1__CheckResponse out = KIN__V1__CHECK_RESPONSE__INIT;
	CHECK_EQ(rpc_call_send(kept[0], &out.base), -EINVAL);
	CHECK_EQ(rpc_call_fail(kept[0], ERR_FAILED_PRECONDITION, "cell \"%s\": busy", "web"), 0);
	char msg[128];
	CHECK_EQ(next_status(3, msg, sizeof(msg)), ERR_FAILED_PRECONDITION);
	CHECK_STR(msg, "cell \"web\": busy");
	srv_stop();
}

TEST(rpc_server_slow_reader_bounded)
{
	/* A stream into a client that does not read: sends fail with ENOBUFS
	 * once the queue is full, and the client's next requests wait (the
	 * connection is not read) until it catches up. */
	srv_start(NULL, true);
	send_call(1, RPC_FLAG_REMOTE_CLOSED, "test.Svc", "Flood", NULL, 0);
	for (int i = 0; i < 5; i++)
		ev_run_once(S.loop, 1); /* run the server without reading */
	CHECK_EQ(stream_nobufs, 1);
	CHECK(stream_sent >= 4 && stream_sent < 64);
	CHECK_EQ(rpc_call_close(kept[0], ERR_OK, NULL), 0);
	send_call(3, 0, "kin.v1.Health", "Check", NULL, 0);
	for (int i = 0; i < 5; i++)
		ev_run_once(S.loop, 1);
	struct rpc_server_stats st;
	rpc_server_get_stats(S.s, &st);
	CHECK_EQ(st.calls, 1); /* the Check waits in the socket */
	struct rpc_header h;
	uint8_t *data;
	int frames = 0;
	while (next_frame(&h, &data) && h.type == RPC_TYPE_DATA && !(h.flags & RPC_FLAG_NO_DATA))
		frames++;
	CHECK_EQ(frames, stream_sent);
	CHECK_EQ(h.flags, RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_NO_DATA);
	CHECK_EQ(next_status(3, NULL, 0), ERR_OK);
	CHECK_EQ(conns(), 1);
	srv_stop();
}

static struct rpc_server_stats stats(void)
{
	struct rpc_server_stats st;
	rpc_server_get_stats(S.s, &st);
	return st;
}

TEST(rpc_server_deadline_ends_deferred_call)
{
	srv_start(NULL, true);
	char msg[512];
	uint64_t t0 = now_monotonic_ns();
	send_call_timeout(1, "test.Svc", "Defer", 60);
	send_call_timeout(3, "test.Svc", "Defer", 5000); /* answered in time */
	send_call(5, 0, "test.Svc", "Defer", NULL, 0);   /* no timeout: waits */
	pump(5);
	CHECK_EQ(n_kept, 3);
	CHECK_EQ(rpc_call_reply(kept[1], NULL), 0);
	CHECK_EQ(next_status(3, NULL, 0), ERR_OK);
	/* Others are served while the first waits for its deadline. */
	send_call(7, 0, "kin.v1.Health", "Check", NULL, 0);
	CHECK_EQ(next_status(7, NULL, 0), ERR_OK);
	CHECK_EQ(next_status(1, msg, sizeof(msg)), ERR_DEADLINE_EXCEEDED);
	uint64_t ms = (now_monotonic_ns() - t0) / 1000000;
	CHECK(ms >= 60 && ms < 1000);
	CHECK(strstr(msg, "test.Svc/Defer: deadline exceeded") != NULL);
	CHECK(strstr(msg, "60 ms") != NULL);
	CHECK_EQ(n_cancelled, 1); /* its cancel callback ran, once */
	CHECK_EQ(stats().deadlines_passed, 1);
	CHECK_EQ(stats().inflight, 1);
	/* Nothing more comes: the answered call is not answered again, the
	 * call without a timeout still waits. */
	pump(100);
	CHECK_EQ(S.len, 0);
	CHECK_EQ(n_cancelled, 1);
	CHECK_EQ(rpc_call_reply(kept[2], NULL), 0);
	CHECK_EQ(next_status(5, NULL, 0), ERR_OK);
	CHECK_EQ(stats().inflight, 0);
	srv_stop();
	CHECK_EQ(n_cancelled, 1);
}

TEST(rpc_server_deadline_many_in_any_order)
{
	/* Deadlines given out of order end in their own order, each once. */
	struct rpc_server_config cfg;
	rpc_server_config_defaults(&cfg);
	srv_start(&cfg, true);
	static const int ms[] = {90, 30, 150, 60, 120};
	for (uint32_t i = 0; i < 5; i++)
		send_call_timeout(1 + 2 * i, "test.Svc", "Defer", (uint64_t)ms[i]);
	uint32_t want[] = {3, 7, 1, 9, 5};
	for (int i = 0; i < 5; i++)
		CHECK_EQ(next_status(want[i], NULL, 0), ERR_DEADLINE_EXCEEDED);
	CHECK_EQ(n_cancelled, 5);
	CHECK_EQ(stats().inflight, 0);
	/* A connection closing first takes its deadlines with it. */
	send_call_timeout(11, "test.Svc", "Defer", 50);
	pump(3);
	close(S.fd);
	S.fd = -1;
	for (int i = 0; i < 100; i++)
		ev_run_once(S.loop, 1);
	CHECK_EQ(n_cancelled, 6);
	CHECK_EQ(stats().deadlines_passed, 5);
	rpc_server_free(S.s);
	api_free(S.api);
	ev_loop_free(S.loop);
}

TEST(rpc_server_frame_time_limit)
{
	struct rpc_server_config cfg;
	rpc_server_config_defaults(&cfg);
	cfg.frame_timeout_ms = 100;
	srv_start(&cfg, true);
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	uint8_t *buf;
	size_t len;
	/* Idle between frames: never cut. */
	for (int i = 0; i < 200; i++)
		ev_run_once(S.loop, 1);
	CHECK_EQ(conns(), 1);
	/* Frames trickling in, each within the limit though all together take
	 * longer: kept. */
	uint32_t id = 1;
	for (int k = 0; k < 4; k++, id += 2) {
		rpc_request_encode(id, 0, "kin.v1.Health", "Check", &in.base, NULL, 0, 0, &buf,
		                   &len);
		send_raw(buf, len / 2);
		uint64_t until = now_monotonic_ns() + 60000000;
		while (now_monotonic_ns() < until)
			ev_run_once(S.loop, 5);
		send_raw(buf + len / 2, len - len / 2);
		free(buf);
		CHECK_EQ(next_status(id, NULL, 0), ERR_OK);
	}
	CHECK_EQ(conns(), 1);
	/* Half a frame, then nothing: cut after the limit. */
	rpc_request_encode(id, 0, "kin.v1.Health", "Check", &in.base, NULL, 0, 0, &buf, &len);
	send_raw(buf, len / 2);
	free(buf);
	uint64_t t0 = now_monotonic_ns();
	CHECK(closed_by_server() || closed_by_server());
	uint64_t ms = (now_monotonic_ns() - t0) / 1000000;
	CHECK(ms >= 90 && ms < 1000);
	for (int i = 0; i < 5; i++)
		ev_run_once(S.loop, 1); /* its handler frees it */
	CHECK_EQ(conns(), 0);
	CHECK_EQ(stats().frame_timeouts, 1);
	srv_stop();

	/* The data of a refused (oversize) frame is timed too. */
	srv_start(&cfg, true);
	struct rpc_header h = {RPC_MESSAGE_MAX + 1, 1, RPC_TYPE_REQUEST, 0};
	uint8_t hb[RPC_HEADER_SIZE];
	rpc_header_encode(&h, hb);
	send_raw(hb, sizeof(hb));
	send_raw("abc", 3);
	CHECK_EQ(next_status(1, NULL, 0), ERR_RESOURCE_EXHAUSTED);
	CHECK(closed_by_server() || closed_by_server());
	CHECK_EQ(stats().frame_timeouts, 1);
	srv_stop();
}

/* rpc/ knows no route grammar: without the owner's every name is one word;
 * with api/'s, "vm/NAME" is a name and "vm" is reserved. */
TEST(rpc_route_names_are_the_owners)
{
	struct ev_loop *loop;
	struct rpc_server *s;
	CHECK_EQ(ev_loop_new(&loop), 0);
	CHECK_EQ(rpc_server_new(loop, NULL, &s), 0);
	CHECK_EQ(rpc_route_add(s, "vm/db", -1, 0), -EINVAL);
	CHECK_EQ(rpc_route_add(s, "vm", -1, 0), 0);
	rpc_route_remove(s, "vm", "test");
	CHECK_EQ(rpc_route_names_set(s, &api_route_names), 0);
	CHECK_EQ(rpc_route_add(s, "vm", -1, 0), -EINVAL);
	CHECK_EQ(rpc_route_add(s, "vm/db", -1, 0), 0);
	CHECK_EQ(rpc_route_add(s, "vm/db/x", -1, 0), -EINVAL);
	CHECK_EQ(rpc_route_add(s, "pod1", -1, 0), 0);
	CHECK_EQ(api_route_names.hop_words("vm/db/inner"), 2);
	CHECK_EQ(api_route_names.hop_words("pod1/vm/db"), 1);
	rpc_server_free(s);
	ev_loop_free(loop);
}
