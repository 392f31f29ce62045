/* sysinit: what a host's init does to a real root before its units start —
 * run by machine init in its late boot's child, so PID 1 never waits on a
 * disk or a program: fstab (fstab.c), /etc/machine-id made when empty, the
 * /run directories packages expect (/run/systemd/system tells them a
 * service manager runs; /dev/log reaches rsyslog through syslog.socket),
 * sysctl.d, modules-load.d, tmpfiles.d (tmpfiles.c), the generators
 * (postgresql's makes its clusters' links) and the random seed. Each step
 * logs what failed and the boot goes on. Finding a disk by its label and
 * loading modules are the owner's (units_sysinit_ops). Also what a host's
 * units see of it: the virtualization, the console's login prompt. */
#include "units/sysinit-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOST_SEED_SYSTEMD "/var/lib/systemd/random-seed"
#define HOST_SEED_KIN     "/var/lib/kin/random-seed"
#define HOST_SEED_BYTES   512
#define HOST_GENERATOR_MS 5000
#define HOST_CONF_FILES   256 /* *.conf files of one .d set */
#define HOST_FILE_MAX     (256 * 1024)

bool units_host_root(void)
{
	struct stat st;
	return (stat("/etc/systemd/system", &st) == 0 && S_ISDIR(st.st_mode)) ||
	       (stat("/lib/systemd/system", &st) == 0 && S_ISDIR(st.st_mode)) ||
	       (stat("/usr/lib/systemd/system", &st) == 0 && S_ISDIR(st.st_mode));
}

/* What ConditionVirtualization= sees: the DMI vendor of a VM, "" else. */
void units_host_virt(char *buf, size_t size, bool machine)
{
	char *vendor = NULL;
	buf[0] = '\0';
	if (!machine) {
		str_copy(buf, size, "container-other");
		return;
	}
	if (file_read_small("/sys/class/dmi/id/sys_vendor", 256, &vendor, NULL) < 0)
		return;
	str_trim(vendor);
	if (strcmp(vendor, "QEMU") == 0)
		str_copy(buf, size, "qemu");
	else if (strstr(vendor, "KVM"))
		str_copy(buf, size, "kvm");
	free(vendor);
}

/* A login prompt on the console the kernel writes to (the last of
 * /sys/class/tty/console/active): serial-getty@ttyS0, or getty@tty1 for
 * the virtual terminals. */
void units_host_getty(char *buf, size_t size)
{
	char *active = NULL;
	buf[0] = '\0';
	if (file_read_small("/sys/class/tty/console/active", 256, &active, NULL) < 0)
		return;
	char *last = strrchr(str_trim(active), ' ');
	last = last ? last + 1 : active;
	if (str_startswith(last, "tty") && last[3] >= '0' && last[3] <= '9')
		snprintf(buf, size, "getty@%s.service", last[3] == '0' ? "tty1" : last);
	else if (*last && strlen(last) < 32 && !strchr(last, '/'))
		snprintf(buf, size, "serial-getty@%s.service", last);
	free(active);
}

int sysinit_run_wait(char *const argv[], int ms)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (fd >= 0 && poll(&p, 1, ms) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(fd);
		return -ETIMEDOUT;
	}
	if (fd >= 0)
		close(fd);
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- identity and /run ---------------------------------------------------------- */

static int host_machine_id(const struct units_sysinit_ops *ops)
{
	(void)ops;
	char *id = NULL;
	if (file_read_small("/etc/machine-id", 128, &id, NULL) == 0 && strlen(str_trim(id)) == 32) {
		free(id);
		return 0;
	}
	free(id);
	uint8_t b[16];
	char hex[34];
	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return -1;
	b[6] = (b[6] & 0x0f) | 0x40; /* a v4 UUID, as systemd makes */
	b[8] = (b[8] & 0x3f) | 0x80;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	hex[32] = '\n';
	hex[33] = '\0';
	if (file_create_str("/etc/machine-id", hex, 0444) == 0 ||
	    file_write_str("/etc/machine-id", hex) == 0) {
		log_info("host: made /etc/machine-id");
		return 0;
	}
	/* a read-only root: one for this boot, as systemd does */
	if (file_create_str("/run/machine-id", hex, 0444) < 0 ||
	    mount("/run/machine-id", "/etc/machine-id", NULL, MS_BIND, NULL) < 0) {
		log_warn("host: /etc/machine-id: %m");
		return -1;
	}
	return 0;
}

/* The random seed: the bytes saved at the last shutdown (or boot) mixed
 * into the kernel's pool, not credited — a copied disk must not count as
 * entropy —, then replaced at once, so a crash never reuses them. Debian's
 * systemd keeps it at /var/lib/systemd/random-seed; kin uses that file
 * when it is there, else its own. */
static const char *seed_path(void)
{
	return access(HOST_SEED_SYSTEMD, F_OK) == 0 ? HOST_SEED_SYSTEMD : HOST_SEED_KIN;
}

void units_sysinit_seed_save(void)
{
	uint8_t b[HOST_SEED_BYTES];
	const char *path = seed_path();
	if (access(path, F_OK) < 0 && mkdir_p("/var/lib/kin", 0755) < 0)
		return;
	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		log_debug("host: random seed not saved: the pool is not ready");
		return;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, b, sizeof(b)) < 0 || fsync(fd) < 0)
		log_warn("host: random seed %s: %m", path);
	if (fd >= 0)
		close(fd);
}

static int host_random_seed(const struct units_sysinit_ops *ops)
{
	uint8_t b[HOST_SEED_BYTES];
	const char *path = seed_path();
	(void)ops;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b)) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		int u = open("/dev/urandom", O_WRONLY | O_CLOEXEC);
		if (u < 0 || write_all(u, b, (size_t)n) < 0)
			log_warn("host: random seed: /dev/urandom: %m");
		if (u >= 0)
			close(u);
		log_debug("host: random seed: %zd bytes from %s mixed in", n, path);
	}
	units_sysinit_seed_save();
	return 0;
}

static int host_run_dirs(const struct units_sysinit_ops *ops)
{
	static const struct {
		const char *path;
		mode_t mode;
	} dirs[] = {{"/run/systemd/system", 0755},
	            {"/run/systemd/journal", 0755},
	            {"/run/lock", 01777},
	            {"/run/user", 0755},
	            {"/run/systemd/generator", 0755}};
	int failed = 0;
	(void)ops;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (mkdir_p(dirs[i].path, dirs[i].mode) < 0 ||
		    chmod(dirs[i].path, dirs[i].mode) < 0)
			failed++;
	unlink("/dev/log");
	if (symlink("/run/systemd/journal/syslog", "/dev/log") < 0)
		failed++;
	int fd = open("/run/utmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0664);
	if (fd >= 0)
		close(fd);
	unlink("/run/nologin");
	return failed;
}

/* ---- *.d directories ------------------------------------------------------------ */

struct conf_set {
	char *names[HOST_CONF_FILES];
	char *paths[HOST_CONF_FILES];
	size_t n;
};

/* *.conf of dirs (first dir wins a name), sorted by file name. */
static void conf_collect(struct conf_set *s, const char *const *dirs)
{
	for (const char *const *d = dirs; *d; d++) {
		DIR *dir = opendir(*d);
		if (!dir)
			continue;
		for (struct dirent *e; (e = readdir(dir)) && s->n < HOST_CONF_FILES;) {
			size_t len = strlen(e->d_name);
			if (len < 6 || strcmp(e->d_name + len - 5, ".conf") != 0)
				continue;
			bool seen = false;
			for (size_t i = 0; i < s->n && !seen; i++)
				seen = strcmp(s->names[i], e->d_name) == 0;
			if (seen)
				continue;
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", *d, e->d_name);
			s->names[s->n] = strdup(e->d_name);
			s->paths[s->n] = strdup(path);
			if (s->names[s->n] && s->paths[s->n])
				s->n++;
		}
		closedir(dir);
	}
	for (size_t i = 1; i < s->n; i++) /* insertion sort: a few dozen */
		for (size_t j = i; j > 0 && strcmp(s->names[j - 1], s->names[j]) > 0; j--) {
			char *t = s->names[j];
			s->names[j] = s->names[j - 1], s->names[j - 1] = t;
			t = s->paths[j];
			s->paths[j] = s->paths[j - 1], s->paths[j - 1] = t;
		}
}

static void conf_free(struct conf_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]), free(s->paths[i]);
	s->n = 0;
}

static int conf_lines(const char *path, sysinit_line_fn fn)
{
	char *text = NULL;
	int failed = 0;
	if (file_read_regular(path, HOST_FILE_MAX, &text, NULL) < 0)
		return 0;
	unsigned n = 0;
	char *save = NULL;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		n++;
		l = str_trim(l);
		if (!*l || *l == '#' || *l == ';')
			continue;
		if (fn(l, path, n) < 0)
			failed++;
	}
	free(text);
	return failed;
}

int sysinit_conf_dirs(const char *const *dirs, const char *extra, sysinit_line_fn fn)
{
	struct conf_set s = {0};
	int failed = 0;
	conf_collect(&s, dirs);
	for (size_t i = 0; i < s.n; i++)
		failed += conf_lines(s.paths[i], fn);
	conf_free(&s);
	if (extra)
		failed += conf_lines(extra, fn);
	return failed;
}

/* "net.ipv4.ip_forward = 1" or "-kernel.x = y" (failure ignored). */
int units_sysctl_line(char *line, const char *file, unsigned n)
{
	bool ignore = *line == '-';
	char *eq = strchr(line, '=');
	if (!eq)
		return log_info("host: %s:%u: not KEY = VALUE", file, n), -EINVAL;
	*eq = '\0';
	char *key = str_trim(line + ignore), *value = str_trim(eq + 1);
	char path[512] = "/proc/sys/";
	size_t at = strlen(path);
	for (const char *k = key; *k && at + 1 < sizeof(path); k++)
		path[at++] = *k == '.' ? '/' : *k;
	path[at] = '\0';
	if (strstr(key, "..") || strchr(key, '*'))
		return log_info("host: %s:%u: %s: globs and .. are not supported", file, n, key),
		       -EINVAL;
	int r = file_write_str(path, value);
	if (r < 0 && !ignore) {
		log_info("host: %s:%u: %s = %s: %s", file, n, key, value, strerror(-r));
		return r;
	}
	return 0;
}

static int host_sysctl(const struct units_sysinit_ops *ops)
{
	static const char *const dirs[] = {"/etc/sysctl.d", "/run/sysctl.d",
	                                   "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", NULL};
	(void)ops;
	return sysinit_conf_dirs(dirs, "/etc/sysctl.conf", units_sysctl_line);
}

static char modules_csv[4096];

static int module_cb(char *line, const char *file, unsigned n)
{
	(void)file, (void)n;
	size_t used = strlen(modules_csv);
	snprintf(modules_csv + used, sizeof(modules_csv) - used, "%s%s", used ? "," : "", line);
	return 0;
}

static int host_modules(const struct units_sysinit_ops *ops)
{
	static const char *const dirs[] = {"/etc/modules-load.d", "/run/modules-load.d",
	                                   "/usr/local/lib/modules-load.d",
	                                   "/usr/lib/modules-load.d", NULL};
	modules_csv[0] = '\0';
	sysinit_conf_dirs(dirs, "/etc/modules", module_cb);
	if (!modules_csv[0] || !ops->modules_load)
		return 0;
	return ops->modules_load(modules_csv) > 0;
}

/* ---- generators ----------------------------------------------------------------- */

static int host_generators(const struct units_sysinit_ops *ops)
{
	static const char *const dirs[] = {"/usr/lib/systemd/system-generators",
	                                   "/lib/systemd/system-generators", NULL};
	int failed = 0;
	char seen[16][256];
	(void)ops;
	size_t nseen = 0;
	for (const char *const *d = dirs; *d; d++) {
		DIR *dir = opendir(*d);
		if (!dir)
			continue;
		for (struct dirent *e; (e = readdir(dir));) {
			char path[512];
			struct stat st;
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", *d, e->d_name);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
				continue;
			bool dup = false; /* /lib is /usr/lib on a merged root */
			for (size_t i = 0; i < nseen && !dup; i++)
				dup = strcmp(seen[i], e->d_name) == 0;
			if (dup || nseen >= ARRAY_SIZE(seen))
				continue;
			str_copy(seen[nseen++], sizeof(seen[0]), e->d_name);
			char *argv[] = {path, (char *)"/run/systemd/generator",
			                (char *)"/run/systemd/generator.early",
			                (char *)"/run/systemd/generator.late", NULL};
			int r = sysinit_run_wait(argv, HOST_GENERATOR_MS);
			if (r != 0) {
				log_warn("host: generator %s: %s", path,
				         r == -ETIMEDOUT ? "killed after 5 s" : "failed");
				failed++;
			}
		}
		closedir(dir);
	}
	return failed;
}

static int host_tmpfiles(const struct units_sysinit_ops *ops)
{
	(void)ops;
	return sysinit_tmpfiles();
}

void units_sysinit(const struct units_sysinit_ops *ops)
{
	static const struct {
		const char *name;
		int (*fn)(const struct units_sysinit_ops *ops);
	} steps[] = {
	    {"fstab", sysinit_fstab},        {"machine-id", host_machine_id},
	    {"/run", host_run_dirs},         {"sysctl", host_sysctl},
	    {"modules-load", host_modules},  {"tmpfiles", host_tmpfiles},
	    {"generators", host_generators}, {"random seed", host_random_seed},
	};
	uint64_t t0 = now_monotonic_ns();
	int failed = 0;
	for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
		int r = steps[i].fn(ops);
		if (r != 0) {
			log_warn("host: %s: %d problems (above)", steps[i].name, r < 0 ? 1 : r);
			failed++;
		}
	}
	log_info("host: sysinit done in %.1f ms%s", (double)(now_monotonic_ns() - t0) / 1e6,
	         failed ? " (with problems)" : "");
}
