/* cells-int: what the files of cells/ share and nobody else sees. Unit
 * tests include it for the pure parts (ring, seccomp profiles). */
#pragma once

#include "cells/cells.h"

#include <limits.h>
#include <linux/filter.h>
#include <sys/capability.h>

/* libcap's handle freed by cleanup, like every other resource here. */
static inline void cells_cap_freep(cap_t *c)
{
	if (*c)
		cap_free(*c);
}
#define _cleanup_cap_ _cleanup_(cells_cap_freep)

/* ---- errors (err.c) ----------------------------------------------------- */

/* Rewrites err's message as `WHAT "NAME": message`. */
void cells_err_prefix(struct err *err, const char *what, const char *name);

/* ---- ring buffer (ring.c) ----------------------------------------------- */

struct exec_ring {
	uint8_t *buf;
	size_t cap;
	uint64_t end; /* bytes ever written */
};
int exec_ring_init(struct exec_ring *r, size_t cap);
void exec_ring_free(struct exec_ring *r);
void exec_ring_write(struct exec_ring *r, const void *data, size_t len);
uint64_t exec_ring_start(const struct exec_ring *r);
/* Copies from *pos (moved up to the oldest kept byte first); returns bytes. */
size_t exec_ring_read(const struct exec_ring *r, uint64_t *pos, void *out, size_t len,
                      uint64_t *ret_dropped);

/* ---- seccomp (seccomp.c) ------------------------------------------------ */

enum exec_sc_action {
	EXEC_SC_ALLOW,
	EXEC_SC_ERRNO,
	EXEC_SC_KILL,
	EXEC_SC_TRAP,
	EXEC_SC_LOG,
	EXEC_SC_KILL_THREAD
};
#define CELLS_FOREIGN_DEPTH_MAX 32 /* cgroups a workload made below its cell */
#define EXEC_SC_RULES_MAX       1024
#define EXEC_SC_FILE_MAX        (64 * 1024)
#define EXEC_SC_ARGS_MAX        6

/* An argument condition: argN OP VALUE (me: (arg & value) == value_two). */
struct exec_sc_arg {
	unsigned index;
	int op; /* libseccomp's enum scmp_compare */
	uint64_t value, value_two;
};
struct exec_sc_rule {
	int nr; /* syscall number (native arch) */
	enum exec_sc_action action;
	int errno_val;
	size_t nargs;
	struct exec_sc_arg args[EXEC_SC_ARGS_MAX];
};
struct exec_sc_profile {
	enum exec_sc_action def_action;
	int def_errno;
	size_t nrules;
	size_t skipped; /* names unknown to this kernel, with "unknown skip" */
	struct exec_sc_rule rules[EXEC_SC_RULES_MAX];
};
/* Parses a profile file's text; err names the line. */
int exec_sc_parse(const char *text, struct exec_sc_profile *p, struct err *err);
/* Builds the BPF program for a profile (file) or the default profile, which
 * depends on the capabilities kept. *ret_prog's filter is malloc'ed. */
int exec_sc_build(const struct exec_sc_profile *file_profile, uint64_t caps,
                  struct sock_fprog *ret_prog, struct err *err);
/* Names the default profile denies (for the test of the set docs/cells.md lists). */
bool exec_sc_default_denies(const char *syscall, uint64_t caps);

/* ---- spawn (spawn.c) ---------------------------------------------------- */

/* Steps of the child's setup, reported with errno through the exec pipe. */
enum exec_step {
	EXEC_STEP_SYNC,
	EXEC_STEP_SETSID,
	EXEC_STEP_STDIO,
	EXEC_STEP_CTTY,
	EXEC_STEP_CGROUPNS,
	EXEC_STEP_MOUNT_PRIVATE,
	EXEC_STEP_BIND_ROOT,
	EXEC_STEP_MOUNT_PROC,
	EXEC_STEP_MOUNT_DEV,
	EXEC_STEP_PIVOT_ROOT,
	EXEC_STEP_REMOUNT_RO,
	EXEC_STEP_MASK,
	EXEC_STEP_MOUNTS,
	EXEC_STEP_SYSCTL,
	EXEC_STEP_SETNS,
	EXEC_STEP_OOM,
	EXEC_STEP_NODES,
	EXEC_STEP_HOSTNAME,
	EXEC_STEP_LOOPBACK,
	EXEC_STEP_CHDIR,
	EXEC_STEP_RLIMIT,
	EXEC_STEP_BOUNDING,
	EXEC_STEP_SETGROUPS,
	EXEC_STEP_SETGID,
	EXEC_STEP_SETUID,
	EXEC_STEP_CAPS,
	EXEC_STEP_AMBIENT,
	EXEC_STEP_NO_NEW_PRIVS,
	EXEC_STEP_SECCOMP,
	EXEC_STEP_PASS_FDS,
	EXEC_STEP_NICE,
	EXEC_STEP_EXECVE,
	EXEC_STEP_COUNT,
};
const char *exec_step_name(enum exec_step s);

/* What the child needs, prepared in the parent so the child only does
 * syscalls (no parsing, no allocation that can fail halfway). */
struct spawn_req {
	const struct exec_spec *spec; /* the executable's private copy */
	const char *label;            /* "cell/name" for messages */
	int cgroup_fd;
	int stdio[3];                 /* fds for 0, 1, 2 */
	struct sock_fprog seccomp;    /* len 0: none */
	cap_t caps;                   /* for cap_set_proc */
	char *envp[EXEC_ENV_MAX + 4]; /* PATH, env, LISTEN_FDS, LISTEN_PID, NULL */
	/* "LISTEN_PID=" with room for the pid the child writes in its copy. */
	char listen_pid[32], listen_fds[32];
	int join_fds[EXEC_JOINS_MAX]; /* the spec's joins but pid, opened and checked */
	size_t njoins;
	/* A pid namespace to join: kin enters it for its children around the
	 * clone (setns applies to children only), then returns to its own. */
	int join_pid_fd;
	const char *path; /* PATH to search */
};
/* clone3 into the cell's cgroup (user namespace maps written); the child
 * then runs its setup on its own. *ret_status_fd: the non-blocking read end
 * of its report pipe, for exec_spawn_result. The child is not tracked yet. */
int exec_spawn(struct spawn_req *req, pid_t *ret_pid, int *ret_pidfd, int *ret_status_fd,
               struct err *err);
/* Reads the report: 0 the child reached execve (EOF), -EAGAIN nothing yet,
 * else the failed step and errno as -errno and a sentence in err. */
int exec_spawn_result(int status_fd, const char *label, struct err *err);

/* ---- the device program (devices.c) ----------------------------------------- */

struct bpf_insn;
/* The program of rules (kin's defaults first), for tests; *ret freed. */
int exec_devices_program(const struct exec_device_rule *rules, size_t n, struct bpf_insn **ret,
                         size_t *ret_n);
/* Loads the spec's program and attaches it to cgroup_fd (no-op without
 * devices_set). */
int exec_devices_attach(const struct exec_spec *s, int cgroup_fd, const char *label,
                        struct err *err);

/* ---- spec copies (spec.c) ---------------------------------------------- */

/* The spec's string lists and strings, in an order the handed-over
 * state (state.c) numbers them by: append only. */
#define SPEC_VECS(s)                                                                               \
	{                                                                                          \
		(void *)&(s)->argv, (void *)&(s)->env, (void *)&(s)->masked_paths,                 \
		    (void *)&(s)->readonly_paths, (void *)&(s)->sysctls,                           \
		    (void *)&(s)->writable_paths                                                   \
	}
#define SPEC_STRS(s)                                                                               \
	{                                                                                          \
		&(s)->cwd, &(s)->root, &(s)->seccomp_file, &(s)->hostname, &(s)->root_lowerdirs,   \
		    &(s)->root_upperdir, &(s)->root_workdir, &(s)->stdio_paths[0],                 \
		    &(s)->stdio_paths[1], &(s)->stdio_paths[2], &(s)->path                         \
	}

/* A deep copy owning its strings (one allocation). */
int exec_spec_copy(const struct exec_spec *src, struct exec_spec **ret);
void exec_spec_free(struct exec_spec *s);
const char *exec_env_get(char *const *env, const char *key);

/* ---- cells state -------------------------------------------------------- */

struct exec;

struct cell_op {
	cell_done_fn done;
	void *data;
	bool active;
	bool want_frozen;
};

struct cell {
	char name[CELLS_NAME_MAX + 1];
	char path[CELLS_PATH_MAX];
	unsigned depth;
	struct cell *parent;
	struct list_node children; /* child cells, in creation order */
	struct list_node sibling;  /* in parent->children */
	struct cell_limits limits;
	int wd_events, wd_memory;
	bool populated, frozen;
	uint64_t oom_kills;
	struct cell_op freeze_op, delete_op;
	struct ev_source timer; /* deadline of a pending op; fd -1 when none */
	struct cells *owner;
	struct list_node execs; /* its executables, newest first */
};

struct cells_listener {
	const struct cells_listener_ops *ops;
	void *data;
	bool used;
};

struct cells {
	struct ev_loop *loop;
	struct child_table *children;
	char mount[PATH_MAX];
	char root[PATH_MAX]; /* <mount>/<base>/cells */
	struct cell top;     /* the cells root itself: not a user cell */
	size_t ncells, nexecs;
	struct ev_source inotify;
	struct cells_listener listeners[CELLS_LISTENERS_MAX];
	uint64_t exec_seq;          /* start order, for evicting the oldest ended run */
	struct cells_keeper keeper; /* keep NULL: none */
	size_t stale_pending;       /* cells left by an earlier kin, being removed */
};

/* cgroup.c */
/* A library on cfg's cgroup, nothing swept yet. */
int cells_open(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
               struct cells **ret, struct err *err);
/* Every cgroup under the cells root that is not a cell of c, or whose top
 * cell is one of not_adopted_kinds (NULL-terminated; may be NULL), is an
 * earlier kin's: killed and removed, each with a log line naming it. The
 * cgroups below a cell KIND/NAME of one of delegated_kinds are its
 * owner's (a zone kin's own), never looked at. */
void cells_sweep(struct cells *c, const char *const *not_adopted_kinds,
                 const char *const *delegated_kinds);
/* The loop's side of a new library: the inotify watch (inotify: one
 * handed over, its watches on the same files as they were; -1: a new
 * one), the cells root. */
int cells_init_loop(struct cells *c, struct ev_loop *loop, struct child_table *children,
                    int inotify, struct err *err);
int cells_find_mount(char *buf, size_t size);
int cells_self_cgroup(char *buf, size_t size);
uint32_t cells_controllers_parse(const char *s);
int cells_read_controllers(const char *dir, const char *file, uint32_t *ret);
int cells_cell_dir(const struct cells *c, const struct cell *cell, char *buf, size_t size);
int cells_cell_file(const struct cells *c, const struct cell *cell, const char *file, char *buf,
                    size_t size);
int cells_enable_controllers(const char *dir, uint32_t mask);

/* cell.c */
/* A cell's record under parent, not linked yet (NULL: out of memory). */
struct cell *cells_cell_alloc(struct cells *c, struct cell *parent, const char *name,
                              const char *path);
struct cell *cells_lookup(struct cells *c, const char *path, struct err *err);
int cells_get(struct cells *c, const char *path, struct cell **ret, struct err *err);
/* An executable of cell was reaped: a pending forced delete may finish. */
void cells_exec_gone(struct cells *c, struct cell *cell);
void cells_watch_add(struct cells *c, struct cell *cell);
void cells_watch_event(struct ev_source *src, uint32_t events);
void cells_fill_info(struct cells *c, struct cell *cell, struct cell_info *info);
int cells_read_events(struct cells *c, struct cell *cell, bool *populated, bool *frozen);

/* events.c */
void cells_emit(struct cells *c, const struct cells_event *ev);
void cells_listeners_close(struct cells *c);

/* ---- executables (exec.c, output.c) ------------------------------------ */

/* The child's exit data: outlives its executable when the library is freed
 * while the child runs (lib's child table cannot forget a child). */
struct exec_token {
	struct exec *e;
	struct child *child; /* tracked (or watched, when adopted) until its end */
};

struct exec_pipe {
	struct ev_source src; /* fd -1 when closed */
	struct exec *e;
	enum exec_stream stream;
};

struct exec_follower {
	const struct exec_log_ops *ops;
	void *data;
	struct exec *e;
	bool used;
};

struct exec_waiter {
	exec_done_fn done;
	void *data;
	bool used;
};

struct exec {
	struct cells *owner;
	struct cell *cell;
	struct list_node node; /* in cell->execs */
	char name[CELLS_NAME_MAX + 1];
	char label[CELLS_PATH_MAX + CELLS_NAME_MAX + 2]; /* "cell/name" */
	struct exec_spec *spec;
	enum exec_state state;
	struct exec_token *token; /* non-NULL while a child is tracked */
	pid_t pid;
	bool exited, no_restart;
	int exit_code, signal;
	bool status_unknown; /* the last run ended unseen: adopted, not kin's child */
	uint32_t restarts, attempt;
	uint64_t started_ns, exited_ns, seq;
	struct exec_ring ring[2];
	struct exec_pipe out[2];
	int stdin_fd;           /* a terminal's: a dup of the master (out[0]) */
	uint16_t rows, cols;    /* a terminal's window size, for its restarts */
	struct ev_source timer; /* backoff or stop grace; fd -1 until needed */
	uint64_t timer_due;     /* monotonic ns it fires at; 0: not armed */
	struct exec_follower followers[EXEC_FOLLOWERS_MAX];
	struct exec_waiter waiters[EXEC_WAITERS_MAX];
	bool ran;      /* a run of this record reached execve (later failures restart) */
	bool fds_held; /* spec->pass_fds are this record's own copies (exec_fds_hold) */
	/* A start in progress (state EXEC_STARTING; start.c). */
	struct ev_source status;  /* the child's report pipe; fd -1 when none */
	exec_start_fn start_done; /* NULL for restarts, or once called */
	void *start_data;
	struct exec *replaces; /* the name's ended run, unlinked until the start is over */
	bool start_failed;     /* verdict reached; answered once the child is reaped */
	struct err start_err;
};

/* output.c */
int exec_output_init(struct exec *e, size_t bytes);
/* Takes the parent's read ends of a new run's stdout/stderr pipes
 * (nonblocking: made so already, as the ends a re-exec hands over are). */
int exec_output_attach(struct exec *e, int out_fd, int err_fd, bool nonblocking);
void exec_output_free(struct exec *e);
/* Followers get end() if the executable is over for good. */
void exec_output_maybe_end(struct exec *e);
bool exec_output_open(const struct exec *e);
int exec_get(struct cells *c, const char *cell, const char *name, struct exec **ret,
             struct err *err);

/* tty.c */
/* A new pty for a run of e, sized as e (or its spec) says: the master
 * non-blocking, both O_CLOEXEC. */
int exec_tty_open(struct exec *e, int *ret_master, int *ret_slave, struct err *err);
/* Its end-of-file character to a terminal's input. */
int exec_tty_eof(struct exec *e);

/* exec.c */
/* An executable's record in cell, nothing started, not linked yet (NULL:
 * out of memory). */
struct exec *exec_alloc(struct cells *c, struct cell *cell, const char *name);
void exec_fill_status(const struct exec *e, struct exec_status *st);
void exec_waiters_finish(struct exec *e, int result);
int exec_timer_arm(struct exec *e, uint64_t ms);
void exec_timer_disarm(struct exec *e);
/* A run ended (reaped, or failed to start on a restart). */
void exec_run_ended(struct exec *e);
void exec_on_child_exit(const siginfo_t *si, void *data);
/* sig to the running process through its pidfd: never a recycled pid,
 * even for one adopted that is not kin's child. */
int exec_kill(struct exec *e, int sig);
/* The running executable's pipe ends to the keeper, if there is one. */
void exec_keep_pipes(struct exec *e);
void exec_free(struct exec *e);
/* An executable cells restarts holds its own copies of the fds passed to
 * it, so its owner may close its own: made at its start (-errno when one
 * is not an open fd), closed with its record. */
int exec_fds_hold(struct exec *e, struct err *err);
void exec_fds_drop(struct exec *e);
void exec_free_all(struct cells *c, struct cell *cell);
size_t exec_count(const struct cell *cell);
/* Stops restarts of every executable in the cell's subtree (forced delete). */
void exec_no_restart_subtree(struct cell *cell);
bool exec_any_running(const struct cell *cell);

/* state_spec.c: a spec in the handed-over state (lib/state.h). */
struct state_w;
struct state_field;
void exec_spec_save(struct state_w *w, uint16_t tag, const struct exec_spec *s);
int exec_spec_restore(const struct state_field *f, struct exec_spec **ret, struct err *err);
/* The restore's scratch goes (after the last exec_spec_restore). */
void exec_spec_restore_end(void);

/* start.c: a run from prepare to the child's report, through the loop. */
/* Begins a run of e (state EXEC_STARTING, child tracked, report pipe and
 * timeout in the loop); < 0 when it failed before any child existed. */
int exec_run(struct exec *e, struct err *err);
/* The start timeout fired (e->timer while EXEC_STARTING). */
void exec_start_timeout(struct exec *e);
/* exec_stop of a starting executable: the child is killed, the start fails. */
void exec_start_cancel(struct exec *e);
/* The child of a starting e was reaped (si): settles the start. Returns
 * false when e was freed (a first start that failed). */
bool exec_start_reaped(struct exec *e, const siginfo_t *si);
/* exec_free of a starting e: kill the child, cancel the start's callback. */
void exec_start_forget(struct exec *e);
