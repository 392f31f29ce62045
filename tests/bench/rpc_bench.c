/* rpc_bench: one ttrpc client for every server measured, so kin and Go's
 * ttrpc see the very same bytes. Standalone (raw sockets, the tiny
 * Request hand-encoded) so it measures the servers, not a client library.
 *   bench-rpc_bench SOCKET [SECONDS]
 * prints: "median_us p99_us calls_per_s_1 calls_per_s_64" for unary
 * kin.v1.Health/Check calls over a unix socket. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 64

static const char *path;
static uint8_t req[64];
static size_t req_len;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Request{service = "kin.v1.Health", method = "Check"} in a Request frame. */
static void build_request(uint32_t id)
{
	static const char svc[] = "kin.v1.Health", method[] = "Check";
	uint8_t *p = req + 10;
	*p++ = 0x0a;
	*p++ = sizeof(svc) - 1;
	memcpy(p, svc, sizeof(svc) - 1);
	p += sizeof(svc) - 1;
	*p++ = 0x12;
	*p++ = sizeof(method) - 1;
	memcpy(p, method, sizeof(method) - 1);
	p += sizeof(method) - 1;
	uint32_t len = (uint32_t)(p - req - 10);
	req[0] = 0;
	req[1] = (uint8_t)(len >> 16);
	req[2] = (uint8_t)(len >> 8);
	req[3] = (uint8_t)len;
	req[4] = (uint8_t)(id >> 24);
	req[5] = (uint8_t)(id >> 16);
	req[6] = (uint8_t)(id >> 8);
	req[7] = (uint8_t)id;
	req[8] = 1; /* Request */
	req[9] = 0;
	req_len = (size_t)(p - req);
}

static int dial(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "rpc_bench: connect %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Reads one whole Response frame; exits on anything else or an error status. */
static void read_response(int fd, uint8_t *buf, size_t *have)
{
	for (;;) {
		if (*have >= 10) {
			uint32_t len = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
			               (uint32_t)buf[2] << 8 | buf[3];
			if (len > 4096) {
				fprintf(stderr, "rpc_bench: frame of %u bytes\n", len);
				exit(1);
			}
			if (*have >= 10 + len) {
				/* Response.status (field 1) holding a code (field 1) = failure */
				if (buf[8] != 2 || (len >= 3 && buf[10] == 0x0a && buf[11] > 0 &&
				                    buf[12] == 0x08)) {
					fprintf(stderr, "rpc_bench: the call failed\n");
					exit(1);
				}
				memmove(buf, buf + 10 + len, *have - 10 - len);
				*have -= 10 + len;
				return;
			}
		}
		ssize_t n = read(fd, buf + *have, 8192 - *have);
		if (n <= 0) {
			fprintf(stderr, "rpc_bench: connection closed\n");
			exit(1);
		}
		*have += (size_t)n;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-rpc_bench SOCKET [SECONDS]\n");
		return 2;
	}
	path = argv[1];
	double secs = argc > 2 ? atof(argv[2]) : 2.0;
	static uint8_t buf[8192];
	size_t have = 0;
	uint32_t id = 1;

	/* Round trips, one connection, one call at a time. */
	int fd = dial();
	enum { N = 20000, WARM = 2000 };
	static uint64_t lat[N];
	for (int i = 0; i < WARM + N; i++) {
		build_request(id);
		id += 2;
		uint64_t t = now_ns();
		if (write(fd, req, req_len) != (ssize_t)req_len)
			return 1;
		read_response(fd, buf, &have);
		if (i >= WARM)
			lat[i - WARM] = now_ns() - t;
	}
	qsort(lat, N, sizeof(lat[0]), cmp_u64);
	double median = (double)lat[N / 2] / 1000, p99 = (double)lat[N * 99 / 100] / 1000;

	/* Throughput, 1 client. */
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(secs * 1e9);
	long calls = 0;
	while (now_ns() < end) {
		build_request(id);
		id += 2;
		if (write(fd, req, req_len) != (ssize_t)req_len)
			return 1;
		read_response(fd, buf, &have);
		calls++;
	}
	double tput1 = (double)calls / ((double)(now_ns() - t0) / 1e9);
	close(fd);

	/* Throughput, 64 clients (connections) each with one call in flight. */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	static int fds[CLIENTS];
	static uint32_t ids[CLIENTS];
	static uint8_t bufs[CLIENTS][8192];
	static size_t haves[CLIENTS];
	for (int i = 0; i < CLIENTS; i++) {
		fds[i] = dial();
		ids[i] = 1;
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		build_request(ids[i]);
		if (write(fds[i], req, req_len) != (ssize_t)req_len)
			return 1;
	}
	calls = 0;
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	struct epoll_event evs[CLIENTS];
	while (now_ns() < end) {
		int n = epoll_wait(ep, evs, CLIENTS, 5000);
		if (n <= 0) {
			fprintf(stderr, "rpc_bench: no answer for 5 s\n");
			return 1;
		}
		for (int e = 0; e < n; e++) {
			int i = (int)evs[e].data.u32;
			read_response(fds[i], bufs[i], &haves[i]);
			calls++;
			ids[i] += 2;
			build_request(ids[i]);
			if (write(fds[i], req, req_len) != (ssize_t)req_len)
				return 1;
		}
	}
	double tput64 = (double)calls / ((double)(now_ns() - t0) / 1e9);
	printf("%.1f %.1f %.0f %.0f\n", median, p99, tput1, tput64);
	return 0;
}
