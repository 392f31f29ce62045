/* spec: what a VM is made of, checked before anything is started, and the
 * choice of accelerator. */
#include "vm/vm.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

void vm_spec_defaults(struct vm_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->cpus = 1;
	spec->memory_mb = 512;
	spec->accel = VM_ACCEL_AUTO;
}

const char *vm_accel_name(enum vm_accel a)
{
	return a == VM_ACCEL_KVM ? "kvm" : a == VM_ACCEL_TCG ? "tcg" : "auto";
}

int vm_accel_parse(const char *s, enum vm_accel *ret)
{
	if (strcmp(s, "auto") == 0)
		*ret = VM_ACCEL_AUTO;
	else if (strcmp(s, "kvm") == 0)
		*ret = VM_ACCEL_KVM;
	else if (strcmp(s, "tcg") == 0)
		*ret = VM_ACCEL_TCG;
	else
		return -EINVAL;
	return 0;
}

int vm_spec_fill(struct vm_spec *spec, const struct vm_request *q, struct err *e)
{
	vm_spec_defaults(spec);
	if (str_copy(spec->name, sizeof(spec->name), q->name) < 0 ||
	    str_copy(spec->kernel, sizeof(spec->kernel), q->kernel) < 0 ||
	    str_copy(spec->image, sizeof(spec->image), q->image) < 0 ||
	    str_copy(spec->disk, sizeof(spec->disk), q->disk ? q->disk : "") < 0 ||
	    str_copy(spec->cmdline, sizeof(spec->cmdline), q->append ? q->append : "") < 0)
		return err_set(e, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "%s \"%.64s\": a name, path or the command line is too long",
		               q->what, q->name);
	if (q->cpus)
		spec->cpus = q->cpus;
	if (q->memory_mb)
		spec->memory_mb = q->memory_mb;
	if (q->accel[0] && vm_accel_parse(q->accel, &spec->accel) < 0)
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s \"%.64s\": accel \"%.32s\": expected auto, kvm or tcg", q->what,
		               q->name, q->accel);
	return 0;
}

static bool cpu_has_virt_ext(void)
{
	_cleanup_free_ char *info = NULL;
	if (file_read_small("/proc/cpuinfo", 4 << 20, &info, NULL) < 0)
		return false;
	for (char *line = strstr(info, "\nflags"); line; line = strstr(line + 1, "\nflags")) {
		char *end = strchr(line + 1, '\n');
		if (end)
			*end = '\0';
		bool found = strstr(line, " vmx") || strstr(line, " svm");
		if (end)
			*end = '\n';
		if (found)
			return true;
		break; /* every CPU lists the same flags: the first says it */
	}
	return false;
}

int vm_accel_resolve(enum vm_accel want, enum vm_accel *ret, char *why, size_t why_len)
{
	if (want == VM_ACCEL_TCG) {
		snprintf(why, why_len, "tcg requested");
		*ret = VM_ACCEL_TCG;
		return 0;
	}
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int kvm_errno = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	bool virt = cpu_has_virt_ext();
	if (want == VM_ACCEL_KVM) {
		if (kvm_errno) {
			snprintf(why, why_len, "kvm requested but /dev/kvm: %s",
			         strerror(kvm_errno));
			return -kvm_errno;
		}
		snprintf(why, why_len,
		         virt ? "kvm requested"
		              : "kvm requested; warning: no vmx/svm in /proc/cpuinfo "
		                "(a paravirtual KVM may not boot a stock kernel)");
		*ret = VM_ACCEL_KVM;
		return 0;
	}
	if (!kvm_errno && virt) {
		snprintf(why, why_len, "auto: /dev/kvm usable and the CPU has vmx/svm");
		*ret = VM_ACCEL_KVM;
	} else if (!kvm_errno) {
		snprintf(why, why_len,
		         "auto: /dev/kvm is a paravirtual KVM (no vmx/svm in "
		         "/proc/cpuinfo) that cannot boot a stock kernel; using tcg");
		*ret = VM_ACCEL_TCG;
	} else {
		snprintf(why, why_len, "auto: /dev/kvm: %s; using tcg", strerror(kvm_errno));
		*ret = VM_ACCEL_TCG;
	}
	return 0;
}

static int check_file(const char *what, const char *path, struct err *e)
{
	struct stat st;
	if (!path[0])
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT, "%s: no file given", what);
	if (stat(path, &st) < 0)
		return err_set_errno(e, -errno, "%s \"%s\": %s", what, path, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT, "%s \"%s\": not a regular file",
		               what, path);
	if (access(path, R_OK) < 0)
		return err_set_errno(e, -errno, "%s \"%s\": %s", what, path, strerror(errno));
	return 0;
}

int vm_spec_check_files(const struct vm_spec *spec, struct err *e)
{
	int r;
	if ((r = check_file("kernel", spec->kernel, e)) < 0)
		return r;
	if ((r = check_file("image", spec->image, e)) < 0)
		return r;
	if (spec->disk[0] && (r = check_file("disk", spec->disk, e)) < 0)
		return r;
	return 0;
}

int vm_spec_validate(const struct vm_spec *spec, struct err *e)
{
	if (!name_is_valid(spec->name))
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "vm name \"%.64s\": use 1-64 of [A-Za-z0-9_.-], not . or ..",
		               spec->name);
	if (spec->cpus < 1 || spec->cpus > VM_CPUS_MAX)
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "vm \"%s\": cpus %u out of range 1-%d", spec->name, spec->cpus,
		               VM_CPUS_MAX);
	if (spec->memory_mb < VM_MEMORY_MIN_MB || spec->memory_mb > VM_MEMORY_MAX_MB)
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "vm \"%s\": memory %u MiB out of range %d-%d", spec->name,
		               spec->memory_mb, VM_MEMORY_MIN_MB, VM_MEMORY_MAX_MB);
	if (!spec->kernel[0] || !spec->image[0])
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT, "%s: no file given",
		               spec->kernel[0] ? "image" : "kernel");
	if (!spec->share[0] != !spec->share_at[0] ||
	    (spec->share_at[0] && (spec->share_at[0] != '/' || strchr(spec->share_at, ' '))))
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "vm \"%s\": a share needs a host directory and an absolute guest "
		               "path without spaces",
		               spec->name);
	if (spec->tap[0] &&
	    (!spec->netns[0] || !spec->mac[0] || !spec->guest_ip[0] || strchr(spec->guest_ip, ' ')))
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
		               "vm \"%s\": a tap NIC needs its network namespace, a MAC and the "
		               "guest's ip=",
		               spec->name);
	/* The command line reaches the guest kernel: no control characters, and
	 * no quotes that could end our own words early. */
	for (const char *p = spec->cmdline; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT,
			               "vm \"%s\": kernel command line has a control "
			               "character",
			               spec->name);
	return 0;
}

int vm_paths_for(const char *state_dir, const struct vm_spec *spec, struct vm_paths *ret)
{
	struct vm_paths p;
	if (snprintf(p.dir, sizeof(p.dir), "%s/%s", state_dir, spec->name) >= (int)sizeof(p.dir))
		return -ENAMETOOLONG;
	if (spec->console_log[0])
		str_copy(p.console, sizeof(p.console), spec->console_log);
	else if (snprintf(p.console, sizeof(p.console), "%s/console.log", p.dir) >=
	         (int)sizeof(p.console))
		return -ENAMETOOLONG;
	/* sun_path holds 108 bytes: the sockets must fit. */
	if (snprintf(p.link, sizeof(p.link), "%s/link.sock", p.dir) >= 108 ||
	    snprintf(p.monitor, sizeof(p.monitor), "%s/monitor.sock", p.dir) >= 108)
		return -ENAMETOOLONG;
	*ret = p;
	return 0;
}

/* ---- what the guest is told ---- */

const struct vm_guest_kinds vm_guest_kinds_default = VM_GUEST_KINDS_QEMU;

static const char *const link_kinds[] = {[VM_LINK_VIRTIO_SERIAL] = "virtio-serial"};
static const char *const share_kinds[] = {[VM_SHARE_9P] = "9p"};

int vm_guest_words(const struct vm_guest_kinds *k, bool share, char *buf, size_t size)
{
	int n = snprintf(buf, size, "kin.link=%s:%s", link_kinds[k->link], k->link_name);
	if (n >= 0 && (size_t)n < size && share)
		n += snprintf(buf + n, size - (size_t)n, " kin.share.dev=%s:%s",
		              share_kinds[k->share], k->share_tag);
	return n < 0 || (size_t)n >= size ? -E2BIG : 0;
}

/* "KIND:NAME" with KIND one of kinds[0..n): its index, NAME into name. */
static int kind_name_parse(const char *value, const char *const *kinds, size_t n, char *name)
{
	const char *colon = strchr(value, ':');
	if (!colon || !colon[1] || strlen(colon + 1) > VM_GUEST_NAME_MAX ||
	    strspn(colon + 1,
	           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
	        strlen(colon + 1))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (strlen(kinds[i]) == (size_t)(colon - value) &&
		    strncmp(kinds[i], value, (size_t)(colon - value)) == 0) {
			strcpy(name, colon + 1); /* length checked above */
			return (int)i;
		}
	return -EINVAL;
}

int vm_guest_option(struct vm_guest_kinds *k, const char *key, const char *value)
{
	char name[VM_GUEST_NAME_MAX + 1];
	bool link = strcmp(key, "kin.link") == 0;
	if (!link && strcmp(key, "kin.share.dev") != 0)
		return -ENOENT;
	int r = link ? kind_name_parse(value, link_kinds, ARRAY_SIZE(link_kinds), name)
	             : kind_name_parse(value, share_kinds, ARRAY_SIZE(share_kinds), name);
	if (r < 0)
		return r;
	if (link) {
		k->link = (enum vm_link_kind)r;
		strcpy(k->link_name, name);
	} else {
		k->share = (enum vm_share_kind)r;
		strcpy(k->share_tag, name);
	}
	return 0;
}

int vm_guest_link_find(const struct vm_guest_kinds *k, char *dev, size_t size)
{
	DIR *d = opendir("/sys/class/virtio-ports"); /* virtio-serial: the one kind */
	if (!d)
		return -ENOENT;
	int r = -ENOENT;
	for (struct dirent *e; r < 0 && (e = readdir(d));) {
		char path[300], *name = NULL;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		if (file_read_small(path, 256, &name, NULL) < 0)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, k->link_name) == 0 &&
		    snprintf(dev, size, "/dev/%s", e->d_name) < (int)size)
			r = 0;
		free(name);
	}
	closedir(d);
	return r;
}

const char *vm_guest_share_modules(const struct vm_guest_kinds *k)
{
	(void)k; /* 9p: the one kind */
	return "9pnet_virtio,9p";
}

/* No cache: the host binds containers' roots in later, and must be seen
 * then. Not nosuid: the containers' roots are there, and a setuid binary
 * in one must work as under runc (no_new_privs, when a spec asks, still
 * stops it). */
int vm_guest_share_mount(const struct vm_guest_kinds *k, const char *at)
{
	int r = mkdir_p(at, 0755);
	if (r == 0 && mount(k->share_tag, at, "9p", MS_NODEV,
	                    "trans=virtio,version=9p2000.L,msize=262144") < 0)
		r = -errno;
	return r;
}
