/* svc_exec: the kin.v1.Exec service — start executables in cells, signal,
 * stop, wait, status, list, delete, stdin, and their output as a server
 * stream (Logs). A spec is checked here only for what the wire adds
 * (counts, strings to parse); everything else is exec_start's, before any
 * side effect. Log streams: a client that reads too slowly loses output
 * (its connection's output is full); the next chunk it gets says how many
 * bytes it missed (LogChunk.dropped). Memory stays bounded by the server's
 * per-connection output cap; the ring keeps the bytes for a later read. */
#include "rpc/cells_svc.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define LOG_CHUNK (64 * 1024)

static int spec_fail(struct cells_err *err, const char *cell, const char *name, const char *fmt,
                     ...) _printf_(4, 5);
static int spec_fail(struct cells_err *err, const char *cell, const char *name, const char *fmt,
                     ...)
{
	char why[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	char full[sizeof(why) + CELLS_PATH_MAX + CELLS_NAME_MAX + 16];
	snprintf(full, sizeof(full), "exec \"%s/%s\": %s", cell, name, why);
	(void)str_copy(err->msg, sizeof(err->msg), full);
	err->code = CELLS_INVALID_ARGUMENT;
	err->err = -EINVAL;
	return -EINVAL;
}

/* What a spec points to, owned for the length of one Start. */
struct spec_buf {
	struct exec_spec s;
	char **argv, **env;
};

static int spec_from(const char *cell, const char *name, const Kin__V1__ExecSpec *in,
                     struct spec_buf *b, struct cells_err *err)
{
	struct exec_spec *s = &b->s;
	struct cells_err e = {0};
	exec_spec_init(s);
	if (!in || in->n_argv == 0)
		return spec_fail(err, cell, name, "no argv");
	if (in->n_argv > EXEC_ARGS_MAX || in->n_env > EXEC_ENV_MAX)
		return spec_fail(err, cell, name, "argv and env: at most %d entries each",
		                 EXEC_ARGS_MAX);
	if (in->n_groups > EXEC_GROUPS_MAX || in->n_rlimits > EXEC_RLIMITS_MAX ||
	    in->n_uid_map > EXEC_IDMAP_MAX || in->n_gid_map > EXEC_IDMAP_MAX)
		return spec_fail(err, cell, name,
		                 "at most %d groups, %d rlimits and %d id-map lines",
		                 EXEC_GROUPS_MAX, EXEC_RLIMITS_MAX, EXEC_IDMAP_MAX);
	b->argv = calloc(in->n_argv + 1, sizeof(char *));
	b->env = calloc(in->n_env + 1, sizeof(char *));
	if (!b->argv || !b->env)
		return -ENOMEM;
	memcpy(b->argv, in->argv, in->n_argv * sizeof(char *));
	if (in->n_env) /* protobuf-c leaves an empty repeated field NULL */
		memcpy(b->env, in->env, in->n_env * sizeof(char *));
	s->argv = b->argv;
	s->env = b->env;
	if (in->cwd[0])
		s->cwd = in->cwd;
	s->uid = in->uid;
	s->gid = in->gid;
	if (in->n_groups)
		memcpy(s->groups, in->groups, in->n_groups * sizeof(uint32_t));
	s->ngroups = in->n_groups;
	if (in->umask[0]) {
		char *end;
		errno = 0;
		unsigned long m = strtoul(in->umask, &end, 8);
		if (errno || *end || m > 0777 || in->umask[0] == '-')
			return spec_fail(err, cell, name, "umask '%s': expected octal 0-0777",
			                 in->umask);
		s->umask = (mode_t)m;
	}
	for (size_t i = 0; i < in->n_rlimits; i++)
		if (exec_rlimit_parse(in->rlimits[i], &s->rlimits[s->nrlimits++], &e) < 0)
			return spec_fail(err, cell, name, "%s", e.msg);
	if (in->caps[0] && exec_caps_parse(in->caps, &s->caps, &e) < 0)
		return spec_fail(err, cell, name, "caps: %s", e.msg);
	if (in->ambient[0] && exec_caps_parse(in->ambient, &s->ambient, &e) < 0)
		return spec_fail(err, cell, name, "ambient: %s", e.msg);
	s->no_new_privs = in->no_new_privs;
	if (!in->seccomp[0] || !strcmp(in->seccomp, "default"))
		s->seccomp = EXEC_SECCOMP_DEFAULT;
	else if (!strcmp(in->seccomp, "none"))
		s->seccomp = EXEC_SECCOMP_NONE;
	else if (in->seccomp[0] == '/') {
		s->seccomp = EXEC_SECCOMP_FILE;
		s->seccomp_file = in->seccomp;
	} else
		return spec_fail(err, cell, name,
		                 "seccomp '%s': expected default, none or an absolute path",
		                 in->seccomp);
	if (in->namespaces[0] && exec_ns_parse(in->namespaces, &s->namespaces, &e) < 0)
		return spec_fail(err, cell, name, "namespaces: %s", e.msg);
	for (size_t i = 0; i < in->n_uid_map; i++)
		s->uid_map[i] = (struct exec_idmap){in->uid_map[i]->inside, in->uid_map[i]->outside,
		                                    in->uid_map[i]->count};
	for (size_t i = 0; i < in->n_gid_map; i++)
		s->gid_map[i] = (struct exec_idmap){in->gid_map[i]->inside, in->gid_map[i]->outside,
		                                    in->gid_map[i]->count};
	s->nuid_map = in->n_uid_map;
	s->ngid_map = in->n_gid_map;
	if (in->hostname[0])
		s->hostname = in->hostname;
	if (in->root[0])
		s->root = in->root;
	s->root_readonly = in->root_readonly;
	s->stdin_pipe = in->stdin_pipe;
	s->log_bytes = in->log_bytes;
	if (!in->restart[0] || !strcmp(in->restart, "no"))
		s->restart = EXEC_RESTART_NO;
	else if (!strcmp(in->restart, "on-failure"))
		s->restart = EXEC_RESTART_ON_FAILURE;
	else if (!strcmp(in->restart, "always"))
		s->restart = EXEC_RESTART_ALWAYS;
	else
		return spec_fail(err, cell, name, "restart '%s': expected no, on-failure or always",
		                 in->restart);
	s->backoff_base_ms = in->backoff_base_ms;
	s->backoff_cap_ms = in->backoff_cap_ms;
	return 0;
}

static void status_fill(Kin__V1__ExecStatus *m, const struct exec_status *st)
{
	kin__v1__exec_status__init(m);
	m->cell = (char *)st->cell;
	m->name = (char *)st->name;
	m->state = (char *)exec_state_name(st->state);
	m->pid = st->pid;
	m->exited = st->exited;
	m->exit_code = st->exit_code;
	m->signal = st->signal;
	m->restarts = st->restarts;
	m->started_ns = st->started_ns;
	m->exited_ns = st->exited_ns;
	m->stdout_bytes = st->log_bytes[EXEC_STDOUT];
	m->stderr_bytes = st->log_bytes[EXEC_STDERR];
}

static int reply_status(struct rpc_cells_service *svc, struct rpc_call *call, const char *cell,
                        const char *name)
{
	struct cells_err err = {0};
	struct exec_status st;
	Kin__V1__ExecStatus m;
	if (exec_status(svc->cells, cell, name, &st, &err) < 0)
		return cells_svc_fail(call, &err);
	status_fill(&m, &st);
	return rpc_call_reply(call, &m.base);
}

static int exec_start_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__StartRequest *req = (const Kin__V1__StartRequest *)in;
	struct cells_err err = {0};
	struct spec_buf b = {0};
	if (cells_svc_unavailable(svc, call))
		return 0;
	int r = cell_path_check(req->cell, &err);
	if (r == 0 && !cell_name_valid(req->name))
		r = spec_fail(&err, req->cell, req->name,
		              "bad name: expected [A-Za-z0-9_.-]{1,%d}, not . or ..",
		              CELLS_NAME_MAX);
	if (r == 0)
		r = spec_from(req->cell, req->name, req->spec, &b, &err);
	if (r == 0)
		r = exec_start(svc->cells, req->cell, req->name, &b.s, &err);
	free(b.argv);
	free(b.env);
	if (r == -ENOMEM && !err.msg[0])
		return r;
	if (r < 0)
		return cells_svc_fail(call, &err);
	return reply_status(svc, call, req->cell, req->name);
}

static int exec_signal_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__SignalRequest *req = (const Kin__V1__SignalRequest *)in;
	struct cells_err err = {0};
	if (cells_svc_unavailable(svc, call))
		return 0;
	if (req->signal < 1 || req->signal > SIGRTMAX)
		return rpc_call_fail(call, RPC_INVALID_ARGUMENT,
		                     "exec \"%s/%s\": signal %d: expected 1-%d", req->cell,
		                     req->name, req->signal, SIGRTMAX);
	if (exec_signal(svc->cells, req->cell, req->name, req->signal, &err) < 0)
		return cells_svc_fail(call, &err);
	return reply_status(svc, call, req->cell, req->name);
}

static void exec_done(int result, const struct exec_status *st, void *data)
{
	struct cells_pending *p = data;
	if (p->call) {
		if (result < 0 || !st) {
			rpc_call_fail(p->call, result == -ECANCELED ? RPC_CANCELLED : RPC_INTERNAL,
			              "exec: %s",
			              result == -ECANCELED ? "deleted before it ended"
			                                   : strerror(-result));
		} else {
			Kin__V1__ExecStatus m;
			status_fill(&m, st);
			rpc_call_reply(p->call, &m.base);
		}
	}
	cells_pending_free(p);
}

static void pending_cancelled(struct rpc_call *call, void *data)
{
	struct cells_pending *p = data;
	(void)call;
	p->call = NULL;
}

static int exec_stop_wait(struct rpc_call *call, const char *cell, const char *name,
                          struct rpc_cells_service *svc, bool stop, uint64_t grace_ms)
{
	struct cells_err err = {0};
	struct exec_status st;
	if (cells_svc_unavailable(svc, call))
		return 0;
	struct cells_pending *p = cells_pending_new(svc, call);
	if (!p)
		return -ENOMEM;
	int r = stop ? exec_stop(svc->cells, cell, name, grace_ms, exec_done, p, &err)
	             : exec_wait(svc->cells, cell, name, exec_done, p, &st, &err);
	if (r == 1) {
		rpc_call_on_cancel(call, pending_cancelled, p);
		return 0;
	}
	cells_pending_free(p);
	if (r < 0)
		return cells_svc_fail(call, &err);
	if (stop)
		return reply_status(svc, call, cell, name);
	Kin__V1__ExecStatus m;
	status_fill(&m, &st);
	return rpc_call_reply(call, &m.base);
}

static int exec_stop_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__StopRequest *req = (const Kin__V1__StopRequest *)in;
	if (req->grace_ms > 3600 * 1000)
		return rpc_call_fail(call, RPC_INVALID_ARGUMENT,
		                     "exec \"%s/%s\": grace %llu ms: at most 1 h", req->cell,
		                     req->name, (unsigned long long)req->grace_ms);
	return exec_stop_wait(call, req->cell, req->name, userdata, true,
	                      req->grace_ms ? req->grace_ms : 10000);
}

static int exec_wait_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	return exec_stop_wait(call, req->cell, req->name, userdata, false, 0);
}

static int exec_status_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	if (cells_svc_unavailable(svc, call))
		return 0;
	return reply_status(svc, call, req->cell, req->name);
}

struct exec_list_ctx {
	struct exec_status *st;
	size_t n, cap;
};

static int exec_list_visit(const struct exec_status *st, void *data)
{
	struct exec_list_ctx *lc = data;
	if (lc->n == lc->cap) {
		size_t cap = lc->cap ? lc->cap * 2 : 16;
		struct exec_status *p = realloc(lc->st, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		lc->st = p;
		lc->cap = cap;
	}
	lc->st[lc->n++] = *st;
	return 0;
}

static int exec_list_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__ListExecRequest *req = (const Kin__V1__ListExecRequest *)in;
	struct cells_err err = {0};
	struct exec_list_ctx lc = {0};
	if (cells_svc_unavailable(svc, call))
		return 0;
	int r = exec_list(svc->cells, req->cell[0] ? req->cell : NULL, exec_list_visit, &lc, &err);
	if (r < 0) {
		free(lc.st);
		return r == -ENOMEM && !err.msg[0] ? r : cells_svc_fail(call, &err);
	}
	Kin__V1__ExecStatus *msgs = calloc(lc.n + 1, sizeof(*msgs));
	Kin__V1__ExecStatus **ptrs = calloc(lc.n + 1, sizeof(*ptrs));
	if (!msgs || !ptrs) {
		free(lc.st);
		free(msgs);
		free(ptrs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < lc.n; i++) {
		status_fill(&msgs[i], &lc.st[i]);
		ptrs[i] = &msgs[i];
	}
	Kin__V1__ListExecResponse out = KIN__V1__LIST_EXEC_RESPONSE__INIT;
	out.n_executables = lc.n;
	out.executables = ptrs;
	r = rpc_call_reply(call, &out.base);
	free(lc.st);
	free(msgs);
	free(ptrs);
	return r;
}

static int exec_delete_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__ExecRequest *req = (const Kin__V1__ExecRequest *)in;
	struct cells_err err = {0};
	if (cells_svc_unavailable(svc, call))
		return 0;
	if (exec_delete(svc->cells, req->cell, req->name, &err) < 0)
		return cells_svc_fail(call, &err);
	return rpc_call_reply(call, NULL);
}

static int exec_stdin_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__StdinRequest *req = (const Kin__V1__StdinRequest *)in;
	struct cells_err err = {0};
	ssize_t n = 0;
	if (cells_svc_unavailable(svc, call))
		return 0;
	if (req->data.len) {
		n = exec_stdin_write(svc->cells, req->cell, req->name, req->data.data,
		                     req->data.len, &err);
		if (n == -EAGAIN)
			n = 0; /* the pipe is full: the client sends again */
		else if (n < 0)
			return cells_svc_fail(call, &err);
	}
	if (req->close && (size_t)n == req->data.len &&
	    exec_stdin_close(svc->cells, req->cell, req->name, &err) < 0)
		return cells_svc_fail(call, &err);
	Kin__V1__StdinResponse out = KIN__V1__STDIN_RESPONSE__INIT;
	out.written = (uint64_t)n;
	return rpc_call_reply(call, &out.base);
}

/* ---- Logs ------------------------------------------------------------------------ */

static int log_send(struct cells_stream *st, enum exec_stream s, const void *buf, size_t len)
{
	Kin__V1__LogChunk m = KIN__V1__LOG_CHUNK__INIT;
	m.stream = s == EXEC_STDOUT ? KIN__V1__LOG_STREAM__STDOUT : KIN__V1__LOG_STREAM__STDERR;
	m.data.data = (uint8_t *)buf;
	m.data.len = len;
	m.dropped = st->dropped;
	int r = rpc_call_send(st->call, &m.base);
	if (r == -ENOBUFS)
		st->dropped += len;
	else if (r == 0)
		st->dropped = 0;
	return r;
}

static void log_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	struct cells_stream *st = data;
	if (!st->call || !(st->streams & (1u << s)))
		return;
	/* The library hands at most 64 KiB at a time; keep frames small anyway. */
	for (size_t off = 0; off < len; off += LOG_CHUNK)
		log_send(st, s, (const uint8_t *)buf + off,
		         len - off < LOG_CHUNK ? len - off : LOG_CHUNK);
}

/* The executable ended and its pipes closed, or it was deleted. */
static void log_end(void *data)
{
	struct cells_stream *st = data;
	st->follower = NULL;
	if (st->in_setup) {
		st->ended = true; /* the handler finishes */
		return;
	}
	if (st->call)
		rpc_call_close(st->call, RPC_OK, NULL);
	cells_stream_free(st);
}

static const struct exec_log_ops log_ops = {.data = log_data, .end = log_end};

static void log_cancelled(struct rpc_call *call, void *data)
{
	struct cells_stream *st = data;
	(void)call;
	st->call = NULL;
	if (st->follower)
		exec_log_unfollow(st->svc->cells, st->follower);
	cells_stream_free(st);
}

static int exec_logs_h(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct rpc_cells_service *svc = userdata;
	const Kin__V1__LogsRequest *req = (const Kin__V1__LogsRequest *)in;
	struct cells_err err = {0};
	struct exec_status status;
	if (cells_svc_unavailable(svc, call))
		return 0;
	unsigned want = req->stream == KIN__V1__LOG_STREAM__STDOUT   ? 1u << EXEC_STDOUT
	                : req->stream == KIN__V1__LOG_STREAM__STDERR ? 1u << EXEC_STDERR
	                                                             : 3u;
	if (exec_status(svc->cells, req->cell, req->name, &status, &err) < 0)
		return cells_svc_fail(call, &err);
	struct cells_stream *st = cells_stream_new(svc, call);
	if (!st)
		return -ENOMEM;
	st->streams = want;
	if (!req->follow) {
		/* What the rings keep now, stream by stream, then the end. */
		_cleanup_free_ uint8_t *buf = malloc(LOG_CHUNK);
		if (!buf) {
			cells_stream_free(st);
			return -ENOMEM;
		}
		for (int s = 0; s < 2; s++) {
			uint64_t pos = 0, dropped;
			size_t n;
			if (!(want & (1u << s)))
				continue;
			while (exec_log_read(svc->cells, req->cell, req->name, s, &pos, buf,
			                     LOG_CHUNK, &n, &dropped, &err) == 0 &&
			       n > 0)
				log_send(st, s, buf, n);
		}
		cells_stream_free(st);
		return rpc_call_close(call, RPC_OK, NULL);
	}
	st->in_setup = true;
	int r =
	    exec_log_follow(svc->cells, req->cell, req->name, &log_ops, st, &st->follower, &err);
	st->in_setup = false;
	if (r < 0) {
		cells_stream_free(st);
		return cells_svc_fail(call, &err);
	}
	if (st->ended) {
		cells_stream_free(st);
		return rpc_call_close(call, RPC_OK, NULL);
	}
	rpc_call_on_cancel(call, log_cancelled, st);
	return 0;
}

int cells_svc_register_exec(struct rpc_server *s, struct rpc_cells_service *svc)
{
	static struct rpc_method methods[] = {
	    {"kin.v1.Exec", "Start", &kin__v1__start_request__descriptor, exec_start_h, 0, NULL},
	    {"kin.v1.Exec", "Signal", &kin__v1__signal_request__descriptor, exec_signal_h, 0, NULL},
	    {"kin.v1.Exec", "Stop", &kin__v1__stop_request__descriptor, exec_stop_h, 0, NULL},
	    {"kin.v1.Exec", "Wait", &kin__v1__exec_request__descriptor, exec_wait_h, 0, NULL},
	    {"kin.v1.Exec", "Status", &kin__v1__exec_request__descriptor, exec_status_h, 0, NULL},
	    {"kin.v1.Exec", "List", &kin__v1__list_exec_request__descriptor, exec_list_h, 0, NULL},
	    {"kin.v1.Exec", "Delete", &kin__v1__exec_request__descriptor, exec_delete_h, 0, NULL},
	    {"kin.v1.Exec", "Logs", &kin__v1__logs_request__descriptor, exec_logs_h,
	     RPC_METHOD_SERVER_STREAM, NULL},
	    {"kin.v1.Exec", "Stdin", &kin__v1__stdin_request__descriptor, exec_stdin_h, 0, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		methods[i].userdata = svc;
	return rpc_server_register(s, methods, ARRAY_SIZE(methods));
}
