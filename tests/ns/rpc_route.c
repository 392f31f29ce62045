/* rpc-route: a parent kin's routing, driven by tests/ns/route.test.sh.
 *   parent SOCK KIN   serves SOCK with routes: kid (a real `KIN init
 *                     --rpc-fd 3` daemon), mid (`rpc-route mid KIN`: a
 *                     test stream service and its own route kid), slow
 *                     (never answers; logs each Route/Cancel it gets),
 *                     gone (its child end closed), evil1..4 (a child that
 *                     answers with garbage, an oversize frame, a bad
 *                     Response, a stray Data frame then garbage)
 *   mid KIN           the same loop serving fd 3 (the parent's channel)
 *   count SOCK TARGET N       test.Stream/Count through TARGET: N messages
 *   cancel SOCK TARGET        open test.Stream/Follow, read one, hang up;
 *                             then poll test.Stream/Active until it is 0
 *   flood SOCK TARGET CONNS N CONNS connections with N calls each in
 *                             flight; prints how many got RESOURCE_EXHAUSTED
 *   deadline SOCK TARGET|- SERVICE METHOD MS   one call with a timeout of
 *                             MS, waiting MS + 5 s for the server's answer;
 *                             prints the code, the time it took and the
 *                             message; exit 0 on DEADLINE_EXCEEDED within
 *                             [MS, MS + 1 s)
 * Both serving roles also answer test.Stall/Wait never (the call is kept
 * with a cancel callback that says so on stderr); slow prints the timeout
 * each request it gets carries.
 * Exit 0 on the expected outcome; lines on stdout say what was seen. */
#include "rpc/rpc-int.h"
#include "api/api-int.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

static struct rpc_server *server;
static struct ev_loop *loop_;
static unsigned active_follows;

/* ---- the test stream service ---------------------------------------------------- */

static int t_count(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	const Kin__V1__CancelRequest *m = (const Kin__V1__CancelRequest *)in;
	(void)data;
	for (uint32_t i = 0; i < m->stream_id; i++) {
		Kin__V1__VersionResponse v = KIN__V1__VERSION_RESPONSE__INIT;
		v.pid = i;
		v.version = (char *)"relayed";
		if (rpc_call_send(call, &v.base) < 0)
			return rpc_call_close(call, ERR_RESOURCE_EXHAUSTED, "output full at %u", i);
	}
	return rpc_call_close(call, ERR_OK, NULL);
}

static void follow_gone(struct rpc_call *call, void *data)
{
	(void)call, (void)data;
	active_follows--;
	fprintf(stderr, "rpc-route: a follower left\n");
}

static int t_follow(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	Kin__V1__VersionResponse v = KIN__V1__VERSION_RESPONSE__INIT;
	(void)in, (void)data;
	v.version = (char *)"first";
	rpc_call_send(call, &v.base);
	active_follows++;
	rpc_call_on_cancel(call, follow_gone, NULL);
	return 0;
}

static int t_active(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	Kin__V1__CancelResponse out = KIN__V1__CANCEL_RESPONSE__INIT;
	(void)in, (void)data;
	out.found = active_follows > 0;
	return rpc_call_reply(call, &out.base);
}

static const char *role_name = "parent";

static void stall_cancelled(struct rpc_call *call, void *data)
{
	(void)call, (void)data;
	fprintf(stderr, "rpc-route %s: a stall was cancelled\n", role_name);
}

static int t_stall(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	(void)in, (void)data;
	rpc_call_on_cancel(call, stall_cancelled, NULL);
	return 0;
}

static const struct rpc_method test_methods[] = {
    {"test.Stall", "Wait", &kin__v1__cancel_request__descriptor, t_stall, 0, NULL},
    {"test.Stream", "Count", &kin__v1__cancel_request__descriptor, t_count,
     RPC_METHOD_SERVER_STREAM, NULL},
    {"test.Stream", "Follow", &kin__v1__cancel_request__descriptor, t_follow,
     RPC_METHOD_SERVER_STREAM, NULL},
    {"test.Stream", "Active", &kin__v1__cancel_request__descriptor, t_active, 0, NULL},
};

/* ---- fake children --------------------------------------------------------------- */

struct fake {
	struct ev_source src;
	const char *name;
	int mode; /* 0 slow, 1..4 evil */
};

static void fake_on_event(struct ev_source *src, uint32_t events)
{
	struct fake *f = src->data;
	uint8_t buf[65536];
	(void)events;
	ssize_t n = read(src->fd, buf, sizeof(buf));
	if (n <= 0) {
		ev_del(loop_, src);
		close(src->fd);
		src->fd = -1;
		return;
	}
	if (f->mode == 0) {
		/* Count cancels: each is a Request naming kin.v1.Route/Cancel. */
		for (ssize_t i = 0; i + 6 <= n; i++)
			if (memcmp(buf + i, "Cancel", 6) == 0)
				printf("slow: cancel seen\n");
		/* The timeouts relayed (whole frames; a socketpair keeps small
		 * writes together). */
		for (size_t pos = 0; pos + RPC_HEADER_SIZE <= (size_t)n;) {
			struct rpc_header h;
			struct rpc_request req;
			rpc_header_decode(buf + pos, &h);
			if (h.length > (size_t)n - pos - RPC_HEADER_SIZE)
				break;
			if (rpc_request_decode(buf + pos + RPC_HEADER_SIZE, h.length, &req) == 0) {
				if (req.timeout_ns)
					printf("slow: %s/%s timeout %lld ms\n", req.service,
					       req.method, (long long)(req.timeout_ns / 1000000));
				rpc_request_done(&req);
			}
			pos += RPC_HEADER_SIZE + h.length;
		}
		fflush(stdout);
		return;
	}
	struct rpc_header h;
	rpc_header_decode(buf, &h);
	uint8_t out[64];
	size_t len = 0;
	struct rpc_header o = {.stream_id = h.stream_id, .type = RPC_TYPE_RESPONSE};
	switch (f->mode) {
	case 1: /* garbage: the reserved length byte set */
		memset(out, 0xff, 20);
		len = 20;
		break;
	case 2: /* a frame over 4 MiB */
		o.length = RPC_MESSAGE_MAX + 1;
		rpc_header_encode(&o, out);
		len = RPC_HEADER_SIZE;
		break;
	case 3: /* a Response that is not protobuf */
		o.length = 5;
		rpc_header_encode(&o, out);
		memcpy(out + RPC_HEADER_SIZE, "\xff\xff\xff\xff\xff", 5);
		len = RPC_HEADER_SIZE + 5;
		break;
	case 4: /* Data on a stream nobody opened, then a Response of type 9 */
		o.type = RPC_TYPE_DATA;
		o.stream_id = 999;
		rpc_header_encode(&o, out);
		o.type = 9;
		o.stream_id = h.stream_id;
		rpc_header_encode(&o, out + RPC_HEADER_SIZE);
		len = 2 * RPC_HEADER_SIZE;
		break;
	}
	(void)!write(src->fd, out, len);
}

static int add_fake(struct ev_loop *loop, const char *name, int mode)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	int r = rpc_route_add(server, name, sv[0], 0);
	close(sv[0]);
	if (r < 0)
		return r;
	static struct fake fakes[8];
	static size_t n_fakes;
	if (n_fakes == ARRAY_SIZE(fakes))
		return -ENOSPC;
	struct fake *f = &fakes[n_fakes++];
	f->name = name;
	f->mode = mode;
	f->src = (struct ev_source){.fd = sv[1], .fn = fake_on_event, .data = f};
	return ev_add(loop, &f->src, EPOLLIN);
}

/* A child process serving RPC on fd 3; route name over our end. */
static int add_child(const char *name, char *const argv[])
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* the test's kids never outlive it */
		dup2(sv[1], 3);
		execv(argv[0], argv);
		_exit(127);
	}
	close(sv[1]);
	int r = rpc_route_add(server, name, sv[0], 0);
	close(sv[0]);
	return r;
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int serve(const char *sock, const char *kin, const char *self)
{
	struct ev_loop *loop;
	/* The route grammar is the owner's, as init gives kin's server. */
	if (ev_loop_new(&loop) < 0 || rpc_server_new(loop, NULL, &server) < 0 ||
	    rpc_route_names_set(server, &api_route_names) < 0)
		return 1;
	loop_ = loop;
	role_name = sock ? "parent" : "mid";
	static const struct api_service *const health[] = {&api_service_health};
	struct api_config acfg = {
	    .rpc = server, .loop = loop, .health = {.version = "test", .role = role_name}};
	struct api *api;
	api_start(&acfg, health, ARRAY_SIZE(health), &api);
	rpc_server_register(server, test_methods, ARRAY_SIZE(test_methods));
	if (sock) {
		if (rpc_server_listen_unix(server, sock) < 0)
			return 1;
	} else {
		struct rpc_peer peer = {.transport = RPC_TRANSPORT_UNIX, .allowed = true};
		if (rpc_server_add_conn(server, 3, &peer) < 0)
			return 1;
	}
	static char a_init[] = "init", a_sock[] = "--socket", a_none[] = "none",
	            a_fd[] = "--rpc-fd", a_3[] = "3", a_log[] = "--log-level", a_warn[] = "warn",
	            a_mid[] = "mid";
	char *kid[] = {(char *)kin, a_init, a_sock, a_none, a_fd, a_3, a_log, a_warn, NULL};
	char *mid[] = {(char *)self, a_mid, (char *)kin, NULL};
	int r = add_child("kid", kid);
	if (sock && r == 0)
		r = add_child("mid", mid);
	if (sock && r == 0) {
		r = add_fake(loop, "slow", 0);
		for (int i = 1; i <= 4 && r == 0; i++) {
			static char names[4][8];
			snprintf(names[i - 1], sizeof(names[i - 1]), "evil%d", i);
			r = add_fake(loop, names[i - 1], i);
		}
		int sv[2];
		if (r == 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
			r = rpc_route_add(server, "gone", sv[0], 0);
			close(sv[0]);
			close(sv[1]);
		}
		if (r == 0 && rpc_route_add(server, "kid", 0, 0) != -EEXIST)
			r = -1;
		if (r == 0 && rpc_route_add(server, "vm", 0, 0) != -EINVAL)
			r = -2;
	}
	if (r < 0) {
		fprintf(stderr, "rpc-route: setting up routes: %d\n", r);
		return 1;
	}
	signal(SIGTERM, on_term);
	signal(SIGPIPE, SIG_IGN);
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		ev_run_once(loop, 200);
	rpc_server_free(server);
	api_free(api);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	return 0;
}

/* ---- clients ------------------------------------------------------------------------ */

static int count_main(const char *sock, const char *target, uint32_t n)
{
	Kin__V1__CancelRequest in = KIN__V1__CANCEL_REQUEST__INIT;
	struct rpc_kv md[] = {{RPC_TARGET_KEY, target}};
	struct rpc_stream *s;
	struct err st;
	in.stream_id = n;
	int r = rpc_client_stream_open(sock, 5000, "test.Stream", "Count", &in.base, md, 1, &s);
	if (r < 0)
		return printf("open: %s\n", strerror(-r)), 1;
	uint32_t got = 0;
	for (;;) {
		ProtobufCMessage *m;
		r = rpc_client_stream_next(s, &kin__v1__version_response__descriptor, &m, &st);
		if (r <= 0)
			break;
		const Kin__V1__VersionResponse *v = (const Kin__V1__VersionResponse *)m;
		if (v->pid != got || strcmp(v->version, "relayed") != 0) {
			printf("message %u out of order (pid %u)\n", got, v->pid);
			return 1;
		}
		got++;
		protobuf_c_message_free_unpacked(m, NULL);
	}
	rpc_client_stream_free(s);
	printf("%u messages, end %s\n", got, r < 0 ? strerror(-r) : err_code_name(st.code));
	return r == 0 && st.code == ERR_OK && got == n ? 0 : 1;
}

static int active(const char *sock, const char *target)
{
	Kin__V1__CancelRequest in = KIN__V1__CANCEL_REQUEST__INIT;
	struct rpc_kv md[] = {{RPC_TARGET_KEY, target}};
	struct rpc_client *c;
	struct err st;
	ProtobufCMessage *out;
	if (rpc_client_connect(sock, 5000, &c) < 0)
		return -1;
	rpc_client_set_metadata(c, md, 1);
	int r = rpc_client_call(c, "test.Stream", "Active", &in.base,
	                        &kin__v1__cancel_response__descriptor, &st, &out);
	rpc_client_free(c);
	if (r < 0 || st.code != ERR_OK)
		return -1;
	r = ((Kin__V1__CancelResponse *)out)->found;
	protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

static int cancel_main(const char *sock, const char *target)
{
	Kin__V1__CancelRequest in = KIN__V1__CANCEL_REQUEST__INIT;
	struct rpc_kv md[] = {{RPC_TARGET_KEY, target}};
	struct rpc_stream *s;
	struct err st;
	ProtobufCMessage *m;
	int r = rpc_client_stream_open(sock, 5000, "test.Stream", "Follow", &in.base, md, 1, &s);
	if (r == 0)
		r = rpc_client_stream_next(s, &kin__v1__version_response__descriptor, &m, &st);
	if (r != 1)
		return printf("no first message: %d\n", r), 1;
	protobuf_c_message_free_unpacked(m, NULL);
	int before = active(sock, target);
	rpc_client_stream_free(s); /* the caller goes away */
	for (int i = 0; i < 200; i++) {
		if (active(sock, target) == 0) {
			printf("follower active before: %d, cancelled in the child after %d ms\n",
			       before, i * 10);
			return before == 1 ? 0 : 1;
		}
		usleep(10000);
	}
	printf("the child's follower is still active 2 s after the caller left\n");
	return 1;
}

static int flood_main(const char *sock, const char *target, int conns, int n)
{
	struct rpc_kv md[] = {{RPC_TARGET_KEY, target}};
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	int fds[64], exhausted = 0, other = 0;
	struct rpc_address a;
	if (conns > 64 || rpc_address_parse(sock, &a) < 0)
		return 2;
	for (int c = 0; c < conns; c++) {
		fds[c] = rpc_address_connect(&a, 5000);
		if (fds[c] < 0)
			return printf("connect: %s\n", strerror(-fds[c])), 1;
		for (int i = 0; i < n; i++) {
			uint8_t *buf;
			size_t len;
			rpc_request_encode(1 + 2 * (uint32_t)i, 0, "kin.v1.Health", "Check",
			                   &in.base, md, 1, 0, &buf, &len);
			(void)!write_all(fds[c], buf, len);
			free(buf);
		}
	}
	/* Answers come only for the refused calls; the rest wait forever. */
	for (int c = 0; c < conns; c++) {
		struct pollfd p = {.fd = fds[c], .events = POLLIN};
		while (poll(&p, 1, 300) == 1) {
			uint8_t hb[RPC_HEADER_SIZE], data[4096];
			struct rpc_header h;
			if (read(fds[c], hb, sizeof(hb)) != (ssize_t)sizeof(hb))
				break;
			rpc_header_decode(hb, &h);
			if (h.length > sizeof(data) ||
			    read(fds[c], data, h.length) != (ssize_t)h.length)
				break;
			struct err st;
			rpc_response_decode(data, h.length, NULL, &st, NULL);
			if (st.code == ERR_RESOURCE_EXHAUSTED)
				exhausted++;
			else
				other++;
		}
	}
	printf("%d RESOURCE_EXHAUSTED, %d other answers\n", exhausted, other);
	for (int c = 0; c < conns; c++)
		close(fds[c]);
	return 0;
}

static int deadline_main(const char *sock, const char *target, const char *service,
                         const char *method, uint32_t ms)
{
	Kin__V1__CancelRequest in = KIN__V1__CANCEL_REQUEST__INIT;
	struct rpc_kv md[] = {{RPC_TARGET_KEY, target}};
	bool routed = strcmp(target, "-") != 0;
	struct rpc_address a;
	uint8_t *buf;
	size_t len;
	if (rpc_address_parse(sock, &a) < 0 ||
	    rpc_request_encode(1, 0, service, method, &in.base, md, routed ? 1 : 0,
	                       (int64_t)ms * 1000000, &buf, &len) < 0)
		return 2;
	_cleanup_close_ int fd = rpc_address_connect(&a, 5000);
	if (fd < 0)
		return printf("connect: %s\n", strerror(-fd)), 1;
	uint64_t t0 = now_monotonic_ns();
	int r = write_all(fd, buf, len);
	free(buf);
	struct rpc_header h;
	uint8_t *data = NULL;
	if (r == 0)
		r = rpc_client_read_frame(fd, t0 + ((uint64_t)ms + 5000) * 1000000, true, &h,
		                          &data);
	uint64_t took = (now_monotonic_ns() - t0) / 1000000;
	if (r < 0)
		return printf("no answer after %llu ms: %s\n", (unsigned long long)took,
		              strerror(-r)),
		       1;
	struct err st;
	r = rpc_response_decode(data, h.length, NULL, &st, NULL);
	free(data);
	if (r < 0 || h.type != RPC_TYPE_RESPONSE || h.stream_id != 1)
		return printf("not a response on stream 1\n"), 1;
	printf("%s after %llu ms: %s\n", err_code_name(st.code), (unsigned long long)took, st.msg);
	return st.code == ERR_DEADLINE_EXCEEDED && took >= ms && took < ms + 1000 ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint32_t n;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "parent") == 0)
		return serve(argv[2], argv[3], argv[0]);
	if (argc == 3 && strcmp(argv[1], "mid") == 0)
		return serve(NULL, argv[2], argv[0]);
	if (argc == 5 && strcmp(argv[1], "count") == 0 && str_to_u32(argv[4], &n) == 0)
		return count_main(argv[2], argv[3], n);
	if (argc == 4 && strcmp(argv[1], "cancel") == 0)
		return cancel_main(argv[2], argv[3]);
	if (argc == 6 && strcmp(argv[1], "flood") == 0)
		return flood_main(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && strcmp(argv[1], "deadline") == 0 && str_to_u32(argv[6], &n) == 0)
		return deadline_main(argv[2], argv[3], argv[4], argv[5], n);
	fprintf(stderr, "usage: see tests/ns/rpc_route.c\n");
	return 2;
}
