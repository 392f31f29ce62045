/* spawn: the zone kin's start. clone3 straight into the zone's cell with
 * new pid, mount, uts, ipc, cgroup (and net) namespaces; the child makes
 * its root (the given directory bound onto itself, or a tmpfs), mounts
 * /proc, /sys, /sys/fs/cgroup, a small /dev and /run in it, pivots into
 * it, sets the hostname, puts its RPC end on fd 3, /dev/null on 0 and the
 * log pipe on 1 and 2, and execs kin from the sealed memfd. A failed step is
 * sent back on a pipe as (step, errno); EOF means it exec'd. The parent
 * never waits on that pipe here: zone.c watches it from the loop. */
#include "zone/zone-int.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static const char *const step_names[] = {
    [ZSTEP_SYNC] = "waiting for the parent",
    [ZSTEP_PRIVATE] = "making mounts private",
    [ZSTEP_ROOT] = "mounting the root",
    [ZSTEP_PROC] = "mounting /proc",
    [ZSTEP_DEV] = "making /dev",
    [ZSTEP_RUN] = "mounting /run",
    [ZSTEP_PIVOT] = "pivot_root",
    [ZSTEP_HOSTNAME] = "sethostname",
    [ZSTEP_FDS] = "setting up fds",
    [ZSTEP_EXEC] = "execveat",
    [ZSTEP_NET] = "creating the veth pair",
};

const char *zone_step_name(int step)
{
	return step >= 0 && (size_t)step < ARRAY_SIZE(step_names) && step_names[step]
	           ? step_names[step]
	           : "setup";
}

static _noreturn_ void child_fail(int errfd, int step)
{
	int msg[2] = {step, errno};
	(void)!write(errfd, msg, sizeof(msg));
	_exit(127);
}

static int mount_in(const char *root, const char *dir, const char *src, const char *type,
                    unsigned long flags, const char *data)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", root, dir);
	mkdir(path, 0755);
	return mount(src, path, type, flags, data);
}

/* /dev: a tmpfs with the usual nodes bound from ours, pts, shm, fd links. */
static int make_dev(const char *root)
{
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	char path[PATH_MAX], src[64];
	if (mount_in(root, "/dev", "tmpfs", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755") < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		snprintf(path, sizeof(path), "%s/dev/%s", root, nodes[i]);
		snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		if (mount(src, path, NULL, MS_BIND, NULL) < 0)
			return -1;
	}
	mount_in(root, "/dev/pts", "devpts", "devpts", MS_NOSUID | MS_NOEXEC,
	         "newinstance,ptmxmode=0666,mode=0620");
	mount_in(root, "/dev/shm", "shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
	static const char *const links[][2] = {{"pts/ptmx", "ptmx"},
	                                       {"/proc/self/fd", "fd"},
	                                       {"/proc/self/fd/0", "stdin"},
	                                       {"/proc/self/fd/1", "stdout"},
	                                       {"/proc/self/fd/2", "stderr"}};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(path, sizeof(path), "%s/dev/%s", root, links[i][1]);
		(void)!symlink(links[i][0], path);
	}
	return 0;
}

/* A dynamically linked kin (the sanitizer build) needs the host's
 * loader and libraries in a minimal root: /usr bound read-only. */
static void bind_usr(const char *root)
{
	char path[PATH_MAX];
	if (mount_in(root, "/usr", "/usr", NULL, MS_BIND | MS_REC, NULL) < 0)
		return;
	snprintf(path, sizeof(path), "%s/usr", root);
	mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_REC, NULL);
	static const char *const links[][2] = {
	    {"usr/lib", "lib"}, {"usr/lib64", "lib64"}, {"usr/bin", "bin"}, {"usr/sbin", "sbin"}};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, links[i][1]);
		(void)!symlink(links[i][0], path);
	}
}

static _noreturn_ void zone_child(const struct zone_spawn *a, int errfd, int gofd, int rpcfd)
{
	sigset_t all;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	/* Blocked, not default: a namespace's init drops signals it has no
	 * handler for, but a blocked one stays pending through exec until
	 * the zone kin's signalfd reads it (a zone_stop right away works). */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if (gofd >= 0) { /* the parent's veth must be in our netns first */
		char go;
		if (read(gofd, &go, 1) != 1) {
			errno = ECANCELED;
			child_fail(errfd, ZSTEP_SYNC);
		}
		close(gofd);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(errfd, ZSTEP_PRIVATE);
	const char *root = a->root ? a->root : a->scratch;
	int m = a->root ? mount(root, root, NULL, MS_BIND | MS_REC, NULL)
	                : mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
	if (m < 0)
		child_fail(errfd, ZSTEP_ROOT);
	if (!a->root && a->self_dynamic)
		bind_usr(root);
	if (mount_in(root, "/proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		child_fail(errfd, ZSTEP_PROC);
	/* sysfs and cgroup2 show this zone's view; not fatal where refused. */
	mount_in(root, "/sys", "sysfs", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
	         NULL);
	mount_in(root, "/sys/fs/cgroup", "cgroup2", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	         NULL);
	if (make_dev(root) < 0)
		child_fail(errfd, ZSTEP_DEV);
	if (mount_in(root, "/run", "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		child_fail(errfd, ZSTEP_RUN);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	mkdir(tmp, 01777);
	if (chdir(root) < 0)
		child_fail(errfd, ZSTEP_PIVOT);
	if (syscall(SYS_pivot_root, ".", ".") == 0) {
		if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
			child_fail(errfd, ZSTEP_PIVOT);
	} else if (errno != EINVAL || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	           chdir("/") < 0) {
		/* EINVAL: our root is the initramfs (a VM guest's), which
		 * pivot_root cannot move; the new root is moved over it and
		 * chroot'ed into instead, as container runtimes do there. */
		child_fail(errfd, ZSTEP_PIVOT);
	}
	if (sethostname(a->name, strlen(a->name)) < 0)
		child_fail(errfd, ZSTEP_HOSTNAME);
	/* fd 3 is the RPC end; the exe memfd, errfd and the log pipe stay
	 * clear of it and of 0-2. */
	int exe = fcntl(a->exe_fd, F_DUPFD_CLOEXEC, 10);
	int err2 = fcntl(errfd, F_DUPFD_CLOEXEC, 10);
	int out = a->out_fd >= 0 ? fcntl(a->out_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (exe < 0 || err2 < 0 || (a->out_fd >= 0 && out < 0))
		child_fail(errfd, ZSTEP_FDS);
	errfd = err2;
	if (rpcfd == ZONE_RPC_FD ? fd_set_cloexec(rpcfd, false) < 0 : dup2(rpcfd, ZONE_RPC_FD) < 0)
		child_fail(errfd, ZSTEP_FDS);
	if (out >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			child_fail(errfd, ZSTEP_FDS);
	}
	static char path_env[] =
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	char *const env[] = {path_env, NULL};
	syscall(SYS_execveat, exe, "", a->argv, env, AT_EMPTY_PATH);
	child_fail(errfd, ZSTEP_EXEC);
}

int zone_spawn(const struct zone_spawn *a, struct zone_spawned *ret, int *ret_step)
{
	_cleanup_close_ int cg = -1, errr = -1, errw = -1, gor = -1, gow = -1;
	int sv[2], pidfd = -1, r;

	*ret_step = -1;
	cg = open(a->cgroup_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return -errno;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	errr = p[0], errw = p[1];
	r = fd_set_nonblock(errr, true);
	if (r < 0)
		return r;
	if (a->net) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		gor = p[0], gow = p[1];
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	uint64_t flags = CLONE_PIDFD | CLONE_INTO_CGROUP | CLONE_NEWPID | CLONE_NEWNS |
	                 CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;
	if (a->net)
		flags |= CLONE_NEWNET;
	struct clone_args ca = {.flags = flags,
	                        .pidfd = (uint64_t)(uintptr_t)&pidfd,
	                        .exit_signal = SIGCHLD,
	                        .cgroup = (uint64_t)cg};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		close(sv[0]);
		close(errr);
		if (gow >= 0)
			close(gow);
		zone_child(a, errw, gor, sv[1]);
	}
	close(sv[1]);
	close(TAKE_FD(errw));
	if (gor >= 0)
		close(TAKE_FD(gor));
	*ret = (struct zone_spawned){
	    .pid = (pid_t)pid, .pidfd = pidfd, .rpc_fd = sv[0], .report_fd = -1};
	if (a->net) {
		/* The child waits for this (it reads gofd), so a failure
		 * here kills a process that is not in any setup yet. */
		r = a->net_setup(a->net_data, (pid_t)pid);
		if (r < 0) {
			*ret_step = ZSTEP_NET;
			goto fail;
		}
		if (write(gow, "g", 1) != 1) {
			r = -errno;
			goto fail;
		}
	}
	/* The rest of the setup is the caller's to watch, from its loop. */
	ret->report_fd = TAKE_FD(errr);
	return 0;
fail:
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	waitid((idtype_t)3 /* P_PIDFD */, (id_t)pidfd, &si, WEXITED);
	close(pidfd);
	close(ret->rpc_fd);
	*ret = (struct zone_spawned){.pidfd = -1, .rpc_fd = -1, .report_fd = -1};
	return r < 0 ? r : -EIO;
}

int zone_spawn_report(int report_fd, int *ret_step)
{
	int msg[2];
	ssize_t got = read(report_fd, msg, sizeof(msg));
	if (got < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (got == 0)
		return 1;
	if (got != (ssize_t)sizeof(msg)) { /* one write of 8 bytes: never split */
		*ret_step = -1;
		return -EIO;
	}
	*ret_step = msg[0];
	return msg[1] > 0 ? -msg[1] : -EIO;
}
