/* codec: ttrpc on the wire — the 10-byte frame header, the Request and
 * Response messages, gRPC codes. Pure functions over buffers: the server,
 * the client, the unit tests and the fuzzer share them. Every length is
 * checked before anything is allocated for it. */
#include "rpc/rpc-int.h"

#include <stdio.h>
#include <string.h>

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void rpc_header_encode(const struct rpc_header *h, uint8_t out[RPC_HEADER_SIZE])
{
	put_be32(out, h->length);
	put_be32(out + 4, h->stream_id);
	out[8] = h->type;
	out[9] = h->flags;
}

void rpc_header_decode(const uint8_t in[RPC_HEADER_SIZE], struct rpc_header *ret)
{
	*ret = (struct rpc_header){
	    .length = get_be32(in), .stream_id = get_be32(in + 4), .type = in[8], .flags = in[9]};
}

int rpc_header_check(const struct rpc_header *h, bool from_client)
{
	/* ttrpc reserves the first byte (lengths stay under 16 MiB): a set
	 * byte means we are reading garbage, not an oversized message. */
	if (h->length >> 24)
		return -EPROTO;
	if (from_client ? h->type != RPC_TYPE_REQUEST && h->type != RPC_TYPE_DATA
	                : h->type != RPC_TYPE_RESPONSE && h->type != RPC_TYPE_DATA)
		return -EPROTO;
	if (h->length > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	/* Client-initiated streams are odd; servers initiate none (yet). */
	if (h->stream_id == 0 || h->stream_id % 2 != 1)
		return -EBADR;
	uint8_t allowed;
	switch (h->type) {
	case RPC_TYPE_REQUEST:
		if (h->flags == (RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_REMOTE_OPEN))
			return -EBADRQC;
		allowed = RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_REMOTE_OPEN;
		break;
	case RPC_TYPE_DATA:
		allowed = RPC_FLAG_REMOTE_CLOSED | RPC_FLAG_NO_DATA;
		if ((h->flags & RPC_FLAG_NO_DATA) && h->length)
			return -EBADRQC;
		break;
	default:
		allowed = 0;
	}
	return h->flags & ~allowed ? -EBADRQC : 0;
}

/* ---- Request --------------------------------------------------------------- */

static bool name_ok(const char *s, size_t max)
{
	return s && s[0] && strnlen(s, max + 1) <= max;
}

int rpc_request_decode(const uint8_t *data, size_t len, struct rpc_request *ret)
{
	*ret = (struct rpc_request){0};
	if (len > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	Ttrpc__Request *m = ttrpc__request__unpack(NULL, len, data);
	if (!m)
		return -EBADMSG;
	bool ok = name_ok(m->service, RPC_NAME_MAX) && name_ok(m->method, RPC_NAME_MAX) &&
	          m->timeout_nano >= 0 && m->n_metadata <= RPC_METADATA_MAX;
	for (size_t i = 0; ok && i < m->n_metadata; i++)
		ok = name_ok(m->metadata[i]->key, RPC_NAME_MAX) &&
		     strnlen(m->metadata[i]->value, RPC_VALUE_MAX + 1) <= RPC_VALUE_MAX;
	if (!ok) {
		ttrpc__request__free_unpacked(m, NULL);
		return -EBADMSG;
	}
	*ret = (struct rpc_request){
	    .service = m->service,
	    .method = m->method,
	    .payload = m->payload.data,
	    .payload_len = m->payload.len,
	    .timeout_ns = m->timeout_nano,
	    .n_metadata = m->n_metadata,
	    .owned_ = m,
	};
	return 0;
}

void rpc_request_done(struct rpc_request *req)
{
	if (req->owned_)
		ttrpc__request__free_unpacked(req->owned_, NULL);
	*req = (struct rpc_request){0};
}

struct rpc_kv rpc_request_metadata(const struct rpc_request *req, size_t i)
{
	const Ttrpc__Request *m = req->owned_;
	if (!m || i >= m->n_metadata)
		return (struct rpc_kv){NULL, NULL};
	return (struct rpc_kv){m->metadata[i]->key, m->metadata[i]->value};
}

int rpc_request_encode(uint32_t stream_id, uint8_t flags, const char *service, const char *method,
                       const ProtobufCMessage *in, const struct rpc_kv *metadata, size_t n_metadata,
                       int64_t timeout_ns, uint8_t **ret_buf, size_t *ret_len)
{
	if (n_metadata > RPC_METADATA_MAX)
		return -E2BIG;
	Ttrpc__KeyValue kvs[RPC_METADATA_MAX], *kvp[RPC_METADATA_MAX];
	for (size_t i = 0; i < n_metadata; i++) {
		ttrpc__key_value__init(&kvs[i]);
		kvs[i].key = (char *)metadata[i].key;
		kvs[i].value = (char *)metadata[i].value;
		kvp[i] = &kvs[i];
	}
	_cleanup_free_ uint8_t *payload = NULL;
	size_t plen = in ? protobuf_c_message_get_packed_size(in) : 0;
	if (plen > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	if (plen) {
		payload = malloc(plen);
		if (!payload)
			return -ENOMEM;
		protobuf_c_message_pack(in, payload);
	}
	Ttrpc__Request req = TTRPC__REQUEST__INIT;
	req.service = (char *)service;
	req.method = (char *)method;
	req.payload = (ProtobufCBinaryData){.len = plen, .data = payload};
	req.timeout_nano = timeout_ns;
	req.n_metadata = n_metadata;
	req.metadata = n_metadata ? kvp : NULL;
	return rpc_request_pack_frame(&req, stream_id, flags, ret_buf, ret_len);
}

int rpc_request_pack_frame(const Ttrpc__Request *m, uint32_t stream_id, uint8_t flags,
                           uint8_t **ret_buf, size_t *ret_len)
{
	size_t len = ttrpc__request__get_packed_size(m);
	if (len > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	uint8_t *buf = malloc(RPC_HEADER_SIZE + len);
	if (!buf)
		return -ENOMEM;
	struct rpc_header h = {.length = (uint32_t)len,
	                       .stream_id = stream_id,
	                       .type = RPC_TYPE_REQUEST,
	                       .flags = flags};
	rpc_header_encode(&h, buf);
	ttrpc__request__pack(m, buf + RPC_HEADER_SIZE);
	*ret_buf = buf;
	*ret_len = RPC_HEADER_SIZE + len;
	return 0;
}

int rpc_request_frame(const struct rpc_request *req, uint32_t stream_id, uint8_t **ret_buf,
                      size_t *ret_len)
{
	const Ttrpc__Request *m = req->owned_;
	return m ? rpc_request_pack_frame(m, stream_id, 0, ret_buf, ret_len) : -EINVAL;
}

/* ---- Response ---------------------------------------------------------------- */

int rpc_response_decode(const uint8_t *data, size_t len, const ProtobufCMessageDescriptor *out_desc,
                        struct err *ret_status, ProtobufCMessage **ret_out)
{
	if (ret_out)
		*ret_out = NULL;
	*ret_status = (struct err){.code = ERR_INTERNAL};
	if (len > RPC_MESSAGE_MAX)
		return -EMSGSIZE;
	Ttrpc__Response *m = ttrpc__response__unpack(NULL, len, data);
	if (!m)
		return -EBADMSG;
	int r = 0;
	if (m->status) {
		ret_status->code = m->status->code;
		str_copy(ret_status->msg, sizeof(ret_status->msg),
		         m->status->message ? m->status->message : "");
	} else {
		ret_status->code = ERR_OK;
	}
	if (ret_status->code == ERR_OK && out_desc && ret_out) {
		*ret_out =
		    protobuf_c_message_unpack(out_desc, NULL, m->payload.len, m->payload.data);
		if (!*ret_out)
			r = -EBADMSG;
	}
	ttrpc__response__free_unpacked(m, NULL);
	return r;
}

/* Varint and tag helpers for the frames the server writes by hand: the
 * payload is packed once, straight into the output queue. */
static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Status { int32 code = 1; string message = 2; } (negative codes are
 * sign-extended to 10 bytes, as protobuf does for int32). */
static size_t status_size(int code, size_t msg_len)
{
	size_t n = 0;
	if (code)
		n += 1 + varint_size((uint64_t)(int64_t)code);
	if (msg_len)
		n += 1 + varint_size(msg_len) + msg_len;
	return n;
}

size_t rpc_response_frame_size(int code, size_t msg_len, size_t payload_len)
{
	size_t st = status_size(code, msg_len);
	size_t n = 1 + varint_size(st) + st;
	if (payload_len)
		n += 1 + varint_size(payload_len) + payload_len;
	return RPC_HEADER_SIZE + n;
}

void rpc_response_frame_write(uint8_t *out, uint32_t stream_id, int code, const char *msg,
                              size_t msg_len, const ProtobufCMessage *payload, size_t payload_len)
{
	size_t total = rpc_response_frame_size(code, msg_len, payload_len);
	struct rpc_header h = {.length = (uint32_t)(total - RPC_HEADER_SIZE),
	                       .stream_id = stream_id,
	                       .type = RPC_TYPE_RESPONSE};
	rpc_header_encode(&h, out);
	uint8_t *p = out + RPC_HEADER_SIZE;
	*p++ = 0x0a; /* field 1, length-delimited: status */
	p = varint_put(p, status_size(code, msg_len));
	if (code) {
		*p++ = 0x08; /* field 1, varint: code */
		p = varint_put(p, (uint64_t)(int64_t)code);
	}
	if (msg_len) {
		*p++ = 0x12; /* field 2, length-delimited: message */
		p = varint_put(p, msg_len);
		memcpy(p, msg, msg_len);
		p += msg_len;
	}
	if (payload_len) {
		*p++ = 0x12; /* field 2, length-delimited: payload */
		p = varint_put(p, payload_len);
		protobuf_c_message_pack(payload, p);
	}
}
