/* tls: init's side of RPC over TCP with mutual TLS. kin binds the port
 * itself (the gateway needs no capability for a low port) and keeps it
 * across gateway restarts; the gateway is kin run again in its gateway
 * role (tls/: handshakes, certificates, the record layer), in a cell of
 * its own, with the listening socket as fd 3 and a SOCK_SEQPACKET control
 * socket as fd 4. Each connection it hands over with a verified identity
 * becomes one more RPC connection here, authorized like any other by the
 * guard (init/auth.c). A gateway that dies is started again with a
 * backoff; what it relayed ends with it, nothing else does.
 *
 * A re-exec of kin carries the gateway: it stays kin's child, serving,
 * and the next kin takes the listening socket, the control socket and the
 * restart's backoff as they were (init_tls_save). The connections it had
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
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#define GATEWAY_CELL           "kin-gateway"
#define GATEWAY_BACKOFF_MIN_MS 100
#define GATEWAY_BACKOFF_MAX_MS 30000
#define GATEWAY_STABLE_MS      60000 /* up this long: the backoff starts over */

struct init_tls {
	const struct init_rpc_config *cfg;
	struct keep *keep; /* registered there (init_tls_keep); NULL: not */
	struct ev_loop *loop;
	struct child_table *children;
	struct rpc_server *rpc;
	struct cells *cells; /* NULL: the gateway runs in kin's own cgroup */
	int listen_fd;
	struct ev_source control; /* kin's end; fd -1 while no gateway runs */
	struct ev_source timer;   /* the restart's backoff */
	struct child *gateway;
	uint64_t started_ns;
	unsigned backoff_ms;
	uint64_t handed, starts;
	bool stopping;
	bool freed; /* init_tls_free ran with the gateway still tracked */
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

/* Each connection the gateway hands over joins the RPC server. */
static void on_control(struct ev_source *src, uint32_t events)
{
	struct init_tls *t = src->data;
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
		if (r <= 0)
			goto closed; /* closed, or broken: the gateway's exit handles it */
		struct rpc_peer peer = {.transport = RPC_TRANSPORT_TLS, .allowed = true};
		str_copy(peer.addr, sizeof(peer.addr), id.peer);
		for (size_t k = 0; k < id.n_names && k < RPC_PEER_NAMES_MAX; k++)
			peer.names[peer.n_names++] = id.names[k];
		t->handed++;
		r = rpc_server_add_conn(t->rpc, fd, &peer);
		if (r < 0)
			log_debug("tls: connection of %s refused: %s", id.peer, strerror(-r));
	}
	return;
closed:
	(void)events;
	ev_del(t->loop, src);
	close(src->fd);
	src->fd = -1;
}

static int gateway_start(struct init_tls *t);

static void gateway_exited(const siginfo_t *si, void *data)
{
	struct init_tls *t = data;
	t->gateway = NULL;
	if (t->freed) {
		free(t);
		return;
	}
	if (t->control.fd >= 0) {
		ev_del(t->loop, &t->control);
		close(t->control.fd);
		t->control.fd = -1;
	}
	if (t->stopping)
		return;
	uint64_t up_ms = (now_monotonic_ns() - t->started_ns) / 1000000ull;
	if (up_ms >= GATEWAY_STABLE_MS)
		t->backoff_ms = GATEWAY_BACKOFF_MIN_MS;
	log_warn("tls: the gateway ended (%s %d) after %llu ms; starting it again in %u ms",
	         si->si_code == CLD_EXITED ? "status" : "signal", si->si_status,
	         (unsigned long long)up_ms, t->backoff_ms);
	struct itimerspec its = {.it_value = {.tv_sec = t->backoff_ms / 1000,
	                                      .tv_nsec = (long)(t->backoff_ms % 1000) * 1000000}};
	timerfd_settime(t->timer.fd, 0, &its, NULL);
	t->backoff_ms =
	    t->backoff_ms * 2 > GATEWAY_BACKOFF_MAX_MS ? GATEWAY_BACKOFF_MAX_MS : t->backoff_ms * 2;
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct init_tls *t = src->data;
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) < 0 || t->stopping || t->gateway)
		return;
	int r = gateway_start(t);
	if (r < 0) {
		log_error("tls: cannot start the gateway: %s", strerror(-r));
		struct itimerspec its = {.it_value = {.tv_sec = GATEWAY_BACKOFF_MAX_MS / 1000}};
		timerfd_settime(t->timer.fd, 0, &its, NULL);
	}
}

/* The gateway's cell: made once, reused by every restart. */
static int gateway_cgroup(struct init_tls *t)
{
	if (!t->cells)
		return -1;
	struct err err = {0};
	struct cell_limits lim = {0};
	char dir[PATH_MAX];
	struct err perr = {0};
	/* Bounded like any other cell: TLS state per connection is small. */
	if (cell_limit_parse(&lim, "memory.max", "256M", &perr) < 0 ||
	    cell_limit_parse(&lim, "pids.max", "16", &perr) < 0)
		lim = (struct cell_limits){0};
	int r = cell_create(t->cells, GATEWAY_CELL, &lim, &err);
	if (r < 0 && r != -EEXIST)
		r = cell_create(t->cells, GATEWAY_CELL, NULL, &err);
	if (r < 0 && r != -EEXIST) {
		log_warn("tls: no cell for the gateway (%s); it runs in kin's cgroup", err.msg);
		return -1;
	}
	if (cells_cgroup_dir(t->cells, GATEWAY_CELL, dir, sizeof(dir)) < 0)
		return -1;
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int gateway_start(struct init_tls *t)
{
	const struct init_rpc_config *c = t->cfg;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	char hs[16];
	snprintf(hs, sizeof(hs), "%u", c->tls_handshake_ms);
	const char *argv[24];
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
		argv[n++] = "--handshake-ms";
		argv[n++] = hs;
	}
	argv[n] = NULL;
	int cg = gateway_cgroup(t);
	struct spawn_proc p;
	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = cg}, &p);
	if (r < 0 && cg >= 0)
		r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	if (cg >= 0 && r != 0)
		close(cg);
	if (r < 0) {
		close(sp[0]);
		close(sp[1]);
		return r;
	}
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		if (dup2(t->listen_fd, 3) < 0 || dup2(sp[1], 4) < 0)
			spawn_child_fail(p.report_fd, 0, errno);
		fd_set_cloexec(3, false);
		fd_set_cloexec(4, false);
		execv("/proc/self/exe", (char *const *)argv);
		spawn_child_fail(p.report_fd, 1, errno);
	}
	close(sp[1]);
	close(p.report_fd);
	t->control = (struct ev_source){.fd = sp[0], .fn = on_control, .data = t};
	fd_set_nonblock(sp[0], true);
	r = ev_add(t->loop, &t->control, EPOLLIN);
	if (r == 0)
		r = child_track(t->children, p.pid, p.pidfd, gateway_exited, t, &t->gateway);
	else
		spawn_kill_and_reap(p.pidfd);
	if (r < 0) {
		if (t->control.fd >= 0) {
			ev_del(t->loop, &t->control);
			close(t->control.fd);
			t->control.fd = -1;
		}
		return r;
	}
	t->started_ns = now_monotonic_ns();
	t->starts++;
	log_debug("tls: gateway started as pid %d", (int)p.pid);
	return 0;
}

/* The files (unless a running gateway holds them already) and the server,
 * checked; t with its timer, nothing started. */
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
	                       .control = {.fd = -1},
	                       .backoff_ms = GATEWAY_BACKOFF_MIN_MS};
	t->timer =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = on_timer,
	                       .data = t};
	r = t->timer.fd < 0 ? -errno : ev_add(loop, &t->timer, EPOLLIN);
	if (r < 0) {
		t->stopping = true;
		init_tls_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static int tls_restore(struct init_tls *t, struct state_in *in, const struct state_field *f);

int init_tls_start(const struct init_rpc_config *cfg, struct ev_loop *loop,
                   struct child_table *children, struct rpc_server *rpc, struct cells *cells,
                   struct state_in *in, const struct state_field *carried, struct init_tls **ret)
{
	*ret = NULL;
	if (!cfg->tls_listen[0]) {
		if (in)
			log_warn(
			    "re-exec: this kin listens on no TLS address; the gateway is let go "
			    "(it ends with its control socket)");
		return 0;
	}
	struct init_tls *t;
	int r = tls_new(cfg, loop, children, rpc, cells, !in, &t);
	if (r < 0)
		return r;
	if (in && tls_restore(t, in, carried) == 0) {
		*ret = t;
		return 0;
	}
	struct err err = {0};
	struct tls_files files = {.cert = cfg->tls_cert,
	                          .key = cfg->tls_key,
	                          .ca = cfg->tls_ca,
	                          .crl = cfg->tls_crl[0] ? cfg->tls_crl : NULL};
	if (in && (r = tls_files_check(&files, true, &err)) < 0) {
		log_error("tls: not listening on %s: %s", cfg->tls_listen, err.msg);
		t->stopping = true;
		init_tls_free(t);
		return r;
	}
	r = tcp_listen(cfg->tls_listen, &t->listen_fd);
	if (r == 0)
		r = gateway_start(t);
	if (r < 0) {
		log_error("tls: cannot listen on %s: %s", cfg->tls_listen, strerror(-r));
		t->stopping = true;
		init_tls_free(t);
		return r;
	}
	log_info("rpc: listening on tls:%s (mutual TLS, gateway pid %d)", cfg->tls_listen,
	         (int)child_pid(t->gateway));
	*ret = t;
	return 0;
}

/* ---- across a re-exec ---- */

enum {
	T_ADDR = 1,
	T_LISTEN_FD,
	T_CONTROL_FD,
	T_PID,
	T_STARTED,
	T_BACKOFF,
	T_HANDED,
	T_STARTS,
	T_RESTART_MS
};

struct tls_nums {
	uint64_t pid, started, backoff, handed, starts, restart_ms;
};
static const struct state_num tls_nums[] = {
    STATE_NUM(T_PID, struct tls_nums, pid),
    STATE_NUM(T_STARTED, struct tls_nums, started),
    STATE_NUM(T_BACKOFF, struct tls_nums, backoff),
    STATE_NUM(T_HANDED, struct tls_nums, handed),
    STATE_NUM(T_STARTS, struct tls_nums, starts),
    STATE_NUM(T_RESTART_MS, struct tls_nums, restart_ms),
};

void init_tls_save(const struct init_tls *t, struct state_w *w, uint16_t tag)
{
	if (!t || t->stopping || t->listen_fd < 0)
		return;
	struct tls_nums n = {.pid = t->gateway ? (uint64_t)child_pid(t->gateway) : 0,
	                     .started = t->started_ns,
	                     .backoff = t->backoff_ms,
	                     .handed = t->handed,
	                     .starts = t->starts};
	struct itimerspec its;
	if (!t->gateway && timerfd_gettime(t->timer.fd, &its) == 0)
		n.restart_ms =
		    (uint64_t)its.it_value.tv_sec * 1000 + (uint64_t)its.it_value.tv_nsec / 1000000;
	size_t at = state_open(w, tag);
	state_put_str(w, T_ADDR, t->cfg->tls_listen);
	state_put_fd(w, T_LISTEN_FD, t->listen_fd);
	state_put_fd(w, T_CONTROL_FD, t->control.fd);
	state_put_nums(w, &n, tls_nums, ARRAY_SIZE(tls_nums));
	state_close(w, at);
}

size_t init_tls_children(const struct init_tls *t)
{
	return t && t->gateway && !t->stopping && t->listen_fd >= 0;
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

/* Takes the gateway over from the record f: 0 when it serves on (its
 * exit, if it comes, restarts it as ever), < 0 when the caller listens
 * afresh (the record's gateway killed, its fds closed, logged). */
static int tls_restore(struct init_tls *t, struct state_in *in, const struct state_field *f)
{
	struct tls_nums n = {0};
	char addr[sizeof(t->cfg->tls_listen)] = "";
	int listen_fd = -1, control = -1, e = 0;
	struct state_r r;
	struct state_field g;
	state_get_record(f, &r);
	while (e == 0 && (e = state_next(&r, &g)) > 0) {
		if ((e = state_get_num(&g, &n, tls_nums, ARRAY_SIZE(tls_nums))) != 0) {
			e = e < 0 ? e : 0;
			continue;
		}
		if (g.tag == T_ADDR)
			e = state_get_str(&g, addr, sizeof(addr));
		else if (g.tag == T_LISTEN_FD && listen_fd < 0)
			e = state_get_fd(in, &g, &listen_fd);
		else if (g.tag == T_CONTROL_FD && control < 0)
			e = state_get_fd(in, &g, &control);
	}
	const char *why = NULL;
	if (e < 0)
		why = "its record does not read";
	else if (strcmp(addr, t->cfg->tls_listen) != 0)
		why = "this kin listens on another address";
	else if (listen_fd < 0)
		why = "no listening socket came along";
	else
		why = listen_fd_check(listen_fd, addr);
	/* Only a child of ours is signalled: the pid is checked by adopting it. */
	pid_t pid = n.pid <= INT32_MAX && n.pid != (uint64_t)getpid() ? (pid_t)n.pid : 0;
	if (n.pid && !pid)
		log_error("re-exec: the TLS gateway's record names no valid pid");
	if (why) {
		struct child *old = NULL;
		if (pid && (!t->cells || cell_holds(t->cells, GATEWAY_CELL, pid)) &&
		    child_adopt(t->children, pid, NULL, NULL, &old) == 0)
			child_signal(old, SIGKILL);
		log_error("re-exec: the TLS gateway (pid %d) cannot be taken over: %s; "
		          "listening afresh",
		          (int)pid, why);
		closep(&listen_fd);
		closep(&control);
		return -EBADMSG;
	}
	/* Its own cell's (another child of kin's is not taken for it). */
	if (pid && t->cells && !cell_holds(t->cells, GATEWAY_CELL, pid)) {
		log_error("re-exec: the TLS gateway's record names pid %d, which is not in cell "
		          "%s; a new gateway starts",
		          (int)pid, GATEWAY_CELL);
		pid = 0;
	} else if (pid && child_adopt(t->children, pid, gateway_exited, t, &t->gateway) < 0) {
		log_error("re-exec: the TLS gateway (pid %d) is not this kin's child; a new one "
		          "starts",
		          (int)pid);
		pid = 0;
	}
	if (control >= 0 && sock_opt(control, SO_TYPE) != SOCK_SEQPACKET) {
		log_error("re-exec: the TLS gateway's control socket is not one; the gateway is "
		          "restarted");
		closep(&control);
	}
	t->listen_fd = listen_fd;
	t->started_ns = n.started;
	t->handed = n.handed;
	t->starts = n.starts;
	if (n.backoff >= GATEWAY_BACKOFF_MIN_MS && n.backoff <= GATEWAY_BACKOFF_MAX_MS)
		t->backoff_ms = (unsigned)n.backoff;
	if (control >= 0 && t->gateway) {
		t->control = (struct ev_source){.fd = control, .fn = on_control, .data = t};
		fd_set_nonblock(control, true);
		if (ev_add(t->loop, &t->control, EPOLLIN) < 0) {
			log_error(
			    "tls: cannot watch the gateway's control socket; it is restarted");
			closep(&t->control.fd);
			t->control.fd = -1;
			child_signal(t->gateway, SIGTERM);
		}
	} else {
		closep(&control);
		if (t->gateway) /* it ends once it sees the control socket gone */
			child_signal(t->gateway, SIGTERM);
	}
	if (!t->gateway) { /* it was in its restart's backoff: the rest of it */
		uint64_t ms = n.restart_ms ? n.restart_ms : 1;
		if (ms > GATEWAY_BACKOFF_MAX_MS)
			ms = GATEWAY_BACKOFF_MAX_MS;
		struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ms / 1000),
		                                      .tv_nsec = (long)(ms % 1000) * 1000000}};
		timerfd_settime(t->timer.fd, 0, &its, NULL);
	}
	log_info("re-exec: the TLS gateway on %s taken over (pid %d)", addr, (int)pid);
	return 0;
}

void init_tls_reload(struct init_tls *t)
{
	if (t && t->gateway)
		child_signal(t->gateway, SIGHUP);
}

void init_tls_stop(struct init_tls *t)
{
	if (!t || t->stopping)
		return;
	t->stopping = true;
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	t->listen_fd = -1;
	if (t->gateway)
		child_signal(t->gateway, SIGTERM);
}

void init_tls_free(struct init_tls *t)
{
	if (!t)
		return;
	if (t->keep)
		keep_unregister(t->keep, t);
	init_tls_stop(t);
	if (t->control.fd >= 0) {
		ev_del(t->loop, &t->control);
		close(t->control.fd);
	}
	if (t->timer.fd >= 0) {
		ev_del(t->loop, &t->timer);
		close(t->timer.fd);
	}
	t->control.fd = t->timer.fd = -1;
	if (t->gateway)
		t->freed = true; /* its exit frees t */
	else
		free(t);
}

/* The gateway as a participant of the handover: made from its record by
 * init_tls_start (a re-exec's; a killed kin's gateway ends with its
 * control socket, so a state file has none), saved and counted here. */
static int tls_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	if (!w->file)
		init_tls_save(data, w, tag);
	return 0;
}

static size_t tls_keep_children(void *data)
{
	return init_tls_children(data);
}

void init_tls_keep(struct init_tls *t, struct keep *k)
{
	static const struct keep_part part = {.name = "the TLS gateway",
	                                      .tag = KEEP_TAG_TLS,
	                                      .level = KEEP_LEVEL_TLS,
	                                      .save = tls_keep_save,
	                                      .children = tls_keep_children};
	struct keep_part p = part;
	p.data = t;
	if (t && keep_register(k, &p) == 0)
		t->keep = k;
}
