/* tls: init's side of RPC over TCP with mutual TLS. kin binds the port
 * itself (the gateway needs no capability for a low port) and keeps it
 * across gateway restarts; the gateway is kin run again in its gateway
 * role (tls/: handshakes, certificates, the record layer), an executable
 * of cells in a cell of its own with restart=always — cells' restarts and
 * backoff, not a second supervisor here — given the listening socket as
 * fd 3 and a SOCK_SEQPACKET control socket as fd 4 (cells holds its copies
 * of both for the restarts). Each connection it hands over with a verified
 * identity becomes one more RPC connection here, authorized like any other
 * by the guard (init/auth.c). A gateway that dies is started again; what
 * it relayed ends with it, nothing else does. Its output is captured by
 * cells and relayed into kin's log as its own lines.
 *
 * A re-exec of kin carries the gateway: cells hands the executable over
 * (cells_save: its pid, its backoff, the fds passed to it), and this record
 * holds only kin's own sockets (init_tls_save). The connections it had
 * handed over end with every other client's (UNAVAILABLE, retry); the
 * listening socket is never closed, so a new peer waits at most in the
 * backlog until the next kin reads the control socket. */
#include "init/init.h"
#include "cells/cells.h"
#include "keep/keep.h"
#include "lib/state.h"
#include "rpc/rpc.h"
#include "tls/tls.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define GATEWAY_CELL    "kin-gateway"
#define GATEWAY_EXEC    "gateway"
#define GATEWAY_STOP_MS 5000 /* SIGTERM, then SIGKILL */

struct init_tls {
	const struct init_rpc_config *cfg;
	struct keep *keep; /* registered there (init_tls_keep); NULL: not */
	struct ev_loop *loop;
	struct child_table *children;
	struct rpc_server *rpc;
	struct cells *cells; /* NULL once the library went (its listener closed) */
	int listen_fd;
	int gateway_control;             /* the gateway's end until cells holds it; else -1 */
	struct ev_source control;        /* kin's end */
	struct cells_listener *listener; /* the gateway's restarts, logged */
	struct exec_follower *follower;  /* its output, into kin's log */
	bool stopping;
};

int init_tls_addr_parse(const char *s, struct sockaddr_storage *ret)
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
	int r = init_tls_addr_parse(addr, &ss);
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

static void control_close(struct init_tls *t)
{
	if (t->control.fd < 0)
		return;
	ev_del(t->loop, &t->control);
	close(t->control.fd);
	t->control.fd = -1;
}

/* Each connection the gateway hands over joins the RPC server. The control
 * socket outlives each gateway (cells passes it to the next): a gateway's
 * death leaves no half message on a SOCK_SEQPACKET socket. */
static void on_control(struct ev_source *src, uint32_t events)
{
	struct init_tls *t = src->data;
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
		if (r <= 0) { /* no gateway can come any more: cells let its end go */
			control_close(t);
			return;
		}
		struct rpc_peer peer = {.transport = RPC_TRANSPORT_TLS, .allowed = true};
		str_copy(peer.addr, sizeof(peer.addr), id.peer);
		for (size_t k = 0; k < id.n_names && k < RPC_PEER_NAMES_MAX; k++)
			peer.names[peer.n_names++] = id.names[k];
		r = rpc_server_add_conn(t->rpc, fd, &peer);
		if (r < 0)
			log_debug("tls: connection of %s refused: %s", id.peer, strerror(-r));
	}
}

static int control_watch(struct init_tls *t, int fd)
{
	t->control = (struct ev_source){.fd = fd, .fn = on_control, .data = t};
	fd_set_nonblock(fd, true);
	int r = ev_add(t->loop, &t->control, EPOLLIN);
	if (r < 0) {
		close(fd);
		t->control.fd = -1;
	}
	return r;
}

/* ---- the gateway's output and restarts, from cells ---- */

/* Its lines are whole log lines of its own (one write each): as they were
 * when it wrote to kin's stderr itself. */
static void relay_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	(void)s, (void)data;
	(void)!write(STDERR_FILENO, buf, len);
}

static void relay_end(void *data)
{
	struct init_tls *t = data;
	t->follower = NULL;
}

static const struct exec_log_ops relay_ops = {.data = relay_data, .end = relay_end, .live = true};

static void gateway_follow(struct init_tls *t)
{
	if (t->cells && !t->follower &&
	    exec_log_follow(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &relay_ops, t, NULL, &t->follower,
	                    NULL) < 0)
		log_warn("tls: the gateway's output does not reach kin's log");
}

static void on_event(const struct cells_event *ev, void *data)
{
	struct init_tls *t = data;
	struct exec_status st;
	if (ev->type != CELLS_EV_EXEC_RESTART || !ev->exec || strcmp(ev->exec, GATEWAY_EXEC) ||
	    strcmp(ev->cell, GATEWAY_CELL) ||
	    exec_status(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &st, NULL) < 0)
		return;
	log_warn("tls: the gateway ended (%s %d) after %llu ms; starting it again in %llu ms",
	         st.signal ? "signal" : "status", st.signal ? st.signal : st.exit_code,
	         (unsigned long long)((st.exited_ns - st.started_ns) / 1000000),
	         (unsigned long long)ev->delay_ms);
}

static void on_cells_gone(void *data)
{
	struct init_tls *t = data;
	t->cells = NULL;
	t->listener = NULL;
}

static const struct cells_listener_ops listener_ops = {.event = on_event, .closed = on_cells_gone};

/* ---- the gateway, an executable of cells ---- */

/* The gateway's cell: made once, reused by every start. */
static void gateway_cell(struct init_tls *t)
{
	struct err err = {0}, perr = {0};
	struct cell_limits lim = {0};
	/* Bounded like any other cell: TLS state per connection is small. */
	if (cell_limit_parse(&lim, "memory.max", "256M", &perr) < 0 ||
	    cell_limit_parse(&lim, "pids.max", "16", &perr) < 0)
		lim = (struct cell_limits){0};
	int r = cell_create(t->cells, GATEWAY_CELL, &lim, &err);
	if (r < 0 && r != -EEXIST)
		r = cell_create(t->cells, GATEWAY_CELL, NULL, &err);
	if (r < 0 && r != -EEXIST)
		log_warn("tls: no cell for the gateway: %s", err.msg);
}

static void gateway_started(int result, const struct err *err, void *data)
{
	(void)data;
	if (result < 0 && result != -ECANCELED)
		log_error("tls: cannot start the gateway: %s",
		          err && err->msg[0] ? err->msg : strerror(-result));
}

static int gateway_start(struct init_tls *t)
{
	const struct init_rpc_config *c = t->cfg;
	char hs[16];
	const char *argv[16];
	size_t n = 0;
	argv[n++] = "kin";
	argv[n++] = "gateway";
	argv[n++] = "--cert";
	argv[n++] = c->tls_cert;
	argv[n++] = "--key";
	argv[n++] = c->tls_key;
	argv[n++] = "--ca";
	argv[n++] = c->tls_ca;
	if (c->tls_crl[0]) {
		argv[n++] = "--crl";
		argv[n++] = c->tls_crl;
	}
	if (c->tls_handshake_ms) {
		snprintf(hs, sizeof(hs), "%u", c->tls_handshake_ms);
		argv[n++] = "--handshake-ms";
		argv[n++] = hs;
	}
	argv[n] = NULL;
	int fds[2] = {t->listen_fd, t->gateway_control};
	struct exec_spec spec;
	exec_spec_init(&spec);
	spec.argv = (char *const *)argv;
	spec.path = "/proc/self/exe";
	spec.pass_fds = fds;
	spec.npass_fds = 2;
	spec.restart = EXEC_RESTART_ALWAYS;
	/* It filters its own calls, and gives up its capabilities, once its
	 * files are loaded (tls/sandbox.c). */
	spec.seccomp = EXEC_SECCOMP_NONE;
	struct err err = {0};
	gateway_cell(t);
	int r = exec_start(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &spec, gateway_started, t, &err);
	closep(&t->gateway_control); /* cells holds its own now */
	t->gateway_control = -1;
	if (r < 0) {
		log_error("tls: cannot start the gateway: %s", err.msg);
		return r;
	}
	gateway_follow(t);
	return 0;
}

/* A previous gateway (a killed kin's, adopted; one not taken over) ended:
 * the new one starts. */
static void previous_ended(int result, const struct exec_status *st, void *data)
{
	(void)st;
	if (result != -ECANCELED)
		gateway_start(data);
}

/* Starts the gateway on a new control socket once no earlier run of it is
 * left in its cell. */
static int gateway_begin(struct init_tls *t)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	int r = control_watch(t, sp[0]);
	if (r < 0) {
		close(sp[1]);
		return r;
	}
	t->gateway_control = sp[1];
	r = exec_stop(t->cells, GATEWAY_CELL, GATEWAY_EXEC, 0, previous_ended, t, NULL);
	if (r == 1)
		return 0;
	return gateway_start(t);
}

/* ---- start ---- */

static void tls_stopped(int result, const struct exec_status *st, void *data)
{
	(void)result, (void)st, (void)data;
}

/* The files (unless a running gateway holds them already), the server and
 * cells, checked; t listening to cells, nothing started. */
static int tls_new(const struct init_rpc_config *cfg, struct ev_loop *loop,
                   struct child_table *children, struct rpc_server *rpc, struct cells *cells,
                   bool check_files, struct init_tls **ret)
{
	*ret = NULL;
	if (!cfg->tls_cert[0] || !cfg->tls_key[0] || !cfg->tls_ca[0]) {
		log_error("tls: kin.rpc.tls=%s needs kin.rpc.tls.cert=, .key= and .ca= "
		          "(--tls-cert, --tls-key, --tls-ca); not listening",
		          cfg->tls_listen);
		return -EINVAL;
	}
	if (!rpc) {
		log_error("tls: no RPC server to hand connections to; not listening");
		return -EINVAL;
	}
	if (!cells) {
		log_error("tls: not listening on %s: the gateway runs as an executable of cells, "
		          "and there are none here",
		          cfg->tls_listen);
		return -EOPNOTSUPP;
	}
	struct err err = {0};
	struct tls_files files = {.cert = cfg->tls_cert,
	                          .key = cfg->tls_key,
	                          .ca = cfg->tls_ca,
	                          .crl = cfg->tls_crl[0] ? cfg->tls_crl : NULL};
	int r = check_files ? tls_files_check(&files, true, &err) : 0;
	if (r < 0) {
		log_error("tls: not listening on %s: %s", cfg->tls_listen, err.msg);
		return r;
	}
	struct init_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct init_tls){.cfg = cfg,
	                       .loop = loop,
	                       .children = children,
	                       .rpc = rpc,
	                       .cells = cells,
	                       .listen_fd = -1,
	                       .gateway_control = -1,
	                       .control = {.fd = -1}};
	r = cells_listen(cells, &listener_ops, t, &t->listener);
	if (r < 0) {
		log_error("tls: not listening on %s: cannot watch cells: %s", cfg->tls_listen,
		          strerror(-r));
		free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static int tls_restore(struct init_tls *t, struct state_in *in, const struct state_field *f);

/* A fresh start (or one after a record that could not be taken over). */
static int tls_listen_afresh(struct init_tls *t, bool check_files)
{
	const struct init_rpc_config *cfg = t->cfg;
	struct err err = {0};
	struct tls_files files = {.cert = cfg->tls_cert,
	                          .key = cfg->tls_key,
	                          .ca = cfg->tls_ca,
	                          .crl = cfg->tls_crl[0] ? cfg->tls_crl : NULL};
	int r;
	if (check_files && (r = tls_files_check(&files, true, &err)) < 0) {
		log_error("tls: not listening on %s: %s", cfg->tls_listen, err.msg);
		return r;
	}
	r = t->listen_fd >= 0 ? 0 : tcp_listen(cfg->tls_listen, &t->listen_fd);
	if (r == 0)
		r = gateway_begin(t);
	if (r < 0) {
		log_error("tls: cannot listen on %s: %s", cfg->tls_listen, strerror(-r));
		return r;
	}
	struct exec_status st = {0};
	exec_status(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &st, NULL);
	log_info("rpc: listening on tls:%s (mutual TLS, gateway pid %d)", cfg->tls_listen,
	         (int)st.pid);
	return 0;
}

int init_tls_start(const struct init_rpc_config *cfg, struct ev_loop *loop,
                   struct child_table *children, struct rpc_server *rpc, struct cells *cells,
                   struct state_in *in, const struct state_field *carried, struct init_tls **ret)
{
	*ret = NULL;
	if (!cfg->tls_listen[0]) {
		if (in && cells)
			exec_stop(cells, GATEWAY_CELL, GATEWAY_EXEC, GATEWAY_STOP_MS, tls_stopped,
			          NULL, NULL);
		if (in)
			log_warn("re-exec: this kin listens on no TLS address; the gateway is let "
			         "go");
		return 0;
	}
	struct init_tls *t;
	int r = tls_new(cfg, loop, children, rpc, cells, !in, &t);
	if (r < 0)
		return r;
	r = in ? tls_restore(t, in, carried) : 1;
	if (r == 1) /* afresh: the files were checked unless a record was read */
		r = tls_listen_afresh(t, in != NULL);
	if (r < 0) {
		init_tls_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

/* ---- across a re-exec ---- */

enum { T_ADDR = 1, T_LISTEN_FD, T_CONTROL_FD };

void init_tls_save(const struct init_tls *t, struct state_w *w, uint16_t tag)
{
	if (!t || t->stopping || t->listen_fd < 0)
		return;
	size_t at = state_open(w, tag);
	state_put_str(w, T_ADDR, t->cfg->tls_listen);
	state_put_fd(w, T_LISTEN_FD, t->listen_fd);
	state_put_fd(w, T_CONTROL_FD, t->control.fd);
	state_close(w, at);
}

/* A listening TCP socket bound where addr says. */
static const char *listen_fd_check(int fd, const char *addr)
{
	struct sockaddr_storage want, got = {0};
	socklen_t len = sizeof(got);
	if (init_tls_addr_parse(addr, &want) < 0)
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

/* Takes the gateway over from the record f: 0 when it serves on (cells
 * restarts it as ever; or a new one started on the same listening socket),
 * 1 when the caller listens afresh (the record's fds closed, logged). */
static int tls_restore(struct init_tls *t, struct state_in *in, const struct state_field *f)
{
	char addr[sizeof(t->cfg->tls_listen)] = "";
	int listen_fd = -1, control = -1;
	int e = record_read(in, f, addr, sizeof(addr), &listen_fd, &control);
	const char *why = NULL;
	if (e < 0)
		why = "its record does not read";
	else if (strcmp(addr, t->cfg->tls_listen) != 0)
		why = "this kin listens on another address";
	else if (listen_fd < 0)
		why = "no listening socket came along";
	else
		why = listen_fd_check(listen_fd, addr);
	struct exec_status st = {0};
	bool runs = exec_status(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &st, NULL) == 0 &&
	            st.state != EXEC_EXITED && st.state != EXEC_STOPPING;
	if (why) {
		log_error("re-exec: the TLS gateway (pid %d) cannot be taken over: %s; "
		          "listening afresh",
		          runs ? (int)st.pid : 0, why);
		closep(&listen_fd);
		closep(&control);
		return 1;
	}
	t->listen_fd = listen_fd;
	if (control >= 0 && sock_opt(control, SO_TYPE) != SOCK_SEQPACKET) {
		log_error("re-exec: the TLS gateway's control socket is not one; the gateway is "
		          "restarted");
		closep(&control);
		control = -1;
	}
	if (!runs)
		closep(&control);
	if (!runs || control < 0 || control_watch(t, control) < 0)
		return tls_listen_afresh(t, false); /* the listening socket as it was */
	gateway_follow(t);
	log_info("re-exec: the TLS gateway on %s taken over (pid %d)", addr, (int)st.pid);
	return 0;
}

void init_tls_reload(struct init_tls *t)
{
	if (t && t->cells && !t->stopping)
		exec_signal(t->cells, GATEWAY_CELL, GATEWAY_EXEC, SIGHUP, NULL);
}

void init_tls_stop(struct init_tls *t)
{
	if (!t || t->stopping)
		return;
	t->stopping = true;
	closep(&t->listen_fd);
	t->listen_fd = -1;
	if (t->cells)
		exec_stop(t->cells, GATEWAY_CELL, GATEWAY_EXEC, GATEWAY_STOP_MS, tls_stopped, NULL,
		          NULL);
}

void init_tls_free(struct init_tls *t)
{
	if (!t)
		return;
	if (t->keep)
		keep_unregister(t->keep, t);
	init_tls_stop(t);
	control_close(t);
	closep(&t->gateway_control);
	t->gateway_control = -1;
	if (t->cells && t->follower)
		exec_log_unfollow(t->cells, t->follower);
	if (t->cells && t->listener)
		cells_unlisten(t->cells, t->listener);
	free(t);
}

/* kin's TLS sockets as a participant of the handover: made from its
 * record by init_tls_start (a re-exec's; a state file has none: a killed
 * kin's sockets went with it), saved here, freed at kin's stop. The
 * gateway itself is an executable of cells and goes along with them. */
static int tls_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	if (!w->file)
		init_tls_save(data, w, tag);
	return 0;
}

static void tls_keep_free(void *data)
{
	init_tls_free(data);
}

void init_tls_keep(struct init_tls *t, struct keep *k)
{
	static const struct keep_part part = {.name = "the TLS gateway",
	                                      .tag = KEEP_TAG_TLS,
	                                      .level = KEEP_LEVEL_TLS,
	                                      .save = tls_keep_save,
	                                      .free = tls_keep_free};
	struct keep_part p = part;
	p.data = t;
	if (t && keep_register(k, &p) == 0)
		t->keep = k;
}
