/* rpc codec: frame headers (every malformed length, stream id, type and
 * flag), Request and Response messages, codes, addresses. */
#include "rpc/rpc-int.h"
#include "unit.h"

static struct rpc_header hdr(uint32_t len, uint32_t id, uint8_t type, uint8_t flags)
{
	return (struct rpc_header){.length = len, .stream_id = id, .type = type, .flags = flags};
}

TEST(rpc_header_roundtrip_big_endian)
{
	uint8_t b[RPC_HEADER_SIZE];
	struct rpc_header h = hdr(0x00010203, 0x04050607, RPC_TYPE_DATA, 0x05), d;
	rpc_header_encode(&h, b);
	static const uint8_t want[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x03, 0x05};
	CHECK(memcmp(b, want, sizeof(want)) == 0);
	rpc_header_decode(b, &d);
	CHECK_EQ(d.length, h.length);
	CHECK_EQ(d.stream_id, h.stream_id);
	CHECK_EQ(d.type, h.type);
	CHECK_EQ(d.flags, h.flags);
}

TEST(rpc_header_lengths)
{
	struct rpc_header h = hdr(0, 1, RPC_TYPE_REQUEST, 0);
	CHECK_EQ(rpc_header_check(&h, true), 0);
	h.length = RPC_MESSAGE_MAX;
	CHECK_EQ(rpc_header_check(&h, true), 0);
	h.length = RPC_MESSAGE_MAX + 1;
	CHECK_EQ(rpc_header_check(&h, true), -EMSGSIZE);
	h.length = 0x00ffffff;
	CHECK_EQ(rpc_header_check(&h, true), -EMSGSIZE);
	/* The reserved first byte set: garbage, not a big message. */
	h.length = 0x01000000;
	CHECK_EQ(rpc_header_check(&h, true), -EPROTO);
	h.length = 0xffffffff;
	CHECK_EQ(rpc_header_check(&h, true), -EPROTO);
	h.length = 0x47455420; /* "GET " */
	CHECK_EQ(rpc_header_check(&h, true), -EPROTO);
}

TEST(rpc_header_stream_ids)
{
	struct rpc_header h = hdr(5, 1, RPC_TYPE_REQUEST, 0);
	CHECK_EQ(rpc_header_check(&h, true), 0);
	h.stream_id = 0xffffffff;
	CHECK_EQ(rpc_header_check(&h, true), 0);
	h.stream_id = 0;
	CHECK_EQ(rpc_header_check(&h, true), -EBADR);
	h.stream_id = 2;
	CHECK_EQ(rpc_header_check(&h, true), -EBADR);
	h.stream_id = 0xfffffffe;
	CHECK_EQ(rpc_header_check(&h, true), -EBADR);
	h = hdr(0, 4, RPC_TYPE_RESPONSE, 0);
	CHECK_EQ(rpc_header_check(&h, false), -EBADR);
}

TEST(rpc_header_types)
{
	/* A server receives requests and data, never responses. */
	for (int t = 0; t < 256; t++) {
		struct rpc_header h = hdr(0, 1, (uint8_t)t, 0);
		int want = t == RPC_TYPE_REQUEST || t == RPC_TYPE_DATA ? 0 : -EPROTO;
		CHECK_EQ(rpc_header_check(&h, true), want);
		want = t == RPC_TYPE_RESPONSE || t == RPC_TYPE_DATA ? 0 : -EPROTO;
		CHECK_EQ(rpc_header_check(&h, false), want);
	}
}

TEST(rpc_header_flags)
{
	for (int f = 0; f < 256; f++) {
		struct rpc_header h = hdr(0, 1, RPC_TYPE_REQUEST, (uint8_t)f);
		CHECK_EQ(rpc_header_check(&h, true), f == 0 || f == 1 || f == 2 ? 0 : -EBADRQC);
		h = hdr(0, 1, RPC_TYPE_DATA, (uint8_t)f);
		CHECK_EQ(rpc_header_check(&h, true),
		         f == 0 || f == 1 || f == 4 || f == 5 ? 0 : -EBADRQC);
		h = hdr(0, 1, RPC_TYPE_RESPONSE, (uint8_t)f);
		CHECK_EQ(rpc_header_check(&h, false), f == 0 ? 0 : -EBADRQC);
	}
	/* no-data with data is a contradiction */
	struct rpc_header h = hdr(3, 1, RPC_TYPE_DATA, RPC_FLAG_NO_DATA);
	CHECK_EQ(rpc_header_check(&h, true), -EBADRQC);
	h.flags = RPC_FLAG_REMOTE_CLOSED;
	CHECK_EQ(rpc_header_check(&h, true), 0);
}

TEST(rpc_header_check_order)
{
	/* Framing errors win over per-stream ones: the stream is garbage. */
	struct rpc_header h = hdr(0x02000000, 2, 9, 0xff);
	CHECK_EQ(rpc_header_check(&h, true), -EPROTO);
	h = hdr(RPC_MESSAGE_MAX + 1, 2, RPC_TYPE_REQUEST, 0xff);
	CHECK_EQ(rpc_header_check(&h, true), -EMSGSIZE);
	h = hdr(1, 2, RPC_TYPE_REQUEST, 0xff);
	CHECK_EQ(rpc_header_check(&h, true), -EBADR);
}

TEST(rpc_request_roundtrip)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	struct rpc_kv md[] = {{"kin-target", "a/b"}, {"trace", "1"}};
	uint8_t *buf;
	size_t len;
	CHECK_EQ(
	    rpc_request_encode(7, 0, "kin.v1.Health", "Check", &in.base, md, 2, 5000, &buf, &len),
	    0);
	struct rpc_header h;
	rpc_header_decode(buf, &h);
	CHECK_EQ(h.length, len - RPC_HEADER_SIZE);
	CHECK_EQ(h.stream_id, 7);
	CHECK_EQ(h.type, RPC_TYPE_REQUEST);
	CHECK_EQ(rpc_header_check(&h, true), 0);
	struct rpc_request req;
	CHECK_EQ(rpc_request_decode(buf + RPC_HEADER_SIZE, h.length, &req), 0);
	CHECK_STR(req.service, "kin.v1.Health");
	CHECK_STR(req.method, "Check");
	CHECK_EQ(req.timeout_ns, 5000);
	CHECK_EQ(req.n_metadata, 2);
	CHECK_STR(rpc_request_metadata(&req, 0).key, "kin-target");
	CHECK_STR(rpc_request_metadata(&req, 1).value, "1");
	CHECK(rpc_request_metadata(&req, 2).key == NULL);
	rpc_request_done(&req);
	free(buf);
}

static int decode_bytes(const uint8_t *b, size_t n)
{
	struct rpc_request req;
	int r = rpc_request_decode(b, n, &req);
	rpc_request_done(&req);
	return r;
}

static int decode_req(const char *service, const char *method, int64_t timeout, size_t n_md,
                      const char *md_value)
{
	struct rpc_kv md[RPC_METADATA_MAX + 1];
	for (size_t i = 0; i < n_md; i++)
		md[i] = (struct rpc_kv){"k", md_value};
	uint8_t *buf;
	size_t len;
	/* encode refuses more than the max: build such a Request by hand */
	Ttrpc__Request req = TTRPC__REQUEST__INIT;
	Ttrpc__KeyValue kvs[RPC_METADATA_MAX + 1], *kvp[RPC_METADATA_MAX + 1];
	for (size_t i = 0; i < n_md; i++) {
		ttrpc__key_value__init(&kvs[i]);
		kvs[i].key = (char *)md[i].key;
		kvs[i].value = (char *)md[i].value;
		kvp[i] = &kvs[i];
	}
	req.service = (char *)service;
	req.method = (char *)method;
	req.timeout_nano = timeout;
	req.n_metadata = n_md;
	req.metadata = kvp;
	len = ttrpc__request__get_packed_size(&req);
	buf = malloc(len + 1);
	ttrpc__request__pack(&req, buf);
	int r = decode_bytes(buf, len);
	free(buf);
	return r;
}

TEST(rpc_request_malformed)
{
	char big[RPC_NAME_MAX + 2];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	char bigval[RPC_VALUE_MAX + 2];
	memset(bigval, 'v', sizeof(bigval) - 1);
	bigval[sizeof(bigval) - 1] = '\0';

	CHECK_EQ(decode_req("s", "m", 0, 0, ""), 0);
	CHECK_EQ(decode_req("", "m", 0, 0, ""), -EBADMSG);
	CHECK_EQ(decode_req("s", "", 0, 0, ""), -EBADMSG);
	CHECK_EQ(decode_req(big, "m", 0, 0, ""), -EBADMSG);
	CHECK_EQ(decode_req("s", big, 0, 0, ""), -EBADMSG);
	CHECK_EQ(decode_req("s", "m", -1, 0, ""), -EBADMSG);
	CHECK_EQ(decode_req("s", "m", 0, RPC_METADATA_MAX, "v"), 0);
	CHECK_EQ(decode_req("s", "m", 0, RPC_METADATA_MAX + 1, "v"), -EBADMSG);
	CHECK_EQ(decode_req("s", "m", 0, 1, bigval), -EBADMSG);
	big[RPC_NAME_MAX] = '\0';
	CHECK_EQ(decode_req(big, big, 0, 0, ""), 0);

	/* not protobuf at all, truncated varints and lengths, wrong wire types */
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t trunc_len[] = {0x0a, 0x05, 'a', 'b'};
	static const uint8_t wrong_type[] = {0x08, 0x01}; /* service as varint */
	static const uint8_t group[] = {0x0b, 0x0c};
	CHECK_EQ(decode_bytes(garbage, sizeof(garbage)), -EBADMSG);
	CHECK_EQ(decode_bytes(trunc_len, sizeof(trunc_len)), -EBADMSG);
	CHECK_EQ(decode_bytes(wrong_type, sizeof(wrong_type)), -EBADMSG);
	CHECK_EQ(decode_bytes(group, sizeof(group)), -EBADMSG);
	CHECK_EQ(decode_bytes((const uint8_t *)"", 0), -EBADMSG); /* no names */
}

TEST(rpc_response_roundtrip)
{
	Kin__V1__VersionResponse v = KIN__V1__VERSION_RESPONSE__INIT;
	v.version = "9.9";
	v.role = "zone";
	v.uptime_ns = 123456789;
	size_t plen = protobuf_c_message_get_packed_size(&v.base);
	size_t n = rpc_response_frame_size(ERR_OK, 0, plen);
	uint8_t *buf = malloc(n);
	rpc_response_frame_write(buf, 3, ERR_OK, NULL, 0, &v.base, plen);
	struct rpc_header h;
	rpc_header_decode(buf, &h);
	CHECK_EQ(h.length + RPC_HEADER_SIZE, n);
	CHECK_EQ(h.stream_id, 3);
	CHECK_EQ(rpc_header_check(&h, false), 0);
	struct err st;
	ProtobufCMessage *out;
	CHECK_EQ(rpc_response_decode(buf + RPC_HEADER_SIZE, h.length,
	                             &kin__v1__version_response__descriptor, &st, &out),
	         0);
	CHECK_EQ(st.code, ERR_OK);
	CHECK(out != NULL);
	if (out) {
		Kin__V1__VersionResponse *m = (Kin__V1__VersionResponse *)out;
		CHECK_STR(m->version, "9.9");
		CHECK_STR(m->role, "zone");
		CHECK_EQ(m->uptime_ns, 123456789);
		protobuf_c_message_free_unpacked(out, NULL);
	}
	free(buf);

	/* An error, and a negative code (int32 sign extension). */
	const int codes[] = {ERR_NOT_FOUND, -5, ERR_CODE_MAX, 1000000};
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++) {
		const char *msg = "cell \"web\": memory.max: Invalid argument";
		n = rpc_response_frame_size(codes[i], strlen(msg), 0);
		buf = malloc(n);
		rpc_response_frame_write(buf, 5, codes[i], msg, strlen(msg), NULL, 0);
		rpc_header_decode(buf, &h);
		CHECK_EQ(rpc_response_decode(buf + RPC_HEADER_SIZE, h.length, NULL, &st, NULL), 0);
		CHECK_EQ(st.code, codes[i]);
		CHECK_STR(st.msg, msg);
		free(buf);
	}
	/* A bad payload under OK is an error for the caller. */
	static const uint8_t bad_payload[] = {0x0a, 0x00, 0x12, 0x02, 0xff, 0xff};
	CHECK_EQ(rpc_response_decode(bad_payload, sizeof(bad_payload),
	                             &kin__v1__version_response__descriptor, &st, &out),
	         -EBADMSG);
	CHECK(out == NULL);
	static const uint8_t garbage[] = {0x0a, 0x7f};
	CHECK_EQ(rpc_response_decode(garbage, sizeof(garbage), NULL, &st, NULL), -EBADMSG);
	/* No status at all: OK (an older peer may omit it). */
	CHECK_EQ(rpc_response_decode((const uint8_t *)"", 0, NULL, &st, NULL), 0);
	CHECK_EQ(st.code, ERR_OK);
}

TEST(rpc_codes)
{
	CHECK_STR(err_code_name(ERR_OK), "OK");
	CHECK_STR(err_code_name(ERR_INVALID_ARGUMENT), "INVALID_ARGUMENT");
	CHECK_STR(err_code_name(ERR_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
	CHECK_STR(err_code_name(ERR_UNAUTHENTICATED), "UNAUTHENTICATED");
	CHECK_STR(err_code_name(99), "CODE_99");
	CHECK_STR(err_code_name(-1), "CODE_-1");
	CHECK_EQ(err_code_from_errno(0), ERR_OK);
	CHECK_EQ(err_code_from_errno(-EINVAL), ERR_INVALID_ARGUMENT);
	CHECK_EQ(err_code_from_errno(-ENOENT), ERR_NOT_FOUND);
	CHECK_EQ(err_code_from_errno(-EEXIST), ERR_ALREADY_EXISTS);
	CHECK_EQ(err_code_from_errno(-EBUSY), ERR_FAILED_PRECONDITION);
	CHECK_EQ(err_code_from_errno(-ENOMEM), ERR_RESOURCE_EXHAUSTED);
	CHECK_EQ(err_code_from_errno(-EPERM), ERR_PERMISSION_DENIED);
	CHECK_EQ(err_code_from_errno(-EOPNOTSUPP), ERR_UNIMPLEMENTED);
	CHECK_EQ(err_code_from_errno(-ECONNREFUSED), ERR_UNAVAILABLE);
	CHECK_EQ(err_code_from_errno(-EIO), ERR_INTERNAL);
	CHECK_EQ(err_code_from_errno(EINVAL), ERR_INVALID_ARGUMENT);
}

TEST(rpc_addresses)
{
	struct rpc_address a;
	CHECK_EQ(rpc_address_parse("/run/kin/kin.sock", &a), 0);
	CHECK_EQ(a.transport, RPC_TRANSPORT_UNIX);
	CHECK_STR(a.path, "/run/kin/kin.sock");
	CHECK_EQ(rpc_address_parse("unix:/tmp/x.sock", &a), 0);
	CHECK_STR(a.path, "/tmp/x.sock");
	CHECK_EQ(rpc_address_parse("./rel.sock", &a), 0);
	CHECK_EQ(rpc_address_parse("vsock:2:1024", &a), 0);
	CHECK_EQ(a.transport, RPC_TRANSPORT_VSOCK);
	CHECK_EQ(a.cid, 2);
	CHECK_EQ(a.port, 1024);
	CHECK_EQ(rpc_address_parse("vsock:4294967295:1", &a), 0);
	const char *bad[] = {"",
	                     "unix:",
	                     "vsock:",
	                     "vsock:2",
	                     "vsock::1",
	                     "vsock:2:",
	                     "vsock:x:1",
	                     "vsock:2:1:3",
	                     "vsock:-1:2",
	                     "tcp:1.2.3.4:5",
	                     "vsock:99999999999:1"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (rpc_address_parse(bad[i], &a) != -EINVAL) {
			printf("    address '%s' accepted\n", bad[i]);
			unit_failures++;
		}
	char longpath[200];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK_EQ(rpc_address_parse(longpath, &a), -ENAMETOOLONG);
}

TEST(rpc_id_lists)
{
	uint32_t ids[4];
	size_t n;
	CHECK_EQ(rpc_parse_id_list("1000", ids, 4, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(ids[0], 1000);
	CHECK_EQ(rpc_parse_id_list("0,1,2,3", ids, 4, &n), 0);
	CHECK_EQ(n, 4);
	CHECK_EQ(ids[3], 3);
	const char *bad[] = {"",
	                     ",",
	                     "1,",
	                     ",1",
	                     "1,,2",
	                     "a",
	                     "-1",
	                     "1 ",
	                     "4294967295",
	                     "0,1,2,3,4",
	                     "99999999999999999999"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (rpc_parse_id_list(bad[i], ids, 4, &n) != -EINVAL) {
			printf("    id list '%s' accepted\n", bad[i]);
			unit_failures++;
		}
}
