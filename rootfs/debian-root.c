/* debian-root: a Debian root made into kin's: kin as /sbin/init with
 * systemctl a link to it, fstab naming the disk by its label, a hostname,
 * an empty machine-id (kin makes one at first boot), root's password
 * locked, and what the build leaves that is not the image's removed: the
 * policy-rc.d, the host's resolv.conf, apt's lists and caches, the build's
 * logs and *-old files. Then times clamped to SOURCE_DATE_EPOCH and the
 * ext4 image written. Every path written is opened beneath the root with no
 * symlink followed: the root's own links (/var/run -> /run) never lead out. */
#include "rootfs/debian-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>

#define COPY_TIMEOUT_MS (10 * 60 * 1000ull)
#define SELF_MAX        (256u << 20)
#define SHADOW_MAX      (1u << 20)
#define KEYS_MAX        (256u << 10)

static int open_parent(int rootfd, const char *path, int *ret_fd, const char **ret_name)
{
	char parent[ROOTFS_PATH_MAX];
	const char *slash = strrchr(path, '/');
	*ret_name = slash ? slash + 1 : path;
	if (snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 0, path) >=
	    (int)sizeof(parent))
		return -ENAMETOOLONG;
	return dir_open_beneath(rootfd, parent, 0755, ret_fd);
}

int rootfs_debian_put(int rootfd, const char *path, const void *data, size_t len, mode_t mode,
                      struct err *d)
{
	_cleanup_close_ int dir = -1, fd = -1;
	const char *name;
	int r = open_parent(rootfd, path, &dir, &name);
	if (r == 0 && unlinkat(dir, name, 0) < 0 && errno != ENOENT)
		r = -errno;
	if (r == 0) {
		fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		r = fd < 0 ? -errno : 0;
	}
	if (r == 0)
		r = write_all(fd, data, len);
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r < 0)
		return err_set_errno(d, r, "image file /%s: %s", path,
		                     r == -ELOOP ? "a symlink on the way" : strerror(-r));
	return 0;
}

static int put_str(int rootfd, const char *path, const char *s, mode_t mode, struct err *d)
{
	return rootfs_debian_put(rootfd, path, s, strlen(s), mode, d);
}

static int put_link(int rootfd, const char *path, const char *target, struct err *d)
{
	_cleanup_close_ int dir = -1;
	const char *name;
	int r = open_parent(rootfd, path, &dir, &name);
	if (r == 0 && unlinkat(dir, name, 0) < 0 && errno != ENOENT)
		r = -errno;
	if (r == 0 && symlinkat(target, dir, name) < 0)
		r = -errno;
	if (r < 0)
		return err_set_errno(d, r, "image link /%s: %s", path, strerror(-r));
	return 0;
}

/* Removes path (a file, or a tree when it is a directory); gone is fine. */
static void drop(int rootfd, const char *path)
{
	_cleanup_close_ int dir = -1;
	const char *name;
	struct stat st;
	char parent[ROOTFS_PATH_MAX];
	const char *slash = strrchr(path, '/');
	name = slash ? slash + 1 : path;
	snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 0, path);
	if (dir_open_beneath(rootfd, parent, 0, &dir) < 0 ||
	    fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dir, name, 0);
		return;
	}
	char full[ROOTFS_PATH_MAX + 32];
	snprintf(full, sizeof(full), "/proc/self/fd/%d/%s", dir, name);
	dir_remove_tree(AT_FDCWD, full, 0);
}

/* Every entry of dir (beneath the root) whose name ends in suffix ("" for
 * all) removed, dir kept. */
static void drop_in(int rootfd, const char *dir, const char *suffix, const char *keep)
{
	_cleanup_close_ int fd = -1;
	if (dir_open_beneath(rootfd, dir, 0, &fd) < 0)
		return;
	DIR *dp = fdopendir(fd);
	if (!dp)
		return;
	fd = -1;
	struct dirent *de;
	size_t sl = strlen(suffix);
	while ((de = readdir(dp))) {
		size_t n = strlen(de->d_name);
		char path[ROOTFS_PATH_MAX];
		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		if (n < sl || strcmp(de->d_name + n - sl, suffix) != 0 ||
		    (keep && !strcmp(de->d_name, keep)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		drop(rootfd, path);
	}
	closedir(dp);
}

/* The build's own logs go; other logs a package made (wtmp, btmp,
 * lastlog, a daemon's file with its owner and mode) stay, emptied. */
static void logs_clean(int dirfd, int depth)
{
	static const char *const build_logs[] = {"dpkg.log",    "alternatives.log", "bootstrap.log",
	                                         "history.log", "term.log",         "eipp.log.xz"};
	DIR *dp = fdopendir(dirfd);
	if (!dp) {
		close(dirfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dp))) {
		struct stat st;
		if (de->d_name[0] == '.' ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4) {
			int sub = openat(dirfd, de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				logs_clean(sub, depth + 1);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		bool ours = false;
		for (size_t i = 0; i < ARRAY_SIZE(build_logs); i++)
			ours |= strcmp(de->d_name, build_logs[i]) == 0;
		if (ours) {
			unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		int fd = openat(dirfd, de->d_name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0) {
			(void)!ftruncate(fd, 0);
			close(fd);
		}
	}
	closedir(dp);
}

/* root's password field to "*": no password opens it. A key in
 * /root/.ssh/authorized_keys is the way in, if one was given. */
static int root_lock(int rootfd, struct err *d)
{
	_cleanup_close_ int dir = -1, fd = -1;
	_cleanup_free_ char *text = NULL, *out = NULL;
	struct stat st;
	int r = dir_open_beneath(rootfd, "etc", 0, &dir);
	if (r == 0) {
		fd = openat(dir, "shadow", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		r = fd < 0 || fstat(fd, &st) < 0 ? -errno : 0;
	}
	if (r == 0 && (st.st_size < 0 || (size_t)st.st_size > SHADOW_MAX))
		r = -EFBIG;
	if (r < 0)
		return err_set_errno(d, r, "image file /etc/shadow: %s", strerror(-r));
	size_t len = (size_t)st.st_size, o = 0;
	text = calloc(1, len + 1);
	out = calloc(1, len + 16);
	if (!text || !out)
		return -ENOMEM;
	if (pread(fd, text, len, 0) != (ssize_t)len)
		return err_set_errno(d, -EIO, "image file /etc/shadow: short read");
	bool found = false;
	for (char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		if (str_startswith(l, "root:") && !found) {
			char *pw_end = memchr(l + 5, ':', n - 5);
			if (!pw_end)
				break;
			o += (size_t)snprintf(out + o, 8, "root:*");
			memcpy(out + o, pw_end, (size_t)(l + n - pw_end));
			o += (size_t)(l + n - pw_end);
			found = true;
		} else {
			memcpy(out + o, l, n);
			o += n;
		}
		l += n;
		if (*l == '\n')
			out[o++] = *l++;
	}
	if (!found)
		return err_set_errno(d, -ENOENT, "image file /etc/shadow: no root entry to lock");
	r = rootfs_debian_put(rootfd, "etc/shadow", out, o, st.st_mode & 07777, d);
	if (r == 0 && fchownat(dir, "shadow", st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		r = err_set_errno(d, -errno, "image file /etc/shadow: %s", strerror(errno));
	return r;
}

static int root_key(int rootfd, const char *key, struct err *d)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = file_read_regular(key, KEYS_MAX, &text, &len);
	if (r < 0)
		return err_set_errno(d, r, "--root-authorized-key %s: %s", key, strerror(-r));
	_cleanup_close_ int dir = -1;
	r = dir_open_beneath(rootfd, "root/.ssh", 0700, &dir);
	if (r == 0 && fchmod(dir, 0700) < 0)
		r = -errno;
	if (r < 0)
		return err_set_errno(d, r, "image directory /root/.ssh: %s", strerror(-r));
	return rootfs_debian_put(rootfd, "root/.ssh/authorized_keys", text, len, 0600, d);
}

/* The init a package put in: /usr/sbin/init from --packages
 * (systemd-sysv, sysvinit-core, runit-init). */
static bool distribution_init(int rootfd)
{
	struct stat st;
	const char *name;
	int dir;
	if (open_parent(rootfd, "usr/sbin/init", &dir, &name) < 0)
		return false;
	bool have = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dir);
	return have;
}

/* kin itself, as /sbin/init (/usr/sbin/init in the merged /usr) — unless
 * the package list chose the distribution's own init (a systemd-sysv
 * disk to compare kin with): then kin is /usr/sbin/kin, for init= on the
 * kernel command line, and systemctl stays the package's. */
static int kin_install(int rootfd, const char *self, struct err *d)
{
	struct rootfs_elf_info info;
	_cleanup_free_ char *bin = NULL;
	size_t len;
	int r = rootfs_elf_read(self, &info);
	if (r == 0 && (info.dynamic || info.interp[0]))
		return err_set_errno(d, -ENOEXEC,
		                     "kin itself (%s) is dynamically linked: give a static one "
		                     "(--self or $KIN_IMAGE_SELF)",
		                     self);
	if (r == 0)
		r = file_read_small(self, SELF_MAX, &bin, &len);
	if (r < 0)
		return err_set_errno(d, r, "kin itself (%s): %s", self, strerror(-r));
	if (distribution_init(rootfd)) {
		log_info("image: the packages put in their own /sbin/init; kin is /usr/sbin/kin "
		         "(boot it with init=/usr/sbin/kin)");
		return rootfs_debian_put(rootfd, "usr/sbin/kin", bin, len, 0755, d);
	}
	r = rootfs_debian_put(rootfd, "usr/sbin/init", bin, len, 0755, d);
	/* kin answers as systemctl when called by that name. */
	return r < 0 ? r : put_link(rootfd, "usr/bin/systemctl", "/usr/sbin/init", d);
}

static int configure(const struct rootfs_build_opts *o, int rootfd, struct err *d)
{
	const char *host = o->hostname ? o->hostname : "kin";
	const char *label = o->label ? o->label : "kin-root";
	char fstab[256], hosts[512], hostname[80];
	snprintf(fstab, sizeof(fstab),
	         "# kin image build: the root disk, by its label.\nLABEL=%s / ext4 defaults 0 1\n",
	         label);
	snprintf(hostname, sizeof(hostname), "%s\n", host);
	snprintf(hosts, sizeof(hosts),
	         "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost "
	         "ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n",
	         host);
	int r = kin_install(rootfd, o->self ? o->self : "/proc/self/exe", d);
	if (r == 0)
		r = put_str(rootfd, "etc/fstab", fstab, 0644, d);
	if (r == 0)
		r = put_str(rootfd, "etc/hostname", hostname, 0644, d);
	if (r == 0)
		r = put_str(rootfd, "etc/hosts", hosts, 0644, d);
	if (r == 0)
		r = put_str(rootfd, "etc/machine-id", "", 0444, d);
	if (r == 0)
		r = root_lock(rootfd, d);
	if (r == 0 && o->root_key)
		r = root_key(rootfd, o->root_key, d);
	return r;
}

/* What the build leaves that is not the image's, or differs each build. */
static void leftovers_remove(int rootfd)
{
	static const char *const files[] = {
	    "usr/sbin/policy-rc.d",          "etc/resolv.conf",
	    "var/cache/ldconfig/aux-cache",  "var/cache/apt/pkgcache.bin",
	    "var/cache/apt/srcpkgcache.bin",
	};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		drop(rootfd, files[i]);
	drop_in(rootfd, "var/lib/apt/lists", "", "partial");
	drop_in(rootfd, "var/lib/apt/lists/partial", "", NULL);
	drop_in(rootfd, "var/cache/apt/archives", ".deb", NULL);
	drop_in(rootfd, "var/lib/dpkg", "-old", NULL);
	drop_in(rootfd, "var/cache/debconf", "-old", NULL);
	int logs;
	if (dir_open_beneath(rootfd, "var/log", 0, &logs) == 0)
		logs_clean(logs, 0);
}

/* Clamps every time in the root to SOURCE_DATE_EPOCH (default
 * ROOTFS_DEBIAN_EPOCH): no
 * file keeps the build's day. nftw has no user pointer. */
static uint64_t clamp_to;
static int clamp_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	for (int i = 0; i < 2; i++)
		if ((uint64_t)ts[i].tv_sec >= clamp_to)
			ts[i] = (struct timespec){(time_t)clamp_to, 0};
	return utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -1 : 0;
}

static int times_clamp(const char *root, uint64_t mtime, struct err *d)
{
	clamp_to = mtime;
	/* Depth first: a directory's time set after its entries'. */
	if (nftw(root, clamp_one, 32, FTW_PHYS | FTW_DEPTH) < 0)
		return err_set_errno(d, -errno, "%s: setting times: %s", root, strerror(errno));
	return 0;
}

static int root_copy(const char *base, const char *root, struct err *d)
{
	struct rootfs_run_tail tail;
	const char *const argv[] = {"cp", "-a", "--reflink=auto", base, root, NULL};
	const struct rootfs_run_opts ro = {.timeout_ms = COPY_TIMEOUT_MS};
	int r = rootfs_run_capture(argv, &ro, &tail);
	return r == 0 ? 0 : rootfs_run_fail(d, "copying the Debian base", r, &tail);
}

/* The binary module indexes (modules.dep.bin, modules.alias.bin, ...) that
 * libkmod reads — modprobe and udev in the image — made by the host's
 * depmod for each kernel the image has modules of. kin's own loader reads
 * the text files; without depmod the image still boots, and that is noted. */
static void modules_index(const struct rootfs_build_opts *o, const char *root)
{
	char dir[ROOTFS_PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/usr/lib/modules", root);
	DIR *dp = opendir(dir);
	struct dirent *de;
	while (dp && (de = readdir(dp))) {
		char dep[ROOTFS_PATH_MAX * 2];
		if (de->d_name[0] == '.')
			continue;
		snprintf(dep, sizeof(dep), "%s/%s/modules.dep", dir, de->d_name);
		if (access(dep, R_OK) < 0)
			continue;
		struct rootfs_run_tail tail;
		const char *const argv[] = {"depmod", "-b", root, de->d_name, NULL};
		const struct rootfs_run_opts ro = {.timeout_ms = 60 * 1000};
		int r = rootfs_run_capture(argv, &ro, &tail);
		if (r != 0)
			log_warn("image: depmod for %s failed (%d): modprobe and udev in the image "
			         "will not find modules; kin's own loader does",
			         de->d_name, r);
		else
			rootfs_note(o, "debian: module indexes for %s", de->d_name);
	}
	if (dp)
		closedir(dp);
}

int rootfs_debian_write(const struct rootfs_tree *t, const struct rootfs_build_opts *o,
                        const char *tmp_out, struct err *d)
{
	const char *cache = o->debian_cache ? o->debian_cache : rootfs_debian_cache_dir();
	char base[ROOTFS_PATH_MAX], build[ROOTFS_PATH_MAX], root[ROOTFS_PATH_MAX + 8];
	int r;

	if (geteuid() != 0)
		return err_set(d, -EPERM, ERR_PERMISSION_DENIED,
		               "a Debian image needs root (debootstrap, chroot, mounts): run "
		               "kin image build as root");
	if (strlen(cache) > ROOTFS_PATH_MAX - 200)
		return err_set_errno(d, -ENAMETOOLONG, "Debian cache path too long");
	if ((r = mkdir_p(cache, 0755)) < 0)
		return err_set_errno(d, r, "Debian cache %s: %s", cache, strerror(-r));
	r = rootfs_debian_base(o, cache, base, sizeof(base), d);
	if (r < 0)
		return r;
	snprintf(build, sizeof(build), "%s/build.XXXXXX", cache);
	if (!mkdtemp(build))
		return err_set_errno(d, -errno, "%s: %s", build, strerror(errno));
	snprintf(root, sizeof(root), "%s/root", build);
	r = root_copy(base, root, d);
	if (r == 0)
		r = rootfs_debian_install(o, root, d);
	_cleanup_close_ int rootfd = r < 0 ? -1 : open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r == 0 && rootfd < 0)
		r = err_set_errno(d, -errno, "%s: %s", root, strerror(errno));
	if (r == 0)
		r = configure(o, rootfd, d);
	if (r == 0) {
		leftovers_remove(rootfd);
		r = rootfs_tree_stage(t, root, o->mtime, d);
	}
	if (r == 0)
		modules_index(o, root);
	if (r == 0)
		r = times_clamp(root, o->mtime, d);
	if (r == 0) {
		rootfs_note(o, "debian: writing ext4");
		r = rootfs_ext4_write(root, tmp_out, o->label ? o->label : "kin-root", o->size_mb,
		                      o->mtime, d);
	}
	dir_remove_tree(AT_FDCWD, build, 0);
	return r;
}
