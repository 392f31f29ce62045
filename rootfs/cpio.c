/* cpio: the tree as an initramfs (cpio "newc", the format the kernel
 * unpacks), written by kin itself so that the bytes depend only on the
 * tree: sorted entries, inode numbers in that order, uid/gid 0, one mtime,
 * no device numbers of the build host. Also a small reader (tests, and a
 * look at an image's kernel-release) and the staging of the tree into a
 * directory for mke2fs -d. */
#include "rootfs/rootfs-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/time.h>

#define CPIO_MAGIC   "070701"
#define CPIO_HDR_LEN 110
#define CPIO_TRAILER "TRAILER!!!"
#define OUTBUF_SIZE  (64 * 1024)

struct outbuf {
	int fd;
	size_t n;
	uint64_t total;
	int err;
	uint8_t buf[OUTBUF_SIZE];
};

static void out_flush(struct outbuf *o)
{
	if (o->err == 0 && o->n)
		o->err = write_all(o->fd, o->buf, o->n);
	o->n = 0;
}

static void out_put(struct outbuf *o, const void *p, size_t len)
{
	const uint8_t *s = p;
	o->total += len;
	while (len > 0) {
		size_t k = OUTBUF_SIZE - o->n < len ? OUTBUF_SIZE - o->n : len;
		memcpy(o->buf + o->n, s, k);
		o->n += k;
		s += k;
		len -= k;
		if (o->n == OUTBUF_SIZE)
			out_flush(o);
	}
}

static void out_pad4(struct outbuf *o)
{
	static const uint8_t zero[4];
	out_put(o, zero, (4 - (o->total & 3)) & 3);
}

static void cpio_header(struct outbuf *o, uint32_t ino, uint32_t mode, uint32_t nlink,
                        uint64_t mtime, uint64_t size, dev_t rdev, const char *name)
{
	char hdr[CPIO_HDR_LEN + 1];
	size_t namesize = strlen(name) + 1;
	snprintf(hdr, sizeof(hdr), "%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
	         CPIO_MAGIC, ino, mode, 0u, 0u, nlink, (uint32_t)mtime, (uint32_t)size, 0u, 0u,
	         major(rdev), minor(rdev), (uint32_t)namesize, 0u);
	out_put(o, hdr, CPIO_HDR_LEN);
	out_put(o, name, namesize);
	out_pad4(o);
}

/* Streams a host file, checking it still has the size the tree recorded. */
static int cpio_file_body(struct outbuf *o, const struct rootfs_entry *e, struct err *d)
{
	if (e->data) {
		out_put(o, e->data, e->size);
		return 0;
	}
	_cleanup_close_ int fd = open(e->host, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int r = -errno;
		err_set_errno(d, r, "%s: %s", e->host, strerror(-r));
		return r;
	}
	uint64_t left = e->size;
	uint8_t chunk[16384];
	while (left > 0) {
		ssize_t n = read(fd, chunk, left < sizeof(chunk) ? left : sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;
			err_set_errno(d, r, "%s: %s", e->host,
			              n < 0 ? strerror(-r)
			                    : "file shrank while the image was built");
			return r;
		}
		out_put(o, chunk, (size_t)n);
		left -= (uint64_t)n;
	}
	char extra;
	if (read(fd, &extra, 1) == 1) {
		return err_set_errno(d, -EIO, "%s: file grew while the image was built", e->host);
	}
	return 0;
}

int rootfs_cpio_write(const struct rootfs_tree *t, int fd, uint64_t mtime, struct err *d)
{
	_cleanup_free_ const struct rootfs_entry **v = NULL;
	_cleanup_free_ struct outbuf *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	int r = rootfs_tree_sorted(t, &v);
	if (r < 0)
		return r;
	if (mtime > UINT32_MAX)
		return -ERANGE;
	o->fd = fd;
	for (size_t i = 0; i < t->n; i++) {
		const struct rootfs_entry *e = v[i];
		if (e->size > UINT32_MAX) {
			return err_set_errno(d, -EFBIG, "/%s: larger than cpio newc's 4 GiB",
			                     e->path);
		}
		bool has_body = e->kind == ROOTFS_FILE || e->kind == ROOTFS_SYMLINK;
		cpio_header(o, (uint32_t)(i + 1), rootfs_entry_mode(e),
		            e->kind == ROOTFS_DIR ? 2 : 1, mtime, has_body ? e->size : 0, e->rdev,
		            e->path);
		if (e->kind == ROOTFS_FILE) {
			r = cpio_file_body(o, e, d);
			if (r < 0)
				return r;
		} else if (e->kind == ROOTFS_SYMLINK) {
			out_put(o, e->data, e->size);
		}
		out_pad4(o);
	}
	cpio_header(o, 0, 0, 1, 0, 0, 0, CPIO_TRAILER);
	out_flush(o);
	if (o->err < 0)
		err_set_errno(d, o->err, "writing the archive: %s", strerror(-o->err));
	return o->err;
}

static int hex8(const char *p, uint32_t *ret)
{
	uint32_t v = 0;
	for (int i = 0; i < 8; i++) {
		char c = p[i];
		unsigned dgt;
		if (c >= '0' && c <= '9')
			dgt = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			dgt = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			dgt = (unsigned)(c - 'A' + 10);
		else
			return -EBADMSG;
		v = v << 4 | dgt;
	}
	*ret = v;
	return 0;
}

static int read_exact(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EBADMSG;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int skip_bytes(int fd, uint64_t n)
{
	return lseek(fd, (off_t)n, SEEK_CUR) < 0 ? -errno : 0;
}

int rootfs_cpio_read_file(const char *archive, const char *name, size_t max, char **ret_buf,
                          size_t *ret_len)
{
	_cleanup_close_ int fd = open(archive, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char want[ROOTFS_PATH_MAX];
	int r;

	if (fd < 0)
		return -errno;
	r = rootfs_path_normalize(name, want, sizeof(want));
	if (r < 0)
		return r;
	for (;;) {
		char hdr[CPIO_HDR_LEN];
		uint32_t f[13];
		r = read_exact(fd, hdr, sizeof(hdr));
		if (r < 0)
			return r;
		if (memcmp(hdr, CPIO_MAGIC, 6) != 0)
			return -EBADMSG;
		for (int i = 0; i < 13; i++)
			if (hex8(hdr + 6 + 8 * i, &f[i]) < 0)
				return -EBADMSG;
		uint32_t mode = f[1], size = f[6], namesize = f[11];
		if (namesize == 0 || namesize > ROOTFS_PATH_MAX)
			return -EBADMSG;
		char path[ROOTFS_PATH_MAX + 4];
		size_t padded = ((CPIO_HDR_LEN + namesize + 3) & ~3u) - CPIO_HDR_LEN;
		r = read_exact(fd, path, padded);
		if (r < 0)
			return r;
		if (path[namesize - 1] != '\0')
			return -EBADMSG;
		if (strcmp(path, CPIO_TRAILER) == 0)
			return -ENOENT;
		char norm[ROOTFS_PATH_MAX];
		if (rootfs_path_normalize(path, norm, sizeof(norm)) == 0 &&
		    strcmp(norm, want) == 0 && S_ISREG(mode)) {
			if (size > max)
				return -EFBIG;
			_cleanup_free_ char *buf = malloc((size_t)size + 1);
			if (!buf)
				return -ENOMEM;
			r = read_exact(fd, buf, size);
			if (r < 0)
				return r;
			buf[size] = '\0';
			if (ret_len)
				*ret_len = size;
			*ret_buf = TAKE_PTR(buf);
			return 0;
		}
		r = skip_bytes(fd, ((uint64_t)size + 3) & ~3ull);
		if (r < 0)
			return r;
	}
}

static int stage_copy(const struct rootfs_entry *e, int dirfd, const char *name, struct err *d)
{
	_cleanup_close_ int out =
	    openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	if (e->data)
		return write_all(out, e->data, e->size);
	_cleanup_close_ int in = open(e->host, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0) {
		int r = -errno;
		err_set_errno(d, r, "%s: %s", e->host, strerror(-r));
		return r;
	}
	uint8_t chunk[65536];
	for (;;) {
		ssize_t n = read(in, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		int r = write_all(out, chunk, (size_t)n);
		if (r < 0)
			return r;
	}
}

/* The entry's parent directory, opened without following a symlink: the
 * root staged into may be a Debian root whose links (/var/run -> /run)
 * must not lead out of it. *ret_name points into path. */
static int stage_parent(int rootfd, const char *path, int *ret_fd, const char **ret_name)
{
	char parent[ROOTFS_PATH_MAX];
	const char *slash = strrchr(path, '/');
	*ret_name = slash ? slash + 1 : path;
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 0, path);
	return dir_open_beneath(rootfd, parent, 0, ret_fd);
}

/* One entry. An existing directory, or the same symlink, is kept as it
 * is (1); anything else there is replaced. */
static int stage_one(const struct rootfs_entry *e, int dirfd, const char *name, struct err *d)
{
	struct stat st;
	bool exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	int r;
	if (exists && e->kind == ROOTFS_DIR && S_ISDIR(st.st_mode))
		return 1;
	if (exists && e->kind == ROOTFS_SYMLINK && S_ISLNK(st.st_mode)) {
		char target[ROOTFS_PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (n >= 0 && (target[n] = '\0', strcmp(target, e->data) == 0))
			return 1;
	}
	if (exists && unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return -errno;
	switch (e->kind) {
	case ROOTFS_DIR:
		r = mkdirat(dirfd, name, 0700) < 0 ? -errno : 0;
		break;
	case ROOTFS_FILE:
		r = stage_copy(e, dirfd, name, d);
		break;
	case ROOTFS_SYMLINK:
		r = symlinkat(e->data, dirfd, name) < 0 ? -errno : 0;
		break;
	default:
		r = mknodat(dirfd, name, rootfs_entry_mode(e), e->rdev) < 0 ? -errno : 0;
	}
	if (r == 0 && e->kind != ROOTFS_SYMLINK && fchmodat(dirfd, name, e->perm, 0) < 0)
		r = -errno;
	if (r == 0 && fchownat(dirfd, name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0 && errno != EPERM)
		r = -errno;
	return r;
}

int rootfs_tree_stage(const struct rootfs_tree *t, const char *dir, uint64_t mtime, struct err *d)
{
	_cleanup_free_ const struct rootfs_entry **v = NULL;
	_cleanup_close_ int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct timespec ts[2] = {{(time_t)mtime, 0}, {(time_t)mtime, 0}};
	if (rootfd < 0)
		return err_set_errno(d, -errno, "%s: %s", dir, strerror(errno));
	int r = rootfs_tree_sorted(t, &v);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t->n; i++) {
		_cleanup_close_ int pfd = -1;
		const char *name;
		r = stage_parent(rootfd, v[i]->path, &pfd, &name);
		if (r >= 0)
			r = stage_one(v[i], pfd, name, d);
		if (r < 0) {
			if (!d || !d->msg[0])
				err_set_errno(d, r, "staging /%s: %s", v[i]->path,
				              r == -ELOOP ? "a symlink on the way" : strerror(-r));
			return r;
		}
	}
	/* Times last, children before parents would be undone otherwise. */
	for (size_t i = t->n; i-- > 0;) {
		_cleanup_close_ int pfd = -1;
		const char *name;
		r = stage_parent(rootfd, v[i]->path, &pfd, &name);
		if (r < 0 || utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			return r < 0 ? r : -errno;
	}
	return futimens(rootfd, ts) < 0 ? -errno : 0;
}
