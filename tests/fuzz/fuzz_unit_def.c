/* Fuzz target: a unit file's assignments applied to a definition
 * (units/config*.c). The first byte picks the unit's type (a .service,
 * .socket, .timer or .slice), the rest is the file. Whatever it holds,
 * applying never fails but for memory, every list stays within its bound,
 * every diag names the file, the SystemCallFilter=/RestrictAddressFamilies=
 * profile built from it is one cells takes, and freeing leaves nothing
 * behind. */
#include "cells/cells-int.h"
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz {
	struct unit_def *d;
	struct unit_spec_ctx ctx;
};

static void diag_check(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	(void)data, (void)line, (void)fmt;
	if (!file || strcmp(file, "fuzz.conf") != 0)
		__builtin_trap();
}

static int apply(const struct unit_assign *a, void *data)
{
	struct fuzz *f = data;
	int r = unit_def_apply(f->d, a, &f->ctx, diag_check, NULL);
	if (r < 0 && r != -ENOMEM)
		__builtin_trap();
	return r;
}

static void check_bounds(const struct unit_def *d)
{
	const struct unit_strv *lists[] = {&d->documentation,         &d->requires_mounts_for,
	                                   &d->exec.environment,      &d->exec.syscall_filter,
	                                   &d->exec.read_write_paths, &d->install.wanted_by};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (lists[i]->n > UNIT_LIST_MAX || (lists[i]->n && lists[i]->v[lists[i]->n]))
			__builtin_trap();
	for (int k = 0; k < UNIT_DEP_COUNT; k++)
		if (d->deps[k].n > UNIT_LIST_MAX)
			__builtin_trap();
	if (d->nconds > UNIT_CONDS_MAX || d->socket.nlisten > UNIT_LISTENS_MAX ||
	    d->timer.non_calendar > UNIT_CALENDARS_MAX || d->exec.nrlimits > UNIT_RLIMITS_MAX ||
	    d->service.exec_start.n > UNIT_CMDS_MAX || d->service.exec_stop_post.n > UNIT_CMDS_MAX)
		__builtin_trap();
	if (d->service.success_exit_status.ncodes > UNIT_SUCCESS_MAX ||
	    d->service.restart_prevent.nsignals > UNIT_SUCCESS_MAX)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"fuzz@inst.service", "fuzz.socket", "fuzz.timer",
	                                    "fuzz.slice"};
	if (size < 1)
		return 0;
	struct unit_name n;
	struct fuzz f = {.ctx = {.hostname = "host", .machine_id = "0123"}};
	if (unit_name_parse(names[data[0] % 4], &n, NULL) < 0 || unit_def_new(&n, &f.d) < 0)
		return 0;
	f.ctx.name = &f.d->name;
	struct err e = {0};
	(void)unit_file_parse((const char *)data + 1, size - 1, "fuzz.conf", apply, diag_check, &f,
	                      &e);
	check_bounds(f.d);
	char *text = NULL;
	int r = unit_syscall_profile(f.d, &text);
	if (r < 0 && r != -ENOMEM && r != -E2BIG)
		__builtin_trap();
	if (text) {
		struct exec_sc_profile *p = malloc(sizeof(*p));
		if (p && exec_sc_parse(text, p, &e) < 0)
			__builtin_trap();
		free(p);
		free(text);
	}
	unit_def_free(f.d);
	return 0;
}
