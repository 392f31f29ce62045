/* cells-hostile: a hostile client of a running kin's Cells, Exec and Events
 * services, for tests/ns/cells-rpc.test.sh.
 *   cells-hostile SOCKET KIN_PID
 * Sends every method (a) random bytes and mutated valid messages as the
 * payload, (b) valid messages with extreme values: empty, 64 KiB, '/',
 * '..' and garbage strings, paths past the depth limit, 10^6 env entries,
 * huge and negative numbers, unknown enum values. Each answer must be a
 * clean status (no INTERNAL, UNKNOWN, no connection cut, no silence on a
 * unary call), the extreme ones the code named for them; after each batch
 * Health must answer and kin's fd count must be back to where it was.
 * Prints "ok NAME" or "bad NAME WHY" per check; exits 0 if all were ok.
 * Deterministic (a fixed seed), so a failure replays. */
#include "api/cells-int.h"
#include "rpc/rpc-int.h"

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static const char *sock_path;
static pid_t kin_pid;
static int failures;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void verdict(bool good, const char *name, const char *fmt, ...) _printf_(3, 4);
static void verdict(bool good, const char *name, const char *fmt, ...)
{
	if (good) {
		printf("ok %s\n", name);
	} else {
		va_list ap;
		printf("bad %s ", name);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
		failures++;
	}
	fflush(stdout);
}

static int dial(void)
{
	struct rpc_address a;
	if (rpc_address_parse(sock_path, &a) < 0)
		return -EINVAL;
	return rpc_address_connect(&a, 5000);
}

static int count_fds(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)kin_pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- one connection, calls one after the other -------------------------------------- */

struct conn {
	int fd;
	uint32_t next_id;
	unsigned open_streams;
};

static int send_request(struct conn *c, const char *service, const char *method,
                        const uint8_t *payload, size_t len, uint32_t *ret_id)
{
	Ttrpc__Request req = TTRPC__REQUEST__INIT;
	req.service = (char *)service;
	req.method = (char *)method;
	req.payload.data = (uint8_t *)payload;
	req.payload.len = len;
	size_t body = ttrpc__request__get_packed_size(&req);
	_cleanup_free_ uint8_t *buf = malloc(RPC_HEADER_SIZE + body);
	if (!buf)
		return -ENOMEM;
	struct rpc_header h = {.length = (uint32_t)body, .stream_id = c->next_id, .type = 1};
	rpc_header_encode(&h, buf);
	ttrpc__request__pack(&req, buf + RPC_HEADER_SIZE);
	*ret_id = c->next_id;
	c->next_id += 2;
	for (size_t off = 0, n = RPC_HEADER_SIZE + body; off < n;) {
		ssize_t w = send(c->fd, buf + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		off += (size_t)w;
	}
	return 0;
}

static int recv_full(int fd, uint8_t *buf, size_t len, int timeout_ms)
{
	while (len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0)
			return -errno;
		ssize_t n = recv(fd, buf, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The answer to call id: its status code, ERR_OK for a stream that ended
 * well, -1 for a stream still open after wait_ms (streams only), or
 * -errno when the connection failed or a unary call had no answer. */
static int await(struct conn *c, uint32_t id, bool stream, int wait_ms, char *msg, size_t size)
{
	msg[0] = '\0';
	for (;;) {
		uint8_t hb[RPC_HEADER_SIZE];
		struct rpc_header h;
		/* A unary answer comes at once (nothing here waits on a process). */
		int r = recv_full(c->fd, hb, sizeof(hb), stream ? wait_ms : 10000);
		if (r == -ETIMEDOUT && stream) {
			c->open_streams++;
			return -1;
		}
		if (r < 0)
			return r;
		rpc_header_decode(hb, &h);
		if (rpc_header_check(&h, false) < 0)
			return -EPROTO;
		_cleanup_free_ uint8_t *data = malloc(h.length + 1);
		if (!data || recv_full(c->fd, data, h.length, 10000) < 0)
			return -EIO;
		if (h.stream_id != id)
			continue; /* a stream left open earlier */
		if (h.type == RPC_TYPE_DATA) {
			if (h.flags & RPC_FLAG_REMOTE_CLOSED)
				return ERR_OK;
			continue;
		}
		struct err st;
		if (rpc_response_decode(data, h.length, NULL, &st, NULL) < 0)
			return -EBADMSG;
		snprintf(msg, size, "%s", st.msg);
		return st.code;
	}
}

static bool conn_open(struct conn *c)
{
	c->fd = dial();
	c->next_id = 1;
	c->open_streams = 0;
	return c->fd >= 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* One call on c: the code (see await). Reconnects once streams pile up. */
static int call_raw(struct conn *c, const struct api_cells_req_method *m, const uint8_t *payload,
                    size_t len, char *msg, size_t size)
{
	if (c->open_streams >= 32) {
		conn_close(c);
		if (!conn_open(c))
			return -ECONNREFUSED;
	}
	uint32_t id;
	bool stream = !strcmp(m->method, "Logs") || !strcmp(m->method, "Subscribe");
	int r = send_request(c, m->service, m->method, payload, len, &id);
	if (r < 0)
		return r;
	return await(c, id, stream, 100, msg, size);
}

static const struct api_cells_req_method *method(const char *service, const char *name)
{
	const struct api_cells_req_method *methods;
	size_t n = api_cells_req_methods(&methods);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(methods[i].service + 7, service) && !strcmp(methods[i].method, name))
			return &methods[i];
	return NULL;
}

static int call_msg(struct conn *c, const char *service, const char *name,
                    const ProtobufCMessage *in, char *msg, size_t size)
{
	const struct api_cells_req_method *m = method(service, name);
	size_t len = protobuf_c_message_get_packed_size(in);
	_cleanup_free_ uint8_t *buf = malloc(len + 1);
	if (!m || !buf)
		return -ENOMEM;
	protobuf_c_message_pack(in, buf);
	return call_raw(c, m, buf, len, msg, size);
}

/* ---- checks after a batch ------------------------------------------------------------- */

static bool health(void)
{
	struct rpc_client *cl;
	if (rpc_client_connect(sock_path, 5000, &cl) < 0)
		return false;
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	struct err st;
	ProtobufCMessage *out = NULL;
	int r = rpc_client_call(cl, "kin.v1.Health", "Check", &in.base,
	                        &kin__v1__check_response__descriptor, &st, &out);
	rpc_client_free(cl);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	return r == 0 && st.code == ERR_OK;
}

/* kin closes a connection once it sees the end: give it a moment. */
static int fds_settled(int baseline)
{
	int n = count_fds();
	for (int i = 0; i < 100 && n > baseline; i++) {
		usleep(20000);
		n = count_fds();
	}
	return n;
}

static void after_batch(const char *batch, int baseline)
{
	char name[96];
	snprintf(name, sizeof(name), "%s_then_health", batch);
	verdict(health(), name, "Health did not answer SERVING after the batch");
	int n = fds_settled(baseline);
	snprintf(name, sizeof(name), "%s_no_fd_growth", batch);
	verdict(n >= 0 && n <= baseline, name, "kin had %d fds before, %d after", baseline, n);
}

/* ---- (a) random and mutated payloads ------------------------------------------------- */

static bool clean_code(int code)
{
	/* Anything a well-behaved service may say about a bad request; OK and
	 * ALREADY_EXISTS when the bytes happen to make a valid one. */
	return code == -1 || code == ERR_OK || code == ERR_CANCELLED ||
	       code == ERR_INVALID_ARGUMENT || code == ERR_NOT_FOUND ||
	       code == ERR_ALREADY_EXISTS || code == ERR_PERMISSION_DENIED ||
	       code == ERR_RESOURCE_EXHAUSTED || code == ERR_FAILED_PRECONDITION;
}

/* A valid message of m's input type, for mutation: every string field a
 * short name, so flipped bytes land in names, tags and lengths. */
static size_t seed_message(const struct api_cells_req_method *m, uint8_t *buf, size_t size)
{
	ProtobufCMessage *msg = calloc(1, m->input->sizeof_message);
	if (!msg)
		return 0;
	m->input->message_init(msg);
	for (unsigned i = 0; i < m->input->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &m->input->fields[i];
		if (f->type == PROTOBUF_C_TYPE_STRING && f->label != PROTOBUF_C_LABEL_REPEATED)
			*(const char **)((char *)msg + f->offset) = "hostile-x";
	}
	size_t len = protobuf_c_message_get_packed_size(msg);
	if (len <= size)
		protobuf_c_message_pack(msg, buf);
	else
		len = 0;
	free(msg);
	return len;
}

static void batch_random(int per_method)
{
	int baseline = count_fds();
	struct conn c;
	if (!conn_open(&c)) {
		verdict(false, "random_payloads", "cannot connect");
		return;
	}
	uint8_t buf[2048], seed[256];
	char msg[ERR_MSG_MAX], first_bad[768] = "";
	int calls = 0, bad = 0, decoded = 0;
	const struct api_cells_req_method *methods;
	size_t n_methods = api_cells_req_methods(&methods);
	for (size_t k = 0; k < n_methods; k++) {
		const struct api_cells_req_method *m = &methods[k];
		size_t seed_len = seed_message(m, seed, sizeof(seed));
		for (int i = 0; i < per_method; i++) {
			size_t len;
			if (i % 2 == 0 || !seed_len) {
				len = rnd() % (i % 8 == 1 ? sizeof(buf) : 48);
				for (size_t j = 0; j < len; j++)
					buf[j] = (uint8_t)rnd();
			} else {
				len = seed_len;
				memcpy(buf, seed, len);
				for (int flips = 1 + (int)(rnd() % 4); flips--;)
					buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
			}
			int code = call_raw(&c, m, buf, len, msg, sizeof(msg));
			calls++;
			decoded += code != ERR_INVALID_ARGUMENT || !strstr(msg, "is not a valid");
			if (!clean_code(code)) {
				if (!bad++)
					snprintf(first_bad, sizeof(first_bad),
					         "%s/%s: code %d (%s)", m->service, m->method, code,
					         msg);
				if (code < -1 && !conn_open(&c))
					break;
			}
		}
	}
	conn_close(&c);
	printf("# random: %d calls, %d decoded as messages\n", calls, decoded);
	verdict(!bad && calls > 0, "random_payloads_clean_status", "%d of %d: first %s", bad, calls,
	        first_bad);
	after_batch("random_payloads", baseline);
}

/* ---- (b) extreme values ---------------------------------------------------------------- */

static char *big_string(size_t n, char ch)
{
	char *s = malloc(n + 1);
	if (s) {
		memset(s, ch, n);
		s[n] = '\0';
	}
	return s;
}

static char *garbage_string(size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		s[i] = (char)(1 + rnd() % 255); /* no NUL */
	s[n] = '\0';
	return s;
}

static char *deep_path(int depth)
{
	char *s = malloc((size_t)depth * 2 + 1), *p = s;
	for (int i = 0; s && i < depth; i++)
		p += sprintf(p, i ? "/d" : "d");
	return s;
}

struct expect {
	struct conn *c;
	int bad, calls;
	char first_bad[768];
};

/* One extreme call: the code must be one of want (a 0-terminated list
 * after the first, which may itself be ERR_OK). */
static void expect(struct expect *e, const char *what, const char *service, const char *name,
                   const ProtobufCMessage *in, int want1, int want2)
{
	char msg[ERR_MSG_MAX];
	int code = call_msg(e->c, service, name, in, msg, sizeof(msg));
	e->calls++;
	if (code == want1 || (want2 && code == want2))
		return;
	if (!e->bad++)
		snprintf(e->first_bad, sizeof(e->first_bad), "%s/%s %s: code %d (%s), want %d/%d",
		         service, name, what, code, msg, want1, want2);
	printf("# %s/%s %s: code %d (%.200s), want %d/%d\n", service, name, what, code, msg, want1,
	       want2);
	if (code < -1) {
		conn_close(e->c);
		conn_open(e->c);
	}
}

#define INVALID   ERR_INVALID_ARGUMENT
#define EXHAUSTED ERR_RESOURCE_EXHAUSTED

static void bad_paths_everywhere(struct expect *e, char *const *paths, const char *const *what,
                                 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		Kin__V1__CreateCellRequest cr = KIN__V1__CREATE_CELL_REQUEST__INIT;
		cr.path = paths[i];
		expect(e, what[i], "Cells", "Create", &cr.base, INVALID, 0);
		expect(e, what[i], "Cells", "Update", &cr.base, INVALID, 0);
		Kin__V1__CellRequest q = KIN__V1__CELL_REQUEST__INIT;
		q.path = paths[i];
		static const char *const cell_methods[] = {"Show", "Freeze", "Thaw", "Kill"};
		for (size_t k = 0; k < ARRAY_SIZE(cell_methods); k++)
			expect(e, what[i], "Cells", cell_methods[k], &q.base, INVALID, 0);
		Kin__V1__DeleteCellRequest d = KIN__V1__DELETE_CELL_REQUEST__INIT;
		d.path = paths[i];
		d.force = true;
		expect(e, what[i], "Cells", "Delete", &d.base, INVALID, 0);
		Kin__V1__ListCellsRequest l = KIN__V1__LIST_CELLS_REQUEST__INIT;
		l.path = paths[i];
		if (paths[i][0]) /* "" lists every cell */
			expect(e, what[i], "Cells", "List", &l.base, INVALID, 0);
		Kin__V1__EventsRequest ev = KIN__V1__EVENTS_REQUEST__INIT;
		ev.cell = paths[i];
		if (paths[i][0]) /* "" subscribes to all */
			expect(e, what[i], "Events", "Subscribe", &ev.base, INVALID, 0);
		/* Exec: the cell, then the name, is what is wrong. */
		Kin__V1__ExecRequest x = KIN__V1__EXEC_REQUEST__INIT;
		x.cell = paths[i];
		x.name = "x";
		static const char *const exec_methods[] = {"Wait", "Status", "Delete"};
		for (size_t k = 0; k < ARRAY_SIZE(exec_methods); k++)
			expect(e, what[i], "Exec", exec_methods[k], &x.base, INVALID, 0);
		x.cell = "hostile";
		x.name = paths[i];
		for (size_t k = 0; k < ARRAY_SIZE(exec_methods); k++)
			expect(e, what[i], "Exec", exec_methods[k], &x.base, INVALID, 0);
		Kin__V1__SignalRequest sg = KIN__V1__SIGNAL_REQUEST__INIT;
		sg.cell = "hostile";
		sg.name = paths[i];
		sg.signal = 15;
		expect(e, what[i], "Exec", "Signal", &sg.base, INVALID, 0);
		Kin__V1__StopRequest sp = KIN__V1__STOP_REQUEST__INIT;
		sp.cell = paths[i];
		sp.name = "x";
		expect(e, what[i], "Exec", "Stop", &sp.base, INVALID, 0);
		Kin__V1__LogsRequest lg = KIN__V1__LOGS_REQUEST__INIT;
		lg.cell = "hostile";
		lg.name = paths[i];
		lg.follow = true;
		expect(e, what[i], "Exec", "Logs", &lg.base, INVALID, 0);
		Kin__V1__StdinRequest si = KIN__V1__STDIN_REQUEST__INIT;
		si.cell = paths[i];
		si.name = "x";
		expect(e, what[i], "Exec", "Stdin", &si.base, INVALID, 0);
		Kin__V1__ListExecRequest le = KIN__V1__LIST_EXEC_REQUEST__INIT;
		le.cell = paths[i];
		if (paths[i][0])
			expect(e, what[i], "Exec", "List", &le.base, INVALID, 0);
		Kin__V1__ExecSpec spec = KIN__V1__EXEC_SPEC__INIT;
		char *argv[] = {"/bin/true"};
		spec.argv = argv;
		spec.n_argv = 1;
		Kin__V1__StartRequest st = KIN__V1__START_REQUEST__INIT;
		st.cell = paths[i];
		st.name = "x";
		st.spec = &spec;
		expect(e, what[i], "Exec", "Start", &st.base, INVALID, 0);
		st.cell = "hostile";
		st.name = paths[i];
		expect(e, what[i], "Exec", "Start", &st.base, INVALID, 0);
	}
}

/* Start in cell "hostile" with one thing wrong in an otherwise good spec. */
static void bad_spec(struct expect *e, const char *what, Kin__V1__ExecSpec *spec, int want1,
                     int want2)
{
	Kin__V1__StartRequest st = KIN__V1__START_REQUEST__INIT;
	st.cell = "hostile";
	st.name = "bad";
	st.spec = spec;
	expect(e, what, "Exec", "Start", &st.base, want1, want2);
}

static void spec_init(Kin__V1__ExecSpec *spec)
{
	static char *argv[] = {"/bin/true"};
	kin__v1__exec_spec__init(spec);
	spec->argv = argv;
	spec->n_argv = 1;
}

static void bad_specs(struct expect *e, char *big)
{
	Kin__V1__ExecSpec s;
	spec_init(&s);
	s.n_argv = 0;
	bad_spec(e, "no argv", &s, INVALID, 0);
	bad_spec(e, "no spec", NULL, INVALID, 0);

	char **many = calloc(1000000, sizeof(char *));
	for (size_t i = 0; many && i < 1000000; i++)
		many[i] = "";
	spec_init(&s);
	s.env = many;
	s.n_env = 1000000;
	bad_spec(e, "10^6 env entries", &s, INVALID, EXHAUSTED);
	spec_init(&s);
	s.argv = many;
	s.n_argv = 257;
	bad_spec(e, "257 argv", &s, INVALID, EXHAUSTED);
	char *huge_argv[] = {big, big, big};
	spec_init(&s);
	s.argv = huge_argv;
	s.n_argv = 3;
	bad_spec(e, "192 KiB of argv", &s, INVALID, EXHAUSTED);
	free(many);

	char *bad_env[] = {"=x"};
	spec_init(&s);
	s.env = bad_env;
	s.n_env = 1;
	bad_spec(e, "env without a name", &s, INVALID, 0);
	uint32_t groups[33] = {0};
	spec_init(&s);
	s.groups = groups;
	s.n_groups = 33;
	bad_spec(e, "33 groups", &s, INVALID, 0);
	spec_init(&s);
	s.uid = UINT32_MAX;
	bad_spec(e, "uid 2^32-1 (setresuid's keep-as-is)", &s, INVALID, 0);
	spec_init(&s);
	s.gid = UINT32_MAX;
	bad_spec(e, "gid 2^32-1", &s, INVALID, 0);
	uint32_t neg_group[] = {UINT32_MAX};
	spec_init(&s);
	s.groups = neg_group;
	s.n_groups = 1;
	bad_spec(e, "group 2^32-1", &s, INVALID, 0);

	struct {
		const char *what;
		size_t off; /* a string field of ExecSpec */
		const char *value;
	} strs[] = {
	    {"umask 20 digits", offsetof(Kin__V1__ExecSpec, umask), "77777777777777777777"},
	    {"umask -1", offsetof(Kin__V1__ExecSpec, umask), "-1"},
	    {"64 KiB caps", offsetof(Kin__V1__ExecSpec, caps), big},
	    {"64 KiB ambient", offsetof(Kin__V1__ExecSpec, ambient), big},
	    {"64 KiB namespaces", offsetof(Kin__V1__ExecSpec, namespaces), big},
	    {"64 KiB seccomp", offsetof(Kin__V1__ExecSpec, seccomp), big},
	    {"64 KiB restart", offsetof(Kin__V1__ExecSpec, restart), big},
	    {"relative cwd", offsetof(Kin__V1__ExecSpec, cwd), "../.."},
	    {"relative root", offsetof(Kin__V1__ExecSpec, root), "x/.."},
	    {"hostname without uts", offsetof(Kin__V1__ExecSpec, hostname), "h"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++) {
		spec_init(&s);
		*(const char **)((char *)&s + strs[i].off) = strs[i].value;
		bad_spec(e, strs[i].what, &s, INVALID, 0);
	}
	spec_init(&s);
	s.namespaces = "uts";
	s.hostname = big;
	bad_spec(e, "64 KiB hostname", &s, INVALID, 0);
	char *rl[] = {"nofile=99999999999999999999999:1"};
	spec_init(&s);
	s.rlimits = rl;
	s.n_rlimits = 1;
	bad_spec(e, "rlimit past 2^64", &s, INVALID, 0);
	char *rl2[] = {"nofile=10:5"};
	s.rlimits = rl2;
	bad_spec(e, "rlimit soft above hard", &s, INVALID, 0);
	spec_init(&s);
	s.log_bytes = UINT64_MAX;
	bad_spec(e, "log_bytes 2^64-1", &s, INVALID, 0);
	spec_init(&s);
	s.backoff_base_ms = UINT64_MAX;
	s.backoff_cap_ms = UINT64_MAX;
	bad_spec(e, "backoff 2^64-1", &s, INVALID, 0);
	Kin__V1__IdMap map = KIN__V1__ID_MAP__INIT, *maps[9];
	map.inside = UINT32_MAX;
	map.outside = 0;
	map.count = UINT32_MAX;
	for (int i = 0; i < 9; i++)
		maps[i] = &map;
	spec_init(&s);
	s.namespaces = "user";
	s.uid_map = maps;
	s.n_uid_map = 1;
	bad_spec(e, "id map past 2^32", &s, INVALID, 0);
	s.n_uid_map = 9;
	bad_spec(e, "9 id-map lines", &s, INVALID, 0);
}

static void bad_numbers(struct expect *e)
{
	static const int32_t sigs[] = {0, -1, 65, INT32_MIN, INT32_MAX};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		Kin__V1__SignalRequest sg = KIN__V1__SIGNAL_REQUEST__INIT;
		sg.cell = "hostile";
		sg.name = "x";
		sg.signal = sigs[i];
		expect(e, "signal out of range", "Exec", "Signal", &sg.base, INVALID, 0);
	}
	Kin__V1__StopRequest sp = KIN__V1__STOP_REQUEST__INIT;
	sp.cell = "hostile";
	sp.name = "x";
	sp.grace_ms = UINT64_MAX;
	expect(e, "grace 2^64-1", "Exec", "Stop", &sp.base, INVALID, 0);
	static const int streams[] = {3, 99, -1, INT32_MIN};
	for (size_t i = 0; i < ARRAY_SIZE(streams); i++) {
		Kin__V1__LogsRequest lg = KIN__V1__LOGS_REQUEST__INIT;
		lg.cell = "hostile";
		lg.name = "x";
		lg.stream = (Kin__V1__LogStream)streams[i];
		expect(e, "unknown log stream", "Exec", "Logs", &lg.base, INVALID, 0);
	}
	/* Not there: NOT_FOUND, whatever the numbers. */
	sp.grace_ms = 1;
	expect(e, "missing exec", "Exec", "Stop", &sp.base, ERR_NOT_FOUND, 0);
	Kin__V1__StdinRequest si = KIN__V1__STDIN_REQUEST__INIT;
	_cleanup_free_ uint8_t *data = calloc(1, 3u << 20);
	si.cell = "hostile";
	si.name = "x";
	si.data.data = data;
	si.data.len = data ? 3u << 20 : 0;
	si.close = true;
	expect(e, "3 MiB of stdin", "Exec", "Stdin", &si.base, ERR_NOT_FOUND, 0);
}

static void batch_extreme(void)
{
	int baseline = count_fds();
	struct conn c;
	struct expect e = {.c = &c};
	if (!conn_open(&c)) {
		verdict(false, "extreme_values", "cannot connect");
		return;
	}
	/* A cell to aim at, so the checks past the cell are reached. */
	Kin__V1__CreateCellRequest cr = KIN__V1__CREATE_CELL_REQUEST__INIT;
	cr.path = "hostile";
	char msg[ERR_MSG_MAX];
	int code = call_msg(&c, "Cells", "Create", &cr.base, msg, sizeof(msg));
	if (code != ERR_OK && code != ERR_ALREADY_EXISTS) {
		verdict(false, "extreme_values", "cell hostile: code %d (%s)", code, msg);
		conn_close(&c);
		return;
	}
	_cleanup_free_ char *k64 = big_string(64 * 1024, 'a');
	_cleanup_free_ char *garbage = garbage_string(4096);
	_cleanup_free_ char *deep = deep_path(CELLS_DEPTH_MAX + 1);
	_cleanup_free_ char *very_deep = deep_path(20000);
	char *paths[] = {"",       k64,    "a/../b",  "..",    ".",  "/abs",
	                 "trail/", "a//b", "sl/ash/", garbage, deep, very_deep};
	const char *what[] = {"empty",  "64 KiB", "a/../b",  "..",      ".",        "/abs",
	                      "trail/", "a//b",   "sl/ash/", "garbage", "depth 17", "depth 20000"};
	bad_paths_everywhere(&e, paths, what, ARRAY_SIZE(paths));
	bad_specs(&e, k64);
	bad_numbers(&e);

	/* Limits: too many, a 64 KiB key, garbage values, huge numbers. */
	Kin__V1__Limit lim = KIN__V1__LIMIT__INIT, *lims[1000];
	lim.key = "pids.max";
	lim.value = "10";
	for (int i = 0; i < 1000; i++)
		lims[i] = &lim;
	cr.path = "hostile-lim";
	cr.limits = lims;
	cr.n_limits = 1000;
	expect(&e, "1000 limits", "Cells", "Create", &cr.base, INVALID, 0);
	cr.n_limits = 1;
	static const struct {
		const char *key, *value;
	} kv[] = {
	    {"memory.max", "99999999999999999999999"},
	    {"memory.max", "-1"},
	    {"cpu.max", "1 0"},
	    {"cpu.weight", "0"},
	    {"pids.max", "18446744073709551615"},
	    {"cpuset.cpus", "0-99999999999"},
	    {"no.such", "1"},
	    {"", ""},
	};
	for (size_t i = 0; i < ARRAY_SIZE(kv); i++) {
		lim.key = (char *)kv[i].key;
		lim.value = (char *)kv[i].value;
		expect(&e, kv[i].key, "Cells", "Create", &cr.base, INVALID, 0);
	}
	lim.key = k64;
	lim.value = garbage;
	expect(&e, "64 KiB key", "Cells", "Create", &cr.base, INVALID, 0);
	lim.key = "memory.max";
	expect(&e, "garbage value", "Cells", "Create", &cr.base, INVALID, 0);
	cr.path = "hostile";
	expect(&e, "garbage value (update)", "Cells", "Update", &cr.base, INVALID, 0);

	Kin__V1__DeleteCellRequest d = KIN__V1__DELETE_CELL_REQUEST__INIT;
	d.path = "hostile";
	code = call_msg(&c, "Cells", "Delete", &d.base, msg, sizeof(msg));
	conn_close(&c);
	printf("# extreme: %d calls\n", e.calls);
	verdict(!e.bad, "extreme_values_clean_status", "%d of %d: first %s", e.bad, e.calls,
	        e.first_bad);
	verdict(code == ERR_OK, "extreme_values_left_nothing", "delete hostile: code %d (%s)", code,
	        msg);
	after_batch("extreme_values", baseline);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cells-hostile SOCKET KIN_PID\n");
		return 2;
	}
	sock_path = argv[1];
	kin_pid = (pid_t)atoi(argv[2]);
	verdict(health() && count_fds() > 0, "hostile_start", "kin %d not serving on %s",
	        (int)kin_pid, sock_path);
	if (failures)
		return 1;
	batch_random(120);
	batch_extreme();
	return failures ? 1 : 0;
}
