/* child: pidfd-tracked children and the reaper. See lib.h for the contract. */
#include "lib.h"

#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct child {
	struct ev_source src; /* src.fd is the pidfd */
	pid_t pid;
	child_exit_fn on_exit;
	void *data;
	struct child_table *table;
	struct list_node node; /* in table->children, newest first */
	bool watched;          /* not our child: child_watch */
};

struct child_table {
	struct ev_loop *loop;
	struct list_node children;
	size_t count;
	uint64_t orphans;
};

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
	struct child *c = calloc(1, sizeof(*c));
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
	/* Still our child (exited or not): nobody reaped it meanwhile. */
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return -errno;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* O_CLOEXEC always */
	if (pidfd < 0)
		return -errno;
	return child_track(t, pid, pidfd, on_exit, data, ret);
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
		struct child *c, *found = NULL;
		list_for_each(c, &t->children, node) {
			if (c->pid == si.si_pid) {
				found = c;
				break;
			}
		}
		if ((c = found)) {
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
