/* serve: kin's end of the gateway (tls.h). kin binds the port itself (the
 * gateway needs no capability for a low port) and keeps it across gateway
 * restarts; the gateway is kin run again in its gateway role, given the
 * listening socket as fd 3 and a SOCK_SEQPACKET control socket as fd 4 by
 * its owner's runner (struct tls_serve_ops), which restarts it with both.
 * Each connection it hands over with a verified identity goes to the
 * owner (kin's: one more RPC connection, authorized like any other). A
 * gateway that dies is started again; what it relayed ends with it,
 * nothing else does.
 *
 * A re-exec of kin carries the gateway: its runner hands the process
 * over, and this record holds only kin's own sockets (tls_serve_save).
 * The connections it had handed over end with every other client's
 * (UNAVAILABLE, retry); the listening socket is never closed, so a new
 * peer waits at most in the backlog until the next kin reads the control
 * socket. No OpenSSL here: this runs in PID 1. */
#include "tls/tls.h"
#include "lib/state.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

struct tls_serve {
	struct tls_serve_config cfg;
	struct tls_serve_ops ops;
	struct ev_loop *loop;
	int listen_fd;
	int gateway_control;      /* the gateway's end until its runner holds it; else -1 */
	struct ev_source control; /* kin's end */
	bool stopping;
};

int tls_addr_parse(const char *s, struct sockaddr_storage *ret)
{
	struct sockaddr_storage ss = {0};
	char host[64];
	uint16_t p;
	bool v6addr;
	if (!s || str_hostport_split(s, host, sizeof(host), &p, &v6addr) < 0)
		return -EINVAL;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (!v6addr && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(p);
	} else if (v6addr && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(p);
	} else {
		return -EINVAL;
	}
	if (ret)
		*ret = ss;
	return 0;
}

static int tcp_listen(const char *addr, int *ret_fd)
{
	struct sockaddr_storage ss;
	int r = tls_addr_parse(addr, &ss);
	if (r < 0)
		return r;
	socklen_t len =
	    ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6) /* [::] is IPv6 only; say 0.0.0.0 too if wanted */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 512) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static void control_close(struct tls_serve *ts)
{
	if (ts->control.fd < 0)
		return;
	ev_del(ts->loop, &ts->control);
	close(ts->control.fd);
	ts->control.fd = -1;
}

/* Each connection the gateway hands over goes to the owner. The control
 * socket outlives each gateway (its runner passes it to the next): a
 * gateway's death leaves no half message on a SOCK_SEQPACKET socket. */
static void on_control(struct ev_source *src, uint32_t events)
{
	struct tls_serve *ts = src->data;
	(void)events;
	/* A batch per wakeup, so a busy gateway does not starve the loop;
	 * the rest stay readable for the next turn. */
	for (int i = 0; i < 64; i++) {
		int fd = -1;
		struct tls_identity id;
		int r = tls_handoff_recv(src->fd, &fd, &id);
		if (r == -EAGAIN)
			return;
		if (r == -EBADMSG || r == -EINTR) {
			log_warn("tls: the gateway sent a malformed handover; ignored");
			continue;
		}
		if (r <= 0) { /* no gateway can come any more: the runner let its end go */
			control_close(ts);
			return;
		}
		ts->ops.conn(ts->ops.data, fd, &id);
	}
}

static int control_watch(struct tls_serve *ts, int fd)
{
	ts->control = (struct ev_source){.fd = fd, .fn = on_control, .data = ts};
	fd_set_nonblock(fd, true);
	int r = ev_add(ts->loop, &ts->control, EPOLLIN);
	if (r < 0) {
		close(fd);
		ts->control.fd = -1;
	}
	return r;
}

/* ---- the gateway, run by the owner's runner ---- */

static int gateway_start(struct tls_serve *ts)
{
	const struct tls_serve_config *c = &ts->cfg;
	char hs[16];
	const char *argv[16];
	size_t n = 0;
	argv[n++] = "kin";
	argv[n++] = "gateway";
	argv[n++] = "--cert";
	argv[n++] = c->files.cert;
	argv[n++] = "--key";
	argv[n++] = c->files.key;
	argv[n++] = "--ca";
	argv[n++] = c->files.ca;
	if (c->files.crl) {
		argv[n++] = "--crl";
		argv[n++] = c->files.crl;
	}
	if (c->handshake_ms) {
		snprintf(hs, sizeof(hs), "%u", c->handshake_ms);
		argv[n++] = "--handshake-ms";
		argv[n++] = hs;
	}
	argv[n] = NULL;
	int fds[2] = {ts->listen_fd, ts->gateway_control};
	int r = ts->ops.start(ts->ops.data, (char *const *)argv, fds);
	closep(&ts->gateway_control); /* the runner holds its own now */
	ts->gateway_control = -1;
	if (r < 0)
		return r;
	ts->ops.follow(ts->ops.data);
	return 0;
}

/* A previous gateway (a killed kin's, adopted; one not taken over) ended:
 * the new one starts. */
void tls_serve_ended(struct tls_serve *ts, int result)
{
	if (result != -ECANCELED)
		gateway_start(ts);
}

/* Starts the gateway on a new control socket once no earlier run of it is
 * left. */
static int gateway_begin(struct tls_serve *ts)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	int r = control_watch(ts, sp[0]);
	if (r < 0) {
		close(sp[1]);
		return r;
	}
	ts->gateway_control = sp[1];
	r = ts->ops.stop(ts->ops.data, 0, true);
	if (r == 1)
		return 0;
	return gateway_start(ts);
}

/* ---- start ---- */

int tls_serve_new(const struct tls_serve_config *cfg, const struct tls_serve_ops *ops,
                  struct ev_loop *loop, struct tls_serve **ret)
{
	struct tls_serve *ts = calloc(1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	*ts = (struct tls_serve){.cfg = *cfg,
	                         .ops = *ops,
	                         .loop = loop,
	                         .listen_fd = -1,
	                         .gateway_control = -1,
	                         .control = {.fd = -1}};
	*ret = ts;
	return 0;
}

/* A fresh start (or one after a record that could not be taken over). */
static int listen_afresh(struct tls_serve *ts, bool check_files)
{
	const struct tls_serve_config *cfg = &ts->cfg;
	struct err err = {0};
	int r;
	if (check_files && (r = tls_files_check(&cfg->files, true, &err)) < 0) {
		log_error("tls: not listening on %s: %s", cfg->listen, err.msg);
		return r;
	}
	r = ts->listen_fd >= 0 ? 0 : tcp_listen(cfg->listen, &ts->listen_fd);
	if (r == 0)
		r = gateway_begin(ts);
	if (r < 0) {
		log_error("tls: cannot listen on %s: %s", cfg->listen, strerror(-r));
		return r;
	}
	pid_t pid = 0;
	ts->ops.status(ts->ops.data, &pid);
	log_info("rpc: listening on tls:%s (mutual TLS, gateway pid %d)", cfg->listen, (int)pid);
	return 0;
}

/* ---- across a re-exec ---- */

enum { T_ADDR = 1, T_LISTEN_FD, T_CONTROL_FD };

void tls_serve_save(const struct tls_serve *ts, struct state_w *w, uint16_t tag)
{
	if (!ts || ts->stopping || ts->listen_fd < 0)
		return;
	size_t at = state_open(w, tag);
	state_put_str(w, T_ADDR, ts->cfg.listen);
	state_put_fd(w, T_LISTEN_FD, ts->listen_fd);
	state_put_fd(w, T_CONTROL_FD, ts->control.fd);
	state_close(w, at);
}

/* A listening TCP socket bound where addr says. */
static const char *listen_fd_check(int fd, const char *addr)
{
	struct sockaddr_storage want, got = {0};
	socklen_t len = sizeof(got);
	if (tls_addr_parse(addr, &want) < 0)
		return "this kin's address does not read";
	if (getsockname(fd, (struct sockaddr *)&got, &len) < 0 || got.ss_family != want.ss_family)
		return "its listening socket is not of this address's family";
	if (sock_opt(fd, SO_ACCEPTCONN) <= 0)
		return "its listening socket does not listen";
	if (sock_opt(fd, SO_TYPE) != SOCK_STREAM)
		return "its listening socket is not a stream socket";
	bool same = want.ss_family == AF_INET ? memcmp(&((struct sockaddr_in *)&got)->sin_addr,
	                                               &((struct sockaddr_in *)&want)->sin_addr,
	                                               sizeof(struct in_addr)) == 0 &&
	                                            ((struct sockaddr_in *)&got)->sin_port ==
	                                                ((struct sockaddr_in *)&want)->sin_port
	                                      : memcmp(&((struct sockaddr_in6 *)&got)->sin6_addr,
	                                               &((struct sockaddr_in6 *)&want)->sin6_addr,
	                                               sizeof(struct in6_addr)) == 0 &&
	                                            ((struct sockaddr_in6 *)&got)->sin6_port ==
	                                                ((struct sockaddr_in6 *)&want)->sin6_port;
	return same ? NULL : "its listening socket is bound elsewhere";
}

/* The previous kin's record: its address and sockets (taken). */
static int record_read(struct state_in *in, const struct state_field *f, char *addr, size_t size,
                       int *listen_fd, int *control)
{
	struct state_r r;
	struct state_field g;
	int e = 0;
	state_get_record(f, &r);
	while (e == 0 && (e = state_next(&r, &g)) > 0) {
		e = 0;
		if (g.tag == T_ADDR)
			e = state_get_str(&g, addr, size);
		else if (g.tag == T_LISTEN_FD && *listen_fd < 0)
			e = state_get_fd(in, &g, listen_fd);
		else if (g.tag == T_CONTROL_FD && *control < 0)
			e = state_get_fd(in, &g, control);
	}
	return e;
}

/* Takes the gateway over from the record f: 0 when it serves on (its
 * runner restarts it as ever; or a new one started on the same listening
 * socket), 1 when the caller listens afresh (the record's fds closed,
 * logged). */
static int serve_restore(struct tls_serve *ts, struct state_in *in, const struct state_field *f)
{
	char addr[64] = "";
	int listen_fd = -1, control = -1;
	int e = record_read(in, f, addr, sizeof(addr), &listen_fd, &control);
	const char *why = NULL;
	if (e < 0)
		why = "its record does not read";
	else if (strcmp(addr, ts->cfg.listen) != 0)
		why = "this kin listens on another address";
	else if (listen_fd < 0)
		why = "no listening socket came along";
	else
		why = listen_fd_check(listen_fd, addr);
	pid_t pid = 0;
	bool runs = ts->ops.status(ts->ops.data, &pid) == 1;
	if (why) {
		log_error("re-exec: the TLS gateway (pid %d) cannot be taken over: %s; "
		          "listening afresh",
		          runs ? (int)pid : 0, why);
		closep(&listen_fd);
		closep(&control);
		return 1;
	}
	ts->listen_fd = listen_fd;
	if (control >= 0 && sock_opt(control, SO_TYPE) != SOCK_SEQPACKET) {
		log_error("re-exec: the TLS gateway's control socket is not one; the gateway is "
		          "restarted");
		closep(&control);
		control = -1;
	}
	if (!runs)
		closep(&control);
	if (!runs || control < 0 || control_watch(ts, control) < 0)
		return listen_afresh(ts, false); /* the listening socket as it was */
	ts->ops.follow(ts->ops.data);
	log_info("re-exec: the TLS gateway on %s taken over (pid %d)", addr, (int)pid);
	return 0;
}

int tls_serve_start(struct tls_serve *ts, struct state_in *in, const struct state_field *carried)
{
	int r = in ? serve_restore(ts, in, carried) : 1;
	if (r == 1) /* afresh: the files were checked unless a record was read */
		r = listen_afresh(ts, in != NULL);
	return r;
}

void tls_serve_reload(struct tls_serve *ts)
{
	if (ts && !ts->stopping)
		ts->ops.signal(ts->ops.data, SIGHUP);
}

void tls_serve_stop(struct tls_serve *ts)
{
	if (!ts || ts->stopping)
		return;
	ts->stopping = true;
	closep(&ts->listen_fd);
	ts->listen_fd = -1;
	ts->ops.stop(ts->ops.data, TLS_GATEWAY_STOP_MS, false);
}

void tls_serve_free(struct tls_serve *ts)
{
	if (!ts)
		return;
	tls_serve_stop(ts);
	control_close(ts);
	closep(&ts->gateway_control);
	ts->gateway_control = -1;
	free(ts);
}
