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
 *           containerd's Task service (api/task.c) and kin's own API, whose
 *           pod is one zone of it.
 *
 * This module owns the command line, the addresses and state paths, the
 * rootfs and pod-directory mounts; the Task service lives in api/.
 * Layer: shim -> {rpc, proto, oci, lib}; api and init use it. */
#pragma once

#include "lib/lib.h"
#include "vm/vm.h"

#include <limits.h>

#define SHIM_STATE_ROOT     "/run/kin/shim"     /* SHIM_STATE_ROOT/NS/ID per pod shim */
#define SHIM_SOCKET_DIR     "/run/containerd/s" /* where containerd's own shims listen */
#define SHIM_ID_MAX         76                  /* containerd's identifier limit */
#define SHIM_ZONE_NAME      "pod"               /* the pod's zone, in every shim */
#define SHIM_POD_IN_ZONE    "/run/kin/pod"      /* the pod directory, seen from the zone */
#define SHIM_VM_DIR         "vm"                /* STATE/vm: a kin-vm pod's VM's files */
#define SHIM_DELETE_WAIT_MS 4000                /* delete's budget (containerd gives 5 s) */

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
