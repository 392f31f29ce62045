/* server: ttrpc served from PID 1's epoll loop. One ev_source per listener
 * and per connection, level-triggered, one read per wakeup so a flooding
 * client cannot starve the others. Everything is bounded: connections,
 * calls in flight per connection, the input buffer (one frame of at most
 * 4 MiB, sized from a checked header), the output queue. A connection
 * whose output passes RPC_OUT_HIGH stops being read until it drains; one
 * that passes out_max is cut. Nothing here frees a connection except its
 * own event handler and rpc_server_free, so a handler answering calls of
 * other connections never re-enters anything.
 *
 * This file holds the server itself and its listeners (accepting, and who
 * may call); connections are rpc/server_conn.c's, calls and dispatch
 * rpc/server_call.c's, the state they share rpc/server-int.h's. */
#include "rpc/server-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#define RPC_ACCEPT_BATCH 64

struct rpc_listener {
	struct ev_source src;
	struct rpc_server *server;
	enum rpc_transport transport;
	bool parent;    /* rpc_server_listen_parent's */
	char path[108]; /* unix: unlinked at free if it is still ours */
	dev_t dev;
	ino_t ino;
	struct list_node node; /* in rpc_server.listeners */
};

struct ev_loop *rpc_server_loop(const struct rpc_server *s)
{
	return s->loop;
}

struct rpc_routes **rpc_server_routes(struct rpc_server *s)
{
	return &s->routes;
}

void rpc_server_config_defaults(struct rpc_server_config *cfg)
{
	*cfg = (struct rpc_server_config){
	    .max_conns = RPC_MAX_CONNS_DEFAULT,
	    .max_inflight = RPC_MAX_INFLIGHT_DEFAULT,
	    .out_max = RPC_OUT_MAX_DEFAULT,
	    .frame_timeout_ms = RPC_FRAME_TIMEOUT_DEFAULT_MS,
	};
}

int rpc_parse_id_list(const char *s, uint32_t *ids, size_t max, size_t *ret_n)
{
	size_t n = 0;
	char word[16];

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s;;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(word) || n == max)
			return -EINVAL;
		memcpy(word, p, len);
		word[len] = '\0';
		if (str_to_u32(word, &ids[n]) < 0 || ids[n] == UINT32_MAX)
			return -EINVAL;
		n++;
		p += len;
		if (!*p)
			break;
		p++;
	}
	*ret_n = n;
	return 0;
}

/* ---- timers ----------------------------------------------------------------------- */

static void timer_arm(struct rpc_server *s, uint64_t when_ns)
{
	struct itimerspec its = {0};
	if (when_ns) {
		its.it_value.tv_sec = (time_t)(when_ns / 1000000000ull);
		its.it_value.tv_nsec = (long)(when_ns % 1000000000ull);
	}
	if (timerfd_settime(s->timer_src.fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		s->timer_armed_ns = when_ns;
}

int rpc_server_timer_add(struct rpc_server *s, struct rpc_timer *t, uint64_t when_ns)
{
	int r = rpc_timers_add(&s->timers, t, when_ns ? when_ns : 1);
	if (r < 0)
		return r;
	/* Only ever armed earlier here; a timer removed or moved later leaves
	 * at most one early wakeup, which rearms for the real first. */
	if (!s->timer_armed_ns || t->when_ns < s->timer_armed_ns)
		timer_arm(s, t->when_ns);
	return 0;
}

void rpc_server_timer_remove(struct rpc_server *s, struct rpc_timer *t)
{
	rpc_timers_remove(&s->timers, t);
}

static void timer_on_event(struct ev_source *src, uint32_t events)
{
	struct rpc_server *s = src->data;
	uint64_t ticks;
	(void)events;
	(void)!read(src->fd, &ticks, sizeof(ticks));
	s->timer_armed_ns = 0;
	uint64_t now = now_monotonic_ns();
	/* An entry's fn may add, move or remove others: take the first anew
	 * each time. Every fn unqueues or requeues its own entry later than
	 * now, so this ends. */
	struct rpc_timer *t;
	while ((t = rpc_timers_first(&s->timers)) && t->when_ns <= now) {
		rpc_timers_remove(&s->timers, t);
		t->fn(t, now);
	}
	t = rpc_timers_first(&s->timers);
	if (t && (!s->timer_armed_ns || t->when_ns < s->timer_armed_ns))
		timer_arm(s, t->when_ns);
}

/* ---- listeners ------------------------------------------------------------------------- */

void rpc_peer_admit_unix(const struct rpc_server *s, int fd, struct rpc_peer *peer)
{
	peer->superuser = peer->uid == 0 || peer->uid == geteuid();
	peer->allowed = peer->superuser || s->guard.admit;
	peer->n_groups = 0;
	gid_t groups[256];
	socklen_t len = sizeof(groups);
	if (!peer->superuser && getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
		for (size_t g = 0; g < len / sizeof(gid_t) && peer->n_groups < RPC_PEER_GROUPS_MAX;
		     g++)
			peer->groups[peer->n_groups++] = groups[g];
}

static void listener_on_event(struct ev_source *src, uint32_t events)
{
	struct rpc_listener *l = src->data;
	struct rpc_server *s = l->server;
	(void)events;

	for (int i = 0; i < RPC_ACCEPT_BATCH; i++) {
		int fd = accept4(src->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of fds: accept with the reserve and close at once,
				 * or the listener stays readable and spins the loop. */
				if (s->reserve_fd >= 0) {
					close(s->reserve_fd);
					fd = accept4(src->fd, NULL, NULL, SOCK_CLOEXEC);
					if (fd >= 0)
						close(fd);
					s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				}
				s->stats.refused++;
				log_warn("rpc: out of file descriptors; refusing a connection");
			}
			return;
		}
		struct rpc_peer peer;
		if (rpc_peer_identify(fd, l->transport, &peer) < 0) {
			close(fd);
			continue;
		}
		/* Root and kin's own uid may do anything; others only what a
		 * guard lets them, call by call. */
		if (l->parent) {
			/* A successor of the parent kin: root's, from outside our
			 * pid namespace (SO_PEERCRED's pid 0: not one of ours, as
			 * any process inside a zone would be), and then its channel
			 * in all but the fd. */
			if ((peer.uid != 0 && peer.uid != geteuid()) || peer.pid != 0) {
				log_warn(
				    "rpc: uid %u, pid %d is not the parent kin; its connection is "
				    "closed",
				    (unsigned)peer.uid, (int)peer.pid);
				close(fd);
				continue;
			}
			peer.allowed = peer.superuser = peer.relay_hop = peer.carry = true;
			peer.transport = RPC_TRANSPORT_OTHER; /* as the socketpair it replaces */
			log_info("rpc: a successor of the parent kin (pid %d) connected",
			         (int)peer.pid);
		} else if (peer.transport == RPC_TRANSPORT_UNIX) {
			rpc_peer_admit_unix(s, fd, &peer);
		} else {
			peer.superuser = peer.allowed; /* vsock: the host, or this machine */
		}
		if (rpc_server_add_conn(s, fd, &peer) == -EMFILE)
			log_debug("rpc: %u connections already; refused one", s->cfg.max_conns);
	}
}

static int listener_add(struct rpc_server *s, int fd, enum rpc_transport t, const char *path,
                        bool parent)
{
	struct rpc_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	*l = (struct rpc_listener){.src = {.fd = fd, .fn = listener_on_event, .data = l},
	                           .server = s,
	                           .transport = t,
	                           .parent = parent};
	if (path) {
		struct stat st;
		str_copy(l->path, sizeof(l->path), path);
		if (stat(path, &st) == 0) {
			l->dev = st.st_dev;
			l->ino = st.st_ino;
		}
	}
	int r = ev_add(s->loop, &l->src, EPOLLIN);
	if (r < 0) {
		if (path)
			unlink(path);
		close(fd);
		free(l);
		return r;
	}
	list_push(&s->listeners, &l->node);
	return 0;
}

size_t rpc_server_inflight(const struct rpc_server *s, const char *service)
{
	const struct rpc_conn *c;
	const struct rpc_call *call;
	size_t n = 0;
	list_for_each(c, &s->conns, node)
		list_for_each(call, &c->calls, node)
			if (call->method && !(call->method->flags & RPC_METHOD_REPLAY) &&
			    strcmp(call->method->service, service) == 0)
				n++;
	return n;
}

int rpc_server_listen_unix(struct rpc_server *s, const char *path)
{
	int fd;
	int r = rpc_listen_unix(path, s->cfg.socket_open ? 0666 : 0600, &fd);
	if (r < 0)
		return r;
	return listener_add(s, fd, RPC_TRANSPORT_UNIX, path, false);
}

int rpc_server_listen_fd(struct rpc_server *s, int fd, const char *path)
{
	int r = fd_set_nonblock(fd, true);
	if (r < 0) {
		close(fd);
		return r;
	}
	return listener_add(s, fd, RPC_TRANSPORT_UNIX, path, false);
}

int rpc_server_listen_parent(struct rpc_server *s, int fd)
{
	int r = sock_opt(fd, SO_ACCEPTCONN);
	if (r == 0)
		r = -EINVAL; /* not listening */
	if (r > 0)
		r = fd_set_nonblock(fd, true);
	if (r < 0) {
		close(fd);
		return r;
	}
	return listener_add(s, fd, RPC_TRANSPORT_UNIX, NULL, true);
}

int rpc_server_listen_vsock(struct rpc_server *s, uint32_t port)
{
	int fd;
	int r = rpc_listen_vsock(port, &fd);
	if (r < 0)
		return r;
	return listener_add(s, fd, RPC_TRANSPORT_VSOCK, NULL, false);
}

int rpc_server_listen_handed(struct rpc_server *s, const struct rpc_listen_fd *l)
{
	if (l->transport != RPC_TRANSPORT_UNIX && l->transport != RPC_TRANSPORT_VSOCK) {
		close(l->fd);
		return -EINVAL;
	}
	int r = fd_set_nonblock(l->fd, true);
	if (r < 0) {
		close(l->fd);
		return r;
	}
	return listener_add(s, l->fd, l->transport, l->path[0] ? l->path : NULL, l->parent);
}

size_t rpc_server_handover(struct rpc_server *s, const char *why, struct rpc_listen_fd *out,
                           size_t max)
{
	size_t n = 0;
	struct rpc_conn *c, *ctmp;
	list_for_each_safe(c, ctmp, &s->conns, node) {
		struct rpc_call *call, *tmp;
		list_for_each_safe(call, tmp, &c->calls, node)
			if (!rpc_call_replayed(call))
				rpc_call_abort(call, ERR_UNAVAILABLE, "%s", why);
		buf_out_flush(&c->out, c->src.fd, !c->not_socket);
	}
	s->freeing = true; /* no on_close: the VM link's port is reopened by the next kin */
	list_for_each_safe(c, ctmp, &s->conns, node)
		if (!rpc_conn_carried(c))
			rpc_conn_close(c);
	s->freeing = false; /* an execve that fails: this server goes on */
	struct rpc_listener *l, *tmp;
	list_for_each_safe(l, tmp, &s->listeners, node) {
		list_remove(&l->node);
		ev_del(s->loop, &l->src);
		if (n < max && l->transport != RPC_TRANSPORT_OTHER) {
			out[n] = (struct rpc_listen_fd){
			    .fd = l->src.fd, .transport = l->transport, .parent = l->parent};
			str_copy(out[n].path, sizeof(out[n].path), l->path);
			n++;
		} else {
			close(l->src.fd);
		}
		free(l);
	}
	return n;
}

int rpc_server_new(struct ev_loop *loop, const struct rpc_server_config *cfg,
                   struct rpc_server **ret)
{
	struct rpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	list_init(&s->listeners);
	list_init(&s->conns);
	if (cfg)
		s->cfg = *cfg;
	else
		rpc_server_config_defaults(&s->cfg);
	if (!s->cfg.max_conns)
		s->cfg.max_conns = RPC_MAX_CONNS_DEFAULT;
	if (!s->cfg.max_inflight)
		s->cfg.max_inflight = RPC_MAX_INFLIGHT_DEFAULT;
	/* Room for at least one largest answer, or no big answer could go. */
	if (s->cfg.out_max < RPC_MESSAGE_MAX + 64 * 1024)
		s->cfg.out_max = RPC_MESSAGE_MAX + 64 * 1024;
	if (!s->cfg.frame_timeout_ms)
		s->cfg.frame_timeout_ms = RPC_FRAME_TIMEOUT_DEFAULT_MS;
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->timer_src =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = timer_on_event,
	                       .data = s};
	int r = s->timer_src.fd < 0 ? -errno : ev_add(loop, &s->timer_src, EPOLLIN);
	if (r < 0) {
		if (s->timer_src.fd >= 0)
			close(s->timer_src.fd);
		s->timer_src.fd = -1;
		rpc_server_free(s);
		return r;
	}
	/* Route/Cancel is the wire's own (routing), named by its descriptor. */
	static struct rpc_method builtin;
	builtin = (struct rpc_method){kin__v1__route__descriptor.name,
	                              kin__v1__route__descriptor.methods[0].name,
	                              kin__v1__route__descriptor.methods[0].input,
	                              rpc_server_route_cancel,
	                              0,
	                              NULL};
	r = rpc_server_register(s, &builtin, 1);
	if (r < 0) {
		rpc_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void rpc_server_free(struct rpc_server *s)
{
	if (!s)
		return;
	s->freeing = true;
	rpc_routes_free(s); /* their calls end UNAVAILABLE while callers are still here */
	struct rpc_conn *c;
	while ((c = list_first_entry(&s->conns, struct rpc_conn, node)))
		rpc_conn_close(c);
	struct rpc_listener *l, *tmp;
	list_for_each_safe(l, tmp, &s->listeners, node) {
		list_remove(&l->node);
		ev_del(s->loop, &l->src);
		close(l->src.fd);
		struct stat st;
		/* Unlink only our socket: another kin may have replaced it. */
		if (l->path[0] && stat(l->path, &st) == 0 && st.st_dev == l->dev &&
		    st.st_ino == l->ino)
			unlink(l->path);
		free(l);
	}
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	if (s->timer_src.fd >= 0) {
		ev_del(s->loop, &s->timer_src);
		close(s->timer_src.fd);
	}
	rpc_timers_done(&s->timers);
	free(s);
}

void rpc_server_set_guard(struct rpc_server *s, const struct rpc_guard *guard)
{
	s->guard = guard ? *guard : (struct rpc_guard){0};
}

void rpc_server_get_stats(const struct rpc_server *s, struct rpc_server_stats *ret)
{
	*ret = s->stats;
}
