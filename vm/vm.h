/* vm: microVMs with kin as the guest's PID 1. A VMM backend turns a vm_spec
 * into a command (QEMU first; cloud-hypervisor or Firecracker can join by
 * filling a struct vm_backend); the manager starts it (as a tracked child,
 * or through a struct vm_runner its owner gives: the host kin's runs it in
 * a cell), keeps its console log and host<->guest link paths, hands out
 * vsock CIDs, and reports its exit. Talking RPC over the link is rpc/'s
 * job, cells are cells/': vm/ knows nothing of either. */
#pragma once

#include "lib/lib.h"

#include <limits.h>

enum vm_accel { VM_ACCEL_AUTO, VM_ACCEL_KVM, VM_ACCEL_TCG };

#define VM_CPUS_MAX      64
#define VM_MEMORY_MIN_MB 64
#define VM_MEMORY_MAX_MB (256 * 1024)
#define VM_CMDLINE_MAX   1024
#define VM_MAX           64 /* VMs one kin manages at once */

struct vm_spec {
	char name[NAME_MAX_LEN + 1];
	char kernel[PATH_MAX];
	char image[PATH_MAX]; /* initramfs (cpio) from `kin image build`: kin as /init */
	char disk[PATH_MAX];  /* optional root disk (ext4): the initramfs's kin loads
	                       * virtio_blk and ext4, then switches root to it */
	unsigned cpus;        /* default 1 */
	unsigned memory_mb;   /* default 512 */
	enum vm_accel accel;
	char console_log[PATH_MAX];   /* "" = STATE_DIR/NAME/console.log */
	char cmdline[VM_CMDLINE_MAX]; /* appended to kin's guest command line */
	uint32_t vsock_cid;           /* the backend adds a vhost-vsock device with this
	                               * guest CID when non-zero; vm_start sets it */
	/* A host directory the guest's kin mounts at share_at before it is
	 * ready (the backend's share kind, kin.share= and kin.share.dev= on
	 * its command line): a shim's pod directory. Both or neither. */
	char share[PATH_MAX];
	char share_at[PATH_MAX];
	/* The guest's NIC: QEMU's user network (VM_GUEST_NET) by default, or
	 * the tap device tap of the network namespace netns (the VMM runs
	 * there) with the MAC mac ("02:..:..") and the ip= option guest_ip
	 * ("ADDR::GW:MASK::eth0:off"): a pod's CNI network given to its VM. */
	char netns[PATH_MAX];
	char tap[16];
	char mac[18];
	char guest_ip[128];
};

/* Where a VM's files live: console.log, link.sock (the RPC link: the
 * backend's link device in the guest), monitor.sock. */
#define VM_STATE_DIR_DEFAULT "/run/kin/vm"
#define VM_GUEST_NET         "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off"

/* How the host<->guest link and the share reach the guest: a kind of
 * device and its name there. Each backend has its own; the guest's kin
 * learns them from its command line (kin.link=KIND:NAME, kin.share.dev=
 * KIND:TAG, vm_guest_words), and a command line without them means QEMU's
 * (a host kin from before them). A guest kin from before them ignores the
 * words (an unknown option) and assumes QEMU's. */
enum vm_link_kind { VM_LINK_VIRTIO_SERIAL }; /* a port named NAME: "virtio-serial" */
enum vm_share_kind { VM_SHARE_9P };          /* a virtio-9p mount tag: "9p" */
#define VM_GUEST_NAME_MAX 63
struct vm_guest_kinds {
	enum vm_link_kind link;
	char link_name[VM_GUEST_NAME_MAX + 1];
	enum vm_share_kind share;
	char share_tag[VM_GUEST_NAME_MAX + 1];
};
#define VM_GUEST_KINDS_QEMU                                                                        \
	{                                                                                          \
		VM_LINK_VIRTIO_SERIAL, "org.kin.rpc", VM_SHARE_9P, "kinshare"                      \
	}
extern const struct vm_guest_kinds vm_guest_kinds_default;
/* The words for the guest's command line (the share's only with share). */
int vm_guest_words(const struct vm_guest_kinds *k, bool share, char *buf, size_t size);
/* A guest's kin.link or kin.share.dev value into k: -ENOENT for another
 * key, -EINVAL for a kind it does not know or a bad name ([A-Za-z0-9._-],
 * at most VM_GUEST_NAME_MAX). */
int vm_guest_option(struct vm_guest_kinds *k, const char *key, const char *value);
/* In the guest: the device of k's link (virtio-serial: /dev/vportNpM of
 * the port named k->link_name, found in /sys/class/virtio-ports), or
 * -ENOENT while there is none. */
int vm_guest_link_find(const struct vm_guest_kinds *k, char *dev, size_t size);
/* In the guest: the kernel modules k's share needs ("9pnet_virtio,9p"),
 * and its mount at at (made if missing); -errno. */
const char *vm_guest_share_modules(const struct vm_guest_kinds *k);
int vm_guest_share_mount(const struct vm_guest_kinds *k, const char *at);

struct vm_paths {
	char dir[PATH_MAX];
	char console[PATH_MAX];
	char link[PATH_MAX];
	char monitor[PATH_MAX];
};

/* What a VMM's monitor is asked, one talk at a time per VM. */
enum vm_op { VM_OP_SHUTDOWN, VM_OP_PAUSE, VM_OP_RESUME, VM_OP_SNAPSHOT, VM_OP_RESTORE };
const char *vm_op_name(enum vm_op op);

/* One request to a VMM's monitor, as the manager hands it to a backend. */
struct vm_monitor_req {
	struct ev_loop *loop;
	const char *name;    /* the VM's: errors name it */
	const char *monitor; /* the monitor's socket (vm_paths.monitor) */
	const char *file;    /* snapshot, restore: the state file */
	unsigned timeout_ms;
	/* Once, from the loop, never from inside the call that began the
	 * talk: e NULL when the VMM took the request, else why not. */
	void (*done)(void *data, const struct err *e);
	void *data;
};
/* A backend's talk under way (its own type). */
struct vm_monitor_talk;
/* Begins a talk: 0 with *ret set, or -errno with e saying why (no
 * monitor listening, out of memory). Copies what it keeps of q. */
typedef int (*vm_monitor_fn)(const struct vm_monitor_req *q, struct vm_monitor_talk **ret,
                             struct err *e);

/* A VMM backend: one file (vm/qemu.c), nothing of it known elsewhere. */
struct vm_backend {
	const char *name;
	/* Builds the VMM's argv (NULL-terminated, one allocation: free(*ret)). */
	int (*build_argv)(const struct vm_spec *spec, enum vm_accel accel,
	                  const struct vm_paths *paths, char ***ret_argv);
	/* How the link and the share reach the guest; build_argv tells its
	 * kin (vm_guest_words). */
	struct vm_guest_kinds guest;
	/* Monitor requests, each a talk in the loop with a deadline. NULL:
	 * the backend cannot (the manager answers -EOPNOTSUPP). shutdown
	 * asks the guest to end without RPC, as Ctrl-Alt-Del does (kin as
	 * the guest's init takes it as a reboot, the VMM makes that its
	 * exit); snapshot and restore are for a later backend change. */
	vm_monitor_fn shutdown, pause, resume, snapshot, restore;
	/* Ends a talk before it is done (done is not called); NULL-safe. */
	void (*talk_cancel)(struct vm_monitor_talk *t);
};
extern const struct vm_backend vm_backend_qemu;

/* Guest CIDs: 0-2 are reserved (hypervisor, local, host). */
#define VM_CID_FIRST   3u
#define VM_VHOST_VSOCK "/dev/vhost-vsock"
/* The lowest CID from VM_CID_FIRST up that is not in live[0..n). */
int vm_cid_pick(const uint32_t *live, size_t n, uint32_t *ret);

const char *vm_accel_name(enum vm_accel a);
int vm_accel_parse(const char *s, enum vm_accel *ret);
/* Picks the accelerator for want. Auto takes KVM only when /dev/kvm opens
 * and the CPU has vmx or svm: a paravirtual KVM (no vmx/svm) cannot run a
 * stock kernel. why gets one sentence on the choice. */
int vm_accel_resolve(enum vm_accel want, enum vm_accel *ret, char *why, size_t why_len);
/* Checks a spec before any side effect; e gets a sentence naming the field.
 * The files are vm_spec_check_files's: a stat() that may hang (run it in a
 * child, or where nothing else waits). */
int vm_spec_validate(const struct vm_spec *spec, struct err *e);
int vm_spec_check_files(const struct vm_spec *spec, struct err *e);
void vm_spec_defaults(struct vm_spec *spec);
/* A spec from what a request gives of a VM (Vm/Start, a VM zone's Create,
 * a kin-vm pod's shim.conf): the defaults, then each field given (disk,
 * append: NULL for none; cpus, memory_mb 0 and accel "" keep the
 * default). Errors name it as `what "name"`. */
struct vm_request {
	const char *what, *name, *kernel, *image, *disk, *append;
	uint32_t cpus, memory_mb;
	const char *accel;
};
int vm_spec_fill(struct vm_spec *spec, const struct vm_request *q, struct err *e);
int vm_paths_for(const char *state_dir, const struct vm_spec *spec, struct vm_paths *ret);

/* ---- options ------------------------------------------------------------- */

/* The one table of VM options (vm/options.c) every door parses with:
 * `kin vm run --NAME`, `kin ctl vm start --NAME`, `kin ctl zone create --vm
 * --NAME` and shim.conf's vm.NAME. A door's getopt entry for option id
 * has the value VM_OPT_VAL + id. */
enum vm_opt_id {
	VM_OPT_KERNEL,
	VM_OPT_IMAGE,
	VM_OPT_DISK,
	VM_OPT_CPUS,
	VM_OPT_MEMORY,
	VM_OPT_ACCEL,
	VM_OPT_APPEND,
	VM_OPT_N
};
#define VM_OPT_VAL 0x1000
/* A door's getopt_long entry for option ID (its name spelled again for a
 * static table; a unit test holds each door's names to vm_options). */
#define VM_GETOPT(ID, NAME)                                                                        \
	{                                                                                          \
		NAME, required_argument, NULL, VM_OPT_VAL + VM_OPT_##ID                            \
	}
enum { VM_OPT_FOR_RUN = 1, VM_OPT_FOR_CTL = 2, VM_OPT_FOR_ZONE = 4, VM_OPT_FOR_CONF = 8 };
struct vm_option {
	const char *name, *metavar, *help;
	const char *expect; /* what a good value is, for errors */
	unsigned doors;     /* VM_OPT_FOR_*: who takes it */
	int (*set)(struct vm_spec *spec, const char *value);
};
extern const struct vm_option vm_options[VM_OPT_N];
/* The id of option name at door, or -ENOENT. */
int vm_option_find(const char *name, unsigned door);
/* value into spec; -EINVAL with e "NAME 'VALUE': expected WHAT". */
int vm_option_set(enum vm_opt_id id, struct vm_spec *spec, const char *value, struct err *e);
/* door's options as help lines ("  --kernel FILE  guest kernel ..."). */
int vm_options_help(unsigned door, char *buf, size_t size);

/* ---- manager ------------------------------------------------------------- */

/* Starting: its files are being checked, or its VMM's setup runs. */
enum vm_state { VM_STATE_RUNNING, VM_STATE_STOPPING, VM_STATE_EXITED, VM_STATE_STARTING };

struct vm_info {
	char name[NAME_MAX_LEN + 1];
	enum vm_state state;
	pid_t pid;
	enum vm_accel accel;
	unsigned cpus, memory_mb;
	int exit_status; /* once exited: exit code or 128+signal */
	bool paused;     /* its VMM took VM_OP_PAUSE, not VM_OP_RESUME since */
	uint64_t started_ns;
	uint32_t vsock_cid; /* 0: no vsock device */
	char cell[128];     /* the runner's word on where the VMM runs, "" for a
	                     * plain child (e.g. "vms/NAME") */
	struct vm_paths paths;
};

struct vm_manager;
/* Called from the loop. started: a start vm_start began is over, the VM
 * running (e NULL), or it did not start (e says why: a file, the VMM's
 * setup, a stop before it ran), the VM then already forgotten and its
 * name free. exited: a VMM process ended. */
struct vm_events {
	void (*started)(void *data, const struct vm_info *info, const struct err *e);
	void (*exited)(void *data, const struct vm_info *info);
	void *data;
};

/* How VMMs are started when not as plain children of the child table: the
 * owner decides (the host kin starts each in a cell of its own). prepare
 * (optional) runs inside vm_start and makes what start will need (the
 * host kin: the VM's cell, with limits). start runs argv for VM name (in
 * the network namespace at path netns unless NULL) and returns with the
 * VMM's pid once it is cloned, its setup going on; the runner tells the
 * setup's verdict through vm_vmm_started, and the end through
 * vm_vmm_exited, later, never from inside start. where gets a few words
 * for vm_info.cell. signal sends sig to the VMM. release: the VM is
 * forgotten or replaced, what prepare and start made may go (called with
 * the VMM ended). */
struct vm_runner {
	int (*prepare)(void *data, const char *name, struct err *e);
	int (*start)(void *data, const char *name, char *const *argv, const char *netns,
	             pid_t *ret_pid, char *where, size_t where_len, struct err *e);
	int (*signal)(void *data, const char *name, int sig);
	void (*release)(void *data, const char *name);
	/* After a re-exec: the VMM pid of VM name, started by the previous
	 * kin's runner, is watched again (its end told through vm_vmm_exited,
	 * later, even when it ended meanwhile); where as start's. < 0 (e says
	 * why): it is not the runner's, so the VM cannot be taken over. pid 0:
	 * an ended VM, only where is asked. drop: kills what start made for a
	 * VM that is not taken over, and removes it. */
	int (*resume)(void *data, const char *name, pid_t pid, char *where, size_t where_len,
	              struct err *e);
	void (*drop)(void *data, const char *name);
	void *data;
};

int vm_manager_new(struct ev_loop *loop, struct child_table *children, const char *state_dir,
                   const struct vm_events *events, struct vm_manager **ret);
/* From now on VMMs start through r (NULL: plain children again). */
void vm_manager_set_runner(struct vm_manager *m, const struct vm_runner *r);
/* A runner's report: the setup of VM name's VMM pid reached execve (e
 * NULL) or failed (e says why). Stale reports are ignored. */
void vm_vmm_started(struct vm_manager *m, const char *name, pid_t pid, const struct err *e);
/* A runner's report: the VMM pid of VM name ended with status (exit code or
 * 128+signal; -1 when its end could not be seen). Stale reports (another
 * pid, a VM already exited) are ignored. */
void vm_vmm_exited(struct vm_manager *m, const char *name, pid_t pid, int status);
void vm_manager_free(struct vm_manager *m);
/* Validates, resolves the accelerator, creates the state dir, picks a free
 * vsock CID where the host has vhost-vsock, and lists the VM as starting:
 * its kernel, image and disk are checked in a child (vm_spec_check_files,
 * at most VM_CHECK_TIMEOUT_MS: a file on a hung mount must not hang kin),
 * then the VMM is started. Returns 0 with the start under way, its end told
 * by events.started, from the loop. -EEXIST (ALREADY_EXISTS) for a name in
 * use, -ENOSPC (RESOURCE_EXHAUSTED) past VM_MAX, -EINVAL
 * (INVALID_ARGUMENT) for a bad spec; e's code is always
 * err_code_from_errno of the return. */
#define VM_CHECK_TIMEOUT_MS 5000
int vm_start(struct vm_manager *m, const struct vm_spec *spec, struct err *e);
int vm_get(struct vm_manager *m, const char *name, struct vm_info *ret);
/* Calls fn for each VM, in start order. */
void vm_foreach(struct vm_manager *m, void (*fn)(const struct vm_info *info, void *data),
                void *data);
/* Asks VM name's VMM, through its monitor (the backend's: QEMU's QMP), to
 * do op. The talk runs in the loop, at most VM_MONITOR_TIMEOUT_MS; its end
 * is told to done (may be NULL) from the loop, e NULL when the VMM took
 * it. Returns 0 with the talk under way, or -errno with e set (its code
 * err_code_from_errno's but for these): -ENOENT no such VM, -ESRCH it has
 * exited, -EAGAIN (UNAVAILABLE) it is starting, -EOPNOTSUPP
 * (UNIMPLEMENTED) the backend cannot, -EBUSY (UNAVAILABLE) another talk
 * is under way, or the socket's error (no VMM listening). */
#define VM_MONITOR_TIMEOUT_MS 2000
typedef void (*vm_request_done_fn)(void *data, const char *name, enum vm_op op,
                                   const struct err *e);
int vm_request(struct vm_manager *m, const char *name, enum vm_op op, vm_request_done_fn done,
               void *data, struct err *e);
/* Asks the guest to shut down without RPC (VM_OP_SHUTDOWN, no done: a
 * monitor that never answers is logged, the caller's stop deadline still
 * holds): 0 once the talk is under way, also when one already is. */
int vm_request_shutdown(struct vm_manager *m, const char *name);
int vm_kill(struct vm_manager *m, const char *name, int sig);

/* The stop. vm/ speaks no RPC: powering a guest off over its link is its
 * owner's hook. poweroff returns 0 once asked (a failure is told later
 * through vm_stop_poweroff_failed), < 0 when it cannot be asked. */
struct vm_stop_hooks {
	int (*poweroff)(void *data, const char *name);
	void *data;
};
void vm_manager_set_stop_hooks(struct vm_manager *m, const struct vm_stop_hooks *h);
/* Stops VM name, in the loop: power off over the link (the hook), else (no
 * hook, it cannot be asked, or it failed) a shutdown request through the
 * monitor, and SIGKILL of the VMM once timeout_ms (0: the default) has
 * passed. Its end is events.exited, as every VMM's. A stop under way goes
 * on with the nearer deadline. A VM whose files are still checked ends
 * its start at once (vm_kill's CANCELLED). -ENOENT, -ESRCH (exited), e
 * set. */
#define VM_STOP_TIMEOUT_DEFAULT_MS 30000
int vm_stop(struct vm_manager *m, const char *name, uint64_t timeout_ms, struct err *e);
/* The owner's word: the power off it was asked for failed; the stop goes
 * on to its next step. */
void vm_stop_poweroff_failed(struct vm_manager *m, const char *name);
/* Forgets an exited VM (its state dir stays for post-mortems). */
int vm_forget(struct vm_manager *m, const char *name);

/* ---- re-exec (lib/state.h) ------------------------------------------------ */

struct state_w;
struct state_field;
/* Nothing half-done: no start, no monitor talk (why names the VM). */
bool vm_settled(const struct vm_manager *m, char *why, size_t size);
/* The VMMs that are plain children of kin (a runner counts its own). */
size_t vm_children(const struct vm_manager *m);
/* VM name's record (its info), as a field of tag. */
void vm_save(struct vm_manager *m, const char *name, struct state_w *w, uint16_t tag);
/* Takes a VM back from a record of vm_save: a running one's VMM watched
 * again (a plain child adopted, the runner's resumed), an exited one kept
 * for its status. 0 and *ret filled; < 0 with why set: not taken, and
 * what it ran is killed (the runner's drop; a plain child of ours
 * SIGKILLed and reaped). */
int vm_restore(struct vm_manager *m, const struct state_field *f, struct vm_info *ret, char *why,
               size_t size);

/* `kin vm run ...`: one VM in the foreground, console on stdout. */
int vm_run_main(int argc, char **argv);
