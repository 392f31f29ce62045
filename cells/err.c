/* err: the status codes, the one-sentence errors, and cell name rules.
 * Everything a caller outside cells/ shows to a user passes through here. */
#include "cells/cells-int.h"

#include <stdio.h>
#include <string.h>

const char *cells_code_name(enum cells_code code)
{
	switch (code) {
	case CELLS_OK:
		return "OK";
	case CELLS_CANCELLED:
		return "CANCELLED";
	case CELLS_INVALID_ARGUMENT:
		return "INVALID_ARGUMENT";
	case CELLS_DEADLINE_EXCEEDED:
		return "DEADLINE_EXCEEDED";
	case CELLS_NOT_FOUND:
		return "NOT_FOUND";
	case CELLS_ALREADY_EXISTS:
		return "ALREADY_EXISTS";
	case CELLS_PERMISSION_DENIED:
		return "PERMISSION_DENIED";
	case CELLS_RESOURCE_EXHAUSTED:
		return "RESOURCE_EXHAUSTED";
	case CELLS_FAILED_PRECONDITION:
		return "FAILED_PRECONDITION";
	case CELLS_INTERNAL:
		return "INTERNAL";
	case CELLS_UNAVAILABLE:
		return "UNAVAILABLE";
	}
	return "UNKNOWN";
}

enum cells_code cells_code_from_errno(int neg_errno)
{
	switch (-neg_errno) {
	case 0:
		return CELLS_OK;
	case EINVAL:
	case ERANGE:
	case ENAMETOOLONG:
	case E2BIG:
		return CELLS_INVALID_ARGUMENT;
	case ENOENT:
	case ESRCH:
		return CELLS_NOT_FOUND;
	case EEXIST:
		return CELLS_ALREADY_EXISTS;
	case EPERM:
	case EACCES:
		return CELLS_PERMISSION_DENIED;
	case ENOMEM:
	case ENOSPC:
	case EMFILE:
	case ENFILE:
	case EAGAIN:
	case EUSERS:
		return CELLS_RESOURCE_EXHAUSTED;
	case EBUSY:
	case ENOTEMPTY:
	case EOPNOTSUPP:
	case ENOEXEC:
	case ENOTDIR:
	case ELOOP:
	case ETXTBSY:
	case ENOSYS:
		return CELLS_FAILED_PRECONDITION;
	case ETIMEDOUT:
		return CELLS_DEADLINE_EXCEEDED;
	case ECANCELED:
		return CELLS_CANCELLED;
	}
	return CELLS_INTERNAL;
}

static void err_vset(struct cells_err *err, int neg_errno, enum cells_code code, const char *fmt,
                     va_list ap)
{
	if (!err)
		return;
	err->err = neg_errno;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int cells_fail(struct cells_err *err, int neg_errno, enum cells_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, neg_errno, code, fmt, ap);
	va_end(ap);
	return neg_errno;
}

int cells_fail_errno(struct cells_err *err, int neg_errno, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, neg_errno, cells_code_from_errno(neg_errno), fmt, ap);
	va_end(ap);
	return neg_errno;
}

static bool name_char_ok(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '.' || ch == '-';
}

static bool name_valid_n(const char *s, size_t n)
{
	if (n == 0 || n > CELLS_NAME_MAX)
		return false;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char_ok(s[i]))
			return false;
	return true;
}

bool cell_name_valid(const char *name)
{
	return name && name_valid_n(name, strlen(name));
}

int cell_path_check(const char *path, struct cells_err *err)
{
	if (!path || !*path)
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT, "cell name is empty");
	size_t len = strnlen(path, CELLS_PATH_MAX);
	if (len >= CELLS_PATH_MAX)
		return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
		                  "cell name is longer than %d bytes", CELLS_PATH_MAX - 1);
	unsigned depth = 0;
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!name_valid_n(p, n))
			return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
			                  "cell \"%.*s\": each name between '/' must be 1-%d of "
			                  "[A-Za-z0-9_.-], not \".\" or \"..\"",
			                  (int)len, path, CELLS_NAME_MAX);
		if (++depth > CELLS_DEPTH_MAX)
			return cells_fail(err, -EINVAL, CELLS_INVALID_ARGUMENT,
			                  "cell \"%s\": deeper than %d levels", path,
			                  CELLS_DEPTH_MAX);
		if (!slash)
			break;
		p = slash + 1;
	}
	return 0;
}

const char *cells_event_name(enum cells_event_type t)
{
	switch (t) {
	case CELLS_EV_CELL_CREATED:
		return "created";
	case CELLS_EV_CELL_DELETED:
		return "deleted";
	case CELLS_EV_FROZEN:
		return "frozen";
	case CELLS_EV_THAWED:
		return "thawed";
	case CELLS_EV_OOM_KILL:
		return "oom_kill";
	case CELLS_EV_EXEC_START:
		return "start";
	case CELLS_EV_EXEC_EXIT:
		return "exit";
	case CELLS_EV_EXEC_RESTART:
		return "restart";
	}
	return "unknown";
}

/* ---- listeners -------------------------------------------------------- */

int cells_listen(struct cells *c, const struct cells_listener_ops *ops, void *data,
                 struct cells_listener **ret)
{
	if (!ops || !ops->event)
		return -EINVAL;
	for (size_t i = 0; i < CELLS_LISTENERS_MAX; i++) {
		struct cells_listener *l = &c->listeners[i];
		if (!l->used) {
			*l = (struct cells_listener){.ops = ops, .data = data, .used = true};
			if (ret)
				*ret = l;
			return 0;
		}
	}
	return -EUSERS;
}

void cells_unlisten(struct cells *c, struct cells_listener *l)
{
	(void)c;
	if (!l || !l->used)
		return;
	l->used = false;
	if (l->ops->closed)
		l->ops->closed(l->data);
}

void cells_emit(struct cells *c, const struct cells_event *ev)
{
	struct cells_event e = *ev;
	if (!e.time_ns)
		e.time_ns = now_monotonic_ns();
	/* A listener may remove itself from inside event(): index walk. */
	for (size_t i = 0; i < CELLS_LISTENERS_MAX; i++)
		if (c->listeners[i].used)
			c->listeners[i].ops->event(&e, c->listeners[i].data);
}

void cells_listeners_close(struct cells *c)
{
	for (size_t i = 0; i < CELLS_LISTENERS_MAX; i++)
		cells_unlisten(c, &c->listeners[i]);
}

void cells_err_prefix(struct cells_err *err, const char *what, const char *name)
{
	if (!err)
		return;
	char why[sizeof(err->msg)];
	memcpy(why, err->msg, sizeof(why));
	char full[sizeof(err->msg) * 2 + CELLS_PATH_MAX];
	snprintf(full, sizeof(full), "%s \"%s\": %s", what, name, why);
	/* Cut, not overflow: the cause at the end matters less than the name. */
	(void)str_copy(err->msg, sizeof(err->msg), full);
}
