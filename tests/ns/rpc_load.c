/* rpc-load: drives a running kin's RPC socket for tests/ns/rpc.test.sh.
 *   load SOCKET CONNS REQS   CONNS connections at once, each making REQS
 *                            Health.Check calls one after the other (all
 *                            from one epoll loop); exit 0 only if every
 *                            call answered OK on its own stream
 *   bad SOCKET               hostile clients (garbage, truncated frames,
 *                            oversize lengths, half-close, reset, idle)
 *                            while a good client keeps calling; exit 0 if
 *                            each hostile one got what it deserved and the
 *                            good one never failed
 *   slow SOCKET LIMIT_MS     half a frame, and part of a header, then
 *                            nothing: each must be cut after about
 *                            LIMIT_MS (kin.rpc.frame-timeout=) while a good
 *                            client keeps calling and an idle connection
 *                            (between frames) stays open and answers
 * Prints one line of figures and, on failure, what went wrong. */
#include "rpc/rpc-int.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

static const char *sock_path;

static int dial(bool nonblock)
{
	struct rpc_address a;
	if (rpc_address_parse(sock_path, &a) < 0)
		return -EINVAL;
	for (int tries = 0; tries < 500; tries++) {
		int fd = rpc_address_connect(&a, 5000);
		if (fd >= 0) {
			if (nonblock)
				fcntl(fd, F_SETFL, O_NONBLOCK);
			return fd;
		}
		if (fd != -EAGAIN)
			return fd;
		usleep(2000); /* backlog full: the server is accepting */
	}
	return -EAGAIN;
}

static size_t check_frame(uint32_t id, uint8_t *buf)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	uint8_t *p;
	size_t len;
	if (rpc_request_encode(id, 0, "kin.v1.Health", "Check", &in.base, NULL, 0, 0, &p, &len) < 0)
		return 0;
	memcpy(buf, p, len);
	free(p);
	return len;
}

/* ---- load ---------------------------------------------------------------- */

struct lconn {
	int fd;
	uint32_t next_id;
	int done;
	uint8_t in[256];
	size_t in_len;
};

static int load(int nconns, int nreqs)
{
	struct lconn *cs = calloc((size_t)nconns, sizeof(*cs));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	long ok = 0, failed = 0, finished = 0;
	uint64_t t0 = now_monotonic_ns();
	uint8_t req[256];

	for (int i = 0; i < nconns; i++) {
		cs[i].fd = dial(true);
		if (cs[i].fd < 0) {
			fprintf(stderr, "connection %d: %s\n", i, strerror(-cs[i].fd));
			free(cs);
			return 1;
		}
		cs[i].next_id = 1;
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	/* Every connection sends its first call; each answer sends the next. */
	for (int i = 0; i < nconns; i++) {
		size_t n = check_frame(cs[i].next_id, req);
		if (send(cs[i].fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
			failed++;
	}
	struct epoll_event evs[256];
	while (finished < nconns) {
		int n = epoll_wait(ep, evs, 256, 10000);
		if (n <= 0) {
			fprintf(stderr, "no answer for 10 s (%ld ok, %ld failed)\n", ok, failed);
			return 1;
		}
		for (int e = 0; e < n; e++) {
			struct lconn *c = &cs[evs[e].data.u32];
			ssize_t r = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, 0);
			if (r <= 0) {
				fprintf(stderr, "connection closed by kin after %d calls\n",
				        c->done);
				failed += nreqs - c->done;
				c->done = nreqs;
				finished++;
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				continue;
			}
			c->in_len += (size_t)r;
			while (c->in_len >= RPC_HEADER_SIZE) {
				struct rpc_header h;
				rpc_header_decode(c->in, &h);
				if (c->in_len < RPC_HEADER_SIZE + h.length)
					break;
				struct err st;
				ProtobufCMessage *out = NULL;
				int d = rpc_response_decode(c->in + RPC_HEADER_SIZE, h.length,
				                            &kin__v1__check_response__descriptor,
				                            &st, &out);
				bool good = d == 0 && h.type == RPC_TYPE_RESPONSE &&
				            h.stream_id == c->next_id && st.code == ERR_OK && out &&
				            ((Kin__V1__CheckResponse *)out)->status ==
				                KIN__V1__CHECK_RESPONSE__SERVING_STATUS__SERVING;
				if (out)
					protobuf_c_message_free_unpacked(out, NULL);
				if (good)
					ok++;
				else {
					failed++;
					if (failed < 5)
						fprintf(
						    stderr,
						    "bad answer: stream %u (want %u) code %d %s\n",
						    h.stream_id, c->next_id, st.code, st.msg);
				}
				size_t used = RPC_HEADER_SIZE + h.length;
				memmove(c->in, c->in + used, c->in_len - used);
				c->in_len -= used;
				c->done++;
				c->next_id += 2;
				if (c->done == nreqs) {
					finished++;
					close(c->fd);
					c->fd = -1;
					break;
				}
				size_t len = check_frame(c->next_id, req);
				if (send(c->fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
					failed++;
			}
		}
	}
	double secs = (double)(now_monotonic_ns() - t0) / 1e9;
	printf("load: %d connections x %d calls: %ld ok, %ld failed in %.2f s (%.0f calls/s)\n",
	       nconns, nreqs, ok, failed, secs, (double)ok / secs);
	for (int i = 0; i < nconns; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
	close(ep);
	return failed == 0 && ok == (long)nconns * nreqs ? 0 : 1;
}

/* ---- bad ------------------------------------------------------------------- */

static int failures;
#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "bad: " __VA_ARGS__);                                      \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Waits until the server closes fd (recv returns 0 or an error). */
static bool closed_within(int fd, int ms)
{
	uint8_t buf[4096];
	uint64_t end = now_monotonic_ns() + (uint64_t)ms * 1000000;
	while (now_monotonic_ns() < end) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 50) <= 0)
			continue;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return true;
	}
	return false;
}

/* Reads one frame (blocking, 5 s) and returns its status code, or -1. */
static int read_status(int fd, uint32_t *ret_id)
{
	uint8_t hb[RPC_HEADER_SIZE];
	struct rpc_header h;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0;
	while (got < sizeof(hb)) {
		if (poll(&p, 1, 5000) <= 0)
			return -1;
		ssize_t n = recv(fd, hb + got, sizeof(hb) - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	rpc_header_decode(hb, &h);
	if (h.length > 65536)
		return -1;
	uint8_t *data = malloc(h.length + 1);
	for (got = 0; got < h.length;) {
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = recv(fd, data + got, h.length - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	struct err st;
	int r = got == h.length && rpc_response_decode(data, h.length, NULL, &st, NULL) == 0
	            ? st.code
	            : -1;
	free(data);
	if (ret_id)
		*ret_id = h.stream_id;
	return r;
}

static uint32_t good_id = 1;
static int good_fd = -1;
static void good_call(const char *when)
{
	uint8_t req[256];
	size_t n = check_frame(good_id, req);
	uint32_t id;
	EXPECT(send(good_fd, req, n, MSG_NOSIGNAL) == (ssize_t)n, "good client: send %s", when);
	int code = read_status(good_fd, &id);
	EXPECT(code == ERR_OK && id == good_id, "good client: call %s: code %d", when, code);
	good_id += 2;
}

static int bad(void)
{
	uint8_t req[256];
	good_fd = dial(false);
	if (good_fd < 0) {
		fprintf(stderr, "cannot connect: %s\n", strerror(-good_fd));
		return 1;
	}
	good_call("first");

	/* An idle client that never sends: must not hold anyone up. */
	int idle = dial(false);

	/* Garbage: closed. */
	for (int i = 0; i < 20; i++) {
		int fd = dial(false);
		char junk[64];
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (char)(0x80 | (i * 31 + (int)k * 7));
		send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
		EXPECT(closed_within(fd, 3000), "garbage %d: connection left open", i);
		close(fd);
	}
	good_call("after garbage");
	{
		int fd = dial(false);
		const char *http = "GET / HTTP/1.1\r\nHost: kin\r\n\r\n";
		send(fd, http, strlen(http), MSG_NOSIGNAL);
		EXPECT(closed_within(fd, 3000), "HTTP request: connection left open");
		close(fd);
	}

	/* Oversize length: RESOURCE_EXHAUSTED on its stream, nothing allocated. */
	{
		int fd = dial(false);
		uint8_t hb[RPC_HEADER_SIZE];
		struct rpc_header h = {RPC_MESSAGE_MAX + 1, 1, RPC_TYPE_REQUEST, 0};
		rpc_header_encode(&h, hb);
		send(fd, hb, sizeof(hb), MSG_NOSIGNAL);
		uint32_t id;
		int code = read_status(fd, &id);
		EXPECT(code == ERR_RESOURCE_EXHAUSTED && id == 1, "oversize: code %d", code);
		close(fd);
	}
	good_call("after oversize");

	/* Truncated frames, then the client goes away: closed, nothing left. */
	for (int i = 0; i < 20; i++) {
		int fd = dial(false);
		size_t n = check_frame(1, req);
		send(fd, req, n / 2 + (size_t)i % 3, MSG_NOSIGNAL);
		if (i % 2)
			shutdown(fd, SHUT_WR); /* half-close mid-frame */
		else
			close(fd); /* gone */
		if (i % 2) {
			EXPECT(closed_within(fd, 3000), "truncated %d: connection left open", i);
			close(fd);
		}
	}
	good_call("after truncated frames");

	/* Half-close after whole requests: every answer, then the close. */
	{
		int fd = dial(false);
		size_t n1 = check_frame(1, req);
		size_t n2 = check_frame(3, req + n1);
		send(fd, req, n1 + n2, MSG_NOSIGNAL);
		shutdown(fd, SHUT_WR);
		uint32_t id1 = 0, id2 = 0;
		int c1 = read_status(fd, &id1), c2 = read_status(fd, &id2);
		EXPECT(c1 == ERR_OK && c2 == ERR_OK && id1 == 1 && id2 == 3,
		       "half-close: answers %d/%u %d/%u", c1, id1, c2, id2);
		EXPECT(closed_within(fd, 3000), "half-close: connection left open");
		close(fd);
	}

	/* Reset: requests sent, the client closes without reading. */
	for (int i = 0; i < 50; i++) {
		int fd = dial(false);
		struct linger lg = {.l_onoff = 1, .l_linger = 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		for (uint32_t k = 0; k < 20; k++) {
			size_t n = check_frame(1 + 2 * k, req);
			send(fd, req, n, MSG_NOSIGNAL);
		}
		close(fd);
	}
	good_call("after resets");

	/* A client that asks and never reads, many times over: bounded, cut or
	 * held back, never holding the others. */
	{
		int fd = dial(true);
		uint32_t id = 1;
		uint64_t end = now_monotonic_ns() + 2000000000ull;
		long sent = 0;
		while (now_monotonic_ns() < end) {
			size_t one = check_frame(id, req);
			ssize_t w = send(fd, req, one, MSG_NOSIGNAL);
			if (w < 0 && errno == EAGAIN) {
				good_call("while a client does not read");
				usleep(1000);
				if (sent > 100000)
					break;
				continue;
			}
			if (w < 0)
				break;
			sent++;
			id += 2;
		}
		good_call("after the non-reader");
		close(fd);
	}
	if (idle >= 0) {
		good_call("with an idle client");
		close(idle);
	}
	good_call("last");
	close(good_fd);
	printf("bad: %d failures; the good client made %u calls\n", failures, (good_id - 1) / 2);
	return failures ? 1 : 0;
}

/* ---- slow ------------------------------------------------------------------ */

/* ms until fd is closed by the server (-1: still open after max_ms); the
 * good client calls every 100 ms meanwhile. */
static long cut_after(int fd, uint64_t t0, long max_ms)
{
	uint8_t buf[256];
	for (;;) {
		long ms = (long)((now_monotonic_ns() - t0) / 1000000);
		if (ms > max_ms)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) == 1) {
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				return (long)((now_monotonic_ns() - t0) / 1000000);
		}
		good_call("while a slow client is timed");
	}
}

static int slow(long limit)
{
	uint8_t req[256];
	good_fd = dial(false);
	int idle = dial(false), half = dial(false), head = dial(false);
	if (good_fd < 0 || idle < 0 || half < 0 || head < 0) {
		fprintf(stderr, "cannot connect\n");
		return 1;
	}
	good_call("first");
	size_t n = check_frame(1, req);
	uint64_t t0 = now_monotonic_ns();
	EXPECT(send(half, req, n / 2, MSG_NOSIGNAL) == (ssize_t)(n / 2), "half: send");
	EXPECT(send(head, req, 5, MSG_NOSIGNAL) == 5, "head: send");
	long t_half = cut_after(half, t0, limit + 3000);
	long t_head = cut_after(head, t0, limit + 3000);
	EXPECT(t_half >= limit - 50 && t_half < limit + 1500, "half a frame: cut after %ld ms",
	       t_half);
	EXPECT(t_head >= limit - 50 && t_head < limit + 1500, "part of a header: cut after %ld ms",
	       t_head);
	/* The idle one, older than the limit by now, still answers. */
	int saved = good_fd;
	uint32_t saved_id = good_id;
	good_fd = idle;
	good_id = 1;
	good_call("on the idle connection");
	good_fd = saved;
	good_id = saved_id;
	good_call("last");
	printf("slow: half a frame cut after %ld ms, part of a header after %ld ms; the idle "
	       "connection answered; %d failures, %u good calls\n",
	       t_half, t_head, failures, (good_id - 1) / 2);
	close(idle);
	close(half);
	close(head);
	close(good_fd);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (argc == 5 && strcmp(argv[1], "load") == 0) {
		sock_path = argv[2];
		return load(atoi(argv[3]), atoi(argv[4]));
	}
	if (argc == 3 && strcmp(argv[1], "bad") == 0) {
		sock_path = argv[2];
		return bad();
	}
	if (argc == 4 && strcmp(argv[1], "slow") == 0) {
		sock_path = argv[2];
		return slow(atol(argv[3]));
	}
	fprintf(stderr, "usage: rpc-load load SOCKET CONNS REQS | bad SOCKET | slow SOCKET MS\n");
	return 2;
}
