/* persist: a daemon kin's state directory (--state-dir, /run/kin) — a lock
 * that makes it this kin's alone, and a file state (lib/state.h, w->file)
 * of its cells and executables and of the services' VMs, rewritten
 * shortly after each change, that a successor adopts when kin was killed
 * (cells_adopt, api_adopt). A clean stop
 * removes the file: there is nothing left to adopt. A re-exec keeps it
 * (the next kin takes the lock and the file over).
 *
 * The file is written whole or not at all (renamed over), at most once per
 * PERSIST_DELAY_MS and never more than a tenth of kin's time: a change
 * that lands in the last few ms before kin is killed may be missing, and
 * what it ran is then removed by the successor with a log line, never left
 * to block a name.
 *
 * The keeper (init/keeper.c, <dir>/keeper.sock) holds the other ends of
 * the executables' pipes, so a workload neither dies of SIGPIPE nor reads
 * EOF while no kin runs; a successor takes them back. It is started once
 * and outlives kin's kills and re-execs; a clean stop ends it. */
#include "init/init.h"
#include "cells/cells.h"
#include "lib/state.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#define PERSIST_DELAY_MS 20
#define PERSIST_FILE     "state"
#define KEEPER_SOCK      "keeper.sock"
#define KEEPER_GIVE_MS   2000 /* at start only: the keeper answers at once */
#define KEEPER_RESTARTS  5    /* a keeper that keeps dying is given up */
enum { P_CELLS = 1, P_API, P_UNITS };

struct init_persist {
	char dir[PATH_MAX];
	int dirfd, lockfd;
	struct ev_loop *loop;
	struct cells *cells;
	struct cells_listener *listener;
	void (*save)(struct state_w *w, uint16_t api_tag, uint16_t units_tag, void *data);
	void (*rekeep)(void *data); /* a keeper started anew: the services' pipes to it */
	void *save_data;
	struct ev_source timer;
	struct ev_source keeper; /* the connection; fd -1: none */
	unsigned keeper_starts;
	bool keeper_new; /* started by this kin: it holds no pipe yet */
	bool armed, failing;
	uint64_t cost_ns;                 /* the last write's */
	char zones_dir[PATH_MAX];         /* DIR/zones: zones' reconnect sockets; "" too long */
	struct cells_keeper zones_keeper; /* init_persist_keeper's */
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

static int keeper_addr(const struct init_persist *p, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	return snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", p->dir, KEEPER_SOCK) >=
	               (int)sizeof(sa->sun_path)
	           ? -ENAMETOOLONG
	           : 0;
}

/* A keeper already there (a killed kin's, or this one's before a
 * re-exec), or a new one: `kin keeper FD` on a socket bound here. */
static int keeper_connect(struct init_persist *p)
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
static void keeper_send(struct init_persist *p, char op, const void *data, size_t len,
                        const int *fds, size_t n)
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

const struct cells_keeper *init_persist_keeper(struct init_persist *p)
{
	if (!p)
		return NULL;
	p->zones_keeper = (struct cells_keeper){.keep = on_keep, .unkeep = on_unkeep, .data = p};
	return &p->zones_keeper;
}

const char *init_persist_zones_dir(const struct init_persist *p)
{
	return p && p->zones_dir[0] ? p->zones_dir : NULL;
}

static void keeper_close(struct init_persist *p)
{
	ev_close(p->loop, &p->keeper);
}

static void on_keeper_gone(struct ev_source *src, uint32_t events);

/* The connection in the loop, and new pipes to it; a keeper just started
 * gets every running executable's too (one already there holds them). */
static void keeper_watch(struct init_persist *p)
{
	static const struct cells_keeper ops = {.keep = on_keep, .unkeep = on_unkeep};
	if (p->keeper.fd < 0 || !p->loop)
		return;
	p->keeper.fn = on_keeper_gone;
	p->keeper.data = p;
	if (ev_add(p->loop, &p->keeper, EPOLLIN) < 0) {
		keeper_close(p);
		return;
	}
	if (p->cells) {
		struct cells_keeper k = ops;
		k.data = p;
		cells_set_keeper(p->cells, &k, p->keeper_new);
	}
	if (p->keeper_new && p->rekeep)
		p->rekeep(p->save_data);
}

/* The keeper never writes unasked: readable means it is gone. */
static void on_keeper_gone(struct ev_source *src, uint32_t events)
{
	struct init_persist *p = src->data;
	(void)events;
	keeper_close(p);
	int fd = keeper_connect(p);
	if (fd < 0) {
		log_warn("state: the keeper of pipes ended and cannot be started again (%s); "
		         "workloads lose their pipes if kin is killed",
		         strerror(-fd));
		if (p->cells)
			cells_set_keeper(p->cells, NULL, false);
		return;
	}
	if (p->keeper_new)
		log_warn("state: the keeper of pipes ended; a new one holds them");
	else
		log_warn("state: the connection to the keeper of pipes ended; connected again");
	p->keeper.fd = fd;
	keeper_watch(p);
}

/* The pipe ends the keeper holds, at start (bounded: a keeper that does
 * not answer within KEEPER_GIVE_MS gives nothing). */
static void keeper_give(struct init_persist *p, struct init_adopt *a)
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
		size_t k;
		ssize_t n = sock_recv_fds(p->keeper.fd, &op, 1, fds, SOCK_FDS_MAX, &k, 0);
		if (n <= 0) {
			log_warn("state: the keeper of pipes did not give them back: %s",
			         n < 0 ? strerror((int)-n) : "it went away");
			break;
		}
		for (size_t i = 0; i < k; i++) {
			if (a->nkept == cap) {
				int *m = cap < KEEPER_FDS_MAX
				             ? realloc(a->kept, (cap ? cap * 2 : 64) * sizeof(int))
				             : NULL;
				if (!m) {
					close(fds[i]);
					continue;
				}
				a->kept = m;
				cap = cap ? cap * 2 : 64;
			}
			a->kept[a->nkept++] = fds[i];
		}
		if (op == 'Z')
			break;
	}
	tv = (struct timeval){0};
	setsockopt(p->keeper.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void init_adopt_end(struct init_persist *p, struct init_adopt *a)
{
	for (size_t i = 0; i < a->nkept; i++) {
		struct stat st;
		if (a->kept[i] < 0)
			continue;
		if (fstat(a->kept[i], &st) == 0 && S_ISSOCK(st.st_mode))
			on_unkeep(a->kept[i], p);
		close(a->kept[i]);
	}
	free(a->kept);
	a->kept = NULL;
	a->nkept = 0;
	state_in_close(&a->in);
}

int init_persist_open(const char *dir, struct init_persist **ret)
{
	*ret = NULL;
	struct init_persist *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->dirfd = p->lockfd = p->timer.fd = p->keeper.fd = -1;
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
		init_persist_free(p, false);
		return r;
	}
	p->keeper.fd = keeper_connect(p);
	if (p->keeper.fd < 0)
		log_warn("state: no keeper of pipes (%s); workloads lose their pipes if kin is "
		         "killed",
		         strerror(-p->keeper.fd));
	*ret = p;
	return 0;
}

int init_persist_load(struct init_persist *p, struct init_adopt *a)
{
	*a = (struct init_adopt){0};
	struct state_in *in = &a->in;
	int fd = openat(p->dirfd, PERSIST_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	struct stat st;
	uint32_t format = 0;
	int r = fd < 0 ? (errno == ELOOP ? -EPERM : -errno) : fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)))
		r = -EPERM;
	if (r == 0)
		r = state_in_open(fd, in, &format);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		log_warn("state: %s/%s %s; nothing adopted", p->dir, PERSIST_FILE,
		         r == -EPROTO    ? "is of another state format"
		         : r == -EPERM   ? "is not root's own file"
		         : r == -EBADMSG ? "does not read"
		                         : strerror(-r));
		if (r == -EPROTO)
			log_warn("state: it is format %u; this kin reads %u", format, STATE_FORMAT);
		return r;
	}
	struct state_r rr = in->top;
	struct state_field f;
	while (state_next(&rr, &f) > 0)
		if (f.tag == P_CELLS)
			a->cells = f;
		else if (f.tag == P_API)
			a->api = f;
		else if (f.tag == P_UNITS)
			a->units = f;
	keeper_give(p, a);
	return 1;
}

static void persist_write(struct init_persist *p)
{
	struct state_w w;
	struct err err = {0};
	uint64_t t0 = now_monotonic_ns();
	state_w_init(&w);
	w.file = true;
	int r = p->cells ? cells_save(p->cells, &w, P_CELLS, &err) : 0;
	if (r >= 0 && p->save)
		p->save(&w, P_API, P_UNITS, p->save_data);
	if (r >= 0)
		r = state_w_write_file(&w, p->dirfd, PERSIST_FILE);
	state_w_free(&w);
	p->cost_ns = now_monotonic_ns() - t0;
	if (r < 0 && !p->failing)
		log_warn("state: cannot write %s/%s: %s; a successor would adopt an older state",
		         p->dir, PERSIST_FILE, err.msg[0] ? err.msg : strerror(-r));
	else if (r >= 0 && p->failing)
		log_info("state: %s/%s written again", p->dir, PERSIST_FILE);
	p->failing = r < 0;
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct init_persist *p = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	p->armed = false;
	persist_write(p);
}

static void changed(struct init_persist *p)
{
	if (p->armed || p->timer.fd < 0)
		return;
	uint64_t ns = PERSIST_DELAY_MS * 1000000ull;
	if (p->cost_ns * 10 > ns)
		ns = p->cost_ns * 10;
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ull),
	                                      .tv_nsec = (long)(ns % 1000000000ull)}};
	if (timerfd_settime(p->timer.fd, 0, &its, NULL) == 0)
		p->armed = true;
	else
		persist_write(p);
}

void init_persist_set_saver(struct init_persist *p,
                            void (*save)(struct state_w *w, uint16_t api_tag, uint16_t units_tag,
                                         void *data),
                            void (*rekeep)(void *data), void *data)
{
	if (!p)
		return;
	p->save = save;
	p->rekeep = rekeep;
	p->save_data = data;
}

void init_persist_changed(struct init_persist *p)
{
	if (p && p->loop)
		changed(p);
}

static void on_event(const struct cells_event *ev, void *data)
{
	(void)ev;
	changed(data);
}

static void on_closed(void *data)
{
	((struct init_persist *)data)->listener = NULL;
}

int init_persist_watch(struct init_persist *p, struct ev_loop *loop, struct cells *cells)
{
	static const struct cells_listener_ops ops = {.event = on_event, .closed = on_closed};
	if (!p)
		return 0;
	p->loop = loop;
	p->cells = cells;
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
	if (cells && (r = cells_listen(cells, &ops, p, &p->listener)) < 0)
		return r;
	keeper_watch(p);
	changed(p); /* what was adopted (or nothing), after kin is ready */
	return 0;
}

void init_persist_free(struct init_persist *p, bool stopped)
{
	if (!p)
		return;
	if (p->listener && p->cells)
		cells_unlisten(p->cells, p->listener);
	if (p->timer.fd >= 0) {
		ev_del(p->loop, &p->timer);
		close(p->timer.fd);
	}
	if (p->cells && p->listener) /* the library is there still */
		cells_set_keeper(p->cells, NULL, false);
	if (stopped)
		keeper_send(p, 'E', NULL, 0, NULL, 0);
	keeper_close(p);
	int r;
	if (stopped && p->dirfd >= 0 && (r = state_file_remove(p->dirfd, PERSIST_FILE)) < 0)
		log_warn("state: cannot remove %s/%s: %s", p->dir, PERSIST_FILE, strerror(-r));
	if (p->dirfd >= 0)
		close(p->dirfd);
	if (p->lockfd >= 0)
		close(p->lockfd);
	free(p);
}
