/* cells: cgroup v2 cells and the executables kin runs in them.
 *
 * A cell is a cgroup in a subtree kin owns: <base>/cells/a/b/c, where <base>
 * is kin's own cgroup (found through /proc/self/cgroup on the cgroup2 mount
 * found through /proc/self/mountinfo) and kin itself sits in the leaf
 * <base>/init, so cgroup v2's no-internal-processes rule holds. Cells nest,
 * carry limits, report stats, freeze, thaw, are killed and deleted.
 *
 * An executable is a process kin starts straight into a cell with
 * clone3(CLONE_INTO_CGROUP | CLONE_PIDFD), isolated as its spec says
 * (ids, capabilities, seccomp, namespaces, pivot_root), with stdout/stderr
 * captured in bounded ring buffers and an optional restart policy.
 *
 * Everything runs on lib's ev_loop: no threads, no blocking waits. Work that
 * completes later (start, freeze, forced delete, stop, wait) reports through a
 * callback. Events and log streams go to consumers through small function
 * pointer interfaces owned here, so rpc/ can turn them into server streams.
 *
 * Errors: functions return >= 0 or -errno, and fill an optional
 * struct err with one sentence naming the object and the cause, and a
 * status code numbered like gRPC's so rpc/ can pass it through. */
#pragma once

#include "lib/lib.h"

#include <sys/resource.h>

/* ---- bounds (docs/cells.md) -------------------------------------------- */

#define CELLS_MAX               1024 /* cells in one kin */
#define CELLS_DEPTH_MAX         16   /* path elements: a/b/c is depth 3 */
#define CELLS_NAME_MAX          64   /* bytes per path element */
#define CELLS_PATH_MAX          (CELLS_DEPTH_MAX * (CELLS_NAME_MAX + 1))
#define CELLS_EXEC_MAX          1024 /* executables, running or ended, in one kin */
#define CELLS_LISTENERS_MAX     64   /* event consumers at once */
#define EXEC_FOLLOWERS_MAX      16   /* log followers per executable */
#define EXEC_WAITERS_MAX        16   /* pending waits/stops per executable */
#define EXEC_ARGS_MAX           256
#define EXEC_ENV_MAX            256
#define EXEC_STRINGS_MAX        (128 * 1024) /* bytes of argv + env + paths */
#define EXEC_GROUPS_MAX         32
#define EXEC_RLIMITS_MAX        16
#define EXEC_IDMAP_MAX          8
#define EXEC_PASS_FDS_MAX       64
#define EXEC_LOG_DEFAULT        (1024 * 1024)
#define EXEC_LOG_MIN            4096
#define EXEC_LOG_MAX            (64 * 1024 * 1024)
#define EXEC_TTY_SIZE_MAX       4096 /* a terminal's rows and columns, each 1..this */
#define EXEC_BACKOFF_BASE_MS    100
#define EXEC_BACKOFF_CAP_MS     30000
#define EXEC_BACKOFF_RESET_MS   10000 /* a run this long resets the backoff */
#define EXEC_START_TIMEOUT_MS   5000  /* child setup before execve, at most (kin goes on) */
#define CELLS_FREEZE_TIMEOUT_MS 10000
#define CELLS_DELETE_TIMEOUT_MS 10000

/* ---- errors ------------------------------------------------------------- */

/* Errors are lib's struct err (lib/err.h): a code, an errno and one
 * sentence naming the cell or executable and the cause. */

/* ---- names ---------------------------------------------------------------- */

/* One path element: [A-Za-z0-9_.@-]{1,64} ('@' not first: a service
 * instance's cell, getty@tty1.service), not "." or "..". */
bool cell_name_valid(const char *name);
/* A cell path: elements joined by '/', at most CELLS_DEPTH_MAX, no leading,
 * trailing or doubled '/'. -EINVAL with a sentence in err. */
int cell_path_check(const char *path, struct err *err);

/* ---- the library ------------------------------------------------------------ */

struct cells;

struct cells_config {
	const char *mount; /* cgroup2 mount point; NULL: from /proc/self/mountinfo */
	const char *base;  /* kin's cgroup, relative to the mount; NULL: /proc/self/cgroup */
	/* Move kin, and any other process of <base>, into the leaf <base>/init,
	 * so controllers can be enabled below <base>. Ignored at the mount root
	 * (exempt from the no-internal-processes rule). */
	bool own_leaf;
};

/* Finds cgroup2, makes <base>/cells (and <base>/init with own_leaf),
 * enables every available controller for the cells, and watches cell state
 * through the loop. Children are tracked in the given child table, so the
 * owner's reaper dispatches their exits. */
int cells_new(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
              struct cells **ret, struct err *err);
/* Forgets every cell and executable (cgroups and processes stay); a child
 * still running is reaped later without calling back into freed memory. */
void cells_free(struct cells *c);
/* ---- re-exec (state.c) ------------------------------------------------------ */

/* A kin that re-executes itself hands its cells over in its state
 * (lib/state.h): every cell, and every executable with its spec, run
 * state, restart backoff, exit status, captured output and the fds of its
 * pipes; the processes stay kin's children throughout. */
struct state_w;
struct state_in;
struct state_field;
/* Whether there is nothing in flight that cannot be handed over: false,
 * with why, while a start, freeze or forced delete is under way (each
 * settles within its own deadline). */
bool cells_settled(const struct cells *c, char *why, size_t size);
/* The children cells tracks (running executables). */
size_t cells_children(const struct cells *c);
/* Writes the library as one record of tag: -EOPNOTSUPP with err naming
 * an executable that cannot be handed over (its owner's release hook);
 * nothing kept then. The fds an executable holds to pass to its restarts
 * go along, as its pipes do. */
int cells_save(const struct cells *c, struct state_w *w, uint16_t tag, struct err *err);
/* The library again, from its record: the cells that still exist, their
 * executables tracked again (a child not found is reported as ended with
 * status unknown). What cannot be restored is logged and left out. */
int cells_restore(struct ev_loop *loop, struct child_table *children, struct state_in *in,
                  const struct state_field *f, struct cells **ret, struct err *err);
/* After a kin was killed: a library on cfg's cgroup (as cells_new) that
 * adopts what a file state's record f (lib/state.h, w->file; NULL: none)
 * says the dead kin ran — cells still there, executables with their specs,
 * restart policies and counts, their processes found in their cells and
 * watched (an end is seen, its status is unknown: they are not kin's
 * children), their pipes opened again through /proc. Executables that
 * ended meanwhile restart as their policy says. Every other cgroup under
 * the cells root, and every cell whose top element is one of
 * not_adopted_kinds (kinds their owners cannot adopt yet), is killed and
 * removed, each with a log line naming it; below a cell KIND/NAME of one
 * of delegated_kinds nothing is looked at (a zone kin's own cgroups). Output captured before is
 * lost (it was in the dead kin's memory). kept: pipe ends a keeper held
 * (cells_keeper); the adopted executables' are found by inode and taken
 * (set to -1 there), the caller closes the rest. */
int cells_adopt(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
                struct state_in *in, const struct state_field *f,
                const char *const *not_adopted_kinds, const char *const *delegated_kinds, int *kept,
                size_t nkept, struct cells **ret, struct err *err);
/* Whether cells an earlier kin left are still being removed (their owner
 * makes its own again once they are gone: a service's unit, say). */
bool cells_sweeping(const struct cells *c);

/* A keeper of pipes: the other ends of every executable's pipes (stdout's
 * and stderr's read ends, stdin's write end) go to keep() as they are made
 * (and, at cells_set_keeper with running_too, those of every running one:
 * a keeper that holds none yet), so a process
 * outside kin holds them while no kin runs: a workload writes on into the
 * pipe and reads no EOF, and a successor takes them back (cells_adopt's
 * kept). unkeep() gets stdin's before kin closes it on purpose, so the
 * workload sees its EOF. */
struct cells_keeper {
	void (*keep)(const int *fds, size_t n, void *data);
	void (*unkeep)(int fd, void *data);
	void *data;
};
void cells_set_keeper(struct cells *c, const struct cells_keeper *k, bool running_too);

/* Absolute cgroupfs directory of a cell ("" or NULL: the cells root). */
int cells_cgroup_dir(const struct cells *c, const char *path, char *buf, size_t size);
const char *cells_mount(const struct cells *c);

/* ---- limits --------------------------------------------------------------- */

enum cell_limit {
	CELL_CPU_WEIGHT,
	CELL_CPU_MAX,
	CELL_CPUSET_CPUS,
	CELL_CPUSET_MEMS,
	CELL_MEMORY_MIN,
	CELL_MEMORY_LOW,
	CELL_MEMORY_HIGH,
	CELL_MEMORY_MAX,
	CELL_MEMORY_SWAP_MAX,
	CELL_PIDS_MAX,
	CELL_IO_WEIGHT,
	CELL_LIMIT_COUNT,
};

#define CELL_UNLIMITED  UINT64_MAX /* written as "max" */
#define CELL_CPUSET_LEN 128

/* A limit is applied only when its bit (1u << enum cell_limit) is in set;
 * the others stay at the kernel's default (or their last value). */
struct cell_limits {
	uint32_t set;
	uint64_t cpu_weight;               /* 1..10000 */
	uint64_t cpu_quota_us;             /* 1000..(1<<40) or CELL_UNLIMITED */
	uint64_t cpu_period_us;            /* 1000..1000000 (default 100000) */
	char cpuset_cpus[CELL_CPUSET_LEN]; /* "0-3,6" */
	char cpuset_mems[CELL_CPUSET_LEN];
	uint64_t memory_min, memory_low, memory_high, memory_max, memory_swap_max; /* bytes */
	uint64_t pids_max;  /* 1..4194304 or CELL_UNLIMITED */
	uint64_t io_weight; /* 1..10000 */
};

const char *cell_limit_name(enum cell_limit k);       /* "memory.max" */
const char *cell_limit_controller(enum cell_limit k); /* "memory" */
/* Parses one "key" = "value" as a user writes it: cpu.max "50000 100000",
 * "max", memory.* "512M"/"1G"/bytes/"max", cpuset.* "0-3,6", numbers. */
int cell_limit_parse(struct cell_limits *l, const char *key, const char *value, struct err *err);
/* Range checks every set limit (also for limits filled in directly). */
int cell_limits_validate(const struct cell_limits *l, struct err *err);
/* The value as cgroupfs takes it ("max", "50000 100000", "default 100"). */
int cell_limit_format(const struct cell_limits *l, enum cell_limit k, char *buf, size_t size);

/* ---- cells ---------------------------------------------------------------- */

/* Completion of an operation that returned 1 (pending): result is 0 or
 * -errno, err says why. Called exactly once, from the loop. */
typedef void (*cell_done_fn)(int result, const struct err *err, void *data);

/* Every check (name, parent, duplicates, bounds, limit ranges, controllers)
 * runs before mkdir; a limit that cannot be written removes the new cgroup. */
int cell_create(struct cells *c, const char *path, const struct cell_limits *limits,
                struct err *err);
/* Applies the set limits live. */
int cell_update(struct cells *c, const char *path, const struct cell_limits *limits,
                struct err *err);
/* Refused (FAILED_PRECONDITION) while processes run or child cells exist,
 * unless force: then the subtree is killed, and removed once empty.
 * Returns 0 when done, 1 when pending (done called later), or -errno. */
int cell_delete(struct cells *c, const char *path, bool force, cell_done_fn done, void *data,
                struct err *err);
/* cgroup.freeze, then waits (through the loop) for cgroup.events to say
 * frozen 1 (or 0 for thaw). Returns 0 when already so, 1 pending, -errno. */
int cell_freeze(struct cells *c, const char *path, bool freeze, cell_done_fn done, void *data,
                struct err *err);
/* cgroup.kill: SIGKILL to every process of the cell and its descendants. */
int cell_kill(struct cells *c, const char *path, struct err *err);
/* cell_kill of every top-level cell (what left its owner's tree too). */
void cell_kill_all(struct cells *c);
/* sig to every process of the cell and of every cgroup below it (a
 * delegated cell's own too); SIGKILL goes through cgroup.kill. Returns
 * how many processes were signalled. */
int cell_signal(struct cells *c, const char *path, int sig, struct err *err);
/* The limits set in l (bits of l->set) whose controller the cell does not
 * have, which cell_update would refuse. */
int cell_limits_unavailable(struct cells *c, const char *path, const struct cell_limits *l,
                            uint32_t *ret_bits, struct err *err);

struct cell_info {
	char path[CELLS_PATH_MAX];
	unsigned depth; /* 1 for a top-level cell */
	bool populated, frozen;
	size_t nexec;              /* executables known in this cell */
	uint32_t controllers;      /* bit per cells_controller */
	struct cell_limits limits; /* as last set through kin */
};

enum cells_controller {
	CELLS_CTL_CPU,
	CELLS_CTL_CPUSET,
	CELLS_CTL_MEMORY,
	CELLS_CTL_IO,
	CELLS_CTL_PIDS,
	CELLS_CTL_HUGETLB,
	CELLS_CTL_RDMA,
	CELLS_CTL_MISC,
	CELLS_CTL_COUNT,
};
const char *cells_controller_name(enum cells_controller ctl);

/* Visits path's subtree (NULL or "": every cell) depth first, parents
 * before children, siblings in creation order; fn returning < 0 stops. */
typedef int (*cell_visit_fn)(const struct cell_info *info, void *data);
/* Whether process pid runs in cell path itself (its /proc/PID/cgroup):
 * a pid a record names is checked so before kin takes it for that cell's. */
bool cell_holds(struct cells *c, const char *path, pid_t pid);
/* The same, in the cell or in any cgroup below it (a zone kin's leaf). */
bool cell_holds_below(struct cells *c, const char *path, pid_t pid);
int cell_list(struct cells *c, const char *path, cell_visit_fn fn, void *data, struct err *err);

struct cell_psi_line {
	double avg10, avg60, avg300;
	uint64_t total_us;
};
struct cell_psi {
	bool present;
	struct cell_psi_line some, full;
};

/* Each group is present only when its files exist (controller enabled). */
struct cell_stats {
	bool has_cpu;
	uint64_t cpu_usage_us, cpu_user_us, cpu_system_us;
	uint64_t cpu_nr_periods, cpu_nr_throttled, cpu_throttled_us;
	bool has_memory;
	uint64_t memory_current, memory_peak;
	uint64_t mem_ev_low, mem_ev_high, mem_ev_max, mem_ev_oom, mem_ev_oom_kill;
	bool has_pids;
	uint64_t pids_current;
	uint64_t procs; /* cgroup.procs lines of this cell alone */
	struct cell_psi psi_cpu, psi_memory, psi_io;
};

int cell_show(struct cells *c, const char *path, struct cell_info *info, struct cell_stats *stats,
              struct err *err);

/* ---- events ---------------------------------------------------------------- */

enum cells_event_type {
	CELLS_EV_CELL_CREATED,
	CELLS_EV_CELL_DELETED,
	CELLS_EV_FROZEN,
	CELLS_EV_THAWED,
	CELLS_EV_OOM_KILL, /* memory.events oom_kill went up; count = new kills */
	CELLS_EV_EXEC_START,
	CELLS_EV_EXEC_EXIT,    /* exit_code or signal */
	CELLS_EV_EXEC_RESTART, /* count = restarts so far, delay_ms before it */
};
const char *cells_event_name(enum cells_event_type t); /* "exit" */

struct cells_event {
	enum cells_event_type type;
	const char *cell; /* path */
	const char *exec; /* name, or NULL for cell events */
	pid_t pid;
	int exit_code;       /* CLD_EXITED */
	int signal;          /* killed by, else 0 */
	bool status_unknown; /* EXEC_EXIT of a process adopted after a restart */
	uint64_t count;
	uint64_t delay_ms;
	uint64_t time_ns; /* CLOCK_MONOTONIC */
};

/* An event consumer (e.g. rpc/'s `kin ctl events` stream). event() must not
 * call cells_unlisten on another listener; closed() runs once when the
 * library goes away or the listener is removed. */
struct cells_listener_ops {
	void (*event)(const struct cells_event *ev, void *data);
	void (*closed)(void *data);
};
struct cells_listener;
int cells_listen(struct cells *c, const struct cells_listener_ops *ops, void *data,
                 struct cells_listener **ret);
void cells_unlisten(struct cells *c, struct cells_listener *l);

/* ---- executables ------------------------------------------------------------ */

enum exec_restart { EXEC_RESTART_NO, EXEC_RESTART_ON_FAILURE, EXEC_RESTART_ALWAYS };
enum exec_seccomp_mode {
	EXEC_SECCOMP_DEFAULT,
	EXEC_SECCOMP_NONE,
	EXEC_SECCOMP_FILE,
	EXEC_SECCOMP_TEXT, /* seccomp_file holds the profile's text itself */
};

#define EXEC_NS_PID    (1u << 0)
#define EXEC_NS_MNT    (1u << 1)
#define EXEC_NS_NET    (1u << 2)
#define EXEC_NS_UTS    (1u << 3)
#define EXEC_NS_IPC    (1u << 4)
#define EXEC_NS_USER   (1u << 5)
#define EXEC_NS_CGROUP (1u << 6)
#define EXEC_JOINS_MAX 6 /* pid, mnt, net, uts, ipc, cgroup: not user */

struct exec_idmap {
	uint32_t inside, outside, count;
};
struct exec_rlimit {
	int resource;        /* RLIMIT_* */
	uint64_t soft, hard; /* RLIM_INFINITY for unlimited */
};

/* The documented default capability set (docs/cells.md): CHOWN, DAC_OVERRIDE,
 * FSETID, FOWNER, MKNOD, NET_RAW, SETGID, SETUID, SETFCAP, SETPCAP,
 * NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE. */
#define EXEC_CAPS_DEFAULT 0xa80425fbull

/* What to run and how. Fill with exec_spec_init() and change what differs;
 * exec_start copies what it needs, so the caller's memory may go after. */
struct exec_spec {
	char *const *argv; /* argv[0] without '/' is searched in the env's PATH */
	/* The program when it is not argv[0] (a unit's '@' prefix gives the
	 * process another argv[0]); searched the same way. NULL: argv[0]. */
	const char *path;
	char *const *env; /* "K=V"; added to a clean env (PATH only) */
	const char *cwd;  /* in the new root; default "/" */
	uint32_t uid, gid;
	uint32_t groups[EXEC_GROUPS_MAX];
	size_t ngroups;
	mode_t umask; /* default 022 */
	struct exec_rlimit rlimits[EXEC_RLIMITS_MAX];
	size_t nrlimits;
	uint64_t caps;    /* bounding, permitted, effective, inheritable */
	uint64_t ambient; /* subset of caps */
	bool no_new_privs;
	enum exec_seccomp_mode seccomp;
	const char
	    *seccomp_file;   /* EXEC_SECCOMP_FILE: its format: docs/cells.md; _TEXT: the text */
	uint32_t namespaces; /* EXEC_NS_* */
	struct exec_idmap uid_map[EXEC_IDMAP_MAX], gid_map[EXEC_IDMAP_MAX];
	size_t nuid_map, ngid_map; /* EXEC_NS_USER: default maps 0 to 0, 1 id */
	const char *hostname;      /* needs EXEC_NS_UTS */
	const char *root;          /* pivot_root here (implies EXEC_NS_MNT) */
	bool root_readonly;
	/* The mount namespace's propagation under the root (MS_PRIVATE,
	 * MS_SLAVE or MS_SHARED, | MS_REC); 0: MS_REC | MS_PRIVATE. */
	unsigned long root_propagation;
	/* An overlay mounted at root (an empty directory) by the child, in
	 * its own mount namespace (nothing to unmount after): lowerdirs as
	 * overlayfs takes them ("top:...:bottom"), upperdir and workdir on
	 * one filesystem. All three or none. */
	const char *root_lowerdirs, *root_upperdir, *root_workdir;
	/* Absolute paths in the new root (NULL-terminated lists; a path that
	 * does not exist is skipped): masked ones get /dev/null (a file) or
	 * an empty read-only tmpfs (a directory) over them, read-only ones a
	 * read-only bind of themselves. Applied after pivot_root, so the new
	 * /proc is the one masked. Needs root. */
	const char *const *masked_paths;
	const char *const *readonly_paths;
	/* Made writable again below a read-only one (a service's
	 * ReadWritePaths= under ProtectSystem=strict): bound and remounted
	 * read-write after the read-only ones. */
	const char *const *writable_paths;
	/* A runtime-spec mount list, applied in order in the new root before
	 * pivot_root; with one, kin mounts no /proc or /dev of its own (a
	 * tmpfs at /dev is kin's minimal /dev, its nodes included). Targets
	 * are made where missing, never through a symlink (refused). */
	const struct exec_mount *mounts;
	size_t nmounts;
	char *const *sysctls; /* "net.ipv4.ip_forward=1", written after pivot_root */
	/* Namespaces joined instead of made (pid, mnt, net, ipc, uts, cgroup):
	 * paths such as /proc/PID/ns/net, opened and checked by exec_start.
	 * A mount namespace joined is the process's root (no root here). */
	struct exec_ns_join {
		uint32_t ns; /* one EXEC_NS_* bit */
		const char *path;
	} joins[EXEC_JOINS_MAX];
	size_t njoins;
	/* Separate capability sets (runtime-spec): caps is then the bounding
	 * set, ambient must be in permitted and inheritable. */
	bool caps_split;
	uint64_t caps_effective, caps_permitted, caps_inheritable;
	bool oom_score_adj_set;
	int oom_score_adj;
	/* A device allow-list (runtime-spec's linux.resources.devices): with
	 * devices_set, a cgroup device program attached to the cell before
	 * the child enters it; the last matching rule decides, none denies,
	 * and kin's minimal /dev is always allowed. */
	bool devices_set;
	const struct exec_device_rule *devices;
	size_t ndevices;
	/* Nodes made in the new root's /dev (after the mounts): mknod, or in
	 * a user namespace, where mknod is refused, the host's node bound. */
	const struct exec_device_node *device_nodes;
	size_t ndevice_nodes;
	bool stdin_pipe; /* else stdin is /dev/null */
	/* A new pty for each run: the slave is the process's controlling
	 * terminal (its own session) and its stdin, stdout and stderr; kin
	 * keeps the master — read into the stdout ring, written by
	 * exec_stdin_write, sized by exec_resize. No stdio paths with it.
	 * rows, cols: the first window size (0: 24x80). */
	bool terminal;
	uint16_t rows, cols;
	/* Absolute paths on kin's machine opened for the child's stdin,
	 * stdout, stderr instead of /dev/null and the output rings (a
	 * containerd FIFO, a log file). Opened by kin at each run, never
	 * blocking: a FIFO's writer end needs a reader already there (else
	 * the start fails naming it), its reader end does not wait for a
	 * writer. FIFOs, regular files (appended to, made if missing) and character devices
	 * only. A stream given a path is not captured. */
	const char *stdio_paths[3];
	size_t log_bytes; /* per stream ring; 0: EXEC_LOG_DEFAULT */
	/* Open fds the child gets as 3, 4, ... (socket activation); with
	 * listen_env it sets LISTEN_FDS=n and LISTEN_PID=its own pid. An
	 * executable with a restart policy holds copies of its own (made at
	 * exec_start, closed with its record), passed again at each restart
	 * and across a re-exec: the caller may close its fds once started. */
	const int *pass_fds;
	size_t npass_fds;
	bool listen_env;
	bool nice_set;
	int nice; /* -20..19 */
	enum exec_restart restart;
	uint64_t backoff_base_ms, backoff_cap_ms; /* 0: defaults */
	/* Called once when the executable's record lets its copy of the spec
	 * go (deleted, replaced by a new start of the name, its cell deleted,
	 * the library freed), or before exec_start returns an error: what
	 * the caller made for this executable (a container's writable layer)
	 * goes with it. Runs in the loop; it must not call back into cells. */
	void (*release)(void *data);
	void *release_data;
	/* The owner carries what release frees across a re-exec itself:
	 * cells_save keeps the executable, and the next kin's record has no
	 * hook until the owner gives it back (exec_release_set). */
	bool release_carried;
};

/* One mount of a runtime-spec list: target absolute in the new root;
 * type NULL with MS_BIND in flags for a bind (source on kin's machine). */
struct exec_mount {
	const char *source, *target, *type, *data;
	unsigned long flags, propagation;
};
struct exec_device_rule {
	bool allow;
	char type;            /* 'a' (any), 'b', 'c' */
	int64_t major, minor; /* -1: any */
	unsigned access;      /* 1 read, 2 write, 4 mknod */
};
struct exec_device_node {
	const char *path; /* under /dev */
	char type;        /* 'c', 'b', 'p' */
	uint32_t major, minor, mode, uid, gid;
};
#define EXEC_DEVICES_MAX 256
#define EXEC_NODES_MAX   1024 /* a privileged container: every node of a big host's /dev */
#define EXEC_MOUNTS_MAX  256
#define EXEC_SYSCTLS_MAX 64

/* The /proc and /sys paths container runtimes mask and make read-only by
 * default (runc's and containerd's set), for image containers. */
extern const char *const exec_masked_default[];
extern const char *const exec_readonly_default[];

void exec_spec_init(struct exec_spec *s);
/* Checks everything exec_start checks that does not need the system. */
int exec_spec_validate(const struct exec_spec *s, struct err *err);
/* "CHOWN,net_admin,CAP_KILL" or "all" or "none" into a mask. */
int exec_caps_parse(const char *list, uint64_t *ret, struct err *err);
/* "nofile=1024:4096", "core=unlimited", "nproc=100" (soft = hard). */
int exec_rlimit_parse(const char *s, struct exec_rlimit *ret, struct err *err);
/* "pid,mnt,net,uts,ipc,user,cgroup" into EXEC_NS_* bits. */
int exec_ns_parse(const char *list, uint32_t *ret, struct err *err);
/* Delay before restart number attempt+1: base * 2^attempt, at most cap. */
uint64_t exec_backoff_ms(uint32_t attempt, uint64_t base_ms, uint64_t cap_ms);

/* Completion of a start that returned 1: result 0 once the child reached
 * execve, or -errno with err saying why. Called exactly once, from the
 * loop, never from inside exec_start. */
typedef void (*exec_start_fn)(int result, const struct err *err, void *data);

/* Starts name in cell without waiting for the child: every check, then
 * clone3 into the cell, and returns 1 (pending) with the executable listed
 * as "starting"; done reports later, from the loop, once the child's setup
 * reached execve (0), or failed (the step and errno in err: `exec
 * "web/nginx": execve: No such file or directory`), or did not reach
 * execve within EXEC_START_TIMEOUT_MS (-ETIMEDOUT, DEADLINE_EXCEEDED: `exec
 * "web/nginx": setup did not reach execve within 5000 ms`). A failure is
 * reported once the child is reaped, and leaves no process, record or fd
 * behind. -errno (done never called) when it failed before any child.
 *
 * While it is starting: another start of the name is ALREADY_EXISTS;
 * exec_stop kills the child at once (the start fails CANCELLED, the stop is
 * answered with the run's end); exec_delete and a plain cell_delete are
 * refused as for a running one; exec_wait waits for the run's end; a cell
 * kill or forced delete kills the child (seen as a run that ended at once).
 * Starting a name whose previous run ended replaces that record once the
 * new run reached execve; a failed start leaves the old one. If the library
 * is freed first, done gets -ECANCELED and the child is killed. */
int exec_start(struct cells *c, const char *cell, const char *name, const struct exec_spec *spec,
               exec_start_fn done, void *data, struct err *err);
int exec_signal(struct cells *c, const char *cell, const char *name, int sig, struct err *err);

enum exec_state { EXEC_STARTING, EXEC_RUNNING, EXEC_STOPPING, EXEC_BACKOFF, EXEC_EXITED };
const char *exec_state_name(enum exec_state s);

struct exec_status {
	char cell[CELLS_PATH_MAX];
	char name[CELLS_NAME_MAX + 1];
	enum exec_state state;
	pid_t pid;   /* last pid */
	bool exited; /* the last run ended: exit_code or signal is set */
	int exit_code, signal;
	bool status_unknown; /* ended unseen (adopted, not kin's child): no code */
	bool terminal;       /* its spec asked for one */
	uint32_t restarts;
	uint64_t started_ns, exited_ns;
	uint64_t log_bytes[2]; /* bytes ever captured: stdout, stderr */
};

/* Called when the run ends (each run, for supervised executables), with the
 * status; result -ECANCELED when the executable is deleted first. */
typedef void (*exec_done_fn)(int result, const struct exec_status *st, void *data);

/* SIGTERM, SIGKILL after grace_ms; no more restarts. 0: already ended (no
 * callback), 1: pending. */
int exec_stop(struct cells *c, const char *cell, const char *name, uint64_t grace_ms,
              exec_done_fn done, void *data, struct err *err);
/* 0: not running (st filled if given, no callback), 1: pending. */
int exec_wait(struct cells *c, const char *cell, const char *name, exec_done_fn done, void *data,
              struct exec_status *st, struct err *err);
/* A pending wait's (or stop's) callback taken back (its caller went): 0,
 * or -ENOENT when none is pending with done and data. */
int exec_unwait(struct cells *c, const char *cell, const char *name, exec_done_fn done, void *data);
int exec_status(struct cells *c, const char *cell, const char *name, struct exec_status *st,
                struct err *err);
/* Every executable of a cell (NULL: all). */
typedef int (*exec_visit_fn)(const struct exec_status *st, void *data);
int exec_list(struct cells *c, const char *cell, exec_visit_fn fn, void *data, struct err *err);
/* exec_stop of every executable still running (its owner stops: no
 * restarts from now on, nobody told when each ends); how many. */
size_t exec_stop_all(struct cells *c, uint64_t grace_ms);
/* Forgets an executable that is not running (FAILED_PRECONDITION if it is). */
int exec_delete(struct cells *c, const char *cell, const char *name, struct err *err);
/* After a re-exec: the release hook of a restored executable whose spec
 * said release_carried, given back by its owner. -ENOENT (no such
 * executable), -EBUSY (it has a hook, or its spec carried none). */
int exec_release_set(struct cells *c, const char *cell, const char *name,
                     void (*release)(void *data), void *data, struct err *err);

/* ---- output ---------------------------------------------------------------- */

enum exec_stream { EXEC_STDOUT, EXEC_STDERR };

/* Copies captured output from *pos (a byte offset since the first start;
 * 0 is the oldest kept) and advances *pos. Bytes overwritten before they
 * were read are skipped: *ret_dropped says how many. */
int exec_log_read(struct cells *c, const char *cell, const char *name, enum exec_stream s,
                  uint64_t *pos, void *buf, size_t size, size_t *ret_len, uint64_t *ret_dropped,
                  struct err *err);

/* A log follower (e.g. rpc/'s log stream): gets what is kept, then new
 * output as it arrives; end() once the executable is gone for good or
 * exited and its pipes closed. */
struct exec_log_ops {
	void (*data)(enum exec_stream s, const void *buf, size_t len, void *data);
	void (*end)(void *data);
	/* Only output from now on, nothing kept (a follower taken back after
	 * a re-exec: what was kept reached it before). */
	bool live;
	/* Resuming from a position no longer kept: n bytes of s skipped
	 * (before any data of s). Optional. */
	void (*skipped)(enum exec_stream s, uint64_t n, void *data);
};
struct exec_follower;
/* from: each stream's position to start at (as exec_log_read's *pos);
 * NULL: the oldest kept. */
int exec_log_follow(struct cells *c, const char *cell, const char *name,
                    const struct exec_log_ops *ops, void *data, const uint64_t *from,
                    struct exec_follower **ret, struct err *err);
void exec_log_unfollow(struct cells *c, struct exec_follower *f);

/* Non-blocking write to a stdin_pipe executable: bytes written, or -EAGAIN. */
ssize_t exec_stdin_write(struct cells *c, const char *cell, const char *name, const void *buf,
                         size_t len, struct err *err);
/* Closes the stdin pipe; of a terminal, sends its end-of-file character
 * (VEOF, ^D: seen as the end by a program reading a line). */
int exec_stdin_close(struct cells *c, const char *cell, const char *name, struct err *err);
/* A terminal executable's window size (each 1..EXEC_TTY_SIZE_MAX): the
 * kernel sends SIGWINCH to its foreground process group; kept for its
 * restarts. FAILED_PRECONDITION when it has no terminal, or it ended. */
int exec_resize(struct cells *c, const char *cell, const char *name, unsigned rows, unsigned cols,
                struct err *err);
/* Whether the executable has a terminal (-ENOENT with err if unknown). */
int exec_has_terminal(struct cells *c, const char *cell, const char *name, struct err *err);
