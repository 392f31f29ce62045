/* cells_svc: what rpc/svc_cells.c and rpc/svc_exec.c share (never included
 * outside rpc/). The services keep no cells state of their own: every
 * answer comes from the cells library. What they do keep is what outlives
 * a handler — open streams (log followers, event listeners) and pending
 * calls (freeze, thaw, forced delete, stop, wait) — so a client that goes
 * away can be detached and kin's stop can end them all. */
#pragma once

#include "cells/cells.h"
#include "rpc/cells.pb-c.h"
#include "rpc/internal.h"

/* A call answered from a cells completion callback. The library has no way
 * to withdraw a callback, so the record lives until the callback runs (or
 * the service is freed); a cancelled call only clears `call`. */
struct cells_pending {
	struct cells_pending *prev, *next;
	struct rpc_cells_service *svc;
	struct rpc_call *call;
	char path[CELLS_PATH_MAX]; /* freeze, thaw: the cell to describe */
};

/* An open server stream (Logs with follow, Events Subscribe). */
struct cells_stream {
	struct cells_stream *prev, *next;
	struct rpc_cells_service *svc;
	struct rpc_call *call;
	struct exec_follower *follower;  /* Logs */
	struct cells_listener *listener; /* Events */
	unsigned streams;                /* Logs: bit per exec_stream wanted */
	char filter[CELLS_PATH_MAX];     /* Events: a subtree, "" for all */
	uint64_t dropped;                /* bytes or events not delivered yet noted */
	bool in_setup, ended, closing;
};

struct rpc_cells_service {
	struct cells *cells; /* NULL: unavailable, why says so */
	char why[256];
	struct cells_pending *pending;
	struct cells_stream *streams;
};

/* Answers FAILED_PRECONDITION when cells are unavailable; true if it did. */
bool cells_svc_unavailable(struct rpc_cells_service *svc, struct rpc_call *call);
/* Ends a call with the library's code and sentence. */
int cells_svc_fail(struct rpc_call *call, const struct cells_err *err);

struct cells_pending *cells_pending_new(struct rpc_cells_service *svc, struct rpc_call *call);
void cells_pending_free(struct cells_pending *p);

struct cells_stream *cells_stream_new(struct rpc_cells_service *svc, struct rpc_call *call);
void cells_stream_free(struct cells_stream *st);

int cells_svc_register_exec(struct rpc_server *s, struct rpc_cells_service *svc);
