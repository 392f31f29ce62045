/* child: pidfd-tracked children and the reaper. See lib.h for the contract. */
#include "lib.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

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

static _noreturn_ void child_exec(char *const argv[], int errfd)
{
	sigset_t none;
	sigemptyset(&none);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(argv[0], argv);
	int e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(127);
}

int child_spawn(struct child_table *t, char *const argv[], child_exit_fn on_exit, void *data,
                struct child **ret)
{
	int pipefd[2], pidfd = -1;

	if (!argv || !argv[0])
		return -EINVAL;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	struct clone_args args = {
	    .flags = CLONE_PIDFD, .pidfd = (uint64_t)(uintptr_t)&pidfd, .exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid < 0) {
		int r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_exec(argv, pipefd[1]);
	}
	close(pipefd[1]);
	int e = 0;
	ssize_t n;
	do
		n = read(pipefd[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof(e)) {
		siginfo_t si;
		waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
		close(pidfd);
		return -e;
	}
	return child_track(t, (pid_t)pid, pidfd, on_exit, data, ret);
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
