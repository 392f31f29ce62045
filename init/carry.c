/* carry: what init itself hands over a re-exec, as participants of the
 * handover (keep/keep.h) — its own record (start time, the workload, the
 * machine's boot), the RPC server (its listening sockets, which stay open
 * across execve so a client connecting meanwhile waits in the backlog, the
 * routes to child kins, the carried connections) — and what only init
 * knows of whether kin can hand over now. The re-exec itself is keep/'s.
 * The same participants end with kin (keep_stop): the server with its
 * guard and the VM link, and a machine itself. */
#include "init/init-int.h"
#include "keep/keep.h"
#include "lib/state.h"
#include "rpc/rpc.h"
#include "units/units.h"

#include <stdio.h>
#include <string.h>

#define AGAIN "kin is re-executing; retry"

enum { I_STARTED = 1, I_WORKLOAD_PID, I_WORKLOAD_RUNNING, I_BOOTED };
enum { R_LISTENER = 1, R_ROUTE, R_CONN };

static char **saved_argv;

void init_carry_set_argv(char **argv)
{
	saved_argv = argv;
}

/* ---- init's own record ---- */

struct own {
	uint64_t started, workload_pid, workload_running, booted;
};

static int own_start(void *data, const struct keep_from *from)
{
	static const struct state_num nums[] = {
	    STATE_NUM(I_STARTED, struct own, started),
	    STATE_NUM(I_WORKLOAD_PID, struct own, workload_pid),
	    STATE_NUM(I_WORKLOAD_RUNNING, struct own, workload_running),
	    STATE_NUM(I_BOOTED, struct own, booted),
	};
	struct init_state *s = data;
	struct own o = {0};
	struct state_r r;
	struct state_field g;
	int k = 0;
	if (from->how != KEEP_REEXEC || !from->record)
		return 0;
	state_get_record(from->record, &r);
	while ((k = state_next(&r, &g)) > 0)
		if ((k = state_get_num(&g, &o, nums, ARRAY_SIZE(nums))) < 0)
			break;
	if (k < 0)
		return k;
	s->started_ns = o.started;
	s->booted = o.booted;
	/* The workload is still kin's child, unreaped: tracked again. */
	if (o.workload_pid && o.workload_running)
		init_loop_track_workload(s, (pid_t)o.workload_pid);
	else if (o.workload_pid)
		s->workload_running = false;
	return 0;
}

static int own_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct init_state *s = data;
	(void)err;
	if (w->file)
		return 0;
	size_t at = state_open(w, tag);
	state_put_u64(w, I_STARTED, s->started_ns);
	if (s->workload) {
		state_put_u64(w, I_WORKLOAD_PID, (uint64_t)child_pid(s->workload));
		state_put_u64(w, I_WORKLOAD_RUNNING, s->workload_running);
	}
	state_put_u64(w, I_BOOTED, s->booted);
	state_close(w, at);
	return 0;
}

static size_t own_children(void *data)
{
	const struct init_state *s = data;
	return s->workload != NULL;
}

/* ---- the RPC server ---- */

static void read_listener(struct state_in *in, const struct state_field *f, struct init_carry *c)
{
	struct rpc_listen_fd l;
	if (rpc_listener_read(in, f, &l) < 0 || c->nlisteners == RPC_LISTENERS_MAX) {
		log_error("re-exec: a listening socket was not handed over");
		if (l.fd >= 0)
			close(l.fd);
		return;
	}
	c->listeners[c->nlisteners++] = l;
}

/* A re-exec's: the server serves the sockets handed over (made even with
 * none when routes or a parent's channel come too), and the routes now:
 * calls through them answer once the services run. */
static int rpc_take(struct init_state *s, const struct keep_from *from)
{
	struct init_carry *c = &s->carry;
	struct state_r r;
	struct state_field g;
	size_t carried = 0;
	int e;
	c->nlisteners = 0;
	state_get_record(from->record, &r);
	while (state_next(&r, &g) > 0) {
		if (g.tag == R_LISTENER)
			read_listener(from->in, &g, c);
		else if (g.tag == R_ROUTE || g.tag == R_CONN)
			carried++;
	}
	if (s->cfg->rpc.socket[0] || c->nlisteners || carried)
		init_rpc_serve_handed(s->cfg, s->loop, c->listeners, c->nlisteners, carried > 0,
		                      &s->rpc);
	c->nlisteners = 0;
	state_get_record(from->record, &r);
	while (s->rpc && state_next(&r, &g) > 0)
		if (g.tag == R_ROUTE && (e = rpc_route_restore(s->rpc, from->in, &g)) < 0)
			log_error("re-exec: a route to a child kin is lost: %s", strerror(-e));
	return 0;
}

static int rpc_start(void *data, const struct keep_from *from)
{
	struct init_state *s = data;
	if (from->how == KEEP_REEXEC && from->record)
		return rpc_take(s, from);
	/* Only a daemon told --socket explicitly gives up without RPC. */
	s->carry.rpc_failed = init_rpc_start(s->cfg, s->role, s->loop, &s->rpc) < 0;
	return 0;
}

/* After the caller was answered: every other call ends, the listening
 * sockets and what goes along (routes, a zone's channel, local clients'
 * connections) are written. */
static int rpc_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct init_state *s = data;
	struct init_carry *c = &s->carry;
	(void)err;
	if (w->file || !s->rpc)
		return 0;
	size_t at = state_open(w, tag);
	c->nlisteners = rpc_server_handover(s->rpc, AGAIN, c->listeners, RPC_LISTENERS_MAX);
	for (size_t i = 0; i < c->nlisteners; i++)
		rpc_listener_save(w, R_LISTENER, &c->listeners[i]);
	rpc_server_save(s->rpc, w, R_ROUTE, R_CONN);
	state_close(w, at);
	return 0;
}

/* The execve failed: the sockets are served again, the VM link opened
 * again (its connection went with the handover). */
static void rpc_resume(void *data)
{
	struct init_state *s = data;
	struct init_carry *c = &s->carry;
	for (size_t i = 0; i < c->nlisteners; i++)
		if (rpc_server_listen_handed(s->rpc, &c->listeners[i]) < 0)
			log_error("re-exec: the listening socket %s is lost", c->listeners[i].path);
	c->nlisteners = 0;
	if (s->link) {
		init_link_free(s->link);
		s->link = NULL;
		if (init_link_start(s->loop, s->rpc, &s->cfg->guest, &s->link) < 0)
			log_warn("rpc: cannot watch for the VM link again");
	}
}

/* Last, once the services run: a zone kin's channel to its parent and
 * local clients' connections, whose frames read already are answered now. */
static int conns_start(void *data, const struct keep_from *from)
{
	struct init_state *s = data;
	struct state_field f, g;
	struct state_r r;
	int e;
	if (from->how != KEEP_REEXEC || !s->rpc || !keep_record(s->keep, KEEP_TAG_RPC, &f))
		return 0;
	state_get_record(&f, &r);
	while (state_next(&r, &g) > 0)
		if (g.tag == R_CONN && (e = rpc_conn_restore(s->rpc, from->in, &g)) < 0)
			log_error("re-exec: the parent's channel is lost: %s", strerror(-e));
	return 0;
}

/* ---- the guard and the TLS gateway ---- */

/* After the cells (the gateway runs in one), the policy first. A failure
 * is logged; start_parts ends a daemon told --policy or --tls-listen
 * explicitly. The gateway is taken over from a re-exec's record (a state
 * file has none: a killed kin's sockets went with it). */
static int tls_start(void *data, const struct keep_from *from)
{
	struct init_state *s = data;
	const struct init_config *cfg = s->cfg;
	bool carried = from->how == KEEP_REEXEC && from->record;
	if (!s->rpc) {
		if (cfg->rpc.tls_listen[0])
			log_error(
			    "tls: kin.rpc.tls= needs kin's RPC server (it serves no socket here)");
		return 0;
	}
	int r = init_auth_start(&cfg->rpc, s->rpc, &s->auth);
	if (r == 0)
		r = init_tls_start(&cfg->rpc, s->loop, s->rpc, init_cells_lib(s->cells),
		                   carried ? from->in : NULL, carried ? from->record : NULL,
		                   &s->tls);
	s->carry.tls_failed = r < 0;
	return 0;
}

static int tls_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct init_state *s = data;
	(void)err;
	if (!w->file)
		init_tls_save(s->tls, w, tag);
	return 0;
}

static void tls_free(void *data)
{
	struct init_state *s = data;
	init_tls_free(s->tls);
	s->tls = NULL;
}

/* kin's stop (KEEP_LEVEL_RPC says why here): the server goes with the
 * connections it still has, then its guard (after the server: its calls'
 * ends are audited) and the VM link (the server closed its port without
 * calling back). */
static void rpc_free(void *data)
{
	struct init_state *s = data;
	rpc_server_free(s->rpc);
	s->rpc = NULL;
	init_auth_free(s->auth);
	s->auth = NULL;
	init_link_free(s->link);
	s->link = NULL;
}

/* A machine's end (KEEP_LEVEL_MACHINE): the next boot's seed saved before
 * the unmount, then reboot(2) as the stop asked; never returns. */
static void machine_end(void *data)
{
	struct init_state *s = data;
	if (s->cfg->host)
		units_sysinit_seed_save();
	init_shutdown_machine(s->stop_act);
}

/* ---- whether kin can hand over now ---- */

static int check(void *data, struct err *err)
{
	struct init_state *s = data;
	const char *what = NULL;
	if (s->phase != PHASE_RUNNING)
		what = "kin is stopping";
	else if (s->role == INIT_ROLE_CONTAINER)
		what = "a container init serves no state worth handing over";
	else if (s->units_boot_waits && !s->units_booted)
		what = "the units' boot, waiting for what a killed kin left to be removed";
	else if (s->role == INIT_ROLE_MACHINE && !s->booted)
		what = "the machine's late boot, still running";
	if (what)
		return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		               "re-exec: not possible now: %s cannot be handed over yet", what);
	/* The next kin reads the policy from its file: one that does not
	 * build would leave only root able to call (and a remote admin out). */
	struct err perr = {0};
	if (s->auth && init_auth_check(&s->cfg->rpc, &perr) < 0)
		return err_set(err, -EINVAL, ERR_FAILED_PRECONDITION,
		               "re-exec: not possible now: the next kin would refuse the policy "
		               "(fix the file, then retry): %s",
		               perr.msg[0] ? perr.msg : "it does not read");
	return 0;
}

int init_carry_register(struct init_state *s)
{
	const struct keep_part parts[] = {
	    {.name = "kin's own state",
	     .tag = KEEP_TAG_INIT,
	     .level = KEEP_LEVEL_INIT,
	     .start = own_start,
	     .save = own_save,
	     .children = own_children},
	    {.name = "the RPC server",
	     .tag = KEEP_TAG_RPC,
	     .level = KEEP_LEVEL_RPC,
	     .start = rpc_start,
	     .save = rpc_save,
	     .wire = true,
	     .resume = rpc_resume,
	     .free = rpc_free},
	    {.name = "the TLS gateway",
	     .tag = KEEP_TAG_TLS,
	     .level = KEEP_LEVEL_TLS,
	     .start = tls_start,
	     .save = tls_save,
	     .free = tls_free},
	    {.name = "the RPC connections",
	     .tag = KEEP_TAG_RPC_CONNS,
	     .level = KEEP_LEVEL_CONNS,
	     .start = conns_start},
	    {.name = "the machine",
	     .tag = KEEP_TAG_MACHINE,
	     .level = KEEP_LEVEL_MACHINE,
	     .free = machine_end},
	};
	const struct keep_reexec_ops ops = {.check = check, .data = s};
	int r = keep_reexec_init(s->keep, s->loop, s->children, init_role_name(s->role), saved_argv,
	                         &ops);
	/* Only a machine reboots (the last one: the machine). */
	size_t n = ARRAY_SIZE(parts) - (s->role != INIT_ROLE_MACHINE);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct keep_part p = parts[i];
		p.data = s;
		r = keep_register(s->keep, &p);
	}
	return r;
}
