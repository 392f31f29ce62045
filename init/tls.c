/* tls: init's side of RPC over TCP with mutual TLS. kin's end of the
 * gateway — the listening socket, the control socket, the connections
 * handed over, the re-exec record — is tls/'s (tls_serve); init runs the
 * gateway for it as an executable of cells in a cell of its own with
 * restart=always — cells' restarts and backoff, not a second supervisor
 * here — (cells holds its copies of the fds passed to it for the
 * restarts), and serves each connection it hands over with a verified
 * identity as one more RPC connection, authorized like any other by the
 * guard (init/auth.c). Its output is captured by cells and relayed into
 * kin's log as its own lines.
 *
 * A re-exec of kin carries the gateway: cells hands the executable over
 * (cells_save: its pid, its backoff, the fds passed to it), and the TLS
 * record holds only kin's own sockets (tls_serve_save); init/carry.c
 * registers the participant that starts, saves and frees it. */
#include "init/init.h"
#include "cells/cells.h"
#include "lib/state.h"
#include "rpc/rpc.h"
#include "tls/tls.h"

#include <stdio.h>
#include <string.h>

#define GATEWAY_CELL "kin-gateway"
#define GATEWAY_EXEC "gateway"

struct init_tls {
	const struct init_rpc_config *cfg;
	struct rpc_server *rpc;
	struct cells *cells; /* NULL once the library went (its listener closed) */
	struct tls_serve *ts;
	struct cells_listener *listener; /* the gateway's restarts, logged */
	struct exec_follower *follower;  /* its output, into kin's log */
};

/* ---- the gateway's output and restarts, from cells ---- */

/* Its lines are whole log lines of its own (one write each): as they were
 * when it wrote to kin's stderr itself. */
static void relay_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	(void)s, (void)data;
	(void)!write(STDERR_FILENO, buf, len);
}

static void relay_end(void *data)
{
	struct init_tls *t = data;
	t->follower = NULL;
}

static const struct exec_log_ops relay_ops = {.data = relay_data, .end = relay_end, .live = true};

static void gateway_follow(void *data)
{
	struct init_tls *t = data;
	if (t->cells && !t->follower &&
	    exec_log_follow(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &relay_ops, t, NULL, &t->follower,
	                    NULL) < 0)
		log_warn("tls: the gateway's output does not reach kin's log");
}

static void on_event(const struct cells_event *ev, void *data)
{
	struct init_tls *t = data;
	struct exec_status st;
	if (ev->type != CELLS_EV_EXEC_RESTART || !ev->exec || strcmp(ev->exec, GATEWAY_EXEC) ||
	    strcmp(ev->cell, GATEWAY_CELL) ||
	    exec_status(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &st, NULL) < 0)
		return;
	log_warn("tls: the gateway ended (%s %d) after %llu ms; starting it again in %llu ms",
	         st.signal ? "signal" : "status", st.signal ? st.signal : st.exit_code,
	         (unsigned long long)((st.exited_ns - st.started_ns) / 1000000),
	         (unsigned long long)ev->delay_ms);
}

static void on_cells_gone(void *data)
{
	struct init_tls *t = data;
	t->cells = NULL;
	t->listener = NULL;
}

static const struct cells_listener_ops listener_ops = {.event = on_event, .closed = on_cells_gone};

/* ---- the gateway, an executable of cells (tls_serve's runner) ---- */

/* The gateway's cell: made once, reused by every start. */
static void gateway_cell(struct init_tls *t)
{
	struct err err = {0}, perr = {0};
	struct cell_limits lim = {0};
	/* Bounded like any other cell: TLS state per connection is small. */
	if (cell_limit_parse(&lim, "memory.max", "256M", &perr) < 0 ||
	    cell_limit_parse(&lim, "pids.max", "16", &perr) < 0)
		lim = (struct cell_limits){0};
	int r = cell_create(t->cells, GATEWAY_CELL, &lim, &err);
	if (r < 0 && r != -EEXIST)
		r = cell_create(t->cells, GATEWAY_CELL, NULL, &err);
	if (r < 0 && r != -EEXIST)
		log_warn("tls: no cell for the gateway: %s", err.msg);
}

static void gateway_started(int result, const struct err *err, void *data)
{
	(void)data;
	if (result < 0 && result != -ECANCELED)
		log_error("tls: cannot start the gateway: %s",
		          err && err->msg[0] ? err->msg : strerror(-result));
}

static int gateway_start(void *data, char *const *argv, const int fds[2])
{
	struct init_tls *t = data;
	struct exec_spec spec;
	exec_spec_init(&spec);
	spec.argv = argv;
	spec.path = "/proc/self/exe";
	spec.pass_fds = fds;
	spec.npass_fds = 2;
	spec.restart = EXEC_RESTART_ALWAYS;
	/* It filters its own calls, and gives up its capabilities, once its
	 * files are loaded (tls/sandbox.c). */
	spec.seccomp = EXEC_SECCOMP_NONE;
	struct err err = {0};
	gateway_cell(t);
	int r = exec_start(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &spec, gateway_started, t, &err);
	if (r < 0)
		log_error("tls: cannot start the gateway: %s", err.msg);
	return r;
}

static void tls_stopped(int result, const struct exec_status *st, void *data)
{
	(void)result, (void)st, (void)data;
}

/* A previous gateway (a killed kin's, adopted; one not taken over) ended. */
static void previous_ended(int result, const struct exec_status *st, void *data)
{
	struct init_tls *t = data;
	(void)st;
	tls_serve_ended(t->ts, result);
}

static int gateway_stop(void *data, uint64_t grace_ms, bool report)
{
	struct init_tls *t = data;
	if (!t->cells)
		return 0;
	return exec_stop(t->cells, GATEWAY_CELL, GATEWAY_EXEC, grace_ms,
	                 report ? previous_ended : tls_stopped, t, NULL);
}

static int gateway_status(void *data, pid_t *ret_pid)
{
	struct init_tls *t = data;
	struct exec_status st = {0};
	int r = exec_status(t->cells, GATEWAY_CELL, GATEWAY_EXEC, &st, NULL);
	*ret_pid = st.pid;
	return r < 0 ? r : st.state != EXEC_EXITED && st.state != EXEC_STOPPING;
}

static void gateway_signal(void *data, int sig)
{
	struct init_tls *t = data;
	if (t->cells)
		exec_signal(t->cells, GATEWAY_CELL, GATEWAY_EXEC, sig, NULL);
}

/* Each connection the gateway hands over joins the RPC server. */
static void gateway_conn(void *data, int fd, const struct tls_identity *id)
{
	struct init_tls *t = data;
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_TLS, .allowed = true};
	str_copy(peer.addr, sizeof(peer.addr), id->peer);
	for (size_t k = 0; k < id->n_names && k < RPC_PEER_NAMES_MAX; k++)
		peer.names[peer.n_names++] = id->names[k];
	int r = rpc_server_add_conn(t->rpc, fd, &peer);
	if (r < 0)
		log_debug("tls: connection of %s refused: %s", id->peer, strerror(-r));
}

/* ---- start ---- */

/* The files (unless a running gateway holds them already), the server and
 * cells, checked; t listening to cells, nothing started. */
static int tls_new(const struct init_rpc_config *cfg, struct ev_loop *loop, struct rpc_server *rpc,
                   struct cells *cells, bool check_files, struct init_tls **ret)
{
	*ret = NULL;
	if (!cfg->tls_cert[0] || !cfg->tls_key[0] || !cfg->tls_ca[0]) {
		log_error("tls: kin.rpc.tls=%s needs kin.rpc.tls.cert=, .key= and .ca= "
		          "(--tls-cert, --tls-key, --tls-ca); not listening",
		          cfg->tls_listen);
		return -EINVAL;
	}
	if (!rpc) {
		log_error("tls: no RPC server to hand connections to; not listening");
		return -EINVAL;
	}
	if (!cells) {
		log_error("tls: not listening on %s: the gateway runs as an executable of cells, "
		          "and there are none here",
		          cfg->tls_listen);
		return -EOPNOTSUPP;
	}
	struct err err = {0};
	const struct tls_serve_config scfg = {
	    .listen = cfg->tls_listen,
	    .files = {.cert = cfg->tls_cert,
	              .key = cfg->tls_key,
	              .ca = cfg->tls_ca,
	              .crl = cfg->tls_crl[0] ? cfg->tls_crl : NULL},
	    .handshake_ms = cfg->tls_handshake_ms};
	int r = check_files ? tls_files_check(&scfg.files, true, &err) : 0;
	if (r < 0) {
		log_error("tls: not listening on %s: %s", cfg->tls_listen, err.msg);
		return r;
	}
	struct init_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = (struct init_tls){.cfg = cfg, .rpc = rpc, .cells = cells};
	const struct tls_serve_ops ops = {.start = gateway_start,
	                                  .stop = gateway_stop,
	                                  .status = gateway_status,
	                                  .signal = gateway_signal,
	                                  .follow = gateway_follow,
	                                  .conn = gateway_conn,
	                                  .data = t};
	r = tls_serve_new(&scfg, &ops, loop, &t->ts);
	if (r == 0 && (r = cells_listen(cells, &listener_ops, t, &t->listener)) < 0)
		log_error("tls: not listening on %s: cannot watch cells: %s", cfg->tls_listen,
		          strerror(-r));
	if (r < 0) {
		tls_serve_free(t->ts);
		free(t);
		return r;
	}
	*ret = t;
	return 0;
}

int init_tls_start(const struct init_rpc_config *cfg, struct ev_loop *loop, struct rpc_server *rpc,
                   struct cells *cells, struct state_in *in, const struct state_field *carried,
                   struct init_tls **ret)
{
	*ret = NULL;
	if (!cfg->tls_listen[0]) {
		if (in && cells)
			exec_stop(cells, GATEWAY_CELL, GATEWAY_EXEC, TLS_GATEWAY_STOP_MS,
			          tls_stopped, NULL, NULL);
		if (in)
			log_warn("re-exec: this kin listens on no TLS address; the gateway is let "
			         "go");
		return 0;
	}
	struct init_tls *t;
	int r = tls_new(cfg, loop, rpc, cells, !in, &t);
	if (r < 0)
		return r;
	r = tls_serve_start(t->ts, in, carried);
	if (r < 0) {
		init_tls_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

void init_tls_reload(struct init_tls *t)
{
	if (t && t->cells)
		tls_serve_reload(t->ts);
}

void init_tls_stop(struct init_tls *t)
{
	if (t)
		tls_serve_stop(t->ts);
}

void init_tls_free(struct init_tls *t)
{
	if (!t)
		return;
	tls_serve_free(t->ts);
	if (t->cells && t->follower)
		exec_log_unfollow(t->cells, t->follower);
	if (t->cells && t->listener)
		cells_unlisten(t->cells, t->listener);
	free(t);
}

void init_tls_save(const struct init_tls *t, struct state_w *w, uint16_t tag)
{
	if (t)
		tls_serve_save(t->ts, w, tag);
}
