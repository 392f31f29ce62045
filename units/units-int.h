/* units-int.h: the manager's own structures, shared by manager.c (the unit
 * table, loading, dependencies), job.c (jobs and their order), service.c,
 * socket.c, timer.c and notify.c. Not for other modules. */
#pragma once

#include "units/units.h"
#include "lib/state.h"

#include <stdio.h>
#include <sys/epoll.h>

struct unit;
struct job;

/* Pointers to other units, one list per dependency kind and its reverse. */
struct unit_refs {
	struct unit **v;
	size_t n;
};

/* The reverse kinds, kept so a stop reaches what needs the stopped unit. */
enum unit_rdep {
	UNIT_RDEP_REQUIRED_BY, /* Requires= and BindsTo= of others */
	UNIT_RDEP_PART_OF_ME,  /* PartOf= of others (ConsistsOf) */
	UNIT_RDEP_COUNT,
};

/* What a unit type does; a type without ops (device, mount, slice, ...) is
 * active as soon as started: kin mounts and slices itself. */
struct unit_ops {
	/* 1: pending (the type calls unit_job_done later), 0 done, < 0 failed. */
	int (*start)(struct unit *u, struct err *err);
	int (*stop)(struct unit *u, struct err *err);
	int (*reload)(struct unit *u, struct err *err);
	/* Fills the type's part of a status. */
	void (*status)(struct unit *u, struct unit_status *st);
	/* The unit goes (daemon-reload removed it, or the manager goes). */
	void (*free)(struct unit *u);
	/* daemon-reload gave the unit a new definition (u->def) in place of
	 * old, which is freed after: what points into old must move. */
	void (*rebind)(struct unit *u, const struct unit_def *old);
	/* re-exec (state.c): whether the unit's state can be carried now
	 * (else why); the type's state into the unit's record; one field of
	 * it back (1 taken, 0 not the type's, < 0 bad); once every unit is
	 * back, the type's sources again (processes watched, fds listened
	 * on, timers armed): < 0 when the state cannot go on (why). */
	bool (*settled)(const struct unit *u, char *why, size_t size);
	void (*save)(struct unit *u, struct state_w *w);
	int (*restore)(struct unit *u, struct state_in *in, const struct state_field *f);
	int (*resume)(struct unit *u, char *why, size_t size);
};

struct unit {
	struct units *m;
	char name[UNIT_NAME_MAX + 1];
	enum unit_type type;
	struct unit_def *def; /* NULL: not found, or a load error */
	char load_state[16];
	char load_error[256];
	struct unit_refs deps[UNIT_DEP_COUNT];
	struct unit_refs rdeps[UNIT_RDEP_COUNT];
	bool deps_resolved;
	enum unit_active active;
	char sub[24];
	char result[24];
	char condition[256];
	uint64_t active_enter_us, inactive_enter_us;
	uint64_t inactive_exit_us; /* when it last began to start (a oneshot is never active) */
	struct job *job;
	const struct unit_ops *ops;
	void *type_data; /* the type's runtime state (struct svc, struct sock, ...) */
	/* start rate limit: start times (CLOCK_MONOTONIC, us) in a ring */
	uint64_t starts[32];
	unsigned nstarts;
	struct unit *triggered_by; /* the socket or timer that started it last */
	bool carried;              /* taken back from a re-exec's state (state.c) */
};

enum job_type { JOB_START, JOB_STOP, JOB_RESTART, JOB_RELOAD };
enum job_state { JOB_WAITING, JOB_RUNNING };

#define JOB_WAITERS_MAX 16
struct job_waiter {
	units_job_done_fn done;
	void *data;
};
struct job {
	struct unit *u;
	enum job_type type;
	enum job_state state;
	bool restart_stopped; /* JOB_RESTART: the stop half is done */
	struct job_waiter waiters[JOB_WAITERS_MAX];
	size_t nwaiters;
	struct job *next; /* the manager's queue */
};

struct units {
	struct ev_loop *loop;
	struct child_table *children;
	struct cells *cells;
	bool adopting; /* units_adopt: a killed kin's state, read from its file */
	int *kept;     /* units_adopt's: the keeper's fds, a taken one -1 */
	size_t nkept;
	struct cells_keeper keeper;    /* units_set_keeper's; keep NULL: none */
	void (*on_change)(void *data); /* units_on_change's */
	void *on_change_data;
	struct units_config cfg;
	char root[256];
	char slice[CELLS_NAME_MAX + 1];
	char log_dir[512];
	char run_dir[256];
	struct unit_paths paths;
	struct unit **units; /* loaded, in load order */
	size_t nunits, cap;
	struct job *jobs; /* queue, oldest first */
	size_t njobs;
	bool dispatching, dispatch_again;
	struct ev_source dispatch_src; /* an eventfd: dispatch on the next turn */
	bool dispatch_armed;
	bool shutting_down;
	void (*shutdown_done)(void *data);
	void *shutdown_data;
	struct units_notify *notify;
	struct unit_spec_ctx spec; /* hostname, machine id, ... for specifiers */
	char hostname[65], machine_id[33], boot_id[37], kernel_release[65];
	char **env; /* the services' base environment */
	size_t nenv;
	unsigned ignored_reported;
	uint64_t started_us; /* CLOCK_REALTIME when the manager was made */
};

/* ---- manager.c ---- */
/* The unit of name, loaded (with its dependencies' names resolved) on
 * first use; NULL only on -ENOMEM or a bad name (err). A unit that is not
 * found is returned with load_state "not-found". */
struct unit *units_get(struct units *m, const char *name, struct err *err);
struct unit *units_find(struct units *m, const char *name); /* loaded only */
void unit_set_active(struct unit *u, enum unit_active a, const char *sub);
void unit_set_result(struct unit *u, const char *result);
uint64_t units_now_realtime_us(void);
/* The unit a socket or timer starts ("" when its name would not fit). */
void unit_triggered_name(const struct unit *u, char *buf, size_t size);
/* The directory of a unit's cell in cgroupfs ("" when none). */
int unit_cell_path(const struct unit *u, char *buf, size_t size);
/* Whether pid runs in cell (a cells path) or below it (/proc/PID/cgroup). */
bool unit_cell_holds(const char *cell, pid_t pid);
/* The target a boot starts, loaded with what it pulls in (a console's
 * getty too) and every loaded unit's dependencies resolved. */
struct unit *units_boot_target(struct units *m, struct err *err);

/* ---- job.c ---- */
/* Queues a job with what it pulls in (the transaction). */
int units_job_add(struct units *m, struct unit *u, enum job_type type, struct job **ret,
                  struct err *err);
int job_wait_add(struct job *j, units_job_done_fn done, void *data);
/* The unit type's start/stop/reload ended: result 0 or -errno. */
void unit_job_done(struct unit *u, int result, const struct err *err);
/* Runs whatever jobs may run now (from the loop: never inside a caller's
 * call into the manager, so a job's done never runs before it returns). */
void units_dispatch_later(struct units *m);
int units_dispatch_init(struct units *m);
void units_dispatch_free(struct units *m);
const char *job_type_name(enum job_type t);
/* The unit left on its own (a service's main process ended): jobs of
 * units bound to it (BindsTo=) are queued. */
void unit_went_inactive(struct unit *u);

/* ---- service.c ---- */
extern const struct unit_ops units_service_ops;
/* A notify message for the service whose cell sent it (notify.c). */
void service_notify(struct unit *u, pid_t pid, const char *msg, size_t len);
/* A socket unit's fds handed to its service's next start (socket.c). */
void service_set_socket_fds(struct unit *u, struct unit *socket);
/* Whether the service tracks a child of kin itself (a forking daemon). */
bool service_tracks_child(const struct unit *u);
bool service_is_running(const struct unit *u);

/* ---- socket.c ---- */
extern const struct unit_ops units_socket_ops;
/* The service of the socket went inactive: listen again. */
void socket_service_ended(struct unit *sock);
/* The fds and names of a socket unit for LISTEN_FDS. */
int socket_fds(struct unit *sock, const int **ret_fds, size_t *ret_n, const char **ret_names);
bool socket_has_fds(const struct unit *sock);
void socket_unkeep(struct unit *sock); /* the keeper lets go of its fds */
/* Every socket unit's listening fds to the keeper (one started anew). */
void sockets_keep(struct units *m);
/* The keeper's socket of this inode in kept, taken (set to -1 there);
 * -1: none. */
int units_kept_take(int *kept, size_t nkept, uint64_t ino);

/* ---- timer.c ---- */
extern const struct unit_ops units_timer_ops;
/* target started or stopped: the timers that start it count again. */
void timer_target_changed(struct unit *target);

/* ---- target.c (targets, and the types kin keeps no state for) ---- */
extern const struct unit_ops units_target_ops;

/* ---- notify.c ---- */
struct units_notify;
/* keep_fd ≥ 0: the socket a re-exec handed over, used when it is a
 * datagram socket bound at path (else closed, and a new one bound). */
int units_notify_new(struct units *m, const char *path, int keep_fd, struct units_notify **ret,
                     struct err *err);
void units_notify_free(struct units_notify *n);
int units_notify_fd(const struct units_notify *n); /* -1 none */
const char *units_notify_path(const struct units_notify *n);

/* ---- log.c: each service's output in a rotated file under log_dir ---- */
void units_log_attach(struct units *m, const char *unit, const char *cell, const char *exec);
/* The same after a re-exec: only output from now on (the rest is in the
 * file already). */
void units_log_reattach(struct units *m, const char *unit, const char *cell, const char *exec);

/* ---- state.c: tags of a unit's record the types share (service.c ≥ 32,
 * socket.c ≥ 64, timer.c ≥ 96) ---- */
enum { UNIT_STATE_TYPE_SERVICE = 32, UNIT_STATE_TYPE_SOCKET = 64, UNIT_STATE_TYPE_TIMER = 96 };
