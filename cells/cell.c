/* cell: the tree of cells — create, update, delete, freeze, kill, list —
 * and the inotify watch on each cell's cgroup.events and memory.events that
 * turns kernel state changes into events and completes pending freezes and
 * forced deletes. Every check runs before the first write to cgroupfs. */
#include "cells/cells-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

int cells_get(struct cells *c, const char *path, struct cell **ret, struct err *err)
{
	struct cell *cell = cells_lookup(c, path, err);
	if (cell) {
		*ret = cell;
		return 0;
	}
	return path && *path && cell_path_check(path, NULL) == 0 ? -ENOENT : -EINVAL;
}

struct cell *cells_lookup(struct cells *c, const char *path, struct err *err)
{
	if (!path || !*path) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "cell name is empty");
		return NULL;
	}
	if (cell_path_check(path, err) < 0)
		return NULL;
	struct cell *cur = &c->top;
	for (const char *p = path; cur && *p;) {
		size_t n = strcspn(p, "/");
		struct cell *ch, *found = NULL;
		list_for_each(ch, &cur->children, sibling)
			if (strlen(ch->name) == n && strncmp(ch->name, p, n) == 0) {
				found = ch;
				break;
			}
		cur = found;
		p += n + (p[n] == '/');
	}
	if (!cur)
		err_set(err, -ENOENT, ERR_NOT_FOUND, "cell \"%s\" not found", path);
	return cur;
}

int cells_read_events(struct cells *c, struct cell *cell, bool *populated, bool *frozen)
{
	char path[PATH_MAX];
	_cleanup_free_ char *buf = NULL;
	int r = cells_cell_file(c, cell, "cgroup.events", path, sizeof(path));
	if (r < 0 || (r = file_read_small(path, 4096, &buf, NULL)) < 0)
		return r;
	*populated = strstr(buf, "populated 1") != NULL;
	*frozen = strstr(buf, "frozen 1") != NULL;
	return 0;
}

static uint64_t read_oom_kills(struct cells *c, struct cell *cell)
{
	char path[PATH_MAX];
	_cleanup_free_ char *buf = NULL;
	unsigned long long v = 0;
	if (cells_cell_file(c, cell, "memory.events.local", path, sizeof(path)) < 0 ||
	    file_read_small(path, 4096, &buf, NULL) < 0)
		return 0;
	char *p = strstr(buf, "oom_kill ");
	if (p)
		sscanf(p + 9, "%llu", &v);
	return v;
}

void cells_watch_add(struct cells *c, struct cell *cell)
{
	char path[PATH_MAX];
	cell->wd_events = cell->wd_memory = -1;
	if (cells_cell_file(c, cell, "cgroup.events", path, sizeof(path)) == 0)
		cell->wd_events = inotify_add_watch(c->inotify.fd, path, IN_MODIFY);
	/* .local: this cell's own OOM kills, not its descendants' again. */
	if (cells_cell_file(c, cell, "memory.events.local", path, sizeof(path)) == 0 &&
	    access(path, F_OK) == 0)
		cell->wd_memory = inotify_add_watch(c->inotify.fd, path, IN_MODIFY);
	cells_read_events(c, cell, &cell->populated, &cell->frozen);
	cell->oom_kills = read_oom_kills(c, cell);
}

static void watch_remove(struct cells *c, struct cell *cell)
{
	if (cell->wd_events >= 0)
		inotify_rm_watch(c->inotify.fd, cell->wd_events);
	if (cell->wd_memory >= 0)
		inotify_rm_watch(c->inotify.fd, cell->wd_memory);
	cell->wd_events = cell->wd_memory = -1;
}

/* ---- pending operations ---------------------------------------------------- */

static void timer_fired(struct ev_source *src, uint32_t events);

static int op_arm(struct cells *c, struct cell *cell, uint64_t ms)
{
	if (cell->timer.fd < 0) {
		int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		cell->timer = (struct ev_source){.fd = fd, .fn = timer_fired, .data = cell};
		int r = ev_add(c->loop, &cell->timer, EPOLLIN);
		if (r < 0) {
			close(fd);
			cell->timer.fd = -1;
			return r;
		}
	}
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000}};
	return timerfd_settime(cell->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static void op_finish(struct cell_op *op, int result, const struct err *err)
{
	if (!op->active)
		return;
	op->active = false;
	if (op->done)
		op->done(result, err, op->data);
}

static int remove_subtree(struct cells *c, struct cell *cell, struct err *err);

/* A forced delete finishes once the subtree is empty and every executable
 * in it has been reaped (so their exit events are not lost). */
static void delete_progress(struct cells *c, struct cell *cell)
{
	if (!cell->delete_op.active)
		return;
	bool populated = true, frozen;
	if (cells_read_events(c, cell, &populated, &frozen) < 0 || populated ||
	    exec_any_running(cell))
		return;
	struct err err = {0};
	struct cell_op op = cell->delete_op;
	cell->delete_op.active = false;
	int r = remove_subtree(c, cell, &err); /* frees cell */
	op.active = true;
	op_finish(&op, r, r < 0 ? &err : NULL);
}

void cells_exec_gone(struct cells *c, struct cell *cell)
{
	for (struct cell *p = cell; p && p != &c->top; p = p->parent)
		if (p->delete_op.active) {
			delete_progress(c, p);
			return;
		}
}

static void timer_fired(struct ev_source *src, uint32_t events)
{
	struct cell *cell = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	struct err err;
	if (cell->freeze_op.active) {
		err_set(&err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED, "cell \"%s\": not %s after %d ms",
		        cell->path, cell->freeze_op.want_frozen ? "frozen" : "thawed",
		        CELLS_FREEZE_TIMEOUT_MS);
		op_finish(&cell->freeze_op, -ETIMEDOUT, &err);
	}
	if (cell->delete_op.active) {
		err_set(&err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
		        "cell \"%s\": processes still there %d ms after cgroup.kill", cell->path,
		        CELLS_DELETE_TIMEOUT_MS);
		op_finish(&cell->delete_op, -ETIMEDOUT, &err);
	}
}

static void cell_state_changed(struct cells *c, struct cell *cell)
{
	bool populated, frozen;
	if (cells_read_events(c, cell, &populated, &frozen) < 0)
		return;
	bool was_frozen = cell->frozen;
	cell->populated = populated;
	cell->frozen = frozen;
	if (frozen != was_frozen)
		cells_emit(c,
		           &(struct cells_event){.type = frozen ? CELLS_EV_FROZEN : CELLS_EV_THAWED,
		                                 .cell = cell->path});
	if (cell->freeze_op.active && frozen == cell->freeze_op.want_frozen)
		op_finish(&cell->freeze_op, 0, NULL);
	if (cell->delete_op.active && !populated)
		delete_progress(c, cell); /* may free cell */
}

static void memory_changed(struct cells *c, struct cell *cell)
{
	uint64_t n = read_oom_kills(c, cell);
	if (n > cell->oom_kills)
		cells_emit(c, &(struct cells_event){.type = CELLS_EV_OOM_KILL,
		                                    .cell = cell->path,
		                                    .count = n - cell->oom_kills});
	cell->oom_kills = n;
}

static struct cell *find_wd(struct cell *cell, int wd, bool *is_memory)
{
	if (cell->wd_events == wd || cell->wd_memory == wd) {
		*is_memory = cell->wd_memory == wd;
		return cell;
	}
	struct cell *ch;
	list_for_each(ch, &cell->children, sibling) {
		struct cell *f = find_wd(ch, wd, is_memory);
		if (f)
			return f;
	}
	return NULL;
}

static void watch_one(int wd, uint32_t mask, void *data)
{
	struct cells *c = data;
	bool is_memory = false;
	struct cell *cell = mask & IN_IGNORED ? NULL : find_wd(&c->top, wd, &is_memory);
	if (!cell)
		return;
	if (is_memory)
		memory_changed(c, cell);
	else
		cell_state_changed(c, cell);
}

void cells_watch_event(struct ev_source *src, uint32_t events)
{
	(void)events;
	inotify_drain(src->fd, watch_one, src->data);
}

/* ---- create and update ------------------------------------------------------- */

/* The first set limit whose controller is not in have, named in err. */
static int check_controllers(const char *path, const struct cell_limits *l, uint32_t have,
                             const char *why, struct err *err)
{
	for (int k = 0; k < CELL_LIMIT_COUNT; k++) {
		if (!(l->set & (1u << k)))
			continue;
		if (!(cells_controllers_parse(cell_limit_controller(k)) & ~have))
			continue;
		return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		               "cell \"%s\": %s: controller %s is not enabled%s", path,
		               cell_limit_name(k), cell_limit_controller(k), why);
	}
	return 0;
}

static int write_limits(struct cells *c, struct cell *cell, const struct cell_limits *l,
                        struct err *err)
{
	for (int k = 0; k < CELL_LIMIT_COUNT; k++) {
		char path[PATH_MAX], value[CELL_CPUSET_LEN + 32];
		if (!(l->set & (1u << k)))
			continue;
		int r = cell_limit_format(l, k, value, sizeof(value));
		if (r == 0)
			r = cells_cell_file(c, cell, cell_limit_name(k), path, sizeof(path));
		if (r == 0)
			r = file_write_str(path, value);
		if (r < 0)
			return err_set_errno(err, r, "cell \"%s\": %s: %s", cell->path,
			                     cell_limit_name(k), strerror(-r));
		/* Remember what is in force, field by field. */
		struct cell_limits *m = &cell->limits;
		switch ((enum cell_limit)k) {
		case CELL_CPU_WEIGHT:
			m->cpu_weight = l->cpu_weight;
			break;
		case CELL_CPU_MAX:
			m->cpu_quota_us = l->cpu_quota_us;
			m->cpu_period_us = l->cpu_period_us;
			break;
		case CELL_CPUSET_CPUS:
			memcpy(m->cpuset_cpus, l->cpuset_cpus, CELL_CPUSET_LEN);
			break;
		case CELL_CPUSET_MEMS:
			memcpy(m->cpuset_mems, l->cpuset_mems, CELL_CPUSET_LEN);
			break;
		case CELL_MEMORY_MIN:
			m->memory_min = l->memory_min;
			break;
		case CELL_MEMORY_LOW:
			m->memory_low = l->memory_low;
			break;
		case CELL_MEMORY_HIGH:
			m->memory_high = l->memory_high;
			break;
		case CELL_MEMORY_MAX:
			m->memory_max = l->memory_max;
			break;
		case CELL_MEMORY_SWAP_MAX:
			m->memory_swap_max = l->memory_swap_max;
			break;
		case CELL_PIDS_MAX:
			m->pids_max = l->pids_max;
			break;
		case CELL_IO_WEIGHT:
			m->io_weight = l->io_weight;
			break;
		case CELL_LIMIT_COUNT:
			break;
		}
		m->set |= 1u << k;
	}
	return 0;
}

struct cell *cells_cell_alloc(struct cells *c, struct cell *parent, const char *name,
                              const char *path)
{
	struct cell *cell = calloc(1, sizeof(*cell));
	if (!cell)
		return NULL;
	*cell = (struct cell){.parent = parent,
	                      .depth = parent->depth + 1,
	                      .owner = c,
	                      .timer = {.fd = -1},
	                      .wd_events = -1,
	                      .wd_memory = -1};
	list_init(&cell->execs);
	list_init(&cell->children);
	list_init(&cell->sibling);
	str_copy(cell->name, sizeof(cell->name), name);
	str_copy(cell->path, sizeof(cell->path), path);
	return cell;
}

int cell_create(struct cells *c, const char *path, const struct cell_limits *limits,
                struct err *err)
{
	static const struct cell_limits no_limits;
	char parent_path[CELLS_PATH_MAX], pdir[PATH_MAX], dir[PATH_MAX];
	int r = cell_path_check(path, err);
	if (r < 0)
		return r;
	if (!limits)
		limits = &no_limits;
	if ((r = cell_limits_validate(limits, err)) < 0) {
		cells_err_prefix(err, "cell", path);
		return r;
	}
	if (c->ncells >= CELLS_MAX)
		return err_set(err, -ENOSPC, ERR_RESOURCE_EXHAUSTED,
		               "cell \"%s\": kin already has %d cells", path, CELLS_MAX);
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	struct cell *parent = &c->top;
	if (slash) {
		snprintf(parent_path, sizeof(parent_path), "%.*s", (int)(slash - path), path);
		parent = cells_lookup(c, parent_path, NULL);
		if (!parent)
			return err_set(err, -ENOENT, ERR_NOT_FOUND,
			               "cell \"%s\": parent cell \"%s\" not found", path,
			               parent_path);
	}
	/* First: what is below a parent being deleted is going too (a cell a
	 * killed kin left, removed by its successor): soon free, so retry. */
	if (parent->delete_op.active)
		return err_set(err, -EBUSY, ERR_UNAVAILABLE,
		               "cell \"%s\": its parent \"%s\" is being deleted; retry", path,
		               parent->path);
	struct cell *ch;
	list_for_each(ch, &parent->children, sibling)
		if (strcmp(ch->name, name) == 0)
			return err_set(err, -EEXIST, ERR_ALREADY_EXISTS,
			               "cell \"%s\" already exists", path);
	if ((r = cells_cell_dir(c, parent, pdir, sizeof(pdir))) < 0)
		return err_set_errno(err, r, "cell \"%s\": path too long", path);
	uint32_t avail = 0, enabled = 0;
	cells_read_controllers(pdir, "cgroup.controllers", &avail);
	cells_read_controllers(pdir, "cgroup.subtree_control", &enabled);
	if ((r = check_controllers(path, limits, avail, "", err)) < 0)
		return r;

	struct cell *cell = cells_cell_alloc(c, parent, name, path);
	if (!cell)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "cell \"%s\": out of memory",
		               path);
	cells_cell_dir(c, cell, dir, sizeof(dir));
	if (mkdir(dir, 0755) < 0) {
		r = -errno;
		free(cell);
		if (r == -EEXIST)
			return err_set(err, r, ERR_ALREADY_EXISTS,
			               "cell \"%s\": %s exists but kin did not make it", path, dir);
		return err_set_errno(err, r, "cell \"%s\": mkdir: %s", path, strerror(-r));
	}
	/* Children get every controller the parent has; a parent that runs
	 * processes itself refuses (EBUSY), leaving the child without them. */
	if (avail & ~enabled)
		cells_enable_controllers(pdir, avail & ~enabled);
	uint32_t have = 0;
	cells_read_controllers(dir, "cgroup.controllers", &have);
	r = check_controllers(path, limits, have,
	                      " (its parent runs processes, so it cannot delegate them)", err);
	if (r == 0)
		r = write_limits(c, cell, limits, err);
	if (r < 0) {
		rmdir(dir);
		free(cell);
		return r;
	}
	list_append(&parent->children, &cell->sibling);
	c->ncells++;
	cells_watch_add(c, cell);
	cells_emit(c, &(struct cells_event){.type = CELLS_EV_CELL_CREATED, .cell = cell->path});
	return 0;
}

int cell_limits_unavailable(struct cells *c, const char *path, const struct cell_limits *l,
                            uint32_t *ret_bits, struct err *err)
{
	char dir[PATH_MAX];
	struct cell *cell;
	int r = cells_get(c, path, &cell, err);
	if (r < 0)
		return r;
	uint32_t have = 0;
	cells_cell_dir(c, cell, dir, sizeof(dir));
	cells_read_controllers(dir, "cgroup.controllers", &have);
	*ret_bits = 0;
	for (int k = 0; k < CELL_LIMIT_COUNT; k++)
		if ((l->set & (1u << k)) &&
		    (cells_controllers_parse(cell_limit_controller(k)) & ~have))
			*ret_bits |= 1u << k;
	return 0;
}

int cell_update(struct cells *c, const char *path, const struct cell_limits *limits,
                struct err *err)
{
	char dir[PATH_MAX];
	struct cell *cell;
	int r0 = cells_get(c, path, &cell, err);
	if (r0 < 0)
		return r0;
	if (!limits)
		return 0;
	int r = cell_limits_validate(limits, err);
	if (r < 0) {
		cells_err_prefix(err, "cell", path);
		return r;
	}
	uint32_t have = 0;
	cells_cell_dir(c, cell, dir, sizeof(dir));
	cells_read_controllers(dir, "cgroup.controllers", &have);
	if ((r = check_controllers(path, limits, have, "", err)) < 0)
		return r;
	return write_limits(c, cell, limits, err);
}

/* ---- delete ------------------------------------------------------------- */

/* The cgroups a cell's own processes made below it (a service with
 * Delegate=, systemd in a container), emptied by now: removed depth
 * first, as rmdir of the cell needs. */
static void remove_foreign(int fd0, unsigned depth)
{
	DIR *d = fdopendir(fd0);
	if (!d) {
		close(fd0);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int fd =
		    openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && depth < CELLS_FOREIGN_DEPTH_MAX)
			remove_foreign(fd, depth + 1);
		else if (fd >= 0)
			close(fd);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* Children first (rmdir needs empty directories); frees what it removed. */
static int remove_subtree(struct cells *c, struct cell *cell, struct err *err)
{
	char dir[PATH_MAX], path[CELLS_PATH_MAX];
	while (!list_is_empty(&cell->children)) {
		int r =
		    remove_subtree(c, list_first_entry(&cell->children, struct cell, sibling), err);
		if (r < 0)
			return r;
	}
	cells_cell_dir(c, cell, dir, sizeof(dir));
	int r = rmdir(dir) < 0 ? -errno : 0;
	if (r == -EBUSY) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			remove_foreign(fd, 0);
		r = rmdir(dir) < 0 ? -errno : 0;
	}
	if (r < 0 && r != -ENOENT)
		return err_set_errno(err, r, "cell \"%s\": rmdir: %s", cell->path, strerror(-r));
	watch_remove(c, cell);
	exec_free_all(c, cell);
	if (cell->timer.fd >= 0) {
		ev_del(c->loop, &cell->timer);
		close(cell->timer.fd);
	}
	struct err cancelled;
	err_set(&cancelled, -ECANCELED, ERR_CANCELLED, "cell \"%s\" was deleted", cell->path);
	op_finish(&cell->freeze_op, -ECANCELED, &cancelled);
	list_remove(&cell->sibling);
	c->ncells--;
	str_copy(path, sizeof(path), cell->path);
	free(cell);
	cells_emit(c, &(struct cells_event){.type = CELLS_EV_CELL_DELETED, .cell = path});
	return 0;
}

int cell_delete(struct cells *c, const char *path, bool force, cell_done_fn done, void *data,
                struct err *err)
{
	struct cell *cell;
	int r0 = cells_get(c, path, &cell, err);
	if (r0 < 0)
		return r0;
	if (cell->delete_op.active)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
		               "cell \"%s\" is already being deleted", path);
	bool populated = false, frozen = false;
	int r = cells_read_events(c, cell, &populated, &frozen);
	if (r < 0)
		return err_set_errno(err, r, "cell \"%s\": cgroup.events: %s", path, strerror(-r));
	if (!force) {
		if (!list_is_empty(&cell->children))
			return err_set(err, -ENOTEMPTY, ERR_FAILED_PRECONDITION,
			               "cell \"%s\" has child cells (delete them, or force)", path);
		if (populated || exec_any_running(cell))
			return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
			               "cell \"%s\" has running processes (stop them, or "
			               "force)",
			               path);
		return remove_subtree(c, cell, err);
	}
	exec_no_restart_subtree(cell);
	if (!populated && !exec_any_running(cell))
		return remove_subtree(c, cell, err);
	char file[PATH_MAX];
	cells_cell_file(c, cell, "cgroup.kill", file, sizeof(file));
	if ((r = file_write_str(file, "1")) < 0)
		return err_set_errno(err, r, "cell \"%s\": cgroup.kill: %s", path, strerror(-r));
	if ((r = op_arm(c, cell, CELLS_DELETE_TIMEOUT_MS)) < 0)
		return err_set_errno(err, r, "cell \"%s\": timer: %s", path, strerror(-r));
	cell->delete_op = (struct cell_op){.done = done, .data = data, .active = true};
	return 1;
}

/* ---- freeze, kill, list -------------------------------------------------- */

int cell_freeze(struct cells *c, const char *path, bool freeze, cell_done_fn done, void *data,
                struct err *err)
{
	char file[PATH_MAX];
	struct cell *cell;
	int r0 = cells_get(c, path, &cell, err);
	if (r0 < 0)
		return r0;
	if (cell->freeze_op.active)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
		               "cell \"%s\": a freeze or thaw is already pending", path);
	cells_cell_file(c, cell, "cgroup.freeze", file, sizeof(file));
	int r = file_write_str(file, freeze ? "1" : "0");
	if (r < 0)
		return err_set_errno(err, r, "cell \"%s\": cgroup.freeze: %s", path, strerror(-r));
	cell_state_changed(c, cell); /* emits the event if it is already so */
	if (cell->frozen == freeze)
		return 0;
	if ((r = op_arm(c, cell, CELLS_FREEZE_TIMEOUT_MS)) < 0)
		return err_set_errno(err, r, "cell \"%s\": timer: %s", path, strerror(-r));
	cell->freeze_op =
	    (struct cell_op){.done = done, .data = data, .active = true, .want_frozen = freeze};
	return 1;
}

int cell_kill(struct cells *c, const char *path, struct err *err)
{
	char file[PATH_MAX];
	struct cell *cell;
	int r0 = cells_get(c, path, &cell, err);
	if (r0 < 0)
		return r0;
	cells_cell_file(c, cell, "cgroup.kill", file, sizeof(file));
	int r = file_write_str(file, "1");
	if (r < 0)
		return err_set_errno(err, r, "cell \"%s\": cgroup.kill: %s", path, strerror(-r));
	return 0;
}

/* Signals the processes listed in dir's cgroup.procs and below, walking
 * cgroupfs itself: a delegated cell's own sub-cgroups are not kin's. */
static int signal_tree(int dirfd, int sig, unsigned depth)
{
	int n = 0;
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		FILE *f = fdopen(fd, "r");
		if (!f) {
			close(fd);
			return -ENOMEM;
		}
		long pid;
		while (fscanf(f, "%ld", &pid) == 1)
			if (pid > 0 && kill((pid_t)pid, sig) == 0)
				n++;
		fclose(f);
	}
	if (depth >= CELLS_DEPTH_MAX * 2)
		return n;
	int dfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return n;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			continue;
		int r = signal_tree(sub, sig, depth + 1);
		close(sub);
		if (r > 0)
			n += r;
	}
	closedir(d);
	return n;
}

int cell_signal(struct cells *c, const char *path, int sig, struct err *err)
{
	char dir[PATH_MAX];
	struct cell *cell;
	int r = cells_get(c, path, &cell, err);
	if (r < 0)
		return r;
	if (sig == SIGKILL)
		return cell_kill(c, path, err);
	cells_cell_dir(c, cell, dir, sizeof(dir));
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(err, -errno, "cell \"%s\": %s: %m", path, dir);
	return signal_tree(fd, sig, 0);
}

void cells_fill_info(struct cells *c, struct cell *cell, struct cell_info *info)
{
	char dir[PATH_MAX];
	memset(info, 0, sizeof(*info));
	str_copy(info->path, sizeof(info->path), cell->path);
	info->depth = cell->depth;
	cells_read_events(c, cell, &info->populated, &info->frozen);
	info->nexec = exec_count(cell);
	cells_cell_dir(c, cell, dir, sizeof(dir));
	cells_read_controllers(dir, "cgroup.controllers", &info->controllers);
	info->limits = cell->limits;
}

static int visit(struct cells *c, struct cell *cell, cell_visit_fn fn, void *data)
{
	if (cell != &c->top) {
		struct cell_info info;
		cells_fill_info(c, cell, &info);
		int r = fn(&info, data);
		if (r < 0)
			return r;
	}
	struct cell *ch;
	list_for_each(ch, &cell->children, sibling) {
		int r = visit(c, ch, fn, data);
		if (r < 0)
			return r;
	}
	return 0;
}

int cell_list(struct cells *c, const char *path, cell_visit_fn fn, void *data, struct err *err)
{
	struct cell *cell = &c->top;
	if (path && *path) {
		int r = cells_get(c, path, &cell, err);
		if (r < 0)
			return r;
	}
	return visit(c, cell, fn, data);
}

static int kill_top(const struct cell_info *info, void *data)
{
	if (info->depth == 1)
		cell_kill(data, info->path, NULL);
	return 0;
}

void cell_kill_all(struct cells *c)
{
	cell_list(c, NULL, kill_top, c, NULL);
}
