/* modload: machine init's module loader. kin cannot link libkmod (no
 * static archive), so it reads depmod's files itself and calls
 * finit_module(2), dependencies first. Builtins and modules already in the
 * kernel are skipped; each failure is reported with the module's name and
 * the errno. finit and the "already loaded" test are seams for tests: the
 * host's kernel is never touched by them. */
#include "rootfs/modules-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4
#endif

static int real_finit(int fd, const char *params, int flags, void *data)
{
	(void)data;
	return syscall(SYS_finit_module, fd, params, flags) < 0 ? -errno : 0;
}

/* Loaded modules have /sys/module/NAME/initstate; builtins with
 * parameters have /sys/module/NAME too, but no initstate. */
static bool real_is_loaded(const char *name, void *data)
{
	char path[128];
	(void)data;
	snprintf(path, sizeof(path), "/sys/module/%s/initstate", name);
	return access(path, F_OK) == 0;
}

static void real_report(const char *module, int err, const char *why, void *data)
{
	(void)data;
	log_error("module %s: %s: %s", module, why, strerror(-err));
}

struct load_ctx {
	const char *moddir;
	const struct rootfs_modules_ops *ops;
	size_t loaded;
	uint64_t kernel_ns; /* inside finit_module: the kernel's share */
};

static int load_visit(struct rootfs_modules_walk *w, size_t mod)
{
	struct load_ctx *c = w->data;
	const struct rootfs_modules_mod *m = &w->idx->mods[mod];
	char path[ROOTFS_PATH_MAX * 2];

	if (c->ops->is_loaded(m->name, c->ops->data))
		return 0;
	if (m->path[0] == '/')
		snprintf(path, sizeof(path), "%s", m->path);
	else
		snprintf(path, sizeof(path), "%s/%s", c->moddir, m->path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int r = -errno;
		if (w->fail)
			w->fail(w, m->name, r, "cannot open its file");
		return r;
	}
	/* The kernel decompresses .ko.xz/.zst itself when asked to. */
	int flags = strstr(m->path, ".ko.") ? MODULE_INIT_COMPRESSED_FILE : 0;
	uint64_t t0 = now_monotonic_ns();
	int r = c->ops->finit(fd, "", flags, c->ops->data);
	c->kernel_ns += now_monotonic_ns() - t0;
	if (r == -EEXIST)
		return 0; /* raced with udev or an earlier request: it is there */
	if (r < 0) {
		if (w->fail)
			w->fail(w, m->name, r, "finit_module");
		return r;
	}
	log_debug("module %s loaded", m->name);
	c->loaded++;
	return 0;
}

static void load_fail(struct rootfs_modules_walk *w, const char *module, int err, const char *why)
{
	struct load_ctx *c = w->data;
	c->ops->report(module, err, why, c->ops->data);
}

static int load_names(const char *moddir, const char *const *names, size_t n,
                      const struct rootfs_modules_ops *ops_in, struct rootfs_modules_boot_stats *st)
{
	struct rootfs_modules_ops ops = ops_in ? *ops_in : (struct rootfs_modules_ops){0};
	struct rootfs_modules_index *idx = NULL;
	struct err d = {0};
	struct rootfs_modules_walk w;
	int failed = 0;

	if (!ops.finit)
		ops.finit = real_finit;
	if (!ops.is_loaded)
		ops.is_loaded = real_is_loaded;
	if (!ops.report)
		ops.report = real_report;
	if (n == 0)
		return 0;
	int r = rootfs_modules_index_load(moddir, &idx, &d);
	if (r < 0) {
		ops.report("(index)", r, d.msg, ops.data);
		return r;
	}
	r = rootfs_modules_walk_init(&w, idx);
	if (r < 0) {
		rootfs_modules_index_free(idx);
		return r;
	}
	struct load_ctx c = {.moddir = moddir, .ops = &ops};
	w.visit = load_visit;
	w.fail = load_fail;
	w.data = &c;
	for (size_t i = 0; i < n; i++)
		if (rootfs_modules_walk_name(&w, names[i], 0) < 0)
			failed++;
	log_debug("modules: %zu loaded, %d of %zu requested failed", c.loaded, failed, n);
	if (st) {
		st->loaded += (unsigned)c.loaded;
		st->kernel_ns += c.kernel_ns;
	}
	rootfs_modules_walk_done(&w);
	rootfs_modules_index_free(idx);
	return failed;
}

int rootfs_modules_load(const char *moddir, const char *const *names, size_t n,
                        const struct rootfs_modules_ops *ops)
{
	return load_names(moddir, names, n, ops, NULL);
}

int rootfs_modules_load_list(const char *moddir, const char *names_csv,
                             const struct rootfs_modules_ops *ops)
{
	char buf[ROOTFS_MODULES_CSV_MAX + 1];
	const char *names[ROOTFS_MODULES_LIST_MAX];
	if (str_copy(buf, sizeof(buf), names_csv) < 0)
		return -E2BIG;
	int n = rootfs_modules_csv_split(buf, names, ARRAY_SIZE(names));
	if (n < 0)
		return n;
	return rootfs_modules_load(moddir, names, (size_t)n, ops);
}

/* Appends the names of /etc/kin/modules (one per line, '#' comments) and
 * of a kin.modules= list to names, pointing into the buffers. */
static size_t collect_names(char *conf, char *extra, const char **names, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *line = conf ? strtok_r(conf, "\n", &save) : NULL; line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "#")] = '\0';
		char *s = line + strspn(line, " \t");
		s[strcspn(s, " \t\r")] = '\0';
		if (*s)
			names[n++] = s;
	}
	if (extra) {
		int k = rootfs_modules_csv_split(extra, names + n, max - n);
		if (k > 0)
			n += (size_t)k;
		else if (k < 0)
			log_error("kin.modules=: not a valid list of module names");
	}
	return n;
}

/* What the RPC link needs (virtio-serial's console port and vsock over
 * virtio, with the PCI transport under both): loaded before kin is ready. */
static const char *const link_modules[] = {
    "virtio_pci",
    "virtio_console",
    "vsock",
    "vmw_vsock_virtio_transport",
};
/* eth0: loaded first after ready, so the network comes up early. */
static const char *const net_modules[] = {"virtio_net"};

static bool in_set(const char *name, const char *const *set, size_t n)
{
	char norm[ROOTFS_MODULES_NAME_MAX + 1];
	if (rootfs_modules_name_normalize(name, norm, sizeof(norm)) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(norm, set[i]) == 0)
			return true;
	return false;
}

/* Which of the image's names (and kin.modules=) a boot step loads. */
static size_t pick_step(enum rootfs_modules_boot_step step, const char **conf, size_t n_conf,
                        const char **extra, size_t n_extra, const char **out, size_t max)
{
	struct rootfs_root_spec spec;
	bool root = step == ROOTFS_MODULES_BOOT_EARLY && rootfs_root_wanted(&spec);
	const char *root_set[2] = {"virtio_blk", root && spec.fstype[0] ? spec.fstype : "ext4"};
	size_t n = 0;
	for (size_t i = 0; i < n_conf && n < max; i++) {
		bool link = in_set(conf[i], link_modules, ARRAY_SIZE(link_modules));
		bool net = in_set(conf[i], net_modules, ARRAY_SIZE(net_modules));
		bool take = step == ROOTFS_MODULES_BOOT_EARLY
		                ? link || (root && in_set(conf[i], root_set, 2))
		            : step == ROOTFS_MODULES_BOOT_NET  ? net
		            : step == ROOTFS_MODULES_BOOT_REST ? !link && !net
		                                               : true;
		if (take)
			out[n++] = conf[i];
	}
	/* Asked for by name on the kernel line: wanted before ready. */
	if (step == ROOTFS_MODULES_BOOT_EARLY || step == ROOTFS_MODULES_BOOT_ALL)
		for (size_t i = 0; i < n_extra && n < max; i++)
			out[n++] = extra[i];
	return n;
}

int rootfs_modules_load_boot(enum rootfs_modules_boot_step step, const char *extra_csv,
                             struct rootfs_modules_boot_stats *st)
{
	struct utsname u;
	char moddir[ROOTFS_PATH_MAX];
	_cleanup_free_ char *want = NULL, *conf = NULL;
	char extra[ROOTFS_MODULES_CSV_MAX + 1];
	const char *all[ROOTFS_MODULES_LIST_MAX * 2], *names[ROOTFS_MODULES_LIST_MAX * 2];

	if (uname(&u) < 0)
		return -errno;
	if (file_read_small("/etc/kin/kernel-release", 256, &want, NULL) == 0) {
		want[strcspn(want, " \t\n")] = '\0';
		if (strcmp(want, u.release) != 0) {
			/* Said once, by the step that runs first. */
			if (step == ROOTFS_MODULES_BOOT_EARLY || step == ROOTFS_MODULES_BOOT_ALL)
				log_error("modules: this image was built for kernel %s but kernel "
				          "%s is running; not loading modules (rebuild the image "
				          "with 'kin image build' for this kernel)",
				          want, u.release);
			return -EXDEV;
		}
	}
	int r = file_read_small("/etc/kin/modules", 64 * 1024, &conf, NULL);
	if (r < 0 && r != -ENOENT &&
	    (step == ROOTFS_MODULES_BOOT_EARLY || step == ROOTFS_MODULES_BOOT_ALL))
		log_warn("modules: cannot read /etc/kin/modules: %s", strerror(-r));
	if (extra_csv && str_copy(extra, sizeof(extra), extra_csv) < 0) {
		log_error("kin.modules=: list longer than %d bytes; ignored",
		          ROOTFS_MODULES_CSV_MAX);
		extra_csv = NULL;
	}
	bool first = step == ROOTFS_MODULES_BOOT_EARLY || step == ROOTFS_MODULES_BOOT_ALL;
	size_t n_conf = collect_names(conf, NULL, all, ARRAY_SIZE(all));
	size_t n_extra = collect_names(NULL, first && extra_csv ? extra : NULL, all + n_conf,
	                               ARRAY_SIZE(all) - n_conf);
	size_t n = pick_step(step, all, n_conf, all + n_conf, n_extra, names, ARRAY_SIZE(names));
	if (n == 0)
		return 0;
	snprintf(moddir, sizeof(moddir), "/lib/modules/%s", u.release);
	if (access(moddir, F_OK) < 0) {
		log_error("modules: %s is missing; cannot load %zu modules", moddir, n);
		return -ENOENT;
	}
	r = load_names(moddir, names, n, NULL, st);
	if (r > 0)
		log_warn("modules: %d of %zu could not be loaded", r, n);
	else if (r == 0)
		log_debug("modules: %zu loaded or present", n);
	return r;
}
