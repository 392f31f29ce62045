/* cgroup: finding cgroup2 and kin's place in it, controllers, and setting
 * up the subtree kin owns (<base>/init for kin, <base>/cells for cells).
 * Nothing assumes /sys/fs/cgroup: the mount comes from mountinfo. */
#include "cells/cells-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const controller_names[CELLS_CTL_COUNT] = {
    [CELLS_CTL_CPU] = "cpu",   [CELLS_CTL_CPUSET] = "cpuset", [CELLS_CTL_MEMORY] = "memory",
    [CELLS_CTL_IO] = "io",     [CELLS_CTL_PIDS] = "pids",     [CELLS_CTL_HUGETLB] = "hugetlb",
    [CELLS_CTL_RDMA] = "rdma", [CELLS_CTL_MISC] = "misc",
};

const char *cells_controller_name(enum cells_controller ctl)
{
	return (unsigned)ctl < CELLS_CTL_COUNT ? controller_names[ctl] : "?";
}

uint32_t cells_controllers_parse(const char *s)
{
	uint32_t mask = 0;
	while (s && *s) {
		size_t n = strcspn(s, " \n");
		for (int i = 0; i < CELLS_CTL_COUNT; i++)
			if (strlen(controller_names[i]) == n &&
			    strncmp(s, controller_names[i], n) == 0)
				mask |= 1u << i;
		s += n;
		s += strspn(s, " \n");
	}
	return mask;
}

int cells_read_controllers(const char *dir, const char *file, uint32_t *ret)
{
	char path[PATH_MAX];
	_cleanup_free_ char *buf = NULL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int r = file_read_small(path, 4096, &buf, NULL);
	if (r < 0)
		return r;
	*ret = cells_controllers_parse(buf);
	return 0;
}

/* Enables what it can: all at once, else one by one (one refused controller,
 * e.g. a threaded-only one, must not cost the others). */
int cells_enable_controllers(const char *dir, uint32_t mask)
{
	char path[PATH_MAX], line[256] = "";
	size_t len = 0;
	if (!mask)
		return 0;
	if (snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (int i = 0; i < CELLS_CTL_COUNT; i++)
		if (mask & (1u << i))
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s+%s",
			                        len ? " " : "", controller_names[i]);
	int r = file_write_str(path, line);
	if (r == 0)
		return 0;
	int first = r;
	for (int i = 0; i < CELLS_CTL_COUNT; i++) {
		if (!(mask & (1u << i)))
			continue;
		snprintf(line, sizeof(line), "+%s", controller_names[i]);
		if (file_write_str(path, line) == 0)
			first = 0;
	}
	return first;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
int cells_find_mount(char *buf, size_t size)
{
	char root[PATH_MAX];
	return cgroup2_find_mount(buf, size, root, sizeof(root));
}

int cells_self_cgroup(char *buf, size_t size)
{
	_cleanup_free_ char *txt = NULL;
	int r = file_read_small("/proc/self/cgroup", 1 << 16, &txt, NULL);
	if (r < 0)
		return r;
	for (char *save = NULL, *line = strtok_r(txt, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (str_startswith(line, "0::/"))
			return str_copy(buf, size, line + 4);
	return -ENOENT;
}

int cells_cell_dir(const struct cells *c, const struct cell *cell, char *buf, size_t size)
{
	int n = cell && cell->depth ? snprintf(buf, size, "%s/%s", c->root, cell->path)
	                            : snprintf(buf, size, "%s", c->root);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int cells_cell_file(const struct cells *c, const struct cell *cell, const char *file, char *buf,
                    size_t size)
{
	char dir[PATH_MAX];
	int r = cells_cell_dir(c, cell, dir, sizeof(dir));
	if (r < 0)
		return r;
	int n = snprintf(buf, size, "%s/%s", dir, file);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int cells_cgroup_dir(const struct cells *c, const char *path, char *buf, size_t size)
{
	if (!path || !*path)
		return cells_cell_dir(c, NULL, buf, size);
	struct cell *cell = cells_lookup((struct cells *)c, path, NULL);
	if (!cell)
		return -ENOENT;
	return cells_cell_dir(c, cell, buf, size);
}

const char *cells_mount(const struct cells *c)
{
	return c->mount;
}

/* Moves kin, then every other process of dir, into dir/init. New ones may
 * appear while we move (a fork racing us), so go round a few times. */
static int move_into_leaf(const char *dir)
{
	char procs[PATH_MAX + 32], leaf[PATH_MAX + 32], self[16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	snprintf(leaf, sizeof(leaf), "%s/init/cgroup.procs", dir);
	snprintf(self, sizeof(self), "%d", (int)getpid());
	/* Already there (a shim's daemon is cloned into it): a write would
	 * still cost a migration's wait, milliseconds. */
	_cleanup_free_ char *in_leaf = NULL;
	bool there = false;
	if (file_read_small(leaf, 1 << 16, &in_leaf, NULL) == 0)
		for (char *save = NULL, *pid = strtok_r(in_leaf, "\n", &save); pid && !there;
		     pid = strtok_r(NULL, "\n", &save))
			there = strcmp(pid, self) == 0;
	int r = there ? 0 : file_write_str(leaf, self);
	if (r < 0)
		return r;
	for (int round = 0; round < 8; round++) {
		_cleanup_free_ char *list = NULL;
		r = file_read_small(procs, 1 << 20, &list, NULL);
		if (r < 0)
			return r;
		if (!*list)
			return 0;
		for (char *save = NULL, *pid = strtok_r(list, "\n", &save); pid;
		     pid = strtok_r(NULL, "\n", &save)) {
			r = file_write_str(leaf, pid);
			if (r < 0 && r != -ESRCH)
				return r;
		}
	}
	return -EBUSY;
}

/* The paths live on the heap: on the stack they made a 29 KiB frame, every
 * page of it probed (stack clash protection), so dirty for good in every kin. */
struct cells_paths {
	char mount_root[PATH_MAX], self[PATH_MAX], basedir[PATH_MAX];
	char type_file[PATH_MAX + 16], leaf[PATH_MAX + 8];
};

/* Whether a kin started in dir/init comes after the kin whose base dir is
 * (dir: <mount>/<the first base_len bytes of base>): its cells are there,
 * and no other `kin init` runs in dir/init. Never inlined: its buffers
 * would deepen cells_find_base's frame in every kin (the stack's pages it
 * reaches stay dirty for good), and few kins ever call it. */
static __attribute__((noinline)) bool successor_of(const char *mount, const char *base,
                                                   size_t base_len)
{
	char dir[PATH_MAX];
	int n = snprintf(dir, sizeof(dir), "%s/%.*s", mount, (int)base_len, base);
	if (n <= 0 || n >= (int)sizeof(dir))
		return false;
	char path[PATH_MAX + 32];
	_cleanup_free_ char *procs = NULL;
	snprintf(path, sizeof(path), "%s/cells", dir);
	if (access(path, F_OK) < 0)
		return false;
	snprintf(path, sizeof(path), "%s/init/cgroup.procs", dir);
	if (file_read_small(path, 1 << 20, &procs, NULL) < 0)
		return false;
	for (char *p = procs, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);
		if (end == p)
			break;
		_cleanup_free_ char *cmd = NULL;
		size_t len = 0;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		if (pid == getpid() || file_read_small(path, 4096, &cmd, &len) < 0)
			continue;
		size_t a0 = strnlen(cmd, len);
		if (a0 + 1 < len && strcmp(cmd + a0 + 1, "init") == 0)
			return false; /* a kin runs there still */
	}
	return true;
}

/* c->mount, p->basedir (<mount>/<base>, made) and c->root (<basedir>/cells). */
static int cells_find_base(struct cells *c, const struct cells_config *cfg, struct cells_paths *p,
                           struct err *err)
{
	char *mount_root = p->mount_root, *self = p->self, *basedir = p->basedir;
	const char *base;
	int r;

	strcpy(mount_root, "/");
	if (cfg->mount)
		r = str_copy(c->mount, sizeof(c->mount), cfg->mount);
	else
		r = cgroup2_find_mount(c->mount, sizeof(c->mount), mount_root,
		                       sizeof(p->mount_root));
	if (r < 0)
		return err_set(err, r, ERR_FAILED_PRECONDITION,
		               "cells: no cgroup2 mount in /proc/self/mountinfo: %s", strerror(-r));
	if (cfg->base) {
		base = cfg->base;
	} else {
		r = cells_self_cgroup(self, sizeof(p->self));
		if (r < 0)
			return err_set(err, r, ERR_FAILED_PRECONDITION,
			               "cells: no cgroup2 line in /proc/self/cgroup: %s",
			               strerror(-r));
		/* Our cgroup as seen inside the mount, whose root may be a subtree. */
		size_t rl = strlen(mount_root + 1);
		base = self;
		if (rl && strncmp(self, mount_root + 1, rl) == 0)
			base = self + rl + (self[rl] == '/');
	}
	while (*base == '/')
		base++;
	/* Started in the leaf an earlier kin made for itself (its successor
	 * after a kill, or a service manager's DelegateSubgroup=init: the base
	 * with controllers enabled takes no process): the base is its parent,
	 * where that kin's cells are — unless that kin still runs there. */
	size_t bl = strlen(base);
	if (!cfg->base && cfg->own_leaf && bl > 5 && strcmp(base + bl - 5, "/init") == 0 &&
	    successor_of(c->mount, base, bl - 5))
		self[base - self + bl - 5] = '\0';
	if (snprintf(basedir, sizeof(p->basedir), "%s%s%s", c->mount, *base ? "/" : "", base) >=
	        (int)sizeof(p->basedir) ||
	    snprintf(c->root, sizeof(c->root), "%s/cells", basedir) >= (int)sizeof(c->root))
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "cells: cgroup path too long");
	r = mkdir_p(basedir, 0755);
	if (r < 0)
		return err_set_errno(err, r, "cells: cannot make %s: %s", basedir, strerror(-r));
	return 0;
}

/* kin into its own leaf where it must be, controllers enabled, c->root made. */
static int cells_make_root(struct cells *c, const struct cells_config *cfg, struct cells_paths *p,
                           struct err *err)
{
	const char *basedir = p->basedir;
	int r;

	/* The hierarchy's real root may hold processes and still enable
	 * controllers (it is exempt from the no-internal-processes rule);
	 * elsewhere kin must leave <base> for a leaf of its own first. The
	 * root of a cgroup namespace looks like "/" from inside but is not
	 * exempt: only the real root lacks cgroup.type. Left in place there,
	 * kin would make <base> a thread root once a threaded controller (cpu,
	 * pids, cpuset) is enabled, and every clone into a cell below would
	 * fail with EOPNOTSUPP. */
	char *type_file = p->type_file;
	snprintf(type_file, sizeof(p->type_file), "%s/cgroup.type", basedir);
	bool real_root = access(type_file, F_OK) < 0 && errno == ENOENT;
	if (cfg->own_leaf && !real_root) {
		char *leaf = p->leaf;
		snprintf(leaf, sizeof(p->leaf), "%s/init", basedir);
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
			return err_set_errno(err, -errno, "cells: cannot make %s: %m", leaf);
		r = move_into_leaf(basedir);
		if (r < 0)
			return err_set_errno(err, r, "cells: cannot move kin into %s: %s", leaf,
			                     strerror(-r));
	}
	uint32_t avail = 0;
	if (cells_read_controllers(basedir, "cgroup.controllers", &avail) == 0 &&
	    cells_enable_controllers(basedir, avail) < 0)
		log_debug("cells: cannot enable controllers in %s", basedir);
	if (mkdir(c->root, 0755) < 0 && errno != EEXIST)
		return err_set_errno(err, -errno, "cells: cannot make %s: %m", c->root);
	if (cells_read_controllers(c->root, "cgroup.controllers", &avail) == 0 &&
	    cells_enable_controllers(c->root, avail) < 0)
		log_debug("cells: cannot enable controllers in %s", c->root);
	return 0;
}

struct stale {
	struct cells *c;
	char path[CELLS_PATH_MAX];
};

static void stale_removed(int result, const struct err *err, void *data)
{
	struct stale *st = data;
	st->c->stale_pending--;
	if (result < 0)
		log_warn("cells: cannot remove cell \"%s\", left by an earlier kin: %s", st->path,
		         err && err->msg[0] ? err->msg : strerror(-result));
	else
		log_info("cells: removed cell \"%s\", left by an earlier kin", st->path);
	free(st);
}

/* A cell an earlier kin left that this one does not run: its processes
 * are killed and it is removed with everything below, through the forced
 * delete (the loop sees it empty, within its deadline). */
static void stale_remove(struct cells *c, struct cell *parent, const char *name, const char *path,
                         const char *why)
{
	struct cell *cell = cells_lookup(c, path, NULL);
	if (!cell) {
		cell = cells_cell_alloc(c, parent, name, path);
		if (!cell) {
			log_warn("cells: cell \"%s\", left by an earlier kin: out of memory", path);
			return;
		}
		list_append(&parent->children, &cell->sibling);
		c->ncells++;
		cells_watch_add(c, cell);
	}
	struct stale *st = calloc(1, sizeof(*st));
	if (!st)
		return;
	str_copy(st->path, sizeof(st->path), path);
	st->c = c;
	c->stale_pending++;
	log_warn("cells: cell \"%s\", left by an earlier kin, is not adopted (%s): its "
	         "processes are killed and it is removed",
	         path, why);
	struct err err = {0};
	int r = cell_delete(c, path, true, stale_removed, st, &err);
	if (r != 1)
		stale_removed(r, &err, st);
}

/* Whether the top element of path is one of kinds (NULL-terminated; NULL: none). */
static bool of_kind(const char *path, const char *const *kinds)
{
	size_t n = strcspn(path, "/");
	for (; kinds && *kinds; kinds++)
		if (strlen(*kinds) == n && !strncmp(path, *kinds, n))
			return true;
	return false;
}

/* Depth first below cell (whose cgroup dir is fd0): every cgroup that is
 * not an adopted cell goes (stale_remove), so no name stays taken. */
static void sweep(struct cells *c, struct cell *cell, int fd0, const char *const *kinds,
                  const char *const *delegated)
{
	DIR *d = fdopendir(fd0);
	if (!d) {
		close(fd0);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		char sub[CELLS_PATH_MAX];
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!cell_name_valid(e->d_name) ||
		    snprintf(sub, sizeof(sub), "%s%s%s", cell == &c->top ? "" : cell->path,
		             cell == &c->top ? "" : "/", e->d_name) >= (int)sizeof(sub)) {
			if (cell == &c->top)
				log_warn(
				    "cells: cgroup \"%s\" in kin's cells is not a cell; left alone",
				    e->d_name);
			continue; /* below a cell: the workload's own, removed with it */
		}
		struct cell *known = cells_lookup(c, sub, NULL);
		if (!known || of_kind(sub, kinds)) {
			stale_remove(c, cell, e->d_name, sub,
			             known ? "kin does not adopt its kind yet" : "no record of it");
			continue;
		}
		/* KIND/NAME of a delegated kind: what is below is its owner's. */
		if (cell != &c->top && !strchr(cell->path, '/') && of_kind(sub, delegated))
			continue;
		int fd =
		    openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			sweep(c, known, fd, kinds, delegated);
	}
	closedir(d);
}

bool cells_sweeping(const struct cells *c)
{
	return c && c->stale_pending;
}

void cells_sweep(struct cells *c, const char *const *not_adopted_kinds,
                 const char *const *delegated_kinds)
{
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		sweep(c, &c->top, fd, not_adopted_kinds, delegated_kinds);
}

int cells_open(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
               struct cells **ret, struct err *err)
{
	struct cells_config none = {0};
	_cleanup_free_ struct cells_paths *p = malloc(sizeof(*p));
	int r;

	if (!cfg)
		cfg = &none;
	_cleanup_free_ struct cells *c = calloc(1, sizeof(*c));
	if (!c || !p)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "cells: out of memory");
	c->inotify.fd = -1;
	if ((r = cells_find_base(c, cfg, p, err)) < 0 ||
	    (r = cells_make_root(c, cfg, p, err)) < 0 ||
	    (r = cells_init_loop(c, loop, children, -1, err)) < 0)
		return r;
	log_debug("cells: cgroup2 at %s, cells in %s", c->mount, c->root);
	*ret = TAKE_PTR(c);
	return 0;
}

int cells_new(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
              struct cells **ret, struct err *err)
{
	int r = cells_open(loop, children, cfg, ret, err);
	if (r < 0)
		return r;
	cells_sweep(*ret, NULL, NULL);
	return 0;
}

int cells_init_loop(struct cells *c, struct ev_loop *loop, struct child_table *children,
                    int inotify, struct err *err)
{
	c->loop = loop;
	c->children = children;
	c->inotify = (struct ev_source){
	    .fd = inotify >= 0 ? inotify : inotify_init1(IN_NONBLOCK | IN_CLOEXEC),
	    .fn = cells_watch_event,
	    .data = c};
	if (c->inotify.fd < 0)
		return err_set_errno(err, -errno, "cells: inotify: %m");
	int r = ev_add(loop, &c->inotify, EPOLLIN);
	if (r < 0) {
		close(c->inotify.fd);
		c->inotify.fd = -1;
		return err_set_errno(err, r, "cells: cannot watch: %s", strerror(-r));
	}
	c->top = (struct cell){.wd_events = -1, .wd_memory = -1, .timer = {.fd = -1}, .owner = c};
	list_init(&c->top.execs);
	list_init(&c->top.children);
	list_init(&c->top.sibling);
	return 0;
}

static void cell_free_tree(struct cells *c, struct cell *cell)
{
	struct cell *ch, *next;
	list_for_each_safe(ch, next, &cell->children, sibling)
		cell_free_tree(c, ch);
	exec_free_all(c, cell);
	if (cell->timer.fd >= 0) {
		ev_del(c->loop, &cell->timer);
		close(cell->timer.fd);
	}
	if (cell != &c->top)
		free(cell);
}

void cells_free(struct cells *c)
{
	if (!c)
		return;
	cells_listeners_close(c);
	cell_free_tree(c, &c->top);
	if (c->inotify.fd >= 0) {
		ev_del(c->loop, &c->inotify);
		close(c->inotify.fd);
	}
	free(c);
}
