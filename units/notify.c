/* notify: the sd_notify socket services report to (NOTIFY_SOCKET).
 *
 * One datagram socket for every service, with SO_PASSCRED so each message
 * carries its sender's pid; the sender's service is the one whose cell
 * holds that pid (/proc/PID/cgroup), not anything the message claims.
 * Messages are bounded (one datagram, NOTIFY_MSG_MAX), fds sent with them
 * (FDSTORE=1) are closed, and a burst is drained a batch per loop turn. */
#include "units/units-int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NOTIFY_MSG_MAX   4096
#define NOTIFY_BATCH_MAX 64

struct units_notify {
	struct units *m;
	struct ev_source src;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

const char *units_notify_path(const struct units_notify *n)
{
	return n ? n->path : NULL;
}

/* The unit whose cell holds pid. */
static struct unit *unit_of_pid(struct units *m, pid_t pid)
{
	char cell[CELLS_PATH_MAX];
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		if (u->type == UNIT_SERVICE && u->type_data &&
		    unit_cell_path(u, cell, sizeof(cell)) == 0 && unit_cell_holds(cell, pid))
			return u;
	}
	return NULL;
}

static void close_fds(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			int *fds = (int *)(void *)CMSG_DATA(c);
			for (size_t i = 0; i < n; i++)
				close(fds[i]);
		}
}

static void on_notify(struct ev_source *src, uint32_t events)
{
	struct units_notify *n = src->data;
	(void)events;
	for (int i = 0; i < NOTIFY_BATCH_MAX; i++) {
		char buf[NOTIFY_MSG_MAX];
		union {
			struct cmsghdr align;
			char b[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 16)];
		} ctl;
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = ctl.b,
		                    .msg_controllen = sizeof(ctl.b)};
		ssize_t len = recvmsg(src->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
		if (len < 0)
			return;
		pid_t pid = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
				struct ucred uc;
				memcpy(&uc, CMSG_DATA(c), sizeof(uc));
				pid = uc.pid;
			}
		close_fds(&mh);
		if ((size_t)len > sizeof(buf) || (mh.msg_flags & MSG_TRUNC)) {
			log_info("units: notify: a message from pid %d over %d bytes dropped",
			         (int)pid, NOTIFY_MSG_MAX);
			continue;
		}
		if (pid <= 0)
			continue;
		struct unit *u = unit_of_pid(n->m, pid);
		if (!u) {
			log_debug("units: notify: pid %d is in no service's cell", (int)pid);
			continue;
		}
		service_notify(u, pid, buf, (size_t)len);
	}
	/* more left: the level-triggered loop calls again */
}

/* The socket a re-exec handed over, when it is what path names: a
 * datagram socket bound there. */
static bool kept_is_ours(int fd, const char *path)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	if (sock_opt(fd, SO_TYPE) != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path))
		return false;
	size_t n = len - offsetof(struct sockaddr_un, sun_path);
	return strnlen(sa.sun_path, n) == strlen(path) &&
	       memcmp(sa.sun_path, path, strlen(path)) == 0;
}

static int notify_bind(const char *path, struct err *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	str_copy(sa.sun_path, sizeof(sa.sun_path), path); /* checked to fit */
	char dir[sizeof(sa.sun_path)];
	str_copy(dir, sizeof(dir), path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir_p(dir, 0755);
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return err_set_errno(err, e, "units: notify socket: %s", strerror(-e));
	}
	int rcv = 1 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0) {
		int e = -errno;
		close(fd);
		return err_set_errno(err, e, "units: notify socket %s: %s", path, strerror(-e));
	}
	return fd;
}

int units_notify_new(struct units *m, const char *path, int keep_fd, struct units_notify **ret,
                     struct err *err)
{
	struct units_notify *n = calloc(1, sizeof(*n));
	if (!n) {
		if (keep_fd >= 0)
			close(keep_fd);
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	}
	n->m = m;
	n->src = (struct ev_source){.fd = -1, .fn = on_notify, .data = n};
	if (str_copy(n->path, sizeof(n->path), path) < 0) {
		if (keep_fd >= 0)
			close(keep_fd);
		free(n);
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "units: notify socket path \"%s\" is too long", path);
	}
	int fd = keep_fd;
	if (fd >= 0 && !kept_is_ours(fd, path)) {
		log_warn("units: the notify socket handed over is not %s; binding a new one", path);
		close(fd);
		fd = -1;
	}
	if (fd < 0 && (fd = notify_bind(path, err)) < 0) {
		free(n);
		return fd;
	}
	n->src.fd = fd;
	int r = ev_add(m->loop, &n->src, EPOLLIN);
	if (r < 0) {
		close(fd);
		free(n);
		return err_set_errno(err, r, "units: notify socket: %s", strerror(-r));
	}
	*ret = n;
	return 0;
}

int units_notify_fd(const struct units_notify *n)
{
	return n ? n->src.fd : -1;
}

void units_notify_free(struct units_notify *n)
{
	if (!n)
		return;
	if (n->src.fd >= 0) {
		ev_del(n->m->loop, &n->src);
		close(n->src.fd);
		unlink(n->path);
	}
	free(n);
}
