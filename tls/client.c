/* client: kin ctl's end of an RPC over TLS. Connects (non-blocking, one
 * deadline for connect and handshake), verifies the server against the
 * CA and the name asked for, then forks a relay child that runs
 * relay.c for this one connection; the caller speaks plaintext ttrpc on
 * a unix socket and never runs OpenSSL after this returns.
 *
 * Names: kin is static and has no resolver (lib/nonss.c). A host is an
 * IPv4 or IPv6 literal, "localhost", or a name found in /etc/hosts (read
 * here with a small strict parser); anything else is refused, saying so. */
#include "tls/tls-int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define HOSTS_FILE "/etc/hosts"
#define HOSTS_MAX  (256 * 1024)

struct client_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool literal; /* an address, not a name: no SNI, verified as an IP */
};

static bool client_addr_set(struct client_addr *a, const char *ip, uint16_t port)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->ss;
	memset(&a->ss, 0, sizeof(a->ss));
	if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		a->len = sizeof(*in);
		return true;
	}
	if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		a->len = sizeof(*in6);
		return true;
	}
	return false;
}

/* The first address /etc/hosts gives name. Lines: ADDRESS NAME...,
 * "#" starts a comment; a line whose address does not parse is skipped. */
static int client_hosts_lookup(const char *name, uint16_t port, struct client_addr *a)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = file_read_regular(HOSTS_FILE, HOSTS_MAX, &text, &len);
	if (r < 0)
		return r;
	char *save_line = NULL;
	for (char *line = strtok_r(text, "\n", &save_line); line;
	     line = strtok_r(NULL, "\n", &save_line)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *save = NULL, *addr = strtok_r(line, " \t\r", &save);
		if (!addr)
			continue;
		for (char *n = strtok_r(NULL, " \t\r", &save); n;
		     n = strtok_r(NULL, " \t\r", &save))
			if (strcasecmp(n, name) == 0 && client_addr_set(a, addr, port))
				return 0;
	}
	return -ENOENT;
}

static int client_resolve(const struct tls_client_config *cfg, struct client_addr *a,
                          struct err *err)
{
	uint32_t port;
	if (!cfg->host || !cfg->port || str_to_u32(cfg->port, &port) < 0 || port == 0 ||
	    port > 65535)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "tls: port \"%s\" is not one",
		               cfg->port ? cfg->port : "");
	a->literal = client_addr_set(a, cfg->host, (uint16_t)port);
	if (a->literal)
		return 0;
	if (strcasecmp(cfg->host, "localhost") == 0) {
		client_addr_set(a, "127.0.0.1", (uint16_t)port);
		return 0;
	}
	if (!str_is_hostname(cfg->host))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "tls: \"%s\" is neither an address nor a host name", cfg->host);
	int r = client_hosts_lookup(cfg->host, (uint16_t)port, a);
	if (r < 0)
		return err_set(err, -EHOSTUNREACH, ERR_UNAVAILABLE,
		               "tls: host \"%s\" is not in " HOSTS_FILE
		               " (kin resolves no other way: give an address)",
		               cfg->host);
	return 0;
}

static int client_ms_left(uint64_t deadline)
{
	uint64_t now = now_monotonic_ns();
	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static int client_connect(const struct tls_client_config *cfg, const struct client_addr *a,
                          uint64_t deadline, int *ret_fd, struct err *err)
{
	char where[300];
	snprintf(where, sizeof(where), a->ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", cfg->host,
	         cfg->port);
	_cleanup_close_ int fd =
	    socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set_errno(err, -errno, "connect %s: socket", where);
	int one = 1; /* one record per call each way: no Nagle */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0) {
		if (errno != EINPROGRESS)
			return err_set(err, -errno, ERR_UNAVAILABLE, "connect %s: %s", where,
			               strerror(errno));
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int n;
		do
			n = poll(&p, 1, client_ms_left(deadline));
		while (n < 0 && errno == EINTR);
		if (n == 0)
			return err_set(err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
			               "connect %s: timed out after %d ms", where, cfg->timeout_ms);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr)
			return err_set(err, -soerr, ERR_UNAVAILABLE, "connect %s: %s", where,
			               strerror(soerr));
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* SNI and the name the server's certificate must carry. */
static int client_expect(SSL *ssl, const struct tls_client_config *cfg, bool literal,
                         struct err *err)
{
	const char *name = cfg->server_name ? cfg->server_name : cfg->host;
	struct in6_addr probe;
	bool ip = inet_pton(AF_INET, name, &probe) == 1 || inet_pton(AF_INET6, name, &probe) == 1;
	X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
	X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, name) : SSL_set1_host(ssl, name);
	if (ok == 1 && !ip && !(literal && !cfg->server_name))
		ok = SSL_set_tlsext_host_name(ssl, name) == 1;
	if (ok != 1)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "tls: \"%s\" cannot be checked as a server name", name);
	return 0;
}

static int client_handshake(SSL *ssl, int fd, int timeout_ms, uint64_t deadline, struct err *err)
{
	for (;;) {
		ERR_clear_error();
		int n = SSL_connect(ssl);
		if (n == 1)
			break;
		int e = SSL_get_error(ssl, n);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			char why[256];
			long v = SSL_get_verify_result(ssl);
			if (v != X509_V_OK)
				return err_set(err, -EPERM, ERR_UNAUTHENTICATED,
				               "server certificate: %s",
				               X509_verify_cert_error_string(v));
			tls_ossl_reason(why, sizeof(why), "connection closed by the server");
			return err_set(err, -ECONNABORTED, ERR_UNAVAILABLE, "handshake: %s", why);
		}
		struct pollfd p = {.fd = fd, .events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT};
		int k = poll(&p, 1, client_ms_left(deadline));
		if (k < 0 && errno != EINTR)
			return err_set_errno(err, -errno, "handshake: poll");
		if (k == 0)
			return err_set(err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
			               "handshake: timed out after %d ms", timeout_ms);
	}
	if (SSL_get_verify_result(ssl) != X509_V_OK || !SSL_get0_peer_certificate(ssl))
		return err_set(err, -EPERM, ERR_UNAUTHENTICATED,
		               "server certificate: not verified");
	return 0;
}

static void client_relay_done(struct tls_relay *r, void *data)
{
	(void)r;
	*(bool *)data = true;
}

/* The relay child: this one connection until either side closes. */
static _noreturn_ void client_relay_child(SSL *ssl, int tcp_fd, int unix_fd)
{
	struct ev_loop *loop;
	struct tls_relay *r;
	bool done = false;
	signal(SIGPIPE, SIG_IGN);
	if (fd_set_nonblock(unix_fd, true) < 0 || ev_loop_new(&loop) < 0 ||
	    tls_relay_new(loop, ssl, tcp_fd, unix_fd, client_relay_done, &done, &r) < 0)
		_exit(1);
	while (!done)
		if (ev_run_once(loop, -1) < 0)
			_exit(1);
	tls_relay_free(r);
	_exit(0);
}

int tls_client_open(const struct tls_client_config *cfg, int *ret_fd, pid_t *ret_pid,
                    struct err *err)
{
	struct client_addr a;
	int timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : TLS_HANDSHAKE_MS_DEFAULT;
	uint64_t deadline = now_monotonic_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r = client_resolve(cfg, &a, err);
	if (r < 0)
		return r;
	SSL_CTX *ctx;
	r = tls_ctx_new(&cfg->files, false, &ctx, err);
	if (r < 0)
		return r;
	SSL *ssl = SSL_new(ctx);
	SSL_CTX_free(ctx); /* ssl holds its own reference */
	if (!ssl)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "tls: out of memory");
	_cleanup_close_ int fd = -1;
	r = client_expect(ssl, cfg, a.literal, err);
	if (r >= 0)
		r = client_connect(cfg, &a, deadline, &fd, err);
	if (r >= 0 && SSL_set_fd(ssl, fd) != 1)
		r = err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "tls: out of memory");
	if (r >= 0)
		r = client_handshake(ssl, fd, timeout_ms, deadline, err);
	int sp[2] = {-1, -1};
	if (r >= 0 && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		r = err_set_errno(err, -errno, "tls: socketpair");
	if (r < 0) {
		SSL_free(ssl);
		ERR_clear_error();
		return r;
	}
	struct spawn_opts o = {.cgroup_fd = -1};
	struct spawn_proc p;
	r = spawn_clone(&o, &p);
	if (r == 0) {
		close(p.report_fd);
		close(sp[0]);
		/* The relay must not outlive the caller that holds the other end. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		client_relay_child(ssl, TAKE_FD(fd), sp[1]);
	}
	/* The parent lets go of the TLS state without a close_notify: the
	 * connection is the child's now. */
	SSL_free(ssl);
	close(sp[1]);
	if (r < 0) {
		close(sp[0]);
		return err_set_errno(err, r, "tls: cannot start the relay child");
	}
	close(p.pidfd);
	close(p.report_fd);
	*ret_fd = sp[0];
	*ret_pid = p.pid;
	return 0;
}
