/* The driver of tests/ns/tls-gateway.test.sh: plays kin around the TLS
 * gateway, or kin ctl around tls_client_open.
 *
 *   gateway-driver serve ADDR PORT CERT KEY CA [CRL|-] [handshake_ms] [max_conns]
 *                        [max_handshakes]
 *	binds ADDR:PORT, forks tls_gateway_run (prints "gateway PID"), then
 *	takes handoffs: prints "handoff PEER NAME..." for each, greets the
 *	connection with "hello NAME,NAME\n", echoes each line it reads, and
 *	closes after a line "quit". When the control socket closes it prints
 *	"control closed" and the gateway's status ("gateway status N").
 *	When stdin is a FIFO, its EOF closes the control socket (kin going
 *	away), which must end the gateway with status 0.
 *   gateway-driver client HOST PORT CERT KEY CA [SERVER_NAME|-] [timeout_ms]
 *	tls_client_open, sends "ping\nquit\n" and prints what comes back, or
 *	"error: SENTENCE" (exit 1).
 *   gateway-driver check server|client CERT KEY CA [CRL]
 *	tls_files_check: "ok" or "error: SENTENCE". */
#include "tls/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MAX_CONNS 256

struct conn {
	int fd;
	char line[4096];
	size_t len;
};

static int listen_on(const char *addr, const char *port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)atoi(port));
		len = sizeof(*in);
	} else if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)atoi(port));
		len = sizeof(*in6);
	} else {
		fprintf(stderr, "bad address %s\n", addr);
		exit(2);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 16) < 0) {
		perror("listen");
		exit(2);
	}
	return fd;
}

/* One line from a connection: echoed; "quit" ends it. 0 to go on. */
static int conn_read(struct conn *c)
{
	ssize_t n = read(c->fd, c->line + c->len, sizeof(c->line) - c->len);
	if (n <= 0)
		return -1;
	c->len += (size_t)n;
	char *nl;
	while ((nl = memchr(c->line, '\n', c->len))) {
		size_t ll = (size_t)(nl - c->line) + 1;
		if (ll == 5 && memcmp(c->line, "quit\n", 5) == 0)
			return -1;
		if (write_all(c->fd, c->line, ll) < 0)
			return -1;
		memmove(c->line, c->line + ll, c->len - ll);
		c->len -= ll;
	}
	if (c->len == sizeof(c->line))
		c->len = 0;
	return 0;
}

static void take_handoff(int fd, const struct tls_identity *id, struct conn *conns, size_t *n_conns)
{
	char names[TLS_NAMES_MAX * (TLS_NAME_MAX + 6) + 8] = "";
	size_t k = 0;
	for (size_t i = 0; i < id->n_names; i++)
		k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? "," : "",
		                      id->names[i]);
	printf("handoff %s %s\n", id->peer, names);
	fflush(stdout);
	char hello[sizeof(names) + 16];
	int n = snprintf(hello, sizeof(hello), "hello %s\n", names);
	if (*n_conns == MAX_CONNS || write_all(fd, hello, (size_t)n) < 0) {
		close(fd);
		return;
	}
	conns[(*n_conns)++] = (struct conn){.fd = fd};
}

static int serve(int argc, char **argv)
{
	if (argc < 7)
		return 2;
	struct tls_gateway_config cfg = {
	    .listen_fd = listen_on(argv[2], argv[3]),
	    .files = {argv[4], argv[5], argv[6], argc > 7 && strcmp(argv[7], "-") ? argv[7] : NULL},
	    .handshake_ms = argc > 8 ? (unsigned)atoi(argv[8]) : 0,
	    .max_conns = argc > 9 ? (unsigned)atoi(argv[9]) : 0,
	    .max_handshakes = argc > 10 ? (unsigned)atoi(argv[10]) : 0,
	};
	int ctl[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0)
		return 2;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(ctl[0]);
		cfg.control_fd = ctl[1];
		_exit(tls_gateway_run(&cfg));
	}
	close(ctl[1]);
	close(cfg.listen_fd);
	printf("gateway %d\n", (int)pid);
	fflush(stdout);

	static struct conn conns[MAX_CONNS];
	size_t n_conns = 0;
	struct stat st;
	bool watch_stdin = fstat(0, &st) == 0 && S_ISFIFO(st.st_mode);
	for (;;) {
		struct pollfd p[MAX_CONNS + 2];
		p[0] = (struct pollfd){.fd = ctl[0], .events = POLLIN};
		p[1] = (struct pollfd){.fd = watch_stdin ? 0 : -1, .events = POLLIN};
		for (size_t i = 0; i < n_conns; i++)
			p[i + 2] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
		if (poll(p, n_conns + 2, -1) < 0)
			continue;
		for (size_t i = n_conns; i > 0; i--)
			if (p[i + 1].revents && conn_read(&conns[i - 1]) < 0) {
				close(conns[i - 1].fd);
				conns[i - 1] = conns[--n_conns];
			}
		char b[64];
		if (p[1].revents && read(0, b, sizeof(b)) <= 0) {
			int status;
			close(ctl[0]);
			waitpid(pid, &status, 0);
			printf("kin closed the control socket; gateway status %d\n",
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			return 0;
		}
		if (!p[0].revents)
			continue;
		int fd;
		struct tls_identity id;
		int r = tls_handoff_recv(ctl[0], &fd, &id);
		if (r == 1) {
			take_handoff(fd, &id, conns, &n_conns);
		} else if (r == 0) {
			int status;
			printf("control closed\n");
			waitpid(pid, &status, 0);
			printf("gateway status %d\n",
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			return 0;
		} else if (r != -EAGAIN) {
			printf("handoff error %s\n", strerror(-r));
		}
		fflush(stdout);
	}
}

static int client(int argc, char **argv)
{
	if (argc < 7)
		return 2;
	struct tls_client_config cfg = {
	    .host = argv[2],
	    .port = argv[3],
	    .files = {argv[4], argv[5], argv[6], NULL},
	    .server_name = argc > 7 && strcmp(argv[7], "-") ? argv[7] : NULL,
	    .timeout_ms = argc > 8 ? atoi(argv[8]) : 5000,
	};
	struct err e = {0};
	int fd;
	pid_t pid;
	if (tls_client_open(&cfg, &fd, &pid, &e) < 0) {
		printf("error: %s\n", e.msg);
		return 1;
	}
	if (write_all(fd, "ping\nquit\n", 10) < 0)
		return 1;
	char buf[4096];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	close(fd);
	int status;
	waitpid(pid, &status, 0);
	printf("relay status %d\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}

static int check(int argc, char **argv)
{
	if (argc < 6)
		return 2;
	struct tls_files f = {argv[3], argv[4], argv[5], argc > 6 ? argv[6] : NULL};
	struct err e = {0};
	if (tls_files_check(&f, strcmp(argv[2], "server") == 0, &e) < 0) {
		printf("error: %s\n", e.msg);
		return 1;
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return serve(argc, argv);
	if (argc > 1 && strcmp(argv[1], "client") == 0)
		return client(argc, argv);
	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return check(argc, argv);
	fprintf(stderr, "usage: see tests/tls/gateway_driver.c\n");
	return 2;
}
