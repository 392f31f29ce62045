/* cells-int: what the cells services share — Cells (api/cells.c), Exec
 * (api/exec.c), Events (api/events.c) and their request checks
 * (api/cells_req.c); never included outside api/ and its tests. The
 * services keep no cells state of their own: every answer comes from the
 * cells library. What they do keep is what outlives a handler — open
 * streams (log followers, event listeners) and pending calls (start,
 * freeze, thaw, forced delete, stop, wait) — so a client that goes away
 * can be detached and kin's stop can end them all. What a request must be
 * before the library sees it is cells_req.c's, apart from the rest so it
 * can be fuzzed without a cells library. */
#pragma once

#include "cells/cells.h"
#include "proto/cells.pb-c.h"
#include "api/api-int.h"

/* A call answered from a cells completion callback. The library has no way
 * to withdraw a callback, so the record lives until the callback runs (or
 * the service is freed); a cancelled call only clears `call`. */
struct api_cells_pending {
	struct list_node node; /* in api_cells.pending, newest first */
	struct api_cells *svc;
	struct rpc_call *call;
	char path[CELLS_PATH_MAX];     /* freeze, thaw: the cell to describe; "" answers Empty */
	char name[CELLS_NAME_MAX + 1]; /* start: the executable (in cell path) */
	exec_done_fn waiting;          /* wait, stop: taken back from cells if the caller goes */
};

/* An open server stream (Logs with follow, Events Subscribe). */
struct api_cells_stream {      /* an Events stream */
	struct list_node node; /* in api_cells.streams, newest first */
	struct api_cells *svc;
	struct rpc_call *call;
	struct cells_listener *listener;
	char filter[CELLS_PATH_MAX]; /* a subtree, "" for all */
	uint64_t dropped;            /* events not delivered yet noted */
	bool closing;
};

struct api_cells {
	struct cells *cells; /* NULL: unavailable, why says so */
	struct child_table *children;
	struct api_images *images; /* containers from images (api/exec_image.c) */
	char why[256];
	struct list_node pending;
	struct list_node streams;     /* Events */
	struct list_node log_streams; /* Exec/Logs (api/logs.c) */
	struct list_node attached;    /* Exec/Attach (api/attach.c) */
	struct list_node containers;  /* executables' from images (api/exec_image.c) */
	struct api_binding cells_binding, exec_binding, events_binding;
};

/* Exec/Start with spec.image (api/exec_image.c): answered through done
 * as serve_exec_start's own starts are. */
int api_exec_image_start(struct api_cells *svc, struct rpc_call *call,
                         const Kin__V1__StartRequest *req, exec_start_fn done);
/* Re-exec and adoption (a participant of the handover, keep/keep.h): the
 * executables' containers written to a record of tag; taken back from it
 * once cells has its executables again (each given its release hook back;
 * one whose executable is gone is released, its layer removed). how
 * ("re-exec", "adopt") starts the log lines. Returns how many were taken. */
void api_exec_images_save(struct api_cells *svc, struct state_w *w, uint16_t tag);
/* Both as the handover's participant (keep/keep.h). */
extern const struct keep_part api_exec_images_part;
int api_exec_images_restore(struct api_cells *svc, const struct state_field *f, const char *how);
/* Exec/Start with spec.bundle (api/exec_bundle.c), the same way. */
int api_exec_bundle_start(struct api_cells *svc, struct rpc_call *call,
                          const Kin__V1__StartRequest *req, exec_start_fn done);

/* Exec/Attach and Exec/Resize (api/attach.c); the open attachments ended
 * (kin stops: UNAVAILABLE) or forgotten (the service freed). */
int api_exec_attach(struct api_cells *svc, struct rpc_call *call,
                    const Kin__V1__AttachRequest *req);
int api_exec_resize(struct api_cells *svc, struct rpc_call *call,
                    const Kin__V1__ResizeRequest *req);
void api_exec_attach_end(struct list_node *list);
void api_exec_attach_free(struct list_node *list);
/* An ExecStatus message of a status (its strings point into st). */
void api_exec_status_fill(Kin__V1__ExecStatus *m, const struct exec_status *st);

/* Exec/Start with spec.login (api/exec_login.c): the user's ids, groups,
 * home, env and shell filled into b's spec, pointing into l (free it
 * after exec_start, with api_exec_login_free). */
struct api_exec_login {
	char user[256], home[1024], shell[1024], argv0[1026];
	char vars[4][1100]; /* HOME=, USER=, LOGNAME=, SHELL= */
	char *argv[2], **env;
	uint32_t uid, gid, groups[EXEC_GROUPS_MAX];
	size_t ngroups;
};
struct api_cells_spec_buf;
int api_exec_login_fill(const Kin__V1__StartRequest *req, struct api_cells_spec_buf *b,
                        struct api_exec_login *l, struct err *err);
void api_exec_login_free(struct api_exec_login *l);

/* The services' handler tables (every handler gets the api_cells as its
 * userdata and runs only while cells are available). */
extern const struct api_handlers api_cells_exec_handlers;
extern const struct api_handlers api_cells_events_handlers;
bool api_cells_ready(struct rpc_call *call, void *userdata);

/* Ends a call with the library's code and sentence. */
int api_cells_fail(struct rpc_call *call, const struct err *err);
/* A handler's end after a failed library call: r, an -ENOMEM nobody
 * explained, goes back to the server; anything else is the library's
 * code and sentence. */
int api_cells_failed(struct rpc_call *call, int r, const struct err *err);

struct api_cells_pending *api_cells_pending_new(struct api_cells *svc, struct rpc_call *call);
void api_cells_pending_free(struct api_cells_pending *p);
/* After the library call p was handed to returned r: 1 (pending) keeps p
 * for the callback and watches the call for cancellation; anything else
 * frees p. Returns r. */
int api_cells_pending_settle(struct api_cells_pending *p, int r);

struct api_cells_stream *api_cells_stream_new(struct api_cells *svc, struct rpc_call *call);
void api_cells_stream_free(struct api_cells_stream *st);

/* A growing array of records a library visit hands over one by one
 * (cell_list, exec_list): the messages are made once the visit is over. */
struct api_cells_vec {
	void *items;
	size_t n, cap, size; /* size: bytes per record, set before the first push */
};
int api_cells_vec_push(struct api_cells_vec *v, const void *item);
/* Answers a List after the visit that returned r (< 0: the library's
 * error, err) from the records in v, freed here whatever happens: each
 * becomes a message of msg_size through fill(msg, record); *ret_n and
 * *ret_items are out's repeated field. */
typedef void (*api_cells_fill_fn)(void *msg, const void *record);
int api_cells_reply_list(struct rpc_call *call, int r, const struct err *err,
                         struct api_cells_vec *v, size_t msg_size, api_cells_fill_fn fill,
                         ProtobufCMessage *out, size_t *ret_n, void ***ret_items);

/* ---- request checks (api/cells_req.c) ------------------------------------------------ */

/* Every check fills err (INVALID_ARGUMENT and one sentence naming the
 * object) and returns -EINVAL, or 0. None needs a cells library. */

/* Create, Update: the path and the limits, parsed. */
int api_cells_req_limits(const Kin__V1__CreateCellRequest *req, struct cell_limits *l,
                         struct err *err);

/* Start: cell path, name and spec as exec_start takes them, pointing into
 * req and b (free b with api_cells_spec_buf_free, whatever the result). */
struct api_cells_spec_buf {
	struct exec_spec s;
	char **argv, **env;
};
int api_cells_req_start(const Kin__V1__StartRequest *req, struct api_cells_spec_buf *b,
                        struct err *err);
void api_cells_spec_buf_free(struct api_cells_spec_buf *b);

int api_cells_req_signal(const Kin__V1__SignalRequest *req, struct err *err);
/* Stop: the grace period, 0 made the default. */
int api_cells_req_stop(const Kin__V1__StopRequest *req, uint64_t *ret_grace_ms, struct err *err);
/* Logs: the streams wanted, a bit per exec_stream. */
int api_cells_req_logs(const Kin__V1__LogsRequest *req, unsigned *ret_streams, struct err *err);
int api_cells_req_events(const Kin__V1__EventsRequest *req, struct err *err);

/* Every method of Cells, Exec and Events (in that order, each service's in
 * its .proto order), named by the generated descriptors, with the checks
 * its handler makes before the library (for the fuzzer and hostile tests). */
struct api_cells_req_method {
	const char *service, *method;
	const ProtobufCMessageDescriptor *input;
	int (*check)(const ProtobufCMessage *in, struct err *err); /* NULL: none */
};
/* Sets *ret to the table; returns its length. */
size_t api_cells_req_methods(const struct api_cells_req_method **ret);
