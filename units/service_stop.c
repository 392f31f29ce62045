/* service_stop: a service's stop — ExecStop=, the signals KillMode= says,
 * the wait for its cell to empty, ExecStopPost=, Restart= — and the ends
 * of its timers (deadline, poll, watchdog). */
#include "units/service-int.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* ---- stopping ----------------------------------------------------------------- */

static bool cell_empty(struct svc *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *text = NULL;
	if (cells_cgroup_dir(s->u->m->cells, s->cell, dir, sizeof(dir)) < 0)
		return true;
	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	if (file_read_small(path, 4096, &text, NULL) < 0)
		return true;
	bool populated = strstr(text, "populated 1") != NULL;
	free(text);
	return !populated;
}

static bool stop_done(struct svc *s)
{
	enum unit_kill_mode km = s->u->def->service.kill_mode;
	if (km == UNIT_KILL_CONTROL_GROUP || km == UNIT_KILL_MIXED)
		return cell_empty(s);
	return !s->main_pid && !s->control_running;
}

static void send_signal(struct svc *s, int sig, bool all)
{
	struct units *m = s->u->m;
	if (all) {
		cell_signal(m->cells, s->cell, sig, NULL);
		if (sig != SIGKILL)
			cell_signal(m->cells, s->cell, SIGCONT, NULL);
		return;
	}
	if (s->main_pid > 0) {
		kill(s->main_pid, sig);
		if (sig != SIGKILL)
			kill(s->main_pid, SIGCONT);
	}
	if (s->control_pid > 0)
		kill(s->control_pid, sig);
}

void service_enter_signal(struct svc *s, bool kill_now)
{
	const struct unit_service *c = &s->u->def->service;
	enum unit_kill_mode km = c->kill_mode;
	if (kill_now && !c->send_sigkill) {
		service_enter_stop_post(s);
		return;
	}
	service_set_state(s, kill_now ? SVC_STOP_SIGKILL : SVC_STOP_SIGTERM);
	int sig = kill_now ? c->final_kill_signal : c->kill_signal;
	if (km != UNIT_KILL_NONE) {
		bool all = km == UNIT_KILL_CONTROL_GROUP || (km == UNIT_KILL_MIXED && kill_now);
		send_signal(s, sig, all);
		if (!kill_now && c->send_sighup)
			send_signal(s, SIGHUP, all);
	}
	if (stop_done(s)) {
		service_enter_stop_post(s);
		return;
	}
	service_deadline_set(s, kill_now ? SVC_KILL_WAIT_MS * 1000ull : c->timeout_stop_us);
	service_timer_arm(s, &s->t_poll, SVC_POLL_MS);
}

/* result: why the service ends ("success" when asked to stop). */
void service_enter_stop(struct svc *s, const char *result)
{
	struct unit *u = s->u;
	if (!u->result[0] || strcmp(u->result, "success") == 0)
		unit_set_result(u, result);
	service_deadline_set(s, u->def->service.timeout_stop_us);
	if (s->started_ok && u->def->service.exec_stop.n) {
		service_set_state(s, SVC_STOP);
		service_run_list(s, &u->def->service.exec_stop);
		return;
	}
	service_enter_signal(s, false);
}

static bool should_restart(struct svc *s)
{
	const struct unit_service *c = &s->u->def->service;
	const char *r = s->u->result;
	if (s->stop_requested || s->u->m->shutting_down)
		return false;
	if (s->exited && unit_exit_set_has(&c->restart_prevent, s->exit_code, s->exit_signal))
		return false;
	if (s->exited && unit_exit_set_has(&c->restart_force, s->exit_code, s->exit_signal))
		return true;
	bool success = strcmp(r, "success") == 0;
	bool sig = strcmp(r, "signal") == 0 || strcmp(r, "core-dump") == 0;
	bool timeout = strcmp(r, "timeout") == 0;
	switch (c->restart) {
	case UNIT_RESTART_ALWAYS:
		return true;
	case UNIT_RESTART_ON_SUCCESS:
		return success;
	case UNIT_RESTART_ON_FAILURE:
		return !success;
	case UNIT_RESTART_ON_ABNORMAL:
		return sig || timeout || strcmp(r, "watchdog") == 0;
	case UNIT_RESTART_ON_ABORT:
		return sig;
	case UNIT_RESTART_ON_WATCHDOG:
		return strcmp(r, "watchdog") == 0;
	default:
		return false;
	}
}

/* The end of a stop: ExecStopPost= ran (or is to run), then the unit is
 * dead or failed, and Restart= decides. */
void service_finish(struct svc *s)
{
	struct unit *u = s->u;
	struct units *m = u->m;
	struct unit_run_ctx ctx;
	service_deadline_set(s, 0);
	service_timer_disarm(&s->t_poll);
	if (u->def->service.kill_mode == UNIT_KILL_CONTROL_GROUP && !cell_empty(s))
		cell_kill(m->cells, s->cell, NULL); /* what ExecStopPost= left */
	service_fill_ctx(s, &ctx, true);
	unit_exec_dirs_remove(u->def, &ctx);
	unit_private_tmp_remove(m->root, s->private_tmp);
	s->private_tmp[0] = '\0';
	bool failed = strcmp(u->result, "success") != 0;
	bool was_start = u->job && (u->job->type == JOB_START || u->job->type == JOB_RESTART) &&
	                 !(u->job->type == JOB_RESTART && !u->job->restart_stopped);
	service_set_state(s, failed ? SVC_FAILED : SVC_DEAD);
	/* the empty cell goes on the next turn: this may run inside a cells
	 * callback, which must not see its records freed under it */
	service_timer_arm(s, &s->t_poll, 0);
	s->started_ok = false;
	if (failed)
		log_warn("units: %s failed (%s)", u->name, u->result);
	if (was_start) {
		struct err err = {0};
		err_set(&err, -EIO, ERR_FAILED_PRECONDITION, "unit \"%s\" failed to start: %s",
		        u->name, u->result);
		unit_job_done(u, failed ? -EIO : 0, failed ? &err : NULL);
	} else {
		unit_job_done(u, 0, NULL);
	}
	if (should_restart(s)) {
		service_set_state(s, SVC_AUTO_RESTART);
		uint64_t ms = u->def->service.restart_us / 1000;
		service_timer_arm(s, &s->t_deadline, ms ? ms : 1);
		return;
	}
	s->stop_requested = false;
	if (s->socket)
		socket_service_ended(s->socket);
	unit_went_inactive(u);
}

void service_enter_stop_post(struct svc *s)
{
	if (s->state == SVC_STOP_POST) {
		service_finish(s);
		return;
	}
	service_timer_disarm(&s->t_poll);
	service_set_state(s, SVC_STOP_POST);
	service_deadline_set(s, s->u->def->service.timeout_stop_us);
	service_run_list(s, &s->u->def->service.exec_stop_post);
}

void service_on_poll(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	service_timer_fired(src);
	if (s->state == SVC_START && s->waiting_pid_file) {
		service_forking_main(s);
		return;
	}
	/* A failed service keeps its (empty) cell: its last output stays in
	 * the cell's rings for status and logs until the next start. */
	if (s->state == SVC_DEAD && cell_empty(s)) {
		cell_delete(s->u->m->cells, s->cell, false, NULL, NULL, NULL);
		return;
	}
	if (s->state != SVC_STOP_SIGTERM && s->state != SVC_STOP_SIGKILL)
		return;
	if (stop_done(s))
		service_enter_stop_post(s);
	else
		service_timer_arm(s, &s->t_poll, SVC_POLL_MS);
}

/* No WATCHDOG=1 in time: systemd's answer — SIGABRT to the main process
 * (a core shows where it hung), result "watchdog", then the stop as for a
 * failure (Restart=on-watchdog and on-failure restart it). */
void service_watchdog_fire(struct svc *s)
{
	uint64_t us = s->watchdog_us ? s->watchdog_us : s->u->def->service.watchdog_us;
	log_warn("units: %s: watchdog timeout (no WATCHDOG=1 in %llu ms); aborting it", s->u->name,
	         (unsigned long long)(us / 1000));
	unit_set_result(s->u, "watchdog");
	if (s->main_pid > 0)
		kill(s->main_pid, SIGABRT);
	service_enter_signal(s, false);
}

void service_on_watchdog(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	if (service_timer_fired(src) && (s->state == SVC_RUNNING || s->state == SVC_RELOAD))
		service_watchdog_fire(s);
}

void service_on_deadline(struct ev_source *src, uint32_t events)
{
	struct svc *s = src->data;
	(void)events;
	if (!service_timer_fired(src))
		return;
	switch (s->state) {
	case SVC_START_PRE:
	case SVC_START:
	case SVC_START_POST:
		log_warn("units: %s: start timed out", s->u->name);
		unit_set_result(s->u, "timeout");
		service_enter_signal(s, false);
		break;
	case SVC_STOP:
	case SVC_STOP_SIGTERM:
		log_warn("units: %s: stop timed out; killing", s->u->name);
		if (strcmp(s->u->result, "success") == 0)
			unit_set_result(s->u, "timeout");
		service_enter_signal(s, true);
		break;
	case SVC_STOP_SIGKILL:
		log_warn("units: %s: processes left after SIGKILL", s->u->name);
		service_enter_stop_post(s);
		break;
	case SVC_STOP_POST:
		s->cmds = NULL;
		service_finish(s);
		break;
	case SVC_AUTO_RESTART: {
		struct err err = {0};
		s->restarts++;
		log_info("units: %s: restarting (%u)", s->u->name, s->restarts);
		if (service_start(s->u, &err) < 0)
			log_warn("units: %s", err.msg);
		break;
	}
	default:
		break;
	}
}
