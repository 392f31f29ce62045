/* vm_state: the Vm service's VMs through a re-exec (their VMMs, links and
 * routes handed over) and after a crash (adopted from the state file by
 * their cells), as a participant of the handover (keep/). */
#include "api/vm-int.h"
#include "keep/keep.h"
#include "lib/state.h"

#include <string.h>

enum { AV_VM = 1 };
enum { AV_INFO = 1, AV_CELL_GONE, AV_ROUTE };

void api_vm_save(struct api_vm *svc, struct state_w *w, uint16_t tag)
{
	if (!svc)
		return;
	size_t at = state_open(w, tag);
	for (size_t i = 0; i < VM_MAX; i++) {
		struct vm_slot *x = &svc->vms[i];
		struct vm_info info;
		if (!x->used || vm_get(svc->m, x->name, &info) < 0)
			continue;
		/* A file for a successor: a plain child's VMM cannot be found
		 * again (no cell), nor one still starting. */
		if (w->file && (!info.cell[0] || info.state == VM_STATE_STARTING))
			continue;
		size_t v = state_open(w, AV_VM);
		vm_save(svc->m, x->name, w, AV_INFO);
		state_put_u64(w, AV_CELL_GONE, x->cell_gone);
		if (x->exited) /* a VM zone: its route is its name, its owner binds it again */
			state_put_str(w, AV_ROUTE, x->route);
		state_close(w, v);
	}
	state_close(w, at);
}

/* One VM back: the manager's entry, then its slot; a running VM's link is
 * its route "vm/NAME" as handed over, or connected to again. 1 taken, 0
 * not (logged). */
static int vm_take(struct api_vm *svc, const struct state_field *f, const char *how)
{
	struct state_field g, info_f = {0};
	struct state_r r;
	char route[RPC_ROUTE_NAME_MAX + 1], why[ERR_MSG_MAX] = "",
	                                    zone[RPC_ROUTE_NAME_MAX + 1] = "";
	uint64_t cell_gone = 0;
	int e = 0;
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0) {
		if (g.tag == AV_INFO)
			info_f = g;
		else if (g.tag == AV_CELL_GONE && (e = state_get_u64(&g, &cell_gone)) < 0)
			break;
		else if (g.tag == AV_ROUTE && (e = state_get_str(&g, zone, sizeof(zone))) < 0)
			break;
	}
	struct vm_info info = {0};
	if (e < 0 || !info_f.tag) {
		log_error("%s: a VM's record does not read; not taken over", how);
		return 0;
	}
	if (vm_restore(svc->m, &info_f, &info, why, sizeof(why)) < 0) {
		log_error("%s: vm \"%.64s\" cannot be taken over: %s", how,
		          info.name[0] ? info.name : "?", why);
		return 0;
	}
	/* A VM zone's route is the zone's name (its owner binds it again). */
	if (zone[0] && strcmp(zone, info.name) == 0 && name_is_valid(zone))
		str_copy(route, sizeof(route), zone);
	else
		api_vm_route_of(info.name, route, sizeof(route));
	struct vm_slot *x = NULL;
	for (size_t i = 0; i < VM_MAX && !x; i++)
		if (!svc->vms[i].used)
			x = &svc->vms[i];
	if (!x) { /* cannot happen: the manager holds as many */
		log_error("%s: vm \"%s\" cannot be taken over: no slot; its VMM is killed", how,
		          info.name);
		if (info.state != VM_STATE_EXITED)
			vm_kill(svc->m, info.name, SIGKILL);
		return 0;
	}
	*x = (struct vm_slot){.used = true, .svc = svc, .cell_gone = cell_gone != 0};
	str_copy(x->name, sizeof(x->name), info.name);
	str_copy(x->route, sizeof(x->route), route);
	enum rpc_route_state rs = rpc_route_state(svc->rpc, route);
	x->routed = rs != RPC_ROUTE_NONE;
	x->reprobe_ns = now_monotonic_ns() + VM_REPROBE_MS * 1000000ull;
	if (rs == RPC_ROUTE_CONNECTING)
		api_vm_tick_arm(svc, true); /* its guest not answering yet: asked again */
	if (info.state == VM_STATE_EXITED || rs == RPC_ROUTE_READY || rs == RPC_ROUTE_CONNECTING)
		return 1;
	/* Running, its link not handed over: QEMU's link socket takes a new
	 * connection, and the guest's kin is probed again. */
	if (x->routed)
		rpc_route_remove(svc->rpc, route, "the VM's link is connected again");
	x->routed = rpc_route_add(svc->rpc, route, -1, RPC_ROUTE_PROBE) == 0;
	x->linking = true;
	x->link_deadline_ns = now_monotonic_ns() + VM_LINK_WAIT_MS * 1000000ull;
	api_vm_link_try(svc, x, &info);
	api_vm_tick_arm(svc, true);
	return 1;
}

int api_vm_own(struct api_vm *svc, const char *name, api_vm_exited_fn exited, void *data)
{
	for (size_t i = 0; svc && i < VM_MAX; i++) {
		struct vm_slot *x = &svc->vms[i];
		if (x->used && !x->exited && strcmp(x->name, name) == 0 &&
		    strcmp(x->route, name) == 0) {
			x->exited = exited;
			x->exited_data = data;
			return 0;
		}
	}
	return -ENOENT;
}

int api_vm_restore(struct api_vm *svc, const struct state_field *f, const char *how)
{
	struct state_r r;
	struct state_field g;
	int e, n = 0;
	if (!svc)
		return -ENODEV;
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0)
		if (g.tag == AV_VM)
			n += vm_take(svc, &g, how);
	/* What no record named, or a record that did not read left, goes:
	 * no VMM runs unmanaged, no name stays blocked. */
	api_vm_cells_sweep(svc->vc, how);
	return e < 0 ? e : n;
}

int api_vm_adopt(struct api_vm *svc, const struct state_field *f)
{
	if (f)
		return api_vm_restore(svc, f, "adopt");
	api_vm_cells_sweep(svc->vc, "adopt");
	return 0;
}

/* The VMs as a participant of the handover: before the zones (a VM zone's
 * owner binds its VM again). */
static int vm_keep_start(void *data, const struct keep_from *from)
{
	int n = 0;
	if (from->how == KEEP_REEXEC && from->record)
		n = api_vm_restore(data, from->record, from->how_name);
	else if (from->how == KEEP_ADOPT)
		n = api_vm_adopt(data, from->record);
	if (n > 0)
		log_info("%s: %d VMs %s", from->how_name, n,
		         from->how == KEEP_ADOPT ? "adopted" : "taken over");
	return n < 0 ? n : 0;
}

static int vm_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	api_vm_save(data, w, tag);
	return 0;
}

static bool vm_keep_settled(void *data, char *why, size_t size)
{
	return api_vm_settled(data, why, size);
}

static size_t vm_keep_children(void *data)
{
	return api_vm_children(data);
}

const struct keep_part api_vm_keep_part = {.name = "the VMs",
                                           .tag = KEEP_TAG_VMS,
                                           .level = KEEP_LEVEL_VMS,
                                           .start = vm_keep_start,
                                           .save = vm_keep_save,
                                           .settled = vm_keep_settled,
                                           .children = vm_keep_children};
