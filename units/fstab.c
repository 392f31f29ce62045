/* fstab: /etc/fstab applied to a host's real root at boot (units_sysinit):
 * / made as fstab says (read-write unless `ro`; checked by fsck -a first
 * while still read-only), the other filesystems mounted (fsck -a first
 * where fsck and a pass number are there) and swap turned on. noauto lines
 * are skipped, nofail ones only noted; x-systemd.* options are ignored.
 * At the machine's end the swap goes off again (units_sysinit_swapoff). */
#include "units/sysinit-int.h"

#include <limits.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/swap.h>

#define FSTAB_LINES_MAX 256
#define FSCK_MS         (10 * 60 * 1000)

/* fstab's own words, which are not mount(2)'s business. */
static const char *const fstab_only[] = {"auto",  "noauto", "nofail",  "user",
                                         "users", "nouser", "_netdev", "errors=remount-ro"};

int units_fstab_mount_options(const char *opts, unsigned long *ret_flags, char *data, size_t size)
{
	char buf[1024];
	unsigned long flags = 0;
	size_t used = 0;
	if (str_copy(buf, sizeof(buf), opts) < 0)
		return -E2BIG;
	data[0] = '\0';
	char *save = NULL;
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		unsigned long set, clear;
		bool known = false;
		if (mount_option_flag(o, &set, &clear)) {
			flags = (flags | set) & ~clear;
			known = true;
		}
		for (size_t i = 0; i < ARRAY_SIZE(fstab_only) && !known; i++)
			known = strcmp(o, fstab_only[i]) == 0;
		if (known || str_startswith(o, "x-") || str_startswith(o, "comment="))
			continue;
		int n = snprintf(data + used, size - used, "%s%s", used ? "," : "", o);
		if (n < 0 || (size_t)n >= size - used)
			return -E2BIG;
		used += (size_t)n;
	}
	*ret_flags = flags;
	return 0;
}

static bool has_opt(const char *opts, const char *o)
{
	return hasmntopt(&(struct mntent){.mnt_opts = (char *)opts}, o) != NULL;
}

static void fstab_source(const struct units_sysinit_ops *ops, const char *spec, char *dev,
                         size_t size)
{
	if ((str_startswith(spec, "UUID=") || str_startswith(spec, "LABEL=") ||
	     str_startswith(spec, "PARTUUID=") || str_startswith(spec, "PARTLABEL=")) &&
	    ops->resolve && ops->resolve(spec, dev, size) == 0)
		return;
	str_copy(dev, size, spec);
}

/* fsck -a of a device where fsck is installed. Status 2 ("reboot"): for
 * the root, fixed while mounted read-only, the kernel's view of it is
 * stale — PID 1 is asked to reboot (SIGRTMIN+5), as systemd-fsck does;
 * returns 2 then. */
static int fstab_fsck(const char *dev, bool root)
{
	struct stat st;
	if (dev[0] != '/' || stat("/sbin/fsck", &st) < 0)
		return 0;
	char *argv[] = {(char *)"/sbin/fsck", (char *)"-a", (char *)"-T", (char *)dev, NULL};
	int r = sysinit_run_wait(argv, FSCK_MS);
	if (r >= 4 || r < 0) {
		log_warn("host: fsck %s: status %d; mounting anyway", dev, r);
		return 0;
	}
	if (r & 1)
		log_info("host: fsck %s corrected errors", dev);
	if ((r & 2) && root) {
		log_warn("host: fsck %s repaired the root and asks for a reboot: rebooting", dev);
		kill(1, SIGRTMIN + 5);
		return 2;
	}
	if (r & 2)
		log_warn("host: fsck %s repaired it and asks for a reboot", dev);
	return 0;
}

/* The root is mounted already; it is made as fstab says — checked first
 * while it is still read-only (`ro` on the kernel command line). */
static int fstab_root(const struct mntent *m, const char *dev, unsigned long flags,
                      const char *data)
{
	struct statvfs sv;
	if (m->mnt_passno > 0 && statvfs("/", &sv) == 0 && (sv.f_flag & ST_RDONLY) &&
	    fstab_fsck(dev, true) == 2)
		return 0; /* a reboot is on its way */
	if (!(flags & MS_RDONLY) &&
	    mount(NULL, "/", NULL, MS_REMOUNT | (flags & ~MS_RDONLY), data[0] ? data : NULL) < 0 &&
	    mount(NULL, "/", NULL, MS_REMOUNT, NULL) < 0) {
		log_warn("host: remounting / read-write: %m");
		return -1;
	}
	return 0;
}

static int fstab_one(const struct units_sysinit_ops *ops, const struct mntent *m, bool *noted_x)
{
	char dev[256], data[1024];
	unsigned long flags;
	bool nofail = has_opt(m->mnt_opts, "nofail");
	if (strstr(m->mnt_opts, "x-systemd.") && !*noted_x) {
		log_info("host: fstab: x-systemd.* options are ignored");
		*noted_x = true;
	}
	fstab_source(ops, m->mnt_fsname, dev, sizeof(dev));
	if (strcmp(m->mnt_type, "swap") == 0) {
		if (swapon(dev, 0) < 0 && errno != EBUSY) {
			log_msg(nofail ? LOG_INFO_ : LOG_WARN_, "host: swapon %s: %m", dev);
			return nofail ? 0 : -1;
		}
		return 0;
	}
	if (units_fstab_mount_options(m->mnt_opts, &flags, data, sizeof(data)) < 0) {
		log_warn("host: fstab: %s: options too long", m->mnt_dir);
		return -1;
	}
	if (strcmp(m->mnt_dir, "/") == 0)
		return fstab_root(m, dev, flags, data);
	if (m->mnt_passno > 0)
		fstab_fsck(dev, false);
	mkdir_p(m->mnt_dir, 0755);
	if (mount(dev, m->mnt_dir, m->mnt_type, flags, data[0] ? data : NULL) < 0 &&
	    errno != EBUSY) {
		log_msg(nofail ? LOG_INFO_ : LOG_WARN_, "host: mount %s on %s (%s): %m", dev,
		        m->mnt_dir, m->mnt_type);
		return nofail ? 0 : -1;
	}
	return 0;
}

int sysinit_fstab(const struct units_sysinit_ops *ops)
{
	FILE *f = setmntent("/etc/fstab", "re");
	if (!f) {
		/* no fstab: / read-write is what a host wants */
		mount(NULL, "/", NULL, MS_REMOUNT, NULL);
		return 0;
	}
	int failed = 0;
	bool noted_x = false;
	struct mntent m;
	char buf[4096];
	for (unsigned n = 0; n < FSTAB_LINES_MAX && getmntent_r(f, &m, buf, sizeof(buf)); n++) {
		if (has_opt(m.mnt_opts, "noauto"))
			continue;
		if (fstab_one(ops, &m, &noted_x) < 0)
			failed++;
	}
	endmntent(f);
	return failed;
}

/* Swap the host boot turned on: a swap file keeps its filesystem busy,
 * and / would not remount read-only. */
void units_sysinit_swapoff(void)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[PATH_MAX + 128], path[PATH_MAX];
	if (!f)
		return;
	for (bool header = true; fgets(line, sizeof(line), f); header = false) {
		if (header || sscanf(line, "%4095s", path) != 1)
			continue;
		if (swapoff(path) < 0)
			log_warn("swapoff %s: %m", path);
		else
			log_debug("swapoff %s", path);
	}
	fclose(f);
}
