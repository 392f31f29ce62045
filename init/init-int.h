/* init-int: what init/loop.c shares with init/reexec.c — the main loop's
 * state, which a re-exec writes out and the next kin reads back. */
#pragma once

#include "init/init.h"
#include "cells/cells.h"
#include "rpc/rpc.h"

/* VMS: running VMs power off over their links first (a SIGTERM would end
 * their VMMs, and the guests with them, at once), within the grace period;
 * then TERM and KILL as ever. */
enum init_phase { PHASE_RUNNING, PHASE_UNITS, PHASE_VMS, PHASE_TERM, PHASE_KILL, PHASE_DONE };

/* What init's RPC participant keeps between its save and a failed
 * execve's resume, and its start's verdict. */
struct init_carry {
	struct rpc_listen_fd listeners[RPC_LISTENERS_MAX];
	size_t nlisteners;
	bool rpc_failed; /* a daemon told --socket explicitly could not listen */
	bool tls_failed; /* the policy or the TLS gateway could not start */
};

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
	struct keep *keep; /* the handover's participants, and a daemon's state file */
	struct cells_keeper zones_keeper; /* the state file's keeper, for zones' pipes */
	struct init_carry carry;
};

/* ---- what init hands over (carry.c) ---- */

/* main() keeps its argv for the exec of the next kin. */
void init_carry_set_argv(char **argv);
/* Registers init's participants of the handover in s->keep (its own
 * record, the RPC server, its connections) and makes re-exec possible. */
int init_carry_register(struct init_state *s);
/* loop.c's, for carry.c */
void init_loop_track_workload(struct init_state *s, pid_t pid);
