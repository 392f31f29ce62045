/* shim: kin as containerd's runtime v2 shim (`containerd-shim-kin-v2`,
 * `containerd-shim-kin-vm-v2`: links to the one binary). containerd runs
 * the binary three ways, each with its flags (-namespace, -address,
 * -publish-binary, -id, -bundle, -debug) and the bundle as its cwd:
 *
 *   start   answer with the address of the shim that will run this task:
 *           the pod's shim if the bundle's annotations name a sandbox
 *           whose shim runs, else a new one — a daemon kin started here
 *           (detached, its output in its state directory) listening on
 *           unix:///run/containerd/s/HASH, the address also written to
 *           BUNDLE/address. Only the address goes to stdout.
 *   delete  after a task ended, or when its shim is gone: unmount the
 *           rootfs, kill and remove what the pod left (its cgroup, its
 *           state), print a DeleteResponse. Needs no containerd, takes no
 *           lock a dead shim could hold, and is idempotent.
 *   (serve) the daemon `start` leaves: a kin (init's daemon loop) serving
 *           containerd's Task service (shim/task*.c) beside kin's own API,
 *           whose pod is one zone of it.
 *
 * This module owns the command line, the addresses and state paths, the
 * rootfs and pod-directory mounts, and the Task service. The pod's zone
 * (namespaces or a microVM) is made by whoever owns zones and VMs, over
 * struct shim_pod_ops (api/pods.c; init wires the two).
 * Layer: shim -> {zone, cells, net, vm, oci, rpc, proto, lib}; init uses it. */
#pragma once

#include "lib/lib.h"
#include "vm/vm.h"

#include <limits.h>

#define SHIM_STATE_ROOT     "/run/kin/shim"      /* SHIM_STATE_ROOT/NS/ID per pod shim */
#define SHIM_SOCKET_DIR     "/run/containerd/s"  /* where containerd's own shims listen */
#define SHIM_ID_MAX         76                   /* containerd's identifier limit */
#define SHIM_ZONE_NAME      "pod"                /* the pod's zone, in every shim */
#define SHIM_POD_IN_ZONE    "/run/kin/pod"       /* the pod directory, seen from the zone */
#define SHIM_VM_DIR         "vm"                 /* STATE/vm: a kin-vm pod's VM's files */
#define SHIM_DELETE_WAIT_MS 4000                 /* delete's budget (containerd gives 5 s) */
#define SHIM_BOOTSTRAP_ENV  "KIN_SHIM_BOOTSTRAP" /* "3": start answers bootstrap v3 JSON */

/* "io.containerd.kin.v2": namespace zones; "io.containerd.kin-vm.v2": VMs. */
enum shim_flavor { SHIM_FLAVOR_NS, SHIM_FLAVOR_VM };

/* What a shim daemon serves; filled by shim_main for init. */
struct shim_serve {
	enum shim_flavor flavor;
	char ns[SHIM_ID_MAX + 1];    /* containerd namespace */
	char id[SHIM_ID_MAX + 1];    /* the task that started it (the pod's sandbox) */
	char group[SHIM_ID_MAX + 1]; /* the pod: sandbox id, or id */
	char address[PATH_MAX];      /* containerd's grpc socket */
	char ttrpc[PATH_MAX];        /* TTRPC_ADDRESS: containerd's events service */
	char socket[108];            /* the Task socket path */
	int listen_fd;               /* its listening fd, made by start */
	char state[PATH_MAX];        /* SHIM_STATE_ROOT/NS/GROUP (or a hash) */
	char kin_socket[108];        /* STATE/kin.sock: kin's own API */
	char pod_dir[PATH_MAX];      /* STATE/pod: a shared tmpfs, SHIM_POD_IN_ZONE in the zone */
	char cgroup[PATH_MAX];       /* the shim's cgroup (relative to the cgroup2 mount) */
};

/* Entered when argv[0]'s name starts with "containerd-shim-kin". start and
 * delete run to their end here (the exit status returned, < 0 never);
 * serve returns SHIM_MAIN_SERVE with *ret filled for init to run the
 * daemon. */
#define SHIM_MAIN_SERVE (-1000)
int shim_main(int argc, char **argv, struct shim_serve *ret);
bool shim_argv0_is_shim(const char *argv0);

/* unix:///run/containerd/s/HASH for (containerd address, namespace, pod):
 * the sha256 of the three, as containerd's own shims name theirs. */
int shim_socket_path(const char *address, const char *ns, const char *group, char *buf,
                     size_t size);
/* SHIM_STATE_ROOT/NS/GROUP, or SHIM_STATE_ROOT/h-HASH when that is too
 * long for a socket path below it. */
int shim_state_dir(const char *ns, const char *group, char *buf, size_t size);

/* The daemon's last step, after its loop ended: its cgroup (left for the
 * parent first) and its state directory removed, its pod directory
 * unmounted. What the state directory's "cgroup" file names is removed
 * by delete the same way when the daemon died. */
void shim_cleanup(const struct shim_serve *s);

/* ---- kin-vm pods' VM (shim/config.c) ------------------------------------------------ */

#define SHIM_CONFIG_DEFAULT "/etc/kin/shim.conf"
#define SHIM_CONFIG_ENV     "KIN_SHIM_CONFIG" /* containerd passes its environment on */
struct shim_vm_config {
	struct vm_spec spec; /* the VM defaults where the file says nothing */
};
/* Parses text (modified) read from path; err names the line. */
int shim_vm_config_parse(const char *path, char *text, struct shim_vm_config *ret, struct err *err);
/* Reads $KIN_SHIM_CONFIG or SHIM_CONFIG_DEFAULT. */
int shim_vm_config_load(struct shim_vm_config *ret, struct err *err);

/* ---- mounts (shim/mount.c) ---------------------------------------------------------- */

/* One mount of containerd's Create (type, source, options), onto a target
 * of the caller's. */
struct shim_mount {
	const char *type, *source;
	const char *const *options;
	size_t noptions;
};
#define SHIM_MOUNTS_MAX  16
#define SHIM_OPTIONS_MAX 64
/* Mounts containerd's rootfs list in order at target (overlay, bind, any
 * filesystem type: options that are flags become flags, the rest data).
 * On failure nothing stays mounted; err names the mount and why. */
int shim_rootfs_mount(const struct shim_mount *m, size_t n, const char *target, struct err *err);
/* Unmounts everything at and below path (lazily), ignoring what is not
 * mounted. Returns how many mounts went. */
int shim_unmount_all(const char *path);
/* Unmounts every entry of dir (a container's directory in the pod
 * directory: its rootfs, FIFOs and bind sources bound there), removes
 * what is left of them and dir itself when empty. */
void shim_unmount_entries(const char *dir);
/* The pod directory: a small tmpfs, a shared mount, so binds made below it
 * later show in the zone that got it as a slave. Idempotent. */
int shim_pod_dir_setup(const char *dir, struct err *err);
/* Binds src (a directory or file: a rootfs, a FIFO) at dst, made first
 * (mkdir, or an empty file for a file). */
int shim_bind(const char *src, const char *dst, struct err *err);

/* ---- containerd's Task service (shim/task*.c) ---------------------------------------- */

/* The pod's zone, from whoever owns zones and VMs: a zone of its own
 * named SHIM_ZONE_NAME, listed and routed by that name like any (the
 * Task service calls its kin through route SHIM_ZONE_NAME). impl is
 * every function's first argument. */
struct zone_spec;
struct zone_info;
struct vm_spec;
struct shim_pod_ops {
	/* A namespace zone (create) or a microVM whose guest kin is the
	 * zone (create_vm). 0 and then ready runs once: 0 when its kin
	 * answers, or -errno with err (nothing of it left; gone does not
	 * follow); gone runs once it ended after being ready, with its
	 * kin's status (a VM: its VMM's). Or -errno with err now. */
	int (*create)(void *impl, const struct zone_spec *spec,
	              void (*ready)(int result, const struct err *err, void *data),
	              void (*gone)(int status, void *data), void *data, struct err *err);
	int (*create_vm)(void *impl, const struct vm_spec *spec,
	                 void (*ready)(int result, const struct err *err, void *data),
	                 void (*gone)(int status, void *data), void *data, struct err *err);
	/* After a re-exec: the zone NAME (ready before) is the caller's again,
	 * gone as above. -ENOENT when it ended meanwhile. */
	int (*own)(void *impl, const char *name, void (*gone)(int status, void *data), void *data);
	/* Its facts; for a VM its VMM's pid and cell. */
	int (*info)(void *impl, const char *name, struct zone_info *ret);
	/* Stopped (its kin stops what it runs; a VM powers off) or killed. */
	int (*end)(void *impl, const char *name, bool kill);
	/* Frozen or thawed: a namespace zone's cell (cgroup.freeze, its kin
	 * with it), a VM's VMM paused or resumed through its monitor. 0 when
	 * it is so already, 1 pending (done follows from the loop: 0, or
	 * -errno with err), or -errno with err now. */
	int (*freeze)(void *impl, const char *name, bool freeze,
	              void (*done)(int result, const struct err *err, void *data), void *data,
	              struct err *err);
	void *impl;
};

/* What the Task service takes from its owner (init), read at start. */
struct rpc_server;
struct ev_loop;
struct cells;
struct shim_task_config {
	struct rpc_server *rpc;
	struct ev_loop *loop; /* rpc's */
	struct cells *cells;  /* NULL: no cgroup2 (Pids, Stats and OOM kills answer nothing) */
	const struct shim_serve *serve;
	const char *version; /* Connect's answer */
	/* A re-exec's kin: the Task socket was handed over and is served
	 * already. */
	bool listening;
	struct shim_pod_ops pods;
	/* Shutdown with no task left stops kin: dry_run first (0: it can),
	 * then for real (api_system_ops's stop). */
	int (*stop)(bool reboot, bool dry_run, const char **ret_action, void *data);
	void *stop_data;
	/* The handover's registry (keep/): the tasks go along a re-exec as a
	 * participant (shim/task_state.c), and end with kin (keep_stop). NULL:
	 * they do neither. */
	struct keep *keep;
};
struct shim_task;
/* Registers containerd.task.v2.Task on cfg->rpc and listens on the Task
 * socket (unless listening). -errno: nothing registered. */
int shim_task_start(const struct shim_task_config *cfg, struct shim_task **ret);
/* kin is stopping: pending calls fail, every container's mounts and the
 * pod directory are undone; before rpc_server_free. NULL is fine. */
void shim_task_shutdown(struct shim_task *svc);
/* After rpc_server_free. NULL is fine. */
void shim_task_free(struct shim_task *svc);
/* Re-exec (shim/task_state.c): what cannot go along yet (NULL: all can),
 * whether nothing is half-done (why says what is), the tasks written as
 * record tag, and taken back in the next kin after the pod's zone was
 * (it owns it again). NULL svc: nothing (restore: -ENODEV). */
struct state_w;
struct state_in;
struct state_field;
const char *shim_task_uncarried(const struct shim_task *svc);
bool shim_task_settled(const struct shim_task *svc, char *why, size_t size);
void shim_task_save(struct shim_task *svc, struct state_w *w, uint16_t tag);
int shim_task_restore(struct shim_task *svc, struct state_in *in, const struct state_field *f);
