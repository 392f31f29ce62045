/* zone: the zones a kin runs — the sealed copy of kin, the cell, which
 * /30 link and delegated sub-range of our subnet each zone holds (net/
 * cuts them and keeps the table), stop and kill, and the cleanup that
 * leaves nothing behind when a zone ends. A spec's checks and the zone
 * kin's command line are in spec.c, its output in log.c. See zone.h. */
#include "zone/zone-int.h"
#include "net/net.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

const char *zone_state_name(enum zone_state s)
{
	return s == ZONE_RUNNING    ? "running"
	       : s == ZONE_STOPPING ? "stopping"
	       : s == ZONE_STARTING ? "starting"
	                            : "gone";
}

/* Made once, reused: a sealed copy of kin that nothing can change (the
 * running binary's is the process's, shared with a re-exec). */
static int exe_memfd(struct zones *z)
{
	int self, r;
	if (z->exe_fd >= 0)
		return 0;
	if (z->exec_self) {
		z->exe_fd = open(z->self, O_RDONLY | O_CLOEXEC);
		return z->exe_fd < 0 ? -errno : 0;
	}
	if (strcmp(z->self, "/proc/self/exe") != 0)
		return file_sealed_copy(z->self, "kin", &z->exe_fd);
	if ((r = self_copy(&self, NULL)) < 0)
		return r;
	z->exe_fd = fcntl(self, F_DUPFD_CLOEXEC, 3);
	return z->exe_fd < 0 ? -errno : 0;
}

void zones_keep_exe(struct zones *z)
{
	if (z->exe_fd < 0 && !z->exec_self && strcmp(z->self, "/proc/self/exe") == 0 &&
	    self_copy_have() && exe_memfd(z) < 0)
		log_warn("zones: cannot keep the sealed copy of kin: %m");
}

int zones_new(struct ev_loop *loop, struct child_table *children, struct cells *cells,
              const struct zones_config *cfg, const struct zone_events *ev, struct zones **ret,
              struct err *err)
{
	struct zones_config def = {0};
	if (!cfg)
		cfg = &def;
	struct zones *z = calloc(1, sizeof(*z));
	if (!z)
		return err_set(err, -ENOMEM, ERR_INTERNAL, "zones: out of memory");
	*z = (struct zones){.loop = loop,
	                    .children = children,
	                    .cells = cells,
	                    .depth = cfg->depth,
	                    .depth_max = cfg->depth_max ? cfg->depth_max : ZONE_DEPTH_MAX_DEFAULT,
	                    .stop_timeout_ms =
	                        cfg->stop_timeout_ms ? cfg->stop_timeout_ms : ZONE_STOP_TIMEOUT_MS,
	                    .exe_fd = -1,
	                    .exec_self = cfg->exec_self};
	list_init(&z->list);
	if (ev)
		z->ev = *ev;
	const char *subnet = cfg->subnet       ? cfg->subnet
	                     : cfg->depth == 0 ? ZONE_SUBNET_DEFAULT
	                                       : "none";
	uint32_t base = 0;
	unsigned prefix = 0;
	z->has_subnet = strcmp(subnet, "none") != 0;
	int r = z->has_subnet ? net_subnet_parse(subnet, &base, &prefix) : 0;
	if (r < 0) {
		free(z);
		return err_set(err, r, ERR_INVALID_ARGUMENT,
		               "zones: subnet \"%s\" is not an IPv4 network a.b.c.d/8..30 with its "
		               "host bits clear",
		               subnet);
	}
	z->log_bytes = cfg->log_bytes ? cfg->log_bytes : ZONE_LOG_BYTES_DEFAULT;
	if (z->log_bytes < ZONE_LOG_BYTES_MIN || z->log_bytes > ZONE_LOG_BYTES_MAX) {
		free(z);
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zones: log size %zu is out of range (%d to %d bytes)",
		               cfg->log_bytes, ZONE_LOG_BYTES_MIN, ZONE_LOG_BYTES_MAX);
	}
	if (z->depth > z->depth_max) {
		unsigned depth = z->depth, max = z->depth_max;
		free(z);
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "zones: depth %u is past the limit %u", depth, max);
	}
	if (str_copy(z->self, sizeof(z->self), cfg->self ? cfg->self : "/proc/self/exe") < 0 ||
	    str_copy(z->state_dir, sizeof(z->state_dir),
	             cfg->state_dir ? cfg->state_dir : "/run/kin/zones") < 0 ||
	    str_copy(z->log_level, sizeof(z->log_level), cfg->log_level ? cfg->log_level : "") <
	        0 ||
	    str_copy(z->image_store, sizeof(z->image_store),
	             cfg->image_store ? cfg->image_store : "") < 0 ||
	    str_copy(z->reconnect_dir, sizeof(z->reconnect_dir),
	             cfg->reconnect_dir ? cfg->reconnect_dir : "") < 0) {
		free(z);
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "zones: a configured path is too long");
	}
	snprintf(z->scratch, sizeof(z->scratch), "%s/.root", z->state_dir);
	if (cfg->keeper)
		z->keeper = *cfg->keeper;
	if (z->has_subnet && net_subnet_init(&z->subnet, base, prefix) < 0) {
		free(z);
		return err_set(err, -ENOMEM, ERR_INTERNAL, "zones: out of memory");
	}
	*ret = z;
	return 0;
}

int zone_reconnect_addr(const struct zones *z, const char *name, struct sockaddr_un *ret)
{
	*ret = (struct sockaddr_un){.sun_family = AF_UNIX};
	return snprintf(ret->sun_path, sizeof(ret->sun_path), "%s/%s.sock", z->reconnect_dir,
	                name) >= (int)sizeof(ret->sun_path)
	           ? -ENAMETOOLONG
	           : 0;
}

/* The zone kin's reconnect socket, bound at reconnect_dir/NAME.sock (one
 * a killed kin's zone of that name left is replaced): -1 with a log line
 * when it cannot be, and the zone is then not adoptable. */
static int reconnect_listen(struct zones *z, struct zone *x)
{
	struct sockaddr_un sa;
	if (!z->reconnect_dir[0])
		return -1;
	int r = zone_reconnect_addr(z, x->info.name, &sa);
	int fd = -1;
	if (r == 0)
		r = mkdir_p(z->reconnect_dir, 0700);
	if (r == 0 && (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		r = -errno;
	if (r == 0) {
		(void)unlink(sa.sun_path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    chmod(sa.sun_path, 0600) < 0 || listen(fd, 4) < 0)
			r = -errno;
	}
	if (r < 0) {
		log_warn("zone \"%s\": no reconnect socket in %s (%s): it cannot be adopted if kin "
		         "is killed",
		         x->info.name, z->reconnect_dir, strerror(-r));
		if (fd >= 0) {
			close(fd);
			(void)unlink(sa.sun_path);
		}
		return -1;
	}
	x->reconnect = true;
	return fd;
}

static void reconnect_unlink(struct zone *x)
{
	struct sockaddr_un sa;
	if (x->reconnect && x->z && zone_reconnect_addr(x->z, x->info.name, &sa) == 0)
		(void)unlink(sa.sun_path);
	x->reconnect = false;
}

void zone_addrs_hold(struct zone *x, bool held)
{
	if (x->info.net)
		net_subnet_link_hold(&x->z->subnet, x->slot, held);
	if (x->deleg >= 0)
		net_subnet_deleg_hold(&x->z->subnet, (uint32_t)x->deleg, held);
}

static void zone_unlink(struct zone *x)
{
	struct zones *z = x->z;
	zone_addrs_hold(x, false);
	list_remove(&x->node);
	z->count--;
}

static void report_close(struct zone *x)
{
	ev_close(x->z ? x->z->loop : NULL, &x->report);
}

static void zone_free(struct zone *x)
{
	report_close(x);
	ev_close(x->z ? x->z->loop : NULL, &x->timer);
	if (x->info.rpc_fd >= 0)
		close(x->info.rpc_fd);
	zone_log_close(&x->log, x->z ? x->z->loop : NULL);
	free(x->root);
	free(x);
}

/* Everything the zone held, once its kin is reaped. */
static void zone_finish(struct zone *x)
{
	struct zones *z = x->z;
	if (x->info.net && x->info.host_if[0]) {
		int r = net_link_delete(x->info.host_if);
		if (r < 0 && r != -ENODEV)
			log_warn("zone \"%s\": cannot delete veth %s: %s", x->info.name,
			         x->info.host_if, strerror(-r));
	}
	x->info.state = ZONE_GONE;
	reconnect_unlink(x);
	zone_log_close(&x->log, z->loop); /* what is left in the pipe first */
	zone_logs_keep(&z->kept, x->info.log);
	zone_unlink(x);
	if (z->count == 0) /* the last one: the zones cell goes too */
		cell_delete(z->cells, ZONE_CELL_PARENT, true, NULL, NULL, NULL);
	if (x->done)
		x->done(x->status, x->done_data);
	if (x->starting) { /* it never ran: its create hears why, nothing is gone */
		x->starting = false;
		if (x->created)
			x->created(x->spawn_r < 0 ? x->spawn_r : -EIO, &x->spawn_err,
			           x->created_data);
	} else if (z->ev.gone) {
		z->ev.gone(&x->info, x->status, z->ev.data);
	}
	zone_free(x);
}

static void on_cell_deleted(int result, const struct err *err, void *data)
{
	struct zone *x = data;
	if (result < 0)
		log_warn("zone \"%s\": %s", x->info.name, err ? err->msg : strerror(-result));
	if (!x->z) {
		zone_free(x);
		return;
	}
	zone_finish(x);
}

/* The zone kin's own cgroups below its cell (its cells, its leaf): the
 * cells library knows only ours. Depth first; -EBUSY while a dying
 * process still holds one. */
static int rmdir_below(int dfd, int depth)
{
	DIR *d = fdopendir(dfd);
	int r = 0;
	if (!d) {
		close(dfd);
		return -errno;
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int sub = depth < 32 ? openat(dirfd(d), e->d_name,
		                              O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
		                     : -1;
		if (sub >= 0 && rmdir_below(sub, depth + 1) < 0)
			r = -EBUSY;
		if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0)
			r = -errno;
	}
	closedir(d);
	return r;
}

static void zone_cleanup(struct zone *x)
{
	char dir[PATH_MAX];
	cells_cgroup_dir(x->z->cells, x->info.cell, dir, sizeof(dir));
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd >= 0 ? rmdir_below(fd, 0) : 0;
	if (r < 0 && x->retries++ < 250 && x->timer.fd >= 0) {
		struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
		if (timerfd_settime(x->timer.fd, 0, &its, NULL) == 0)
			return; /* again in 20 ms */
	}
	if (r < 0)
		log_warn("zone \"%s\": cgroups below %s: %s", x->info.name, dir, strerror(-r));
	struct err err = {0};
	r = cell_delete(x->z->cells, x->info.cell, true, on_cell_deleted, x, &err);
	if (r == 1)
		return; /* on_cell_deleted finishes */
	if (r < 0)
		log_warn("zone \"%s\": %s", x->info.name, err.msg);
	zone_finish(x);
}

static void on_timer(struct ev_source *src, uint32_t events);

/* x->timer, made on first use and kept until the zone is freed. */
static int timer_arm(struct zone *x, uint64_t ms)
{
	if (x->timer.fd < 0) {
		x->timer = (struct ev_source){
		    .fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
		    .fn = on_timer,
		    .data = x};
		if (x->timer.fd < 0)
			return -errno;
		if (ev_add(x->z->loop, &x->timer, EPOLLIN) < 0) {
			int r = -errno;
			close(x->timer.fd);
			x->timer.fd = -1;
			return r;
		}
	}
	struct itimerspec its = {
	    .it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000}};
	return timerfd_settime(x->timer.fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static void timer_close(struct zone *x)
{
	ev_close(x->z->loop, &x->timer);
}

/* The start failed (the first reason wins): the child is killed now; its
 * create hears why once it is reaped and cleaned up (zone_finish). */
static void spawn_abort(struct zone *x, int r, int code, const char *fmt, ...) _printf_(4, 5);
static void spawn_abort(struct zone *x, int r, int code, const char *fmt, ...)
{
	if (!x->starting || x->spawn_r < 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	x->spawn_r = r;
	x->spawn_err.errnum = r;
	x->spawn_err.code = code;
	vsnprintf(x->spawn_err.msg, sizeof(x->spawn_err.msg), fmt, ap);
	va_end(ap);
	log_debug("%s", x->spawn_err.msg);
	report_close(x);
	timer_close(x);
	if (x->child)
		child_signal(x->child, SIGKILL);
	cell_kill(x->z->cells, x->info.cell, NULL);
}

static void spawn_step_failed(struct zone *x, int r, int step)
{
	if (step == ZSTEP_ROOT_CHECK) {
		if (r == -ENOTDIR)
			spawn_abort(x, r, ERR_INVALID_ARGUMENT,
			            "zone \"%s\": root %s is not a directory", x->info.name,
			            x->root ? x->root : "?");
		else
			spawn_abort(x, r, r == -ENOENT ? ERR_NOT_FOUND : err_code_from_errno(r),
			            "zone \"%s\": root %s: %s", x->info.name,
			            x->root ? x->root : "?", strerror(-r));
		return;
	}
	spawn_abort(x, r, r == -ENOENT && step == ZSTEP_EXEC ? ERR_NOT_FOUND : ERR_INTERNAL,
	            "zone \"%s\": %s: %s", x->info.name, zone_step_name(step), strerror(-r));
}

/* The report pipe: EOF once the zone kin is exec'd, or the failed step. */
static void on_report(struct ev_source *src, uint32_t events)
{
	struct zone *x = src->data;
	int step = -1;
	int r = spawn_report_read(src->fd, &step);
	(void)events;
	if (r == 0)
		return;
	if (r < 0) {
		spawn_step_failed(x, r, step);
		return;
	}
	report_close(x);
	timer_close(x); /* zone_stop and the cleanup make their own */
	x->starting = false;
	free(x->root);
	x->root = NULL;
	if (x->info.state == ZONE_STARTING)
		x->info.state = ZONE_RUNNING;
	log_debug("zone \"%s\": kin exec'd, pid %d", x->info.name, (int)x->info.pid);
	if (x->created)
		x->created(0, NULL, x->created_data);
}

void zone_on_exit(const siginfo_t *si, void *data)
{
	struct zone *x = data;
	x->child = NULL;
	/* An adopted zone kin is not our child: its status is not seen. */
	x->status = child_status_known(si) ? child_status_code(si) : -1;
	if (!x->z) { /* zones_free forgot us; nothing to clean through */
		zone_free(x);
		return;
	}
	if (x->starting && x->spawn_r == 0) {
		/* Ended before we saw its report: a failed step says so. */
		int step = -1;
		int r = x->report.fd >= 0 ? spawn_report_read(x->report.fd, &step) : 0;
		if (r < 0)
			spawn_step_failed(x, r, step);
		else
			spawn_abort(x, -ECHILD, ERR_UNAVAILABLE,
			            "zone \"%s\": its kin ended (status %d) before answering",
			            x->info.name, x->status);
	}
	log_debug("zone \"%s\": kin exited with status %d", x->info.name, x->status);
	/* Anything that left the pid namespace's reach still dies here. */
	cell_kill(x->z->cells, x->info.cell, NULL);
	x->cleaning = true;
	if (x->timer.fd < 0) {
		x->timer = (struct ev_source){
		    .fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
		    .fn = on_timer,
		    .data = x};
		if (x->timer.fd >= 0 && ev_add(x->z->loop, &x->timer, EPOLLIN) < 0) {
			close(x->timer.fd);
			x->timer.fd = -1;
		}
	}
	zone_cleanup(x);
}

struct zone *zone_find(struct zones *z, const char *name)
{
	struct zone *x;
	list_for_each(x, &z->list, node)
		if (strcmp(x->info.name, name) == 0)
			return x;
	return NULL;
}

struct net_ctx {
	struct zone *x;
	char host_cidr[32];
};

static int zone_net_setup(void *data, pid_t pid)
{
	struct net_ctx *n = data;
	int r = net_veth_create(n->x->info.host_if, "eth0", pid);
	if (r < 0)
		return r;
	return net_veth_setup_host(n->x->info.host_if, n->host_cidr);
}

/* A zone that did not start: nothing of it stays but its log file. */
static void zone_abandon(struct zone *x, int out_fd)
{
	if (out_fd >= 0)
		close(out_fd);
	zone_addrs_hold(x, false);
	reconnect_unlink(x);
	zone_log_close(&x->log, x->z->loop);
	free(x->root);
	free(x);
}

/* A new zone's record: its name, cell, addresses, delegation and log (the
 * log opened: *ret_out_fd is the zone kin's stdout and stderr). */
static int zone_record_new(struct zones *z, const struct zone_spec *spec, struct zone **ret,
                           struct net_ctx *nctx, int *ret_out_fd, struct err *err)
{
	struct zone *x = calloc(1, sizeof(*x));
	if (!x)
		return err_set(err, -ENOMEM, ERR_INTERNAL, "zone \"%s\": out of memory",
		               spec->name);
	*x = (struct zone){.z = z,
	                   .timer = {.fd = -1},
	                   .report = {.fd = -1},
	                   .deleg = net_subnet_deleg_lowest(&z->subnet)};
	zone_log_init(&x->log);
	x->info = (struct zone_info){.state = ZONE_RUNNING,
	                             .depth = z->depth + 1,
	                             .net = spec->net,
	                             .rpc_fd = -1,
	                             .started_ns = now_monotonic_ns()};
	str_copy(x->info.name, sizeof(x->info.name), spec->name);
	snprintf(x->info.cell, sizeof(x->info.cell), ZONE_CELL_PARENT "/%s", spec->name);
	nctx->x = x;
	if (spec->net) {
		net_subnet_link_lowest(&z->subnet, &x->slot);
		net_subnet_slot(z->subnet.base, z->subnet.prefix, x->slot, x->info.addr,
		                sizeof(x->info.addr), x->info.gateway, nctx->host_cidr,
		                sizeof(nctx->host_cidr));
		snprintf(x->info.host_if, sizeof(x->info.host_if), "kz%d.%u",
		         (int)(getpid() % 10000000), x->slot);
	}
	if (x->deleg >= 0)
		net_subnet_delegation(z->subnet.base, z->subnet.prefix, (uint32_t)x->deleg,
		                      x->info.subnet, sizeof(x->info.subnet));
	if (spec->root && !(x->root = strdup(spec->root))) {
		free(x);
		return err_set(err, -ENOMEM, ERR_INTERNAL, "zone \"%s\": out of memory",
		               spec->name);
	}
	if (snprintf(x->info.log, sizeof(x->info.log), "%s/%s.log", z->state_dir, x->info.name) >=
	    (int)sizeof(x->info.log)) {
		free(x->root);
		free(x);
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": log path too long", spec->name);
	}
	zone_addrs_hold(x, true);                /* from here zone_abandon or zone_unlink lets go */
	zone_logs_forget(&z->kept, x->info.log); /* a new zone of that name owns it now */
	*ret_out_fd = -1;
	int r = zone_log_open(&x->log, z->loop, x->info.log, z->log_bytes, ret_out_fd);
	if (r < 0) {
		zone_abandon(x, *ret_out_fd);
		return err_set(err, r, ERR_INTERNAL, "zone \"%s\": log %s: %s", spec->name,
		               x->info.log, strerror(-r));
	}
	*ret = x;
	return 0;
}

/* The zone's cell, zones/NAME (zones made once, kept). */
static int zone_cell_create(struct zones *z, const struct zone *x, const struct zone_spec *spec,
                            struct err *err)
{
	struct err cerr = {0};
	int r = cell_create(z->cells, ZONE_CELL_PARENT, NULL, &cerr);
	if (r < 0 && r != -EEXIST) {
		if (err)
			*err = cerr;
		return r;
	}
	return cell_create(z->cells, x->info.cell, &spec->limits, err);
}

/* The zone kin runs and is tracked: list it and watch its setup. */
static void zone_watch(struct zone *x, const struct zone_spawned *out, zone_created_fn created,
                       void *data)
{
	struct zones *z = x->z;
	/* Listed from here: its name is taken, stop and kill reach it. */
	list_append(&z->list, &x->node);
	z->count++;
	x->info.state = ZONE_STARTING;
	x->starting = true;
	x->created = created;
	x->created_data = data;
	x->report = (struct ev_source){.fd = out->report_fd, .fn = on_report, .data = x};
	int r = ev_add(z->loop, &x->report, EPOLLIN);
	if (r >= 0)
		r = timer_arm(x, EXEC_START_TIMEOUT_MS);
	if (r < 0) /* still pending: answered once it is reaped */
		spawn_abort(x, r, ERR_INTERNAL, "zone \"%s\": watching its setup: %s", x->info.name,
		            strerror(-r));
}

int zone_create(struct zones *z, const struct zone_spec *spec, zone_created_fn created, void *data,
                struct err *err)
{
	int r = zone_spec_check(z, spec, err);
	if (r < 0)
		return r;
	r = exe_memfd(z);
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "zone \"%s\": a sealed copy of %s: %s",
		               spec->name, z->self, strerror(-r));
	r = mkdir_p(z->scratch, 0700);
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "zone \"%s\": %s: %s", spec->name, z->scratch,
		               strerror(-r));
	struct zone *x = NULL;
	struct net_ctx nctx = {0};
	int out_fd = -1;
	r = zone_record_new(z, spec, &x, &nctx, &out_fd, err);
	if (r < 0)
		return r;
	r = zone_cell_create(z, x, spec, err);
	if (r < 0) {
		zone_abandon(x, out_fd);
		return r;
	}
	_cleanup_close_ int listen_fd = reconnect_listen(z, x);
	if (z->keeper.keep && x->log.src.fd >= 0)
		z->keeper.keep(&x->log.src.fd, 1, z->keeper.data);
	char cgdir[PATH_MAX], depth[16], depth_max[16];
	char *argv[ZONE_ARGS_MAX];
	cells_cgroup_dir(z->cells, x->info.cell, cgdir, sizeof(cgdir));
	zone_spec_argv(z, x, spec, depth, depth_max, argv);
	char overlay[ZONE_OVERLAY_MAX];
	if (spec->root_lowerdirs)
		snprintf(overlay, sizeof(overlay), "lowerdir=%s,upperdir=%s,workdir=%s",
		         spec->root_lowerdirs, spec->root_upperdir, spec->root_workdir);
	struct zone_spawn sp = {.name = x->info.name,
	                        .cgroup_dir = cgdir,
	                        .root = spec->root,
	                        .overlay = spec->root_lowerdirs ? overlay : NULL,
	                        .scratch = z->scratch,
	                        .exe_fd = z->exe_fd,
	                        .argv = argv,
	                        .net = spec->net,
	                        .netns = spec->netns,
	                        .hostname = spec->hostname ? spec->hostname : x->info.name,
	                        .share_src = spec->share_src,
	                        .share_dst = spec->share_dst,
	                        .share_peer = spec->share_peer,
	                        .host_ipc = spec->host_ipc,
	                        .host_pid = spec->host_pid,
	                        .sysctls = spec->sysctls,
	                        .out_fd = out_fd,
	                        .listen_fd = listen_fd,
	                        .net_setup = zone_net_setup,
	                        .net_data = &nctx};
	struct zone_spawned out;
	int step;
	r = zone_spawn(&sp, &out, &step);
	if (r < 0) {
		err_set(err, r, ERR_INTERNAL, "zone \"%s\": %s: %s", x->info.name,
		        zone_step_name(step), strerror(-r));
		if (spec->net)
			net_link_delete(x->info.host_if);
		cell_delete(z->cells, x->info.cell, true, NULL, NULL, NULL);
		zone_abandon(x, out_fd);
		return r;
	}
	close(out_fd); /* the zone kin has it as its stdout and stderr */
	x->info.pid = out.pid;
	x->info.rpc_fd = out.rpc_fd;
	r = child_track(z->children, out.pid, out.pidfd, zone_on_exit, x, &x->child);
	if (r < 0) { /* cannot watch it: do not leave it running */
		cell_kill(z->cells, x->info.cell, NULL);
		close(out.rpc_fd);
		close(out.report_fd);
		zone_abandon(x, -1);
		return err_set(err, r, ERR_INTERNAL, "zone \"%s\": tracking its kin: %s",
		               spec->name, strerror(-r));
	}
	zone_watch(x, &out, created, data);
	log_debug("zone \"%s\": kin pid %d, depth %u%s%s; setting up", x->info.name, (int)out.pid,
	          x->info.depth, spec->net ? ", eth0 " : "", x->info.addr);
	return 1;
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct zone *x = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	if (x->cleaning) {
		zone_cleanup(x);
		return;
	}
	if (x->starting) { /* its setup is stuck (a root on a hung mount, say) */
		log_warn("zone \"%s\": setup still running after %d ms; killed", x->info.name,
		         EXEC_START_TIMEOUT_MS);
		spawn_abort(x, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
		            "zone \"%s\": setup did not reach execve within %d ms", x->info.name,
		            EXEC_START_TIMEOUT_MS);
		return;
	}
	log_warn("zone \"%s\": still running %llu ms after SIGTERM; cgroup.kill", x->info.name,
	         (unsigned long long)x->z->stop_timeout_ms);
	cell_kill(x->z->cells, x->info.cell, NULL);
}

int zone_stop(struct zones *z, const char *name, zone_done_fn done, void *data, struct err *err)
{
	struct zone *x = zone_find(z, name);
	if (!x)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "zone \"%s\" not found", name);
	if ((x->info.state != ZONE_RUNNING && x->info.state != ZONE_STARTING) || x->done)
		return err_set(err, -EALREADY, ERR_FAILED_PRECONDITION,
		               "zone \"%s\" is already stopping", name);
	x->done = done;
	x->done_data = data;
	if (x->starting) { /* no kin to ask yet: its setup is killed */
		x->info.state = ZONE_STOPPING;
		spawn_abort(x, -ECANCELED, ERR_CANCELLED,
		            "zone \"%s\": stopped before its kin started", name);
		return 1;
	}
	if (timer_arm(x, z->stop_timeout_ms) < 0)
		timer_close(x);
	x->info.state = ZONE_STOPPING;
	if (x->child)
		child_signal(x->child, SIGTERM);
	return 1;
}

int zone_kill(struct zones *z, const char *name, struct err *err)
{
	struct zone *x = zone_find(z, name);
	if (!x)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "zone \"%s\" not found", name);
	spawn_abort(x, -ECANCELED, ERR_CANCELLED, "zone \"%s\": killed before its kin started",
	            name);
	return cell_kill(z->cells, x->info.cell, err);
}

int zone_get(struct zones *z, const char *name, struct zone_info *ret, struct err *err)
{
	struct zone *x = zone_find(z, name);
	if (!x)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "zone \"%s\" not found", name);
	*ret = x->info;
	return 0;
}

void zone_foreach(struct zones *z, void (*fn)(const struct zone_info *info, void *data), void *data)
{
	struct zone *x, *next;
	list_for_each_safe(x, next, &z->list, node)
		fn(&x->info, data);
}

void zones_keep_all(struct zones *z)
{
	struct zone *x;
	if (!z || !z->keeper.keep)
		return;
	list_for_each(x, &z->list, node)
		if (x->log.src.fd >= 0)
			z->keeper.keep(&x->log.src.fd, 1, z->keeper.data);
}

size_t zone_count(const struct zones *z)
{
	return z->count;
}

void zones_free(struct zones *z)
{
	if (!z)
		return;
	while (!list_is_empty(&z->list)) {
		struct zone *x = list_first_entry(&z->list, struct zone, node);
		zone_unlink(x);
		ev_close(z->loop, &x->timer);
		zone_log_close(&x->log, z->loop);
		report_close(x);
		if (x->starting && x->child) /* half set up, no kin yet: not left running */
			child_signal(x->child, SIGKILL);
		x->created = NULL;
		x->z = NULL;
		if (!x->child) /* its cell delete is pending: freed there */
			continue;
		/* still running: freed when reaped (zone_on_exit) */
	}
	if (z->exe_fd >= 0)
		close(z->exe_fd);
	net_subnet_free(&z->subnet);
	zone_logs_kept_free(&z->kept);
	free(z);
}
