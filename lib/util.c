/* util: strict string parsers and small file helpers. Everything that reads
 * outside input (command lines, flags, files) goes through these so that
 * "12abc" or "-1" is an error rather than a surprise. */
#include "lib.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <stdio.h>
#include <time.h>

char *str_trim(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

int str_hostport_split(const char *s, char *host, size_t size, uint16_t *ret_port,
                       bool *ret_bracketed)
{
	const char *h = s, *colon;
	size_t n;
	if (*s == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		h = s + 1;
		n = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strchr(s, ':');
		if (!colon || strchr(colon + 1, ':'))
			return -EINVAL;
		n = (size_t)(colon - s);
	}
	uint32_t port;
	if (!n || n >= size || str_to_u32(colon + 1, &port) < 0 || !port || port > 65535)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*ret_port = (uint16_t)port;
	if (ret_bracketed)
		*ret_bracketed = *s == '[';
	return 0;
}

bool str_startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int str_to_u64(const char *s, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int str_to_u32(const char *s, uint32_t *ret)
{
	uint64_t v;
	int r = str_to_u64(s, UINT32_MAX, &v);
	if (r < 0)
		return r;
	*ret = (uint32_t)v;
	return 0;
}

int str_to_duration_ms(const char *s, uint64_t max_ms, uint64_t *ret_ms)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"", 1000}};
	char num[32];

	if (!s)
		return -EINVAL;
	size_t len = strlen(s);
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		size_t sl = strlen(units[i].suffix);
		if (len <= sl || strcmp(s + len - sl, units[i].suffix) != 0)
			continue;
		if (len - sl >= sizeof(num))
			return -ERANGE;
		memcpy(num, s, len - sl);
		num[len - sl] = '\0';
		uint64_t v;
		int r = str_to_u64(num, max_ms / units[i].mult, &v);
		if (r < 0)
			return r;
		*ret_ms = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int str_to_size(const char *s, uint64_t bare_unit, uint64_t max, uint64_t *ret_bytes)
{
	static const char suffixes[] = "KMGT";
	char num[32];

	if (!s || bare_unit == 0)
		return -EINVAL;
	size_t len = strlen(s);
	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len + 1);
	uint64_t unit = bare_unit;
	const char *suffix = strchr(suffixes, num[len - 1] & ~0x20);
	if (num[len - 1] >= 'A' && suffix && *suffix) {
		unit = 1ull << (10 * (suffix - suffixes + 1));
		num[--len] = '\0';
	}
	uint64_t v;
	int r = str_to_u64(num, UINT64_MAX, &v);
	if (r < 0)
		return r == -ERANGE ? -ERANGE : -EINVAL;
	if (v > max / unit)
		return -ERANGE;
	*ret_bytes = v * unit;
	return 0;
}

int str_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (size == 0)
		return -ENAMETOOLONG;
	if (n >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

bool str_is_hostname(const char *s)
{
	size_t len = strlen(s), label = 0;

	if (len == 0 || len > 64)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && !(c == '-' && label > 0))
			return false;
		if (++label > 63)
			return false;
	}
	return s[len - 1] != '.' && s[len - 1] != '-';
}

int fd_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	int want = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	/* As asked already (a pipe a re-exec hands over): one call, not two. */
	return want == fl || fcntl(fd, F_SETFL, want) == 0 ? 0 : -errno;
}

unsigned long fd_limit_raise(unsigned long want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

int fd_set_cloexec(int fd, bool on)
{
	/* FD_CLOEXEC is the only fd flag there is: one call, not a read and a
	 * write (a re-exec sets it on thousands of fds). */
	return fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0) < 0 ? -errno : 0;
}

int file_read_small(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	if (fd < 0)
		return -errno;
	/* Grow as the file does: max is a bound, not a size to allocate. A
	 * megabyte allocated per read would raise glibc's mmap threshold and
	 * leave PID 1 with a heap it never gives back. */
	for (;;) {
		if (len == cap) {
			if (cap >= max)
				return -EFBIG;
			size_t ncap = cap ? cap * 2 : 4096;
			if (ncap > max)
				ncap = max;
			char *p = realloc(buf, ncap + 1);
			if (!p)
				return -ENOMEM;
			buf = p;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int file_write_str(const char *path, const char *s)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	size_t len = strlen(s);
	ssize_t n = write(fd, s, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int file_create_str(const char *path, const char *s, mode_t mode)
{
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	return write_all(fd, s, strlen(s));
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_read_regular(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
	char fdpath[64];
	struct stat st;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	return file_read_small(fdpath, max, ret_buf, ret_len);
}

bool path_is_mountpoint(const char *path)
{
	char parent[PATH_MAX];
	struct stat a, b;
	if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
		return false;
	if (stat(path, &a) < 0 || stat(parent, &b) < 0)
		return false;
	return a.st_dev != b.st_dev;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	if (str_copy(buf, sizeof(buf), path) < 0)
		return -ENAMETOOLONG;
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

int dir_open_beneath(int dirfd, const char *path, mode_t create_mode, int *ret_fd)
{
	char part[256];
	int fd = dirfd, depth = 0;
	for (const char *p = path; *p; depth++) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n >= sizeof(part) || depth > 256 || (n == 2 && p[0] == '.' && p[1] == '.')) {
			if (fd != dirfd)
				close(fd);
			return n >= sizeof(part) ? -ENAMETOOLONG : -EINVAL;
		}
		memcpy(part, p, n);
		part[n] = 0;
		p += n;
		int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create_mode) {
			if (mkdirat(fd, part, create_mode) < 0 && errno != EEXIST)
				next = -1;
			else
				next = openat(fd, part,
				              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		int e = errno;
		if (fd != dirfd)
			close(fd);
		if (next < 0)
			return e == ENOTDIR ? -ELOOP : -e;
		fd = next;
	}
	*ret_fd = fd == dirfd ? fcntl(dirfd, F_DUPFD_CLOEXEC, 3) : fd;
	return *ret_fd < 0 ? -errno : 0;
}

/* rm -rf of name under dirfd, never following a symlink; bounded depth. */
int dir_remove_tree(int parent, const char *name, unsigned depth)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR || depth > 4096)
		return -errno;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	int r = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int q = dir_remove_tree(dirfd(d), e->d_name, depth + 1);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

uint64_t now_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool name_is_valid(const char *s)
{
	size_t n = 0;
	if (!s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; s[n]; n++) {
		char c = s[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
		if (!ok || n >= NAME_MAX_LEN)
			return false;
	}
	return n > 0;
}

/* ---- cgroup2 ---------------------------------------------------------------- */

static void unescape_octal(char *s)
{
	char *w = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		} else
			*w++ = *p;
	}
	*w = '\0';
}

/* The first cgroup2 mount, and the cgroup its root shows (relative to our
 * cgroup namespace) in mount_root. */
int cgroup2_find_mount(char *buf, size_t size, char *mount_root, size_t root_size)
{
	_cleanup_free_ char *info = NULL;
	int r = file_read_small("/proc/self/mountinfo", 1 << 20, &info, NULL);
	if (r < 0)
		return r;
	for (char *save = NULL, *line = strtok_r(info, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line, " - ");
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		/* Its 4th and 5th fields, cut in place: two PATH_MAX buffers and
		 * sscanf made this the deepest frame of every kin's start, and
		 * each page of a frame stays dirty for good. */
		char *f[5], *fsave = NULL;
		int n = 0;
		for (char *t = strtok_r(line, " ", &fsave); t && n < 5;
		     t = strtok_r(NULL, " ", &fsave))
			f[n++] = t;
		if (n < 5)
			continue;
		char *root = f[3], *point = f[4];
		unescape_octal(root);
		unescape_octal(point);
		if (str_copy(buf, size, point) < 0 || str_copy(mount_root, root_size, root) < 0)
			return -ENAMETOOLONG;
		return 0;
	}
	return -ENOENT;
}

int cgroup2_enable_along(const char *mount, const char *rel)
{
	char dir[PATH_MAX], ctl[PATH_MAX + 32];
	if (snprintf(dir, sizeof(dir), "%s/%s", mount, rel) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	/* From the mount down to rel's parent: each lets its children have
	 * what it has. */
	size_t base = strlen(mount);
	for (char *slash = dir + base + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		_cleanup_free_ char *have = NULL;
		snprintf(ctl, sizeof(ctl), "%s/cgroup.controllers", dir);
		if (file_read_small(ctl, 4096, &have, NULL) == 0 && have[0]) {
			char want[1024] = "";
			size_t n = 0;
			for (char *save = NULL, *c = strtok_r(have, " \n", &save); c;
			     c = strtok_r(NULL, " \n", &save))
				n += (size_t)snprintf(want + n, sizeof(want) - n, "%s+%s",
				                      n ? " " : "", c);
			snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", dir);
			file_write_str(ctl, want); /* best effort: a dir with processes refuses */
		}
		*slash = '/';
	}
	return 0;
}

void inotify_drain(int fd, void (*fn)(int wd, uint32_t mask, void *data), void *data)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			p += sizeof(*e) + e->len;
			fn(e->wd, e->mask, data);
		}
	}
}

/* mount(8)'s flag options: the one table (fstab lines, containerd's rootfs
 * mounts); every other option is the filesystem's data. */
static const struct {
	const char *name;
	unsigned long set, clear;
} mount_flags[] = {
    {"ro", MS_RDONLY, 0},
    {"rw", 0, MS_RDONLY},
    {"nosuid", MS_NOSUID, 0},
    {"suid", 0, MS_NOSUID},
    {"nodev", MS_NODEV, 0},
    {"dev", 0, MS_NODEV},
    {"noexec", MS_NOEXEC, 0},
    {"exec", 0, MS_NOEXEC},
    {"sync", MS_SYNCHRONOUS, 0},
    {"async", 0, MS_SYNCHRONOUS},
    {"dirsync", MS_DIRSYNC, 0},
    {"remount", MS_REMOUNT, 0},
    {"mand", MS_MANDLOCK, 0},
    {"nomand", 0, MS_MANDLOCK},
    {"noatime", MS_NOATIME, 0},
    {"atime", 0, MS_NOATIME},
    {"nodiratime", MS_NODIRATIME, 0},
    {"diratime", 0, MS_NODIRATIME},
    {"relatime", MS_RELATIME, 0},
    {"norelatime", 0, MS_RELATIME},
    {"strictatime", MS_STRICTATIME, 0},
    {"nostrictatime", 0, MS_STRICTATIME},
    {"bind", MS_BIND, 0},
    {"rbind", MS_BIND | MS_REC, 0},
    {"defaults", 0, 0},
};

bool mount_option_flag(const char *name, unsigned long *ret_set, unsigned long *ret_clear)
{
	for (size_t i = 0; i < ARRAY_SIZE(mount_flags); i++)
		if (strcmp(name, mount_flags[i].name) == 0) {
			*ret_set = mount_flags[i].set;
			*ret_clear = mount_flags[i].clear;
			return true;
		}
	return false;
}

static void file_id_of(const struct stat *st, struct file_id *ret)
{
	*ret = (struct file_id){.dev = (uint64_t)st->st_dev,
	                        .ino = (uint64_t)st->st_ino,
	                        .size = (uint64_t)st->st_size,
	                        .mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
	                                    (uint64_t)st->st_mtim.tv_nsec,
	                        .ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000ull +
	                                    (uint64_t)st->st_ctim.tv_nsec};
}

/* The bytes of src (size of them) into mfd, from its start. */
static int copy_fill(int src, int mfd, off_t size)
{
	for (off_t off = 0; off < size;) {
		ssize_t n = sendfile(mfd, src, &off, (size_t)(size - off));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

static int seal(int mfd)
{
	return fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0
	           ? -errno
	           : 0;
}

/* The source open and its identity, an empty memfd for the copy. */
static int copy_open(const char *path, const char *name, int *ret_src, int *ret_mfd,
                     struct stat *ret_st)
{
	_cleanup_close_ int src = open(path, O_RDONLY | O_CLOEXEC);
	if (src < 0 || fstat(src, ret_st) < 0)
		return -errno;
	int mfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	*ret_src = TAKE_FD(src);
	*ret_mfd = mfd;
	return 0;
}

static int sealed_copy(const char *path, const char *name, int *ret_fd, struct file_id *ret_id)
{
	struct stat st;
	int src, mfd;
	int r = copy_open(path, name, &src, &mfd, &st);
	if (r < 0)
		return r;
	r = copy_fill(src, mfd, st.st_size);
	close(src);
	if (r == 0)
		r = seal(mfd);
	if (r < 0) {
		close(mfd);
		return r;
	}
	if (ret_id)
		file_id_of(&st, ret_id);
	*ret_fd = mfd;
	return 0;
}

int file_sealed_copy(const char *path, const char *name, int *ret_fd)
{
	return sealed_copy(path, name, ret_fd, NULL);
}

static struct {
	int fd; /* fd + 1: 0 is none */
	struct file_id id;
} self;

int self_copy(int *ret_fd, struct file_id *ret_id)
{
	if (!self.fd) {
		int fd, r = sealed_copy("/proc/self/exe", "kin", &fd, &self.id);
		if (r < 0)
			return r;
		self.fd = fd + 1;
	}
	*ret_fd = self.fd - 1;
	if (ret_id)
		*ret_id = self.id;
	return 0;
}

bool self_copy_have(void)
{
	return self.fd != 0;
}

void self_copy_drop(void)
{
	if (self.fd)
		close(self.fd - 1);
	self.fd = 0;
}

int self_copy_begin(struct self_copy_job *j)
{
	struct stat st;
	*j = (struct self_copy_job){.src = -1, .memfd = -1};
	if (self.fd)
		return 0;
	int r = copy_open("/proc/self/exe", "kin", &j->src, &j->memfd, &st);
	if (r < 0)
		return r;
	file_id_of(&st, &j->id);
	return 1;
}

int self_copy_fill(const struct self_copy_job *j)
{
	return copy_fill(j->src, j->memfd, (off_t)j->id.size);
}

int self_copy_end(struct self_copy_job *j)
{
	struct stat st;
	int r = 0;
	if (j->memfd < 0)
		return 0;
	if (fstat(j->memfd, &st) < 0)
		r = -errno;
	else if ((uint64_t)st.st_size != j->id.size)
		r = -EIO; /* the child did not finish */
	else if (!self.fd)
		r = seal(j->memfd);
	if (r == 0 && !self.fd) {
		self.fd = j->memfd + 1;
		self.id = j->id;
		j->memfd = -1;
	}
	if (j->memfd >= 0)
		close(j->memfd);
	if (j->src >= 0)
		close(j->src);
	*j = (struct self_copy_job){.src = -1, .memfd = -1};
	return r;
}

bool self_copy_take(int fd, const struct file_id *id)
{
	struct stat st;
	struct file_id now;
	if (self.fd || fd < 0 || stat("/proc/self/exe", &st) < 0)
		return false;
	file_id_of(&st, &now);
	if (memcmp(&now, id, sizeof(now)) != 0 || fd_set_cloexec(fd, true) < 0)
		return false;
	self.fd = fd + 1;
	self.id = now;
	return true;
}

bool fd_is_pty_master(int fd)
{
	unsigned n;
	return ioctl(fd, TIOCGPTN, &n) == 0;
}

uint64_t fd_ino(int fd)
{
	struct stat st;
	unsigned n;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	if (S_ISCHR(st.st_mode) && ioctl(fd, TIOCGPTN, &n) == 0)
		return FD_INO_PTY | n;
	return (uint64_t)st.st_ino;
}

int sock_unix_connect(const char *path, int flags)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (str_copy(sa.sun_path, sizeof(sa.sun_path), path) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int sock_opt(int fd, int opt)
{
	int v = 0;
	socklen_t len = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, opt, &v, &len) < 0 ? -errno : v;
}

int sock_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)] = {0};
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n > SOCK_FDS_MAX)
		return -EINVAL;
	if (n) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	return sendmsg(sock, &mh, flags | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

ssize_t sock_recv_fds(int sock, void *buf, size_t size, int *fds, size_t max, size_t *ret_n,
                      int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int) * SOCK_FDS_MAX)];
	struct iovec iov = {.iov_base = buf, .iov_len = size};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	*ret_n = 0;
	ssize_t n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*ret_n < max)
				fds[(*ret_n)++] = fd;
			else
				close(fd);
		}
	}
	return n;
}
