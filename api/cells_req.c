/* cells_req: what a Cells, Exec or Events request must be before the cells
 * library sees it — what the wire adds (counts, strings to parse, numbers
 * the proto cannot bound). Everything else is the library's own check,
 * made before any side effect. Kept apart from the handlers so a fuzzer can
 * run every request through it with no cells library and no process. */
#include "api/cells-int.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define GRACE_MAX_MS (3600 * 1000)

static int exec_fail(struct err *err, const char *cell, const char *name, const char *fmt, ...)
    _printf_(4, 5);
static int exec_fail(struct err *err, const char *cell, const char *name, const char *fmt, ...)
{
	char why[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	char full[sizeof(why) + CELLS_PATH_MAX + CELLS_NAME_MAX + 16];
	snprintf(full, sizeof(full), "exec \"%.*s/%.*s\": %s", CELLS_PATH_MAX, cell,
	         CELLS_NAME_MAX + 1, name, why);
	(void)str_copy(err->msg, sizeof(err->msg), full);
	err->code = ERR_INVALID_ARGUMENT;
	err->errnum = -EINVAL;
	return -EINVAL;
}

/* ---- Cells ------------------------------------------------------------------------------- */

/* Limits are parsed one by one (the sentence names the key); range checks
 * and controllers come from cell_create/cell_update. */
int api_cells_req_limits(const Kin__V1__CreateCellRequest *req, struct cell_limits *l,
                         struct err *err)
{
	*l = (struct cell_limits){0};
	int r = cell_path_check(req->path, err);
	if (r < 0)
		return r;
	if (req->n_limits > 2 * CELL_LIMIT_COUNT) {
		snprintf(err->msg, sizeof(err->msg), "cell \"%s\": %zu limits given, at most %d",
		         req->path, req->n_limits, 2 * CELL_LIMIT_COUNT);
		err->code = ERR_INVALID_ARGUMENT;
		return -EINVAL;
	}
	for (size_t i = 0; i < req->n_limits; i++) {
		struct err e = {0};
		r = cell_limit_parse(l, req->limits[i]->key, req->limits[i]->value, &e);
		if (r < 0) {
			char full[sizeof(e.msg) + CELLS_PATH_MAX + 16];
			snprintf(full, sizeof(full), "cell \"%s\": %s", req->path, e.msg);
			*err = e;
			(void)str_copy(err->msg, sizeof(err->msg), full);
			return r;
		}
	}
	return 0;
}

/* ---- Exec ------------------------------------------------------------------------------- */

static int spec_strings(const char *cell, const char *name, const Kin__V1__ExecSpec *in,
                        struct exec_spec *s, struct err *err)
{
	struct err e = {0};
	if (in->umask[0]) {
		char *end;
		errno = 0;
		unsigned long m = strtoul(in->umask, &end, 8);
		if (errno || *end || m > 0777 || in->umask[0] == '-')
			return exec_fail(err, cell, name, "umask '%.32s': expected octal 0-0777",
			                 in->umask);
		s->umask = (mode_t)m;
	}
	for (size_t i = 0; i < in->n_rlimits; i++)
		if (exec_rlimit_parse(in->rlimits[i], &s->rlimits[s->nrlimits++], &e) < 0)
			return exec_fail(err, cell, name, "%s", e.msg);
	if (in->caps[0] && exec_caps_parse(in->caps, &s->caps, &e) < 0)
		return exec_fail(err, cell, name, "caps: %s", e.msg);
	if (in->ambient[0] && exec_caps_parse(in->ambient, &s->ambient, &e) < 0)
		return exec_fail(err, cell, name, "ambient: %s", e.msg);
	if (!in->seccomp[0] || !strcmp(in->seccomp, "default"))
		s->seccomp = EXEC_SECCOMP_DEFAULT;
	else if (!strcmp(in->seccomp, "none"))
		s->seccomp = EXEC_SECCOMP_NONE;
	else if (in->seccomp[0] == '/') {
		s->seccomp = EXEC_SECCOMP_FILE;
		s->seccomp_file = in->seccomp;
	} else
		return exec_fail(err, cell, name,
		                 "seccomp '%.64s': expected default, none or an absolute path",
		                 in->seccomp);
	if (in->namespaces[0] && exec_ns_parse(in->namespaces, &s->namespaces, &e) < 0)
		return exec_fail(err, cell, name, "namespaces: %s", e.msg);
	if (!in->restart[0] || !strcmp(in->restart, "no"))
		s->restart = EXEC_RESTART_NO;
	else if (!strcmp(in->restart, "on-failure"))
		s->restart = EXEC_RESTART_ON_FAILURE;
	else if (!strcmp(in->restart, "always"))
		s->restart = EXEC_RESTART_ALWAYS;
	else
		return exec_fail(err, cell, name,
		                 "restart '%.32s': expected no, on-failure or always", in->restart);
	return 0;
}

static int spec_from(const char *cell, const char *name, const Kin__V1__ExecSpec *in,
                     struct api_cells_spec_buf *b, struct err *err)
{
	struct exec_spec *s = &b->s;
	exec_spec_init(s);
	if (!in || (in->n_argv == 0 && !in->image[0] && !in->bundle[0] && !in->login))
		return exec_fail(err, cell, name, "no argv");
	if (in->image[0] && in->bundle[0])
		return exec_fail(err, cell, name, "an image or a bundle, not both");
	if (in->login && (in->image[0] || in->bundle[0]))
		return exec_fail(err, cell, name,
		                 "a login session is of kin's own users: not with "
		                 "an image or a bundle");
	if (in->user[0] && !in->image[0] && !in->login)
		return exec_fail(err, cell, name, "user '%.64s': for image containers (uid, gid)",
		                 in->user);
	if (in->n_argv > EXEC_ARGS_MAX || in->n_env > EXEC_ENV_MAX)
		return exec_fail(err, cell, name, "argv and env: at most %d entries each",
		                 EXEC_ARGS_MAX);
	if (in->n_groups > EXEC_GROUPS_MAX || in->n_rlimits > EXEC_RLIMITS_MAX ||
	    in->n_uid_map > EXEC_IDMAP_MAX || in->n_gid_map > EXEC_IDMAP_MAX)
		return exec_fail(err, cell, name,
		                 "at most %d groups, %d rlimits and %d id-map lines",
		                 EXEC_GROUPS_MAX, EXEC_RLIMITS_MAX, EXEC_IDMAP_MAX);
	b->argv = calloc(in->n_argv + 1, sizeof(char *));
	b->env = calloc(in->n_env + 1, sizeof(char *));
	if (!b->argv || !b->env)
		return -ENOMEM;
	if (in->n_argv) /* none with an image: protobuf-c leaves it NULL */
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
	s->no_new_privs = in->no_new_privs;
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
	if (in->rows > EXEC_TTY_SIZE_MAX || in->cols > EXEC_TTY_SIZE_MAX)
		return exec_fail(err, cell, name,
		                 "terminal: window size %ux%u: rows and columns are 1-%d", in->rows,
		                 in->cols, EXEC_TTY_SIZE_MAX);
	s->terminal = in->terminal;
	s->rows = (uint16_t)in->rows;
	s->cols = (uint16_t)in->cols;
	if (in->join[0] && !in->bundle[0])
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s/%s\": join is for a bundle's process", cell, name);
	const char *paths[3] = {in->stdin_path, in->stdout_path, in->stderr_path};
	for (int i = 0; i < 3; i++)
		s->stdio_paths[i] = paths[i][0] ? paths[i] : NULL;
	s->log_bytes = in->log_bytes;
	s->backoff_base_ms = in->backoff_base_ms;
	s->backoff_cap_ms = in->backoff_cap_ms;
	return spec_strings(cell, name, in, s, err);
}

int api_cells_req_start(const Kin__V1__StartRequest *req, struct api_cells_spec_buf *b,
                        struct err *err)
{
	*b = (struct api_cells_spec_buf){0};
	int r = cell_path_check(req->cell, err);
	if (r < 0)
		return r;
	if (!cell_name_valid(req->name))
		return exec_fail(err, req->cell, req->name,
		                 "bad name: expected [A-Za-z0-9_.-]{1,%d}, not . or ..",
		                 CELLS_NAME_MAX);
	return spec_from(req->cell, req->name, req->spec, b, err);
}

void api_cells_spec_buf_free(struct api_cells_spec_buf *b)
{
	free(b->argv);
	free(b->env);
	b->argv = b->env = NULL;
}

int api_cells_req_signal(const Kin__V1__SignalRequest *req, struct err *err)
{
	if (req->signal < 1 || req->signal > SIGRTMAX)
		return exec_fail(err, req->cell, req->name, "signal %d: expected 1-%d", req->signal,
		                 SIGRTMAX);
	return 0;
}

int api_cells_req_stop(const Kin__V1__StopRequest *req, uint64_t *ret_grace_ms, struct err *err)
{
	if (req->grace_ms > GRACE_MAX_MS)
		return exec_fail(err, req->cell, req->name, "grace %llu ms: at most 1 h",
		                 (unsigned long long)req->grace_ms);
	*ret_grace_ms = req->grace_ms ? req->grace_ms : 10000;
	return 0;
}

int api_cells_req_logs(const Kin__V1__LogsRequest *req, unsigned *ret_streams, struct err *err)
{
	switch (req->stream) {
	case KIN__V1__LOG_STREAM__BOTH:
		*ret_streams = 1u << EXEC_STDOUT | 1u << EXEC_STDERR;
		return 0;
	case KIN__V1__LOG_STREAM__STDOUT:
		*ret_streams = 1u << EXEC_STDOUT;
		return 0;
	case KIN__V1__LOG_STREAM__STDERR:
		*ret_streams = 1u << EXEC_STDERR;
		return 0;
	default:
		return exec_fail(err, req->cell, req->name,
		                 "log stream %d: expected BOTH, STDOUT or STDERR",
		                 (int)req->stream);
	}
}

int api_cells_req_events(const Kin__V1__EventsRequest *req, struct err *err)
{
	return req->cell[0] ? cell_path_check(req->cell, err) : 0;
}

/* ---- the table -------------------------------------------------------------------------- */

static int check_limits(const ProtobufCMessage *in, struct err *err)
{
	struct cell_limits l;
	return api_cells_req_limits((const Kin__V1__CreateCellRequest *)in, &l, err);
}

static int check_start(const ProtobufCMessage *in, struct err *err)
{
	/* And what exec_start checks before it needs the system. */
	_cleanup_(api_cells_spec_buf_free) struct api_cells_spec_buf b = {0};
	int r = api_cells_req_start((const Kin__V1__StartRequest *)in, &b, err);
	return r < 0 ? r : exec_spec_validate(&b.s, err);
}

static int check_signal(const ProtobufCMessage *in, struct err *err)
{
	return api_cells_req_signal((const Kin__V1__SignalRequest *)in, err);
}

static int check_stop(const ProtobufCMessage *in, struct err *err)
{
	uint64_t grace;
	return api_cells_req_stop((const Kin__V1__StopRequest *)in, &grace, err);
}

static int check_logs(const ProtobufCMessage *in, struct err *err)
{
	unsigned streams;
	return api_cells_req_logs((const Kin__V1__LogsRequest *)in, &streams, err);
}

static int check_events(const ProtobufCMessage *in, struct err *err)
{
	return api_cells_req_events((const Kin__V1__EventsRequest *)in, err);
}

/* Each service's checks in its .proto's method order (NULL: none). */
static const struct {
	const ProtobufCServiceDescriptor *desc;
	int (*checks[API_METHODS_MAX])(const ProtobufCMessage *in, struct err *err);
} services[] = {
    {&kin__v1__cells__descriptor, {check_limits, check_limits}}, /* Create, Update */
    /* Start, Signal, Stop, Wait, Status, List, Delete, Logs */
    {&kin__v1__exec__descriptor,
     {check_start, check_signal, check_stop, NULL, NULL, NULL, NULL, check_logs}},
    {&kin__v1__events__descriptor, {check_events}}, /* Subscribe */
};

size_t api_cells_req_methods(const struct api_cells_req_method **ret)
{
	static struct api_cells_req_method table[3 * API_METHODS_MAX];
	static size_t n;
	*ret = table;
	if (n) /* made once: the descriptors' names are not constants */
		return n;
	for (size_t k = 0; k < ARRAY_SIZE(services); k++)
		for (size_t i = 0; i < services[k].desc->n_methods && i < API_METHODS_MAX; i++)
			table[n++] = (struct api_cells_req_method){
			    .service = services[k].desc->name,
			    .method = services[k].desc->methods[i].name,
			    .input = services[k].desc->methods[i].input,
			    .check = services[k].checks[i],
			};
	return n;
}
