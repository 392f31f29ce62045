/* spawn: clone3 + pidfd + report pipe, and the child-side steps every
 * process kin starts shares (lib/spawn.h). */
#include "lib/lib.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

struct spawn_report {
	int32_t step, err;
};

int spawn_clone(const struct spawn_opts *o, struct spawn_proc *ret)
{
	int p[2], pidfd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (o->report_nonblock) {
		int r = fd_set_nonblock(p[0], true);
		if (r < 0) {
			close(p[0]);
			close(p[1]);
			return r;
		}
	}
	struct clone_args ca = {.flags = CLONE_PIDFD | o->ns_flags,
	                        .pidfd = (uint64_t)(uintptr_t)&pidfd,
	                        .exit_signal = SIGCHLD};
	if (o->cgroup_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)o->cgroup_fd;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		int r = -errno;
		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid == 0) {
		close(p[0]);
		*ret = (struct spawn_proc){.pid = 0, .pidfd = -1, .report_fd = p[1]};
		return 0;
	}
	close(p[1]);
	*ret = (struct spawn_proc){.pid = (pid_t)pid, .pidfd = pidfd, .report_fd = p[0]};
	return 1;
}

void spawn_signals_reset(enum spawn_mask mask)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (mask == SPAWN_MASK_KEEP)
		return;
	sigset_t set;
	if (mask == SPAWN_MASK_FULL)
		sigfillset(&set);
	else
		sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
}

_Noreturn void spawn_child_fail(int report_fd, int step, int err)
{
	struct spawn_report rep = {.step = step, .err = err > 0 ? err : EIO};
	(void)!write(report_fd, &rep, sizeof(rep));
	_exit(127);
}

static int dev_mount(const char *dir, const char *name, const char *src, const char *type,
                     unsigned long flags, const char *data)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return mount(src, path, type, flags, data) < 0 ? -errno : 0;
}

int spawn_make_dev(const char *dir)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	static const char *const links[][2] = {{"/proc/self/fd", "fd"},
	                                       {"/proc/self/fd/0", "stdin"},
	                                       {"/proc/self/fd/1", "stdout"},
	                                       {"/proc/self/fd/2", "stderr"}};
	char path[PATH_MAX], src[64];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NOEXEC | MS_STRICTATIME,
	          "mode=755,size=64k") < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, nodes[i]);
		snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return -errno;
		close(fd);
		if (mount(src, path, NULL, MS_BIND, NULL) < 0)
			return -errno;
	}
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, links[i][1]);
		(void)!symlink(links[i][0], path);
	}
	/* Niceties (terminals, POSIX shared memory): their absence is not fatal. */
	if (dev_mount(dir, "pts", "devpts", "devpts", MS_NOSUID | MS_NOEXEC,
	              "newinstance,ptmxmode=0666,mode=620") == 0) {
		snprintf(path, sizeof(path), "%s/ptmx", dir);
		(void)!symlink("pts/ptmx", path);
	}
	if (dev_mount(dir, "shm", "shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0) {
		snprintf(path, sizeof(path), "%s/shm", dir);
		(void)!chmod(path, 01777);
	}
	return 0;
}

int spawn_report_read(int report_fd, int *ret_step)
{
	struct spawn_report rep;
	ssize_t n;
	do
		n = read(report_fd, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	*ret_step = -1;
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return 1;
	if (n != (ssize_t)sizeof(rep)) /* one write of 8 bytes: never split */
		return -EIO;
	*ret_step = rep.step;
	return rep.err > 0 ? -rep.err : -EIO;
}

int spawn_pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int spawn_pidfd_wait(int pidfd, siginfo_t *si, int options)
{
	memset(si, 0, sizeof(*si));
	int r;
	do
		r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, si, options);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

void spawn_kill_and_reap(int pidfd)
{
	siginfo_t si;
	(void)spawn_pidfd_signal(pidfd, SIGKILL);
	(void)spawn_pidfd_wait(pidfd, &si, WEXITED);
}
