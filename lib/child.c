/* child: pidfd-tracked children and the reaper. See lib.h for the contract. */
#include "lib.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/wait.h>

struct child {
	struct ev_source src; /* src.fd is the pidfd */
	pid_t pid;
	child_exit_fn on_exit;
	void *data;
	struct child_table *table;
	struct child *prev, *next;
};

struct child_table {
	struct ev_loop *loop;
	struct child *head;
	size_t count;
	uint64_t orphans;
};

int child_table_new(struct ev_loop *loop, struct child_table **ret)
{
	struct child_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	*ret = t;
	return 0;
}

static void child_unlink_free(struct child *c)
{
	struct child_table *t = c->table;
	ev_del(t->loop, &c->src);
	close(c->src.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	t->count--;
	free(c);
}

void child_table_free(struct child_table *t)
{
	if (!t)
		return;
	while (t->head)
		child_unlink_free(t->head);
	free(t);
}

/* Reaps c if it has exited; runs its callback after it is unlinked, so the
 * callback may start a replacement or free the table's other entries. */
static bool child_reap_one(struct child *c)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)P_PIDFD, (id_t)c->src.fd, &si, WEXITED | WNOHANG) < 0 ||
	    si.si_pid == 0)
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
	                    .table = t,
	                    .next = t->head};
	int r = ev_add(t->loop, &c->src, EPOLLIN);
	if (r < 0) {
		close(pidfd);
		free(c);
		return r;
	}
	if (t->head)
		t->head->prev = c;
	t->head = c;
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
		siginfo_t si;
		waitid((idtype_t)P_PIDFD, (id_t)p.pidfd, &si, WEXITED);
		close(p.pidfd);
		return r;
	}
	return child_track(t, p.pid, p.pidfd, on_exit, data, ret);
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}

int child_signal(struct child *c, int sig)
{
	return syscall(SYS_pidfd_send_signal, c->src.fd, sig, NULL, 0) < 0 ? -errno : 0;
}

void child_signal_all(struct child_table *t, int sig)
{
	for (struct child *c = t->head; c; c = c->next)
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
		struct child *c = t->head;
		while (c && c->pid != si.si_pid)
			c = c->next;
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
