/* api: the kin.v1 services. Each binds decoded requests (messages from
 * proto/) to the module below that does the work — cells/, zone/, vm/ —
 * and its answers back to the wire (rpc/). init wires them into its
 * server; nothing below api/ knows a service exists.
 * Read this header first; README.md documents the user-facing side. */
#pragma once

#include "rpc/rpc.h"

/* ---- services ------------------------------------------------------------------ */

/* What Health reports; init fills it in (rpc never includes init). Strings
 * and data must outlive the server. */
struct rpc_health_info {
	const char *version;
	const char *role;
	const char *zone;    /* "" unless role is zone */
	uint64_t started_ns; /* CLOCK_MONOTONIC when kin started */
	bool (*stopping)(void *data);
	void *data;
};
int rpc_health_register(struct rpc_server *s, const struct rpc_health_info *info);

/* ---- System: Poweroff, Reboot (rpc/system.c) ---------------------------------------- */

/* What init does on Poweroff/Reboot. stop is called twice: dry_run to
 * learn the action's name ("poweroff", "reboot", "stop") or an -errno
 * (-EOPNOTSUPP: a zone cannot reboot), then, once the answer is queued,
 * for real. */
struct rpc_system_ops {
	const char *role;
	int (*stop)(bool reboot, bool dry_run, const char **ret_action, void *data);
	void *data;
};
int rpc_system_register(struct rpc_server *s, const struct rpc_system_ops *ops);

/* ---- Vm: microVMs run by this kin (rpc/vmsvc.c) ----------------------------------- */

struct rpc_vm_service;
struct child_table;
/* Registers kin.v1.Vm with a VM manager (vm/) running in this kin's loop;
 * each VM's link becomes route "vm/NAME". state_dir NULL: /run/kin/vm. */
int rpc_vm_register(struct rpc_server *s, struct child_table *children, const char *state_dir,
                    struct rpc_vm_service **ret);
/* VMMs start in cells of their own (vms/NAME, executable "vmm") from now
 * on; cells NULL: as plain children of kin, why says so in VmInfo. */
struct cells;
void rpc_vm_use_cells(struct rpc_vm_service *svc, struct cells *cells, const char *why);
/* kin is stopping: every running VM is asked to power off over its link
 * (then Ctrl-Alt-Del, SIGKILL after timeout_ms). Returns how many. */
size_t rpc_vm_stop_all(struct rpc_vm_service *svc, uint64_t timeout_ms);
/* VMs whose VMM has not exited yet. */
size_t rpc_vm_running(struct rpc_vm_service *svc);
/* Pending Stop calls end UNAVAILABLE, VMM ends are no longer reported;
 * before the cells library goes (init_cells_shutdown) and rpc_server_free. */
void rpc_vm_shutdown(struct rpc_vm_service *svc);
void rpc_vm_free(struct rpc_vm_service *svc);

/* ---- Zones: nested kins run by this kin (rpc/svc_zones.c) -------------------------- */

struct cells;
struct zones_config;
struct rpc_zones_service;
/* Registers kin.v1.Zones (rpc/zone.proto). Namespace zones come from
 * zone/ over cells (NULL: they answer FAILED_PRECONDITION naming why), VM
 * zones from the Vm service vms (NULL: none); each zone is route NAME. */
int rpc_zones_register(struct rpc_server *s, struct child_table *children, struct cells *cells,
                       const struct zones_config *cfg, struct rpc_vm_service *vms, const char *why,
                       struct rpc_zones_service **ret);
/* kin is stopping: every zone is asked to stop (its kin stops its cells). */
void rpc_zones_stop_all(struct rpc_zones_service *svc);
/* No namespace zone left, cleanup included (kin may exit). */
bool rpc_zones_idle(const struct rpc_zones_service *svc);
/* Pending calls end UNAVAILABLE, zone/ is freed: before cells_free. */
void rpc_zones_shutdown(struct rpc_zones_service *svc);
/* After rpc_server_free. NULL is fine. */
void rpc_zones_free(struct rpc_zones_service *svc);

/* ---- cells services (rpc/cells.proto: Cells, Exec, Events) --------------------- */

struct cells;
struct rpc_cells_service;
/* Registers Cells, Exec and Events over a cells library. cells NULL: every
 * call answers FAILED_PRECONDITION naming why ("no cgroup2 mount"). */
int rpc_cells_register(struct rpc_server *s, struct cells *cells, const char *why,
                       struct rpc_cells_service **ret);
/* Ends every open stream and pending call (UNAVAILABLE: kin is stopping) and
 * stops using cells: call it before cells_free. */
void rpc_cells_shutdown(struct rpc_cells_service *svc);
/* After rpc_server_free and cells_free. NULL is fine. */
void rpc_cells_free(struct rpc_cells_service *svc);
