/* units_files: the Units methods that change unit files (Enable, Disable,
 * Mask, Unmask: units/install.c's functions on the manager's search path,
 * then a daemon-reload so the manager sees the links) and those that read a
 * service's output from its cell's rings (Logs, and the tail Status
 * shows). Output is read as Exec/Logs reads it: a slow client loses
 * chunks with a note (LogChunk.dropped), the ring keeps them. */
#include "api/units-int.h"

#include <stdio.h>
#include <string.h>

/* ---- Enable, Disable, Mask, Unmask ------------------------------------------------ */

struct changes {
	Kin__V1__UnitFileChange *v;
	size_t n, cap;
	bool full;
};

static void change_add(const char *what, const char *link, const char *target, void *data)
{
	struct changes *c = data;
	if (c->full || c->n == API_UNITS_CHANGES_MAX) {
		c->full = true;
		return;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		Kin__V1__UnitFileChange *p = reallocarray(c->v, cap, sizeof(*p));
		if (!p) {
			c->full = true;
			return;
		}
		c->v = p;
		c->cap = cap;
	}
	Kin__V1__UnitFileChange *m = &c->v[c->n];
	kin__v1__unit_file_change__init(m);
	m->type = strdup(what ? what : "");
	m->link = strdup(link ? link : "");
	m->target = strdup(target ? target : "");
	if (!m->type || !m->link || !m->target) {
		free(m->type);
		free(m->link);
		free(m->target);
		c->full = true;
		return;
	}
	c->n++;
}

static void changes_free(struct changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].type);
		free(c->v[i].link);
		free(c->v[i].target);
	}
	free(c->v);
}

enum files_op { FILES_ENABLE, FILES_DISABLE, FILES_MASK, FILES_UNMASK };

static int files_apply(const struct unit_paths *p, enum files_op op, const char *name,
                       struct changes *c, struct err *err)
{
	switch (op) {
	case FILES_ENABLE:
		return unit_enable(p, name, change_add, c, err);
	case FILES_DISABLE:
		return unit_disable(p, name, change_add, c, err);
	case FILES_MASK:
	case FILES_UNMASK:
		return unit_mask(p, name, op == FILES_MASK, change_add, c, err);
	}
	return -EINVAL;
}

static int reply_changes(struct rpc_call *call, struct changes *c)
{
	_cleanup_free_ Kin__V1__UnitFileChange **ptrs = calloc(c->n + 1, sizeof(*ptrs));
	if (!ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		ptrs[i] = &c->v[i];
	Kin__V1__UnitFilesResponse out = KIN__V1__UNIT_FILES_RESPONSE__INIT;
	out.n_changes = c->n;
	out.changes = ptrs;
	return rpc_call_reply(call, &out.base);
}

/* Every name is checked before any file changes; the first that fails
 * stops the rest (its sentence says which). */
static int serve_files(struct rpc_call *call, const ProtobufCMessage *in, void *userdata,
                       enum files_op op)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitFilesRequest *req = (const Kin__V1__UnitFilesRequest *)in;
	struct err err = {0};
	struct changes c = {0};
	int r = 0;
	if (req->n_names == 0)
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT, "no unit names given");
	else if (req->n_names > API_UNITS_NAMES_MAX)
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT, "%zu unit names: at most %d",
		            req->n_names, API_UNITS_NAMES_MAX);
	for (size_t i = 0; r == 0 && i < req->n_names; i++)
		r = api_units_check_name(req->names[i], &err);
	for (size_t i = 0; r == 0 && i < req->n_names; i++)
		r = files_apply(units_paths(svc->units), op, req->names[i], &c, &err);
	/* Links made before a failure are there: the manager sees them too. */
	if (c.n && units_daemon_reload(svc->units, r < 0 ? NULL : &err) < 0 && r == 0)
		r = -EIO;
	if (r == 0 && c.full)
		r = err_set(&err, -ENOMEM, ERR_RESOURCE_EXHAUSTED,
		            "unit files: more than %d changes, or out of memory listing them",
		            API_UNITS_CHANGES_MAX);
	r = r < 0 ? api_units_fail(call, r, &err) : reply_changes(call, &c);
	changes_free(&c);
	return r;
}

int api_units_serve_enable(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return serve_files(call, in, userdata, FILES_ENABLE);
}

int api_units_serve_disable(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return serve_files(call, in, userdata, FILES_DISABLE);
}

int api_units_serve_mask(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return serve_files(call, in, userdata, FILES_MASK);
}

int api_units_serve_unmask(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	return serve_files(call, in, userdata, FILES_UNMASK);
}

/* ---- the tail Status shows ------------------------------------------------------------ */

#define TAIL_BYTES (32 * 1024) /* of each stream: enough for 1000 short lines */
#define READ_CHUNK (16 * 1024) /* < TAIL_BYTES */

/* The last TAIL_BYTES of one stream into buf; returns the length. */
static size_t tail_read(struct api_units *svc, const char *cell, const char *exec,
                        enum exec_stream s, char *buf, char *chunk)
{
	uint64_t pos = 0, dropped;
	size_t len = 0, n;
	struct err err = {0};
	while (exec_log_read(svc->cells, cell, exec, s, &pos, chunk, READ_CHUNK, &n, &dropped,
	                     &err) == 0 &&
	       n > 0) {
		if (len + n > TAIL_BYTES) {
			size_t drop = len + n - TAIL_BYTES;
			memmove(buf, buf + drop, len - drop);
			len -= drop;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	return len;
}

static int tail_push(struct api_units_tail *t, const char *s, size_t len)
{
	char **v = reallocarray(t->lines, t->n + 2, sizeof(*v));
	if (!v)
		return -ENOMEM;
	t->lines = v;
	if (!(v[t->n] = strndup(s, len)))
		return -ENOMEM;
	t->n++;
	return 0;
}

/* The last max lines of buf (a first line the tail cut, when cut, left out). */
static void tail_lines(const char *buf, size_t len, bool cut, uint32_t max,
                       struct api_units_tail *t)
{
	size_t begin = 0, start;
	uint32_t count = 0;
	if (cut) {
		const char *nl = memchr(buf, '\n', len);
		begin = nl ? (size_t)(nl - buf) + 1 : len;
	}
	if (len > begin && buf[len - 1] == '\n')
		len--;
	if (len <= begin || max == 0)
		return;
	/* Back to the max-th newline from the end: max lines follow it. */
	for (start = len; start > begin; start--)
		if (buf[start - 1] == '\n' && ++count == max)
			break;
	for (const char *p = buf + start, *end = buf + len; p <= end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (tail_push(t, p, l) < 0)
			return;
		p += l + 1;
	}
}

void api_units_log_tail(struct api_units *svc, const char *name, uint32_t max,
                        struct api_units_tail *ret)
{
	char cell[CELLS_PATH_MAX], exec[CELLS_NAME_MAX + 1];
	struct err err = {0};
	if (!svc->cells ||
	    units_log_ref(svc->units, name, cell, sizeof(cell), exec, sizeof(exec), &err) < 0)
		return;
	_cleanup_free_ char *buf = malloc(TAIL_BYTES);
	_cleanup_free_ char *chunk = malloc(READ_CHUNK);
	if (!buf || !chunk)
		return;
	for (int s = EXEC_STDOUT; s <= EXEC_STDERR; s++) {
		size_t len = tail_read(svc, cell, exec, s, buf, chunk);
		tail_lines(buf, len, len == TAIL_BYTES, max, ret);
	}
	/* Both streams' lines: keep the last max, stderr's last. */
	if (ret->n > max) {
		size_t drop = ret->n - max;
		for (size_t i = 0; i < drop; i++)
			free(ret->lines[i]);
		memmove(ret->lines, ret->lines + drop, max * sizeof(*ret->lines));
		ret->n = max;
	}
}

void api_units_tail_free(struct api_units_tail *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->lines[i]);
	free(t->lines);
	*t = (struct api_units_tail){0};
}

/* ---- Logs -------------------------------------------------------------------------------- */

int api_units_serve_logs(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_units *svc = userdata;
	const Kin__V1__UnitLogsRequest *req = (const Kin__V1__UnitLogsRequest *)in;
	struct err err = {0};
	char cell[CELLS_PATH_MAX], exec[CELLS_NAME_MAX + 1];
	struct exec_status status;
	int r = api_units_check_name(req->name, &err);
	if (r == 0 && req->stream != KIN__V1__LOG_STREAM__BOTH &&
	    req->stream != KIN__V1__LOG_STREAM__STDOUT &&
	    req->stream != KIN__V1__LOG_STREAM__STDERR)
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT, "unit \"%s\": stream %d unknown",
		            req->name, (int)req->stream);
	if (r == 0 && !svc->cells)
		r = err_set(&err, -ENOTSUP, ERR_FAILED_PRECONDITION,
		            "unit \"%s\": no cells here to keep its output", req->name);
	if (r == 0)
		r = units_log_ref(svc->units, req->name, cell, sizeof(cell), exec, sizeof(exec),
		                  &err);
	/* A service never started has no output yet: NOT_FOUND from cells
	 * would name its executable, not the unit. */
	if (r == 0 && exec_status(svc->cells, cell, exec, &status, NULL) < 0)
		r = err_set(&err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\": no output (never started)",
		            req->name);
	unsigned streams = req->stream == KIN__V1__LOG_STREAM__STDOUT   ? 1u << EXEC_STDOUT
	                   : req->stream == KIN__V1__LOG_STREAM__STDERR ? 1u << EXEC_STDERR
	                                                                : 3u;
	if (r == 0)
		r = api_logs_serve(&svc->streams, svc->cells, call, cell, exec, streams,
		                   req->follow, NULL, &err);
	return r < 0 ? api_units_fail(call, r, &err) : r;
}
