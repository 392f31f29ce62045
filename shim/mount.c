/* mount: what a shim mounts on containerd's behalf — the rootfs list of a
 * Create at BUNDLE/rootfs, the pod directory (a shared tmpfs the pod's zone
 * gets as a slave) and the binds into it that make a container's rootfs
 * and FIFOs visible inside the zone — and the lazy unmounts that undo them
 * (delete runs them too, after a shim died). */
#include "shim/shim.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

static int mount_one(const struct shim_mount *m, const char *target, struct err *err)
{
	char data[4096] = "";
	size_t len = 0;
	unsigned long flags = 0;
	if (!m->type || !m->type[0] || strlen(m->type) > 64 || !m->source || !m->source[0] ||
	    m->noptions > SHIM_OPTIONS_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "rootfs: a mount needs a type, a source and at most %d options",
		               SHIM_OPTIONS_MAX);
	for (size_t i = 0; i < m->noptions; i++) {
		const char *o = m->options[i];
		unsigned long set, clear;
		if (mount_option_flag(o, &set, &clear)) {
			flags = (flags | set) & ~clear;
			continue;
		}
		size_t n = strlen(o);
		if (len + n + 2 > sizeof(data))
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "rootfs: %s mount: options over %zu bytes", m->type,
			               sizeof(data) - 1);
		len += (size_t)snprintf(data + len, sizeof(data) - len, "%s%s", len ? "," : "", o);
	}
	bool bind = strcmp(m->type, "bind") == 0 || (flags & MS_BIND);
	if (bind)
		flags |= MS_BIND;
	/* A bind takes no data, and its read-only needs a remount. */
	if (mount(m->source, target, bind ? NULL : m->type, flags & ~(bind ? MS_RDONLY : 0),
	          bind || !len ? NULL : data) < 0)
		return err_set_errno(err, -errno, "rootfs: %s mount of %.200s: %m", m->type,
		                     m->source);
	if (bind && (flags & MS_RDONLY) &&
	    mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0) {
		int e = -errno;
		umount2(target, MNT_DETACH);
		return err_set_errno(err, e, "rootfs: read-only bind of %.200s: %s", m->source,
		                     strerror(-e));
	}
	return 0;
}

int shim_rootfs_mount(const struct shim_mount *m, size_t n, const char *target, struct err *err)
{
	if (n > SHIM_MOUNTS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "rootfs: %zu mounts, at most %d",
		               n, SHIM_MOUNTS_MAX);
	if (mkdir(target, 0711) < 0 && errno != EEXIST)
		return err_set_errno(err, -errno, "rootfs: %s: %m", target);
	for (size_t i = 0; i < n; i++) {
		int r = mount_one(&m[i], target, err);
		if (r < 0) {
			shim_unmount_all(target);
			return r;
		}
	}
	return 0;
}

int shim_unmount_all(const char *path)
{
	int n = 0;
	/* Stacked mounts come off one at a time; a bound loop in case the
	 * kernel keeps answering yes. */
	while (n < 64 && umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		n++;
	return n;
}

void shim_unmount_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX + 300];
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		shim_unmount_all(path);
		/* What is left is the pod directory's own node: a file goes, a
		 * directory only when empty (an exec's is its own to empty). */
		if (unlink(path) < 0 && errno == EISDIR)
			rmdir(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

int shim_pod_dir_setup(const char *dir, struct err *err)
{
	int r = mkdir_p(dir, 0711);
	if (r < 0)
		return err_set_errno(err, r, "pod directory %s: %s", dir, strerror(-r));
	if (path_is_mountpoint(dir))
		return 0; /* mounted already: a restarted daemon */
	if (mount("kin-pod", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0711,size=16m") < 0)
		return err_set_errno(err, -errno, "pod directory %s: tmpfs: %m", dir);
	if (mount(NULL, dir, NULL, MS_SHARED, NULL) < 0) {
		r = -errno;
		umount2(dir, MNT_DETACH);
		return err_set_errno(err, r, "pod directory %s: make shared: %s", dir,
		                     strerror(-r));
	}
	return 0;
}

int shim_bind(const char *src, const char *dst, struct err *err)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return err_set_errno(err, -errno, "%.200s: %m", src);
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, 0711) < 0 && errno != EEXIST)
			return err_set_errno(err, -errno, "%.200s: %m", dst);
	} else {
		int fd = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return err_set_errno(err, -errno, "%.200s: %m", dst);
		close(fd);
	}
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
		return err_set_errno(err, -errno, "bind %.200s: %m", src);
	return 0;
}
