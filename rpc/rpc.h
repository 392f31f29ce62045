/* rpc: kin's remote management. The wire is containerd's ttrpc (10-byte
 * big-endian frame header, protobuf Request/Response, streams of Data
 * frames), so any ttrpc client can call kin. This module owns the frame
 * codec, the server that lives in PID 1's epoll loop (no threads, every
 * table and buffer bounded), the unix and vsock transports, a small
 * blocking client, deadlines and routing to child kins. It knows no
 * service: api/ registers the kin.v1 services, ctl/ calls them.
 *
 * Messages are protobuf-c structs generated from the .proto files in proto/
 * into $(BUILD)/gen/proto/ (include "proto/kin.pb-c.h"). Services register
 * methods by (service, method); a handler answers at once, later (it keeps
 * the call), or streams Data frames until it closes the call.
 * Read this header first; docs/rpc.md documents the user-facing side. */
#pragma once

#include "lib/lib.h"

#include <protobuf-c/protobuf-c.h>
#include <stdio.h>

/* ---- wire ---------------------------------------------------------------- */

#define RPC_HEADER_SIZE 10
#define RPC_MESSAGE_MAX (4u << 20) /* ttrpc's cap on a frame's data */

enum rpc_type {
	RPC_TYPE_REQUEST = 1,
	RPC_TYPE_RESPONSE = 2,
	RPC_TYPE_DATA = 3,
};

enum {
	RPC_FLAG_REMOTE_CLOSED = 0x1, /* Request, Data: the sender sends no more */
	RPC_FLAG_REMOTE_OPEN = 0x2,   /* Request: the client streams Data next */
	RPC_FLAG_NO_DATA = 0x4,       /* Data: the frame carries no message */
};

struct rpc_header {
	uint32_t length; /* bytes after the header */
	uint32_t stream_id;
	uint8_t type;
	uint8_t flags;
};

void rpc_header_encode(const struct rpc_header *h, uint8_t out[RPC_HEADER_SIZE]);
void rpc_header_decode(const uint8_t in[RPC_HEADER_SIZE], struct rpc_header *ret);
/* Checks a frame header as its receiver. from_client: true on the server
 * side (frames a client sent), false on the client side. Returns
 *   0           good
 *   -EPROTO     the byte stream cannot be trusted (reserved length byte set,
 *               unknown type, a type this side never receives): close
 *   -EMSGSIZE   data over RPC_MESSAGE_MAX: answer RESOURCE_EXHAUSTED, skip it
 *   -EBADR      stream id 0, or of the wrong parity: answer INVALID_ARGUMENT
 *   -EBADRQC    flags not defined for the type: answer INVALID_ARGUMENT
 * Checked in that order; the data is never needed to decide. */
int rpc_header_check(const struct rpc_header *h, bool from_client);

/* Statuses are lib's struct err (lib/err.h): ERR_* codes are gRPC's,
 * kin.v1.Code in proto/kin.proto. */

/* A decoded Request: views into the unpacked message (valid until
 * rpc_request_done). */
#define RPC_METADATA_MAX 64   /* pairs a Request may carry */
#define RPC_NAME_MAX     255  /* bytes in a service or method name, a metadata key */
#define RPC_VALUE_MAX    4096 /* bytes in a metadata value */
struct rpc_kv {
	const char *key;
	const char *value;
};
struct rpc_request {
	const char *service;
	const char *method;
	const uint8_t *payload;
	size_t payload_len;
	int64_t timeout_ns;
	size_t n_metadata;
	void *owned_; /* the unpacked Request */
};
/* Unpacks a Request: -EBADMSG when it is not a valid one (bad protobuf,
 * empty or overlong names, too many or overlong metadata, negative
 * timeout). */
int rpc_request_decode(const uint8_t *data, size_t len, struct rpc_request *ret);
void rpc_request_done(struct rpc_request *req);
struct rpc_kv rpc_request_metadata(const struct rpc_request *req, size_t i);
/* The frame (header included, malloc'd) of a decoded request as it came,
 * on stream_id: a call sent again to the next kin across a re-exec. */
int rpc_request_frame(const struct rpc_request *req, uint32_t stream_id, uint8_t **ret_buf,
                      size_t *ret_len);
/* Packs a Request frame (header included) into a malloc'd buffer. */
int rpc_request_encode(uint32_t stream_id, uint8_t flags, const char *service, const char *method,
                       const ProtobufCMessage *in, const struct rpc_kv *metadata, size_t n_metadata,
                       int64_t timeout_ns, uint8_t **ret_buf, size_t *ret_len);
/* Unpacks a Response into a status and (status OK) the output message of
 * type out_desc (NULL: ignore the payload). -EBADMSG when malformed. */
int rpc_response_decode(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *out_desc,
                        struct err *ret_status, ProtobufCMessage **ret_out);

/* ---- addresses and transports --------------------------------------------- */

#define RPC_SOCKET_DEFAULT     "/run/kin/kin.sock"
#define RPC_VSOCK_PORT_DEFAULT 1024

/* OTHER: a channel kin made itself (a zone's parent channel, a VM link);
 * TLS: a connection the TLS gateway handed over (tls/). */
enum rpc_transport {
	RPC_TRANSPORT_UNIX,
	RPC_TRANSPORT_VSOCK,
	RPC_TRANSPORT_OTHER,
	RPC_TRANSPORT_TLS
};

struct rpc_address {
	enum rpc_transport transport;
	char path[108]; /* unix */
	uint32_t cid;   /* vsock */
	uint32_t port;
};
/* "unix:PATH", "vsock:CID:PORT", or a bare PATH. -EINVAL if malformed. */
int rpc_address_parse(const char *s, struct rpc_address *ret);
/* A connected, blocking, O_CLOEXEC socket; timeout_ms bounds connect(2). */
int rpc_address_connect(const struct rpc_address *a, int timeout_ms);

/* Who is calling: filled in when a connection is accepted (or by the
 * owner of a connection it adds). */
#define RPC_PEER_NAMES_MAX  16
#define RPC_PEER_GROUPS_MAX 64
struct rpc_peer {
	enum rpc_transport transport;
	pid_t pid; /* unix: SO_PEERCRED */
	uid_t uid;
	gid_t gid;
	size_t n_groups; /* unix, not superuser: SO_PEERGROUPS (the first ones) */
	gid_t groups[RPC_PEER_GROUPS_MAX];
	uint32_t cid;   /* vsock: the peer's context id */
	bool allowed;   /* false: every request is answered PERMISSION_DENIED */
	bool superuser; /* root or kin's own uid (unix), the host (vsock), the parent kin */
	/* A parent kin relaying (a zone's channel, a VM link): its calls were
	 * authorized and audited where they entered; not again here. */
	bool relay_hop;
	/* Goes along when kin re-executes itself, unread and unsent bytes
	 * included (a zone kin's channel to its parent, which has no other). */
	bool carry;
	/* TLS: the identities the gateway verified ("cn:ops", "uri:...") and
	 * the remote address. rpc_server_add_conn copies them. */
	size_t n_names;
	const char *names[RPC_PEER_NAMES_MAX];
	char addr[64];
};

/* ---- server ---------------------------------------------------------------- */

#define RPC_ALLOW_MAX 16 /* ids in a list (rpc_parse_id_list) */

struct rpc_server_config {
	unsigned max_conns;    /* connections at once; more are closed at accept */
	unsigned max_inflight; /* calls in flight per connection */
	size_t out_max;        /* bytes queued to one connection before it is cut */
	/* A frame that has started arriving must be complete within this
	 * (0: the default); else its connection is closed. Idle connections
	 * between frames are never timed out. */
	unsigned frame_timeout_ms;
	/* The unix socket is 0666 (others may connect; a guard decides what
	 * they may call) instead of 0600. */
	bool socket_open;
};
#define RPC_MAX_CONNS_DEFAULT        4096
#define RPC_MAX_INFLIGHT_DEFAULT     128
#define RPC_OUT_MAX_DEFAULT          (2 * RPC_MESSAGE_MAX + 64 * 1024)
#define RPC_FRAME_TIMEOUT_DEFAULT_MS 10000

void rpc_server_config_defaults(struct rpc_server_config *cfg);
/* "1000,1001": up to RPC_ALLOW_MAX ids; -EINVAL if malformed or too many. */
int rpc_parse_id_list(const char *s, uint32_t *ids, size_t max, size_t *ret_n);

struct rpc_server;
struct rpc_call;

/* A handler gets the method's input message, already unpacked. It returns
 * 0 once it has answered (rpc_call_reply/rpc_call_fail) or kept the call
 * for later (a stream, a deferred answer: then it must set a cancel
 * callback); or -errno, and the server answers with err_code_from_errno()
 * and a sentence naming the method. */
typedef int (*rpc_handler_fn)(struct rpc_call *call, const ProtobufCMessage *in, void *userdata);

enum {
	RPC_METHOD_SERVER_STREAM = 0x1, /* answers with Data frames, then a close */
	/* In flight on a connection that goes along a re-exec, it does not
	 * end UNAVAILABLE: its request is handed to the next kin as if the
	 * client had just sent it. For a call whose answer does not depend
	 * on when it is asked (containerd's Wait). */
	RPC_METHOD_REPLAY = 0x2,
};

struct rpc_method {
	const char *service; /* "kin.v1.Health" */
	const char *method;  /* "Check" */
	const ProtobufCMessageDescriptor *input;
	rpc_handler_fn handler;
	unsigned flags;
	void *userdata;
};

int rpc_server_new(struct ev_loop *loop, const struct rpc_server_config *cfg,
                   struct rpc_server **ret);
/* Closes listeners and connections (cancelling their calls), unlinks the
 * unix socket it made. NULL is fine. */
void rpc_server_free(struct rpc_server *s);
/* Registers a method table (kept by pointer, usually static). -EEXIST if a
 * (service, method) pair is taken, -E2BIG past the table's cap. */
int rpc_server_register(struct rpc_server *s, const struct rpc_method *methods, size_t n);

/* The guard: who may call what. Without one, only superuser peers (and
 * peers added as allowed) may call, everything. With one, every peer
 * that reached the server may try, and admit decides each request before
 * it is dispatched or forwarded: 0 go on, 1 go on and tell ended() how
 * the call ended (an audited change), < 0 refuse with ret (its code and
 * sentence are the answer). Calls from relay_hop peers are not shown. */
struct rpc_call_info {
	const struct rpc_peer *peer;
	const char *service, *method;
	const char *target; /* NULL: this kin */
	const uint8_t *payload;
	size_t payload_len;
};
struct rpc_guard {
	int (*admit)(const struct rpc_call_info *info, struct err *ret, void *data);
	void (*ended)(const struct rpc_call_info *info, int code, void *data);
	void *data;
};
void rpc_server_set_guard(struct rpc_server *s, const struct rpc_guard *guard);
/* Listens on a unix socket (mode 0600, 0666 with an allowlist; its
 * directory made 0700) — refuses -EADDRINUSE when a live server answers
 * there, replaces a stale socket. */
int rpc_server_listen_unix(struct rpc_server *s, const char *path);
/* A listening unix socket at path (mode; its directory made 0700, or 0711
 * when mode lets others in), non-blocking and O_CLOEXEC: what
 * rpc_server_listen_unix listens on, for a process that hands it to the
 * server of another (a containerd shim's start to its daemon). -EADDRINUSE
 * when a live server answers there; a stale socket is replaced. */
int rpc_listen_unix(const char *path, mode_t mode, int *ret_fd);
/* Serves a listening unix socket made elsewhere (takes fd); path, if not
 * NULL, is unlinked at rpc_server_free while it is still that socket. */
int rpc_server_listen_fd(struct rpc_server *s, int fd, const char *path);
/* Calls of service in flight (dispatched, not answered yet), but those a
 * re-exec hands over as requests (RPC_METHOD_REPLAY). */
size_t rpc_server_inflight(const struct rpc_server *s, const char *service);
/* Serves a listening unix socket its parent kin made for a zone kin (takes
 * fd; the parent unlinks the path): a successor of a parent that was
 * killed connects there, and is served as the parent's channel was
 * (superuser, relay hop, carried across a re-exec). A peer that is not
 * root (nor this kin's uid), or that runs in this kin's pid namespace (a
 * process of the zone itself), is closed. -EINVAL when fd is not
 * listening. */
int rpc_server_listen_parent(struct rpc_server *s, int fd);
/* Listens on AF_VSOCK; -EAFNOSUPPORT when the kernel has no vsock. Peers:
 * the host (CID 2) and this machine (CID 1, loopback). */
int rpc_server_listen_vsock(struct rpc_server *s, uint32_t port);
/* Serves an already connected socket (tests, a parent's socketpair, a TLS
 * gateway's handover), or a character device such as a virtio-serial port
 * (read/write instead of recv/send); takes fd. */
int rpc_server_add_conn(struct rpc_server *s, int fd, const struct rpc_peer *peer);
/* The same, and on_close(data) runs once the connection has ended (not at
 * rpc_server_free): the guest's VM link reopens its port from there. */
typedef void (*rpc_conn_closed_fn)(void *data);
int rpc_server_add_conn_notify(struct rpc_server *s, int fd, const struct rpc_peer *peer,
                               rpc_conn_closed_fn on_close, void *data);

/* ---- re-exec: the server handed over to the next kin ---- */
struct rpc_listen_fd {
	int fd;
	enum rpc_transport transport; /* UNIX or VSOCK */
	char path[108];               /* unix: where it is bound */
	bool parent;                  /* rpc_server_listen_parent's */
};
#define RPC_LISTENERS_MAX 8
/* Ends every call in flight with UNAVAILABLE and why (cancel callbacks
 * first, as for a closed connection: a relayed call's child is told to
 * cancel it), flushes each connection's answers as far as its socket
 * takes them without waiting, and closes it — all but the carried ones
 * (peer.carry, and local clients' unix connections), which stay as they
 * are, with their RPC_METHOD_REPLAY calls in flight. Routes stay too. The listening
 * sockets are taken out, neither closed nor unlinked, into out (at most
 * max; the rest closed). Returns how many. Then rpc_server_save. */
size_t rpc_server_handover(struct rpc_server *s, const char *why, struct rpc_listen_fd *out,
                           size_t max);
/* Serves a listening socket a previous kin handed over (takes l->fd). */
int rpc_server_listen_handed(struct rpc_server *s, const struct rpc_listen_fd *l);
/* Writes every route (a record route_tag each) and carried connection
 * (conn_tag) into w as they are: fd, stream ids, the bytes read but not
 * taken and those queued but not sent. Nothing is closed: a kin whose
 * execve failed goes on with them. A child's late answers to calls of
 * the previous kin match no stream of the next one and are dropped. */
struct state_w;
struct state_in;
struct state_field;
void rpc_server_save(struct rpc_server *s, struct state_w *w, uint16_t route_tag,
                     uint16_t conn_tag);
/* One record of each kind, in the next kin. A record that does not read
 * is refused (-EBADMSG), its fd closed. A connection's frames already
 * read are handled at once: restore connections after the services are
 * registered. */
int rpc_route_restore(struct rpc_server *s, struct state_in *in, const struct state_field *f);
int rpc_conn_restore(struct rpc_server *s, struct state_in *in, const struct state_field *f);
/* A listening socket rpc_server_handover gave out, as a record tag in w;
 * read back in the next kin (its fd taken): -EBADF when no socket came
 * along (then ret->fd is -1). */
void rpc_listener_save(struct state_w *w, uint16_t tag, const struct rpc_listen_fd *l);
int rpc_listener_read(struct state_in *in, const struct state_field *f, struct rpc_listen_fd *ret);

struct rpc_server_stats {
	size_t conns;              /* open now */
	uint64_t accepted;         /* connections, ever */
	uint64_t refused;          /* connections closed at accept (max_conns) */
	uint64_t calls;            /* requests dispatched */
	uint64_t inflight;         /* calls alive now */
	uint64_t proto_errors;     /* connections closed for bad framing */
	uint64_t frame_timeouts;   /* connections closed for a frame left incomplete */
	uint64_t deadlines_passed; /* calls ended DEADLINE_EXCEEDED by the server */
};
void rpc_server_get_stats(const struct rpc_server *s, struct rpc_server_stats *ret);

/* ---- calls (the handler's side) ----------------------------------------------- */

/* Answers OK with out (NULL: an empty payload) and finishes the call. */
int rpc_call_reply(struct rpc_call *call, const ProtobufCMessage *out);
/* Answers with a gRPC code and one sentence; finishes the call. */
int rpc_call_fail(struct rpc_call *call, int code, const char *fmt, ...) _printf_(3, 4);
/* rpc_call_fail with err's code and sentence (err NULL or empty: r's
 * errno, INTERNAL when it maps to OK): the one way a handler answers a
 * module's struct err. */
int rpc_call_fail_err(struct rpc_call *call, const struct err *err, int r);
/* Server streams: queues one Data frame. -ENOBUFS when the connection's
 * output is full (the caller drops or retries later), -EPIPE if the
 * client is gone, -EINVAL on a unary call. The call stays alive. */
int rpc_call_send(struct rpc_call *call, const ProtobufCMessage *msg);
/* Ends a server stream: OK as a Data frame with remote-closed (as ttrpc
 * does), an error as a final Response. Finishes the call. */
int rpc_call_close(struct rpc_call *call, int code, const char *fmt, ...) _printf_(3, 4);

/* Called once if the connection ends before the call is finished (the
 * client left, a slow client was cut, the server is freed); the call is
 * freed right after (answering it from the callback returns -EPIPE). A
 * handler that keeps a call must set one. */
typedef void (*rpc_cancel_fn)(struct rpc_call *call, void *data);
void rpc_call_on_cancel(struct rpc_call *call, rpc_cancel_fn fn, void *data);

const char *rpc_call_service(const struct rpc_call *call);
const char *rpc_call_method(const struct rpc_call *call);
/* The first value of a metadata key ("kin-target" routes to a child kin,
 * later), or NULL. All pairs: rpc_call_metadata_at(). */
const char *rpc_call_metadata(const struct rpc_call *call, const char *key);
size_t rpc_call_metadata_count(const struct rpc_call *call);
struct rpc_kv rpc_call_metadata_at(const struct rpc_call *call, size_t i);
/* CLOCK_MONOTONIC ns when the client stops waiting; 0 without a timeout.
 * A call still in flight then is ended by the server: its cancel callback
 * runs, and the client gets DEADLINE_EXCEEDED naming the method. */
uint64_t rpc_call_deadline_ns(const struct rpc_call *call);
const struct rpc_peer *rpc_call_peer(const struct rpc_call *call);

/* ---- routes: reaching child kins (rpc/route.c) -------------------------------------- */

/* A request whose metadata has RPC_TARGET_KEY = "a/b/c" is for a kin below
 * this one: it is forwarded to this kin's route "a" with the target "b/c"
 * (none at the last hop), and the answer — a Response, or a server
 * stream's Data frames — relayed back. Each kin forwards one hop, so any
 * depth works. Route names are the owner's grammar (struct
 * rpc_route_names: kin's api/ names a zone "pod1" and a VM "vm/NAME", a
 * hop of two words); without one, a hop is one name. A target is hops
 * joined by '/': "pod1/vm/db/inner". A route is a connected fd to the child kin (a
 * socketpair end, a VM's link socket) on which this kin multiplexes the
 * calls of all its callers with stream ids of its own. Errors: an unknown
 * hop NOT_FOUND naming it; a malformed target INVALID_ARGUMENT; a route
 * whose child is gone or not answering yet UNAVAILABLE; more than
 * RPC_ROUTE_INFLIGHT_MAX calls in flight on a route RESOURCE_EXHAUSTED. A
 * caller that goes away is cancelled in the child (kin.v1.Route/Cancel).
 * A child sending anything malformed (bad header, oversize frame, bad
 * Response) has its route closed; nothing else is affected. */
#define RPC_TARGET_KEY         "kin-target"
#define RPC_TARGET_VIA_KEY     "kin-target-via" /* the hops already taken, for messages */
#define RPC_ROUTE_NAME_MAX     (3 + 64)
#define RPC_ROUTES_MAX         512
#define RPC_ROUTE_INFLIGHT_MAX 1024
#define RPC_ROUTE_OUT_MAX      (16u << 20) /* requests queued to one child */

enum {
	/* The child must answer a Health/Check before calls go through
	 * (a VM link: QEMU accepts the connection long before the guest's
	 * kin opens its port); until then calls answer UNAVAILABLE. */
	RPC_ROUTE_PROBE = 0x1,
	/* Not a child kin but a peer this kin calls (containerd's events
	 * service, for a shim): named "@NAME", which no target can name, so
	 * only rpc_route_call reaches it. */
	RPC_ROUTE_PRIVATE = 0x2,
};
/* The owner's grammar of route names; rpc/ knows none. hop_words: how
 * many '/'-separated words the hop target begins with has (>= 1). valid:
 * whether name may name a route (a reserved word may not). what names the
 * kinds of route in errors ("no zone or VM ..."), expect what a hop looks
 * like. NULL members: one word, name_is_valid, "route", "a name". */
struct rpc_route_names {
	size_t (*hop_words)(const char *target);
	bool (*valid)(const char *name);
	const char *what, *expect;
};
int rpc_route_names_set(struct rpc_server *s, const struct rpc_route_names *names);
/* Adds route name over a dup of fd (the caller keeps fd). -EEXIST taken,
 * -EINVAL a bad name, -ENOSPC past RPC_ROUTES_MAX. fd < 0: the child is
 * on its way (calls answer UNAVAILABLE) until rpc_route_attach gives it. */
int rpc_route_add(struct rpc_server *s, const char *name, int fd, unsigned flags);
int rpc_route_attach(struct rpc_server *s, const char *name, int fd);
/* A route still waiting for its child's first answer (RPC_ROUTE_PROBE)
 * asks again: a probe can be lost (a VM's link port the guest had not
 * opened again after its host kin changed). -EALREADY when not waiting,
 * -EAGAIN while what it queued before is not sent yet (nothing queued). */
int rpc_route_reprobe(struct rpc_server *s, const char *name);
/* Closes it, keeping the name: calls in flight and later ones end
 * UNAVAILABLE naming why (the child is gone). */
int rpc_route_close(struct rpc_server *s, const char *name, const char *why);
/* Removes it: its calls in flight end UNAVAILABLE naming why. */
int rpc_route_remove(struct rpc_server *s, const char *name, const char *why);
enum rpc_route_state { RPC_ROUTE_NONE, RPC_ROUTE_CONNECTING, RPC_ROUTE_READY, RPC_ROUTE_DOWN };
enum rpc_route_state rpc_route_state(struct rpc_server *s, const char *name);
/* fn(data) runs once when route name (RPC_ROUTE_PROBE) turns ready, from
 * the loop; never if it goes down first (NULL fn: forget it). One per route. */
int rpc_route_on_ready(struct rpc_server *s, const char *name, void (*fn)(void *data), void *data);
/* A call this kin makes itself through a route (a VM's Poweroff). done
 * gets the status; payload (status OK) is valid during the callback. It
 * always runs once, later (also at route removal: UNAVAILABLE). */
typedef void (*rpc_route_done_fn)(const struct err *st, const uint8_t *payload, size_t len,
                                  void *data);
int rpc_route_call(struct rpc_server *s, const char *name, const char *service, const char *method,
                   const ProtobufCMessage *in, rpc_route_done_fn done, void *data);
/* The same for a server stream (a follower of a zone's logs): on_data gets
 * each Data frame's payload (valid during the callback), done the end as
 * above (OK once the child closed the stream). *ret_id names it for
 * rpc_route_cancel, after which neither callback runs. */
typedef void (*rpc_route_data_fn)(const uint8_t *payload, size_t len, void *data);
int rpc_route_stream(struct rpc_server *s, const char *name, const char *service,
                     const char *method, const ProtobufCMessage *in, rpc_route_data_fn on_data,
                     rpc_route_done_fn done, void *data, uint32_t *ret_id);
/* Ends this kin's own call id on route name (the child is told), or a
 * stream a previous kin opened on the route it handed over (its id from
 * that kin's state); finished ids are ignored by the child, ids never
 * given here. */
void rpc_route_cancel(struct rpc_server *s, const char *name, uint32_t id);

/* ---- client -------------------------------------------------------------------- */

struct rpc_client;
/* Connects to an address (rpc_address_parse syntax). timeout_ms bounds the
 * connect and each later call (0: wait forever). */
int rpc_client_connect(const char *address, int timeout_ms, struct rpc_client **ret);
/* The same over a socket already connected (a TLS relay's end); takes fd. */
int rpc_client_from_fd(int fd, int timeout_ms, struct rpc_client **ret);
void rpc_client_free(struct rpc_client *c);
/* Bounds each later call (0: wait forever); one connection can carry
 * calls with different deadlines. */
void rpc_client_set_timeout(struct rpc_client *c, int timeout_ms);
/* Metadata sent with every later call (strings kept by pointer). */
int rpc_client_set_metadata(struct rpc_client *c, const struct rpc_kv *kv, size_t n);
/* One unary call. 0 when the server answered: ret_status says how, and on
 * OK *ret_out holds the output (free with protobuf_c_message_free_unpacked).
 * -errno when kin could not be reached or the connection failed. */
int rpc_client_call(struct rpc_client *c, const char *service, const char *method,
                    const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                    struct err *ret_status, ProtobufCMessage **ret_out);

/* Server streams (rpc/client_stream.c): a connection of its own per
 * stream. timeout_ms bounds the connect only; a stream waits as long as
 * the server keeps it open. */
struct rpc_stream;
int rpc_client_stream_open(const char *address, int timeout_ms, const char *service,
                           const char *method, const ProtobufCMessage *in,
                           const struct rpc_kv *metadata, size_t n_metadata,
                           struct rpc_stream **ret);
/* The same over a socket already connected; takes fd. */
int rpc_client_stream_open_fd(int fd, const char *service, const char *method,
                              const ProtobufCMessage *in, const struct rpc_kv *metadata,
                              size_t n_metadata, struct rpc_stream **ret);
/* 1: *ret_msg is the next message (free with protobuf_c_message_free_unpacked);
 * 0: the stream ended and ret_status says how; -errno: the connection failed. */
int rpc_client_stream_next(struct rpc_stream *s, const ProtobufCMessageDescriptor *desc,
                           ProtobufCMessage **ret_msg, struct err *ret_status);
void rpc_client_stream_free(struct rpc_stream *s);
/* The stream's socket, to poll for its next message (a frame read by
 * rpc_client_stream_next once it is readable arrives whole soon after). */
int rpc_client_stream_fd(const struct rpc_stream *s);
