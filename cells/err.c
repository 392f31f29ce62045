/* err: cell name rules and the error sentences cells prefix with their
 * object (errors themselves are lib/err.h). */
#include "cells/cells-int.h"

#include <stdio.h>
#include <string.h>

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
		if (!name_char_ok(s[i]) && !(s[i] == '@' && i > 0))
			return false;
	return true;
}

bool cell_name_valid(const char *name)
{
	return name && name_valid_n(name, strlen(name));
}

int cell_path_check(const char *path, struct err *err)
{
	if (!path || !*path)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "cell name is empty");
	size_t len = strnlen(path, CELLS_PATH_MAX);
	if (len >= CELLS_PATH_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "cell name is longer than %d bytes", CELLS_PATH_MAX - 1);
	unsigned depth = 0;
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (!name_valid_n(p, n))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "cell \"%.*s\": each name between '/' must be 1-%d of "
			               "[A-Za-z0-9_.-], not \".\" or \"..\"",
			               (int)len, path, CELLS_NAME_MAX);
		if (++depth > CELLS_DEPTH_MAX)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "cell \"%s\": deeper than %d levels", path, CELLS_DEPTH_MAX);
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

void cells_err_prefix(struct err *err, const char *what, const char *name)
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
