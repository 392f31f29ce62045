/* kernel: Debian's current kernel for guests, fetched into a cache rather
 * than installed: `apt-get download` of the package linux-image-amd64
 * depends on, `dpkg -x` into CACHE/RELEASE, depmod (Debian ships no
 * modules.dep), and CACHE/current pointing at it. A finished release has
 * CACHE/RELEASE/.complete and is never fetched again. */
#include "rootfs/rootfs-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define META_PACKAGE "linux-image-amd64"
#define PKG_PREFIX   "linux-image-"

const char *rootfs_kernel_cache_dir(void)
{
	const char *env = getenv("KIN_KERNEL_CACHE");
	return env && env[0] ? env : ROOTFS_CACHE_ROOT "/kernel";
}

/* "  Depends: linux-image-6.1.0-56-amd64" in apt-cache's answer. */
static int query_package(char *pkg, size_t size)
{
	_cleanup_close_ int fd = memfd_create("apt-cache", MFD_CLOEXEC);
	const char *const argv[] = {"apt-cache", "depends", META_PACKAGE, NULL};
	if (fd < 0)
		return -errno;
	int r = rootfs_run(argv, NULL, NULL, fd);
	if (r != 0)
		return r < 0 ? r : -ENOENT;
	char buf[8192];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	const char *p = strstr(buf, "Depends: " PKG_PREFIX);
	if (!p)
		return -ENOENT;
	p += STRLEN("Depends: ");
	size_t len = strcspn(p, " \t\n<>");
	if (len >= size || len <= STRLEN(PKG_PREFIX))
		return -EBADMSG;
	memcpy(pkg, p, len);
	pkg[len] = '\0';
	for (const char *c = pkg; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= '0' && *c <= '9') && *c != '-' &&
		    *c != '.' && *c != '+')
			return -EBADMSG;
	return 0;
}

/* CACHE/debs/PKG_*.deb from an earlier download, if any. */
static bool find_deb(const char *debs, const char *pkg, char *out, size_t size)
{
	DIR *d = opendir(debs);
	struct dirent *de;
	bool found = false;
	size_t plen = strlen(pkg);
	if (!d)
		return false;
	while ((de = readdir(d)) && !found) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, pkg, plen) == 0 && de->d_name[plen] == '_' && len > 4 &&
		    strcmp(de->d_name + len - 4, ".deb") == 0)
			found = snprintf(out, size, "%s/%s", debs, de->d_name) < (int)size;
	}
	closedir(d);
	return found;
}

static int point_current(const char *cache, const char *release)
{
	char tmp[ROOTFS_PATH_MAX], cur[ROOTFS_PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/.current.tmp", cache);
	snprintf(cur, sizeof(cur), "%s/current", cache);
	unlink(tmp);
	if (symlink(release, tmp) < 0 || rename(tmp, cur) < 0)
		return -errno;
	return 0;
}

static int run_checked(const char *const argv[], const char *cwd, struct err *d)
{
	int r = rootfs_run(argv, NULL, cwd, -1);
	if (r != 0) {
		return err_set_errno(d, r < 0 ? r : -EIO, "%s failed (%s %d)", argv[0],
		                     r < 0 ? "error" : "exit status", r < 0 ? -r : r);
	}
	return 0;
}

int rootfs_kernel_fetch(const char *cache, char *ret_release, size_t size, struct err *d)
{
	char pkg[128], release[128], debs[ROOTFS_PATH_MAX], deb[ROOTFS_PATH_MAX];
	char dir[ROOTFS_PATH_MAX], tmp[ROOTFS_PATH_MAX], path[ROOTFS_PATH_MAX * 2];
	int r;

	if (strlen(cache) > ROOTFS_PATH_MAX - 200) {
		return err_set_errno(d, -ENAMETOOLONG, "kernel cache path too long");
	}
	r = query_package(pkg, sizeof(pkg));
	if (r == -ENOENT) {
		/* A fresh machine may have no package lists yet. */
		const char *const update[] = {"apt-get", "update", "-qq", NULL};
		(void)rootfs_run(update, NULL, NULL, -1);
		r = query_package(pkg, sizeof(pkg));
	}
	if (r < 0) {
		return err_set_errno(d, r,
		                     "cannot tell which package %s depends on (apt-cache: %s)",
		                     META_PACKAGE, strerror(-r));
	}
	snprintf(release, sizeof(release), "%s", pkg + STRLEN(PKG_PREFIX));
	snprintf(dir, sizeof(dir), "%s/%s", cache, release);
	snprintf(path, sizeof(path), "%s/.complete", dir);
	if (access(path, F_OK) == 0)
		goto done;

	snprintf(debs, sizeof(debs), "%s/debs", cache);
	r = mkdir_p(debs, 0755);
	if (r < 0) {
		return err_set_errno(d, r, "%s: %s", debs, strerror(-r));
	}
	if (!find_deb(debs, pkg, deb, sizeof(deb))) {
		fprintf(stderr, "kin image kernel: downloading %s into %s\n", pkg, debs);
		const char *const dl[] = {"apt-get", "download", "-qq", pkg, NULL};
		r = run_checked(dl, debs, d);
		if (r < 0)
			return r;
		if (!find_deb(debs, pkg, deb, sizeof(deb))) {
			return err_set_errno(d, -ENOENT, "apt-get download left no %s_*.deb in %s",
			                     pkg, debs);
		}
	}
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", cache, release);
	dir_remove_tree(AT_FDCWD, tmp, 0);
	dir_remove_tree(AT_FDCWD, dir, 0);
	fprintf(stderr, "kin image kernel: unpacking %s\n", deb);
	const char *const x[] = {"dpkg", "-x", deb, tmp, NULL};
	const char *const dm[] = {"depmod", "-b", tmp, release, NULL};
	if ((r = run_checked(x, NULL, d)) < 0 || (r = run_checked(dm, NULL, d)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/boot/vmlinuz-%s", tmp, release);
	if (access(path, R_OK) < 0) {
		return err_set_errno(d, -ENOENT, "%s has no boot/vmlinuz-%s", deb, release);
	}
	if (rename(tmp, dir) < 0) {
		r = -errno;
		err_set_errno(d, r, "%s: %s", dir, strerror(-r));
		return r;
	}
	snprintf(path, sizeof(path), "%s/.complete", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
done:
	r = point_current(cache, release);
	if (r < 0) {
		return err_set_errno(d, r, "%s/current: %s", cache, strerror(-r));
	}
	return str_copy(ret_release, size, release);
}

int rootfs_kernel_cached(const char *cache, char *ret_root, size_t root_size, char *ret_release,
                         size_t rel_size)
{
	char cur[ROOTFS_PATH_MAX], rel[256], path[ROOTFS_PATH_MAX * 2];
	snprintf(cur, sizeof(cur), "%s/current", cache);
	ssize_t n = readlink(cur, rel, sizeof(rel) - 1);
	if (n < 0)
		return -errno;
	rel[n] = '\0';
	if (strchr(rel, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s/.complete", cache, rel);
	if (access(path, F_OK) < 0)
		return -ENOENT;
	if (snprintf(ret_root, root_size, "%s/%s", cache, rel) >= (int)root_size)
		return -ENAMETOOLONG;
	return str_copy(ret_release, rel_size, rel);
}
