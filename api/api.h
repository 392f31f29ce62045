/* api: the kin.v1 services. Each binds decoded requests (messages from
 * proto/) to the module below that does the work — cells/, zone/, vm/ —
 * and its answers back to the wire (rpc/). init starts them as one list
 * (api_start) and ends them as one (api_shutdown, api_free); nothing below
 * api/ knows a service exists.
 * Read this header first; docs/ documents the user-facing side. */
#pragma once

#include "rpc/rpc.h"

struct cells;
struct child_table;
struct zones_config;
struct units;
struct keep;

/* What Health reports; init fills it in (api never includes init). Strings
 * and data must outlive the server. */
struct api_health_info {
	const char *version;
	const char *role;
	const char *zone;    /* "" unless role is zone */
	uint64_t started_ns; /* CLOCK_MONOTONIC when kin started (the first exec) */
	bool (*stopping)(void *data);
	/* Re-execs so far, and why the last one fell back ("" none). */
	void (*reexecs)(uint64_t *ret_count, const char **ret_error, void *data);
	void *data;
};

/* What init does on System Poweroff/Reboot. stop is called twice: dry_run
 * to learn the action's name ("poweroff", "reboot", "stop") or an -errno
 * (-EOPNOTSUPP: a zone cannot reboot), then, once the answer is queued,
 * for real. */
struct api_system_ops {
	const char *role;
	int (*stop)(bool reboot, bool dry_run, const char **ret_action, void *data);
	/* System/ReloadPolicy: re-reads the policy; on error err says why and
	 * the old policy stays. *ret_source: the file ("" none). */
	int (*reload_policy)(const char **ret_source, size_t *ret_rules, struct err *err,
	                     void *data);
	/* System/Reexec: 0 and done called later (once, from the loop: 0 as
	 * kin is about to exec, with the binary and reexecs so far, or -errno
	 * and err), or -errno with err now. */
	int (*reexec)(const char *binary,
	              void (*done)(int result, const struct err *err, const char *binary,
	                           uint64_t reexecs, void *call_data),
	              void *call_data, struct err *err, void *data);
	/* The caller went away: done is not called for call_data. */
	void (*reexec_cancel)(void *call_data, void *data);
	void *data;
};

/* The grammar of the route names the services make (a zone "pod1", a VM
 * "vm/NAME"), for rpc_route_names_set: the owner gives it to the server
 * at its making, before any route is added or taken back. */
extern const struct rpc_route_names api_route_names;

/* Everything the services take from their owner, read at start. */
struct api_config {
	struct rpc_server *rpc;
	struct ev_loop *loop; /* rpc's */
	struct child_table *children;
	struct api_health_info health;
	struct api_system_ops system;
	/* NULL: Cells, Exec and Events answer FAILED_PRECONDITION naming
	 * cells_why ("no cgroup2 mount"), VMMs run as plain children of kin
	 * (VmInfo says why) and namespace zones are unavailable. */
	struct cells *cells;
	const char *cells_why;
	const char *vm_dir;               /* NULL: /run/kin/vm */
	const char *image_store;          /* NULL: OCI_STORE_DEFAULT, opened at first use */
	const struct zones_config *zones; /* read at start only */
	/* The service manager (units/units.h) when kin runs units — a host's
	 * init, or --unit-dir. NULL: every Units call answers
	 * FAILED_PRECONDITION ("no service manager: ..."). */
	struct units *units;
	/* What a successor adopts after kin was killed changed in a way the
	 * cells library does not report (a VM now running): the owner writes
	 * its state file again (keep/file.c). NULL: nobody keeps one. */
	void (*changed)(void *data);
	void *changed_data;
	/* The handover's registry (keep/): each service with state registers
	 * its participant there. NULL: nothing goes along a re-exec. */
	struct keep *keep;
};

/* The running services (api/service.c). */
struct api;

/* One service: started in list order; shut down and freed in the reverse
 * order (Zones before Vm: VM zones are the Vm service's VMs; Vm before the
 * cells services: VMMs run in cells). */
struct api_service {
	const char *name; /* for messages: "the Vm service" */
	int (*start)(struct api *api, const struct api_config *cfg);
	/* Pending calls and streams end UNAVAILABLE ("kin is stopping") and
	 * the module below is let go: before the cells library is freed and
	 * before rpc_server_free. NULL: nothing outlives a handler. */
	void (*shutdown)(struct api *api);
	/* After rpc_server_free. */
	void (*free)(struct api *api);
};
/* kin.v1.Health (Check, Version), kin.v1.Cells + Exec + Events over the
 * cells library, kin.v1.System (Poweroff, Reboot), kin.v1.Vm (microVMs,
 * each reached as route vm/NAME), kin.v1.Zones (nested kins, each route
 * NAME; namespace zones from zone/ over cells, VM zones from the Vm
 * service). */
extern const struct api_service api_service_health, api_service_cells, api_service_system,
    api_service_vm, api_service_zones, api_service_images;
/* kin.v1.Units (api/units*.c): systemd units over the service manager;
 * after the cells services (services' output is in cells' rings). */
extern const struct api_service api_service_units;
#define API_SERVICES_MAX_LIST 10 /* services api_start takes */
/* All of them, in start order. */
extern const struct api_service *const api_services[];
extern const size_t api_services_count;

/* Starts the services of list (NULL: api_services) on cfg->rpc, in order.
 * One that cannot start is logged and left out; -ENOMEM only. */
int api_start(const struct api_config *cfg, const struct api_service *const *list, size_t n,
              struct api **ret);
/* kin is stopping: every zone is asked to stop (its kin stops its cells)
 * and every running VM to power off over its link (then Ctrl-Alt-Del,
 * SIGKILL after vm_timeout_ms). Returns how many VMs. NULL is fine. */
size_t api_stop_all(struct api *api, uint64_t vm_timeout_ms);
/* VMs whose VMM has not exited yet. */
size_t api_vms_running(struct api *api);
/* No namespace zone left, cleanup included (kin may exit). */
bool api_zones_idle(struct api *api);
/* The two ends, each walking the started services in reverse order; see
 * struct api_service. NULL is fine. */
void api_shutdown(struct api *api);
void api_free(struct api *api);

/* ---- a containerd shim's pod (api/pods.c) ----------------------------------------------- */

/* The zones a shim's Task service makes for its pod: the functions of its
 * struct shim_pod_ops (shim/shim.h, which says what each does), impl the
 * struct api. init hands them to the Task service; api does not include
 * shim/, so they are spelt here without its types. */
struct zone_spec;
struct zone_info;
struct vm_spec;
int api_pod_create(void *impl, const struct zone_spec *spec,
                   void (*ready)(int result, const struct err *err, void *data),
                   void (*gone)(int status, void *data), void *data, struct err *err);
int api_pod_create_vm(void *impl, const struct vm_spec *spec,
                      void (*ready)(int result, const struct err *err, void *data),
                      void (*gone)(int status, void *data), void *data, struct err *err);
int api_pod_own(void *impl, const char *name, void (*gone)(int status, void *data), void *data);
int api_pod_info(void *impl, const char *name, struct zone_info *ret);
int api_pod_end(void *impl, const char *name, bool kill);
int api_pod_freeze(void *impl, const char *name, bool freeze,
                   void (*done)(int result, const struct err *err, void *data), void *data,
                   struct err *err);
