/* spawn: clone3 straight into a cell's cgroup, and the child's side of
 * starting an executable: namespaces, root, ids, capabilities, seccomp,
 * execve. The child reports the step that failed and its errno through a
 * CLOEXEC pipe (EOF means execve succeeded), so a failure reaches the caller
 * as an error, not as a silent child death. The parent never waits on that
 * pipe here: exec_spawn returns its read end, and start.c reads it from the
 * loop (a setup that hangs must not stall kin). */
#include "cells/cells-int.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

static const char *const step_names[EXEC_STEP_COUNT] = {
    [EXEC_STEP_SYNC] = "sync",
    [EXEC_STEP_SETSID] = "setsid",
    [EXEC_STEP_STDIO] = "stdio",
    [EXEC_STEP_CTTY] = "controlling terminal",
    [EXEC_STEP_CGROUPNS] = "cgroup namespace",
    [EXEC_STEP_MOUNT_PRIVATE] = "mount private",
    [EXEC_STEP_BIND_ROOT] = "bind root",
    [EXEC_STEP_MOUNT_PROC] = "mount /proc",
    [EXEC_STEP_MOUNT_DEV] = "mount /dev",
    [EXEC_STEP_PIVOT_ROOT] = "pivot_root",
    [EXEC_STEP_REMOUNT_RO] = "remount read-only",
    [EXEC_STEP_MASK] = "masked and read-only paths",
    [EXEC_STEP_MOUNTS] = "mounts",
    [EXEC_STEP_SYSCTL] = "sysctl",
    [EXEC_STEP_SETNS] = "joining a namespace",
    [EXEC_STEP_OOM] = "oom_score_adj",
    [EXEC_STEP_NODES] = "device nodes",
    [EXEC_STEP_HOSTNAME] = "sethostname",
    [EXEC_STEP_LOOPBACK] = "loopback up",
    [EXEC_STEP_CHDIR] = "chdir",
    [EXEC_STEP_RLIMIT] = "setrlimit",
    [EXEC_STEP_BOUNDING] = "capability bounding set",
    [EXEC_STEP_SETGROUPS] = "setgroups",
    [EXEC_STEP_SETGID] = "setgid",
    [EXEC_STEP_SETUID] = "setuid",
    [EXEC_STEP_CAPS] = "capabilities",
    [EXEC_STEP_AMBIENT] = "ambient capabilities",
    [EXEC_STEP_NO_NEW_PRIVS] = "no_new_privs",
    [EXEC_STEP_SECCOMP] = "seccomp",
    [EXEC_STEP_PASS_FDS] = "passing fds",
    [EXEC_STEP_NICE] = "nice",
    [EXEC_STEP_EXECVE] = "execve",
};

const char *exec_step_name(enum exec_step s)
{
	return (unsigned)s < EXEC_STEP_COUNT ? step_names[s] : "?";
}

#define TRY(step, expr)                                                                            \
	do {                                                                                       \
		if ((expr) < 0)                                                                    \
			spawn_child_fail(errfd, step, errno);                                      \
	} while (0)

/* Remounting read-only in a user namespace must keep the flags the mount
 * was locked with, or the kernel refuses. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	unsigned long f = 0;
	if (statvfs(path, &sv) < 0)
		return 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		f |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		f |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		f |= MS_RELATIME;
	return f;
}

/* Masked paths get /dev/null (a file) or an empty read-only tmpfs (a
 * directory) over them; read-only ones a read-only bind of themselves.
 * Paths that do not exist are skipped, as other runtimes do. */
static void mask_paths(const struct exec_spec *s, int errfd)
{
	struct stat st;
	for (size_t i = 0; s->masked_paths && s->masked_paths[i]; i++) {
		const char *p = s->masked_paths[i];
		if (stat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			TRY(EXEC_STEP_MASK, mount("tmpfs", p, "tmpfs", MS_RDONLY, "size=0"));
		else
			TRY(EXEC_STEP_MASK, mount("/dev/null", p, NULL, MS_BIND, NULL));
	}
	for (size_t i = 0; s->readonly_paths && s->readonly_paths[i]; i++) {
		const char *p = s->readonly_paths[i];
		if (stat(p, &st) < 0)
			continue;
		TRY(EXEC_STEP_MASK, mount(p, p, NULL, MS_BIND | MS_REC, NULL));
		TRY(EXEC_STEP_MASK,
		    mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(p), NULL));
	}
	for (size_t i = 0; s->writable_paths && s->writable_paths[i]; i++) {
		const char *p = s->writable_paths[i];
		if (stat(p, &st) < 0)
			continue;
		TRY(EXEC_STEP_MASK, mount(p, p, NULL, MS_BIND | MS_REC, NULL));
		TRY(EXEC_STEP_MASK,
		    mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | (locked_flags(p) & ~MS_RDONLY),
		          NULL));
	}
}

/* A file to bind over is made a file, anything else a directory; every
 * component below the root a real directory (a symlink is refused: the
 * root may come from an image or a bundle someone else controls). */
static int mount_target(const struct exec_mount *m)
{
	char dir[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(m->target, '/');
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - m->target), m->target);
	int pfd, r = dir_open_beneath(AT_FDCWD, dir[0] ? dir + 1 : ".", 0755, &pfd);
	if (r < 0)
		return r;
	const char *name = slash + 1;
	bool file = (m->flags & MS_BIND) && stat(m->source, &st) == 0 && !S_ISDIR(st.st_mode);
	if (!name[0])
		r = 0; /* "/" itself */
	else if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		r = S_ISLNK(st.st_mode) ? -ELOOP : 0;
	else if (file)
		r = mknodat(pfd, name, S_IFREG | 0644, 0) < 0 && errno != EEXIST ? -errno : 0;
	else
		r = mkdirat(pfd, name, 0755) < 0 && errno != EEXIST ? -errno : 0;
	close(pfd);
	return r;
}

/* One mount of the list, cwd at the new root. A tmpfs on /dev is kin's
 * minimal /dev (the nodes a container needs, which a runtime supplies). */
static void apply_mount(const struct exec_mount *m, int errfd)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), ".%s", m->target);
	int r = mount_target(m);
	if (r < 0)
		spawn_child_fail(errfd, EXEC_STEP_MOUNTS, -r);
	if (m->type && !strcmp(m->type, "tmpfs") && !strcmp(m->target, "/dev")) {
		if ((r = spawn_make_dev(path)) < 0)
			spawn_child_fail(errfd, EXEC_STEP_MOUNT_DEV, -r);
		return;
	}
	const char *type = m->type;
	if (type && !strcmp(type, "cgroup")) /* v1's name: kin runs on cgroup2 */
		type = "cgroup2";
	unsigned long f = m->flags & ~(MS_REMOUNT | MS_REC | MS_BIND);
	if (m->flags & MS_BIND) {
		TRY(EXEC_STEP_MOUNTS,
		    mount(m->source, path, NULL, m->flags & (MS_BIND | MS_REC), NULL));
		/* A bind takes its flags only on a remount. */
		if (f)
			TRY(EXEC_STEP_MOUNTS,
			    mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | f | locked_flags(path),
			          NULL));
	} else if (mount(m->source ? m->source : type, path, type, f,
	                 m->data && m->data[0] && strcmp(type, "cgroup2") ? m->data : NULL) < 0) {
		/* In a user namespace without a network (or cgroup) namespace of
		 * its own, sysfs (cgroup2) cannot be mounted anew: the host's is
		 * bound read-only instead, as runc does for rootless containers. */
		const char *host = !strcmp(type, "sysfs")     ? "/sys"
		                   : !strcmp(type, "cgroup2") ? "/sys/fs/cgroup"
		                                              : NULL;
		if (errno != EPERM || !host)
			spawn_child_fail(errfd, EXEC_STEP_MOUNTS, errno);
		TRY(EXEC_STEP_MOUNTS, mount(host, path, NULL, MS_BIND | MS_REC, NULL));
		TRY(EXEC_STEP_MOUNTS,
		    mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(path),
		          NULL));
	}
	if (m->propagation)
		TRY(EXEC_STEP_MOUNTS, mount(NULL, path, NULL, m->propagation, NULL));
}

/* The spec's device nodes, in the new root's /dev (cwd is the root). In a
 * user namespace mknod is refused: the host's node is bound instead. */
static void make_nodes(const struct exec_spec *s, int errfd)
{
	for (size_t i = 0; i < s->ndevice_nodes; i++) {
		const struct exec_device_node *d = &s->device_nodes[i];
		char dir[PATH_MAX], host[PATH_MAX];
		const char *slash = strrchr(d->path, '/'), *name = slash + 1;
		int pfd;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - d->path - 1), d->path + 1);
		int r = dir_open_beneath(AT_FDCWD, dir, 0755, &pfd);
		if (r < 0)
			spawn_child_fail(errfd, EXEC_STEP_NODES, -r);
		mode_t type = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
		/* kin's own /dev/ptmx (pts's) and its mount points (the console,
		 * nodes bound in a user namespace) stay: a privileged container
		 * lists the host's, as runc keeps what it has made. */
		if (!strcmp(d->path, "/dev/ptmx") ||
		    (unlinkat(pfd, name, 0) < 0 && errno == EBUSY)) {
			close(pfd);
			continue;
		}
		if (mknodat(pfd, name, type | 0600, makedev(d->major, d->minor)) < 0) {
			if (errno != EPERM || type == S_IFIFO)
				spawn_child_fail(errfd, EXEC_STEP_NODES, errno);
			snprintf(host, sizeof(host), ".%s", d->path);
			TRY(EXEC_STEP_NODES, mknodat(pfd, name, S_IFREG | 0600, 0));
			TRY(EXEC_STEP_NODES, mount(d->path, host, NULL, MS_BIND, NULL));
		} else {
			TRY(EXEC_STEP_NODES,
			    fchownat(pfd, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW));
			TRY(EXEC_STEP_NODES, fchmodat(pfd, name, d->mode, 0));
		}
		close(pfd);
	}
}

/* "net.ipv4.ip_forward=1" into /proc/sys/net/ipv4/ip_forward. */
static void write_sysctls(const struct exec_spec *s, int errfd)
{
	for (size_t i = 0; s->sysctls && s->sysctls[i]; i++) {
		char path[PATH_MAX];
		const char *kv = s->sysctls[i], *eq = strchr(kv, '=');
		int n = snprintf(path, sizeof(path), "/proc/sys/%.*s", (int)(eq - kv), kv);
		for (char *p = path + 10; n > 0 && *p; p++)
			if (*p == '.')
				*p = '/';
		int r = file_write_str(path, eq + 1);
		if (r < 0)
			spawn_child_fail(errfd, EXEC_STEP_SYSCTL, -r);
	}
}

/* The terminal, whose slave is of kin's devpts (not the new root's own
 * instance), bound at the root's /dev/console as runc does: ttyname(3)
 * finds it there (same inode), so `tty` and programs that look their
 * terminal up by name work. Best effort: a root without /dev goes on. */
static void console_bind(void)
{
	struct stat st;
	char pts[64];
	/* By its path, in our copy of kin's mounts: a bind of the fd's own
	 * mount, which is of kin's namespace, is refused. */
	ssize_t n = readlink("/proc/self/fd/0", pts, sizeof(pts) - 1);
	if (n <= 0 || stat("dev", &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	pts[n] = '\0';
	int fd = open("dev/console", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	(void)mount(pts, "dev/console", NULL, MS_BIND, NULL);
}

static void setup_root(const struct exec_spec *s, int errfd)
{
	if (s->root_lowerdirs) {
		/* Fits: exec_spec_validate bounds it below a page. */
		char opts[4096];
		snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s",
		         s->root_lowerdirs, s->root_upperdir, s->root_workdir);
		TRY(EXEC_STEP_BIND_ROOT, mount("overlay", s->root, "overlay", 0, opts));
	} else {
		TRY(EXEC_STEP_BIND_ROOT, mount(s->root, s->root, NULL, MS_BIND | MS_REC, NULL));
	}
	TRY(EXEC_STEP_BIND_ROOT, chdir(s->root));
	bool shared = (s->root_propagation & ~MS_REC) == MS_SHARED;
	if (shared) {
		/* pivot_root takes no shared root nor one on a shared mount:
		 * the root made private, and bound again on itself (runc's
		 * way); the volumes bound below it stay in their peer groups. */
		TRY(EXEC_STEP_BIND_ROOT, mount(NULL, ".", NULL, MS_PRIVATE, NULL));
		TRY(EXEC_STEP_BIND_ROOT, mount(".", ".", NULL, MS_BIND | MS_REC, NULL));
		TRY(EXEC_STEP_BIND_ROOT, chdir(s->root));
	}
	if (s->nmounts) {
		for (size_t i = 0; i < s->nmounts; i++)
			apply_mount(&s->mounts[i], errfd);
	} else {
		if (mkdir("proc", 0555) < 0 && errno != EEXIST)
			spawn_child_fail(errfd, EXEC_STEP_MOUNT_PROC, errno);
		TRY(EXEC_STEP_MOUNT_PROC,
		    mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
		int r = spawn_make_dev("dev");
		if (r < 0)
			spawn_child_fail(errfd, EXEC_STEP_MOUNT_DEV, -r);
	}
	make_nodes(s, errfd);
	if (s->terminal)
		console_bind();
	/* pivot_root(".", ".") stacks the old root under the new one; the
	 * detach then drops it, leaving no path back to the host. */
	int old = -1;
	if (shared) /* the old root, to reach under the new one */
		TRY(EXEC_STEP_PIVOT_ROOT, old = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	TRY(EXEC_STEP_PIVOT_ROOT, syscall(SYS_pivot_root, ".", "."));
	if (shared) { /* its unmount must not reach the peers */
		TRY(EXEC_STEP_PIVOT_ROOT, fchdir(old));
		TRY(EXEC_STEP_PIVOT_ROOT, mount(NULL, ".", NULL, MS_REC | MS_SLAVE, NULL));
		close(old);
	}
	TRY(EXEC_STEP_PIVOT_ROOT, umount2(".", MNT_DETACH));
	TRY(EXEC_STEP_PIVOT_ROOT, chdir("/"));
	if (s->root_readonly)
		TRY(EXEC_STEP_REMOUNT_RO,
		    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags("/"),
		          NULL));
	write_sysctls(s, errfd);
	mask_paths(s, errfd);
}

static int loopback_up(void)
{
	struct ifreq ifr = {0};
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	str_copy(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return ioctl(fd, SIOCSIFFLAGS, &ifr);
}

static void set_ids_and_caps(const struct spawn_req *req, int errfd)
{
	const struct exec_spec *s = req->spec;
	gid_t groups[EXEC_GROUPS_MAX];
	for (size_t i = 0; i < s->ngroups; i++)
		groups[i] = s->groups[i];
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (!((s->caps >> cap) & 1) && cap_drop_bound(cap) < 0 && errno != EINVAL)
			spawn_child_fail(errfd, EXEC_STEP_BOUNDING, errno);
	/* Keep permitted capabilities across the uid change; they are set
	 * exactly right below. */
	TRY(EXEC_STEP_CAPS, prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
	TRY(EXEC_STEP_SETGROUPS, setgroups(s->ngroups, groups));
	TRY(EXEC_STEP_SETGID, setresgid(s->gid, s->gid, s->gid));
	TRY(EXEC_STEP_SETUID, setresuid(s->uid, s->uid, s->uid));
	TRY(EXEC_STEP_CAPS, prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
	TRY(EXEC_STEP_CAPS, cap_set_proc(req->caps));
	TRY(EXEC_STEP_AMBIENT, cap_reset_ambient());
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if ((s->ambient >> cap) & 1)
			TRY(EXEC_STEP_AMBIENT, cap_set_ambient(cap, CAP_SET));
}

static void load_seccomp(const struct spawn_req *req, int errfd)
{
	if (req->seccomp.len)
		TRY(EXEC_STEP_SECCOMP,
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &req->seccomp, 0, 0));
}

/* execvpe with the executable's own PATH (glibc's uses the caller's). */
static void exec_search(const struct spawn_req *req)
{
	const char *file = req->spec->path ? req->spec->path : req->spec->argv[0];
	char *const *argv = req->spec->argv;
	char buf[PATH_MAX];
	if (strchr(file, '/')) {
		execve(file, argv, req->envp);
		return;
	}
	int saved = ENOENT;
	for (const char *p = req->path;; p++) {
		size_t n = strcspn(p, ":");
		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)(n ? n : 1), n ? p : ".", file) <
		    (int)sizeof(buf)) {
			execve(buf, argv, req->envp);
			if (errno == EACCES)
				saved = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR)
				return;
		}
		p += n;
		if (!*p)
			break;
	}
	errno = saved;
}

/* Socket activation: the spec's fds become 3, 4, ... (without CLOEXEC),
 * the report pipe moves above them, and LISTEN_PID gets our own pid. */
static int pass_fds(const struct spawn_req *req, int errfd)
{
	const struct exec_spec *s = req->spec;
	int tmp[EXEC_PASS_FDS_MAX], top = 3 + (int)s->npass_fds;
	if (!s->npass_fds)
		return errfd;
	int moved = fcntl(errfd, F_DUPFD_CLOEXEC, top);
	if (moved < 0)
		spawn_child_fail(errfd, EXEC_STEP_PASS_FDS, errno);
	errfd = moved;
	for (size_t i = 0; i < s->npass_fds; i++)
		TRY(EXEC_STEP_PASS_FDS, tmp[i] = fcntl(s->pass_fds[i], F_DUPFD_CLOEXEC, top));
	for (size_t i = 0; i < s->npass_fds; i++)
		TRY(EXEC_STEP_PASS_FDS, dup2(tmp[i], 3 + (int)i));
	if (s->listen_env) {
		/* This copy of req is the child's own (clone without CLONE_VM). */
		char *pid = (char *)req->listen_pid;
		snprintf(pid, sizeof(req->listen_pid), "LISTEN_PID=%d", (int)getpid());
	}
	return errfd;
}

static _noreturn_ void child_main(const struct spawn_req *req, int errfd, int syncfd)
{
	const struct exec_spec *s = req->spec;
	int fds[3];
	char b;

	/* The mask stays as kin's (blocked) until just before execve. */
	spawn_signals_reset(SPAWN_MASK_KEEP);
	if (syncfd >= 0) { /* the parent writes our id maps first */
		if (read(syncfd, &b, 1) != 1)
			spawn_child_fail(errfd, EXEC_STEP_SYNC, errno ? errno : EPIPE);
		close(syncfd);
	}
	for (size_t i = 0; i < req->njoins; i++)
		TRY(EXEC_STEP_SETNS, setns(req->join_fds[i], 0));
	TRY(EXEC_STEP_SETSID, setsid());
	/* Above 2 first, so dup2 onto 0-2 never clobbers a source. */
	for (int i = 0; i < 3; i++)
		TRY(EXEC_STEP_STDIO, fds[i] = fcntl(req->stdio[i], F_DUPFD_CLOEXEC, 3));
	for (int i = 0; i < 3; i++)
		TRY(EXEC_STEP_STDIO, dup2(fds[i], i));
	if (s->terminal) /* the pty's slave, in our new session */
		TRY(EXEC_STEP_CTTY, ioctl(0, TIOCSCTTY, 0));
	if (s->namespaces & EXEC_NS_CGROUP) /* now, inside the cell: it becomes our root */
		TRY(EXEC_STEP_CGROUPNS, unshare(CLONE_NEWCGROUP));
	if (s->namespaces & EXEC_NS_MNT)
		TRY(EXEC_STEP_MOUNT_PRIVATE,
		    mount(NULL, "/", NULL,
		          s->root_propagation ? s->root_propagation : MS_REC | MS_PRIVATE, NULL));
	if (s->root)
		setup_root(s, errfd);
	else if ((s->namespaces & (EXEC_NS_MNT | EXEC_NS_PID)) == (EXEC_NS_MNT | EXEC_NS_PID))
		TRY(EXEC_STEP_MOUNT_PROC,
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
	if (!s->root && (s->namespaces & EXEC_NS_MNT)) {
		/* The host's root in a mount namespace of its own (a service's
		 * PrivateTmp=, ProtectSystem=): the list on it, in place. */
		TRY(EXEC_STEP_MOUNTS, chdir("/"));
		for (size_t i = 0; i < s->nmounts; i++)
			apply_mount(&s->mounts[i], errfd);
		mask_paths(s, errfd);
	}
	if (s->hostname)
		TRY(EXEC_STEP_HOSTNAME, sethostname(s->hostname, strlen(s->hostname)));
	if (s->namespaces & EXEC_NS_NET)
		TRY(EXEC_STEP_LOOPBACK, loopback_up());
	TRY(EXEC_STEP_CHDIR, chdir(s->cwd ? s->cwd : "/"));
	for (size_t i = 0; i < s->nrlimits; i++) {
		struct rlimit rl = {.rlim_cur = s->rlimits[i].soft, .rlim_max = s->rlimits[i].hard};
		TRY(EXEC_STEP_RLIMIT, setrlimit(s->rlimits[i].resource, &rl));
	}
	umask(s->umask);
	if (s->oom_score_adj_set) {
		char v[16];
		snprintf(v, sizeof(v), "%d", s->oom_score_adj);
		int r = file_write_str("/proc/self/oom_score_adj", v);
		if (r < 0)
			spawn_child_fail(errfd, EXEC_STEP_OOM, -r);
	}
	if (s->nice_set) /* before the ids change: a raise needs CAP_SYS_NICE */
		TRY(EXEC_STEP_NICE, setpriority(PRIO_PROCESS, 0, s->nice));
	/* Without no_new_privs a filter needs CAP_SYS_ADMIN to load: load it
	 * while we still have it, before the ids change (runc's order). With
	 * no_new_privs, or CAP_SYS_ADMIN kept, load it last, just before
	 * execve: the filter is the program's, not kin's setup's (systemd's
	 * order: a service's list need not allow setgroups or close_range). */
	bool late = s->no_new_privs || (s->caps >> CAP_SYS_ADMIN & 1);
	if (!late)
		load_seccomp(req, errfd);
	set_ids_and_caps(req, errfd);
	if (s->no_new_privs)
		TRY(EXEC_STEP_NO_NEW_PRIVS, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	errfd = pass_fds(req, errfd);
	/* Whatever kin's caller leaked without CLOEXEC must not reach the
	 * program; errfd stays open until execve succeeds. */
	syscall(SYS_close_range, 3 + (unsigned)s->npass_fds, ~0u, CLOSE_RANGE_CLOEXEC);
	spawn_signals_reset(SPAWN_MASK_EMPTY);
	if (late)
		load_seccomp(req, errfd);
	exec_search(req);
	spawn_child_fail(errfd, EXEC_STEP_EXECVE, errno);
}

static int write_map(pid_t pid, const char *file, const struct exec_idmap *m, size_t n)
{
	char path[64], buf[EXEC_IDMAP_MAX * 40] = "";
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u %u %u\n", m[i].inside,
		                        m[i].outside, m[i].count);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return file_write_str(path, buf);
}

static uint64_t clone_ns_flags(uint32_t ns)
{
	uint64_t f = 0;
	f |= ns & EXEC_NS_PID ? CLONE_NEWPID : 0;
	f |= ns & EXEC_NS_MNT ? CLONE_NEWNS : 0;
	f |= ns & EXEC_NS_NET ? CLONE_NEWNET : 0;
	f |= ns & EXEC_NS_UTS ? CLONE_NEWUTS : 0;
	f |= ns & EXEC_NS_IPC ? CLONE_NEWIPC : 0;
	f |= ns & EXEC_NS_USER ? CLONE_NEWUSER : 0;
	return f; /* the cgroup namespace is made by the child, once in the cell */
}

int exec_spawn(struct spawn_req *req, pid_t *ret_pid, int *ret_pidfd, int *ret_status_fd,
               struct err *err)
{
	const struct exec_spec *s = req->spec;
	_cleanup_close_ int err_r = -1, sync_r = -1, sync_w = -1;
	int pipefd[2], pidfd, r;
	struct spawn_proc p;

	if (s->namespaces & EXEC_NS_USER) {
		if (pipe2(pipefd, O_CLOEXEC) < 0)
			return err_set_errno(err, -errno, "exec \"%s\": pipe: %m", req->label);
		sync_r = pipefd[0], sync_w = pipefd[1];
	}
	const struct spawn_opts o = {.ns_flags = clone_ns_flags(s->namespaces),
	                             .cgroup_fd = req->cgroup_fd,
	                             .report_nonblock = true};
	_cleanup_close_ int own_pid = -1;
	if (req->join_pid_fd >= 0) {
		/* Our children's pid namespace is the joined one for this clone. */
		own_pid = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
		if (own_pid < 0 || setns(req->join_pid_fd, CLONE_NEWPID) < 0)
			return err_set_errno(
			    err, -errno, "exec \"%s\": joining the pid namespace: %m", req->label);
	}
	r = spawn_clone(&o, &p);
	if (r != 0 && own_pid >= 0 && setns(own_pid, CLONE_NEWPID) < 0)
		log_error("exec \"%s\": cannot return to kin's pid namespace: %m", req->label);
	if (r < 0) {
		if (r == -EBUSY)
			return err_set(err, r, ERR_FAILED_PRECONDITION,
			               "exec \"%s\": clone3: the cell has child cells with "
			               "controllers; processes go in leaf cells",
			               req->label);
		return err_set_errno(err, r, "exec \"%s\": clone3: %s", req->label, strerror(-r));
	}
	if (r == 0) {
		if (sync_w >= 0)
			close(sync_w);
		child_main(req, p.report_fd, sync_r);
	}
	pid_t pid = p.pid;
	pidfd = p.pidfd;
	err_r = p.report_fd;
	if (sync_r >= 0)
		close(TAKE_FD(sync_r));
	if (s->namespaces & EXEC_NS_USER) {
		/* Writes to /proc, no waiting on the child: it blocks on sync_r. */
		r = write_map((pid_t)pid, "uid_map", s->uid_map, s->nuid_map);
		if (r == 0)
			r = write_map((pid_t)pid, "gid_map", s->gid_map, s->ngid_map);
		if (r == 0 && write(sync_w, "g", 1) != 1)
			r = -errno;
		if (r < 0) {
			/* Not tracked yet: the child dies at once (it waits for us). */
			spawn_kill_and_reap(pidfd);
			close(pidfd);
			return err_set_errno(err, r, "exec \"%s\": uid/gid map: %s", req->label,
			                     strerror(-r));
		}
	}
	*ret_pid = pid;
	*ret_pidfd = pidfd;
	*ret_status_fd = TAKE_FD(err_r);
	return 0;
}

int exec_spawn_result(int status_fd, const char *label, struct err *err)
{
	int step, r = spawn_report_read(status_fd, &step);
	if (r == 0)
		return -EAGAIN;
	if (r == 1)
		return 0;
	if (step < 0)
		return err_set(err, -EIO, ERR_INTERNAL, "exec \"%s\": the child died in setup",
		               label);
	return err_set_errno(err, r, "exec \"%s\": %s: %s", label,
	                     exec_step_name((enum exec_step)step), strerror(-r));
}
