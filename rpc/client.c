/* client: a small blocking ttrpc client — one call at a time on one
 * connection, each bounded by the timeout. Used by `kin ctl` and tests. */
#include "rpc/rpc-int.h"

#include <poll.h>
#include <string.h>
#include <sys/socket.h>

struct rpc_client {
	int fd;
	int timeout_ms;
	uint32_t next_stream;
	const struct rpc_kv *metadata;
	size_t n_metadata;
};

int rpc_client_connect(const char *address, int timeout_ms, struct rpc_client **ret)
{
	struct rpc_address a;
	int r = rpc_address_parse(address, &a);
	if (r < 0)
		return r;
	int fd = rpc_address_connect(&a, timeout_ms);
	if (fd < 0)
		return fd;
	return rpc_client_from_fd(fd, timeout_ms, ret);
}

int rpc_client_from_fd(int fd, int timeout_ms, struct rpc_client **ret)
{
	struct rpc_client *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	c->next_stream = 1;
	*ret = c;
	return 0;
}

void rpc_client_free(struct rpc_client *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c);
}

void rpc_client_set_timeout(struct rpc_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

int rpc_client_set_metadata(struct rpc_client *c, const struct rpc_kv *kv, size_t n)
{
	if (n > RPC_METADATA_MAX)
		return -E2BIG;
	c->metadata = kv;
	c->n_metadata = n;
	return 0;
}

/* Waits until fd is ready for events, within the deadline (0: none). */
static int wait_ready(int fd, short events, uint64_t deadline)
{
	if (!deadline)
		return 0;
	uint64_t now = now_monotonic_ns();
	if (now >= deadline)
		return -ETIMEDOUT;
	struct pollfd p = {.fd = fd, .events = events};
	int ms = (int)((deadline - now + 999999) / 1000000);
	int r = poll(&p, 1, ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int send_all(int fd, const uint8_t *buf, size_t len, uint64_t deadline)
{
	while (len) {
		int r = wait_ready(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | (deadline ? MSG_DONTWAIT : 0));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int recv_all(int fd, uint8_t *buf, size_t len, uint64_t deadline)
{
	while (len) {
		int r = wait_ready(fd, POLLIN, deadline);
		if (r < 0)
			return r;
		ssize_t n = recv(fd, buf, len, deadline ? MSG_DONTWAIT : 0);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ECONNRESET;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int rpc_client_read_frame(int fd, uint64_t deadline, bool strict, struct rpc_header *ret,
                          uint8_t **ret_data)
{
	uint8_t hb[RPC_HEADER_SIZE];
	int r = recv_all(fd, hb, sizeof(hb), deadline);
	if (r < 0)
		return r;
	rpc_header_decode(hb, ret);
	if (rpc_header_check(ret, false) < 0 && (strict || ret->length > RPC_MESSAGE_MAX))
		return -EPROTO; /* never read what we would not accept */
	_cleanup_free_ uint8_t *data = malloc(ret->length ? ret->length : 1);
	if (!data)
		return -ENOMEM;
	r = recv_all(fd, data, ret->length, deadline);
	if (r < 0)
		return r;
	*ret_data = TAKE_PTR(data);
	return 0;
}

int rpc_client_call(struct rpc_client *c, const char *service, const char *method,
                    const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                    struct err *ret_status, ProtobufCMessage **ret_out)
{
	uint64_t deadline =
	    c->timeout_ms > 0 ? now_monotonic_ns() + (uint64_t)c->timeout_ms * 1000000ull : 0;
	uint32_t id = c->next_stream;
	_cleanup_free_ uint8_t *req = NULL;
	size_t req_len;

	if (ret_out)
		*ret_out = NULL;
	if (id >= UINT32_MAX - 2)
		return -EOVERFLOW;
	c->next_stream += 2;
	int r = rpc_request_encode(id, 0, service, method, in, c->metadata, c->n_metadata,
	                           deadline ? (int64_t)c->timeout_ms * 1000000 : 0, &req, &req_len);
	if (r < 0)
		return r;
	r = send_all(c->fd, req, req_len, deadline);
	if (r < 0)
		return r;
	for (;;) {
		struct rpc_header h;
		_cleanup_free_ uint8_t *data = NULL;
		r = rpc_client_read_frame(c->fd, deadline, false, &h, &data);
		if (r < 0)
			return r;
		if (h.stream_id != id || h.type != RPC_TYPE_RESPONSE)
			continue; /* a late answer to an earlier call, or stream data */
		r = rpc_response_decode(data, h.length, out_desc, ret_status, ret_out);
		return r < 0 ? -EPROTO : 0;
	}
}
