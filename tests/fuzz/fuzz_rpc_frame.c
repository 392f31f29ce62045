/* Fuzz target: ttrpc frame and message decoding. The first byte picks
 *   even: the codec alone — frame headers as a server and as a client
 *         sees them, Request, Response and Health messages;
 *   odd:  the whole server — the bytes arrive on a connection of a live
 *         in-process server (Health registered), which must answer or
 *         close without crashing, leaking or growing past its bounds. */
#include "rpc/rpc-int.h"
#include "api/api-int.h"

#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void codec(const uint8_t *p, size_t n)
{
	while (n >= RPC_HEADER_SIZE) {
		struct rpc_header h;
		rpc_header_decode(p, &h);
		int rs = rpc_header_check(&h, true), rc = rpc_header_check(&h, false);
		if ((rs == 0 || rc == 0) && h.length > RPC_MESSAGE_MAX)
			__builtin_trap();
		p += RPC_HEADER_SIZE;
		n -= RPC_HEADER_SIZE;
		size_t len = h.length < n ? h.length : n;
		struct rpc_request req;
		if (rpc_request_decode(p, len, &req) == 0) {
			if (!req.service[0] || !req.method[0] || req.n_metadata > RPC_METADATA_MAX)
				__builtin_trap();
			for (size_t i = 0; i < req.n_metadata; i++)
				if (!rpc_request_metadata(&req, i).key)
					__builtin_trap();
			ProtobufCMessage *m =
			    protobuf_c_message_unpack(&kin__v1__version_response__descriptor, NULL,
			                              req.payload_len, req.payload);
			if (m)
				protobuf_c_message_free_unpacked(m, NULL);
			rpc_request_done(&req);
		}
		struct err st;
		ProtobufCMessage *out = NULL;
		if (rpc_response_decode(p, len, &kin__v1__check_response__descriptor, &st, &out) ==
		        0 &&
		    out)
			protobuf_c_message_free_unpacked(out, NULL);
		if (strnlen(st.msg, sizeof(st.msg)) == sizeof(st.msg))
			__builtin_trap();
		p += len;
		n -= len;
	}
}

static bool never(void *d)
{
	(void)d;
	return false;
}

static void server(const uint8_t *p, size_t n)
{
	static struct ev_loop *loop;
	static struct rpc_server *s;
	static struct api *api;
	static const struct api_service *const health[] = {&api_service_health};
	if (!loop) {
		ev_loop_new(&loop);
		rpc_server_new(loop, NULL, &s);
		struct api_config acfg = {
		    .rpc = s,
		    .loop = loop,
		    .health = {.version = "f", .role = "fuzz", .zone = "", .stopping = never}};
		api_start(&acfg, health, ARRAY_SIZE(health), &api);
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return;
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_UNIX, .allowed = n % 7 != 0};
	if (rpc_server_add_conn(s, sv[0], &peer) < 0) {
		close(sv[1]);
		return;
	}
	size_t off = 0;
	uint8_t sink[65536];
	struct rpc_server_stats st;
	for (int round = 0; round < 10000; round++) {
		if (off < n) {
			ssize_t w = send(sv[1], p + off, n - off, MSG_NOSIGNAL);
			if (w > 0)
				off += (size_t)w;
			if (off == n)
				shutdown(sv[1], SHUT_WR);
		}
		ev_run_once(loop, 0);
		while (recv(sv[1], sink, sizeof(sink), 0) > 0)
			;
		rpc_server_get_stats(s, &st);
		if (st.conns == 0)
			break;
	}
	close(sv[1]);
	for (int i = 0; i < 4; i++)
		ev_run_once(loop, 0);
	rpc_server_get_stats(s, &st);
	if (st.conns != 0 || st.inflight != 0)
		__builtin_trap(); /* a connection outlived its client */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		server(data + 1, size - 1);
	else
		codec(data + 1, size - 1);
	return 0;
}
