/* task_state: a shim kin's Task service across a re-exec. The pod's zone
 * goes along with the Zones service (its kin, route and cell) and is
 * owned again here; containerd's connection goes along with the rpc
 * server (a local client's), its Wait calls in flight as requests the
 * next kin is sent again (RPC_METHOD_REPLAY). What is written here: the
 * zone's facts, every task with its processes (state, pids, exit status,
 * containerd's stdio paths, the FIFO ends held open, an exec's process
 * JSON not started yet) and the events not yet taken by containerd. The
 * next kin waits in the zone again for every process still running (the
 * zone kin keeps their records: one that ended meanwhile answers at once)
 * and watches the containers' memory.events again. A kin-vm pod's stdio
 * relays go along too (task_vm.c): each follows its output in the guest
 * again from what reached containerd's FIFO. */
#include "shim/task-int.h"
#include "lib/state.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

enum {
	TS_ZONE = 1,
	TS_ZONE_PID,
	TS_ZONE_CGROUP,
	TS_EVENTS_DROPPED,
	TS_TASK,
	TS_EVENT,
	TS_OOM_INOTIFY, /* its watches go along (closing one waits ~15 ms) */
};
enum {
	TT_ID = 1,
	TT_BUNDLE,
	TT_SANDBOX,
	TT_CELL,
	TT_DIR,
	TT_ROOTFS_MOUNTED,
	TT_OOM_KILLS,
	TT_PROC, /* the init first, then each exec */
};
enum {
	TP_EXEC_ID = 1,
	TP_KNAME,
	TP_STATE,
	TP_PID,
	TP_STATUS,
	TP_EXITED_S,
	TP_EXITED_NS,
	TP_STDIN,
	TP_STDOUT,
	TP_STDERR,
	TP_TERMINAL,
	TP_HOLD_OUT,
	TP_HOLD_ERR,
	TP_SPEC,
	TP_RELAY,   /* kin-vm: its stdio relay */
	TP_WAIT_ID, /* its Wait in the zone: the next kin cancels it */
};
enum { TE_AT_S = 1, TE_AT_NS, TE_TOPIC, TE_TYPE, TE_DATA };

static const struct state_num svc_nums[] = {
    STATE_NUM(TS_ZONE, struct shim_task, zone),
    STATE_NUM(TS_ZONE_PID, struct shim_task, zone_pid),
    STATE_NUM(TS_EVENTS_DROPPED, struct shim_task, events_dropped),
};
static const struct state_num task_nums[] = {
    STATE_FLAG(TT_SANDBOX, struct task, sandbox),
    STATE_FLAG(TT_ROOTFS_MOUNTED, struct task, rootfs_mounted),
    STATE_NUM(TT_OOM_KILLS, struct task, oom_kills),
};
static const struct state_num proc_nums[] = {
    STATE_NUM(TP_STATE, struct tproc, state),
    STATE_NUM(TP_PID, struct tproc, pid),
    STATE_NUM(TP_STATUS, struct tproc, exit_status),
    STATE_NUM(TP_EXITED_S, struct tproc, exited_at.tv_sec),
    STATE_NUM(TP_EXITED_NS, struct tproc, exited_at.tv_nsec),
    STATE_FLAG(TP_TERMINAL, struct tproc, terminal),
    STATE_NUM(TP_WAIT_ID, struct tproc, wait_id),
};

const char *shim_task_uncarried(const struct shim_task *svc)
{
	if (!svc)
		return NULL;
	if (svc->shutting_down)
		return "a shim shutting down";
	if (svc->sandbox && sandbox_holds(svc)) /* its state is not written yet */
		return "a sandbox of containerd's Sandbox API";
	return NULL;
}

bool shim_task_settled(const struct shim_task *svc, char *why, size_t size)
{
	const struct task *t;
	if (!svc)
		return true;
	if (svc->zone == ZN_STARTING) {
		snprintf(why, size, "the pod's zone is starting");
		return false;
	}
	if (svc->forwarding) {
		snprintf(why, size, "an event is on its way to containerd");
		return false;
	}
	/* containerd's calls but Wait (which goes along) are answered first. */
	if (rpc_server_inflight(svc->rpc, TASK_SERVICE)) {
		snprintf(why, size, "containerd's calls to the Task service are in flight");
		return false;
	}
	list_for_each(t, &svc->tasks, node) {
		const struct tproc *p = &t->init;
		bool busy = t->create_call || t->create || p->starting || p->start_call;
		bool stdin = task_vm_relay_busy(p);
		list_for_each(p, &t->execs, node) {
			busy = busy || p->starting || p->start_call;
			stdin = stdin || task_vm_relay_busy(p);
		}
		if (busy || stdin) {
			snprintf(why, size, "task %s is %s", t->id,
			         busy ? "being created or started"
			              : "sending stdin into the pod's VM");
			return false;
		}
	}
	return true;
}

/* ---- writing ---- */

static void proc_save(const struct tproc *p, struct state_w *w)
{
	size_t at = state_open(w, TT_PROC);
	state_put_str(w, TP_EXEC_ID, p->exec_id);
	state_put_str(w, TP_KNAME, p->kname);
	state_put_nums(w, p, proc_nums, ARRAY_SIZE(proc_nums));
	state_put_str(w, TP_STDIN, p->stdio[0]);
	state_put_str(w, TP_STDOUT, p->stdio[1]);
	state_put_str(w, TP_STDERR, p->stdio[2]);
	if (p->hold[1] >= 0)
		state_put_fd(w, TP_HOLD_OUT, p->hold[1]);
	if (p->hold[2] >= 0)
		state_put_fd(w, TP_HOLD_ERR, p->hold[2]);
	if (p->spec_json)
		state_put_str(w, TP_SPEC, p->spec_json);
	task_vm_relay_save(p, w, TP_RELAY);
	state_close(w, at);
}

void shim_task_save(struct shim_task *svc, struct state_w *w, uint16_t tag)
{
	const struct task *t;
	const struct task_event *e;
	if (!svc)
		return;
	size_t at = state_open(w, tag);
	state_put_nums(w, svc, svc_nums, ARRAY_SIZE(svc_nums));
	state_put_str(w, TS_ZONE_CGROUP, svc->zone_cgroup);
	state_put_fd(w, TS_OOM_INOTIFY, svc->oom.fd);
	list_for_each(t, &svc->tasks, node) {
		size_t tat = state_open(w, TS_TASK);
		state_put_str(w, TT_ID, t->id);
		state_put_str(w, TT_BUNDLE, t->bundle);
		state_put_nums(w, t, task_nums, ARRAY_SIZE(task_nums));
		state_put_str(w, TT_CELL, t->cell);
		state_put_str(w, TT_DIR, t->dir);
		proc_save(&t->init, w);
		const struct tproc *p;
		list_for_each(p, &t->execs, node)
			proc_save(p, w);
		state_close(w, tat);
	}
	list_for_each(e, &svc->events, node) {
		size_t eat = state_open(w, TS_EVENT);
		state_put_i64(w, TE_AT_S, e->at.tv_sec);
		state_put_u64(w, TE_AT_NS, (uint64_t)e->at.tv_nsec);
		state_put_str(w, TE_TOPIC, e->topic);
		state_put_str(w, TE_TYPE, e->type_url);
		state_put_bytes(w, TE_DATA, e->data, e->len);
		state_close(w, eat);
	}
	state_close(w, at);
}

/* ---- reading ---- */

static int proc_take(struct tproc *p, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if ((k = state_get_num(&g, p, proc_nums, ARRAY_SIZE(proc_nums))) != 0) {
			if (k < 0)
				return k;
			continue;
		}
		switch (g.tag) {
		case TP_EXEC_ID:
			k = state_get_str(&g, p->exec_id, sizeof(p->exec_id));
			break;
		case TP_KNAME:
			k = state_get_str(&g, p->kname, sizeof(p->kname));
			break;
		case TP_STDIN:
		case TP_STDOUT:
		case TP_STDERR:
			k = state_get_str(&g, p->stdio[g.tag - TP_STDIN], sizeof(p->stdio[0]));
			break;
		case TP_HOLD_OUT:
		case TP_HOLD_ERR:
			k = state_get_fd(in, &g, &p->hold[g.tag - TP_HOLD_OUT + 1]);
			break;
		case TP_SPEC:
			free(p->spec_json);
			p->spec_json = NULL;
			k = state_get_strdup(&g, &p->spec_json);
			break;
		case TP_RELAY:
			k = task_vm_relay_take(p, in, &g);
			break;
		}
		if (k < 0)
			return k;
	}
	if (k == 0 && ((unsigned)p->state > T_STOPPED || p->exited_at.tv_nsec < 0 ||
	               p->exited_at.tv_nsec >= 1000000000L))
		return -EBADMSG;
	return k;
}

static int task_take(struct shim_task *svc, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int k, nprocs = 0;
	struct task *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->svc = svc;
	t->oom_wd = -1;
	proc_init(&t->init, t, NULL);
	list_init(&t->execs);
	list_append(&svc->tasks, &t->node);
	svc->ntasks++;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if ((k = state_get_num(&g, t, task_nums, ARRAY_SIZE(task_nums))) != 0) {
			if (k < 0)
				break;
			continue;
		}
		switch (g.tag) {
		case TT_ID:
			k = state_get_str(&g, t->id, sizeof(t->id));
			break;
		case TT_BUNDLE:
			k = state_get_str(&g, t->bundle, sizeof(t->bundle));
			break;
		case TT_CELL:
			k = state_get_str(&g, t->cell, sizeof(t->cell));
			break;
		case TT_DIR:
			k = state_get_str(&g, t->dir, sizeof(t->dir));
			break;
		case TT_PROC:
			if (nprocs++ == 0) {
				k = proc_take(&t->init, in, &g);
				break;
			}
			if (t->nexecs >= TASK_EXECS_MAX) {
				k = -E2BIG;
				break;
			}
			struct tproc *p = calloc(1, sizeof(*p));
			if (!p) {
				k = -ENOMEM;
				break;
			}
			proc_init(p, t, NULL);
			list_append(&t->execs, &p->node);
			t->nexecs++;
			k = proc_take(p, in, &g);
			break;
		}
		if (k < 0)
			break;
	}
	if (k < 0 || !t->id[0] || !nprocs) {
		log_error("re-exec: task %s left out: its record does not read",
		          t->id[0] ? t->id : "(no id)");
		task_free(t);
		return k < 0 ? k : -EBADMSG;
	}
	return 0;
}

static int event_take(struct shim_task *svc, const struct state_field *f)
{
	struct state_r r;
	struct state_field g, data = {0};
	char topic[32] = "", type[48] = "";
	int64_t sec = 0;
	uint64_t nsec = 0;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if (g.tag == TE_AT_S)
			k = state_get_i64(&g, &sec);
		else if (g.tag == TE_AT_NS)
			k = state_get_u64(&g, &nsec);
		else if (g.tag == TE_TOPIC)
			k = state_get_str(&g, topic, sizeof(topic));
		else if (g.tag == TE_TYPE)
			k = state_get_str(&g, type, sizeof(type));
		else if (g.tag == TE_DATA)
			data = g;
		if (k < 0)
			return k;
	}
	if (!topic[0] || !type[0] || svc->nevents >= TASK_EVENTS_MAX)
		return -EBADMSG;
	struct task_event *e = malloc(sizeof(*e) + data.len);
	if (!e)
		return -ENOMEM;
	e->at = (struct timespec){.tv_sec = (time_t)sec, .tv_nsec = (long)(nsec % 1000000000u)};
	str_copy(e->topic, sizeof(e->topic), topic);
	str_copy(e->type_url, sizeof(e->type_url), type);
	e->len = data.len;
	if (data.len)
		memcpy(e->data, data.data, data.len);
	list_append(&svc->events, &e->node);
	svc->nevents++;
	return 0;
}

int shim_task_restore(struct shim_task *svc, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int k, n = 0;
	if (!svc)
		return -ENODEV;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if ((k = state_get_num(&g, svc, svc_nums, ARRAY_SIZE(svc_nums))) != 0) {
			if (k < 0)
				return k;
			continue;
		}
		switch (g.tag) {
		case TS_ZONE_CGROUP:
			k = state_get_str(&g, svc->zone_cgroup, sizeof(svc->zone_cgroup));
			break;
		case TS_TASK:
			if (task_take(svc, in, &g) == 0)
				n++;
			k = 0;
			break;
		case TS_EVENT:
			if (event_take(svc, &g) < 0)
				svc->events_dropped++;
			k = 0;
			break;
		case TS_OOM_INOTIFY: {
			int fd;
			if (state_get_fd(in, &g, &fd) == 0)
				task_oom_take(svc, fd);
			break;
		}
		}
		if (k < 0)
			return k;
	}
	if ((unsigned)svc->zone > ZN_GONE)
		return -EBADMSG;
	/* The pod's zone is ours again; if it ended meanwhile, as if seen now. */
	if (svc->zone == ZN_READY) {
		if (svc->pods.own(svc->pods.impl, SHIM_ZONE_NAME, task_zone_gone, svc) < 0) {
			log_warn("re-exec: the pod's zone did not go along: its tasks end");
			task_zone_gone(128 + SIGKILL, svc);
		}
	}
	struct task *t;
	list_for_each(t, &svc->tasks, node) {
		struct tproc *p;
		task_vm_relay_resume(&t->init);
		list_for_each(p, &t->execs, node)
			task_vm_relay_resume(p);
		if (t->sandbox)
			continue;
		if (t->init.state == T_RUNNING || t->init.state == T_PAUSED) {
			task_oom_watch(t);
			task_proc_rewait(&t->init);
		}
		list_for_each(p, &t->execs, node)
			if (p->state == T_RUNNING || p->state == T_PAUSED)
				task_proc_rewait(p);
	}
	task_events_kick(svc);
	return n;
}

/* The shim's tasks as a participant of the handover: last (the pod's
 * zone is there to own again). A re-exec's only: a SIGKILLed shim's pod
 * is containerd's to clean up. */
static int task_keep_start(void *data, const struct keep_from *from)
{
	if (from->how != KEEP_REEXEC || !from->record)
		return 0;
	int n = shim_task_restore(data, from->in, from->record);
	if (n >= 0)
		log_info("re-exec: the shim's tasks taken over: %d", n);
	return n < 0 ? n : 0;
}

static int task_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	if (!w->file)
		shim_task_save(data, w, tag);
	return 0;
}

static const char *task_keep_uncarried(void *data)
{
	return shim_task_uncarried(data);
}

static bool task_keep_settled(void *data, char *why, size_t size)
{
	return shim_task_settled(data, why, size);
}

static void task_keep_stop(void *data)
{
	shim_task_shutdown(data);
}

static void task_keep_free(void *data)
{
	shim_task_free(data);
}

/* kin's stop: the Task service's calls end first of all, its memory goes
 * after the server's (its handlers point into it). */
const struct keep_part shim_task_part = {.name = "the shim's tasks",
                                         .tag = KEEP_TAG_TASK,
                                         .level = KEEP_LEVEL_TASK,
                                         .start = task_keep_start,
                                         .save = task_keep_save,
                                         .uncarried = task_keep_uncarried,
                                         .settled = task_keep_settled,
                                         .stop = task_keep_stop,
                                         .free = task_keep_free,
                                         .served = true};
