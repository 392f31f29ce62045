/* cells: init's side of the cells library — made at startup where there is
 * a cgroup2 mount and an RPC server to reach it, served as kin.v1.Cells,
 * Exec and Events (api/), told to stop its executables when kin stops, and
 * freed last. Without cgroup2 (or when kin cannot own its cgroup) kin goes
 * on and the services answer FAILED_PRECONDITION naming why. */
#include "init/init.h"
#include "cells/cells.h"
#include "lib/state.h"
#include "zone/zone.h"

#include <stdio.h>
#include <string.h>

struct init_cells {
	struct cells *cells;
	char why[sizeof(((struct err *)0)->msg) + 32]; /* no cells: why */
};

/* The cells whose owners do not adopt theirs: services' (units/, the
 * default slice) when no units state is adopted with them (no units now,
 * or none in the file). VMs' (vms/) and zones' (zones/) are adopted, and
 * those no VM or zone takes back removed by their services (api_adopt);
 * below a zone's cell the cgroups are its kin's own. */
static const char *const not_adopted[] = {"system.slice", NULL};
static const char *const delegated[] = {ZONE_CELL_PARENT, NULL};

int init_cells_start(struct ev_loop *loop, struct child_table *children, struct rpc_server *rpc,
                     const char *base, struct init_adopt *adopt, bool units_adopted,
                     struct init_cells **ret)
{
	struct cells_config cfg = {.own_leaf = true, .base = base};
	struct err err = {0};
	char why[sizeof(err.msg) + 32] = "";
	struct init_cells *ic;

	*ret = NULL;
	if (!rpc)
		return 0; /* nobody could reach them: no cells (container init) */
	ic = calloc(1, sizeof(*ic));
	if (!ic)
		return -ENOMEM;
	int r = adopt ? cells_adopt(loop, children, &cfg, &adopt->in,
	                            adopt->cells.data ? &adopt->cells : NULL,
	                            units_adopted ? NULL : not_adopted, delegated, adopt->kept,
	                            adopt->nkept, &ic->cells, &err)
	              : cells_new(loop, children, &cfg, &ic->cells, &err);
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", err.msg[0] ? err.msg : strerror(-r));
		log_warn("cells: not available: %s", why);
		ic->cells = NULL;
	} else {
		log_info("cells: cgroup2 at %s", cells_mount(ic->cells));
	}
	snprintf(ic->why, sizeof(ic->why), "%s", why);
	*ret = ic;
	return 0;
}

int init_cells_restore(struct ev_loop *loop, struct child_table *children, struct state_in *in,
                       const struct state_field *f, struct init_cells **ret)
{
	struct err err = {0};
	struct init_cells *ic = calloc(1, sizeof(*ic));
	if (!ic)
		return -ENOMEM;
	int r = cells_restore(loop, children, in, f, &ic->cells, &err);
	if (r < 0) {
		free(ic);
		log_error("%s", err.msg);
		return r;
	}
	*ret = ic;
	return 0;
}

static void stopped(int result, const struct exec_status *st, void *data)
{
	(void)result, (void)st, (void)data;
}

struct stop_ctx {
	struct cells *cells;
	uint64_t grace_ms;
	size_t n;
};

static int stop_one(const struct exec_status *st, void *data)
{
	struct stop_ctx *sc = data;
	if (st->state == EXEC_EXITED)
		return 0;
	/* Visiting is read-only: exec_stop only signals and arms a timer. */
	if (exec_stop(sc->cells, st->cell, st->name, sc->grace_ms, stopped, NULL, NULL) == 1)
		sc->n++;
	return 0;
}

void init_cells_stop(struct init_cells *ic, uint64_t grace_ms)
{
	if (!ic || !ic->cells)
		return;
	struct stop_ctx sc = {.cells = ic->cells, .grace_ms = grace_ms};
	exec_list(ic->cells, NULL, stop_one, &sc, NULL);
	if (sc.n)
		log_info("cells: stopping %zu executables", sc.n);
}

static int kill_top(const struct cell_info *info, void *data)
{
	if (info->depth == 1)
		cell_kill(data, info->path, NULL);
	return 0;
}

void init_cells_kill(struct init_cells *ic)
{
	if (ic && ic->cells)
		cell_list(ic->cells, NULL, kill_top, ic->cells, NULL);
}

void init_cells_shutdown(struct init_cells *ic)
{
	if (!ic)
		return;
	cells_free(ic->cells);
	ic->cells = NULL;
}

void init_cells_free(struct init_cells *ic)
{
	if (!ic)
		return;
	cells_free(ic->cells);
	free(ic);
}

struct cells *init_cells_lib(struct init_cells *ic)
{
	return ic ? ic->cells : NULL;
}

const char *init_cells_why(struct init_cells *ic)
{
	return !ic ? "no RPC server to reach cells" : ic->cells ? "" : ic->why;
}
