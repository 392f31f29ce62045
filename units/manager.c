/* manager: the table of loaded units and what ties them together — loading
 * on first use, systemd's default and implicit dependencies, the reverse
 * links a stop follows, and the read side (list, status, cat). Jobs and
 * their order are job.c's; what a unit does when started is its type's. */
#include "units/units-int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

uint64_t units_now_realtime_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Every diag names its file (and line) itself. */
static void diag_log(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	(void)data, (void)file, (void)line;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_info("units: %s", msg);
}

static int refs_add(struct unit_refs *r, struct unit *x)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i] == x)
			return 0;
	struct unit **v = realloc(r->v, (r->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	r->v = v;
	v[r->n++] = x;
	return 0;
}

static void refs_clear(struct unit_refs *r)
{
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

struct unit *units_find(struct units *m, const char *name)
{
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		if (strcmp(u->name, name) == 0)
			return u;
		if (u->def && unit_strv_contains(&u->def->source.aliases, name))
			return u;
	}
	return NULL;
}

static const struct unit_ops *ops_for(enum unit_type t)
{
	switch (t) {
	case UNIT_SERVICE:
		return &units_service_ops;
	case UNIT_SOCKET:
		return &units_socket_ops;
	case UNIT_TIMER:
		return &units_timer_ops;
	default:
		return &units_target_ops;
	}
}

/* Loads (or reloads) u's definition from the search path. */
static void unit_load_def(struct units *m, struct unit *u)
{
	struct err err = {0};
	struct unit_def *d = NULL;
	int r = unit_load(&m->paths, u->name, &m->spec, diag_log, m, &d, &err);
	bool busy =
	    u->def &&
	    ((u->active != UNIT_ACTIVE_INACTIVE && u->active != UNIT_ACTIVE_FAILED) || u->job);
	u->load_error[0] = '\0';
	if (r < 0 && busy) {
		/* a unit file gone (or broken) under a running unit: it runs on
		 * with the definition it was started with, as systemd's does */
		str_copy(u->load_state, sizeof(u->load_state),
		         r == -ENOENT ? "not-found" : "error");
		str_copy(u->load_error, sizeof(u->load_error), err.msg);
		log_warn("units: %s; it keeps running with its old definition", err.msg);
		return;
	}
	struct unit_def *old = u->def;
	u->def = r < 0 ? NULL : d;
	if (old && u->def && u->ops && u->ops->rebind)
		u->ops->rebind(u, old);
	unit_def_free(old);
	if (r == -ENOENT) {
		str_copy(u->load_state, sizeof(u->load_state), "not-found");
		str_copy(u->load_error, sizeof(u->load_error), err.msg);
		return;
	}
	if (r < 0) {
		str_copy(u->load_state, sizeof(u->load_state), "error");
		str_copy(u->load_error, sizeof(u->load_error), err.msg);
		log_warn("units: %s", err.msg);
		return;
	}
	str_copy(u->load_state, sizeof(u->load_state), d->source.masked ? "masked" : "loaded");
}

struct unit *units_get(struct units *m, const char *name, struct err *err)
{
	struct unit_name n;
	if (unit_name_parse(name, &n, err) < 0)
		return NULL;
	if (n.instance && !*n.instance) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		        "unit \"%s\": a template needs an instance (NAME@INSTANCE%s)", name,
		        strrchr(name, '.'));
		return NULL;
	}
	struct unit *u = units_find(m, name);
	if (u)
		return u;
	if (m->nunits >= UNITS_MAX) {
		err_set(err, -E2BIG, ERR_RESOURCE_EXHAUSTED,
		        "unit \"%s\": more than %d units loaded", name, UNITS_MAX);
		return NULL;
	}
	if (m->nunits == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct unit **v = realloc(m->units, cap * sizeof(*v));
		if (!v) {
			err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
			return NULL;
		}
		m->units = v;
		m->cap = cap;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
		return NULL;
	}
	u->m = m;
	str_copy(u->name, sizeof(u->name), name);
	u->type = n.type;
	u->ops = ops_for(n.type);
	u->active = UNIT_ACTIVE_INACTIVE;
	str_copy(u->sub, sizeof(u->sub), "dead");
	unit_load_def(m, u);
	if (u->def && strcmp(u->def->name.full, name) != 0) {
		/* name was an alias: the unit is known by its own name */
		struct unit *own = units_find(m, u->def->name.full);
		if (own) {
			unit_def_free(u->def);
			free(u);
			return own;
		}
		str_copy(u->name, sizeof(u->name), u->def->name.full);
	}
	m->units[m->nunits++] = u;
	return u;
}

/* ---- dependencies --------------------------------------------------------- */

static void dep_add_name(struct units *m, struct unit *u, enum unit_dep kind, const char *name)
{
	struct err err = {0};
	struct unit *x = units_get(m, name, &err);
	if (!x) {
		log_info("units: %s: %s=%s: %s", u->name, unit_dep_name(kind), name, err.msg);
		return;
	}
	if (x == u)
		return;
	if (refs_add(&u->deps[kind], x) < 0)
		return;
	switch (kind) { /* the symmetric side */
	case UNIT_DEP_BEFORE:
		refs_add(&x->deps[UNIT_DEP_AFTER], u);
		break;
	case UNIT_DEP_AFTER:
		refs_add(&x->deps[UNIT_DEP_BEFORE], u);
		break;
	case UNIT_DEP_CONFLICTS:
		refs_add(&x->deps[UNIT_DEP_CONFLICTS], u);
		break;
	case UNIT_DEP_REQUIRES:
	case UNIT_DEP_BINDS_TO:
		refs_add(&x->rdeps[UNIT_RDEP_REQUIRED_BY], u);
		break;
	case UNIT_DEP_PART_OF:
		refs_add(&x->rdeps[UNIT_RDEP_PART_OF_ME], u);
		break;
	default:
		break;
	}
}

static void dep_add_list(struct units *m, struct unit *u, enum unit_dep kind,
                         const struct unit_strv *l)
{
	for (size_t i = 0; i < l->n; i++)
		dep_add_name(m, u, kind, l->v[i]);
}

/* The unit a socket or timer starts: Service=/Unit=, else the same name
 * as a service (dbus.socket → dbus.service, foo@x.timer → foo@x.service). */
void unit_triggered_name(const struct unit *u, char *buf, size_t size)
{
	const struct unit_def *d = u->def;
	const char *explicit = u->type == UNIT_SOCKET ? d->socket.service : d->timer.unit;
	if (explicit && *explicit) {
		str_copy(buf, size, explicit);
		return;
	}
	const char *dot = strrchr(u->name, '.');
	size_t stem = dot ? (size_t)(dot - u->name) : strlen(u->name);
	buf[0] = '\0';
	if (stem + sizeof(".service") <= size) {
		memcpy(buf, u->name, stem);
		memcpy(buf + stem, ".service", sizeof(".service"));
	}
}

/* systemd's default dependencies (systemd.special(7), systemd.service(5)). */
static void default_deps(struct units *m, struct unit *u)
{
	const struct unit_def *d = u->def;
	if (u->type == UNIT_TARGET) {
		/* after everything it pulls in that has default dependencies */
		for (int k = UNIT_DEP_WANTS; k <= UNIT_DEP_REQUIRES; k++)
			for (size_t i = 0; i < u->deps[k].n; i++) {
				struct unit *x = u->deps[k].v[i];
				if (!x->def || x->def->default_dependencies)
					dep_add_name(m, u, UNIT_DEP_AFTER, x->name);
			}
	}
	if (!d->default_dependencies)
		return;
	if (u->type == UNIT_SERVICE || u->type == UNIT_SOCKET || u->type == UNIT_TIMER) {
		dep_add_name(m, u, UNIT_DEP_REQUIRES, "sysinit.target");
		dep_add_name(m, u, UNIT_DEP_AFTER, "sysinit.target");
	}
	if (u->type == UNIT_SERVICE)
		dep_add_name(m, u, UNIT_DEP_AFTER, "basic.target");
	if (u->type == UNIT_SOCKET)
		dep_add_name(m, u, UNIT_DEP_BEFORE, "sockets.target");
	if (u->type == UNIT_TIMER) {
		dep_add_name(m, u, UNIT_DEP_BEFORE, "timers.target");
		if (d->timer.non_calendar)
			dep_add_name(m, u, UNIT_DEP_AFTER, "time-sync.target");
	}
	if (u->type != UNIT_DEVICE && strcmp(u->name, "shutdown.target") != 0) {
		dep_add_name(m, u, UNIT_DEP_CONFLICTS, "shutdown.target");
		dep_add_name(m, u, UNIT_DEP_BEFORE, "shutdown.target");
	}
}

static void resolve_deps(struct units *m, struct unit *u)
{
	u->deps_resolved = true;
	if (!u->def || u->def->source.masked)
		return;
	const struct unit_def *d = u->def;
	for (int k = 0; k < UNIT_DEP_COUNT; k++)
		dep_add_list(m, u, (enum unit_dep)k, &d->deps[k]);
	dep_add_list(m, u, UNIT_DEP_WANTS, &d->wants_dir);
	dep_add_list(m, u, UNIT_DEP_REQUIRES, &d->requires_dir);
	if (u->type == UNIT_SOCKET || u->type == UNIT_TIMER) {
		char t[UNIT_NAME_MAX + 1];
		unit_triggered_name(u, t, sizeof(t));
		if (t[0])
			dep_add_name(m, u, UNIT_DEP_BEFORE, t);
	}
	if (u->type == UNIT_SERVICE) {
		/* Sockets= (default: the socket of the same name, if there is one) */
		for (size_t i = 0; i < d->service.sockets.n; i++) {
			dep_add_name(m, u, UNIT_DEP_WANTS, d->service.sockets.v[i]);
			dep_add_name(m, u, UNIT_DEP_AFTER, d->service.sockets.v[i]);
		}
	}
	default_deps(m, u);
}

/* Resolves every unit loaded so far, and those that loads (a work list: no
 * recursion however deep the graph). */
static void resolve_all(struct units *m)
{
	for (size_t i = 0; i < m->nunits; i++)
		if (!m->units[i]->deps_resolved)
			resolve_deps(m, m->units[i]);
}

const char *unit_active_name(enum unit_active a)
{
	static const char *const names[] = {
	    [UNIT_ACTIVE_INACTIVE] = "inactive",
	    [UNIT_ACTIVE_ACTIVATING] = "activating",
	    [UNIT_ACTIVE_ACTIVE] = "active",
	    [UNIT_ACTIVE_RELOADING] = "reloading",
	    [UNIT_ACTIVE_DEACTIVATING] = "deactivating",
	    [UNIT_ACTIVE_FAILED] = "failed",
	};
	return a <= UNIT_ACTIVE_FAILED ? names[a] : "unknown";
}

void unit_set_active(struct unit *u, enum unit_active a, const char *sub)
{
	bool was = u->active == UNIT_ACTIVE_ACTIVE || u->active == UNIT_ACTIVE_RELOADING;
	bool is = a == UNIT_ACTIVE_ACTIVE || a == UNIT_ACTIVE_RELOADING;
	bool down = u->active == UNIT_ACTIVE_INACTIVE || u->active == UNIT_ACTIVE_FAILED;
	bool up = down && a != UNIT_ACTIVE_INACTIVE && a != UNIT_ACTIVE_FAILED;
	if (is && !was)
		u->active_enter_us = units_now_realtime_us();
	if (!is && was)
		u->inactive_enter_us = units_now_realtime_us();
	if (up)
		u->inactive_exit_us = units_now_realtime_us();
	bool changed = u->active != a || strcmp(u->sub, sub) != 0;
	u->active = a;
	str_copy(u->sub, sizeof(u->sub), sub);
	if (changed && u->m->on_change)
		u->m->on_change(u->m->on_change_data);
	/* OnUnitActiveSec=/OnUnitInactiveSec= count from these */
	if ((is != was || up) && u->type != UNIT_TIMER)
		timer_target_changed(u);
}

void unit_set_result(struct unit *u, const char *result)
{
	str_copy(u->result, sizeof(u->result), result);
}

bool unit_cell_holds(const char *cell, pid_t pid)
{
	char path[64], *text = NULL, needle[CELLS_PATH_MAX + 2];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (file_read_small(path, 8192, &text, NULL) < 0)
		return false;
	/* "0::/.../cells/system.slice/ssh.service[/sub]\n" */
	snprintf(needle, sizeof(needle), "/%s", cell);
	bool in = false;
	for (const char *p = strstr(text, needle); p && !in; p = strstr(p + 1, needle)) {
		char end = p[strlen(needle)];
		in = end == '\n' || end == '/' || end == '\0';
	}
	free(text);
	return in;
}

int unit_cell_path(const struct unit *u, char *buf, size_t size)
{
	if (cell_name_valid(u->name)) {
		if (snprintf(buf, size, "%s/%s", u->m->slice, u->name) >= (int)size)
			return -ENAMETOOLONG;
		return 0;
	}
	/* A name cgroups would take but cells' names do not (too long, '\\',
	 * ':'): a stable short name of its hash. */
	uint32_t h = 2166136261u;
	for (const char *p = u->name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	if (snprintf(buf, size, "%s/unit-%08x.%s", u->m->slice, h, unit_type_name(u->type)) >=
	    (int)size)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- the manager ------------------------------------------------------------ */

static void read_id(const char *path, char *buf, size_t size)
{
	char *text = NULL;
	buf[0] = '\0';
	if (file_read_small(path, 256, &text, NULL) < 0)
		return;
	str_copy(buf, size, str_trim(text));
	free(text);
}

static int copy_env(struct units *m, const struct units_config *cfg)
{
	m->env = calloc(cfg->nenv + 1, sizeof(char *));
	if (!m->env)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->nenv; i++)
		if (!(m->env[m->nenv++] = strdup(cfg->env[i])))
			return -ENOMEM;
	return 0;
}

int units_new(struct ev_loop *loop, struct child_table *children, struct cells *cells,
              const struct units_config *cfg, struct units **ret, struct err *err)
{
	int keep_fd = cfg->notify_fd ? *cfg->notify_fd : -1;
	struct units *m = calloc(1, sizeof(*m));
	if (!m) {
		if (keep_fd >= 0)
			close(keep_fd);
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	}
	m->loop = loop;
	m->children = children;
	m->cells = cells;
	m->cfg = *cfg;
	m->dispatch_src.fd = -1;
	m->started_us = units_now_realtime_us();
	str_copy(m->root, sizeof(m->root), cfg->root && strcmp(cfg->root, "/") ? cfg->root : "");
	str_copy(m->slice, sizeof(m->slice), cfg->slice ? cfg->slice : "system.slice");
	if (!cfg->log_dir)
		snprintf(m->log_dir, sizeof(m->log_dir), "%s/var/log/kin", m->root);
	else
		str_copy(m->log_dir, sizeof(m->log_dir), cfg->log_dir);
	snprintf(m->run_dir, sizeof(m->run_dir), "%s",
	         cfg->run_dir ? cfg->run_dir : "/run/systemd");
	/* First: a socket handed over is the manager's from here on. */
	char path[512];
	snprintf(path, sizeof(path), "%s/notify", m->run_dir);
	int r = units_notify_new(m, path, keep_fd, &m->notify, err);
	if (r < 0) {
		units_free(m);
		return r;
	}
	r = unit_paths_init(&m->paths, m->root);
	if (r >= 0 && cfg->extra_dirs && cfg->extra_dirs[0]) {
		/* only those: never the machine's own units by accident */
		size_t n = 0;
		while (cfg->extra_dirs[n])
			n++;
		m->paths.ndirs = 0;
		for (size_t i = n; r >= 0 && i > 0; i--)
			r = unit_paths_prepend(&m->paths, cfg->extra_dirs[i - 1]);
	} else if (r >= 0 && m->paths.ndirs + 1 <= UNIT_DIRS_MAX) {
		/* what generators wrote, after /run/systemd/system (systemd's place) */
		memmove(m->paths.dirs[3], m->paths.dirs[2],
		        (m->paths.ndirs - 2) * sizeof(m->paths.dirs[0]));
		str_copy(m->paths.dirs[2], sizeof(m->paths.dirs[0]), "/run/systemd/generator");
		m->paths.ndirs++;
	}
	if (r < 0) {
		units_free(m);
		return err_set_errno(err, r, "units: search path: %s", strerror(-r));
	}
	if (copy_env(m, cfg) < 0) {
		units_free(m);
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	}
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	snprintf(path, sizeof(path), "%s/etc/machine-id", m->root);
	read_id(path, m->machine_id, sizeof(m->machine_id));
	read_id("/proc/sys/kernel/random/boot_id", m->boot_id, sizeof(m->boot_id));
	struct utsname un;
	if (uname(&un) == 0)
		str_copy(m->kernel_release, sizeof(m->kernel_release), un.release);
	m->spec = (struct unit_spec_ctx){.hostname = m->hostname,
	                                 .machine_id = m->machine_id,
	                                 .boot_id = m->boot_id,
	                                 .kernel_release = m->kernel_release};
	r = cell_create(cells, m->slice, NULL, err);
	if (r < 0 && r != -EEXIST) {
		units_free(m);
		return r;
	}
	if ((r = units_dispatch_init(m)) < 0) {
		units_free(m);
		return err_set_errno(err, r, "units: eventfd: %s", strerror(-r));
	}
	*ret = m;
	return 0;
}

void units_free(struct units *m)
{
	if (!m)
		return;
	while (m->jobs) {
		struct job *j = m->jobs;
		m->jobs = j->next;
		for (size_t i = 0; i < j->nwaiters; i++)
			if (j->waiters[i].done) {
				struct err e = {0};
				err_set(&e, -ECANCELED, ERR_CANCELLED,
				        "unit \"%s\": kin is stopping", j->u->name);
				j->waiters[i].done(-ECANCELED, &e, j->waiters[i].data);
			}
		j->u->job = NULL;
		free(j);
	}
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		if (u->ops && u->ops->free)
			u->ops->free(u);
		for (int k = 0; k < UNIT_DEP_COUNT; k++)
			refs_clear(&u->deps[k]);
		for (int k = 0; k < UNIT_RDEP_COUNT; k++)
			refs_clear(&u->rdeps[k]);
		unit_def_free(u->def);
		free(u);
	}
	free(m->units);
	units_notify_free(m->notify);
	units_dispatch_free(m);
	for (size_t i = 0; i < m->nenv; i++)
		free(m->env[i]);
	free(m->env);
	free(m);
}

const struct unit_paths *units_paths(const struct units *m)
{
	return &m->paths;
}

struct unit *units_boot_target(struct units *m, struct err *err)
{
	const char *target = m->cfg.default_target ? m->cfg.default_target : "default.target";
	struct unit *u = units_get(m, target, err);
	if (!u)
		return NULL;
	if (!u->def) {
		log_warn("units: %s: %s; booting multi-user.target", target, u->load_error);
		if (!(u = units_get(m, "multi-user.target", err)))
			return NULL;
	}
	for (size_t i = 0; m->cfg.boot_wants && m->cfg.boot_wants[i]; i++) {
		struct unit *w = units_get(m, m->cfg.boot_wants[i], NULL);
		if (w)
			dep_add_name(m, u, UNIT_DEP_WANTS, w->name);
	}
	resolve_all(m);
	return u;
}

int units_boot(struct units *m, struct err *err)
{
	/* again: a killed kin's slice, there at units_new, may be gone now */
	int r = cell_create(m->cells, m->slice, NULL, err);
	if (r < 0 && r != -EEXIST)
		return r;
	err_clear(err);
	struct unit *u = units_boot_target(m, err);
	if (!u)
		return -EINVAL;
	log_info("units: starting %s (%zu units loaded)", u->name, m->nunits);
	struct job *j;
	r = units_job_add(m, u, JOB_START, &j, err);
	if (r < 0)
		return r;
	units_dispatch_later(m);
	return 0;
}

void units_shutdown(struct units *m, void (*done)(void *data), void *data)
{
	m->shutting_down = true;
	m->shutdown_done = done;
	m->shutdown_data = data;
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		if (u->active != UNIT_ACTIVE_INACTIVE && u->active != UNIT_ACTIVE_FAILED) {
			struct job *j;
			units_job_add(m, u, JOB_STOP, &j, NULL);
		}
	}
	units_dispatch_later(m);
}

bool units_idle(const struct units *m)
{
	return !m->jobs;
}

int units_daemon_reload(struct units *m, struct err *err)
{
	(void)err;
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		unit_load_def(m, u);
		for (int k = 0; k < UNIT_DEP_COUNT; k++)
			refs_clear(&u->deps[k]);
		for (int k = 0; k < UNIT_RDEP_COUNT; k++)
			refs_clear(&u->rdeps[k]);
		u->deps_resolved = false;
	}
	resolve_all(m);
	log_info("units: reloaded %zu units", m->nunits);
	return 0;
}

/* ---- the read side ------------------------------------------------------------ */

static void fill_status(struct unit *u, struct unit_status *st)
{
	memset(st, 0, sizeof(*st));
	str_copy(st->name, sizeof(st->name), u->name);
	st->type = u->type;
	if (u->def && u->def->description)
		str_copy(st->description, sizeof(st->description), u->def->description);
	str_copy(st->load_state, sizeof(st->load_state), u->load_state);
	str_copy(st->load_error, sizeof(st->load_error), u->load_error);
	st->active = u->active;
	str_copy(st->sub, sizeof(st->sub), u->sub);
	str_copy(st->result, sizeof(st->result), u->result[0] ? u->result : "success");
	if (u->def && u->def->source.fragment)
		str_copy(st->fragment, sizeof(st->fragment), u->def->source.fragment);
	if (unit_file_state(&u->m->paths, u->name, st->unit_file_state,
	                    sizeof(st->unit_file_state)) < 0)
		st->unit_file_state[0] = '\0';
	if (u->job)
		str_copy(st->job, sizeof(st->job), job_type_name(u->job->type));
	str_copy(st->condition, sizeof(st->condition), u->condition);
	st->active_enter_us = u->active_enter_us;
	st->inactive_enter_us = u->inactive_enter_us;
	if (u->triggered_by)
		str_copy(st->triggered_by, sizeof(st->triggered_by), u->triggered_by->name);
	if (u->def && u->type == UNIT_SERVICE) {
		static const char *const types[] = {
		    [UNIT_SVC_SIMPLE] = "simple",   [UNIT_SVC_EXEC] = "exec",
		    [UNIT_SVC_FORKING] = "forking", [UNIT_SVC_ONESHOT] = "oneshot",
		    [UNIT_SVC_NOTIFY] = "notify",   [UNIT_SVC_IDLE] = "idle",
		    [UNIT_SVC_DBUS] = "dbus"};
		static const char *const restarts[] = {[UNIT_RESTART_NO] = "no",
		                                       [UNIT_RESTART_ALWAYS] = "always",
		                                       [UNIT_RESTART_ON_SUCCESS] = "on-success",
		                                       [UNIT_RESTART_ON_FAILURE] = "on-failure",
		                                       [UNIT_RESTART_ON_ABNORMAL] = "on-abnormal",
		                                       [UNIT_RESTART_ON_ABORT] = "on-abort",
		                                       [UNIT_RESTART_ON_WATCHDOG] = "on-watchdog"};
		const struct unit_service *c = &u->def->service;
		st->can_reload = c->exec_reload.n > 0;
		if ((size_t)c->type < ARRAY_SIZE(types))
			str_copy(st->service_type, sizeof(st->service_type), types[c->type]);
		if ((size_t)c->restart < ARRAY_SIZE(restarts))
			str_copy(st->restart, sizeof(st->restart), restarts[c->restart]);
	}
	if (u->ops && u->ops->status)
		u->ops->status(u, st);
}

int units_status(struct units *m, const char *name, struct unit_status *st, struct err *err)
{
	struct unit *u = units_get(m, name, err);
	if (!u)
		return -EINVAL;
	if (!u->def && u->active == UNIT_ACTIVE_INACTIVE && !u->job)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\" not found: %s", u->name,
		               u->load_error[0] ? u->load_error : "no unit file");
	resolve_all(m);
	fill_status(u, st);
	return 0;
}

struct list_files_ctx {
	struct units *m;
	units_visit_fn fn;
	void *data;
};

static int list_file(const char *name, const char *state, const char *path, void *data)
{
	struct list_files_ctx *c = data;
	(void)path;
	if (units_find(c->m, name))
		return 0;
	struct unit_status st = {0};
	str_copy(st.name, sizeof(st.name), name);
	str_copy(st.load_state, sizeof(st.load_state), "not-loaded");
	str_copy(st.unit_file_state, sizeof(st.unit_file_state), state);
	str_copy(st.sub, sizeof(st.sub), "dead");
	str_copy(st.result, sizeof(st.result), "success");
	st.type = unit_type_from_suffix(name);
	return c->fn(&st, c->data);
}

int units_list(struct units *m, bool all, units_visit_fn fn, void *data)
{
	struct unit_status st;
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		if (!all && u->active == UNIT_ACTIVE_INACTIVE && !u->job)
			continue;
		fill_status(u, &st);
		int r = fn(&st, data);
		if (r < 0)
			return r;
	}
	if (!all)
		return 0;
	struct list_files_ctx c = {m, fn, data};
	return unit_files_list(&m->paths, list_file, &c);
}

static int cat_file(char **text, size_t *len, const char *path)
{
	char *body = NULL;
	size_t n = 0;
	int r = file_read_regular(path, UNIT_FILE_MAX, &body, &n);
	if (r < 0)
		return r;
	size_t add = strlen(path) + n + 8;
	char *t = realloc(*text, *len + add + 1);
	if (!t) {
		free(body);
		return -ENOMEM;
	}
	*text = t;
	*len += (size_t)snprintf(t + *len, add + 1, "%s# %s\n%.*s", *len ? "\n" : "", path, (int)n,
	                         body);
	free(body);
	return 0;
}

int units_cat(struct units *m, const char *name, char **ret_text, struct err *err)
{
	struct unit *u = units_get(m, name, err);
	if (!u)
		return -EINVAL;
	if (!u->def)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\": %s", name,
		               u->load_error[0] ? u->load_error : "not found");
	char *text = NULL;
	size_t len = 0;
	const struct unit_source *s = &u->def->source;
	int r = 0;
	if (s->fragment && *s->fragment)
		r = cat_file(&text, &len, s->fragment);
	for (size_t i = 0; r >= 0 && i < s->dropins.n; i++)
		r = cat_file(&text, &len, s->dropins.v[i]);
	if (r < 0) {
		free(text);
		return err_set_errno(err, r, "unit \"%s\": %s", name, strerror(-r));
	}
	if (!text && !(text = strdup(s->masked ? "# masked\n" : "# built into kin\n")))
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	*ret_text = text;
	return 0;
}

int units_log_ref(struct units *m, const char *name, char *cell, size_t cell_size, char *exec,
                  size_t exec_size, struct err *err)
{
	struct unit *u = units_get(m, name, err);
	if (!u)
		return -EINVAL;
	if (u->type != UNIT_SERVICE)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit \"%s\": only services have output", name);
	if (unit_cell_path(u, cell, cell_size) < 0)
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "unit \"%s\": name too long", name);
	str_copy(exec, exec_size, "main");
	return 0;
}

int units_job(struct units *m, const char *name, enum units_job_type type, bool no_block,
              units_job_done_fn done, void *data, struct err *err)
{
	struct unit *u = units_get(m, name, err);
	if (!u)
		return -EINVAL;
	resolve_all(m);
	if (!u->def)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\": %s", name,
		               u->load_error[0] ? u->load_error : "not found");
	if (u->def->source.masked && type != UNITS_JOB_STOP)
		return err_set(err, -ESHUTDOWN, ERR_FAILED_PRECONDITION, "unit \"%s\" is masked",
		               name);
	if (m->shutting_down && type != UNITS_JOB_STOP)
		return err_set(err, -ESHUTDOWN, ERR_UNAVAILABLE,
		               "unit \"%s\": kin is shutting down", name);
	bool active = u->active == UNIT_ACTIVE_ACTIVE || u->active == UNIT_ACTIVE_RELOADING ||
	              u->active == UNIT_ACTIVE_ACTIVATING;
	enum job_type jt;
	switch (type) {
	case UNITS_JOB_START:
		if (u->def->refuse_manual_start)
			return err_set(
			    err, -EPERM, ERR_FAILED_PRECONDITION,
			    "unit \"%s\" may not be started by hand (RefuseManualStart=)", name);
		jt = JOB_START;
		break;
	case UNITS_JOB_STOP:
		if (u->def->refuse_manual_stop)
			return err_set(err, -EPERM, ERR_FAILED_PRECONDITION,
			               "unit \"%s\" may not be stopped by hand (RefuseManualStop=)",
			               name);
		jt = JOB_STOP;
		break;
	case UNITS_JOB_RESTART:
		jt = JOB_RESTART;
		break;
	case UNITS_JOB_TRY_RESTART:
		if (!active)
			return 0;
		jt = JOB_RESTART;
		break;
	case UNITS_JOB_RELOAD:
		if (!u->ops->reload || (u->type == UNIT_SERVICE && !u->def->service.exec_reload.n))
			return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
			               "unit \"%s\" cannot be reloaded (no ExecReload=)", name);
		if (!active)
			return err_set(err, -ENOTCONN, ERR_FAILED_PRECONDITION,
			               "unit \"%s\" is not active, cannot reload", name);
		jt = JOB_RELOAD;
		break;
	case UNITS_JOB_RELOAD_OR_RESTART:
	case UNITS_JOB_TRY_RELOAD_OR_RESTART:
		if (!active && type == UNITS_JOB_TRY_RELOAD_OR_RESTART)
			return 0;
		jt = active && u->type == UNIT_SERVICE && u->def->service.exec_reload.n
		         ? JOB_RELOAD
		         : (active ? JOB_RESTART : JOB_START);
		break;
	default:
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit \"%s\": unknown job type",
		               name);
	}
	struct job *j;
	int r = units_job_add(m, u, jt, &j, err);
	if (r < 0)
		return r;
	if (!no_block && done && (r = job_wait_add(j, done, data)) < 0)
		return err_set(err, r, ERR_RESOURCE_EXHAUSTED,
		               "unit \"%s\": too many callers wait for its job", name);
	units_dispatch_later(m);
	return no_block || !done ? 0 : 1;
}
