/* Fuzz target: the relay's side of routing. A live in-process server has a
 * route "kid" over a socketpair; a caller sends calls through it (unary
 * and a server stream, with kin-target), and the fuzzer's bytes are what
 * the child answers. The parent must relay, refuse or close that route —
 * never crash, leak, or let the caller see anything but frames. The
 * first byte picks how many calls go first (0-3) and whether the caller
 * leaves early. */
#include "rpc/rpc-int.h"

#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ev_loop *loop;
	struct rpc_server *s;
	int child[2], caller[2];
	log_set_level(LOG_ERR_);
	if (size < 1 || ev_loop_new(&loop) < 0)
		return 0;
	if (rpc_server_new(loop, NULL, &s) < 0) {
		ev_loop_free(loop);
		return 0;
	}
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, child);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, caller);
	rpc_route_add(s, "kid", child[0], 0);
	close(child[0]);
	struct rpc_peer peer = {.transport = RPC_TRANSPORT_UNIX, .allowed = true};
	rpc_server_add_conn(s, caller[0], &peer);

	unsigned calls = data[0] & 3;
	bool leave = data[0] & 4;
	struct rpc_kv md[] = {{RPC_TARGET_KEY, "kid"}};
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	for (unsigned i = 0; i < calls; i++) {
		uint8_t *buf;
		size_t len;
		if (rpc_request_encode(1 + 2 * i, i == 1 ? RPC_FLAG_REMOTE_CLOSED : 0,
		                       "kin.v1.Health", "Check", &in.base, md, 1, 0, &buf,
		                       &len) == 0) {
			(void)!send(caller[1], buf, len, MSG_NOSIGNAL);
			free(buf);
		}
	}
	for (int i = 0; i < 4; i++)
		ev_run_once(loop, 0);
	/* The child's answer: whatever the fuzzer says, in two pieces. */
	size_t half = (size - 1) / 2;
	(void)!send(child[1], data + 1, half, MSG_NOSIGNAL);
	ev_run_once(loop, 0);
	if (leave) {
		close(caller[1]);
		caller[1] = -1;
	}
	(void)!send(child[1], data + 1 + half, size - 1 - half, MSG_NOSIGNAL);
	for (int i = 0; i < 8; i++)
		ev_run_once(loop, 0);
	/* The caller reads only whole frames with valid headers. */
	uint8_t out[65536];
	ssize_t n = caller[1] >= 0 ? read(caller[1], out, sizeof(out)) : 0;
	for (ssize_t pos = 0; n > 0 && pos + RPC_HEADER_SIZE <= n;) {
		struct rpc_header h;
		rpc_header_decode(out + pos, &h);
		if (h.type != RPC_TYPE_RESPONSE && h.type != RPC_TYPE_DATA)
			__builtin_trap();
		if (h.length > RPC_MESSAGE_MAX)
			__builtin_trap();
		pos += RPC_HEADER_SIZE + h.length;
	}
	rpc_server_free(s);
	close(child[1]);
	if (caller[1] >= 0)
		close(caller[1]);
	ev_loop_free(loop);
	return 0;
}
