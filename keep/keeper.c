/* keeper: `kin keeper FD`, a small process a daemon kin with a state
 * directory starts (keep/file.c) to hold the other ends of its
 * executables' pipes, so that a workload does not die of SIGPIPE, or read
 * EOF on its stdin, while no kin runs after kin was killed; the successor
 * takes them back. It listens on FD (a unix seqpacket socket bound at
 * <state-dir>/keeper.sock), serves one kin of its own uid at a time (a
 * caller while that kin's connection is open is turned away), and
 * holds at most KEEPER_FDS_MAX fds. Messages (the first byte):
 *   'K' + fds   keep them (one already held, by inode, is not kept twice)
 *   'D' + u64   let go of the one with this inode (kin closed a stdin)
 *   'G'         give every fd held back, 'F' + fds messages then 'Z'
 *   'E'         kin stopped cleanly: exit
 * A pipe end nobody else has any more (the workload ended: no writer, or
 * no reader) is let go by itself: the keeper never reads or writes one.
 * A terminal's pty master is held the same way (told apart by its pty's
 * number, lib's fd_ino; let go once no process has its slave): closed,
 * it would hang the terminal up and SIGHUP its session.
 * It holds sockets too (the service manager's notify socket and its socket
 * units' listening ones: what a client connects or sends meanwhile waits
 * in them for the successor); those only kin lets go of ('D'). */
#include "keep/keep.h"

#include <fcntl.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct held {
	int fd;
	uint64_t ino;
};

static struct held held[KEEPER_FDS_MAX];
static size_t nheld;
static int ep = -1;

static void let_go(size_t i)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, held[i].fd, NULL);
	close(held[i].fd);
	held[i] = held[--nheld];
	if (i < nheld) { /* the moved one's epoll data names its index */
		struct epoll_event ev = {.events = 0, .data.u64 = i + 2};
		epoll_ctl(ep, EPOLL_CTL_MOD, held[i].fd, &ev);
	}
}

static void keep(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 ||
	    !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	      (S_ISCHR(st.st_mode) && fd_is_pty_master(fd))) ||
	    nheld == KEEPER_FDS_MAX) {
		close(fd);
		return;
	}
	uint64_t ino = fd_ino(fd);
	for (size_t i = 0; i < nheld; i++)
		if (held[i].ino == ino) {
			close(fd);
			return;
		}
	/* No events asked for: the kernel still reports EPOLLHUP (no writer
	 * left) and EPOLLERR (no reader left) of a pipe; a listening or
	 * datagram socket reports neither. */
	struct epoll_event ev = {.events = 0, .data.u64 = nheld + 2};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(fd);
		return;
	}
	held[nheld++] = (struct held){.fd = fd, .ino = ino};
}

static void give(int conn)
{
	int fds[SOCK_FDS_MAX];
	for (size_t i = 0; i < nheld;) {
		size_t n = 0;
		for (; n < SOCK_FDS_MAX && i < nheld; n++, i++)
			fds[n] = held[i].fd;
		if (sock_send_fds(conn, "F", 1, fds, n, 0) < 0)
			return;
	}
	sock_send_fds(conn, "Z", 1, NULL, 0, 0);
}

/* One message from kin: 1 served, 0 none now, -1 the connection is over. */
static int serve(int conn)
{
	uint8_t buf[16];
	int fds[SOCK_FDS_MAX];
	size_t k;
	ssize_t n = sock_recv_fds(conn, buf, sizeof(buf), fds, SOCK_FDS_MAX, &k, MSG_DONTWAIT);
	if (n <= 0)
		return n == -EAGAIN || n == -EINTR ? 0 : -1;
	for (size_t i = 0; i < k; i++) {
		if (buf[0] == 'K')
			keep(fds[i]);
		else
			close(fds[i]); /* fds with any other message are not ours */
	}
	if (buf[0] == 'D' && n == 9) {
		uint64_t ino;
		memcpy(&ino, buf + 1, 8);
		for (size_t i = 0; i < nheld; i++)
			if (held[i].ino == ino) {
				let_go(i);
				break;
			}
	} else if (buf[0] == 'G') {
		give(conn);
	} else if (buf[0] == 'E') {
		_exit(0);
	}
	return 1;
}

/* A kin that is gone: what it sent before it went is served first (the
 * pipes of a run it started just before it was killed are in its last
 * messages), then its connection is closed. */
static void drain(int conn)
{
	for (int i = 0; i < 65536 && serve(conn) > 0; i++)
		;
	close(conn);
}

/* A connection whose kin is gone (killed, or re-executed: its fds
 * closed) hangs up; one still open is a kin still there. */
static bool gone(int conn)
{
	struct pollfd pfd = {.fd = conn, .events = POLLRDHUP};
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

static bool peer_is_us(int conn)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == geteuid();
}

int keep_keeper_main(int argc, char **argv)
{
	int conn = -1;
	uint64_t v = 0;
	if (argc != 2 || str_to_u64(argv[1], 65535, &v) < 0 || v < 3) {
		fprintf(stderr, "kin keeper: started by kin itself (kin keeper FD)\n");
		return 2;
	}
	int lfd = (int)v;
	if (sock_opt(lfd, SO_ACCEPTCONN) <= 0) {
		fprintf(stderr, "kin keeper: fd %d is not a listening socket\n", lfd);
		return 2;
	}
	/* Its own session, stdio on /dev/null: no terminal's signal and no
	 * pipe of whoever started kin reach it, and it holds none open. */
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; null >= 0 && i < 3; i++)
		dup2(null, i);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	fd_limit_raise(KEEPER_FDS_MAX + 64);
	fcntl(lfd, F_SETFD, FD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		return 1;
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);
		for (int i = 0; i < n; i++) {
			uint64_t d = evs[i].data.u64;
			if (d == 0) {
				int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (c < 0)
					continue;
				/* One kin at a time: another caller while it is
				 * there is turned away, and it keeps its place. */
				if (!peer_is_us(c) || (conn >= 0 && !gone(conn))) {
					close(c);
					continue;
				}
				if (conn >= 0) /* a new kin: the old one is gone */
					drain(conn);
				conn = c;
				ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = 1};
				epoll_ctl(ep, EPOLL_CTL_ADD, conn, &ev);
			} else if (d == 1) {
				if (conn >= 0 && serve(conn) < 0) {
					close(conn); /* kin went away: the fds stay held */
					conn = -1;
				}
			} else if (d - 2 < nheld && (evs[i].events & (EPOLLHUP | EPOLLERR))) {
				let_go((size_t)(d - 2));
			}
		}
	}
}
