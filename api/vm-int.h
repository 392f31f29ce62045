/* vm-int: the Vm service's own state, shared by api/vm.c (the RPC side)
 * and api/vm_state.c (its VMs through a re-exec or a crash). */
#pragma once

#include "api/api-int.h"
#include "api/vm_cells-int.h"
#include "vm/vm.h"

#define VM_TICK_MS          100
#define VM_STOP_WAITERS_MAX 8
#define VM_LINK_WAIT_MS     10000 /* QEMU makes link.sock at start; retry this long */
#define VM_REPROBE_MS       1000  /* a guest's kin not answering yet is asked again, */
#define VM_REPROBE_MAX_MS   8000  /* backing off to this */
#define VM_LIMITS_MAX       32

struct vm_slot {
	bool used;
	char name[NAME_MAX_LEN + 1];
	char route[RPC_ROUTE_NAME_MAX + 1];
	bool linking; /* connecting to link.sock */
	bool routed;
	uint64_t link_deadline_ns;
	uint64_t reprobe_ns; /* connected, the guest's kin silent: ask again then */
	unsigned reprobe_ms; /* the wait after the next probe */
	bool stopping;       /* asked to end (vm_stop): its end is no surprise */
	bool cell_gone;      /* the VMM was asked to end and did: its cell went */
	struct rpc_call *waiters[VM_STOP_WAITERS_MAX];
	struct rpc_call *start_call; /* a Start answered once the VMM runs */
	struct api_vm *svc;
	api_vm_exited_fn exited; /* a VM zone's owner (zones.c), told at exit */
	void *exited_data;
};

struct api_vm {
	struct rpc_server *rpc;
	struct ev_loop *loop;
	struct vm_manager *m;
	struct api_vm_cells *vc; /* NULL: VMMs are plain children (cells_why) */
	char cells_why[200];
	struct ev_source timer;
	bool ticking;
	struct vm_slot vms[VM_MAX];
	struct api_binding binding;
	void (*changed)(void *data); /* api_config's */
	void *changed_data;
};

/* "vm/NAME", the route of a VM (not a VM zone's). */
void api_vm_route_of(const char *name, char *buf, size_t size);
/* The service's timer on or off (links to make, guests to ask again). */
void api_vm_tick_arm(struct api_vm *svc, bool on);
/* Connects to x's link socket once QEMU made it; the route then. */
void api_vm_link_try(struct api_vm *svc, struct vm_slot *x, const struct vm_info *info);
/* The VMs as a participant of the handover (api/vm_state.c). */
extern const struct keep_part api_vm_keep_part;
