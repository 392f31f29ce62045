/* client_stream: the client side of a ttrpc server stream — one Request
 * with remote-closed (the client sends nothing more), then Data frames
 * until a Data frame with remote-closed, or a Response (an error). Each
 * stream has a connection of its own, so it never interleaves with unary
 * calls. Used by `kin ctl exec logs -f` and `kin ctl events`. */
#include "rpc/rpc-int.h"

#include <string.h>
#include <sys/socket.h>

struct rpc_stream {
	int fd;
	uint32_t id;
	bool done;
};

int rpc_client_stream_open(const char *address, int timeout_ms, const char *service,
                           const char *method, const ProtobufCMessage *in,
                           const struct rpc_kv *metadata, size_t n_metadata,
                           struct rpc_stream **ret)
{
	struct rpc_address a;
	int r = rpc_address_parse(address, &a);
	if (r < 0)
		return r;
	int fd = rpc_address_connect(&a, timeout_ms);
	if (fd < 0)
		return fd;
	return rpc_client_stream_open_fd(fd, service, method, in, metadata, n_metadata, ret);
}

int rpc_client_stream_open_fd(int fd_in, const char *service, const char *method,
                              const ProtobufCMessage *in, const struct rpc_kv *metadata,
                              size_t n_metadata, struct rpc_stream **ret)
{
	_cleanup_close_ int fd = fd_in;
	_cleanup_free_ uint8_t *req = NULL;
	size_t len;
	int r = rpc_request_encode(1, RPC_FLAG_REMOTE_CLOSED, service, method, in, metadata,
	                           n_metadata, 0, &req, &len);
	if (r < 0)
		return r;
	for (size_t off = 0; off < len;) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	struct rpc_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = TAKE_FD(fd);
	s->id = 1;
	*ret = s;
	return 0;
}

int rpc_client_stream_next(struct rpc_stream *s, const ProtobufCMessageDescriptor *desc,
                           ProtobufCMessage **ret_msg, struct err *ret_status)
{
	*ret_msg = NULL;
	if (s->done) {
		*ret_status = (struct err){.code = ERR_OK};
		return 0;
	}
	for (;;) {
		struct rpc_header h;
		_cleanup_free_ uint8_t *data = NULL;
		int r = rpc_client_read_frame(s->fd, 0, true, &h, &data);
		if (r < 0)
			return r;
		if (h.stream_id != s->id)
			continue;
		if (h.type == RPC_TYPE_RESPONSE) {
			s->done = true;
			r = rpc_response_decode(data, h.length, NULL, ret_status, NULL);
			return r < 0 ? -EPROTO : 0;
		}
		if (h.type != RPC_TYPE_DATA)
			continue;
		if (h.flags & RPC_FLAG_REMOTE_CLOSED)
			s->done = true;
		if (h.flags & RPC_FLAG_NO_DATA) {
			if (s->done) {
				*ret_status = (struct err){.code = ERR_OK};
				return 0;
			}
			continue;
		}
		*ret_msg = protobuf_c_message_unpack(desc, NULL, h.length, data);
		if (!*ret_msg)
			return -EPROTO;
		return 1;
	}
}

void rpc_client_stream_free(struct rpc_stream *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

int rpc_client_stream_fd(const struct rpc_stream *s)
{
	return s->fd;
}
