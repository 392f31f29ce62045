/* modload: machine init's module loader. kin cannot link libkmod (no
 * static archive), so it reads depmod's files itself and calls
 * finit_module(2), dependencies first. Builtins and modules already in the
 * kernel are skipped; each failure is reported with the module's name and
 * the errno. finit and the "already loaded" test are seams for tests: the
 * host's kernel is never touched by them. */
#include "rootfs/modules.h"

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
	const struct modules_ops *ops;
	size_t loaded;
};

static int load_visit(struct modules_walk *w, size_t mod)
{
	struct load_ctx *c = w->data;
	const struct modules_mod *m = &w->idx->mods[mod];
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
	int r = c->ops->finit(fd, "", flags, c->ops->data);
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

static void load_fail(struct modules_walk *w, const char *module, int err, const char *why)
{
	struct load_ctx *c = w->data;
	c->ops->report(module, err, why, c->ops->data);
}

int modules_load(const char *moddir, const char *const *names, size_t n,
		 const struct modules_ops *ops_in)
{
	struct modules_ops ops = ops_in ? *ops_in : (struct modules_ops){0};
	struct modules_index *idx = NULL;
	struct rootfs_diag d;
	struct modules_walk w;
	int failed = 0;

	if (!ops.finit)
		ops.finit = real_finit;
	if (!ops.is_loaded)
		ops.is_loaded = real_is_loaded;
	if (!ops.report)
		ops.report = real_report;
	if (n == 0)
		return 0;
	int r = modules_index_load(moddir, &idx, &d);
	if (r < 0) {
		ops.report("(index)", r, d.msg, ops.data);
		return r;
	}
	r = modules_walk_init(&w, idx);
	if (r < 0) {
		modules_index_free(idx);
		return r;
	}
	struct load_ctx c = {.moddir = moddir, .ops = &ops};
	w.visit = load_visit;
	w.fail = load_fail;
	w.data = &c;
	for (size_t i = 0; i < n; i++)
		if (modules_walk_name(&w, names[i], 0) < 0)
			failed++;
	log_debug("modules: %zu loaded, %d of %zu requested failed", c.loaded, failed, n);
	modules_walk_done(&w);
	modules_index_free(idx);
	return failed;
}

int modules_load_list(const char *moddir, const char *names_csv, const struct modules_ops *ops)
{
	char buf[MODULES_CSV_MAX + 1];
	const char *names[MODULES_LIST_MAX];
	if (str_copy(buf, sizeof(buf), names_csv) < 0)
		return -E2BIG;
	int n = modules_csv_split(buf, names, ARRAY_SIZE(names));
	if (n < 0)
		return n;
	return modules_load(moddir, names, (size_t)n, ops);
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
		int k = modules_csv_split(extra, names + n, max - n);
		if (k > 0)
			n += (size_t)k;
		else if (k < 0)
			log_error("kin.modules=: not a valid list of module names");
	}
	return n;
}

int modules_load_boot(const char *extra_csv)
{
	struct utsname u;
	char moddir[ROOTFS_PATH_MAX];
	_cleanup_free_ char *want = NULL, *conf = NULL;
	char extra[MODULES_CSV_MAX + 1];
	const char *names[MODULES_LIST_MAX * 2];

	if (uname(&u) < 0)
		return -errno;
	if (file_read_small("/etc/kin/kernel-release", 256, &want, NULL) == 0) {
		want[strcspn(want, " \t\n")] = '\0';
		if (strcmp(want, u.release) != 0) {
			log_error("modules: this image was built for kernel %s but kernel %s is "
				  "running; not loading modules (rebuild the image with "
				  "'kin image build' for this kernel)",
				  want, u.release);
			return -EXDEV;
		}
	}
	int r = file_read_small("/etc/kin/modules", 64 * 1024, &conf, NULL);
	if (r < 0 && r != -ENOENT)
		log_warn("modules: cannot read /etc/kin/modules: %s", strerror(-r));
	if (extra_csv && str_copy(extra, sizeof(extra), extra_csv) < 0) {
		log_error("kin.modules=: list longer than %d bytes; ignored", MODULES_CSV_MAX);
		extra_csv = NULL;
	}
	size_t n = collect_names(conf, extra_csv ? extra : NULL, names, ARRAY_SIZE(names));
	if (n == 0)
		return 0;
	snprintf(moddir, sizeof(moddir), "/lib/modules/%s", u.release);
	if (access(moddir, F_OK) < 0) {
		log_error("modules: %s is missing; cannot load %zu modules", moddir, n);
		return -ENOENT;
	}
	r = modules_load(moddir, names, n, NULL);
	if (r > 0)
		log_warn("modules: %d of %zu could not be loaded", r, n);
	else if (r == 0)
		log_info("modules: %zu loaded or present", n);
	return r;
}
