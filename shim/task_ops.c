/* task_ops: what a task's cell answers — Pids and Stats read from this
 * side of the cgroup tree (the zone's cells are below the zone's cell of
 * this kin), Update (runtime-spec resources as the cell's limits, set by
 * the zone kin; the sandbox's on the zone's cell here), Pause and Resume
 * (the cell frozen by the zone kin; the sandbox's: the pod's zone frozen
 * whole here, or its VM paused). */
#include "shim/task-int.h"
#include "cells/cells.h"
#include "oci/oci.h"
#include "proto/cells.pb-c.h"
#include "zone/zone.h"

#include <inttypes.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <stdio.h>
#include <string.h>

#define LINUX_RESOURCES_URL "types.containerd.io/opencontainers/runtime-spec/1/LinuxResources"
#define METRICS_URL         "io.containerd.cgroups.v2.Metrics"

int task_cell_dir(struct shim_task *svc, const struct task *t, char *buf, size_t size)
{
	if (!svc->zone_cgroup[0])
		return -EHOSTDOWN;
	int n = t->sandbox ? snprintf(buf, size, "%s", svc->zone_cgroup)
	                   : snprintf(buf, size, "%s/cells/%s", svc->zone_cgroup, t->cell);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

/* NSpid lists a process's pid in each namespace from ours down: the one
 * whose second entry is the zone's is ours in the first. */
uint32_t task_host_pid(const char *cell_dir, int zone_pid)
{
	char path[PATH_MAX + 16];
	_cleanup_free_ char *list = NULL;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cell_dir);
	if (zone_pid <= 0 || file_read_small(path, 1 << 20, &list, NULL) < 0)
		return 0;
	for (char *save = NULL, *s = strtok_r(list, "\n", &save); s;
	     s = strtok_r(NULL, "\n", &save)) {
		_cleanup_free_ char *status = NULL;
		snprintf(path, sizeof(path), "/proc/%s/status", s);
		if (file_read_small(path, 64 * 1024, &status, NULL) < 0)
			continue;
		const char *ns = strstr(status, "\nNSpid:");
		unsigned host, in_zone;
		int n = ns ? sscanf(ns + 7, "%u %u", &host, &in_zone) : 0;
		if ((n == 2 && (int)in_zone == zone_pid) || (n == 1 && (int)host == zone_pid))
			return host; /* one entry: a hostPID pod's zone, in our namespace */
	}
	return 0;
}

static int get_task(struct shim_task *svc, struct rpc_call *call, const char *id, struct task **ret)
{
	*ret = task_find(svc, id);
	if (!*ret)
		return rpc_call_fail(call, ERR_NOT_FOUND, "task %.80s not found", id);
	if ((*ret)->create_call)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s is still being created", id);
	return 1;
}

int task_serve_pids(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__PidsRequest *m = (const Kin__Shim__PidsRequest *)in;
	struct task *t;
	int r = get_task(svc, call, m->id, &t);
	if (r <= 0)
		return r;
	if (svc->vm)
		return task_vm_pids(call, t);
	char dir[PATH_MAX], path[PATH_MAX + 16];
	_cleanup_free_ char *list = NULL;
	if (task_cell_dir(svc, t, dir, sizeof(dir)) < 0)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s: no zone", t->id);
	/* A container: its cell's processes. The sandbox: the zone kin alone
	 * (what runc lists for it is the pause process). */
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (t->sandbox || file_read_small(path, 1 << 20, &list, NULL) < 0)
		list = strdup("");
	enum { PIDS_MAX = 4096 };
	_cleanup_free_ Kin__Shim__ProcessInfo *infos = calloc(PIDS_MAX, sizeof(*infos));
	_cleanup_free_ Kin__Shim__ProcessInfo **ptrs = calloc(PIDS_MAX, sizeof(*ptrs));
	if (!list || !infos || !ptrs)
		return -ENOMEM;
	Kin__Shim__PidsResponse out = KIN__SHIM__PIDS_RESPONSE__INIT;
	if (t->sandbox && t->init.pid) {
		kin__shim__process_info__init(&infos[0]);
		infos[0].pid = t->init.pid;
		ptrs[out.n_processes++] = &infos[0];
	}
	for (char *save = NULL, *s = strtok_r(list, "\n", &save); s && out.n_processes < PIDS_MAX;
	     s = strtok_r(NULL, "\n", &save)) {
		uint32_t pid;
		if (str_to_u32(s, &pid) < 0)
			continue;
		Kin__Shim__ProcessInfo *pi = &infos[out.n_processes];
		kin__shim__process_info__init(pi);
		pi->pid = pid;
		ptrs[out.n_processes++] = pi;
	}
	out.processes = ptrs;
	return rpc_call_reply(call, &out.base);
}

/* "key value" lines of a cgroup file into the fields named. */
static void read_keyed(const char *dir, const char *file, const char *const *keys,
                       uint64_t *const *vals, size_t n)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_small(path, 64 * 1024, &text, NULL) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(l, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		for (size_t i = 0; i < n; i++)
			if (strcmp(l, keys[i]) == 0)
				*vals[i] = strtoull(sp + 1, NULL, 10);
	}
}

/* One number ("max" is 0: no limit, as containerd reports it). */
static uint64_t read_num(const char *dir, const char *file)
{
	char path[PATH_MAX + 32];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_small(path, 256, &text, NULL) < 0)
		return 0;
	return strtoull(text, NULL, 10);
}

int task_reply_metrics(struct rpc_call *call, const Kin__Shim__Metrics *metrics)
{
	uint8_t buf[1024];
	size_t n = protobuf_c_message_get_packed_size(&metrics->base);
	if (n > sizeof(buf))
		return -EOVERFLOW;
	protobuf_c_message_pack(&metrics->base, buf);
	Kin__Shim__Any any = KIN__SHIM__ANY__INIT;
	any.type_url = (char *)METRICS_URL;
	any.value = (ProtobufCBinaryData){n, buf};
	Kin__Shim__StatsResponse out = KIN__SHIM__STATS_RESPONSE__INIT;
	out.stats = &any;
	return rpc_call_reply(call, &out.base);
}

int task_zone_cell_dir(struct shim_task *svc, char *buf, size_t size)
{
	struct zone_info info;
	if (!svc->vm && svc->zone_cgroup[0])
		return snprintf(buf, size, "%s", svc->zone_cgroup) < (int)size ? 0 : -ENAMETOOLONG;
	if (!svc->cells || svc->pods.info(svc->pods.impl, SHIM_ZONE_NAME, &info) < 0 ||
	    !info.cell[0])
		return -EHOSTDOWN;
	return cells_cgroup_dir(svc->cells, info.cell, buf, size);
}

void task_metrics_read(const char *dir, struct task_metrics *tm)
{
	*tm = (struct task_metrics){.pids = KIN__SHIM__PIDS_STAT__INIT,
	                            .cpu = KIN__SHIM__CPUSTAT__INIT,
	                            .mem = KIN__SHIM__MEMORY_STAT__INIT,
	                            .mev = KIN__SHIM__MEMORY_EVENTS__INIT,
	                            .m = KIN__SHIM__METRICS__INIT};
	Kin__Shim__CPUStat *cpu = &tm->cpu;
	Kin__Shim__MemoryStat *mem = &tm->mem;
	Kin__Shim__MemoryEvents *mev = &tm->mev;
	tm->pids.current = read_num(dir, "pids.current");
	tm->pids.limit = read_num(dir, "pids.max");
	static const char *const ck[] = {"usage_usec", "user_usec",    "system_usec",
	                                 "nr_periods", "nr_throttled", "throttled_usec"};
	uint64_t *const cv[] = {&cpu->usage_usec, &cpu->user_usec,    &cpu->system_usec,
	                        &cpu->nr_periods, &cpu->nr_throttled, &cpu->throttled_usec};
	read_keyed(dir, "cpu.stat", ck, cv, ARRAY_SIZE(ck));
	static const char *const mk[] = {"anon",           "file",    "kernel_stack", "slab",
	                                 "sock",           "shmem",   "file_mapped",  "file_dirty",
	                                 "file_writeback", "pgfault", "pgmajfault"};
	uint64_t *const mv[] = {&mem->anon,        &mem->file,       &mem->kernel_stack,
	                        &mem->slab,        &mem->sock,       &mem->shmem,
	                        &mem->file_mapped, &mem->file_dirty, &mem->file_writeback,
	                        &mem->pgfault,     &mem->pgmajfault};
	read_keyed(dir, "memory.stat", mk, mv, ARRAY_SIZE(mk));
	mem->usage = read_num(dir, "memory.current");
	mem->usage_limit = read_num(dir, "memory.max");
	mem->swap_usage = read_num(dir, "memory.swap.current");
	mem->swap_limit = read_num(dir, "memory.swap.max");
	static const char *const ek[] = {"low", "high", "max", "oom", "oom_kill"};
	uint64_t *const ev[] = {&mev->low, &mev->high, &mev->max, &mev->oom, &mev->oom_kill};
	read_keyed(dir, "memory.events", ek, ev, ARRAY_SIZE(ek));
	tm->m.pids = &tm->pids;
	tm->m.cpu = &tm->cpu;
	tm->m.memory = &tm->mem;
	tm->m.memory_events = &tm->mev;
}

int task_serve_stats(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__StatsRequest *m = (const Kin__Shim__StatsRequest *)in;
	struct task *t;
	int r = get_task(svc, call, m->id, &t);
	if (r <= 0)
		return r;
	if (svc->vm && !t->sandbox) /* the guest's cell */
		return task_vm_stats(call, t);
	char dir[PATH_MAX];
	/* A kin-vm pod's sandbox is its VM: the VMM's cell here. */
	if ((svc->vm ? task_zone_cell_dir(svc, dir, sizeof(dir))
	             : task_cell_dir(svc, t, dir, sizeof(dir))) < 0)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s: no %s", t->id,
		                     svc->vm ? "VMM cell (no cells here)" : "zone");
	struct task_metrics tm;
	task_metrics_read(dir, &tm);
	return task_reply_metrics(call, &tm.m);
}

static void zone_answered(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zref *z = data;
	struct shim_task *svc = z->svc;
	(void)payload, (void)len;
	zref_answer(z, st);
	/* Pause and Resume: the state and the event follow the zone's answer. */
	struct task *t = st->code == ERR_OK ? task_find(svc, z->id) : NULL;
	if (t && z->exec_id[0] == 'P') {
		t->init.state = T_PAUSED;
		Kin__Shim__TaskPaused ev = KIN__SHIM__TASK_PAUSED__INIT;
		ev.container_id = t->id;
		task_publish(svc, "/tasks/paused", "containerd.events.TaskPaused", &ev.base);
	} else if (t && z->exec_id[0] == 'R') {
		t->init.state = T_RUNNING;
		Kin__Shim__TaskResumed ev = KIN__SHIM__TASK_RESUMED__INIT;
		ev.container_id = t->id;
		task_publish(svc, "/tasks/resumed", "containerd.events.TaskResumed", &ev.base);
	}
	free(z);
}

/* The update's resources as the cell's limits (cgroup v2 files). */
static int limit_set(void *limits, const char *file, const char *value, struct err *err)
{
	return cell_limit_parse(limits, file, value, err);
}

int task_serve_update(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__UpdateTaskRequest *m = (const Kin__Shim__UpdateTaskRequest *)in;
	struct task *t;
	int r = get_task(svc, call, m->id, &t);
	if (r <= 0)
		return r;
	if (!m->resources || strcmp(m->resources->type_url, LINUX_RESOURCES_URL) != 0)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "task %s: update: expected resources of type %s", t->id,
		                     LINUX_RESOURCES_URL);
	struct err err = {0};
	struct oci_spec *o = NULL;
	struct cell_limits limits = {0};
	r = oci_resources_parse((const char *)m->resources->value.data, m->resources->value.len, &o,
	                        &err);
	if (r == 0)
		r = oci_cgroup_limits(o, limit_set, &limits, &err);
	oci_spec_free(o);
	if (r < 0)
		return rpc_call_fail_err(call, &err, r);
	if (t->sandbox) { /* the zone's cell is this kin's (a VM's: its VMM's) */
		struct zone_info info;
		if (svc->pods.info(svc->pods.impl, SHIM_ZONE_NAME, &info) < 0 || !info.cell[0])
			return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
			                     "task %s: the pod's zone "
			                     "is gone",
			                     t->id);
		r = cell_update(svc->cells, info.cell, &limits, &err);
		if (r < 0)
			return rpc_call_fail_err(call, &err, r);
		Kin__Shim__Empty out = KIN__SHIM__EMPTY__INIT;
		return rpc_call_reply(call, &out.base);
	}
	Kin__V1__Limit lv[CELL_LIMIT_COUNT], *lp[CELL_LIMIT_COUNT];
	char vals[CELL_LIMIT_COUNT][160];
	Kin__V1__CreateCellRequest req = KIN__V1__CREATE_CELL_REQUEST__INIT;
	req.path = t->cell;
	req.limits = lp;
	for (int k = 0; k < CELL_LIMIT_COUNT; k++) {
		if (!(limits.set & (1u << k)))
			continue;
		kin__v1__limit__init(&lv[req.n_limits]);
		cell_limit_format(&limits, (enum cell_limit)k, vals[k], sizeof(vals[k]));
		lv[req.n_limits].key = (char *)cell_limit_name((enum cell_limit)k);
		lv[req.n_limits].value = vals[k];
		lp[req.n_limits] = &lv[req.n_limits];
		req.n_limits++;
	}
	return zone_call_for(call, svc, t->id, NULL, "kin.v1.Cells", "Update", &req.base,
	                     zone_answered);
}

static void sandbox_frozen(int result, const struct err *err, void *data)
{
	struct err st = {.code = ERR_OK};
	if (result < 0 && err)
		st = *err;
	else if (result < 0)
		err_set(&st, result, ERR_INTERNAL, "%s", strerror(-result));
	zone_answered(&st, NULL, 0, data);
}

/* A pod's sandbox: its zone frozen whole (its kin too), or its VM paused. */
static int freeze_sandbox(struct shim_task *svc, struct rpc_call *call, struct task *t, bool pause)
{
	struct err err = {0};
	if (svc->zone != ZN_READY)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s: the pod's zone is %s",
		                     t->id, svc->zone == ZN_GONE ? "gone" : "not ready");
	struct zref *z = zref_new(svc, t->id, pause ? "P" : "R");
	if (!z)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "task %s: out of memory", t->id);
	zref_keep(z, call);
	int r = svc->pods.freeze(svc->pods.impl, SHIM_ZONE_NAME, pause, sandbox_frozen, z, &err);
	if (r == 0)
		sandbox_frozen(0, NULL, z);
	else if (r < 0)
		sandbox_frozen(r, &err, z);
	return 0;
}

static int freeze(struct shim_task *svc, struct rpc_call *call, const char *id, bool pause)
{
	struct task *t;
	int r = get_task(svc, call, id, &t);
	if (r <= 0)
		return r;
	if (t->init.state != (pause ? T_RUNNING : T_PAUSED))
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "task %s is not %s", t->id,
		                     pause ? "running" : "paused");
	if (t->sandbox)
		return freeze_sandbox(svc, call, t, pause);
	Kin__V1__CellRequest req = KIN__V1__CELL_REQUEST__INIT;
	req.path = t->cell;
	/* exec_id carries which it was to the answer: 'P'ause or 'R'esume. */
	return zone_call_for(call, svc, t->id, pause ? "P" : "R", "kin.v1.Cells",
	                     pause ? "Freeze" : "Thaw", &req.base, zone_answered);
}

int task_serve_pause(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	return freeze(data, call, ((const Kin__Shim__PauseRequest *)in)->id, true);
}

int task_serve_resume(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	return freeze(data, call, ((const Kin__Shim__ResumeRequest *)in)->id, false);
}

/* ---- OOM kills ------------------------------------------------------------------------ */

void task_oom_check(struct task *t)
{
	char dir[PATH_MAX];
	uint64_t kills = 0, *const vals[] = {&kills};
	static const char *const keys[] = {"oom_kill"};
	if (t->sandbox || task_cell_dir(t->svc, t, dir, sizeof(dir)) < 0)
		return;
	read_keyed(dir, "memory.events", keys, vals, 1);
	if (kills <= t->oom_kills)
		return;
	t->oom_kills = kills;
	log_info("shim: task %s: OOM kill in its cell", t->id);
	Kin__Shim__TaskOOM ev = KIN__SHIM__TASK_OOM__INIT;
	ev.container_id = t->id;
	task_publish(t->svc, "/tasks/oom", "containerd.events.TaskOOM", &ev.base);
}

static void oom_one(int wd, uint32_t mask, void *data)
{
	struct shim_task *svc = data;
	struct task *t;
	(void)mask;
	list_for_each(t, &svc->tasks, node)
		if (t->oom_wd == wd)
			task_oom_check(t);
}

static void on_oom(struct ev_source *src, uint32_t events)
{
	(void)events;
	inotify_drain(src->fd, oom_one, src->data);
}

void task_oom_watch(struct task *t)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	if (t->oom_wd >= 0 || t->svc->oom.fd < 0 || task_cell_dir(t->svc, t, dir, sizeof(dir)) < 0)
		return;
	snprintf(path, sizeof(path), "%s/memory.events", dir);
	t->oom_wd = inotify_add_watch(t->svc->oom.fd, path, IN_MODIFY);
	if (t->oom_wd < 0 && errno != ENOENT)
		log_warn("shim: task %s: cannot watch %s: %m", t->id, path);
	task_oom_check(t); /* one that came before the watch */
}

void task_oom_unwatch(struct task *t)
{
	if (t->oom_wd >= 0 && t->svc->oom.fd >= 0)
		inotify_rm_watch(t->svc->oom.fd, t->oom_wd);
	t->oom_wd = -1;
}

void task_oom_init(struct shim_task *svc)
{
	svc->oom = (struct ev_source){
	    .fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), .fn = on_oom, .data = svc};
	if (svc->oom.fd >= 0 && ev_add(svc->loop, &svc->oom, EPOLLIN) < 0) {
		close(svc->oom.fd);
		svc->oom.fd = -1;
	}
}

void task_oom_take(struct shim_task *svc, int fd)
{
	task_oom_free(svc);
	svc->oom = (struct ev_source){.fd = fd, .fn = on_oom, .data = svc};
	if (ev_add(svc->loop, &svc->oom, EPOLLIN) < 0) {
		close(svc->oom.fd);
		svc->oom.fd = -1;
	}
}

void task_oom_free(struct shim_task *svc)
{
	if (svc->oom.fd < 0)
		return;
	ev_del(svc->loop, &svc->oom);
	close(svc->oom.fd);
	svc->oom.fd = -1;
}
