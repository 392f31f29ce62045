/* vm: kin.v1.Vm — microVMs run by this kin. vm/'s manager starts each
 * VMM, in a cell of its own (vms/NAME, vm_cells.c) where kin has cells,
 * else as a plain child tracked by pidfd; this file adds the RPC side:
 * once QEMU has made the VM's link socket, kin connects to it and adds
 * route "vm/NAME" (probed: it is ready when the guest's kin answers
 * Health/Check), so `kin ctl --target vm/NAME ...` reaches the guest. Stop
 * is vm/'s escalation (vm_stop), this file giving it the first step: a
 * Poweroff over the link; it is answered when the VMM has exited, with its
 * exit status. */
#include "api/vm-int.h"
#include "lib/state.h"

#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

static struct vm_slot *slot_find(struct api_vm *svc, const char *name)
{
	for (size_t i = 0; i < VM_MAX; i++)
		if (svc->vms[i].used && strcmp(svc->vms[i].name, name) == 0)
			return &svc->vms[i];
	return NULL;
}

/* The route of a VM of this service: "vm/NAME". */
void api_vm_route_of(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "vm/%s", name);
}

/* The grammar of this kin's route names, which rpc/ is given: a zone is
 * one word ("pod1"), a VM two ("vm/NAME"), so "vm" names no zone. */
static size_t route_hop_words(const char *target)
{
	return str_startswith(target, "vm/") ? 2 : 1;
}

static bool route_name_valid(const char *name)
{
	if (str_startswith(name, "vm/"))
		return name_is_valid(name + 3);
	return name_is_valid(name) && strcmp(name, "vm") != 0;
}

const struct rpc_route_names api_route_names = {
    .hop_words = route_hop_words,
    .valid = route_name_valid,
    .what = "zone or VM",
    .expect = "a zone name or vm/NAME",
};

static const char *state_name(enum vm_state s)
{
	return s == VM_STATE_RUNNING    ? "running"
	       : s == VM_STATE_STOPPING ? "stopping"
	       : s == VM_STATE_STARTING ? "starting"
	                                : "exited";
}

/* Fills out from info; strings point into info and x. */
static void info_fill(Kin__V1__VmInfo *out, const struct vm_info *info, struct api_vm *svc)
{
	struct vm_slot *x = slot_find(svc, info->name);
	kin__v1__vm_info__init(out);
	out->name = (char *)info->name;
	out->state = (char *)state_name(info->state);
	out->pid = (uint32_t)info->pid;
	out->accel = (char *)vm_accel_name(info->accel);
	out->cpus = info->cpus;
	out->memory_mb = info->memory_mb;
	out->exit_status = info->exit_status;
	out->console_log = (char *)info->paths.console;
	out->link = (char *)info->paths.link;
	out->route = x ? x->route : (char *)"";
	out->link_ready = x && rpc_route_state(svc->rpc, x->route) == RPC_ROUTE_READY &&
	                  info->state != VM_STATE_EXITED;
	out->uptime_ns = info->state == VM_STATE_EXITED ? 0 : now_monotonic_ns() - info->started_ns;
	bool gone = x && x->cell_gone;
	out->cell = gone ? (char *)"" : (char *)info->cell;
	out->vmm_note = gone            ? (char *)"ended; its cell was deleted"
	                : info->cell[0] ? (char *)""
	                                : svc->cells_why;
	out->vsock_cid = info->vsock_cid;
}

void api_vm_tick_arm(struct api_vm *svc, bool on)
{
	if (on == svc->ticking)
		return;
	struct itimerspec its = {0};
	if (on)
		its.it_value.tv_nsec = its.it_interval.tv_nsec = VM_TICK_MS * 1000000L;
	if (timerfd_settime(svc->timer.fd, 0, &its, NULL) == 0)
		svc->ticking = on;
}

void api_vm_link_try(struct api_vm *svc, struct vm_slot *x, const struct vm_info *info)
{
	int fd = sock_unix_connect(info->paths.link, 0);
	if (fd < 0) {
		if (now_monotonic_ns() > x->link_deadline_ns) {
			char why[160];
			x->linking = false;
			snprintf(why, sizeof(why), "cannot connect to the VM's link: %s",
			         strerror(-fd));
			log_warn("vm \"%s\": %s (%s)", x->name, why, info->paths.link);
			rpc_route_close(svc->rpc, x->route, why);
		}
		return;
	}
	x->linking = false;
	x->reprobe_ns = now_monotonic_ns() + VM_REPROBE_MS * 1000000ull;
	int r = rpc_route_attach(svc->rpc, x->route, fd);
	close(fd);
	if (r < 0) {
		log_warn("vm \"%s\": cannot attach route %s: %s", x->name, x->route, strerror(-r));
		rpc_route_close(svc->rpc, x->route, "cannot attach the VM's link");
	}
}

/* vm/'s stop hook: Poweroff over the link (the route), answered later. */
static void poweroff_done(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct vm_slot *x = data;
	(void)payload, (void)len;
	if (!x->used || !x->stopping || st->code == ERR_OK)
		return;
	log_info("vm \"%s\": Poweroff over the link failed: %s", x->name, st->msg);
	vm_stop_poweroff_failed(x->svc->m, x->name);
}

static int stop_poweroff(void *data, const char *name)
{
	struct api_vm *svc = data;
	struct vm_slot *x = slot_find(svc, name);
	Kin__V1__PoweroffRequest in = KIN__V1__POWEROFF_REQUEST__INIT;
	if (!x)
		return -ENOENT;
	return api_route_call(svc->rpc, x->route, &kin__v1__system__descriptor, &in.base,
	                      poweroff_done, x);
}

static void on_tick(struct ev_source *src, uint32_t events)
{
	struct api_vm *svc = src->data;
	uint64_t ticks;
	bool more = false;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	for (size_t i = 0; i < VM_MAX; i++) {
		struct vm_slot *x = &svc->vms[i];
		struct vm_info info;
		if (!x->used || vm_get(svc->m, x->name, &info) < 0 || info.state == VM_STATE_EXITED)
			continue;
		if (x->linking)
			api_vm_link_try(svc, x, &info);
		/* A probe lost on the way (the guest had its link port closed,
		 * as after its host kin changed) is sent again until answered. */
		bool probing = !x->linking && x->routed &&
		               rpc_route_state(svc->rpc, x->route) == RPC_ROUTE_CONNECTING;
		if (probing && now_monotonic_ns() >= x->reprobe_ns) {
			rpc_route_reprobe(svc->rpc, x->route);
			x->reprobe_ms = x->reprobe_ms ? x->reprobe_ms * 2 : VM_REPROBE_MS;
			if (x->reprobe_ms > VM_REPROBE_MAX_MS)
				x->reprobe_ms = VM_REPROBE_MAX_MS;
			x->reprobe_ns = now_monotonic_ns() + x->reprobe_ms * 1000000ull;
		}
		more |= x->linking || probing;
	}
	if (!more)
		api_vm_tick_arm(svc, false);
}

/* The VM has ended (or never ran): every Stop waiting on it hears so. */
static void stop_waiters_answer(struct vm_slot *x, Kin__V1__VmInfo *out)
{
	for (size_t i = 0; i < VM_STOP_WAITERS_MAX; i++) {
		struct rpc_call *call = x->waiters[i];
		if (!call)
			continue;
		x->waiters[i] = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		rpc_call_reply(call, &out->base);
	}
}

static void on_exited(void *data, const struct vm_info *info)
{
	struct api_vm *svc = data;
	struct vm_slot *x = slot_find(svc, info->name);
	if (!x)
		return;
	if (!x->stopping)
		log_warn("vm \"%s\": the VMM ended on its own with status %d%s%s%s", info->name,
		         info->exit_status, info->cell[0] ? " (its cell " : "", info->cell,
		         info->cell[0] ? " stays for its logs)" : "");
	/* Asked to end (or a VM zone, gone with it): nothing to look back at. */
	if (info->cell[0] && (x->stopping || x->exited)) {
		x->cell_gone = true;
		api_vm_cells_release(svc->vc, x->name);
	}
	x->linking = false;
	/* The route stays, down, so that callers hear UNAVAILABLE, not NOT_FOUND. */
	if (x->routed) {
		char why[96];
		snprintf(why, sizeof(why), "the VM's VMM exited with status %d", info->exit_status);
		if (x->exited) { /* a VM zone: gone from the list, its name free again */
			rpc_route_remove(svc->rpc, x->route, why);
			x->routed = false;
		} else {
			rpc_route_close(svc->rpc, x->route, why);
		}
	}
	Kin__V1__VmInfo out;
	info_fill(&out, info, svc);
	stop_waiters_answer(x, &out);
	x->stopping = false;
	if (svc->changed)
		svc->changed(svc->changed_data);
	if (x->exited)
		x->exited(info, NULL, x->exited_data);
}

/* A start is over: Start is answered; a VM that did not start is gone
 * (the manager forgot it): its stop calls and owner hear so, its route
 * and slot go. */
static void on_started(void *data, const struct vm_info *info, const struct err *e)
{
	struct api_vm *svc = data;
	struct vm_slot *x = slot_find(svc, info->name);
	if (!x)
		return;
	struct rpc_call *call = x->start_call;
	x->start_call = NULL;
	if (call)
		rpc_call_on_cancel(call, NULL, NULL);
	Kin__V1__VmInfo out;
	info_fill(&out, info, svc);
	if (!e) {
		if (svc->changed)
			svc->changed(svc->changed_data);
		if (call)
			rpc_call_reply(call, &out.base);
		return;
	}
	if (call)
		rpc_call_fail_err(call, e, e->errnum ? e->errnum : -EIO);
	stop_waiters_answer(x, &out);
	if (x->routed)
		rpc_route_remove(svc->rpc, x->route, e->msg);
	api_vm_exited_fn exited = x->exited;
	void *exited_data = x->exited_data;
	*x = (struct vm_slot){0};
	if (exited)
		exited(info, e, exited_data);
}

static void start_cancelled(struct rpc_call *call, void *data)
{
	struct vm_slot *x = data;
	(void)call;
	x->start_call = NULL; /* the start goes on; its caller is gone */
}

/* ---- handlers -------------------------------------------------------------------------- */

static int serve_vm_start(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_vm *svc = userdata;
	const Kin__V1__VmStartRequest *m = (const Kin__V1__VmStartRequest *)in;
	struct vm_spec spec;
	struct err e = {0};

	const struct vm_request q = {.what = "vm",
	                             .name = m->name,
	                             .kernel = m->kernel,
	                             .image = m->image,
	                             .disk = m->disk,
	                             .append = m->append,
	                             .cpus = m->cpus,
	                             .memory_mb = m->memory_mb,
	                             .accel = m->accel};
	if (vm_spec_fill(&spec, &q, &e) < 0)
		return rpc_call_fail(call, e.code, "%s", e.msg);
	struct cell_limits limits = {0};
	if (m->n_limits > VM_LIMITS_MAX)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "vm \"%.64s\": %zu limits, at most %d", m->name, m->n_limits,
		                     VM_LIMITS_MAX);
	if (m->n_limits && !svc->vc)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "vm \"%.64s\": limits need the VMM in a cell: %s", m->name,
		                     svc->cells_why);
	for (size_t i = 0; i < m->n_limits; i++) {
		struct err ce = {0};
		int r = cell_limit_parse(&limits, m->limits[i]->key, m->limits[i]->value, &ce);
		if (r < 0)
			return rpc_call_fail(call, ERR_INVALID_ARGUMENT, "vm \"%.64s\": %s",
			                     m->name, ce.msg[0] ? ce.msg : strerror(-r));
	}
	char route[RPC_ROUTE_NAME_MAX + 1];
	api_vm_route_of(spec.name, route, sizeof(route));
	api_vm_cells_set_limits(svc->vc, m->n_limits ? &limits : NULL);
	int r = api_vm_start_as(svc, &spec, route, NULL, NULL, &e);
	api_vm_cells_set_limits(svc->vc, NULL);
	if (r < 0)
		return rpc_call_fail(call, e.code, "%s", e.msg);
	struct vm_info info;
	struct vm_slot *x = slot_find(svc, m->name);
	if (!x || vm_get(svc->m, m->name, &info) < 0)
		return rpc_call_fail(call, ERR_UNAVAILABLE, "vm \"%s\": did not start", m->name);
	if (info.state == VM_STATE_STARTING) {
		x->start_call = call; /* answered by on_started */
		rpc_call_on_cancel(call, start_cancelled, x);
		return 0;
	}
	Kin__V1__VmInfo out;
	info_fill(&out, &info, svc);
	return rpc_call_reply(call, &out.base);
}

int api_vm_start_as(struct api_vm *svc, const struct vm_spec *spec, const char *route,
                    api_vm_exited_fn exited, void *data, struct err *e)
{
	struct vm_slot *x = slot_find(svc, spec->name);
	struct vm_info old;
	if (x && vm_get(svc->m, spec->name, &old) == 0 && old.state != VM_STATE_EXITED)
		return err_set(e, -EEXIST, ERR_ALREADY_EXISTS, "vm \"%s\" already exists (%s)",
		               spec->name, state_name(old.state));
	int r = vm_start(svc->m, spec, e);
	if (r < 0)
		return r;
	if (!x)
		for (size_t i = 0; i < VM_MAX && !x; i++)
			if (!svc->vms[i].used)
				x = &svc->vms[i];
	if (!x) /* cannot happen: the manager holds as many */
		return err_set(e, -ENOSPC, ERR_RESOURCE_EXHAUSTED, "vm \"%s\": no slot",
		               spec->name);
	if (x->routed)
		rpc_route_remove(svc->rpc, x->route, "replaced");
	*x = (struct vm_slot){.used = true,
	                      .linking = true,
	                      .link_deadline_ns = now_monotonic_ns() + VM_LINK_WAIT_MS * 1000000ull,
	                      .svc = svc,
	                      .exited = exited,
	                      .exited_data = data};
	str_copy(x->name, sizeof(x->name), spec->name);
	str_copy(x->route, sizeof(x->route), route);
	/* Named at once: callers hear UNAVAILABLE until the guest answers. */
	r = rpc_route_add(svc->rpc, x->route, -1, RPC_ROUTE_PROBE);
	if (r < 0)
		log_warn("vm \"%s\": cannot add route %s: %s", x->name, x->route, strerror(-r));
	x->routed = r == 0;
	struct vm_info info;
	vm_get(svc->m, spec->name, &info);
	api_vm_link_try(svc, x, &info);
	api_vm_tick_arm(svc, true); /* the link, then the guest's first answer */
	return ERR_OK;
}

static void list_one(const struct vm_info *info, void *data)
{
	void **ctx = data;
	Kin__V1__VmListResponse *out = ctx[0];
	struct api_vm *svc = ctx[1];
	struct vm_info *infos = ctx[2];
	Kin__V1__VmInfo *items = ctx[3];
	size_t i = out->n_vms++;
	infos[i] = *info;
	info_fill(&items[i], &infos[i], svc);
	out->vms[i] = &items[i];
}

static int serve_vm_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_vm *svc = userdata;
	Kin__V1__VmListResponse out = KIN__V1__VM_LIST_RESPONSE__INIT;
	(void)in;
	_cleanup_free_ struct vm_info *infos = calloc(VM_MAX, sizeof(*infos));
	_cleanup_free_ Kin__V1__VmInfo *items = calloc(VM_MAX, sizeof(*items));
	_cleanup_free_ Kin__V1__VmInfo **ptrs = calloc(VM_MAX, sizeof(*ptrs));
	if (!infos || !items || !ptrs)
		return -ENOMEM;
	out.vms = ptrs;
	void *ctx[] = {&out, svc, infos, items};
	vm_foreach(svc->m, list_one, ctx);
	return rpc_call_reply(call, &out.base);
}

static int serve_vm_status(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_vm *svc = userdata;
	const Kin__V1__VmRequest *m = (const Kin__V1__VmRequest *)in;
	struct vm_info info;
	if (vm_get(svc->m, m->name, &info) < 0)
		return rpc_call_fail(call, ERR_NOT_FOUND, "vm \"%.64s\" does not exist", m->name);
	Kin__V1__VmInfo out;
	info_fill(&out, &info, svc);
	return rpc_call_reply(call, &out.base);
}

/* The stop is vm/'s (vm_stop); this side waits for its end. */
static int stop_begin(struct api_vm *svc, struct vm_slot *x, uint64_t timeout_ms, struct err *e)
{
	int r = vm_stop(svc->m, x->name, timeout_ms, e);
	if (r == 0)
		x->stopping = true;
	return r;
}

static void stop_cancelled(struct rpc_call *call, void *data)
{
	struct vm_slot *x = data;
	for (size_t i = 0; i < VM_STOP_WAITERS_MAX; i++)
		if (x->waiters[i] == call)
			x->waiters[i] = NULL;
}

static int serve_vm_stop(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_vm *svc = userdata;
	const Kin__V1__VmStopRequest *m = (const Kin__V1__VmStopRequest *)in;
	struct vm_info info;
	struct vm_slot *x = slot_find(svc, m->name);
	if (!x || vm_get(svc->m, m->name, &info) < 0)
		return rpc_call_fail(call, ERR_NOT_FOUND, "vm \"%.64s\" does not exist", m->name);
	if (info.state == VM_STATE_EXITED) {
		/* It ended on its own: its cell, kept for its logs, goes now. */
		if (info.cell[0] && !x->cell_gone) {
			x->cell_gone = true;
			api_vm_cells_release(svc->vc, x->name);
		}
		Kin__V1__VmInfo out;
		info_fill(&out, &info, svc);
		return rpc_call_reply(call, &out.base);
	}
	if (m->timeout_ms > 3600ull * 1000)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT, "vm \"%s\": stop timeout over 1 h",
		                     m->name);
	size_t i = 0;
	while (i < VM_STOP_WAITERS_MAX && x->waiters[i])
		i++;
	if (i == VM_STOP_WAITERS_MAX)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED,
		                     "vm \"%s\": %d stop calls wait already", m->name,
		                     VM_STOP_WAITERS_MAX);
	struct err e = {0};
	if (stop_begin(svc, x, m->timeout_ms, &e) < 0)
		return rpc_call_fail(call, e.code, "%s", e.msg);
	x->waiters[i] = call;
	rpc_call_on_cancel(call, stop_cancelled, x);
	return 0;
}

/* Running (not exited) VM of that name, or NULL. */
static struct vm_slot *live_find(struct api_vm *svc, const char *name, struct vm_info *ret)
{
	struct vm_slot *x = slot_find(svc, name);
	if (!x || vm_get(svc->m, name, ret) < 0 || ret->state == VM_STATE_EXITED)
		return NULL;
	return x;
}

int api_vm_stop_as(struct api_vm *svc, const char *name, uint64_t timeout_ms)
{
	struct vm_info info;
	struct vm_slot *x = live_find(svc, name, &info);
	if (!x)
		return -ENOENT;
	return stop_begin(svc, x, timeout_ms, NULL);
}

int api_vm_kill_as(struct api_vm *svc, const char *name)
{
	struct vm_info info;
	struct vm_slot *x = live_find(svc, name, &info);
	if (!x)
		return -ENOENT;
	return vm_kill(svc->m, name, SIGKILL);
}

struct pause_req {
	void (*done)(int result, const struct err *err, void *data);
	void *data;
};

static void paused(void *data, const char *name, enum vm_op op, const struct err *e)
{
	struct pause_req *q = data;
	(void)name, (void)op;
	q->done(e ? (e->errnum ? e->errnum : -EIO) : 0, e, q->data);
	free(q);
}

int api_vm_pause_as(struct api_vm *svc, const char *name, bool pause,
                    void (*done)(int result, const struct err *err, void *data), void *data,
                    struct err *e)
{
	struct vm_info info;
	struct pause_req *q;
	if (!live_find(svc, name, &info))
		return err_set(e, -ENOENT, ERR_NOT_FOUND, "vm \"%s\" is not running", name);
	if (!(q = malloc(sizeof(*q))))
		return err_set(e, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "vm \"%s\": out of memory",
		               name);
	*q = (struct pause_req){done, data};
	int r = vm_request(svc->m, name, pause ? VM_OP_PAUSE : VM_OP_RESUME, paused, q, e);
	if (r < 0)
		free(q);
	return r < 0 ? r : 1;
}

int api_vm_get_as(struct api_vm *svc, const char *name, struct vm_info *ret, bool *ret_ready)
{
	struct vm_slot *x = slot_find(svc, name);
	if (!x || vm_get(svc->m, name, ret) < 0)
		return -ENOENT;
	*ret_ready =
	    rpc_route_state(svc->rpc, x->route) == RPC_ROUTE_READY && ret->state != VM_STATE_EXITED;
	return 0;
}

size_t api_vm_stop_all(struct api_vm *svc, uint64_t timeout_ms)
{
	size_t n = 0;
	for (size_t i = 0; svc && i < VM_MAX; i++) {
		struct vm_info info;
		struct vm_slot *x = &svc->vms[i];
		if (x->used && live_find(svc, x->name, &info) &&
		    stop_begin(svc, x, timeout_ms, NULL) == 0)
			n++;
	}
	return n;
}

size_t api_vm_running(struct api_vm *svc)
{
	size_t n = 0;
	for (size_t i = 0; svc && i < VM_MAX; i++) {
		struct vm_info info;
		if (svc->vms[i].used && live_find(svc, svc->vms[i].name, &info))
			n++;
	}
	return n;
}

/* ---- re-exec ---- */

bool api_vm_settled(const struct api_vm *svc, char *why, size_t size)
{
	if (!svc)
		return true;
	for (size_t i = 0; i < VM_MAX; i++) {
		const struct vm_slot *x = &svc->vms[i];
		const char *what = !x->used        ? NULL
		                   : x->start_call ? "starting"
		                   : x->stopping   ? "stopping"
		                   : x->linking    ? "connecting to its link"
		                                   : NULL;
		if (what) {
			snprintf(why, size, "vm \"%s\" is %s", x->name, what);
			return false;
		}
	}
	return vm_settled(svc->m, why, size);
}

size_t api_vm_children(const struct api_vm *svc)
{
	return svc ? vm_children(svc->m) : 0;
}

static const struct api_method vm_methods[] = {
    {serve_vm_start, 0},
    {serve_vm_list, 0},
    {serve_vm_status, 0},
    {serve_vm_stop, 0},
};
static const struct api_handlers vm_handlers = {&kin__v1__vm__descriptor, vm_methods,
                                                ARRAY_SIZE(vm_methods), NULL};

/* VMMs start in cells of their own (vms/NAME, executable "vmm") where kin
 * has cells; else as plain children of kin, why says so in VmInfo. */
static void vm_use_cells(struct api_vm *svc, struct cells *cells, const char *why)
{
	snprintf(svc->cells_why, sizeof(svc->cells_why), "a plain child of kin: %s",
	         why && why[0] ? why : "no cells here");
	if (!cells || api_vm_cells_new(svc->loop, cells, svc->m, &svc->vc) < 0) {
		if (cells)
			log_warn("vm: out of memory; VMMs run as plain children");
		return;
	}
	struct vm_runner runner;
	api_vm_cells_runner(svc->vc, &runner);
	vm_manager_set_runner(svc->m, &runner);
}

static void vm_free_state(struct api_vm *svc)
{
	if (svc->timer.fd >= 0) {
		ev_del(svc->loop, &svc->timer);
		close(svc->timer.fd);
	}
	vm_manager_free(svc->m);
	api_vm_cells_free(svc->vc);
	api_binding_release(&svc->binding);
	free(svc);
}

static int vm_start_service(struct api *api, const struct api_config *cfg)
{
	struct api_vm *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->rpc = cfg->rpc;
	svc->loop = cfg->loop;
	svc->changed = cfg->changed;
	svc->changed_data = cfg->changed_data;
	svc->timer.fd = -1;
	struct vm_events ev = {.started = on_started, .exited = on_exited, .data = svc};
	int r = vm_manager_new(svc->loop, cfg->children, cfg->vm_dir, &ev, &svc->m);
	if (r < 0) {
		free(svc);
		return r;
	}
	svc->timer =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = on_tick,
	                       .data = svc};
	if (svc->timer.fd < 0 || ev_add(svc->loop, &svc->timer, EPOLLIN) < 0)
		r = -errno;
	else
		r = api_bind(svc->rpc, &svc->binding, &vm_handlers, svc);
	if (r < 0) {
		vm_free_state(svc);
		return r;
	}
	vm_use_cells(svc, cfg->cells, cfg->cells_why);
	struct vm_stop_hooks hooks = {.poweroff = stop_poweroff, .data = svc};
	vm_manager_set_stop_hooks(svc->m, &hooks);
	api->vm = svc;
	api_keep_add(api, &api_vm_keep_part, svc);
	return 0;
}

/* Pending Stop calls end UNAVAILABLE, VMM ends are no longer reported;
 * before the cells library goes. */
static void vm_shutdown(struct api *api)
{
	struct api_vm *svc = api->vm;
	if (!svc)
		return;
	api_vm_cells_close(svc->vc); /* the cells go with kin */
	vm_manager_set_runner(svc->m, NULL);
	for (size_t i = 0; i < VM_MAX; i++) {
		struct vm_slot *x = &svc->vms[i];
		for (size_t k = 0; k < VM_STOP_WAITERS_MAX; k++) {
			struct rpc_call *call = x->waiters[k];
			if (!call)
				continue;
			x->waiters[k] = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			rpc_call_fail(call, ERR_UNAVAILABLE, "vm \"%s\": kin is stopping", x->name);
		}
		if (x->start_call) {
			rpc_call_on_cancel(x->start_call, NULL, NULL);
			rpc_call_fail(x->start_call, ERR_UNAVAILABLE, "vm \"%s\": kin is stopping",
			              x->name);
			x->start_call = NULL;
		}
		x->stopping = false;
		if (x->routed)
			rpc_route_remove(svc->rpc, x->route, "kin is stopping");
		x->routed = false;
		x->used = false;
	}
}

static void vm_free(struct api *api)
{
	api_keep_remove(api, api->vm);
	if (api->vm)
		vm_free_state(api->vm);
	api->vm = NULL;
}

const struct api_service api_service_vm = {
    .name = "the Vm service",
    .start = vm_start_service,
    .shutdown = vm_shutdown,
    .free = vm_free,
};
