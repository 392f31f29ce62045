/* boot: what only a machine's init does before its loop — the API
 * filesystems, cgroup2 with every controller delegated to children, the
 * console on stdio — and the hostname, which any role may set in its own
 * UTS namespace. */
#include "init/init.h"
#include "rootfs/rootfs.h"
#include "units/units.h"
#include "vm/vm.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct boot_mount {
	const char *source, *target, *type;
	unsigned long flags;
	const char *data;
	bool fatal;
};

static const struct boot_mount boot_mounts[] = {
    {"proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, true},
    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, true},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", true},
    /* gid 5 is Debian's tty group; numeric, since kin makes no NSS calls. */
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=0620,ptmxmode=0666", false},
    {"shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", false},
    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", false},
    {"cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, "nsdelegate", false},
};

static const struct {
	const char *target, *link;
} boot_links[] = {
    {"/proc/self/fd", "/dev/fd"},
    {"/proc/self/fd/0", "/dev/stdin"},
    {"/proc/self/fd/1", "/dev/stdout"},
    {"/proc/self/fd/2", "/dev/stderr"},
};

static int boot_mount_one(const struct boot_mount *m)
{
	if (path_is_mountpoint(m->target)) {
		log_debug("%s already mounted", m->target);
		return 0;
	}
	int r = mkdir_p(m->target, 0755);
	if (r < 0)
		return r;
	if (mount(m->source, m->target, m->type, m->flags, m->data) < 0)
		return -errno;
	return 0;
}

/* Delegates every controller the kernel offers to the root cgroup's
 * children, one by one so a controller that refuses does not hide others. */
static void boot_cgroup_controllers(const char *root)
{
	char path[256], *ctrls = NULL;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	int r = file_read_small(path, 4096, &ctrls, NULL);
	if (r < 0) {
		log_warn("cgroup2: cannot read %s: %s", path, strerror(-r));
		return;
	}
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", root);
	char *save = NULL;
	for (char *c = strtok_r(ctrls, " \n", &save); c; c = strtok_r(NULL, " \n", &save)) {
		char word[64];
		snprintf(word, sizeof(word), "+%s", c);
		r = file_write_str(path, word);
		if (r < 0)
			log_warn("cgroup2: cannot enable controller %s: %s", c, strerror(-r));
	}
	free(ctrls);
}

/* The kernel gives init /dev/console as stdio only if the initramfs had the
 * node; devtmpfs has it now, so take it if fd 0-2 are missing. */
static bool boot_console(void)
{
	bool console = true;
	if (fcntl(STDIN_FILENO, F_GETFD) >= 0 && fcntl(STDOUT_FILENO, F_GETFD) >= 0 &&
	    fcntl(STDERR_FILENO, F_GETFD) >= 0)
		return true;
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0) {
		/* No console: children get /dev/null, kin itself logs to kmsg. */
		console = false;
		fd = open("/dev/null", O_RDWR);
	}
	if (fd < 0)
		return false;
	for (int i = 0; i < 3; i++)
		if (fcntl(i, F_GETFD) < 0)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
	return console;
}

int init_boot_set_hostname(const char *name)
{
	if (!str_is_hostname(name))
		return -EINVAL;
	return sethostname(name, strlen(name)) < 0 ? -errno : 0;
}

static void boot_hostname(const struct init_config *cfg)
{
	char buf[INIT_HOSTNAME_MAX + 1] = "";
	const char *name = cfg->hostname;

	if (!name[0]) {
		_cleanup_free_ char *etc = NULL;
		if (file_read_small("/etc/hostname", 256, &etc, NULL) == 0) {
			etc[strcspn(etc, " \t\n")] = '\0';
			if (str_is_hostname(etc))
				str_copy(buf, sizeof(buf), etc);
		}
		name = buf[0] ? buf : "kin";
	}
	int r = init_boot_set_hostname(name);
	if (r < 0)
		log_warn("cannot set hostname '%s': %s", name, strerror(-r));
}

int init_boot_machine_mounts(void)
{
	umask(022);
	for (size_t i = 0; i < ARRAY_SIZE(boot_mounts); i++) {
		const struct boot_mount *m = &boot_mounts[i];
		int r = boot_mount_one(m);
		if (r < 0) {
			if (m->fatal) {
				log_error("cannot mount %s on %s: %s", m->type, m->target,
				          strerror(-r));
				return r;
			}
			log_warn("cannot mount %s on %s: %s", m->type, m->target, strerror(-r));
			continue;
		}
		/* /dev exists now: log there until the console is known good. */
		if (strcmp(m->target, "/dev") == 0 && fcntl(STDERR_FILENO, F_GETFD) < 0)
			log_set_target(LOG_TARGET_KMSG);
	}
	for (size_t i = 0; i < ARRAY_SIZE(boot_links); i++)
		if (symlink(boot_links[i].target, boot_links[i].link) < 0 && errno != EEXIST)
			log_debug("symlink %s: %m", boot_links[i].link);
	if (boot_console())
		log_set_target(LOG_TARGET_STDERR);
	else
		log_set_target(LOG_TARGET_KMSG);
	return 0;
}

/* kin.share=: the VMM's share (a shim's pod directory), mounted before kin
 * is ready, so that what the host puts there is seen at once. */
static void boot_share(const char *at, const struct vm_guest_kinds *k)
{
	int r = vm_guest_share_mount(k, at);
	if (r < 0)
		log_error("share: cannot mount %s on %s: %s", k->share_tag, at, strerror(-r));
	else
		log_info("share: %s mounted on %s", k->share_tag, at);
}

void init_boot_machine_setup(struct init_config *cfg)
{
	log_debug("boot: setup begins");
	if (path_is_mountpoint("/sys/fs/cgroup"))
		boot_cgroup_controllers("/sys/fs/cgroup");
	mkdir("/run/kin", 0700);
	boot_hostname(cfg);
	log_debug("boot: cgroup controllers and hostname done");
	/* Only what RPC-ready needs (and root=): the rest loads after ready,
	 * in init_boot_machine_late's child. */
	struct rootfs_modules_boot_stats st = {0};
	char extra[sizeof(cfg->modules) + 32];
	snprintf(extra, sizeof(extra), "%s%s%s", cfg->modules,
	         cfg->modules[0] && cfg->share[0] ? "," : "",
	         cfg->share[0] ? vm_guest_share_modules(&cfg->guest) : "");
	int r = rootfs_modules_load_boot(ROOTFS_MODULES_BOOT_EARLY, extra[0] ? extra : NULL, &st);
	if (r < 0 && r != -EXDEV)
		log_warn("modules: none loaded: %s", strerror(-r));
	else if (r > 0)
		log_warn("modules: %d of the requested modules failed to load (named above)", r);
	cfg->boot_modules = st.loaded;
	cfg->boot_kernel_ns = st.kernel_ns;
	log_debug("boot: early modules done");
	/* root= (a disk whose driver and filesystem are modules just loaded):
	 * on success the disk's /sbin/init replaces this kin. */
	static char sbin_init[] = "/sbin/init";
	char *root_argv[64] = {sbin_init};
	size_t n = 1;
	for (char **a = cfg->argv; a && *a && n + 1 < ARRAY_SIZE(root_argv); a++)
		root_argv[n++] = *a; /* the kernel line's workload, carried across */
	r = rootfs_switch_root_boot(root_argv);
	if (r < 0)
		log_warn("root: staying on the initramfs: %s", strerror(-r));
	r = rootfs_initramfs_rebind();
	if (r < 0)
		log_warn("root: cannot rebind the initramfs (cells cannot have roots): %s",
		         strerror(-r));
	if (cfg->share[0])
		boot_share(cfg->share, &cfg->guest);
}

/* The host sysinit's reach into rootfs/ (units/ knows no disks or modules). */
static int sysinit_resolve(const char *spec, char *ret_dev, size_t size)
{
	return rootfs_root_resolve(spec, 2000, ret_dev, size);
}

static int sysinit_modules_load(const char *csv)
{
	return rootfs_modules_load_boot(ROOTFS_MODULES_BOOT_ALL, csv, NULL);
}

/* The late half, in a child: eth0's module and the network first, then
 * the image's other modules. Its exit status counts the failed steps
 * (each already logged by module or interface name). */
static _noreturn_ void boot_late_child(const struct init_config *cfg)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
	sigset_t none;
	for (size_t i = 0; i < ARRAY_SIZE(faults); i++)
		signal(faults[i], SIG_DFL); /* PID 1's panic policy is not ours */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* stop's SIGTERM ends us */

	struct rootfs_modules_boot_stats st = {0};
	uint64_t t0 = now_monotonic_ns();
	int failed = 0;
	int r = rootfs_modules_load_boot(ROOTFS_MODULES_BOOT_NET, NULL, &st);
	failed += r > 0 ? r : 0;
	r = net_bring_up(&cfg->net);
	if (r < 0) {
		failed++;
		log_warn("network: %s%s: %s", cfg->net.ifname[0] ? "bringing up " : "lo",
		         cfg->net.ifname, strerror(-r));
	} else if (cfg->net.ifname[0]) {
		log_info("network: %s up%s%s%s%s", cfg->net.ifname, cfg->net.addr[0] ? " " : "",
		         cfg->net.addr, cfg->net.gateway[0] ? " via " : "", cfg->net.gateway);
	}
	r = rootfs_modules_load_boot(ROOTFS_MODULES_BOOT_REST, NULL, &st);
	failed += r > 0 ? r : 0;
	if (cfg->host)
		/* before the units: their mounts, dirs, sysctls */
		units_sysinit(&(struct units_sysinit_ops){.resolve = sysinit_resolve,
		                                          .modules_load = sysinit_modules_load});
	log_info("boot: late modules: %u loaded in %.1f ms (%.1f ms in the kernel)", st.loaded,
	         (double)(now_monotonic_ns() - t0) / 1e6, (double)st.kernel_ns / 1e6);
	_exit(failed > 125 ? 125 : failed);
}

int init_boot_machine_late(const struct init_config *cfg, struct child_table *t,
                           child_exit_fn on_exit, void *data)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		boot_late_child(cfg);
	/* A zombie still has its pidfd: nothing reaps before the loop runs. */
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		int r = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return r;
	}
	fd_set_cloexec(pidfd, true);
	return child_track(t, pid, pidfd, on_exit, data, NULL);
}
