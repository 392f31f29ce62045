/* attach: a client attached to an executable — Exec/Attach, its output as
 * a server stream of AttachOutput from the position the client asks, each
 * chunk telling the position after it (so a client that detached attaches
 * again where it stopped), and the run's exit status as the last message;
 * and Exec/Resize, a terminal's window size. Input is Exec/Stdin: every
 * attached client's calls go to the one terminal (or pipe) in the order
 * kin receives them, as several users typing on one console.
 *
 * Never blocking kin or the workload: output is read from the pty master
 * or the pipes into the ring whatever the clients do; a client that does
 * not read while its connection's output is full is cut off
 * (RESOURCE_EXHAUSTED naming the position to attach again from), so at
 * most the server's per-connection cap is queued for it. */
#include "api/cells-int.h"

#include <stdlib.h>
#include <string.h>

#define ATTACH_CHUNK      (16 * 1024)
#define ATTACH_REPLAY_MAX (1024 * 1024) /* per stream, of what was kept */

struct api_attach {
	struct list_node node; /* in api_cells.attached */
	struct cells *cells;
	struct rpc_call *call;
	struct exec_follower *follower;
	char cell[CELLS_PATH_MAX], name[CELLS_NAME_MAX + 1];
	uint64_t pos[2];     /* per exec_stream: the offset after what was handed */
	uint64_t dropped[2]; /* not kept when asked for, told with the next chunk */
	bool in_setup, ended, cut;
};

static void attach_free(struct api_attach *a)
{
	list_remove(&a->node);
	free(a);
}

/* The client does not read: its call ends, the follower goes. */
static void attach_cut(struct api_attach *a, enum exec_stream s)
{
	if (a->in_setup) {
		a->cut = true; /* the handler finishes */
		return;
	}
	exec_log_unfollow(a->cells, a->follower);
	a->follower = NULL;
	rpc_call_close(a->call, ERR_RESOURCE_EXHAUSTED,
	               "exec \"%s/%s\": attached client cut off: it does not read its output "
	               "(attach again from %s %llu)",
	               a->cell, a->name, s == EXEC_STDOUT ? "stdout" : "stderr",
	               (unsigned long long)a->pos[s]);
	a->call = NULL;
	attach_free(a);
}

static void attach_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	struct api_attach *a = data;
	for (size_t off = 0; off < len && a->call && !a->cut;) {
		size_t n = len - off < ATTACH_CHUNK ? len - off : ATTACH_CHUNK;
		Kin__V1__AttachOutput m = KIN__V1__ATTACH_OUTPUT__INIT;
		m.stream =
		    s == EXEC_STDOUT ? KIN__V1__LOG_STREAM__STDOUT : KIN__V1__LOG_STREAM__STDERR;
		m.data.data = (uint8_t *)buf + off;
		m.data.len = n;
		m.dropped = a->dropped[s];
		m.position = a->pos[s] + n;
		int r = rpc_call_send(a->call, &m.base);
		if (r == -ENOBUFS) {
			attach_cut(a, s);
			return;
		}
		a->pos[s] += n;
		a->dropped[s] = 0;
		off += n;
	}
}

static void attach_skipped(enum exec_stream s, uint64_t n, void *data)
{
	struct api_attach *a = data;
	a->pos[s] += n;
	a->dropped[s] += n;
}

/* The last message: the run's status, then the end of the stream. */
static void attach_finish(struct api_attach *a)
{
	struct exec_status st;
	struct err err = {0};
	if (exec_status(a->cells, a->cell, a->name, &st, &err) < 0) {
		rpc_call_close(a->call, ERR_NOT_FOUND, "exec \"%s/%s\" was deleted while attached",
		               a->cell, a->name);
		return;
	}
	Kin__V1__ExecStatus es;
	api_exec_status_fill(&es, &st);
	Kin__V1__AttachOutput m = KIN__V1__ATTACH_OUTPUT__INIT;
	m.stream = KIN__V1__LOG_STREAM__STDOUT;
	m.position = a->pos[EXEC_STDOUT];
	m.exit = &es;
	if (rpc_call_send(a->call, &m.base) < 0) {
		rpc_call_close(a->call, ERR_RESOURCE_EXHAUSTED,
		               "exec \"%s/%s\": attached client cut off before its exit status",
		               a->cell, a->name);
		return;
	}
	rpc_call_close(a->call, ERR_OK, NULL);
}

static void attach_end(void *data)
{
	struct api_attach *a = data;
	a->follower = NULL;
	if (a->in_setup) {
		a->ended = true;
		return;
	}
	if (a->call)
		attach_finish(a);
	attach_free(a);
}

static const struct exec_log_ops attach_ops = {
    .data = attach_data, .end = attach_end, .skipped = attach_skipped};

static void attach_cancelled(struct rpc_call *call, void *data)
{
	struct api_attach *a = data;
	(void)call;
	a->call = NULL;
	if (a->follower)
		exec_log_unfollow(a->cells, a->follower);
	attach_free(a);
}

/* Where each stream starts: what the client asks, within what was ever
 * written (past the end is the end), and at most ATTACH_REPLAY_MAX before
 * the end: what is sent at once must fit the connection's output cap (4
 * MiB at least), or the client would be cut off before it could read. An
 * earlier position asked for is told as dropped. */
static void attach_from(const Kin__V1__AttachRequest *req, const struct exec_status *st,
                        uint64_t from[2], uint64_t dropped[2])
{
	uint64_t want[2] = {req->stdout_from, req->stderr_from};
	for (int s = 0; s < 2; s++) {
		uint64_t end = st->log_bytes[s];
		uint64_t floor = end > ATTACH_REPLAY_MAX ? end - ATTACH_REPLAY_MAX : 0;
		from[s] = !req->resume ? 0 : want[s] < end ? want[s] : end;
		if (from[s] < floor) {
			dropped[s] = req->resume ? floor - from[s] : 0;
			from[s] = floor;
		}
	}
}

static int attach_check(struct api_cells *svc, const Kin__V1__AttachRequest *req,
                        struct exec_status *st, struct err *err)
{
	int r = exec_status(svc->cells, req->cell, req->name, st, err);
	if (r < 0)
		return r;
	int tty = exec_has_terminal(svc->cells, req->cell, req->name, err);
	if (tty < 0)
		return tty;
	if (!tty && req->require_terminal)
		return err_set(err, -ENOTTY, ERR_FAILED_PRECONDITION,
		               "exec \"%s/%s\" has no terminal (start it with one: exec start -t)",
		               req->cell, req->name);
	if ((req->rows || req->cols) &&
	    (r = exec_resize(svc->cells, req->cell, req->name, req->rows, req->cols, err)) < 0 &&
	    !(r == -ESRCH && st->state == EXEC_EXITED))
		return r;
	return 0;
}

int api_exec_attach(struct api_cells *svc, struct rpc_call *call, const Kin__V1__AttachRequest *req)
{
	struct err err = {0};
	struct exec_status st;
	uint64_t from[2];
	int r = attach_check(svc, req, &st, &err);
	if (r < 0)
		return api_cells_fail(call, &err);
	struct api_attach *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	*a = (struct api_attach){.cells = svc->cells, .call = call};
	str_copy(a->cell, sizeof(a->cell), req->cell);
	str_copy(a->name, sizeof(a->name), req->name);
	list_push(&svc->attached, &a->node);
	attach_from(req, &st, from, a->dropped);
	a->pos[0] = from[0], a->pos[1] = from[1];
	a->in_setup = true;
	r = exec_log_follow(svc->cells, req->cell, req->name, &attach_ops, a, from, &a->follower,
	                    &err);
	a->in_setup = false;
	if (r < 0) {
		attach_free(a);
		return api_cells_fail(call, &err);
	}
	if (a->cut || a->ended) {
		if (a->follower)
			exec_log_unfollow(svc->cells, a->follower);
		a->follower = NULL;
		if (a->ended && !a->cut)
			attach_finish(a);
		else
			rpc_call_close(call, ERR_RESOURCE_EXHAUSTED,
			               "exec \"%s/%s\": attached client cut off: it does not read",
			               a->cell, a->name);
		attach_free(a);
		return 0;
	}
	rpc_call_on_cancel(call, attach_cancelled, a);
	return 0;
}

void api_exec_attach_end(struct list_node *list)
{
	struct api_attach *a;
	while ((a = list_first_entry(list, struct api_attach, node))) {
		struct rpc_call *call = a->call;
		a->call = NULL;
		if (a->follower)
			exec_log_unfollow(a->cells, a->follower);
		if (call)
			rpc_call_close(call, ERR_UNAVAILABLE, "kin is stopping");
		attach_free(a);
	}
}

void api_exec_attach_free(struct list_node *list)
{
	struct api_attach *a, *next;
	list_for_each_safe(a, next, list, node)
		attach_free(a);
}

int api_exec_resize(struct api_cells *svc, struct rpc_call *call, const Kin__V1__ResizeRequest *req)
{
	struct err err = {0};
	if (exec_resize(svc->cells, req->cell, req->name, req->rows, req->cols, &err) < 0)
		return api_cells_fail(call, &err);
	return rpc_call_reply(call, NULL);
}
