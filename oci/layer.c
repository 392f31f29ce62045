/* layer: one tar stream unpacked into an empty directory, the layer's own,
 * and nothing ever written outside it.
 *
 * Names are made relative ("/etc/x" and "./etc/x" are "etc/x"); a ".."
 * anywhere is refused. Every parent is walked one component at a time
 * from the layer's directory with O_NOFOLLOW|O_DIRECTORY, so a symlink on
 * the way — one an earlier entry planted included — is refused, never
 * followed; missing parents are made (0755, as tar does). The last
 * component is made with *at calls on the parent's fd that do not follow
 * it either (O_EXCL|O_NOFOLLOW, symlinkat, mknodat, linkat without
 * AT_SYMLINK_FOLLOW). A hard link's target is walked the same way: it can
 * only be something already in this layer's directory, which started
 * empty — an earlier entry of this layer.
 *
 * Ownership, modes (setuid and the rest after chown, which clears them)
 * and times are kept; directory times are set last, since making entries
 * in a directory changes its own. Extended attributes: security.capability
 * (file capabilities that programs such as ping rely on) and user.*; the
 * rest (ACLs, SELinux labels) mean nothing without the host policy they
 * came from and are skipped; trusted.overlay.* (and user.overlay.*, what
 * overlayfs reads with userxattr) is refused, so a layer
 * cannot forge whiteouts or opaque directories but through OCI's names.
 *
 * Bounded: entries, bytes written, and free space (each file's size must
 * leave reserve_bytes free). */
#include "oci/oci-int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define COPY_BUF  (256 * 1024)
#define DEPTH_MAX 256

struct dir_time {
	char *path;
	struct timespec mtime;
};

struct unpack {
	int dirfd;
	const char *label;
	const struct oci_layer_limits *lim;
	unsigned flags;
	struct oci_layer_stats stats;
	struct err *err;
	const char *entry; /* for messages */
	/* The last parent walked, kept open: entries come directory by
	 * directory, so most need no walk at all. */
	char cached[PATH_MAX];
	int cached_fd;
	struct dir_time *times;
	size_t ntimes, cap_times;
	uint8_t *buf;
};

static int fail(struct unpack *u, int r, const char *fmt, ...) _printf_(3, 4);
static int fail(struct unpack *u, int r, const char *fmt, ...)
{
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(u->err, r, r == -ENOSPC ? ERR_RESOURCE_EXHAUSTED : ERR_INVALID_ARGUMENT,
	               "%s: entry \"%.200s\": %s", u->label, u->entry, what);
}

/* "/./a//b/" -> "a/b" in buf; -EINVAL for "..", "" for the root itself. */
static int normalize(const char *name, char *buf, size_t size)
{
	size_t o = 0;
	for (const char *p = name; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!(n == 1 && p[0] == '.')) {
			if (n > NAME_MAX || o + n + 2 > size)
				return -ENAMETOOLONG;
			if (o)
				buf[o++] = '/';
			memcpy(buf + o, p, n);
			o += n;
		}
		p += n;
	}
	buf[o] = 0;
	return 0;
}

/* The directory path (a normalized name's all but last component) opened
 * from the layer's root, made where missing; the fd is u's (cached). */
static int walk(struct unpack *u, const char *dir, bool create, int *ret)
{
	if (!dir[0]) {
		*ret = u->dirfd;
		return 0;
	}
	if (u->cached_fd >= 0 && strcmp(u->cached, dir) == 0) {
		*ret = u->cached_fd;
		return 0;
	}
	int fd, r = dir_open_beneath(u->dirfd, dir, create ? 0755 : 0, &fd);
	if (r == -ELOOP)
		return fail(u, r, "the path goes through a symlink or a non-directory (\"%.200s\")",
		            dir);
	if (r < 0)
		return fail(u, r, "%s: %s", dir, strerror(-r));
	if (u->cached_fd >= 0)
		close(u->cached_fd);
	u->cached_fd = fd;
	str_copy(u->cached, sizeof(u->cached), dir);
	*ret = fd;
	return 0;
}

/* Splits a normalized path into its directory (in dirbuf) and last name. */
static const char *split(const char *path, char *dirbuf)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		dirbuf[0] = 0;
		return path;
	}
	memcpy(dirbuf, path, (size_t)(slash - path));
	dirbuf[slash - path] = 0;
	return slash + 1;
}

/* Whatever is at name goes (tar replaces), but a directory stays when a
 * directory comes again; a directory is not replaced by anything else. */
static int clear(struct unpack *u, int pfd, const char *name, bool keep_dir, bool *ret_is_dir)
{
	struct stat st;
	*ret_is_dir = false;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(u, -errno, "stat: %m");
	if (S_ISDIR(st.st_mode)) {
		if (keep_dir) {
			*ret_is_dir = true;
			return 0;
		}
		return fail(u, -EISDIR, "replaces a directory of this layer");
	}
	if (unlinkat(pfd, name, 0) < 0)
		return fail(u, -errno, "unlink: %m");
	return 0;
}

static int xattrs_set(struct unpack *u, int fd, const struct oci_tar_entry *e)
{
	for (size_t i = 0; i < e->nxattrs; i++) {
		const struct oci_tar_xattr *x = &e->xattrs[i];
		if (str_startswith(x->name, "trusted.overlay.") ||
		    str_startswith(x->name, "user.overlay."))
			return fail(u, -EPERM,
			            "sets %s (overlayfs's own; whiteouts come as .wh. names)",
			            x->name);
		if (strcmp(x->name, "security.capability") != 0 &&
		    !str_startswith(x->name, "user."))
			continue;
		if (fsetxattr(fd, x->name, x->value, x->len, 0) < 0 && errno != ENOTSUP)
			return fail(u, -errno, "xattr %s: %m", x->name);
	}
	return 0;
}

/* Owner, then mode (chown clears setuid), then the time. */
static int attrs_set(struct unpack *u, int fd, const struct oci_tar_entry *e)
{
	struct timespec ts[2] = {{e->mtime_sec, e->mtime_nsec}, {e->mtime_sec, e->mtime_nsec}};
	if (fchown(fd, e->uid, e->gid) < 0)
		return fail(u, -errno, "chown: %m");
	if (fchmod(fd, e->mode) < 0)
		return fail(u, -errno, "chmod: %m");
	int r = xattrs_set(u, fd, e);
	if (r < 0)
		return r;
	if (e->type != OCI_TAR_DIR && futimens(fd, ts) < 0)
		return fail(u, -errno, "utimens: %m");
	return 0;
}

static int space_check(struct unpack *u, uint64_t size)
{
	struct statvfs sv;
	if (fstatvfs(u->dirfd, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize < size + u->lim->reserve_bytes)
		return fail(u, -ENOSPC, "%llu bytes would leave less than %llu MiB free",
		            (unsigned long long)size,
		            (unsigned long long)(u->lim->reserve_bytes >> 20));
	return 0;
}

static int write_file(struct unpack *u, struct oci_tar *t, int pfd, const char *name,
                      const struct oci_tar_entry *e)
{
	int r = space_check(u, e->size);
	if (r < 0)
		return r;
	_cleanup_close_ int fd =
	    openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(u, -errno, "create: %m");
	struct oci_reader *data = oci_tar_data(t);
	for (ssize_t n; (n = oci_read(data, u->buf, COPY_BUF, u->err)) != 0;) {
		if (n < 0)
			return (int)n;
		if (write_all(fd, u->buf, (size_t)n) < 0)
			return fail(u, -errno, "write: %m");
	}
	return attrs_set(u, fd, e);
}

static int make_dir(struct unpack *u, int pfd, const char *name, const char *path,
                    const struct oci_tar_entry *e)
{
	bool exists;
	int r = clear(u, pfd, name, true, &exists);
	if (r < 0)
		return r;
	if (!exists && mkdirat(pfd, name, 0700) < 0)
		return fail(u, -errno, "mkdir: %m");
	_cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(u, -errno, "open: %m");
	if ((r = attrs_set(u, fd, e)) < 0)
		return r;
	if (u->ntimes == u->cap_times) {
		size_t cap = u->cap_times ? 2 * u->cap_times : 64;
		void *p = reallocarray(u->times, cap, sizeof(*u->times));
		if (!p)
			return fail(u, -ENOMEM, "out of memory");
		u->times = p;
		u->cap_times = cap;
	}
	if (!(u->times[u->ntimes].path = strdup(path)))
		return fail(u, -ENOMEM, "out of memory");
	u->times[u->ntimes++].mtime = (struct timespec){e->mtime_sec, e->mtime_nsec};
	return 0;
}

static int make_link(struct unpack *u, int pfd, const char *name, const struct oci_tar_entry *e)
{
	char target[PATH_MAX], tdir[PATH_MAX];
	struct stat st;
	int tfd;
	if (normalize(e->linkname, target, sizeof(target)) < 0 || !target[0])
		return fail(u, -EINVAL, "hard link target \"%.200s\" leaves the layer",
		            e->linkname);
	const char *tname = split(target, tdir);
	/* walk() may replace the cached fd: hold the parent by its own fd. */
	_cleanup_close_ int parent = fcntl(pfd, F_DUPFD_CLOEXEC, 3);
	if (parent < 0)
		return fail(u, -errno, "dup: %m");
	int r = walk(u, tdir, false, &tfd);
	if (r < 0)
		return r;
	if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
		return fail(u, -ENOENT,
		            "hard link target \"%.200s\" is not an earlier file of this layer",
		            e->linkname);
	if (linkat(tfd, tname, parent, name, 0) < 0)
		return fail(u, -errno, "link: %m");
	return 0;
}

static int make_node(struct unpack *u, int pfd, const char *name, const struct oci_tar_entry *e)
{
	if (e->type == OCI_TAR_SYMLINK) {
		struct timespec ts[2] = {{e->mtime_sec, e->mtime_nsec},
		                         {e->mtime_sec, e->mtime_nsec}};
		if (symlinkat(e->linkname, pfd, name) < 0)
			return fail(u, -errno, "symlink: %m");
		if (fchownat(pfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return fail(u, -errno, "chown: %m");
		utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW);
		return 0;
	}
	mode_t type = e->type == OCI_TAR_CHAR    ? S_IFCHR
	              : e->type == OCI_TAR_BLOCK ? S_IFBLK
	                                         : S_IFIFO;
	if (mknodat(pfd, name, type | 0600, makedev(e->devmajor, e->devminor)) < 0)
		return fail(u, -errno, "mknod: %m");
	_cleanup_close_ int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct timespec ts[2] = {{e->mtime_sec, e->mtime_nsec}, {e->mtime_sec, e->mtime_nsec}};
	if (fd < 0 || fchownat(pfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(pfd, name, e->mode, 0) < 0 ||
	    utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(u, -errno, "device attributes: %m");
	return 0;
}

/* .wh.NAME and .wh..wh..opq in directory pfd. 1: it was one. */
static int whiteout(struct unpack *u, int pfd, const char *name)
{
	if (!(u->flags & OCI_UNPACK_WHITEOUTS) || !str_startswith(name, ".wh."))
		return 0;
	if (strcmp(name, ".wh..wh..opq") == 0) {
		if (fsetxattr(pfd, "trusted.overlay.opaque", "y", 1, 0) < 0)
			return fail(u, -errno, "marking the directory opaque: %m");
		return 1;
	}
	const char *hidden = name + 4;
	if (str_startswith(hidden, ".wh.") || !hidden[0])
		return 1; /* other AUFS markers (.wh..wh.plnk): nothing to make */
	bool is_dir;
	int r = clear(u, pfd, hidden, false, &is_dir);
	if (r < 0)
		return r;
	if (mknodat(pfd, hidden, S_IFCHR | 0000, makedev(0, 0)) < 0)
		return fail(u, -errno, "whiteout: %m");
	return 1;
}

static int entry(struct unpack *u, struct oci_tar *t, const struct oci_tar_entry *e)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int pfd, r;
	u->entry = e->name;
	/* Every entry's data counts, written or not: a whiteout (or anything
	 * skipped) with a huge size would otherwise be inflated for free. */
	if (u->stats.bytes + e->size > u->lim->max_bytes)
		return fail(u, -EFBIG, "the layer passes %llu bytes",
		            (unsigned long long)u->lim->max_bytes);
	u->stats.bytes += e->size;
	if (normalize(e->name, path, sizeof(path)) < 0)
		return fail(u, -EINVAL, "the name leaves the layer (\"..\") or is too long");
	if (!path[0]) { /* "./": the layer's root itself */
		if (e->type != OCI_TAR_DIR)
			return fail(u, -EINVAL, "names the layer's root but is not a directory");
		return attrs_set(u, u->dirfd, e);
	}
	const char *name = split(path, dir);
	if ((r = walk(u, dir, true, &pfd)) < 0)
		return r;
	if ((r = whiteout(u, pfd, name)) != 0)
		return r < 0 ? r : 0;
	if (e->type == OCI_TAR_DIR)
		return make_dir(u, pfd, name, path, e);
	bool is_dir;
	if ((r = clear(u, pfd, name, false, &is_dir)) < 0)
		return r;
	switch (e->type) {
	case OCI_TAR_FILE:
		return write_file(u, t, pfd, name, e);
	case OCI_TAR_HARDLINK:
		return make_link(u, pfd, name, e);
	default:
		return make_node(u, pfd, name, e);
	}
}

/* Directory times, last: deepest first would not matter, every entry is
 * in by now. Re-walked by name, as anything else. */
static void dir_times(struct unpack *u)
{
	for (size_t i = 0; i < u->ntimes; i++) {
		char dir[PATH_MAX];
		int pfd;
		struct timespec ts[2] = {u->times[i].mtime, u->times[i].mtime};
		const char *name = split(u->times[i].path, dir);
		u->entry = u->times[i].path;
		if (walk(u, dir, false, &pfd) == 0)
			utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW);
	}
}

int oci_layer_unpack(struct oci_reader *tar_stream, int dirfd, const char *label,
                     const struct oci_layer_limits *lim, unsigned flags,
                     struct oci_layer_stats *ret_stats, struct err *err)
{
	const struct oci_tar_limits tl = {.max_name = PATH_MAX - 1,
	                                  .max_pax = 1 << 20,
	                                  .max_entries = lim->max_entries,
	                                  .max_xattrs = 32,
	                                  .max_xattr_bytes = 64 * 1024};
	struct unpack u = {.dirfd = dirfd,
	                   .label = label,
	                   .lim = lim,
	                   .flags = flags,
	                   .err = err,
	                   .entry = "",
	                   .cached_fd = -1};
	struct oci_tar *t = NULL;
	const struct oci_tar_entry *e;
	int r = (u.buf = malloc(COPY_BUF))
	            ? oci_tar_new(tar_stream, &tl, label, &t, err)
	            : err_set_errno(err, -ENOMEM, "%s: out of memory", label);
	while (r >= 0 && (r = oci_tar_next(t, &e, err)) == 1) {
		u.stats.entries++;
		r = entry(&u, t, e);
	}
	if (r >= 0)
		dir_times(&u);
	if (u.cached_fd >= 0)
		close(u.cached_fd);
	for (size_t i = 0; i < u.ntimes; i++)
		free(u.times[i].path);
	free(u.times);
	free(u.buf);
	oci_tar_free(t);
	if (ret_stats)
		*ret_stats = u.stats;
	return r < 0 ? r : 0;
}
