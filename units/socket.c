/* socket: .socket units — kin listens, the service starts on the first
 * connection or datagram and gets the fds as LISTEN_FDS (Accept=no).
 *
 * While the service runs the socket is not watched (the service reads it);
 * when the service ends, kin listens again. Addresses: a path, an abstract
 * name ("@name"), a port, "ADDR:PORT" or "[V6]:PORT". Accept=yes (a
 * service instance per connection) is refused with a clear message. */
#include "units/units-int.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct sock {
	struct unit *u;
	int fds[UNIT_LISTENS_MAX];
	struct ev_source srcs[UNIT_LISTENS_MAX];
	size_t n;
	size_t kept_want; /* adopting: the fds the killed kin's record names */
	bool watching;
	char names[UNIT_LISTENS_MAX * 64];
};

static void sock_unwatch(struct sock *k)
{
	if (!k->watching)
		return;
	for (size_t i = 0; i < k->n; i++)
		ev_del(k->u->m->loop, &k->srcs[i]);
	k->watching = false;
}

static void on_ready(struct ev_source *src, uint32_t events);

static void sock_watch(struct sock *k)
{
	if (k->watching)
		return;
	for (size_t i = 0; i < k->n; i++) {
		k->srcs[i] = (struct ev_source){.fd = k->fds[i], .fn = on_ready, .data = k};
		ev_add(k->u->m->loop, &k->srcs[i], EPOLLIN);
	}
	k->watching = true;
}

static void sock_close(struct sock *k)
{
	sock_unwatch(k);
	const struct unit_socket *c = &k->u->def->socket;
	const struct cells_keeper *kp = &k->u->m->keeper;
	for (size_t i = 0; i < k->n; i++) {
		if (kp->unkeep)
			kp->unkeep(k->fds[i], kp->data);
		close(k->fds[i]);
		/* the definition may have changed (daemon-reload) since these opened */
		const char *a = i < c->nlisten ? c->listen[i].address : NULL;
		if (c->remove_on_stop && a && a[0] == '/') {
			char path[512];
			snprintf(path, sizeof(path), "%s%s", k->u->m->root, a);
			unlink(path);
		}
	}
	k->n = 0;
}

static int sock_type(enum unit_listen_type t)
{
	return t == UNIT_LISTEN_DATAGRAM    ? SOCK_DGRAM
	       : t == UNIT_LISTEN_SEQPACKET ? SOCK_SEQPACKET
	                                    : SOCK_STREAM;
}

static int inet_addr_parse(const char *a, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64] = "";
	uint16_t port;
	uint32_t p32;
	if (str_to_u32(a, &p32) == 0) { /* a port alone: every address, v6 and v4 */
		if (p32 == 0 || p32 > 65535)
			return -EINVAL;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		*s6 = (struct sockaddr_in6){.sin6_family = AF_INET6,
		                            .sin6_port = htons((uint16_t)p32),
		                            .sin6_addr = in6addr_any};
		*len = sizeof(*s6);
		return 0;
	}
	if (str_hostport_split(a, host, sizeof(host), &port, NULL) < 0)
		return -EINVAL;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return 0;
	}
	return -EINVAL;
}

/* Opens one Listen*= address; the fd, or -errno with err. */
static int open_listen(struct sock *k, const struct unit_listen *l, struct err *err)
{
	const struct unit_socket *c = &k->u->def->socket;
	const char *a = l->address, *name = k->u->name;
	struct sockaddr_storage ss = {0};
	socklen_t len;
	char path[512] = "";
	if (l->type == UNIT_LISTEN_FIFO)
		return err_set(err, -EOPNOTSUPP, ERR_UNIMPLEMENTED,
		               "unit \"%s\": ListenFIFO= is not supported by kin yet", name);
	if (a[0] == '/' || a[0] == '@') {
		struct sockaddr_un *su = (struct sockaddr_un *)&ss;
		su->sun_family = AF_UNIX;
		if (a[0] == '/')
			snprintf(path, sizeof(path), "%s%s", k->u->m->root, a);
		const char *p = a[0] == '/' ? path : a;
		if (strlen(p) >= sizeof(su->sun_path))
			return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
			               "unit \"%s\": socket path %s is too long", name, a);
		memcpy(su->sun_path, p, strlen(p));
		if (a[0] == '@')
			su->sun_path[0] = '\0';
		len =
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(p) + (a[0] == '/'));
	} else if (inet_addr_parse(a, &ss, &len) < 0) {
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit \"%s\": listen address \"%s\" is not a path, @name, port or "
		               "ADDR:PORT",
		               name, a);
	}
	int fd = socket(ss.ss_family, sock_type(l->type) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return err_set_errno(err, -errno, "unit \"%s\": socket for %s: %m", name, a);
	int one = 1;
	if (ss.ss_family != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (c->reuse_port)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (c->pass_credentials)
		setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	if (ss.ss_family == AF_INET6) {
		int v6only = c->bind_ipv6_only == 1;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	}
	if (path[0]) {
		char dir[512];
		str_copy(dir, sizeof(dir), path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			mkdir_p(dir, c->directory_mode ? c->directory_mode : 0755);
		}
		unlink(path);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    (l->type != UNIT_LISTEN_DATAGRAM &&
	     listen(fd, c->backlog ? (int)c->backlog : SOMAXCONN) < 0)) {
		int e = -errno;
		close(fd);
		return err_set_errno(err, e, "unit \"%s\": listening on %s: %s", name, a,
		                     strerror(-e));
	}
	if (path[0])
		chmod(path, c->socket_mode ? c->socket_mode : 0666);
	if (path[0] && (c->socket_user || c->socket_group)) {
		uid_t uid;
		gid_t gid;
		if (unit_owner_lookup(k->u->m->root, c->socket_user, c->socket_group, &uid, &gid) <
		        0 ||
		    chown(path, uid, gid) < 0) {
			close(fd);
			return err_set(err, -EINVAL, ERR_FAILED_PRECONDITION,
			               "unit \"%s\": SocketUser=%s SocketGroup=%s for %s: no such "
			               "user or group in /etc/passwd, /etc/group, or chown failed",
			               name, c->socket_user ? c->socket_user : "",
			               c->socket_group ? c->socket_group : "", a);
		}
	}
	return fd;
}

static struct sock *sock_get(struct unit *u)
{
	if (!u->type_data) {
		struct sock *k = calloc(1, sizeof(*k));
		if (!k)
			return NULL;
		k->u = u;
		u->type_data = k;
	}
	return u->type_data;
}

static int sock_start(struct unit *u, struct err *err)
{
	struct sock *k = sock_get(u);
	const struct unit_socket *c = &u->def->socket;
	if (!k)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	if (k->n)
		return 0;
	if (c->accept)
		return err_set(
		    err, -EOPNOTSUPP, ERR_UNIMPLEMENTED,
		    "unit \"%s\": Accept=yes (a service per connection) is not supported "
		    "by kin yet",
		    u->name);
	if (!c->nlisten)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit \"%s\" listens on nothing",
		               u->name);
	k->names[0] = '\0';
	for (size_t i = 0; i < c->nlisten; i++) {
		int fd = open_listen(k, &c->listen[i], err);
		if (fd < 0) {
			sock_close(k);
			unit_set_result(u, "resources");
			unit_set_active(u, UNIT_ACTIVE_FAILED, "failed");
			return fd;
		}
		k->fds[k->n++] = fd;
		const char *nm = c->file_descriptor_name ? c->file_descriptor_name : u->name;
		size_t used = strlen(k->names);
		snprintf(k->names + used, sizeof(k->names) - used, "%s%s", used ? ":" : "", nm);
	}
	if (u->m->keeper.keep) /* what connects while no kin runs waits in them */
		u->m->keeper.keep(k->fds, k->n, u->m->keeper.data);
	sock_watch(k);
	unit_set_result(u, "success");
	unit_set_active(u, UNIT_ACTIVE_ACTIVE, "listening");
	return 0;
}

static int sock_stop(struct unit *u, struct err *err)
{
	struct sock *k = u->type_data;
	(void)err;
	if (k)
		sock_close(k);
	unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
	return 0;
}

static struct unit *sock_service(struct sock *k)
{
	char want[UNIT_NAME_MAX + 1];
	unit_triggered_name(k->u, want, sizeof(want));
	return want[0] ? units_find(k->u->m, want) : NULL;
}

static void on_ready(struct ev_source *src, uint32_t events)
{
	struct sock *k = src->data;
	struct err err = {0};
	(void)events;
	sock_unwatch(k);
	struct unit *svc = sock_service(k);
	if (!svc || !svc->def) {
		log_warn("units: %s: no service to start for it", k->u->name);
		unit_set_active(k->u, UNIT_ACTIVE_FAILED, "failed");
		unit_set_result(k->u, "resources");
		sock_close(k);
		return;
	}
	unit_set_active(k->u, UNIT_ACTIVE_ACTIVE, "running");
	service_set_socket_fds(svc, k->u);
	if (units_job_add(k->u->m, svc, JOB_START, NULL, &err) < 0) {
		log_warn("units: %s: %s", k->u->name, err.msg);
		sock_watch(k);
		return;
	}
	units_dispatch_later(k->u->m);
}

void socket_service_ended(struct unit *sock)
{
	struct sock *k = sock->type_data;
	if (!k || !k->n || sock->m->shutting_down)
		return;
	sock_watch(k);
	unit_set_active(sock, UNIT_ACTIVE_ACTIVE, "listening");
}

int socket_fds(struct unit *sock, const int **ret_fds, size_t *ret_n, const char **ret_names)
{
	struct sock *k = sock->type_data;
	if (!k || !k->n)
		return -ENOENT;
	sock_unwatch(k); /* the service reads them now */
	unit_set_active(sock, UNIT_ACTIVE_ACTIVE, "running");
	*ret_fds = k->fds;
	*ret_n = k->n;
	*ret_names = k->names;
	return 0;
}

bool socket_has_fds(const struct unit *sock)
{
	const struct sock *k = sock->type == UNIT_SOCKET ? sock->type_data : NULL;
	return k && k->n && (!sock->m->adopting || k->n == k->kept_want);
}

void sockets_keep(struct units *m)
{
	for (size_t i = 0; m->keeper.keep && i < m->nunits; i++) {
		const struct unit *u = m->units[i];
		const struct sock *k = u->type == UNIT_SOCKET ? u->type_data : NULL;
		if (k && k->n)
			m->keeper.keep(k->fds, k->n, m->keeper.data);
	}
}

void socket_unkeep(struct unit *sock)
{
	const struct sock *k = sock->type == UNIT_SOCKET ? sock->type_data : NULL;
	const struct cells_keeper *kp = &sock->m->keeper;
	for (size_t i = 0; k && kp->unkeep && i < k->n; i++)
		kp->unkeep(k->fds[i], kp->data);
}

/* Kin lets go of them (units_free at a stop or a re-exec: the keeper
 * keeps its own; a unit stopped let go in sock_close, one given up in
 * socket_unkeep first). */
static void sock_free(struct unit *u)
{
	struct sock *k = u->type_data;
	if (!k)
		return;
	sock_unwatch(k);
	for (size_t i = 0; i < k->n; i++)
		close(k->fds[i]);
	free(k);
	u->type_data = NULL;
}

/* ---- re-exec (units.h): the listening fds go along; after a kill, the
 * keeper's are found again by their inodes ---- */

enum { SK_FD = UNIT_STATE_TYPE_SOCKET, SK_NAMES, SK_INO };

static void sock_save(struct unit *u, struct state_w *w)
{
	struct sock *k = u->type_data;
	for (size_t i = 0; k && i < k->n; i++) {
		state_put_fd(w, SK_FD, k->fds[i]);
		state_put_u64(w, SK_INO, fd_ino(k->fds[i]));
	}
	if (k)
		state_put_str(w, SK_NAMES, k->names);
}

static int sock_restore(struct unit *u, struct state_in *in, const struct state_field *f)
{
	if (f->tag != SK_FD && f->tag != SK_NAMES && f->tag != SK_INO)
		return 0;
	struct sock *k = sock_get(u);
	if (!k)
		return -ENOMEM;
	if (f->tag == SK_NAMES)
		return state_get_str(f, k->names, sizeof(k->names)) < 0 ? -EBADMSG : 1;
	int fd = -1;
	uint64_t ino;
	if (f->tag == SK_INO) { /* a re-exec's fds came with SK_FD */
		if (!u->m->adopting)
			return 1;
		if (state_get_u64(f, &ino) < 0)
			return -EBADMSG;
		k->kept_want++;
		if ((fd = units_kept_take(u->m->kept, u->m->nkept, ino)) < 0)
			return 1; /* not held: sock_resume says so */
	}
	if (k->n >= UNIT_LISTENS_MAX || (fd < 0 && state_get_fd(in, f, &fd) < 0)) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	k->fds[k->n++] = fd;
	return 1;
}

static int sock_resume(struct unit *u, char *why, size_t size)
{
	struct sock *k = u->type_data;
	bool active = u->active == UNIT_ACTIVE_ACTIVE;
	if (!active && k && k->n) {
		snprintf(why, size, "it holds fds but is %s", unit_active_name(u->active));
		return -EBADMSG;
	}
	if (!active)
		return 0;
	if (!k || !k->n) {
		snprintf(why, size, "it is active with no fd handed over");
		return -EBADMSG;
	}
	if (u->m->adopting && k->kept_want != k->n) {
		snprintf(why, size, "the keeper held %zu of its %zu listening fds", k->n,
		         k->kept_want);
		return -EBADMSG;
	}
	if (strcmp(u->sub, "listening") == 0)
		sock_watch(k); /* else its service has them; its end watches them again */
	return 0;
}

const struct unit_ops units_socket_ops = {
    .restore = sock_restore,
    .save = sock_save,
    .resume = sock_resume,
    .start = sock_start,
    .stop = sock_stop,
    .free = sock_free,
};

/* Targets, and the types kin has nothing to do for (devices, mounts and
 * swaps are sysinit's, slices are cells): active once started. */
static int target_start(struct unit *u, struct err *err)
{
	(void)err;
	unit_set_active(u, UNIT_ACTIVE_ACTIVE, "active");
	return 0;
}

static int target_stop(struct unit *u, struct err *err)
{
	(void)err;
	unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
	return 0;
}

const struct unit_ops units_target_ops = {
    .start = target_start,
    .stop = target_stop,
};
