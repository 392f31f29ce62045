/* file: a daemon kin's state directory (--state-dir, /run/kin) — a lock
 * that makes it this kin's alone, and a file state (lib/state.h, w->file)
 * of every participant's record (keep_save), rewritten shortly after each
 * change, that a successor adopts when kin was killed (keep_file_load,
 * then keep_start). A clean stop removes the file: there is nothing left
 * to adopt. A re-exec keeps it (the next kin takes the lock and the file
 * over).
 *
 * The file is written whole or not at all (exchanged), at most once per
 * FILE_DELAY_MS and never more than a tenth of kin's time: a change that
 * lands in the last few ms before kin is killed may be missing, and what
 * it ran is then removed by the successor with a log line, never left to
 * block a name.
 *
 * The keeper (keep/keeper.c, <dir>/keeper.sock) holds the other ends of
 * the workloads' pipes, so a workload neither dies of SIGPIPE nor reads
 * EOF while no kin runs; a successor takes them back. It is started once
 * and outlives kin's kills and re-execs; a clean stop ends it. */
#include "keep/keep-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#define FILE_DELAY_MS   20
#define FILE_NAME       "state"
#define KEEPER_SOCK     "keeper.sock"
#define KEEPER_GIVE_MS  2000 /* at start only: the keeper answers at once */
#define KEEPER_RESTARTS 5    /* a keeper that keeps dying is given up */

struct keep_file {
	struct keep *k;
	char dir[PATH_MAX];
	int dirfd, lockfd;
	struct ev_loop *loop;
	struct ev_source timer;
	struct ev_source keeper; /* the connection; fd -1: none */
	unsigned keeper_starts;
	bool keeper_new; /* started by this kin: it holds no fd yet */
	bool armed, failing;
	uint64_t cost_ns;         /* the last write's */
	char zones_dir[PATH_MAX]; /* DIR/zones: zones' reconnect sockets; "" too long */
	struct keep_keeper ops;   /* keep_keeper's */
	/* keep_file_load's, until keep_file_loaded */
	struct state_in in;
	bool loaded;
	int *kept;
	size_t nkept;
};

/* The directory must be root's own: what is in it decides which
 * processes kin adopts. */
static int dir_open(const char *dir, int *ret)
{
	int r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	*ret = fd;
	return 0;
}

static int keeper_addr(const struct keep_file *p, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	return snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", p->dir, KEEPER_SOCK) >=
	               (int)sizeof(sa->sun_path)
	           ? -ENAMETOOLONG
	           : 0;
}

/* A keeper already there (a killed kin's, or this one's before a
 * re-exec), or a new one: `kin keeper FD` on a socket bound here. */
static int keeper_connect(struct keep_file *p)
{
	struct sockaddr_un sa;
	int r = keeper_addr(p, &sa);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	p->keeper_new = false;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return TAKE_FD(fd);
	if (p->keeper_starts++ >= KEEPER_RESTARTS)
		return -ECHILD;
	_cleanup_close_ int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	unlinkat(p->dirfd, KEEPER_SOCK, 0);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0 ||
	    (r = fd_set_cloexec(lfd, false)) < 0)
		return r < 0 ? r : -errno;
	char num[16];
	snprintf(num, sizeof(num), "%d", lfd);
	char exe[] = "/proc/self/exe", cmd[] = "keeper";
	char *argv[] = {exe, cmd, num, NULL};
	r = child_spawn(NULL, argv, NULL, NULL, NULL); /* untracked: it outlives kin */
	if (r < 0)
		return r;
	close(TAKE_FD(lfd)); /* the keeper's now; connect waits in its backlog */
	p->keeper_new = true;
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : TAKE_FD(fd);
}

/* Never waits: a keeper that does not keep up misses a pipe, which a
 * crash would then cost its workload (logged at debug). */
static void keeper_send(struct keep_file *p, char op, const void *data, size_t len, const int *fds,
                        size_t n)
{
	char buf[16] = {op};
	if (p->keeper.fd < 0 || len > sizeof(buf) - 1)
		return;
	if (len)
		memcpy(buf + 1, data, len);
	int r = sock_send_fds(p->keeper.fd, buf, 1 + len, fds, n, MSG_DONTWAIT);
	if (r < 0)
		log_debug("state: keeper: %s", strerror(-r));
}

static void on_keep(const int *fds, size_t n, void *data)
{
	keeper_send(data, 'K', NULL, 0, fds, n);
}

static void on_unkeep(int fd, void *data)
{
	uint64_t ino = fd_ino(fd);
	if (ino)
		keeper_send(data, 'D', &ino, sizeof(ino), NULL, 0);
}

const struct keep_keeper *keep_keeper(struct keep *k)
{
	return k && k->file ? &k->file->ops : NULL;
}

const char *keep_file_dir(const struct keep *k)
{
	return k && k->file ? k->file->dir : NULL;
}

const char *keep_file_zones_dir(const struct keep *k)
{
	return k && k->file && k->file->zones_dir[0] ? k->file->zones_dir : NULL;
}

static void keeper_close(struct keep_file *p)
{
	ev_close(p->loop, &p->keeper);
}

static void on_keeper_gone(struct ev_source *src, uint32_t events);

/* The connection in the loop, and the participants' fds to it; a keeper
 * just started gets every one they hold (one already there holds them). */
static void keeper_watch(struct keep_file *p)
{
	if (p->keeper.fd < 0 || !p->loop)
		return;
	p->keeper.fn = on_keeper_gone;
	p->keeper.data = p;
	if (ev_add(p->loop, &p->keeper, EPOLLIN) < 0) {
		keeper_close(p);
		return;
	}
	keep_parts_set_keeper(p->k, &p->ops, p->keeper_new);
}

/* The keeper never writes unasked: readable means it is gone. */
static void on_keeper_gone(struct ev_source *src, uint32_t events)
{
	struct keep_file *p = src->data;
	(void)events;
	keeper_close(p);
	int fd = keeper_connect(p);
	if (fd < 0) {
		log_warn("state: the keeper of pipes ended and cannot be started again (%s); "
		         "workloads lose their pipes if kin is killed",
		         strerror(-fd));
		keep_parts_set_keeper(p->k, NULL, false);
		return;
	}
	if (p->keeper_new)
		log_warn("state: the keeper of pipes ended; a new one holds them");
	else
		log_warn("state: the connection to the keeper of pipes ended; connected again");
	p->keeper.fd = fd;
	keeper_watch(p);
}

static int kept_add(struct keep_file *p, size_t *cap, int fd)
{
	if (p->nkept == *cap) {
		int *m = *cap < KEEPER_FDS_MAX
		             ? realloc(p->kept, (*cap ? *cap * 2 : 64) * sizeof(int))
		             : NULL;
		if (!m)
			return -ENOMEM;
		p->kept = m;
		*cap = *cap ? *cap * 2 : 64;
	}
	p->kept[p->nkept++] = fd;
	return 0;
}

/* The fds the keeper holds, at start (bounded: a keeper that does not
 * answer within KEEPER_GIVE_MS gives nothing). */
static void keeper_give(struct keep_file *p)
{
	struct timeval tv = {.tv_sec = KEEPER_GIVE_MS / 1000,
	                     .tv_usec = KEEPER_GIVE_MS % 1000 * 1000};
	size_t cap = 0;
	if (p->keeper.fd < 0 ||
	    setsockopt(p->keeper.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return;
	keeper_send(p, 'G', NULL, 0, NULL, 0);
	for (;;) {
		char op = 0;
		int fds[SOCK_FDS_MAX];
		size_t n;
		ssize_t got = sock_recv_fds(p->keeper.fd, &op, 1, fds, SOCK_FDS_MAX, &n, 0);
		if (got <= 0) {
			log_warn("state: the keeper of pipes did not give them back: %s",
			         got < 0 ? strerror((int)-got) : "it went away");
			break;
		}
		for (size_t i = 0; i < n; i++)
			if (kept_add(p, &cap, fds[i]) < 0)
				close(fds[i]);
		if (op == 'Z')
			break;
	}
	tv = (struct timeval){0};
	setsockopt(p->keeper.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void keep_file_loaded(struct keep *k)
{
	struct keep_file *p = k->file;
	if (!p || !p->loaded)
		return;
	for (size_t i = 0; i < p->nkept; i++) {
		struct stat st;
		if (p->kept[i] < 0)
			continue;
		if (fstat(p->kept[i], &st) == 0 && S_ISSOCK(st.st_mode))
			on_unkeep(p->kept[i], p);
		close(p->kept[i]);
	}
	free(p->kept);
	p->kept = NULL;
	p->nkept = 0;
	state_in_close(&p->in);
	p->loaded = false;
	keep_take_from(k, KEEP_FRESH, NULL, NULL, 0);
}

int keep_file_open(struct keep *k, const char *dir)
{
	struct keep_file *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->k = k;
	p->dirfd = p->lockfd = p->timer.fd = p->keeper.fd = -1;
	p->ops = (struct keep_keeper){.keep = on_keep, .unkeep = on_unkeep, .data = p};
	str_copy(p->dir, sizeof(p->dir), dir);
	if (snprintf(p->zones_dir, sizeof(p->zones_dir), "%s/zones", dir) >=
	    (int)sizeof(p->zones_dir))
		p->zones_dir[0] = '\0';
	int r = dir_open(dir, &p->dirfd);
	if (r < 0) {
		log_warn("state: %s cannot be kin's state directory (%s); no state kept, nothing "
		         "adopted",
		         dir,
		         r == -EPERM ? "it is not root's own, or others may write it"
		                     : strerror(-r));
		free(p);
		return r;
	}
	p->lockfd = openat(p->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->lockfd < 0 || flock(p->lockfd, LOCK_EX | LOCK_NB) < 0) {
		r = -errno;
		log_warn("state: %s is %s; this kin keeps no state there and adopts nothing", dir,
		         r == -EWOULDBLOCK ? "another running kin's (it holds its lock)"
		                           : "not usable (its lock cannot be taken)");
		if (p->lockfd >= 0)
			close(p->lockfd);
		close(p->dirfd);
		free(p);
		return r;
	}
	p->keeper.fd = keeper_connect(p);
	if (p->keeper.fd < 0)
		log_warn("state: no keeper of pipes (%s); workloads lose their pipes if kin is "
		         "killed",
		         strerror(-p->keeper.fd));
	k->file = p;
	return 0;
}

int keep_file_load(struct keep *k)
{
	struct keep_file *p = k->file;
	if (!p)
		return 0;
	int fd = openat(p->dirfd, FILE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	struct stat st;
	uint32_t format = 0;
	int r = fd < 0 ? (errno == ELOOP ? -EPERM : -errno) : fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)))
		r = -EPERM;
	if (r == 0)
		r = state_in_open(fd, &p->in, &format);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		log_warn("state: %s/%s %s; nothing adopted", p->dir, FILE_NAME,
		         r == -EPROTO    ? "is of another state format"
		         : r == -EPERM   ? "is not root's own file"
		         : r == -EBADMSG ? "does not read"
		                         : strerror(-r));
		if (r == -EPROTO)
			log_warn("state: it is format %u; this kin reads %u", format, STATE_FORMAT);
		return r;
	}
	p->loaded = true;
	keeper_give(p);
	keep_take_from(k, KEEP_ADOPT, &p->in, p->kept, p->nkept);
	return 1;
}

static void file_write(struct keep_file *p)
{
	struct state_w w;
	struct err err = {0};
	uint64_t t0 = now_monotonic_ns();
	state_w_init(&w);
	w.file = true;
	int r = keep_save(p->k, &w, &err);
	if (r >= 0)
		r = state_w_write_file(&w, p->dirfd, FILE_NAME);
	state_w_free(&w);
	p->cost_ns = now_monotonic_ns() - t0;
	if (r < 0 && !p->failing)
		log_warn("state: cannot write %s/%s: %s; a successor would adopt an older state",
		         p->dir, FILE_NAME, err.msg[0] ? err.msg : strerror(-r));
	else if (r >= 0 && p->failing)
		log_info("state: %s/%s written again", p->dir, FILE_NAME);
	p->failing = r < 0;
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct keep_file *p = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	p->armed = false;
	file_write(p);
}

void keep_changed(struct keep *k)
{
	struct keep_file *p = k ? k->file : NULL;
	if (!p || !p->loop || p->armed || p->timer.fd < 0)
		return;
	uint64_t ns = FILE_DELAY_MS * 1000000ull;
	if (p->cost_ns * 10 > ns)
		ns = p->cost_ns * 10;
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ull),
	                                      .tv_nsec = (long)(ns % 1000000000ull)}};
	if (timerfd_settime(p->timer.fd, 0, &its, NULL) == 0)
		p->armed = true;
	else
		file_write(p);
}

int keep_file_watch(struct keep *k, struct ev_loop *loop)
{
	struct keep_file *p = k->file;
	if (!p)
		return 0;
	p->loop = loop;
	p->timer =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = on_timer,
	                       .data = p};
	if (p->timer.fd < 0)
		return -errno;
	int r = ev_add(loop, &p->timer, EPOLLIN);
	if (r < 0) {
		close(p->timer.fd);
		p->timer.fd = -1;
		return r;
	}
	keeper_watch(p);
	keep_changed(k); /* what was adopted (or nothing), after kin is ready */
	return 0;
}

void keep_file_close(struct keep *k, bool stopped)
{
	struct keep_file *p = k->file;
	if (!p)
		return;
	keep_file_loaded(k);
	if (p->timer.fd >= 0) {
		ev_del(p->loop, &p->timer);
		close(p->timer.fd);
	}
	if (p->loop) /* the participants are there still: they let go of it */
		keep_parts_set_keeper(k, NULL, false);
	if (stopped)
		keeper_send(p, 'E', NULL, 0, NULL, 0);
	keeper_close(p);
	int r;
	if (stopped && p->dirfd >= 0 && (r = state_file_remove(p->dirfd, FILE_NAME)) < 0)
		log_warn("state: cannot remove %s/%s: %s", p->dir, FILE_NAME, strerror(-r));
	close(p->dirfd);
	close(p->lockfd);
	free(p);
	k->file = NULL;
}
