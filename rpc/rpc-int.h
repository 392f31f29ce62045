/* rpc internals shared by the module's files (never included outside
 * rpc/): the generated messages and the server's hand-written frames. */
#pragma once

#include "rpc/rpc.h"
#include "proto/kin.pb-c.h"
#include "proto/ttrpc.pb-c.h"
#include "proto/system.pb-c.h"

/* A Response frame, header included: status (code, msg) and an optional
 * payload message packed straight into out. */
size_t rpc_response_frame_size(int code, size_t msg_len, size_t payload_len);
void rpc_response_frame_write(uint8_t *out, uint32_t stream_id, int code, const char *msg,
                              size_t msg_len, const ProtobufCMessage *payload, size_t payload_len);

/* A Request frame, header included, malloc'd: a call made, relayed, or
 * handed to the next kin (codec.c). -EMSGSIZE past RPC_MESSAGE_MAX. */
int rpc_request_pack_frame(const Ttrpc__Request *m, uint32_t stream_id, uint8_t flags,
                           uint8_t **ret_buf, size_t *ret_len);

/* How a relayed call ended, for the guard (server_call.c). */
struct rpc_call;
void rpc_call_set_status(struct rpc_call *call, int code);

/* Reads one frame as a client (client.c): the header, then the data into
 * a malloc'd buffer; deadline (CLOCK_MONOTONIC ns) 0 waits forever.
 * -EPROTO for a frame over RPC_MESSAGE_MAX, or with strict any header a
 * client must not receive. */
int rpc_client_read_frame(int fd, uint64_t deadline, bool strict, struct rpc_header *ret,
                          uint8_t **ret_data);

/* Deadlines (timers.c): a binary min-heap of entries embedded in what
 * they time (a call, a connection). The server arms one timerfd for the
 * first and runs each entry's fn once its time has come. */
struct rpc_timer;
typedef void (*rpc_timer_fn)(struct rpc_timer *e, uint64_t now_ns);
struct rpc_timer {
	uint64_t when_ns; /* CLOCK_MONOTONIC */
	size_t slot;      /* 1 + index in the heap; 0: not queued */
	rpc_timer_fn fn;
};
struct rpc_timers {
	struct rpc_timer **heap;
	size_t n, cap;
};
/* Queues e for when_ns, or moves it there if queued already. -ENOMEM. */
int rpc_timers_add(struct rpc_timers *t, struct rpc_timer *e, uint64_t when_ns);
/* Takes e out; nothing if it is not queued. */
void rpc_timers_remove(struct rpc_timers *t, struct rpc_timer *e);
/* The earliest entry, or NULL. */
struct rpc_timer *rpc_timers_first(const struct rpc_timers *t);
/* Frees the heap; entries still in it are left unqueued. */
void rpc_timers_done(struct rpc_timers *t);

/* Listening sockets (transport.c): non-blocking, O_CLOEXEC. */
int rpc_listen_vsock(uint32_t port, int *ret_fd);
/* Fills in who is on the other end of an accepted socket. */
int rpc_peer_identify(int fd, enum rpc_transport transport, struct rpc_peer *ret);

/* Routing (route.c) hooks into the server (server*.c). */
struct rpc_routes;
struct ev_loop *rpc_server_loop(const struct rpc_server *s);
struct rpc_routes **rpc_server_routes(struct rpc_server *s);
const struct rpc_request *rpc_call_request(const struct rpc_call *call);
/* Queues a raw frame (a child's answer) on call's stream: a Response, or
 * a Data frame with remote-closed, finishes the call. A caller whose
 * output is over its cap is cut (its calls get cancelled). */
int rpc_call_relay(struct rpc_call *call, uint8_t type, uint8_t flags, const uint8_t *data,
                   size_t len);
/* The method routed calls carry (they match no registered one). */
extern const struct rpc_method rpc_route_method;
/* Forwards a call with a kin-target to the named child, or answers it
 * (NOT_FOUND, UNAVAILABLE, ...). flags: the request frame's. */
void rpc_route_forward(struct rpc_server *s, struct rpc_call *call, const char *target,
                       uint8_t flags);
/* Ends every route (calls through them UNAVAILABLE) at server free. */
void rpc_routes_free(struct rpc_server *s);
/* Every route into a re-exec's state (route.c; rpc_server_save). */
struct state_w;
void rpc_routes_save(struct rpc_server *s, struct state_w *w, uint16_t tag);
