/* vm: microVMs with kin as the guest's PID 1. A VMM backend turns a vm_spec
 * into a command (QEMU first; cloud-hypervisor or Firecracker can join by
 * filling a struct vm_backend); the manager starts it as a tracked child,
 * keeps its console log and host<->guest link paths, and reports its exit.
 * Talking RPC over the link is rpc/'s job: vm/ knows nothing of RPC. */
#pragma once

#include "lib/lib.h"

#include <limits.h>

enum vm_accel { VM_ACCEL_AUTO, VM_ACCEL_KVM, VM_ACCEL_TCG };

#define VM_CPUS_MAX 64
#define VM_MEMORY_MIN_MB 64
#define VM_MEMORY_MAX_MB (256 * 1024)
#define VM_CMDLINE_MAX 1024
#define VM_MAX 64 /* VMs one kin manages at once */

struct vm_spec {
	char name[NAME_MAX_LEN + 1];
	char kernel[PATH_MAX];
	char image[PATH_MAX];	 /* initramfs (cpio) from `kin image build`: kin as /init */
	char disk[PATH_MAX];	 /* optional root disk (ext4): the initramfs's kin loads
				  * virtio_blk and ext4, then switches root to it */
	unsigned cpus;		 /* default 1 */
	unsigned memory_mb;	 /* default 512 */
	enum vm_accel accel;
	char console_log[PATH_MAX]; /* "" = STATE_DIR/NAME/console.log */
	char cmdline[VM_CMDLINE_MAX]; /* appended to kin's guest command line */
};

/* Where a VM's files live: console.log, link.sock (the RPC link, a
 * virtio-serial port named VM_LINK_PORT_NAME in the guest), monitor.sock. */
#define VM_STATE_DIR_DEFAULT "/run/kin/vm"
#define VM_LINK_PORT_NAME "org.kin.rpc"
#define VM_GUEST_NET "ip=10.0.2.15::10.0.2.2:255.255.255.0::eth0:off"

struct vm_paths {
	char dir[PATH_MAX];
	char console[PATH_MAX];
	char link[PATH_MAX];
	char monitor[PATH_MAX];
};

struct vm_backend {
	const char *name;
	/* Builds the VMM's argv (NULL-terminated, one allocation: free(*ret)). */
	int (*build_argv)(const struct vm_spec *spec, enum vm_accel accel,
			  const struct vm_paths *paths, char ***ret_argv);
};
extern const struct vm_backend vm_backend_qemu;

const char *vm_accel_name(enum vm_accel a);
int vm_accel_parse(const char *s, enum vm_accel *ret);
/* Picks the accelerator for want. Auto takes KVM only when /dev/kvm opens
 * and the CPU has vmx or svm: a paravirtual KVM (no vmx/svm) cannot run a
 * stock kernel. why gets one sentence on the choice. */
int vm_accel_resolve(enum vm_accel want, enum vm_accel *ret, char *why, size_t why_len);
/* Checks a spec before any side effect; err gets a sentence naming the field. */
int vm_spec_validate(const struct vm_spec *spec, char *err, size_t err_len);
void vm_spec_defaults(struct vm_spec *spec);
int vm_paths_for(const char *state_dir, const struct vm_spec *spec, struct vm_paths *ret);

/* ---- manager ------------------------------------------------------------- */

enum vm_state { VM_STATE_RUNNING, VM_STATE_STOPPING, VM_STATE_EXITED };

struct vm_info {
	char name[NAME_MAX_LEN + 1];
	enum vm_state state;
	pid_t pid;
	enum vm_accel accel;
	unsigned cpus, memory_mb;
	int exit_status; /* once exited: exit code or 128+signal */
	uint64_t started_ns;
	struct vm_paths paths;
};

struct vm_manager;
/* Called from the loop when a VMM process ends. */
struct vm_events {
	void (*exited)(void *data, const struct vm_info *info);
	void *data;
};

int vm_manager_new(struct ev_loop *loop, struct child_table *children, const char *state_dir,
		   const struct vm_events *events, struct vm_manager **ret);
void vm_manager_free(struct vm_manager *m);
/* Validates, resolves the accelerator, creates the state dir, starts the
 * VMM. -EEXIST for a name in use, -ENOSPC past VM_MAX. */
int vm_start(struct vm_manager *m, const struct vm_spec *spec, char *err, size_t err_len);
int vm_get(struct vm_manager *m, const char *name, struct vm_info *ret);
/* Calls fn for each VM, in start order. */
void vm_foreach(struct vm_manager *m, void (*fn)(const struct vm_info *info, void *data),
		void *data);
/* Asks the guest to shut down without RPC: Ctrl-Alt-Del through the VMM's
 * monitor, which kin (as the guest's init) takes as a reboot, and the VMM,
 * started with -no-reboot, turns into its exit. */
int vm_request_shutdown(struct vm_manager *m, const char *name);
int vm_kill(struct vm_manager *m, const char *name, int sig);
/* Forgets an exited VM (its state dir stays for post-mortems). */
int vm_forget(struct vm_manager *m, const char *name);

/* `kin vm run ...`: one VM in the foreground, console on stdout. */
int vm_run_main(int argc, char **argv);
