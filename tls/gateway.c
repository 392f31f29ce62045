/* gateway: the TLS role. One loop: accept on kin's listening socket,
 * non-blocking handshakes each cut at its deadline, a handoff of each
 * verified peer to kin over the control socket, and the relays. The
 * files are reloaded on SIGHUP and when they change; the first load
 * comes before the sandbox, every later one inside it.
 *
 * Bounds: at most max_conns connections (past it a new one is accepted
 * and closed at once, so the peer learns at once), at most
 * max_handshakes in progress (past it the listening socket is not read:
 * new peers wait in the kernel's backlog until a handshake ends, which
 * is at the latest its deadline). All handshakes have the same length,
 * so their list in arrival order is sorted by deadline and one timerfd
 * armed for the head is all the timing there is. */
#include "tls/tls-int.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#define GW_ACCEPT_BATCH   32 /* accepts per wakeup, so one flood cannot starve relays */
#define GW_REFUSE_LOG_MAX 20 /* refused handshakes logged per second; the rest at debug */

struct gw_conn {
	struct list_node node; /* gw->handshakes (by deadline) or gw->relays */
	struct gateway *gw;
	SSL *ssl;
	struct ev_source src;
	uint64_t deadline_ns;
	char peer[64];
	struct tls_relay *relay; /* after the handshake; owns ssl and fd then */
};

struct file_sig {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct gateway {
	const struct tls_gateway_config *cfg;
	unsigned max_conns, max_handshakes, handshake_ms;
	struct ev_loop *loop;
	SSL_CTX *ctx;
	struct ev_source listen, control, sig, hs_timer, reload_timer;
	bool listening;
	struct list_node handshakes, relays;
	size_t n_handshakes, n_conns;
	struct file_sig sigs[4];
	bool quit;
	uint64_t refuse_window_ns;
	unsigned refuse_logged, refuse_hidden;
};

/* ---- logs of refusals, bounded ------------------------------------------------ */

static void gw_refused(struct gateway *gw, const char *peer, const char *why)
{
	uint64_t now = now_monotonic_ns();
	if (now - gw->refuse_window_ns >= 1000000000ull) {
		if (gw->refuse_hidden)
			log_warn("tls gateway: %u more refused connections not logged",
			         gw->refuse_hidden);
		gw->refuse_window_ns = now;
		gw->refuse_logged = gw->refuse_hidden = 0;
	}
	if (gw->refuse_logged < GW_REFUSE_LOG_MAX) {
		gw->refuse_logged++;
		log_warn("tls gateway: %s refused: %s", peer, why);
		return;
	}
	gw->refuse_hidden++;
	log_debug("tls gateway: %s refused: %s", peer, why);
}

/* ---- the files -------------------------------------------------------------------- */

static void gw_files_sig(const struct tls_files *f, struct file_sig sigs[4])
{
	const char *paths[4] = {f->cert, f->key, f->ca, f->crl};
	for (int i = 0; i < 4; i++) {
		struct stat st;
		memset(&sigs[i], 0, sizeof(sigs[i]));
		if (paths[i] && stat(paths[i], &st) == 0)
			sigs[i] = (struct file_sig){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
	}
}

static void gw_reload(struct gateway *gw, const char *why)
{
	struct err e = {0};
	SSL_CTX *ctx;
	/* What was looked at is remembered even when the load fails, so a bad
	 * file is reported once, not at every check. */
	gw_files_sig(&gw->cfg->files, gw->sigs);
	if (tls_ctx_new(&gw->cfg->files, true, &ctx, &e) < 0) {
		log_error("tls gateway: %s; keeping the files loaded before", e.msg);
		return;
	}
	SSL_CTX_free(gw->ctx); /* connections keep their own reference */
	gw->ctx = ctx;
	log_info("tls gateway: files reloaded (%s)", why);
}

static void gw_on_reload_timer(struct ev_source *src, uint32_t events)
{
	struct gateway *gw = src->data;
	uint64_t ticks;
	(void)events;
	(void)!read(src->fd, &ticks, sizeof(ticks));
	struct file_sig now[4];
	gw_files_sig(&gw->cfg->files, now);
	if (memcmp(now, gw->sigs, sizeof(now)) != 0)
		gw_reload(gw, "a file changed");
}

static void gw_on_signal(struct ev_source *src, uint32_t events)
{
	struct gateway *gw = src->data;
	struct signalfd_siginfo si;
	(void)events;
	while (read(src->fd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGHUP)
			gw_reload(gw, "SIGHUP");
}

/* ---- connections ------------------------------------------------------------------ */

static void gw_listen_update(struct gateway *gw)
{
	bool want = gw->n_handshakes < gw->max_handshakes;
	if (want != gw->listening && ev_mod(gw->loop, &gw->listen, want ? EPOLLIN : 0) == 0)
		gw->listening = want;
}

static void gw_timer_arm(struct gateway *gw)
{
	struct itimerspec its = {0};
	if (!list_is_empty(&gw->handshakes)) {
		struct gw_conn *head = list_entry(gw->handshakes.next, struct gw_conn, node);
		its.it_value.tv_sec = (time_t)(head->deadline_ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(head->deadline_ns % 1000000000ull);
	}
	(void)timerfd_settime(gw->hs_timer.fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void gw_conn_free(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	list_remove(&c->node);
	if (c->relay) {
		tls_relay_free(c->relay);
	} else {
		(void)ev_del(gw->loop, &c->src);
		SSL_free(c->ssl);
		close(c->src.fd);
		gw->n_handshakes--;
	}
	gw->n_conns--;
	free(c);
	gw_listen_update(gw);
}

static void gw_handshake_fail(struct gw_conn *c, const char *why)
{
	struct gateway *gw = c->gw;
	bool head = gw->handshakes.next == &c->node;
	gw_refused(gw, c->peer, why);
	gw_conn_free(c);
	if (head)
		gw_timer_arm(gw);
}

static void gw_on_relay_done(struct tls_relay *r, void *data)
{
	struct gw_conn *c = data;
	(void)r;
	log_debug("tls gateway: %s closed", c->peer);
	gw_conn_free(c);
}

/* The handshake is done: the peer's names, a socketpair, one end to kin,
 * the other relayed. */
static void gw_handshake_done(struct gw_conn *c)
{
	struct gateway *gw = c->gw;
	struct tls_identity id = {0};
	X509 *cert = SSL_get0_peer_certificate(c->ssl);
	if (!cert || SSL_get_verify_result(c->ssl) != X509_V_OK)
		return gw_handshake_fail(c, "peer certificate not verified");
	snprintf(id.peer, sizeof(id.peer), "%s", c->peer);
	tls_identity_from_cert(cert, &id);

	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0) {
		log_error("tls gateway: %s: socketpair: %m", c->peer);
		return gw_handshake_fail(c, "no socketpair for it");
	}
	int r = tls_handoff_send(gw->cfg->control_fd, sp[1], &id);
	close(sp[1]);
	if (r < 0) {
		close(sp[0]);
		return gw_handshake_fail(c, r == -EAGAIN ? "kin is not taking connections (busy)"
		                                         : "the handoff to kin failed");
	}
	bool head = gw->handshakes.next == &c->node;
	list_remove(&c->node);
	(void)ev_del(gw->loop, &c->src);
	gw->n_handshakes--;
	r = tls_relay_new(gw->loop, c->ssl, c->src.fd, sp[0], gw_on_relay_done, c, &c->relay);
	if (r < 0) {
		close(sp[0]);
		SSL_free(c->ssl);
		close(c->src.fd);
		gw->n_conns--;
		free(c);
	} else {
		list_append(&gw->relays, &c->node);
		log_info("tls gateway: %s handed over as %s", c->peer,
		         id.n_names ? id.names[0] : "(no name)");
	}
	if (head)
		gw_timer_arm(gw);
	gw_listen_update(gw);
}

static void gw_on_handshake(struct ev_source *src, uint32_t events)
{
	struct gw_conn *c = src->data;
	(void)events;
	ERR_clear_error();
	int n = SSL_do_handshake(c->ssl);
	if (n == 1)
		return gw_handshake_done(c);
	int e = SSL_get_error(c->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		(void)ev_mod(c->gw->loop, &c->src, e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT);
		return;
	}
	char why[256];
	tls_handshake_reason(c->ssl, why, sizeof(why));
	gw_handshake_fail(c, why);
}

static void gw_on_hs_timer(struct ev_source *src, uint32_t events)
{
	struct gateway *gw = src->data;
	uint64_t ticks, now = now_monotonic_ns();
	char why[64];
	(void)events;
	(void)!read(src->fd, &ticks, sizeof(ticks));
	snprintf(why, sizeof(why), "handshake not done after %u ms", gw->handshake_ms);
	while (!list_is_empty(&gw->handshakes)) {
		struct gw_conn *c = list_entry(gw->handshakes.next, struct gw_conn, node);
		if (c->deadline_ns > now)
			break;
		gw_refused(gw, c->peer, why);
		gw_conn_free(c);
	}
	gw_timer_arm(gw);
}

static void gw_peer_name(int fd, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	snprintf(buf, size, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
	}
}

static void gw_accept_one(struct gateway *gw, int fd)
{
	char peer[64];
	gw_peer_name(fd, peer, sizeof(peer));
	if (gw->n_conns >= gw->max_conns) {
		close(fd);
		gw_refused(gw, peer, "too many connections");
		return;
	}
	struct gw_conn *c = calloc(1, sizeof(*c));
	SSL *ssl = c ? SSL_new(gw->ctx) : NULL;
	if (!ssl || SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		free(c);
		close(fd);
		ERR_clear_error();
		gw_refused(gw, peer, "out of memory");
		return;
	}
	SSL_set_accept_state(ssl);
	c->gw = gw;
	c->ssl = ssl;
	c->src = (struct ev_source){.fd = fd, .fn = gw_on_handshake, .data = c};
	memcpy(c->peer, peer, sizeof(peer));
	c->deadline_ns = now_monotonic_ns() + (uint64_t)gw->handshake_ms * 1000000ull;
	if (ev_add(gw->loop, &c->src, EPOLLIN) < 0) {
		SSL_free(ssl);
		free(c);
		close(fd);
		return;
	}
	bool first = list_is_empty(&gw->handshakes);
	list_append(&gw->handshakes, &c->node);
	gw->n_handshakes++;
	gw->n_conns++;
	if (first)
		gw_timer_arm(gw);
}

static void gw_on_listen(struct ev_source *src, uint32_t events)
{
	struct gateway *gw = src->data;
	(void)events;
	for (int i = 0; i < GW_ACCEPT_BATCH && gw->n_handshakes < gw->max_handshakes; i++) {
		int fd = accept4(src->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				log_warn("tls gateway: accept: %m");
			break;
		}
		/* A call is one record each way: Nagle would hold an answer
		 * back for the client's delayed ACK. */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		gw_accept_one(gw, fd);
	}
	gw_listen_update(gw);
}

static void gw_on_control(struct ev_source *src, uint32_t events)
{
	struct gateway *gw = src->data;
	char b[64];
	ssize_t n = recv(src->fd, b, sizeof(b), MSG_DONTWAIT);
	/* kin says nothing on this socket; its end closing is the stop. */
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
	    (n < 0 && (events & (EPOLLHUP | EPOLLERR))))
		gw->quit = true;
}

/* ---- setup -------------------------------------------------------------------------- */

/* Two fds per connection and a few of our own must fit the fd limit. */
static void gw_fit_fd_limit(struct gateway *gw)
{
	unsigned long need = (unsigned long)gw->max_conns * 2 + 64;
	unsigned long have = fd_limit_raise(need);
	if (have == 0)
		return;
	if (have < need) {
		unsigned fit = (unsigned)((have - 64) / 2);
		log_warn("tls gateway: %u connections at most (the fd limit is %llu)", fit,
		         (unsigned long long)have);
		gw->max_conns = fit;
	}
}

static int gw_add(struct gateway *gw, struct ev_source *src, int fd, ev_handler_fn fn,
                  uint32_t events)
{
	*src = (struct ev_source){.fd = fd, .fn = fn, .data = gw};
	return fd < 0 ? -errno : ev_add(gw->loop, src, events);
}

static int gw_setup(struct gateway *gw)
{
	int r = ev_loop_new(&gw->loop);
	if (r < 0)
		return r;
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN); /* OpenSSL writes sockets with write(2) */
	r = fd_set_nonblock(gw->cfg->listen_fd, true);
	if (r < 0)
		return r;
	if ((r = gw_add(gw, &gw->listen, gw->cfg->listen_fd, gw_on_listen, EPOLLIN)) < 0 ||
	    (r = gw_add(gw, &gw->control, gw->cfg->control_fd, gw_on_control, EPOLLIN)) < 0 ||
	    (r = gw_add(gw, &gw->sig, signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC), gw_on_signal,
	                EPOLLIN)) < 0 ||
	    (r = gw_add(gw, &gw->hs_timer,
	                timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC), gw_on_hs_timer,
	                EPOLLIN)) < 0 ||
	    (r = gw_add(gw, &gw->reload_timer,
	                timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                gw_on_reload_timer, EPOLLIN)) < 0)
		return r;
	gw->listening = true;
	struct itimerspec its = {
	    .it_interval = {TLS_RELOAD_CHECK_MS / 1000, (TLS_RELOAD_CHECK_MS % 1000) * 1000000},
	    .it_value = {TLS_RELOAD_CHECK_MS / 1000, (TLS_RELOAD_CHECK_MS % 1000) * 1000000},
	};
	return timerfd_settime(gw->reload_timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static void gw_teardown(struct gateway *gw)
{
	struct gw_conn *c, *tmp;
	list_for_each_safe(c, tmp, &gw->handshakes, node)
		gw_conn_free(c);
	list_for_each_safe(c, tmp, &gw->relays, node)
		gw_conn_free(c);
	struct ev_source *own[] = {&gw->sig, &gw->hs_timer, &gw->reload_timer};
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		if (own[i]->fd >= 0)
			close(own[i]->fd);
	ev_loop_free(gw->loop);
	SSL_CTX_free(gw->ctx);
}

int tls_gateway_run(const struct tls_gateway_config *cfg)
{
	struct gateway gw = {
	    .cfg = cfg,
	    .max_conns = cfg->max_conns ? cfg->max_conns : TLS_MAX_CONNS_DEFAULT,
	    .max_handshakes =
	        cfg->max_handshakes ? cfg->max_handshakes : TLS_MAX_HANDSHAKES_DEFAULT,
	    .handshake_ms = cfg->handshake_ms ? cfg->handshake_ms : TLS_HANDSHAKE_MS_DEFAULT,
	    .sig.fd = -1,
	    .hs_timer.fd = -1,
	    .reload_timer.fd = -1,
	};
	struct err e = {0};
	list_init(&gw.handshakes);
	list_init(&gw.relays);

	gw_files_sig(&cfg->files, gw.sigs);
	if (tls_ctx_new(&cfg->files, true, &gw.ctx, &e) < 0) {
		log_error("tls gateway: %s", e.msg);
		return 1;
	}
	gw_fit_fd_limit(&gw);
	int r = gw_setup(&gw);
	if (r < 0) {
		log_error("tls gateway: setup: %s", strerror(-r));
		gw_teardown(&gw);
		return 1;
	}
	if (tls_sandbox_enter(&e) < 0) {
		log_error("%s", e.msg);
		gw_teardown(&gw);
		return 1;
	}
	log_info("tls gateway: serving (%u connections, %u handshakes at once, %u ms each)",
	         gw.max_conns, gw.max_handshakes, gw.handshake_ms);
	while (!gw.quit) {
		r = ev_run_once(gw.loop, -1);
		if (r < 0) {
			log_error("tls gateway: epoll: %s", strerror(-r));
			break;
		}
	}
	gw_teardown(&gw);
	return r < 0 ? 1 : 0;
}

/* `kin gateway`: the role kin starts itself in to terminate TLS outside
 * PID 1 (tls_serve's runner starts it). Not for people to run: it takes
 * the listening socket as fd 3 and kin's control socket as fd 4, and the
 * files to load as flags. */
int tls_gateway_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"cert", required_argument, NULL, 'c'},         {"key", required_argument, NULL, 'k'},
	    {"ca", required_argument, NULL, 'a'},           {"crl", required_argument, NULL, 'r'},
	    {"handshake-ms", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
	};
	struct tls_gateway_config cfg = {.listen_fd = 3, .control_fd = 4};
	uint32_t u;
	int c;
	log_set_level(LOG_INFO_);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cfg.files.cert = optarg;
			break;
		case 'k':
			cfg.files.key = optarg;
			break;
		case 'a':
			cfg.files.ca = optarg;
			break;
		case 'r':
			cfg.files.crl = optarg;
			break;
		case 't':
			if (str_to_u32(optarg, &u) < 0) {
				fprintf(stderr,
				        "kin gateway: --handshake-ms '%s' is not a number\n",
				        optarg);
				return 2;
			}
			cfg.handshake_ms = u;
			break;
		default:
			fprintf(stderr, "kin gateway: started by kin for --tls-listen; not for use "
			                "by hand\n");
			return 2;
		}
	}
	if (!cfg.files.cert || !cfg.files.key || !cfg.files.ca) {
		fprintf(stderr, "kin gateway: --cert, --key and --ca are needed\n");
		return 2;
	}
	return tls_gateway_run(&cfg);
}
