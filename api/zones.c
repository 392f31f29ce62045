/* zones: kin.v1.Zones — nested kins run by this kin, reached as route
 * NAME (kin-target "NAME/..."). A namespace zone comes from zone/: once its
 * kin runs, our end of its socketpair becomes route NAME and Create is
 * answered when the zone kin answers Health/Check through it. A VM zone is
 * a VM of the Vm service (vm.c) whose link is route NAME instead of
 * vm/NAME; its guest learns its depth and the depth limit from the kernel
 * command line (kin.zone.depth=, kin.zone.max-depth=). Either way the zone
 * is gone from List, and its route removed, once nothing of it is left.
 * This file keeps what outlives a handler: a record per zone with the
 * Create call waiting for readiness and the Stop calls waiting for the end. */
#include "api/zones-int.h"
#include "oci/oci.h"
#include "proto/zone.pb-c.h"
#include "vm/vm.h"
#include "zone/zone.h"
#include "lib/state.h"

#include <stdio.h>
#include <string.h>

struct zrec *api_zrec_find(struct api_zones *svc, const char *name)
{
	struct zrec *r;
	list_for_each(r, &svc->recs, node) {
		if (strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

void api_zrec_free(struct zrec *r)
{
	list_remove(&r->node);
	api_container_release(r->container);
	free(r);
}

/* Everything ZoneInfo points to, kept while it is packed. */
struct zinfo_buf {
	struct zone_info z;
	struct vm_info v;
	Kin__V1__ZoneInfo m;
};

static void info_fill(struct api_zones *svc, struct zrec *r, struct zinfo_buf *b)
{
	Kin__V1__ZoneInfo *m = &b->m;
	kin__v1__zone_info__init(m);
	m->name = r->name;
	m->route = r->name;
	m->depth = svc->depth + 1;
	m->exit_status = r->exit_status;
	m->kind = (char *)(r->vm ? "vm" : "namespace");
	m->state = (char *)"gone";
	if (r->gone)
		return;
	m->uptime_ns = now_monotonic_ns() - r->started_ns;
	if (r->vm) {
		bool ready = false;
		if (api_vm_get_as(svc->vms, r->name, &b->v, &ready) < 0)
			return;
		m->pid = (uint32_t)b->v.pid;
		m->ready = ready;
		m->state = (char *)(b->v.state == VM_STATE_STOPPING ? "stopping"
		                    : b->v.state == VM_STATE_EXITED ? "gone"
		                    : ready                         ? "running"
		                                                    : "starting");
		m->log = b->v.paths.console;
		return;
	}
	if (!svc->zones || zone_get(svc->zones, r->name, &b->z, NULL) < 0)
		return;
	m->pid = (uint32_t)b->z.pid;
	m->depth = b->z.depth;
	m->net = b->z.net;
	m->address = b->z.addr;
	m->gateway = b->z.gateway;
	m->subnet = b->z.subnet;
	m->log = b->z.log;
	m->cell = b->z.cell;
	m->ready = r->ready && rpc_route_state(svc->rpc, r->name) == RPC_ROUTE_READY;
	bool starting = b->z.state == ZONE_STARTING || r->checking;
	m->state = (char *)(b->z.state == ZONE_STOPPING ? "stopping"
	                    : b->z.state == ZONE_GONE   ? "gone"
	                    : starting                  ? "starting"
	                                                : "running");
}

static int reply_info(struct api_zones *svc, struct zrec *r, struct rpc_call *call)
{
	_cleanup_free_ struct zinfo_buf *b = calloc(1, sizeof(*b));
	if (!b)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "zone \"%s\": out of memory",
		                     r->name);
	info_fill(svc, r, b);
	return rpc_call_reply(call, &b->m.base);
}

static void create_cancelled(struct rpc_call *call, void *data)
{
	struct zrec *r = data;
	(void)call;
	r->create_call = NULL;
}

static void stop_cancelled(struct rpc_call *call, void *data)
{
	struct zrec *r = data;
	for (size_t i = 0; i < ZONE_STOP_WAITERS_MAX; i++)
		if (r->waiters[i] == call)
			r->waiters[i] = NULL;
}

/* The zone is gone: Stop callers hear how it ended, its name is free. */
/* start_err: why a start failed once it was under way (NULL: the zone
 * ended), told to an owner still waiting for ready. */
static void rec_gone(struct zrec *r, int status, const char *why, const struct err *start_err)
{
	struct api_zones *svc = r->svc;
	r->gone = true;
	r->exit_status = status;
	log_info("zone \"%s\": gone: %s", r->name, why);
	for (size_t i = 0; i < ZONE_STOP_WAITERS_MAX; i++) {
		struct rpc_call *call = r->waiters[i];
		if (!call)
			continue;
		r->waiters[i] = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		reply_info(svc, r, call);
	}
	if (!r->vm) /* a VM zone's route went with its VMM (vm.c) */
		rpc_route_remove(svc->rpc, r->name, why);
	struct api_zone_owner owner = r->owner;
	r->owner = (struct api_zone_owner){0};
	if (!r->checking)
		api_zrec_free(r);
	if (owner.ready) /* never answered ready: a failed start */
		owner.ready(start_err && start_err->errnum < 0 ? start_err->errnum : -ECHILD,
		            start_err, owner.data);
	if (owner.gone)
		owner.gone(status, owner.data);
}

static void on_zone_gone(const struct zone_info *info, int status, void *data)
{
	struct api_zones *svc = data;
	struct zrec *r = api_zrec_find(svc, info->name);
	char why[80];
	if (status < 0)
		snprintf(why, sizeof(why), "its kin ended (status unknown: it was adopted)");
	else
		snprintf(why, sizeof(why), "its kin exited with status %d", status);
	if (r && !r->vm)
		rec_gone(r, status, why, NULL);
}

void api_zrec_vm_exited(const struct vm_info *info, const struct err *start_err, void *data)
{
	struct zrec *r = data;
	char why[64];
	snprintf(why, sizeof(why), "its VMM exited with status %d", info->exit_status);
	rec_gone(r, info->exit_status, start_err ? start_err->msg : why, start_err);
}

static void check_done(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zrec *r = data;
	struct rpc_call *call = r->create_call;
	(void)payload, (void)len;
	r->checking = false;
	r->ready = st->code == ERR_OK;
	if (r->owner.ready && !r->gone) {
		void (*ready)(int, const struct err *, void *) = r->owner.ready;
		r->owner.ready = NULL;
		ready(r->ready ? 0 : -EHOSTUNREACH, r->ready ? NULL : st, r->owner.data);
	}
	if (call) {
		r->create_call = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		if (r->gone)
			rpc_call_fail(call, ERR_UNAVAILABLE,
			              "zone \"%s\": its kin ended (status %d) before answering",
			              r->name, r->exit_status);
		else if (!r->ready)
			rpc_call_fail(call, ERR_UNAVAILABLE,
			              "zone \"%s\": its kin does not answer: %s", r->name, st->msg);
		else
			reply_info(r->svc, r, call);
	}
	if (r->gone)
		api_zrec_free(r);
}

static void zone_stopped(int status, void *data);

struct zrec *api_zrec_new(struct api_zones *svc, const char *name, bool vm)
{
	struct zrec *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->svc = svc;
	r->vm = vm;
	r->started_ns = now_monotonic_ns();
	str_copy(r->name, sizeof(r->name), name);
	list_append(&svc->recs, &r->node);
	return r;
}

static int create_vm(struct api_zones *svc, struct rpc_call *call,
                     const Kin__V1__ZoneCreateRequest *m)
{
	if (!svc->vms)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "zone \"%s\": this kin runs no VMs", m->name);
	if (m->net || m->root[0] || m->root_image[0] || m->n_limits)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": --net, --root and limits are for namespace "
		                     "zones; a VM zone takes cpus and memory",
		                     m->name);
	if (!m->kernel[0] || !m->image[0])
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": a VM zone needs a kernel and an image", m->name);
	struct vm_spec spec;
	struct err e = {0};
	const struct vm_request q = {.what = "zone",
	                             .name = m->name,
	                             .kernel = m->kernel,
	                             .image = m->image,
	                             .cpus = m->cpus,
	                             .memory_mb = m->memory_mb,
	                             .accel = m->accel};
	if (vm_spec_fill(&spec, &q, &e) < 0)
		return rpc_call_fail(call, e.code, "%s", e.msg);
	/* The guest's kin is a machine init one level down: same limit. */
	snprintf(spec.cmdline, sizeof(spec.cmdline), "kin.zone.depth=%u kin.zone.max-depth=%u",
	         svc->depth + 1, svc->depth_max);
	struct zrec *r = api_zrec_new(svc, m->name, true);
	if (!r)
		return -ENOMEM;
	if (api_vm_start_as(svc->vms, &spec, m->name, api_zrec_vm_exited, r, &e) < 0) {
		api_zrec_free(r);
		return rpc_call_fail(call, e.code, "zone \"%s\": %s", m->name, e.msg);
	}
	log_info("zone \"%s\": a VM zone, depth %u", m->name, svc->depth + 1);
	return reply_info(svc, r, call);
}

/* The zone kin was exec'd (route it, then ask it Health/Check; Create is
 * answered by check_done), or its start failed, nothing of it left. */
void api_zrec_created(int result, const struct err *err, void *data)
{
	struct zrec *r = data;
	struct api_zones *svc = r->svc;
	struct rpc_call *call = r->create_call;
	if (result < 0) {
		if (call) {
			r->create_call = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			rpc_call_fail_err(call, err, result);
		}
		if (r->owner.ready) {
			void (*ready)(int, const struct err *, void *) = r->owner.ready;
			r->owner.ready = NULL;
			r->owner.gone = NULL; /* it never ran */
			ready(result, err, r->owner.data);
		}
		rec_gone(r, -1, err && err->msg[0] ? err->msg : strerror(-result), NULL);
		return;
	}
	struct zone_info info;
	zone_get(svc->zones, r->name, &info, NULL);
	if (svc->changed) /* running now: what a successor would adopt */
		svc->changed(svc->changed_data);
	int e = rpc_route_add(svc->rpc, r->name, info.rpc_fd, 0);
	if (e < 0) { /* unreachable, so not kept: the cleanup leaves nothing */
		zone_kill(svc->zones, r->name, NULL);
		r->gone = true; /* freed when the zone is reaped */
		if (call) {
			r->create_call = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			rpc_call_fail(call, ERR_INTERNAL, "zone \"%s\": route: %s", r->name,
			              strerror(-e));
		}
		return;
	}
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	r->checking = true;
	e = api_route_call(svc->rpc, r->name, &kin__v1__health__descriptor, &in.base, check_done,
	                   r);
	if (e < 0) {
		r->checking = false;
		if (call) {
			r->create_call = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			reply_info(svc, r, call);
		}
	}
}

static int create_ns(struct api_zones *svc, struct rpc_call *call,
                     const Kin__V1__ZoneCreateRequest *m)
{
	if (!svc->zones)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION, "zone \"%s\": %s", m->name,
		                     svc->why);
	if (m->kernel[0] || m->image[0] || m->cpus || m->memory_mb || m->accel[0])
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": kernel, image, cpus, memory and accel are for "
		                     "VM zones (--vm)",
		                     m->name);
	struct zone_spec spec = {.root = m->root[0] ? m->root : NULL, .net = m->net};
	struct err err = {0};
	if (m->root[0] && m->root_image[0])
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": a root directory or an image, not both",
		                     m->name);
	if (str_copy(spec.name, sizeof(spec.name), m->name) < 0)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%.64s\": a name is 1-64 of [A-Za-z0-9_.-]", m->name);
	if (m->n_limits > ZONE_LIMITS_MAX)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": %zu limits given, at most %d", m->name,
		                     m->n_limits, ZONE_LIMITS_MAX);
	for (size_t i = 0; i < m->n_limits; i++) {
		int e =
		    cell_limit_parse(&spec.limits, m->limits[i]->key, m->limits[i]->value, &err);
		if (e < 0)
			return rpc_call_fail_err(call, &err, e);
	}
	struct zrec *r = api_zrec_new(svc, m->name, false);
	if (!r)
		return -ENOMEM;
	if (m->root_image[0]) {
		char id[NAME_MAX_LEN + 8];
		struct oci_image *img = malloc(sizeof(*img));
		snprintf(id, sizeof(id), "zone.%s", m->name);
		int e = img ? api_container_new(svc->images, m->root_image, id, &r->container, img,
		                                &err)
		            : -ENOMEM;
		free(img);
		if (e < 0) {
			api_zrec_free(r);
			return rpc_call_fail_err(call, &err, e);
		}
		spec.root = r->container->root;
		spec.root_lowerdirs = r->container->lower;
		spec.root_upperdir = r->container->upper;
		spec.root_workdir = r->container->work;
	}
	int e = zone_create(svc->zones, &spec, api_zrec_created, r, &err);
	if (e < 0) {
		api_zrec_free(r);
		return rpc_call_fail_err(call, &err, e);
	}
	/* Its setup runs on; zone_created goes on from the loop. */
	r->create_call = call;
	rpc_call_on_cancel(call, create_cancelled, r);
	return 0;
}

int api_zones_create_own(struct api_zones *svc, const struct zone_spec *spec,
                         const struct api_zone_owner *owner, struct err *err)
{
	if (!svc || !svc->zones)
		return err_set(err, -ENODEV, ERR_FAILED_PRECONDITION, "zone \"%s\": %s", spec->name,
		               svc ? svc->why : "no Zones service");
	if (api_zrec_find(svc, spec->name) ||
	    rpc_route_state(svc->rpc, spec->name) != RPC_ROUTE_NONE)
		return err_set(err, -EEXIST, ERR_ALREADY_EXISTS, "zone \"%s\" already exists",
		               spec->name);
	struct zrec *r = api_zrec_new(svc, spec->name, false);
	if (!r)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	int e = zone_create(svc->zones, spec, api_zrec_created, r, err);
	if (e < 0) {
		api_zrec_free(r);
		return e;
	}
	r->owner = *owner;
	return 0;
}

static void vm_zone_ready(void *data)
{
	struct zrec *r = data;
	r->ready = true;
	if (r->owner.ready && !r->gone) {
		void (*ready)(int, const struct err *, void *) = r->owner.ready;
		r->owner.ready = NULL;
		ready(0, NULL, r->owner.data);
	}
}

int api_zones_create_own_vm(struct api_zones *svc, const struct vm_spec *spec,
                            const struct api_zone_owner *owner, struct err *err)
{
	if (!svc || !svc->vms)
		return err_set(err, -ENODEV, ERR_FAILED_PRECONDITION,
		               "zone \"%s\": this kin runs no VMs", spec->name);
	if (api_zrec_find(svc, spec->name) ||
	    rpc_route_state(svc->rpc, spec->name) != RPC_ROUTE_NONE)
		return err_set(err, -EEXIST, ERR_ALREADY_EXISTS, "zone \"%s\" already exists",
		               spec->name);
	struct vm_spec s = *spec;
	char depth[64];
	snprintf(depth, sizeof(depth), "%skin.zone.depth=%u kin.zone.max-depth=%u",
	         s.cmdline[0] ? " " : "", svc->depth + 1, svc->depth_max);
	if (strlen(s.cmdline) + strlen(depth) >= sizeof(s.cmdline))
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "zone \"%s\": the kernel command line is too long", spec->name);
	strcat(s.cmdline, depth);
	struct zrec *r = api_zrec_new(svc, spec->name, true);
	if (!r)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	int e = api_vm_start_as(svc->vms, &s, spec->name, api_zrec_vm_exited, r, err);
	if (e < 0) {
		api_zrec_free(r);
		return e;
	}
	r->owner = *owner;
	if (rpc_route_on_ready(svc->rpc, spec->name, vm_zone_ready, r) < 0) {
		r->owner = (struct api_zone_owner){0};
		api_vm_kill_as(svc->vms, spec->name); /* on_vm_exited frees r */
		return err_set(err, -EHOSTUNREACH, ERR_UNAVAILABLE,
		               "zone \"%s\": no route to its guest", spec->name);
	}
	log_info("zone \"%s\": a VM zone, depth %u", spec->name, svc->depth + 1);
	return 0;
}

int api_zones_info(struct api_zones *svc, const char *name, struct zone_info *ret)
{
	struct zrec *r = svc ? api_zrec_find(svc, name) : NULL;
	if (r && r->vm) {
		struct vm_info v;
		bool ready;
		if (api_vm_get_as(svc->vms, name, &v, &ready) < 0)
			return -ENOENT;
		*ret = (struct zone_info){.state = v.state == VM_STATE_RUNNING    ? ZONE_RUNNING
		                                   : v.state == VM_STATE_STARTING ? ZONE_STARTING
		                                   : v.state == VM_STATE_STOPPING ? ZONE_STOPPING
		                                                                  : ZONE_GONE,
		                          .pid = v.pid,
		                          .depth = svc->depth + 1,
		                          .rpc_fd = -1,
		                          .started_ns = v.started_ns};
		str_copy(ret->name, sizeof(ret->name), name);
		str_copy(ret->cell, sizeof(ret->cell), v.cell);
		return 0;
	}
	if (!svc || !svc->zones)
		return -ENODEV;
	return zone_get(svc->zones, name, ret, NULL);
}

int api_zones_end(struct api_zones *svc, const char *name, bool kill)
{
	struct zrec *r = svc ? api_zrec_find(svc, name) : NULL;
	if (r && r->vm)
		return kill ? api_vm_kill_as(svc->vms, name)
		            : api_vm_stop_as(svc->vms, name, API_ZONES_VM_STOP_MS);
	if (!svc || !svc->zones)
		return -ENODEV;
	return kill ? zone_kill(svc->zones, name, NULL)
	            : zone_stop(svc->zones, name, zone_stopped, NULL, NULL);
}

static int serve_zones_create(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_zones *svc = userdata;
	const Kin__V1__ZoneCreateRequest *m = (const Kin__V1__ZoneCreateRequest *)in;
	if (!name_is_valid(m->name) || !str_is_hostname(m->name))
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%.64s\": a name is 1-64 of [A-Za-z0-9-], a valid "
		                     "hostname (it is the zone's)",
		                     m->name);
	if (strcmp(m->name, "vm") == 0)
		return rpc_call_fail(
		    call, ERR_INVALID_ARGUMENT,
		    "zone \"vm\": the name is reserved (targets vm/NAME reach VMs)");
	struct zrec *old = api_zrec_find(svc, m->name);
	if (old && !old->gone)
		return rpc_call_fail(call, ERR_ALREADY_EXISTS, "zone \"%s\" already exists",
		                     m->name);
	if (old || rpc_route_state(svc->rpc, m->name) != RPC_ROUTE_NONE)
		return rpc_call_fail(call, ERR_UNAVAILABLE,
		                     "zone \"%s\": the previous zone of that name is still "
		                     "being cleaned up",
		                     m->name);
	if (svc->depth + 1 > svc->depth_max)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "zone \"%s\": depth limit reached (this kin is at depth %u, "
		                     "the limit is %u)",
		                     m->name, svc->depth, svc->depth_max);
	return m->vm ? create_vm(svc, call, m) : create_ns(svc, call, m);
}

static int serve_zones_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_zones *svc = userdata;
	Kin__V1__ZoneListResponse out = KIN__V1__ZONE_LIST_RESPONSE__INIT;
	(void)in;
	struct zrec *r;
	size_t n = 0;
	list_for_each(r, &svc->recs, node)
		n += !r->gone;
	_cleanup_free_ struct zinfo_buf *bufs = calloc(n + 1, sizeof(*bufs));
	_cleanup_free_ Kin__V1__ZoneInfo **ptrs = calloc(n + 1, sizeof(*ptrs));
	if (!bufs || !ptrs)
		return -ENOMEM;
	list_for_each(r, &svc->recs, node) {
		if (r->gone)
			continue;
		info_fill(svc, r, &bufs[out.n_zones]);
		ptrs[out.n_zones] = &bufs[out.n_zones].m;
		out.n_zones++;
	}
	out.zones = ptrs;
	out.depth = svc->depth;
	out.max_depth = svc->depth_max;
	return rpc_call_reply(call, &out.base);
}

static struct zrec *live_rec(struct api_zones *svc, struct rpc_call *call, const char *name)
{
	struct zrec *r = api_zrec_find(svc, name);
	if (!r || r->gone) {
		rpc_call_fail(call, ERR_NOT_FOUND, "zone \"%.64s\" does not exist", name);
		return NULL;
	}
	return r;
}

static int serve_zones_status(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_zones *svc = userdata;
	struct zrec *r = live_rec(svc, call, ((const Kin__V1__ZoneRequest *)in)->name);
	return r ? reply_info(svc, r, call) : 0;
}

static void zone_stopped(int status, void *data)
{
	(void)status, (void)data;
}

static int serve_zones_stop(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_zones *svc = userdata;
	const Kin__V1__ZoneStopRequest *m = (const Kin__V1__ZoneStopRequest *)in;
	struct zrec *r = live_rec(svc, call, m->name);
	if (!r)
		return 0;
	if (m->timeout_ms > 3600ull * 1000)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "zone \"%s\": stop timeout over 1 h", m->name);
	size_t i = 0;
	while (i < ZONE_STOP_WAITERS_MAX && r->waiters[i])
		i++;
	if (i == ZONE_STOP_WAITERS_MAX)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED,
		                     "zone \"%s\": %d stop calls wait already", m->name,
		                     ZONE_STOP_WAITERS_MAX);
	if (r->vm) {
		int e = api_vm_stop_as(svc->vms, r->name, m->timeout_ms);
		if (e < 0)
			return rpc_call_fail(call, ERR_NOT_FOUND, "zone \"%s\": its VM is gone",
			                     r->name);
	} else {
		struct zone_info zi;
		/* A second Stop waits for the first one's end. */
		if (zone_get(svc->zones, r->name, &zi, NULL) == 0 &&
		    (zi.state == ZONE_RUNNING || zi.state == ZONE_STARTING)) {
			struct err err = {0};
			int e = zone_stop(svc->zones, r->name, zone_stopped, NULL, &err);
			if (e < 0 && e != -EALREADY)
				return rpc_call_fail_err(call, &err, e);
		}
	}
	r->waiters[i] = call;
	rpc_call_on_cancel(call, stop_cancelled, r);
	return 0;
}

static int serve_zones_kill(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_zones *svc = userdata;
	struct zrec *r = live_rec(svc, call, ((const Kin__V1__ZoneRequest *)in)->name);
	if (!r)
		return 0;
	if (r->vm) {
		int e = api_vm_kill_as(svc->vms, r->name);
		if (e < 0)
			return rpc_call_fail(call, err_code_from_errno(e), "zone \"%s\": kill: %s",
			                     r->name, strerror(-e));
	} else {
		struct err err = {0};
		int e = zone_kill(svc->zones, r->name, &err);
		if (e < 0)
			return rpc_call_fail_err(call, &err, e);
	}
	log_info("zone \"%s\": killed over RPC", r->name);
	return reply_info(svc, r, call);
}

static const struct api_method zones_methods[] = {
    {serve_zones_create, 0}, {serve_zones_list, 0}, {serve_zones_status, 0},
    {serve_zones_stop, 0},   {serve_zones_kill, 0},
};
static const struct api_handlers zones_handlers = {&kin__v1__zones__descriptor, zones_methods,
                                                   ARRAY_SIZE(zones_methods), NULL};

/* Namespace zones come from zone/ over the cells library (none: they
 * answer FAILED_PRECONDITION naming why), VM zones from the Vm service
 * (none: this kin runs no VMs). */
static int zones_start(struct api *api, const struct api_config *cfg)
{
	struct api_zones *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->rpc = cfg->rpc;
	svc->vms = api->vm;
	svc->images = api->images;
	svc->changed = cfg->changed;
	svc->changed_data = cfg->changed_data;
	svc->depth = cfg->zones->depth;
	svc->depth_max = cfg->zones->depth_max ? cfg->zones->depth_max : ZONE_DEPTH_MAX_DEFAULT;
	list_init(&svc->recs);
	snprintf(svc->why, sizeof(svc->why), "no cgroup2 here for zones' cells");
	if (cfg->cells) {
		struct zone_events ev = {.gone = on_zone_gone, .data = svc};
		struct err err = {0};
		int r = zones_new(cfg->loop, cfg->children, cfg->cells, cfg->zones, &ev,
		                  &svc->zones, &err);
		if (r < 0) {
			snprintf(svc->why, sizeof(svc->why), "%s", err.msg);
			log_warn("zones: not available: %s", err.msg);
			svc->zones = NULL;
		}
	}
	int r = api_bind(svc->rpc, &svc->binding, &zones_handlers, svc);
	if (r < 0) {
		zones_free(svc->zones);
		free(svc);
		return r;
	}
	api->zones = svc;
	api_keep_add(api, &api_zones_part, svc);
	return 0;
}

void api_zones_stop_all(struct api_zones *svc)
{
	struct zrec *r, *next;
	if (!svc)
		return;
	list_for_each_safe(r, next, &svc->recs, node) {
		if (r->gone)
			continue;
		if (r->vm)
			api_vm_stop_as(svc->vms, r->name, 0);
		else if (svc->zones)
			zone_stop(svc->zones, r->name, zone_stopped, NULL, NULL);
	}
}

bool api_zones_all_gone(const struct api_zones *svc)
{
	return !svc || !svc->zones || zone_count(svc->zones) == 0;
}

/* Pending calls end UNAVAILABLE, zone/ is freed: before cells_free. */
static void zones_shutdown(struct api *api)
{
	struct api_zones *svc = api->zones;
	struct zrec *r;
	if (!svc)
		return;
	list_for_each(r, &svc->recs, node) {
		struct rpc_call *calls[ZONE_STOP_WAITERS_MAX + 1];
		memcpy(calls, r->waiters, sizeof(r->waiters));
		calls[ZONE_STOP_WAITERS_MAX] = r->create_call;
		memset(r->waiters, 0, sizeof(r->waiters));
		r->create_call = NULL;
		for (size_t i = 0; i < ARRAY_SIZE(calls); i++) {
			if (!calls[i])
				continue;
			rpc_call_on_cancel(calls[i], NULL, NULL);
			rpc_call_fail(calls[i], ERR_UNAVAILABLE, "zone \"%s\": kin is stopping",
			              r->name);
		}
	}
	zones_free(svc->zones);
	svc->zones = NULL;
}

static void zones_free_all(struct api *api)
{
	struct api_zones *svc = api->zones;
	struct zrec *r, *next;
	if (!svc)
		return;
	api_keep_remove(api, svc);
	list_for_each_safe(r, next, &svc->recs, node)
		api_zrec_free(r);
	api_binding_release(&svc->binding);
	free(svc);
	api->zones = NULL;
}

const struct api_service api_service_zones = {
    .name = "the Zones service",
    .start = zones_start,
    .shutdown = zones_shutdown,
    .free = zones_free_all,
};
