/* init: kin as PID 1 (or a subreaper daemon). Owns role detection, the
 * kernel command line and flags, machine boot (mounts, console, hostname),
 * the main loop with its signal table, supervision and reaping, and
 * shutdown. Read this header first; docs/init.md documents the user-facing
 * roles, signals and kin.* options. */
#pragma once

#include "lib/lib.h"
#include "lib/state.h"
#include "net/net.h"
#include "vm/vm.h"

#include <signal.h>

struct shim_serve;
#include <stdio.h>

enum init_role {
	INIT_ROLE_MACHINE,   /* PID 1 of the initial PID namespace */
	INIT_ROLE_ZONE,      /* PID 1 of namespaces a parent kin made (--zone) */
	INIT_ROLE_CONTAINER, /* PID 1 of a PID namespace no kin made */
	INIT_ROLE_DAEMON,    /* not PID 1: child subreaper */
};

enum init_panic {
	INIT_PANIC_FREEZE,
	INIT_PANIC_REBOOT,
	INIT_PANIC_POWEROFF,
};

/* What a signal or a request asks the loop to do. */
enum init_action {
	INIT_ACT_IGNORE,
	INIT_ACT_REAP,     /* SIGCHLD */
	INIT_ACT_FORWARD,  /* pass on to the workload */
	INIT_ACT_STOP,     /* stop everything, exit (zone, container, daemon) */
	INIT_ACT_REBOOT,   /* machine: stop everything, reboot */
	INIT_ACT_POWEROFF, /* machine: stop everything, power off */
	INIT_ACT_HALT,     /* machine: stop everything, halt */
	INIT_ACT_RELOAD,   /* SIGHUP: the policy and the TLS files again */
};

#define INIT_HOSTNAME_MAX     64
#define INIT_UNIT_DIRS_MAX    4
#define INIT_GRACE_DEFAULT_MS 10000ull
#define INIT_GRACE_MAX_MS     (3600ull * 1000)
#define INIT_STATE_DIR        "/run/kin" /* a daemon's --state-dir */

/* The RPC server's settings (init/rpc.c starts it; rpc/rpc.h serves). */
#define INIT_RPC_PATH_MAX 107
#define INIT_RPC_IDS_MAX  16
#define INIT_RPC_FILE_MAX 255 /* a policy, certificate or key file's path */
struct init_rpc_config {
	char socket[INIT_RPC_PATH_MAX + 1]; /* "" until set; "none" disables */
	bool vsock_set;
	uint32_t vsock_port;       /* 0: off */
	uint32_t max_conns;        /* 0: rpc's default */
	uint32_t frame_timeout_ms; /* 0: rpc's default */
	size_t n_uids, n_gids;
	uint32_t uids[INIT_RPC_IDS_MAX]; /* admin everywhere besides root and kin's uid */
	uint32_t gids[INIT_RPC_IDS_MAX];
	char policy[INIT_RPC_FILE_MAX + 1]; /* kin.rpc.policy=, --policy: "" none */
	/* TLS (init/tls.c): kin.rpc.tls=ADDR:PORT and its files, "" unset */
	char tls_listen[64];
	char tls_cert[INIT_RPC_FILE_MAX + 1], tls_key[INIT_RPC_FILE_MAX + 1];
	char tls_ca[INIT_RPC_FILE_MAX + 1], tls_crl[INIT_RPC_FILE_MAX + 1];
	uint32_t tls_handshake_ms; /* kin.rpc.tls.handshake-timeout=: 0 the default */
};

struct init_config {
	enum log_level log_level;
	bool log_level_set;
	enum init_panic panic;
	uint64_t grace_ms;
	char hostname[INIT_HOSTNAME_MAX + 1];
	char zone[INIT_HOSTNAME_MAX + 1]; /* set by --zone: the parent kin made us */
	const char *cmdline_file;         /* kin.* options from here, any role */
	char **argv;                      /* workload after "--", or NULL */
	char modules[4096];               /* kin.modules=: loaded after the image's defaults */
	char share[257];                  /* kin.share=: where the VMM's share is mounted */
	struct vm_guest_kinds guest;      /* kin.link=, kin.share.dev=: the VMM's devices */
	struct net_config net;            /* ip= or kin.net= (kin.net= wins) */
	bool net_from_kin;
	uint64_t exec_ns;           /* CLOCK_MONOTONIC when kin's main() began */
	uint64_t boot_kernel_ns;    /* machine: in finit_module before ready */
	unsigned boot_modules;      /* machine: modules loaded before ready */
	struct init_rpc_config rpc; /* kin.rpc.*, --socket, --vsock, --allow-uid */
	int rpc_fd;                 /* --rpc-fd: a parent's connected socket, 0: none */
	int parent_listen_fd;       /* --parent-listen-fd: where a parent's successor connects */
	unsigned zone_depth;        /* --zone-depth: how deep this zone kin is nested */
	const char *vm_dir;         /* --vm-dir: VMs' state (default /run/kin/vm) */
	const char *image_store;    /* --image-store (default OCI_STORE_DEFAULT) */
	char zone_subnet[32];       /* --zone-subnet: the range our parent delegated, "" none */
	unsigned zone_max_depth;    /* --zone-max-depth, kin.zone.max-depth=: 0 default */
	const char *zone_dir;       /* --zone-dir: zone kins' logs (default /run/kin/zones) */
	const char *state_dir;      /* --state-dir: a daemon's state (default /run/kin) */
	const char *cgroup;         /* a daemon's own cgroup (its cells' base), NULL: where it is */
	const struct shim_serve *shim; /* a containerd shim's daemon (shim/shim.h), or NULL */
	/* Units (init/units.c): --unit-dir, --unit-run-dir, --default-target */
	const char *unit_dirs[INIT_UNIT_DIRS_MAX + 1];
	size_t n_unit_dirs;
	const char *unit_run_dir;
	const char *default_target;
	bool host; /* machine init on a root with units: the late boot runs sysinit */
};

void init_config_defaults(struct init_config *cfg);

/* Reports one problem found while parsing outside input; the parser goes on
 * with the remaining options and keeps the previous value of a bad one. */
typedef void (*init_diag_fn)(void *userdata, const char *fmt, ...) _printf_(2, 3);

/* Parses the kin.* options of a kernel command line (other words ignored,
 * nothing after "--"). Returns the number of problems reported. */
int init_cmdline_parse(const char *cmdline, struct init_config *cfg, init_diag_fn diag,
                       void *userdata);
/* Applies one "kin.key=value" option; -ENOENT unknown key, -EINVAL bad value. */
int init_option_set(struct init_config *cfg, const char *key, const char *value);

/* `kin init [flags] [-- CMD ARGS...]`: 0 ok, -EINVAL on a usage error (already
 * reported to stderr), 1 when --help was printed. */
int init_flags_parse(int argc, char **argv, struct init_config *cfg);
void init_usage(FILE *f);

int init_detect_role(const struct init_config *cfg, enum init_role *ret_role);
const char *init_role_name(enum init_role role);
/* The signal table (docs/init.md "Signals"). Pure: unit-tested. */
enum init_action init_signal_action(enum init_role role, bool has_workload, int sig);
const char *init_action_name(enum init_action act);

/* Machine boot, first half: API filesystems and the console on stdio.
 * Returns 0 or the first fatal -errno; non-fatal problems are logged. */
int init_boot_machine_mounts(void);
/* Second half, once kin.* options are read: cgroup2 controllers enabled for
 * children, hostname, the kernel modules RPC-ready needs (and root='s, then
 * the switch to it). Problems are logged; the modules' kernel time is noted
 * in cfg for the ready line. */
void init_boot_machine_setup(struct init_config *cfg);
/* After ready: the network and the remaining modules, in a child tracked
 * in t (PID 1's loop never waits on them); on_exit gets its status, the
 * number of failed steps. */
int init_boot_machine_late(const struct init_config *cfg, struct child_table *t,
                           child_exit_fn on_exit, void *data);
int init_boot_set_hostname(const char *name);

/* Runs the main loop until kin is told to stop; returns the exit status for
 * non-machine roles, never returns as machine init. */
int init_run(struct init_config *cfg, enum init_role role);

/* Machine end: sync, unmount, remount read-only, reboot(2) with the
 * command for act. Never returns. */
_noreturn_ void init_shutdown_machine(enum init_action act);
/* Fatal error as machine init: logged, then the kin.panic= policy. */
_noreturn_ void init_panic(enum init_panic policy, const char *fmt, ...) _printf_(2, 3);
/* Fault handlers for PID 1 (SIGSEGV & co.): apply the panic policy rather
 * than let the kernel panic with "Attempted to kill init". */
void init_install_fault_handlers(enum init_panic policy);

/* Starts the RPC server on loop per cfg->rpc and the role (docs/rpc.md);
 * its services come after (api_start, init/loop.c). A failure is logged;
 * it is returned (< 0) only when it must stop kin: a --socket given
 * explicitly to a daemon that cannot listen there. */
struct rpc_server;
int init_rpc_start(const struct init_config *cfg, enum init_role role, struct ev_loop *loop,
                   struct rpc_server **ret);

/* The same server on listening sockets a previous kin handed over
 * (init/reexec.c); takes their fds. keep: made even with none (routes or
 * a parent's channel come too). */
struct rpc_listen_fd;
int init_rpc_serve_handed(const struct init_config *cfg, struct ev_loop *loop,
                          const struct rpc_listen_fd *l, size_t n, bool keep,
                          struct rpc_server **ret);
/* Authorization (init/auth.c): the policy (--policy, and kin.rpc.uids=/
 * gids= as "uid:N admin *" rules) installed as rpc's guard, the audit of
 * changes and denials. A policy that does not parse at start leaves only
 * root and kin's own uid in, and is returned (< 0) after being logged. */
struct init_auth;
bool init_auth_socket_open(const struct init_rpc_config *cfg);
/* Whether the policy as its file says now builds (a re-exec's next kin
 * reads it afresh): err says why not. */
int init_auth_check(const struct init_rpc_config *cfg, struct err *err);
int init_auth_start(const struct init_rpc_config *cfg, struct rpc_server *rpc,
                    struct init_auth **ret);
/* SIGHUP and System/ReloadPolicy; a bad policy is refused, the old stays. */
int init_auth_reload(struct init_auth *a, const char **ret_source, size_t *ret_rules,
                     struct err *err);
void init_auth_reload_signal(struct init_auth *a); /* SIGHUP's: audited */
void init_auth_tick(struct init_auth *a);          /* reports rate-limited denials */
void init_auth_free(struct init_auth *a);          /* after rpc_server_free */

/* TLS (init/tls.c): kin.rpc.tls= served by a gateway (tls/) that cells
 * runs and restarts; its connections handed over to rpc. < 0: not
 * listening (logged; also without cells). in and carried: a re-exec's
 * state and its TLS record (tls_serve_save), the gateway taken over from
 * them (NULL: a fresh start). */
struct init_tls;
struct cells;
struct state_in;
struct state_field;
int init_tls_start(const struct init_rpc_config *cfg, struct ev_loop *loop, struct rpc_server *rpc,
                   struct cells *cells, struct state_in *in, const struct state_field *carried,
                   struct init_tls **ret);
/* The record for a re-exec (tls_serve_save's: kin's sockets; the gateway
 * goes along with cells); NULL t: none. */
struct state_w;
void init_tls_save(const struct init_tls *t, struct state_w *w, uint16_t tag);
void init_tls_reload(struct init_tls *t); /* SIGHUP to the gateway: new files */
void init_tls_stop(struct init_tls *t);   /* no more connections; the gateway ends */
void init_tls_free(struct init_tls *t);

/* The VM link (init/link.c), machine init only: RPC served on the
 * virtio-serial port kinds names (kin.link=; QEMU's org.kin.rpc without
 * it), reopened while the host is away. */
struct init_link;
int init_link_start(struct ev_loop *loop, struct rpc_server *rpc,
                    const struct vm_guest_kinds *kinds, struct init_link **ret);
void init_link_free(struct init_link *l);

/* Cells (init/cells.c): the library, made when rpc is serving and cgroup2
 * is there (else the services answer FAILED_PRECONDITION). At stop:
 * executables get SIGTERM (stop), then every top-level cell cgroup.kill
 * with the final SIGKILL. Shutdown frees the library, after the services'
 * shutdown and before rpc_server_free; free comes after. */
struct init_cells;
/* base: the cgroup (relative to the cgroup2 mount) kin moves into and
 * makes its cells below; NULL: its own. The library is made when the
 * handover's participants start (keep_start): fresh (every cell an
 * earlier kin left is removed), from a re-exec's state, or adopting what
 * a killed kin's file state says it ran (the rest it left removed;
 * services' cells only when units, a service manager that adopts them,
 * run: units). NULL without rpc: nobody could reach them. */
struct keep;
int init_cells_new(struct keep *k, struct ev_loop *loop, struct child_table *children,
                   struct rpc_server *rpc, const char *base, bool units, struct init_cells **ret);
/* The keeper of k as cells' type (into buf), NULL without one. */
struct cells_keeper;
const struct cells_keeper *init_keeper(struct keep *k, struct cells_keeper *buf);
void init_cells_stop(struct init_cells *ic, uint64_t grace_ms);
void init_cells_kill(struct init_cells *ic);
void init_cells_shutdown(struct init_cells *ic);
void init_cells_free(struct init_cells *ic);
/* The cells library (NULL: none), for the zones and VMMs made over it. */
struct cells *init_cells_lib(struct init_cells *ic);
/* Why there is none ("" when there is). */
const char *init_cells_why(struct init_cells *ic);

/* Units (init/units.c): systemd unit files run as services — a host's
 * init on a real root, or any role given --unit-dir. NULL when neither. */
struct units;
struct init_units;
/* The service manager is made when the handover's participants start
 * (keep_start, after cells): a re-exec's state taken back instead of a
 * boot, or a killed kin's (its state file; the keeper's fds give the
 * notify socket and the socket units back) taken back, then booted as
 * ever, or a fresh one. *ret NULL when no units are wanted here. */
int init_units_new(struct keep *k, const struct init_config *cfg, enum init_role role,
                   struct ev_loop *loop, struct child_table *children, struct init_cells *cells,
                   struct init_units **ret);
/* Whether the manager could not be made (then init_units_lib is NULL). */
bool init_units_failed(const struct init_units *iu);
/* Boots the default target (machine: after sysinit). */
void init_units_boot(struct init_units *iu);
/* Stops every unit in reverse order; done once they are all down. */
void init_units_stop(struct init_units *iu, void (*done)(void *data), void *data);
void init_units_free(struct init_units *iu);
struct units *init_units_lib(struct init_units *iu);

/* kin run by containerd as containerd-shim-kin-v2: start, delete, and the
 * daemon (init/shim.c). */
int init_shim_main(int argc, char **argv);
/* The daemon's Task service (shim/), its pod's zones from api's Zones
 * service and its state carried in api's re-exec record: started after
 * api_start, with cfg's pods filled in. NULL when it could not (logged). */
struct api;
struct shim_task;
struct shim_task_config;
struct shim_task *init_shim_task_start(const struct shim_task_config *cfg, struct api *api);

/* `kin init ...` entry point, also used when kin is started as /init. */
int init_main(int argc, char **argv, bool as_kernel_init);
