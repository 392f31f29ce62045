/* spawn: the zone kin's start. clone3 straight into the zone's cell with
 * new pid, mount, uts, ipc, cgroup (and net) namespaces; the child makes
 * its root (the given directory bound onto itself, or a tmpfs), mounts
 * /proc, /sys, /sys/fs/cgroup, a small /dev and /run in it, pivots into
 * it, sets the hostname, puts its RPC end on fd 3 (its reconnect socket,
 * if any, on 4), /dev/null on 0 and the log pipe on 1 and 2, and execs kin
 * from the sealed memfd. A failed step is
 * sent back on a pipe as (step, errno); EOF means it exec'd. The parent
 * never waits on that pipe here: zone.c watches it from the loop. */
#include "zone/zone-int.h"

#include <fcntl.h>
#include <linux/close_range.h>
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
    [ZSTEP_SHARE] = "binding the shared directory",
    [ZSTEP_NETNS] = "joining the network namespace",
    [ZSTEP_SYSCTL] = "writing the sysctls",
    [ZSTEP_ROOT_CHECK] = "checking the root",
};

const char *zone_step_name(int step)
{
	return step >= 0 && (size_t)step < ARRAY_SIZE(step_names) && step_names[step]
	           ? step_names[step]
	           : "setup";
}

static int mount_in(const char *root, const char *dir, const char *src, const char *type,
                    unsigned long flags, const char *data)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", root, dir);
	mkdir(path, 0755);
	return mount(src, path, type, flags, data);
}

/* Before anything of its own: the parent's go (gofd), the given root
 * checked to be a directory, the network namespace to join joined. */
static void child_prepare(const struct zone_spawn *a, int errfd, int gofd)
{
	if (gofd >= 0) { /* the parent's veth must be in our netns first */
		char go;
		if (read(gofd, &go, 1) != 1) {
			errno = ECANCELED;
			spawn_child_fail(errfd, ZSTEP_SYNC, errno);
		}
		close(gofd);
	}
	if (a->root) {
		struct stat st;
		if (stat(a->root, &st) < 0)
			spawn_child_fail(errfd, ZSTEP_ROOT_CHECK, errno);
		if (!S_ISDIR(st.st_mode))
			spawn_child_fail(errfd, ZSTEP_ROOT_CHECK, ENOTDIR);
	}
	if (a->netns) {
		int fd = open(a->netns, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
			spawn_child_fail(errfd, ZSTEP_NETNS, errno);
		close(fd);
	}
	/* In our namespaces now: /proc/sys shows the caller's, whichever
	 * procfs it is read through. */
	for (size_t i = 0; a->sysctls && a->sysctls[i]; i++) {
		char path[PATH_MAX];
		const char *kv = a->sysctls[i], *eq = strchr(kv, '=');
		snprintf(path, sizeof(path), "/proc/sys/%.*s", (int)(eq - kv), kv);
		for (char *p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		int r = file_write_str(path, eq + 1);
		if (r < 0)
			spawn_child_fail(errfd, ZSTEP_SYSCTL, -r);
	}
}

/* The zone's root at root: an overlay, the given root bound onto itself,
 * or the parent's root read-only without its own /proc, /sys, ... */
static void child_mount_root(const struct zone_spawn *a, const char *root, int errfd)
{
	if (a->overlay ? mount("overlay", root, "overlay", 0, a->overlay) < 0
	               : mount(a->root ? root : "/", root, NULL, MS_BIND | MS_REC, NULL) < 0)
		spawn_child_fail(errfd, ZSTEP_ROOT, errno);
	if (a->overlay) {
		/* An image need not have the mount points; its overlay is ours
		 * to write. */
		static const char *const dirs[] = {"/proc", "/sys", "/dev", "/run", "/tmp"};
		char path[PATH_MAX];
		for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
			snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
			mkdir(path, i == 4 ? 01777 : 0755);
		}
	}
	if (!a->root) {
		/* No root given: the parent's, every mount of it read-only
		 * (what its user expects to run is there: a shell, libraries,
		 * the image store), with its own /proc, /sys, /dev, /run, /tmp. */
		struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
		if (mount_setattr(AT_FDCWD, root, AT_RECURSIVE, &ro, sizeof(ro)) < 0)
			spawn_child_fail(errfd, ZSTEP_ROOT, errno);
		/* The parent's mounts there go, not just hidden below ours: a
		 * zone kin must find its own cgroup2, not the parent's. */
		static const char *const own[] = {"/proc", "/sys", "/dev", "/run", "/tmp"};
		char path[PATH_MAX];
		for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
			snprintf(path, sizeof(path), "%s%s", root, own[i]);
			umount2(path, MNT_DETACH); /* EINVAL: not a mount there */
		}
	}
}

/* The zone's own /proc, /sys, /sys/fs/cgroup, /dev, /run and /tmp. */
static void child_mount_fs(const struct zone_spawn *a, const char *root, int errfd)
{
	if (mount_in(root, "/proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		spawn_child_fail(errfd, ZSTEP_PROC, errno);
	/* sysfs and cgroup2 show this zone's view; not fatal where refused. */
	mount_in(root, "/sys", "sysfs", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
	         NULL);
	mount_in(root, "/sys/fs/cgroup", "cgroup2", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	         NULL);
	char dev[PATH_MAX];
	snprintf(dev, sizeof(dev), "%s/dev", root);
	int r = spawn_make_dev(dev);
	if (r < 0)
		spawn_child_fail(errfd, ZSTEP_DEV, -r);
	if (mount_in(root, "/run", "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		spawn_child_fail(errfd, ZSTEP_RUN, errno);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	if (!a->root) {
		if (mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
			spawn_child_fail(errfd, ZSTEP_RUN, errno);
	} else {
		mkdir(tmp, 01777);
	}
}

/* The shared directory's clone (open_tree'd before our mounts went
 * private) moved into place below the new root, then made a slave (or
 * left a peer). */
static void child_place_share(const struct zone_spawn *a, const char *root, int share, int errfd)
{
	char dst[PATH_MAX];
	snprintf(dst, sizeof(dst), "%s%s", root, a->share_dst);
	if (mkdir_p(dst, 0755) < 0 ||
	    syscall(SYS_move_mount, share, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
	    (!a->share_peer && mount(NULL, dst, NULL, MS_REC | MS_SLAVE, NULL) < 0))
		spawn_child_fail(errfd, ZSTEP_SHARE, errno);
	close(share);
}

/* Into root: pivot_root, or where that cannot be, a move and chroot. */
static void child_pivot(const char *root, int errfd)
{
	if (chdir(root) < 0)
		spawn_child_fail(errfd, ZSTEP_PIVOT, errno);
	if (syscall(SYS_pivot_root, ".", ".") == 0) {
		if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
			spawn_child_fail(errfd, ZSTEP_PIVOT, errno);
	} else if (errno != EINVAL || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	           chdir("/") < 0) {
		/* EINVAL: our root is the initramfs (a VM guest's), which
		 * pivot_root cannot move; the new root is moved over it and
		 * chroot'ed into instead, as container runtimes do there. */
		spawn_child_fail(errfd, ZSTEP_PIVOT, errno);
	}
}

/* The zone kin's fds: RPC on 3 (its reconnect socket on 4), /dev/null on
 * 0 and the log pipe on 1 and 2, nothing else. Returns the exe memfd's
 * copy; *errfd becomes a copy of the report pipe clear of them. */
static int child_fds(const struct zone_spawn *a, int *errfd, int rpcfd)
{
	/* fd 3 is the RPC end; the exe memfd, errfd and the log pipe stay
	 * clear of it and of 0-2. */
	int exe = fcntl(a->exe_fd, F_DUPFD_CLOEXEC, 10);
	int err2 = fcntl(*errfd, F_DUPFD_CLOEXEC, 10);
	int out = a->out_fd >= 0 ? fcntl(a->out_fd, F_DUPFD_CLOEXEC, 10) : -1;
	int lfd = a->listen_fd >= 0 ? fcntl(a->listen_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (exe < 0 || err2 < 0 || (a->out_fd >= 0 && out < 0) || (a->listen_fd >= 0 && lfd < 0))
		spawn_child_fail(*errfd, ZSTEP_FDS, errno);
	*errfd = err2;
	if (rpcfd == ZONE_RPC_FD ? fd_set_cloexec(rpcfd, false) < 0 : dup2(rpcfd, ZONE_RPC_FD) < 0)
		spawn_child_fail(*errfd, ZSTEP_FDS, errno);
	if (lfd >= 0 && dup2(lfd, ZONE_LISTEN_FD) < 0)
		spawn_child_fail(*errfd, ZSTEP_FDS, errno);
	/* Nothing else of ours reaches the zone kin: not even an fd kin was
	 * started with and never marked (its starter's). */
	syscall(SYS_close_range, (lfd >= 0 ? ZONE_LISTEN_FD : ZONE_RPC_FD) + 1, ~0u,
	        CLOSE_RANGE_CLOEXEC);
	if (out >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			spawn_child_fail(*errfd, ZSTEP_FDS, errno);
	}
	return exe;
}

static _noreturn_ void zone_child(const struct zone_spawn *a, int errfd, int gofd, int rpcfd)
{
	/* Blocked, not default: a namespace's init drops signals it has no
	 * handler for, but a blocked one stays pending through exec until
	 * the zone kin's signalfd reads it (a zone_stop right away works). */
	spawn_signals_reset(SPAWN_MASK_FULL);
	child_prepare(a, errfd, gofd);
	/* A clone of a shared mount joins its peer group: taken before our
	 * mounts go private, it is made a slave once in place. */
	int share = -1;
	if (a->share_src) {
		share = (int)syscall(SYS_open_tree, AT_FDCWD, a->share_src,
		                     OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
		if (share < 0)
			spawn_child_fail(errfd, ZSTEP_SHARE, errno);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		spawn_child_fail(errfd, ZSTEP_PRIVATE, errno);
	const char *root = a->root ? a->root : a->scratch;
	child_mount_root(a, root, errfd);
	child_mount_fs(a, root, errfd);
	if (share >= 0)
		child_place_share(a, root, share, errfd);
	child_pivot(root, errfd);
	if (sethostname(a->hostname, strlen(a->hostname)) < 0)
		spawn_child_fail(errfd, ZSTEP_HOSTNAME, errno);
	int exe = child_fds(a, &errfd, rpcfd);
	static char path_env[] =
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	char *const env[] = {path_env, NULL};
	syscall(SYS_execveat, exe, "", a->argv, env, AT_EMPTY_PATH);
	spawn_child_fail(errfd, ZSTEP_EXEC, errno);
}

int zone_spawn(const struct zone_spawn *a, struct zone_spawned *ret, int *ret_step)
{
	_cleanup_close_ int cg = -1, errr = -1, gor = -1, gow = -1;
	int sv[2], pidfd, r;
	struct spawn_proc sp;

	*ret_step = -1;
	cg = open(a->cgroup_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return -errno;
	int p[2];
	if (a->net) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		gor = p[0], gow = p[1];
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	uint64_t ns = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWCGROUP;
	if (!a->host_pid)
		ns |= CLONE_NEWPID;
	if (!a->host_ipc)
		ns |= CLONE_NEWIPC;
	if (a->net)
		ns |= CLONE_NEWNET;
	r = spawn_clone(
	    &(struct spawn_opts){.ns_flags = ns, .cgroup_fd = cg, .report_nonblock = true}, &sp);
	if (r < 0) {
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (r == 0) {
		close(sv[0]);
		if (gow >= 0)
			close(gow);
		zone_child(a, sp.report_fd, gor, sv[1]);
	}
	pid_t pid = sp.pid;
	pidfd = sp.pidfd;
	errr = sp.report_fd;
	close(sv[1]);
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
	spawn_kill_and_reap(pidfd);
	close(pidfd);
	close(ret->rpc_fd);
	*ret = (struct zone_spawned){.pidfd = -1, .rpc_fd = -1, .report_fd = -1};
	return r < 0 ? r : -EIO;
}
