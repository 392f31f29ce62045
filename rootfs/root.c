/* root: machine init's way from an initramfs to a root disk. With root=
 * on the kernel command line (a device, LABEL=, UUID=, PARTUUID=, resolved
 * through libblkid while the disk's driver probes), kin mounts it, moves
 * the API filesystems into it, frees the initramfs, makes it / and execs
 * its /sbin/init — kin again on a kin image, which then finds / is a real
 * filesystem and boots on. */
#include "rootfs/rootfs-int.h"

#include <blkid/blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#define NEWROOT_NAME    ".kin-newroot"
#define NEWROOT         "/" NEWROOT_NAME
#define WAIT_DEFAULT_MS 10000
#define WAIT_MAX_MS     (600 * 1000)

bool rootfs_root_parse(const char *cmdline, struct rootfs_root_spec *spec)
{
	bool have = false;
	*spec = (struct rootfs_root_spec){.wait_ms = WAIT_DEFAULT_MS};
	char word[ROOTFS_PATH_MAX];
	const char *p = cmdline;
	while (*p) {
		p += strspn(p, " \t\n");
		size_t n = strcspn(p, " \t\n");
		if (n == 0)
			break;
		if (n == 2 && p[0] == '-' && p[1] == '-')
			break; /* init's arguments follow */
		if (n < sizeof(word)) {
			memcpy(word, p, n);
			word[n] = '\0';
			uint64_t secs;
			if (str_startswith(word, "root=") && word[5])
				have = str_copy(spec->root, sizeof(spec->root), word + 5) == 0;
			else if (str_startswith(word, "rootfstype="))
				str_copy(spec->fstype, sizeof(spec->fstype), word + 11);
			else if (str_startswith(word, "rootflags="))
				str_copy(spec->flags, sizeof(spec->flags), word + 10);
			else if (str_startswith(word, "init=") && word[5] == '/' &&
			         !strstr(word, "/../"))
				str_copy(spec->init, sizeof(spec->init), word + 5);
			else if (strcmp(word, "ro") == 0)
				spec->ro = true;
			else if (strcmp(word, "rw") == 0)
				spec->ro = false;
			else if (str_startswith(word, "rootwait=") &&
			         str_to_u64(word + 9, WAIT_MAX_MS / 1000, &secs) == 0)
				spec->wait_ms = (int)(secs * 1000);
		}
		p += n;
	}
	return have;
}

int rootfs_root_resolve(const char *spec, int wait_ms, char *ret_dev, size_t size)
{
	uint64_t deadline = now_monotonic_ns() + (uint64_t)wait_ms * 1000000ull;
	for (;;) {
		/* A fresh cache each try: the disk may have appeared since. */
		blkid_cache cache = NULL;
		if (blkid_get_cache(&cache, "/dev/null") == 0) {
			char *dev = blkid_evaluate_spec(spec, &cache);
			blkid_put_cache(cache);
			if (dev) {
				int r = str_copy(ret_dev, size, dev);
				free(dev);
				return r;
			}
		}
		if (now_monotonic_ns() >= deadline)
			return -ENODEV;
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* Frees the initramfs: everything on the old root's device but newroot. */
static void delete_old_root(int fd_dir, dev_t dev, int depth)
{
	DIR *d = fdopendir(fd_dir);
	struct dirent *de;
	if (!d) {
		close(fd_dir);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (depth == 0 && strcmp(de->d_name, NEWROOT_NAME) == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 64) {
			int fd = openat(dirfd(d), de->d_name,
			                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				delete_old_root(fd, dev, depth + 1);
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	closedir(d);
}

#define REBIND_DIR "/.kin-root"

static bool root_is_initramfs(void)
{
	struct statfs sf;
	if (statfs("/", &sf) < 0)
		return false;
	return sf.f_type == RAMFS_MAGIC || sf.f_type == TMPFS_MAGIC;
}

static int mount_root(const struct rootfs_root_spec *spec, const char *dev)
{
	unsigned long flags = spec->ro ? MS_RDONLY : 0;
	const char *data = spec->flags[0] ? spec->flags : NULL;
	if (spec->fstype[0])
		return mount(dev, NEWROOT, spec->fstype, flags, data) < 0 ? -errno : 0;
	char *type = blkid_get_tag_value(NULL, "TYPE", dev);
	int r = mount(dev, NEWROOT, type ? type : "ext4", flags, data) < 0 ? -errno : 0;
	free(type);
	return r;
}

bool rootfs_root_wanted(struct rootfs_root_spec *spec)
{
	_cleanup_free_ char *cmdline = NULL;
	return root_is_initramfs() &&
	       file_read_small("/proc/cmdline", 64 * 1024, &cmdline, NULL) == 0 &&
	       rootfs_root_parse(cmdline, spec);
}

int rootfs_initramfs_rebind(void)
{
	if (!root_is_initramfs())
		return 0;
	if (mkdir(REBIND_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (mount("/", REBIND_DIR, NULL, MS_BIND | MS_REC, NULL) < 0)
		return -errno;
	/* As switch_root does with a new root: moved over / and chrooted to. */
	if (chdir(REBIND_DIR) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0) {
		int r = -errno;
		if (chdir("/") == 0)
			umount2(REBIND_DIR, MNT_DETACH);
		return r;
	}
	if (chdir("/") < 0)
		return -errno;
	rmdir(REBIND_DIR); /* the directory in the bind: the rootfs's own stays hidden */
	return 1;
}

int rootfs_switch_root_boot(char *argv[])
{
	_cleanup_free_ char *cmdline = NULL;
	struct rootfs_root_spec spec;
	char dev[ROOTFS_PATH_MAX];
	int r;

	if (!root_is_initramfs())
		return 0;
	if (file_read_small("/proc/cmdline", 64 * 1024, &cmdline, NULL) < 0 ||
	    !rootfs_root_parse(cmdline, &spec))
		return 0;
	r = rootfs_root_resolve(spec.root, spec.wait_ms, dev, sizeof(dev));
	if (r < 0) {
		log_error("root=%s: no such device after %d ms", spec.root, spec.wait_ms);
		return r;
	}
	if (mkdir(NEWROOT, 0755) < 0 && errno != EEXIST)
		return -errno;
	r = mount_root(&spec, dev);
	if (r < 0) {
		log_error("root=%s: cannot mount %s: %s", spec.root, dev, strerror(-r));
		rmdir(NEWROOT);
		return r;
	}
	static const char *const api[] = {"/dev", "/proc", "/sys", "/run"};
	for (size_t i = 0; i < ARRAY_SIZE(api); i++) {
		char target[64];
		snprintf(target, sizeof(target), NEWROOT "%s", api[i]);
		mkdir(target, 0755);
		if (mount(api[i], target, NULL, MS_MOVE, NULL) < 0) {
			log_warn("root: cannot move %s into the new root: %m", api[i]);
			umount2(api[i], MNT_DETACH);
		}
	}
	struct stat st;
	int oldroot = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (chdir(NEWROOT) < 0)
		return -errno;
	if (oldroot >= 0 && fstat(oldroot, &st) == 0)
		delete_old_root(oldroot, st.st_dev, 0);
	else if (oldroot >= 0)
		close(oldroot);
	if (mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 || chdir("/") < 0) {
		r = -errno;
		log_error("root: cannot make %s the root: %s", dev, strerror(-r));
		return r;
	}
	log_info("root: switched to %s (%s)", spec.root, dev);
	/* init= as initramfs-tools reads it: the new root's program to run. */
	const char *init = spec.init[0] ? spec.init : "/sbin/init";
	if (access(init, X_OK) < 0 && spec.init[0]) {
		log_warn("root: init=%s: %m; /sbin/init instead", init);
		init = "/sbin/init";
	}
	if (access(init, X_OK) < 0) {
		log_warn("root: the new root has no /sbin/init; kin goes on in it");
		return 0;
	}
	char *def[] = {(char *)init, NULL};
	char **av = argv ? argv : def;
	av[0] = (char *)init;
	execv(init, av);
	r = -errno;
	log_error("root: cannot run the new root's %s: %s; kin goes on", init, strerror(-r));
	return 0;
}
