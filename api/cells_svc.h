/* cells_svc: what rpc/svc_cells.c and rpc/svc_exec.c share (never included
 * outside rpc/ and its tests). The services keep no cells state of their
 * own: every answer comes from the cells library. What they do keep is
 * what outlives a handler — open streams (log followers, event listeners)
 * and pending calls (start, freeze, thaw, forced delete, stop, wait) — so a client
 * that goes away can be detached and kin's stop can end them all. What a
 * request must be before the library sees it is rpc/cells_req.c's, apart
 * from the rest so it can be fuzzed without a cells library. */
#pragma once

#include "cells/cells.h"
#include "proto/cells.pb-c.h"
#include "api/api-int.h"

/* Both tables below: newest first, doubly linked, unlinked in O(1). */
#define CELLS_LIST_PUSH(head, n)                                                                   \
	do {                                                                                       \
		(n)->prev = NULL;                                                                  \
		(n)->next = (head);                                                                \
		if ((n)->next)                                                                     \
			(n)->next->prev = (n);                                                     \
		(head) = (n);                                                                      \
	} while (0)
#define CELLS_LIST_UNLINK(head, n)                                                                 \
	do {                                                                                       \
		if ((n)->prev)                                                                     \
			(n)->prev->next = (n)->next;                                               \
		else                                                                               \
			(head) = (n)->next;                                                        \
		if ((n)->next)                                                                     \
			(n)->next->prev = (n)->prev;                                               \
	} while (0)

/* A call answered from a cells completion callback. The library has no way
 * to withdraw a callback, so the record lives until the callback runs (or
 * the service is freed); a cancelled call only clears `call`. */
struct cells_pending {
	struct cells_pending *prev, *next;
	struct rpc_cells_service *svc;
	struct rpc_call *call;
	char path[CELLS_PATH_MAX];     /* freeze, thaw: the cell to describe; "" answers Empty */
	char name[CELLS_NAME_MAX + 1]; /* start: the executable (in cell path) */
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

/* A method of Cells, Exec or Events. Its handler runs only while cells are
 * available (else the call answers FAILED_PRECONDITION naming why) and
 * gets the input message as its method's type. */
typedef int (*cells_handler_fn)(struct rpc_cells_service *svc, struct rpc_call *call,
                                const void *in);
struct cells_method {
	const char *service, *method;
	const ProtobufCMessageDescriptor *input;
	cells_handler_fn fn;
	unsigned flags; /* RPC_METHOD_* */
	struct rpc_cells_service *svc;
};
#define CELLS_METHOD(service, method, input, fn, flags)                                            \
	{                                                                                          \
		"kin.v1." service, method, &kin__v1__##input##__descriptor, fn, flags, NULL        \
	}
/* Registers n methods; out: room for n, kept by the server (static). */
int cells_svc_register(struct rpc_server *s, struct rpc_cells_service *svc,
                       struct cells_method *methods, struct rpc_method *out, size_t n);
/* Ends a call with the library's code and sentence. */
int cells_svc_fail(struct rpc_call *call, const struct cells_err *err);
/* A handler's end after a failed library call: r, an -ENOMEM nobody
 * explained, goes back to the server; anything else is the library's
 * code and sentence. */
int cells_svc_failed(struct rpc_call *call, int r, const struct cells_err *err);

struct cells_pending *cells_pending_new(struct rpc_cells_service *svc, struct rpc_call *call);
void cells_pending_free(struct cells_pending *p);
/* After the library call p was handed to returned r: 1 (pending) keeps p
 * for the callback and watches the call for cancellation; anything else
 * frees p. Returns r. */
int cells_pending_settle(struct cells_pending *p, int r);

struct cells_stream *cells_stream_new(struct rpc_cells_service *svc, struct rpc_call *call);
void cells_stream_free(struct cells_stream *st);

/* A growing array of records a library visit hands over one by one
 * (cell_list, exec_list): the messages are made once the visit is over. */
struct cells_vec {
	void *items;
	size_t n, cap, size; /* size: bytes per record, set before the first push */
};
int cells_vec_push(struct cells_vec *v, const void *item);
/* Answers a List after the visit that returned r (< 0: the library's
 * error, err) from the records in v, freed here whatever happens: each
 * becomes a message of msg_size through fill(msg, record); *ret_n and
 * *ret_items are out's repeated field. */
typedef void (*cells_fill_fn)(void *msg, const void *record);
int cells_svc_reply_list(struct rpc_call *call, int r, const struct cells_err *err,
                         struct cells_vec *v, size_t msg_size, cells_fill_fn fill,
                         ProtobufCMessage *out, size_t *ret_n, void ***ret_items);

int cells_svc_register_exec(struct rpc_server *s, struct rpc_cells_service *svc);

/* ---- request checks (rpc/cells_req.c) ------------------------------------------------ */

/* Every check fills err (INVALID_ARGUMENT and one sentence naming the
 * object) and returns -EINVAL, or 0. None needs a cells library. */

/* Create, Update: the path and the limits, parsed. */
int cells_req_limits(const Kin__V1__CreateCellRequest *req, struct cell_limits *l,
                     struct cells_err *err);

/* Start: cell path, name and spec as exec_start takes them, pointing into
 * req and b (free b with cells_spec_buf_free, whatever the result). */
struct cells_spec_buf {
	struct exec_spec s;
	char **argv, **env;
};
int cells_req_start(const Kin__V1__StartRequest *req, struct cells_spec_buf *b,
                    struct cells_err *err);
void cells_spec_buf_free(struct cells_spec_buf *b);

int cells_req_signal(const Kin__V1__SignalRequest *req, struct cells_err *err);
/* Stop: the grace period, 0 made the default. */
int cells_req_stop(const Kin__V1__StopRequest *req, uint64_t *ret_grace_ms, struct cells_err *err);
/* Logs: the streams wanted, a bit per exec_stream. */
int cells_req_logs(const Kin__V1__LogsRequest *req, unsigned *ret_streams, struct cells_err *err);
int cells_req_events(const Kin__V1__EventsRequest *req, struct cells_err *err);

/* Every method of Cells, Exec and Events with its input and the checks
 * its handler makes before the library (for the fuzzer and hostile tests). */
struct cells_req_method {
	const char *service, *method;
	const ProtobufCMessageDescriptor *input;
	int (*check)(const ProtobufCMessage *in, struct cells_err *err); /* NULL: none */
};
extern const struct cells_req_method cells_req_methods[];
extern const size_t cells_req_methods_count;
