/* task internals: containerd's Task service (shim/task*.c) as a shim kin
 * serves it. The pod is one namespace zone of this kin (SHIM_ZONE_NAME);
 * the sandbox task is the zone itself (its kin's pid is the sandbox pid),
 * every container one executable ("init") in a cell of the zone kin, its
 * rootfs and FIFOs bound into the pod directory the zone sees, its execs
 * more executables of that cell. Calls to the zone kin go through its
 * route; a completion finds its task again by id, so nothing dangles when
 * a task goes while a call is in flight. */
#pragma once

#include "proto/kin.pb-c.h"
#include "proto/shim.pb-c.h"
#include "rpc/rpc.h"
#include "shim/shim.h"
#include "keep/keep.h"

#include <limits.h>
#include <time.h>

#define TASKS_MAX        128 /* containers of one pod */
#define TASK_EXECS_MAX   64  /* execs of one container alive at once */
#define TASK_WAITERS_MAX 16  /* Wait calls on one process */
#define TASK_EVENTS_MAX  1024

#define TASK_SERVICE   "containerd.task.v2.Task"
#define EVENTS_SERVICE "containerd.services.events.ttrpc.v1.Events"
#define EVENTS_ROUTE   "@containerd"

enum tstate { T_CREATED, T_RUNNING, T_PAUSED, T_STOPPED };

/* A container's init process or one of its execs. */
struct tproc {
	struct list_node node; /* in task.execs (an exec) */
	struct task *t;
	char exec_id[SHIM_ID_MAX + 1]; /* "" for the init */
	char kname[NAME_MAX_LEN + 1];  /* the executable in the zone */
	enum tstate state;
	bool starting; /* Exec/Start in flight */
	uint32_t pid;  /* in this kin's pid namespace; 0 unknown */
	uint32_t exit_status;
	struct timespec exited_at;
	char stdio[3][PATH_MAX]; /* containerd's paths, "" none */
	bool terminal;
	int hold[3];              /* our O_RDWR opens of the output FIFOs (-1) */
	char *spec_json;          /* an exec's process (OCI Process JSON) */
	struct task_relay *relay; /* kin-vm: its stdio relayed (task_vm.c), or NULL */
	uint32_t wait_id;         /* its Exec/Wait in the zone (a route stream), 0 none */
	struct rpc_call *start_call;
	struct rpc_call *waiters[TASK_WAITERS_MAX];
};

struct task {
	struct list_node node; /* in shim_task.tasks */
	struct shim_task *svc;
	char id[SHIM_ID_MAX + 1];
	char bundle[PATH_MAX];
	bool sandbox;                /* the pod's zone itself */
	char cell[NAME_MAX_LEN + 1]; /* in the zone */
	char dir[PATH_MAX];          /* POD_DIR/ID on this side */
	bool rootfs_mounted;         /* BUNDLE/rootfs is ours to unmount */
	struct tproc init;
	struct list_node execs;
	size_t nexecs;
	struct rpc_call *create_call;         /* waiting for the zone, or for its cell */
	int oom_wd;                           /* inotify watch of its cell's memory.events, -1 */
	uint64_t oom_kills;                   /* memory.events oom_kill, as last published */
	Kin__Shim__CreateTaskRequest *create; /* kept while the zone starts */
};

enum zstate { ZN_NONE, ZN_STARTING, ZN_READY, ZN_GONE };

struct task_event {
	struct list_node node;
	struct timespec at;
	char topic[32];
	char type_url[48];
	size_t len;
	uint8_t data[];
};

struct shim_task {
	struct keep *keep; /* registered there as a participant; NULL: not */
	struct rpc_server *rpc;
	struct ev_loop *loop;
	struct cells *cells;
	const struct shim_serve *cfg;
	struct shim_pod_ops pods;
	int (*stop)(bool reboot, bool dry_run, const char **ret_action, void *data);
	void *stop_data;
	const char *version;
	struct list_node tasks;
	size_t ntasks;
	enum zstate zone;
	bool vm;                    /* kin-vm: the zone is a microVM (task_vm.c) */
	pid_t zone_pid;             /* the zone kin; for a VM its VMM */
	char zone_cgroup[PATH_MAX]; /* the zone's cell dir on this side */
	/* Events to containerd, one Forward at a time, in order. */
	struct list_node events;
	size_t nevents;
	uint64_t events_dropped;
	bool forwarding;
	struct ev_source retry; /* timerfd: reconnect to containerd */
	struct ev_source oom;   /* inotify: the containers' memory.events */
	struct rpc_method methods[17];
	bool shutting_down;
	struct shim_sandbox *sandbox; /* the Sandbox service (sandbox.c) */
};

/* task_events.c */
void task_events_init(struct shim_task *svc);
void task_events_free(struct shim_task *svc);
/* Sends what is queued (events a re-exec brought along). */
void task_events_kick(struct shim_task *svc);
/* Queues one event (msg packed now, its time now) and sends what is due. */
void task_publish(struct shim_task *svc, const char *topic, const char *type,
                  const ProtobufCMessage *msg);

/* task_ops.c: Pids, Stats, Update, Pause, Resume, over the container's cell. */
struct task *task_find(struct shim_task *svc, const char *id);
int task_cell_dir(struct shim_task *svc, const struct task *t, char *buf, size_t size);
/* The pod's zone's cell here (a kin-vm pod's: its VMM's); -errno if none. */
int task_zone_cell_dir(struct shim_task *svc, char *buf, size_t size);
/* A cell's cgroup v2 files as containerd's Metrics (m points into itself). */
struct task_metrics {
	Kin__Shim__PidsStat pids;
	Kin__Shim__CPUStat cpu;
	Kin__Shim__MemoryStat mem;
	Kin__Shim__MemoryEvents mev;
	Kin__Shim__Metrics m;
};
void task_metrics_read(const char *dir, struct task_metrics *tm);
int task_serve_pids(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_stats(struct rpc_call *call, const ProtobufCMessage *in, void *data);
/* Stats' answer: metrics packed as containerd's cgroups v2 Metrics Any. */
int task_reply_metrics(struct rpc_call *call, const Kin__Shim__Metrics *metrics);
int task_serve_update(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_pause(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_resume(struct rpc_call *call, const ProtobufCMessage *in, void *data);
/* The pid in this kin's namespace of the process zone_pid (in the zone's)
 * of cell dir, or 0 when it is gone already. */
uint32_t task_host_pid(const char *cell_dir, int zone_pid);
/* OOM kills (TaskOOM) from each container's memory.events: watched from
 * its start (no file, no memory controller: nothing to watch), checked
 * once more when it ends, so the event precedes its TaskExit. */
void task_oom_init(struct shim_task *svc);
/* A re-exec's: the previous kin's inotify (its watches as they were)
 * instead of this one's. */
void task_oom_take(struct shim_task *svc, int fd);
void task_oom_free(struct shim_task *svc);
void task_oom_watch(struct task *t);
void task_oom_check(struct task *t);
void task_oom_unwatch(struct task *t);
void task_timestamp(const struct timespec *ts, Kin__Shim__Timestamp *ret);

/* task.c: records, and calls to the zone kin. */
/* What a completion needs to find its process again. */
struct zref {
	struct shim_task *svc;
	struct rpc_call *call; /* the caller waiting for the answer (zref_keep), or NULL */
	char id[SHIM_ID_MAX + 1];
	char exec_id[SHIM_ID_MAX + 1];
};
struct tproc *proc_find(struct task *t, const char *exec_id);
void proc_init(struct tproc *p, struct task *t, const char *exec_id);
void proc_hold(struct tproc *p);
void proc_release(struct tproc *p);
void proc_answer_waiters(struct tproc *p);
/* p ended with status: recorded, TaskExit published, its waiters answered. */
void proc_exited(struct tproc *p, uint32_t status);
void task_free(struct task *t);
/* Undoes a container's mounts: its binds in the pod directory, its rootfs. */
void container_unmount(struct task *t);
/* p's directory in the pod directory (POD/CELL, an exec's POD/CELL/x-ID),
 * as this kin sees it or (in_zone) as the zone does: config.json, rootfs
 * and the stdio FIFOs bound there. */
int proc_dir(const struct tproc *p, bool in_zone, char *buf, size_t size);
int proc_bind_stdio(struct tproc *p, struct err *err);
void proc_unmount(struct tproc *p);
struct zref *zref_new(struct shim_task *svc, const char *id, const char *exec_id);
struct tproc *zref_proc(const struct zref *z);
/* call waits for z's answer: a cancel clears z->call. */
void zref_keep(struct zref *z, struct rpc_call *call);
/* z->call, released from z (NULL if the caller left). */
struct rpc_call *zref_take_call(struct zref *z);
/* The zone's answer st to z's caller: Empty on OK, else st's code and
 * sentence naming the task. */
void zref_answer(struct zref *z, const struct err *st);
/* rpc_route_call to the zone kin; z is done's data (freed by it, or here
 * on failure); *ret_id (if not NULL) names the call for rpc_route_cancel.
 * -EHOSTDOWN when the zone is not ready. */
int zone_call(struct shim_task *svc, const char *service, const char *method,
              const ProtobufCMessage *in, rpc_route_done_fn done, struct zref *z, uint32_t *ret_id);
/* zone_call for the handler of call, which waits for done's answer
 * (zref_keep); UNAVAILABLE naming task id if the zone cannot be called.
 * Returns what the handler returns. */
int zone_call_for(struct rpc_call *call, struct shim_task *svc, const char *id, const char *exec_id,
                  const char *service, const char *method, const ProtobufCMessage *in,
                  rpc_route_done_fn done);
/* In done: z's waiting caller, z freed; NULL if it left, or if st is an
 * error (then answered with it). */
struct rpc_call *zref_reply_to(struct zref *z, const struct err *st);

/* task_vm.c: a kin-vm pod's VM, stdio relay, and the guest's answers. */
struct oci_spec;
int task_vm_zone_start(struct shim_task *svc, const struct oci_spec *o, struct err *err);
/* What a VM cannot give a kin-vm pod, refused at its Create: the host's
 * PID or IPC namespace, a volume whose mounts would propagate back
 * (rshared). */
int task_vm_spec_check(const struct oci_spec *o, bool sandbox, const char *id, struct err *err);
/* After p's Start: its output followed into containerd's FIFOs, its stdin
 * sent on (a FIFO containerd closes ends it). Freed with p. */
int task_vm_relay_start(struct tproc *p);
void task_vm_relay_free(struct tproc *p);
/* Across a re-exec: a Stdin call in flight (waited for first); the relay
 * written as a record tag of the process's; taken back; then resumed once
 * the pod's zone is the Task service's again. */
bool task_vm_relay_busy(const struct tproc *p);
void task_vm_relay_save(const struct tproc *p, struct state_w *w, uint16_t tag);
int task_vm_relay_take(struct tproc *p, struct state_in *in, const struct state_field *f);
void task_vm_relay_resume(struct tproc *p);
/* p ended in the guest with status: an OOM kill of its cell is published
 * first (a container's init), then proc_exited. */
void task_vm_exited(struct tproc *p, uint32_t status);
int task_vm_pids(struct rpc_call *call, struct task *t);
int task_vm_stats(struct rpc_call *call, struct task *t);

/* task_create.c: Create, and the pod's zone. */
/* Starts the pod's zone from o (a sandbox's or first container's spec,
 * or the Sandbox service's): ready and gone follow. 0 if it started
 * already. */
int task_zone_start(struct shim_task *svc, const struct oci_spec *o, struct err *err);
int task_serve_create(struct rpc_call *call, const ProtobufCMessage *in, void *data);
/* The pod's zone is ready (the tasks waiting for it created), or did not
 * start (result < 0); gone: every process ends with it. The pod ops'
 * ready and gone (data: the service). */
void task_zone_ready(int result, const struct err *err, void *data);
void task_zone_gone(int status, void *data);

/* task_run.c: Start, Wait, Kill, Delete, Exec, CloseIO. */
int task_serve_start(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_wait(struct rpc_call *call, const ProtobufCMessage *in, void *data);
/* After a re-exec: waits in the zone again for p, running (its end is
 * seen as after its Start). */
void task_proc_rewait(struct tproc *p);
int task_serve_kill(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_delete(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_exec(struct rpc_call *call, const ProtobufCMessage *in, void *data);
int task_serve_close_io(struct rpc_call *call, const ProtobufCMessage *in, void *data);
/* sandbox.c: containerd's Sandbox service over the pod's zone, and the
 * Task methods again as containerd.task.v3.Task. Registered by
 * shim_task_start; told of the zone by task_zone_ready and _gone. */
int sandbox_start(struct shim_task *svc);
void sandbox_zone_ready(struct shim_task *svc, int result, const struct err *err);
void sandbox_zone_gone(struct shim_task *svc, int status);
/* A sandbox made by CreateSandbox and not shut down: the shim stays
 * when its last task goes. */
bool sandbox_holds(const struct shim_task *svc);
void sandbox_shutdown(struct shim_task *svc);
void sandbox_free(struct shim_task *svc);

/* Its handover hooks as a participant (keep/keep.h). */
extern const struct keep_part shim_task_part;
