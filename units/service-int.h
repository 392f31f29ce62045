/* service-int: what the files of a .service unit's state machine share
 * (units/service.c: commands, phases, the main process; service_stop.c:
 * stopping, the timers' ends; service_ops.c: the unit ops, re-exec,
 * sd_notify) — the service's state and the steps one file takes into
 * another's. Never included outside units/. */
#pragma once

#include "units/units-int.h"

enum svc_state {
	SVC_DEAD,
	SVC_START_PRE,
	SVC_START,
	SVC_START_POST,
	SVC_RUNNING,
	SVC_EXITED,
	SVC_RELOAD,
	SVC_STOP,
	SVC_STOP_SIGTERM,
	SVC_STOP_SIGKILL,
	SVC_STOP_POST,
	SVC_FAILED,
	SVC_AUTO_RESTART,
};

extern const char *const service_state_names[];

#define SVC_POLL_MS      50   /* how often a stop looks whether the cell is empty */
#define SVC_KILL_WAIT_MS 5000 /* after SIGKILL, at most */

struct svc {
	struct unit *u;
	enum svc_state state;
	char cell[CELLS_PATH_MAX];
	uint64_t gen; /* bumps at each command run: stale callbacks are ignored */
	pid_t main_pid;
	bool main_exec;            /* main is cells' "main" executable */
	struct child *main_child;  /* an adopted main that is kin's child */
	struct ev_source main_src; /* an adopted main that is not: its pidfd */
	const struct unit_cmds *cmds;
	size_t cmd_idx;
	bool control_running;
	pid_t control_pid;
	struct ev_source t_deadline, t_poll, t_watchdog;
	uint64_t deadline_gen;
	uint64_t watchdog_us; /* WATCHDOG_USEC= from the service, 0: WatchdogSec= */
	bool ready, started_ok, stop_requested;
	bool waiting_pid_file; /* Type=forking: the parent is gone, PIDFile= not yet there */
	char status_text[256];
	int exit_code, exit_signal;
	bool exited;
	uint32_t restarts;
	char invocation_id[33];
	char private_tmp[UNIT_NAME_MAX + 32]; /* this run's PrivateTmp= directories */
	struct unit *socket;
	struct exec_follower *follower;
	/* taken back from a re-exec's state, until resume */
	uint64_t carried_restart_ms;
	char carried_socket[UNIT_NAME_MAX + 1];
};

/* A command's run, as its callbacks know it: a stale one (an older
 * generation) is ignored. */
struct run_ref {
	struct svc *s;
	uint64_t gen;
	bool main;
	unsigned flags;
};

bool service_timer_fired(struct ev_source *t);
int service_adopt_main(struct svc *s, pid_t pid);
int service_start(struct unit *u, struct err *err);
int service_timer_arm(struct svc *s, struct ev_source *t, uint64_t ms);
void service_deadline_set(struct svc *s, uint64_t us);
void service_enter_signal(struct svc *s, bool kill_now);
void service_enter_start_post(struct svc *s);
void service_enter_stop(struct svc *s, const char *result);
void service_enter_stop_post(struct svc *s);
void service_fill_ctx(struct svc *s, struct unit_run_ctx *ctx, bool control);
void service_finish(struct svc *s);
void service_forking_main(struct svc *s);
void service_on_cmd_exit(struct svc *s, bool main, unsigned flags, int code, int sig);
void service_on_deadline(struct ev_source *src, uint32_t events);
void service_on_exec_done(int result, const struct exec_status *st, void *data);
void service_on_poll(struct ev_source *src, uint32_t events);
void service_on_watchdog(struct ev_source *src, uint32_t events);
void service_run_list(struct svc *s, const struct unit_cmds *list);
void service_set_state(struct svc *s, enum svc_state st);
void service_timer_disarm(struct ev_source *t);
void service_watchdog_arm(struct svc *s);
void service_watchdog_fire(struct svc *s);
