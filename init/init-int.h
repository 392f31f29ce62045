/* init-int: what init/loop.c shares with init/reexec.c — the main loop's
 * state, which a re-exec writes out and the next kin reads back. */
#pragma once

#include "init/init.h"

/* VMS: running VMs power off over their links first (a SIGTERM would end
 * their VMMs, and the guests with them, at once), within the grace period;
 * then TERM and KILL as ever. */
enum init_phase { PHASE_RUNNING, PHASE_UNITS, PHASE_VMS, PHASE_TERM, PHASE_KILL, PHASE_DONE };

struct init_state {
	struct init_config *cfg;
	enum init_role role;
	struct ev_loop *loop;
	struct child_table *children;
	struct ev_source sig_src;
	struct ev_source timer_src;
	struct child *workload;
	bool workload_running;
	int workload_status;
	enum init_phase phase;
	enum init_action stop_act;
	uint64_t started_ns;
	struct rpc_server *rpc;
	struct init_cells *cells;
	struct init_link *link;   /* machine: RPC on the VM link's port */
	struct api *api;          /* the kin.v1 services; NULL without rpc */
	struct shim_task *task;   /* a containerd shim's Task service; NULL none */
	struct init_auth *auth;   /* rpc's guard: policy and audit; NULL without rpc */
	struct init_tls *tls;     /* kin.rpc.tls=: the gateway; NULL without */
	bool booted;              /* machine: the late boot (network, modules) has ended */
	struct init_units *units; /* systemd units (a host's init, --unit-dir); NULL none */
	bool units_booted, units_boot_waits; /* a daemon's: once cells_sweeping is over */
	struct init_reexec *reexec;          /* System/Reexec in progress, and the count */
	struct init_persist *persist;        /* a daemon's state directory; NULL none */
};

/* ---- re-exec (reexec.c) ---- */

struct init_reexec;
/* main() keeps its argv for the exec of the next kin. */
void init_reexec_set_argv(char **argv);
/* Starts the re-exec machinery for s (the count, the RPC side); the
 * handed-over state, if kin was exec'd with one, is read by
 * init_reexec_restore. */
int init_reexec_new(struct init_state *s);
/* A stop begins: a re-exec under way ends UNAVAILABLE "kin is stopping"
 * (its probe killed) before the stop signals every child, so the probe's
 * death is never taken for a verdict on the binary. */
void init_reexec_stop(struct init_reexec *rx);
void init_reexec_free(struct init_reexec *rx);
/* A state handed over by the previous kin (KIN_STATE_FD)? */
bool init_reexec_pending(void);
/* Restores what the previous kin handed over into s (rpc, cells,
 * workload). When the state cannot be read, the previous binary (kept in
 * a sealed memfd) is exec'd again with it and this never returns; on
 * success it returns 0. */
int init_reexec_restore(struct init_state *s);
/* Then, once the services run: what they ran (zones) and a zone kin's
 * channel to its parent, whose frames read already are answered now;
 * the state is closed (every fd nobody took with it). */
void init_reexec_restore_services(struct init_state *s);
/* A record of the state being restored (*ret) for its module's start
 * (init_units_start, init_tls_start); NULL when there is none. */
enum init_record { INIT_RECORD_UNITS, INIT_RECORD_TLS };
struct state_field;
struct state_in *init_reexec_record(struct init_state *s, enum init_record which,
                                    struct state_field *ret);
/* System/Reexec and Health's count, for api's ops. */
int init_reexec_begin(const char *binary,
                      void (*done)(int result, const struct err *err, const char *binary,
                                   uint64_t reexecs, void *call_data),
                      void *call_data, struct err *err, void *data);
void init_reexec_cancel(void *call_data, void *data);
void init_reexec_count(uint64_t *ret_count, const char **ret_error, void *data);
/* loop.c's, for reexec.c */
void init_loop_track_workload(struct init_state *s, pid_t pid);
