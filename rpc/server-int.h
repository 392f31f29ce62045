/* server-int: the ttrpc server's state, shared by rpc/server.c (the
 * server and its listeners), rpc/server_conn.c (connections: reading,
 * framing, the output queue) and rpc/server_call.c (calls and dispatch);
 * never included outside them. The three meet only here: a connection
 * hands complete frames to dispatch, a call queues its answer on its
 * connection, and a connection that closes cancels its calls. */
#pragma once

#include "rpc/rpc-int.h"

#include <stddef.h>

#define RPC_METHODS_MAX 256
#define RPC_IN_MIN      4096         /* first input buffer; grows to a frame's size */
#define RPC_IN_KEEP     (64 * 1024)  /* larger buffers are freed once empty */
#define RPC_OUT_HIGH    (256 * 1024) /* stop reading requests past this */
/* All connections together: big frames being received, answers queued.
 * Per-connection caps alone would let 4096 clients claim 4 MiB each. */
#define RPC_IN_BUDGET  (64u << 20)
#define RPC_OUT_BUDGET (64u << 20)

struct rpc_conn {
	struct ev_source src;
	struct rpc_server *server;
	struct rpc_peer peer;
	char *peer_names;   /* the copies peer.names point into */
	struct buf_in in;   /* RPC_IN_MIN, grown to a frame's size; RPC_IN_BUDGET */
	uint64_t skip;      /* bytes of a refused frame still to discard */
	struct buf_out out; /* cfg.out_max pending; RPC_OUT_BUDGET */
	uint32_t last_stream;
	uint32_t events; /* the epoll mask set now */
	unsigned inflight;
	bool in_event;               /* inside its own handler: flush there, not via EPOLLOUT */
	bool not_socket;             /* a character device (virtio-serial port): read/write */
	rpc_conn_closed_fn on_close; /* told when the connection ends */
	void *on_close_data;
	bool read_closed;   /* the client shut its side: answer, then close */
	const char *broken; /* why it is closed at the next chance, or NULL */
	/* A frame that started arriving must be complete by frame_deadline_ns.
	 * frame_timer is queued while one is partly read; it may sit earlier
	 * than frame_deadline_ns (moved lazily when a frame completes, so a
	 * busy connection touches the heap only when its timer fires). */
	struct rpc_timer frame_timer;
	uint64_t frame_deadline_ns;
	uint64_t frames, frames_at_arm; /* frames taken in; the count when armed */
	struct list_node calls;         /* its rpc_call.node, newest first */
	struct list_node node;          /* in rpc_server.conns */
};

struct rpc_call {
	struct rpc_conn *conn;
	struct list_node node; /* in conn->calls while conn is set */
	const struct rpc_method *method;
	struct rpc_request req;
	uint32_t stream_id;
	uint64_t deadline_ns;
	struct rpc_timer deadline; /* queued while a deadline_ns is pending */
	rpc_cancel_fn cancel;
	void *cancel_data;
	bool cancelling; /* inside its cancel callback: answers are no-ops */
	bool report;     /* the guard wants to know how it ended */
	int status;      /* how it ended (ERR_*), for the guard */
};

/* Tells the guard how an audited call ended (once; then it is not
 * reported again). */
void rpc_call_report(struct rpc_call *call, int code);

struct rpc_server {
	struct ev_loop *loop;
	struct rpc_server_config cfg;
	const struct rpc_method *methods[RPC_METHODS_MAX];
	size_t n_methods;
	struct list_node listeners;   /* struct rpc_listener, newest first */
	struct list_node conns;       /* struct rpc_conn, newest first */
	struct rpc_call *dispatching; /* the call whose handler runs now */
	struct rpc_server_stats stats;
	size_t in_total, out_total; /* bytes of every connection's buffers */
	int reserve_fd;             /* given up to accept-and-close when out of fds */
	bool freeing;               /* rpc_server_free: no on_close callbacks */
	struct rpc_routes *routes;  /* children reached through kin-target (route.c) */
	struct rpc_timers timers;   /* call deadlines, frame time limits */
	struct rpc_guard guard;     /* admit == NULL: none */
	struct ev_source timer_src; /* a timerfd armed for the first of timers */
	uint64_t timer_armed_ns;    /* when it fires; 0: disarmed */
};

/* ---- server.c ---- */
/* Queues t for when_ns on s's timers, arming the timerfd if it is the
 * first now. -ENOMEM. */
int rpc_server_timer_add(struct rpc_server *s, struct rpc_timer *t, uint64_t when_ns);
void rpc_server_timer_remove(struct rpc_server *s, struct rpc_timer *t);

/* ---- server_conn.c ---- */
/* Room for n more bytes of output, then buf_out_commit(&c->out, n);
 * -ENOBUFS past the cap or the budget. */
int rpc_conn_out_reserve(struct rpc_conn *c, size_t n, uint8_t **ret);
/* Called after queueing output: inside the connection's handler the flush
 * happens on the way out; from elsewhere, EPOLLOUT brings us back. */
void rpc_conn_output_queued(struct rpc_conn *c);
/* A Response frame on c; a connection over its output cap is cut. */
int rpc_conn_queue_response(struct rpc_conn *c, uint32_t stream_id, int code, const char *msg,
                            const ProtobufCMessage *payload);
void rpc_conn_queue_status(struct rpc_conn *c, uint32_t stream_id, int code, const char *fmt, ...)
    _printf_(4, 5);
/* Cancels what still runs on c, then frees it; its on_close is told
 * unless the whole server is being freed. */
void rpc_conn_close(struct rpc_conn *c);
/* Goes along a re-exec: one marked so (peer.carry), and a local client's
 * (unix: its calls in flight ended, the connection and what it sent
 * since kept, so a client is answered by the next kin without
 * connecting again). */
bool rpc_conn_carried(const struct rpc_conn *c);
/* A call that goes along a re-exec as its request, sent again to the
 * next kin (RPC_METHOD_REPLAY, on a carried connection). */
bool rpc_call_replayed(const struct rpc_call *call);
/* A unix peer's powers, from its credentials and the server's guard: at
 * accept, and again for a connection a re-exec handed over. */
void rpc_peer_admit_unix(const struct rpc_server *s, int fd, struct rpc_peer *peer);

/* ---- server_call.c ---- */
/* Ends a call that is still in flight on its live connection with code
 * and a sentence: its cancel callback runs first (answers from it are
 * refused), then the answer is queued and the call freed. Route/Cancel
 * and deadlines end calls this way. */
void rpc_call_abort(struct rpc_call *call, int code, const char *fmt, ...) _printf_(3, 4);
/* Ends a call: unlinked from its connection, if it still has one. */
void rpc_call_free(struct rpc_call *call);
/* One complete frame from c: a Request (data: its payload), or Data. */
void rpc_conn_handle_request(struct rpc_conn *c, const struct rpc_header *h, const uint8_t *data);
void rpc_conn_handle_data(struct rpc_conn *c, const struct rpc_header *h);
/* kin.v1.Route/Cancel, every server's built-in method. */
int rpc_server_route_cancel(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);
