/* child: pidfd-tracked children and the reaper. See lib.h for the contract. */
#include "lib.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct child {
	struct ev_source src; /* src.fd is the pidfd */
	pid_t pid;
	child_exit_fn on_exit;
	void *data;
	struct child_table *table;
	struct list_node node; /* in table->children, newest first */
	struct child *hnext;   /* in table->hash[pid % nbuckets] */
	bool watched;          /* not our child: child_watch */
};

struct child_table {
	struct ev_loop *loop;
	struct list_node children;
	size_t count;
	uint64_t orphans;
	/* By pid: a re-exec adopts thousands, each checked for being tracked
	 * already, and every zombie is looked up. Grows with count. */
	struct child **hash;
	size_t nbuckets;
};

static struct child **bucket(const struct child_table *t, pid_t pid)
{
	return &t->hash[(size_t)pid % t->nbuckets];
}

static struct child *child_find(const struct child_table *t, pid_t pid)
{
	if (!t->nbuckets)
		return NULL;
	struct child *c = *bucket(t, pid);
	while (c && c->pid != pid)
		c = c->hnext;
	return c;
}

/* Makes room for one more; false when out of memory (no hash grows). */
static bool hash_room(struct child_table *t)
{
	if (t->count < t->nbuckets)
		return true;
	size_t n = t->nbuckets ? t->nbuckets * 2 : 64;
	struct child **h = calloc(n, sizeof(*h));
	if (!h)
		return false;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct child *c = t->hash[i], *next; c; c = next) {
			next = c->hnext;
			c->hnext = h[(size_t)c->pid % n];
			h[(size_t)c->pid % n] = c;
		}
	free(t->hash);
	t->hash = h;
	t->nbuckets = n;
	return true;
}

static void hash_remove(struct child_table *t, struct child *c)
{
	struct child **pp = bucket(t, c->pid);
	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
}

int child_table_new(struct ev_loop *loop, struct child_table **ret)
{
	struct child_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	list_init(&t->children);
	*ret = t;
	return 0;
}

static void child_unlink_free(struct child *c)
{
	struct child_table *t = c->table;
	ev_del(t->loop, &c->src);
	close(c->src.fd);
	list_remove(&c->node);
	hash_remove(t, c);
	t->count--;
	free(c);
}

void child_table_free(struct child_table *t)
{
	if (!t)
		return;
	struct child *c, *tmp;
	list_for_each_safe(c, tmp, &t->children, node)
		child_unlink_free(c);
	free(t->hash);
	free(t);
}

/* Reaps c if it has exited; runs its callback after it is unlinked, so the
 * callback may start a replacement or free the table's other entries. */
static bool child_reap_one(struct child *c)
{
	siginfo_t si = {0};
	if (c->watched) /* the pidfd reads once the process is gone */
		si.si_pid = c->pid;
	else if (spawn_pidfd_wait(c->src.fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return false;
	child_exit_fn fn = c->on_exit;
	void *data = c->data;
	child_unlink_free(c);
	if (fn)
		fn(&si, data);
	return true;
}

static void child_on_pidfd(struct ev_source *src, uint32_t events)
{
	(void)events;
	child_reap_one(src->data);
}

int child_track(struct child_table *t, pid_t pid, int pidfd, child_exit_fn on_exit, void *data,
                struct child **ret)
{
	struct child *c = hash_room(t) ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		close(pidfd);
		return -ENOMEM;
	}
	*c = (struct child){.src = {.fd = pidfd, .fn = child_on_pidfd, .data = c},
	                    .pid = pid,
	                    .on_exit = on_exit,
	                    .data = data,
	                    .table = t};
	int r = ev_add(t->loop, &c->src, EPOLLIN);
	if (r < 0) {
		close(pidfd);
		free(c);
		return r;
	}
	list_push(&t->children, &c->node);
	c->hnext = *bucket(t, pid);
	*bucket(t, pid) = c;
	t->count++;
	if (ret)
		*ret = c;
	return 0;
}

int child_spawn(struct child_table *t, char *const argv[], child_exit_fn on_exit, void *data,
                struct child **ret)
{
	struct spawn_proc p;
	int step;

	if (!argv || !argv[0])
		return -EINVAL;
	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &p);
	if (r < 0)
		return r;
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		execvp(argv[0], argv);
		spawn_child_fail(p.report_fd, 0, errno);
	}
	r = spawn_report_read(p.report_fd, &step); /* blocking: until execve or its error */
	close(p.report_fd);
	if (r < 0) {
		spawn_kill_and_reap(p.pidfd); /* it has exited, or must not run on */
		close(p.pidfd);
		return r;
	}
	if (!t) {
		close(p.pidfd);
		return 0;
	}
	return child_track(t, p.pid, p.pidfd, on_exit, data, ret);
}

int child_adopt(struct child_table *t, pid_t pid, child_exit_fn on_exit, void *data,
                struct child **ret)
{
	siginfo_t si = {0};
	/* Tracked twice, its end would be reaped once and the other pidfd
	 * stay readable for good. */
	if (child_find(t, pid))
		return -EEXIST;
	/* Still our child (exited or not): nobody reaped it meanwhile. */
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return -errno;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* O_CLOEXEC always */
	if (pidfd < 0)
		return -errno;
	return child_track(t, pid, pidfd, on_exit, data, ret);
}

int child_retrack(struct child_table *t, pid_t pid, int pidfd, bool watched, child_exit_fn on_exit,
                  void *data, struct child **ret)
{
	if (child_find(t, pid)) {
		close(pidfd);
		return -EEXIST;
	}
	return watched ? child_watch(t, pid, pidfd, on_exit, data, ret)
	               : child_track(t, pid, pidfd, on_exit, data, ret);
}

int child_pidfd(const struct child *c)
{
	return c->src.fd;
}

bool child_watched(const struct child *c)
{
	return c->watched;
}

int child_watch(struct child_table *t, pid_t pid, int pidfd, child_exit_fn on_exit, void *data,
                struct child **ret)
{
	struct child *c;
	int r = child_track(t, pid, pidfd, on_exit, data, &c);
	if (r < 0)
		return r;
	c->watched = true;
	if (ret)
		*ret = c;
	return 0;
}

bool child_status_known(const siginfo_t *si)
{
	return si->si_code != 0;
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}

int child_signal(struct child *c, int sig)
{
	return spawn_pidfd_signal(c->src.fd, sig);
}

void child_signal_all(struct child_table *t, int sig)
{
	struct child *c;
	list_for_each(c, &t->children, node)
		child_signal(c, sig);
}

size_t child_reap(struct child_table *t)
{
	size_t n = 0;
	for (;;) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
			break;
		struct child *c = child_find(t, si.si_pid);
		if (c) {
			if (!child_reap_one(c))
				break;
		} else {
			if (waitid(P_PID, (id_t)si.si_pid, &si, WEXITED | WNOHANG) < 0)
				break;
			t->orphans++;
		}
		n++;
	}
	return n;
}

size_t child_count(const struct child_table *t)
{
	return t->count;
}
uint64_t child_orphans_reaped(const struct child_table *t)
{
	return t->orphans;
}

bool child_none_left(void)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

int child_status_code(const siginfo_t *si)
{
	if (si->si_code == CLD_EXITED)
		return si->si_status & 0xff;
	return 128 + si->si_status;
}

/* ---- child_call -------------------------------------------------------------- */

struct child_call_result {
	int result;
	struct err err;
};

struct child_call {
	struct child_table *table;
	struct ev_source pipe, timer;
	struct child *child;     /* NULL once reaped */
	child_call_done_fn done; /* NULL once told (or cancelled) */
	void *data;
	unsigned timeout_ms;
	char what[96];
};

/* Freed once told and reaped, whichever comes last. */
static void call_maybe_free(struct child_call *c)
{
	if (!c->done && !c->child) {
		ev_close(c->table->loop, &c->pipe);
		ev_close(c->table->loop, &c->timer);
		free(c);
	}
}

static void call_tell(struct child_call *c, int result, const struct err *err)
{
	child_call_done_fn done = c->done;
	c->done = NULL;
	ev_close(c->table->loop, &c->pipe);
	ev_close(c->table->loop, &c->timer);
	if (c->child)
		child_signal(c->child, SIGKILL); /* it has answered, or must not go on */
	if (done)
		done(result, err, c->data);
}

static void call_on_pipe(struct ev_source *src, uint32_t events)
{
	struct child_call *c = src->data;
	struct child_call_result res;
	struct err e = {0};
	(void)events;
	ssize_t n = read(src->fd, &res, sizeof(res)); /* one atomic write, or EOF */
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == (ssize_t)sizeof(res)) {
		res.err.msg[sizeof(res.err.msg) - 1] = '\0';
		call_tell(c, res.result, &res.err);
	} else {
		err_set(&e, -EIO, ERR_INTERNAL, "%s: the checking process ended without an answer",
		        c->what);
		call_tell(c, -EIO, &e);
	}
	call_maybe_free(c);
}

static void call_on_timer(struct ev_source *src, uint32_t events)
{
	struct child_call *c = src->data;
	struct err e = {0};
	(void)events;
	err_set(&e, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
	        "%s: no answer within %u ms (a hung mount?); given up", c->what, c->timeout_ms);
	call_tell(c, -ETIMEDOUT, &e);
	call_maybe_free(c);
}

static void call_on_exit(const siginfo_t *si, void *data)
{
	struct child_call *c = data;
	(void)si;
	c->child = NULL; /* its answer, if any, is in the pipe: read it first */
	if (c->done && c->pipe.fd >= 0)
		call_on_pipe(&c->pipe, EPOLLIN);
	else
		call_maybe_free(c);
}

int child_call(struct child_table *t, child_call_fn fn, void *arg, unsigned timeout_ms,
               const char *what, child_call_done_fn done, void *data, struct child_call **ret)
{
	int p[2];
	struct spawn_proc sp;
	struct child_call *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct child_call){.table = t,
	                         .pipe = {.fd = -1, .fn = call_on_pipe, .data = c},
	                         .timer = {.fd = -1, .fn = call_on_timer, .data = c},
	                         .done = done,
	                         .data = data,
	                         .timeout_ms = timeout_ms};
	str_copy(c->what, sizeof(c->what), what);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(c);
		return -errno;
	}
	c->pipe.fd = p[0];
	struct itimerspec its = {.it_value = {.tv_sec = timeout_ms / 1000,
	                                      .tv_nsec = (long)(timeout_ms % 1000) * 1000000L}};
	c->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int r = c->timer.fd < 0 || timerfd_settime(c->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
	if (r == 0)
		r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1}, &sp);
	if (r == 0) { /* the child: look, answer (one write, under PIPE_BUF), go */
		struct child_call_result res = {0};
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		res.result = fn(arg, &res.err);
		_exit(write(p[1], &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 1);
	}
	close(p[1]);
	if (r > 0) {
		close(sp.report_fd);
		r = ev_add(t->loop, &c->pipe, EPOLLIN);
		if (r == 0 && (r = ev_add(t->loop, &c->timer, EPOLLIN)) < 0)
			ev_del(t->loop, &c->pipe);
		if (r < 0) {
			spawn_kill_and_reap(sp.pidfd);
			close(sp.pidfd);
		}
	}
	if (r < 0) {
		close(c->pipe.fd);
		if (c->timer.fd >= 0)
			close(c->timer.fd);
		free(c);
		return r;
	}
	r = child_track(t, sp.pid, sp.pidfd, call_on_exit, c, &c->child);
	if (r < 0) { /* child_track closed the pidfd: the orphan sweep reaps it */
		kill(sp.pid, SIGKILL);
		c->done = NULL;
		call_maybe_free(c);
		return r;
	}
	if (ret)
		*ret = c;
	return 0;
}

void child_call_cancel(struct child_call *c)
{
	if (!c)
		return;
	c->done = NULL;
	ev_close(c->table->loop, &c->pipe);
	ev_close(c->table->loop, &c->timer);
	if (c->child)
		child_signal(c->child, SIGKILL);
	call_maybe_free(c);
}

int proc_ppid(pid_t pid)
{
	char path[64], *stat = NULL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int r = file_read_small(path, 4096, &stat, NULL);
	if (r < 0)
		return r;
	/* comm may hold anything, ')' included: parse after the last one. */
	const char *rp = strrchr(stat, ')');
	int ppid;
	r = rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 ? ppid : -EBADMSG;
	free(stat);
	return r;
}

#define DESCENDANTS_MAX 65536

size_t child_signal_descendants(pid_t root, int sig)
{
	_cleanup_free_ pid_t *pids = calloc(DESCENDANTS_MAX, sizeof(pid_t));
	_cleanup_free_ pid_t *ppids = calloc(DESCENDANTS_MAX, sizeof(pid_t));
	size_t n = 0, sent = 0;
	DIR *d;

	if (!pids || !ppids || !(d = opendir("/proc")))
		return 0;
	for (struct dirent *e; (e = readdir(d)) && n < DESCENDANTS_MAX;) {
		uint32_t pid;
		int ppid;
		if (str_to_u32(e->d_name, &pid) < 0 || (ppid = proc_ppid((pid_t)pid)) < 0)
			continue;
		pids[n] = (pid_t)pid;
		ppids[n++] = ppid;
	}
	closedir(d);
	/* Breadth-first from root: mark by moving found pids into ppids' role. */
	_cleanup_free_ pid_t *queue = calloc(n + 1, sizeof(pid_t));
	if (!queue)
		return 0;
	size_t head = 0, tail = 0;
	queue[tail++] = root;
	while (head < tail) {
		pid_t p = queue[head++];
		for (size_t i = 0; i < n; i++)
			if (ppids[i] == p && pids[i] != 0 && tail <= n) {
				queue[tail++] = pids[i];
				if (kill(pids[i], sig) == 0)
					sent++;
				pids[i] = 0;
			}
	}
	return sent;
}
