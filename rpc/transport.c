/* transport: the sockets ttrpc runs over — unix (SO_PEERCRED says who
 * calls) and vsock (the host of a VM guest, or this machine over
 * loopback). No TCP: kin never listens without authentication, and TLS
 * comes with its own issue. */
#include "rpc/rpc-int.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/vm_sockets.h>

#define LISTEN_BACKLOG 4096

int rpc_address_parse(const char *s, struct rpc_address *ret)
{
	*ret = (struct rpc_address){.transport = RPC_TRANSPORT_UNIX};
	if (!s || !*s)
		return -EINVAL;
	if (str_startswith(s, "vsock:")) {
		char cid[16];
		const char *p = s + STRLEN("vsock:"), *colon = strchr(p, ':');
		if (!colon || (size_t)(colon - p) >= sizeof(cid) || colon == p)
			return -EINVAL;
		memcpy(cid, p, (size_t)(colon - p));
		cid[colon - p] = '\0';
		ret->transport = RPC_TRANSPORT_VSOCK;
		if (str_to_u32(cid, &ret->cid) < 0 || str_to_u32(colon + 1, &ret->port) < 0)
			return -EINVAL;
		return 0;
	}
	if (str_startswith(s, "unix:"))
		s += STRLEN("unix:");
	else if (strchr(s, ':') && s[0] != '/' && s[0] != '.')
		return -EINVAL; /* tcp:…, http:…: not a transport kin speaks */
	if (!*s)
		return -EINVAL;
	return str_copy(ret->path, sizeof(ret->path), s) < 0 ? -ENAMETOOLONG : 0;
}

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	return str_copy(sa->sun_path, sizeof(sa->sun_path), path) < 0 ? -ENAMETOOLONG : 0;
}

/* connect(2) bounded by timeout_ms (0: the kernel's own). */
static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	if (timeout_ms <= 0)
		return connect(fd, sa, len) < 0 ? -errno : 0;
	int r = fd_set_nonblock(fd, true);
	if (r < 0)
		return r;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN)
			return -errno;
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		r = poll(&p, 1, timeout_ms);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		int err = 0;
		socklen_t el = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
			return -errno;
		if (err)
			return -err;
	}
	return fd_set_nonblock(fd, false);
}

int rpc_address_connect(const struct rpc_address *a, int timeout_ms)
{
	int r;
	if (a->transport == RPC_TRANSPORT_VSOCK) {
		_cleanup_close_ int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		struct sockaddr_vm sa = {
		    .svm_family = AF_VSOCK, .svm_cid = a->cid, .svm_port = a->port};
		r = connect_timeout(fd, (struct sockaddr *)&sa, sizeof(sa), timeout_ms);
		return r < 0 ? r : TAKE_FD(fd);
	}
	struct sockaddr_un sa;
	r = unix_addr(a->path, &sa);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect_timeout(fd, (struct sockaddr *)&sa, sizeof(sa), timeout_ms);
	return r < 0 ? r : TAKE_FD(fd);
}

/* Is a server answering at path? A refused connect means a stale socket. */
/* Whether a server listens at sa. A killed kin's socket can still be
 * held for a few ms by a child it was starting (its setup runs until
 * exec closes its fds): asked again for up to UNIX_ALIVE_TRIES x 25 ms,
 * at start only, before the socket is taken for a live server's. */
#define UNIX_ALIVE_TRIES 20
static bool unix_alive(const struct sockaddr_un *sa)
{
	for (int i = 0; i < UNIX_ALIVE_TRIES; i++) {
		_cleanup_close_ int fd =
		    socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return false;
		int r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
		if (r < 0 && errno != EAGAIN && errno != EINPROGRESS)
			return false;
		if (i + 1 < UNIX_ALIVE_TRIES)
			usleep(25 * 1000);
	}
	return true;
}

int rpc_listen_unix(const char *path, mode_t mode, int *ret_fd)
{
	struct sockaddr_un sa;
	int r = unix_addr(path, &sa);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* The directory: 0700 unless others are let in (then 0711). */
	char dir[sizeof(sa.sun_path)];
	str_copy(dir, sizeof(dir), path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		r = mkdir_p(dir, mode == 0600 ? 0700 : 0711);
		if (r < 0)
			return r;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			return -errno;
		struct stat st;
		if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
			return -EEXIST; /* not a socket: not ours to remove */
		if (unix_alive(&sa))
			return -EADDRINUSE;
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return -errno;
	}
	if (chmod(path, mode) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		r = -errno;
		unlink(path);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int rpc_listen_vsock(uint32_t port, int *ret_fd)
{
	_cleanup_close_ int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno == EINVAL || errno == EPROTONOSUPPORT ? -EAFNOSUPPORT : -errno;
	struct sockaddr_vm sa = {
	    .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (listen(fd, LISTEN_BACKLOG) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int rpc_peer_identify(int fd, enum rpc_transport transport, struct rpc_peer *ret)
{
	*ret = (struct rpc_peer){.transport = transport, .uid = (uid_t)-1, .gid = (gid_t)-1};
	if (transport == RPC_TRANSPORT_UNIX) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			return -errno;
		ret->pid = cred.pid;
		ret->uid = cred.uid;
		ret->gid = cred.gid;
		return 0; /* the server decides who is allowed */
	}
	struct sockaddr_vm sa;
	socklen_t len = sizeof(sa);
	if (getpeername(fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	ret->cid = sa.svm_cid;
	/* No credentials cross vsock: only the hypervisor's host and local
	 * loopback reach kin; sibling guests (cid >= 3) do not. */
	ret->allowed = sa.svm_cid == VMADDR_CID_HOST || sa.svm_cid == VMADDR_CID_LOCAL;
	return 0;
}
