/* cells: init's side of the cells library — made at startup where there is
 * a cgroup2 mount and an RPC server to reach it, served as kin.v1.Cells,
 * Exec and Events (api/), told to stop its executables when kin stops, and
 * freed last; a participant of the handover (keep/), first of all: the
 * rest runs in cells. Without cgroup2 (or when kin cannot own its cgroup) kin goes
 * on and the services answer FAILED_PRECONDITION naming why. */
#include "init/init.h"
#include "cells/cells.h"
#include "keep/keep.h"
#include "lib/state.h"
#include "zone/zone.h"

#include <stdio.h>
#include <string.h>

struct init_cells {
	struct cells *cells;
	struct keep *keep;
	struct ev_loop *loop;
	struct child_table *children;
	const char *base;
	bool units; /* a service manager runs: it adopts its services' cells */
	struct cells_listener *listener;
	struct cells_keeper keeper;
	char why[sizeof(((struct err *)0)->msg) + 32]; /* no cells: why */
};

/* The cells whose owners do not adopt theirs: services' (units/, the
 * default slice) when no units state is adopted with them (no units now,
 * or none in the file). VMs' (vms/) and zones' (zones/) are adopted, and
 * those no VM or zone takes back removed by their participants (keep/);
 * below a zone's cell the cgroups are its kin's own. */
static const char *const not_adopted[] = {"system.slice", NULL};
static const char *const delegated[] = {ZONE_CELL_PARENT, NULL};

const struct cells_keeper *init_keeper(struct keep *k, struct cells_keeper *buf)
{
	const struct keep_keeper *kk = keep_keeper(k);
	if (!kk)
		return NULL;
	*buf = (struct cells_keeper){.keep = kk->keep, .unkeep = kk->unkeep, .data = kk->data};
	return buf;
}

static void on_cells_event(const struct cells_event *ev, void *data)
{
	struct init_cells *ic = data;
	(void)ev;
	keep_changed(ic->keep);
}

static void on_cells_closed(void *data)
{
	((struct init_cells *)data)->listener = NULL;
}

/* A re-exec's record, a killed kin's, or a fresh library. */
static int cells_take(struct init_cells *ic, const struct keep_from *from, struct err *err)
{
	struct cells_config cfg = {.own_leaf = true, .base = ic->base};
	struct state_field units_f;
	int r;
	if (from->how == KEEP_REEXEC && from->record) {
		/* Thousands of pipes and pidfds: watched in slices once kin
		 * answers again (their output and exits wait in the kernel). */
		ev_defer(ic->loop, true);
		r = cells_restore(ic->loop, ic->children, from->in, from->record, &ic->cells, err);
		ev_defer(ic->loop, false);
		return r;
	}
	if (from->how == KEEP_ADOPT) {
		bool units = ic->units && keep_record(ic->keep, KEEP_TAG_UNITS, &units_f);
		return cells_adopt(ic->loop, ic->children, &cfg, from->in, from->record,
		                   units ? NULL : not_adopted, delegated, from->kept, from->nkept,
		                   &ic->cells, err);
	}
	return cells_new(ic->loop, ic->children, &cfg, &ic->cells, err);
}

static int cells_keep_start(void *data, const struct keep_from *from)
{
	static const struct cells_listener_ops ops = {.event = on_cells_event,
	                                              .closed = on_cells_closed};
	struct init_cells *ic = data;
	struct err err = {0};
	int r = cells_take(ic, from, &err);
	if (r < 0) {
		snprintf(ic->why, sizeof(ic->why), "%s", err.msg[0] ? err.msg : strerror(-r));
		log_warn("cells: not available: %s", ic->why);
		ic->cells = NULL;
		return from->how == KEEP_FRESH ? 0 : r;
	}
	log_info("cells: cgroup2 at %s", cells_mount(ic->cells));
	/* A state file: each change is written to it soon. */
	if (keep_file_dir(ic->keep) && cells_listen(ic->cells, &ops, ic, &ic->listener) < 0)
		log_warn("state: cannot watch cells: out of resources; no state kept");
	return 0;
}

static int cells_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct init_cells *ic = data;
	return ic->cells ? cells_save(ic->cells, w, tag, err) : 0;
}

static bool cells_keep_settled(void *data, char *why, size_t size)
{
	struct init_cells *ic = data;
	return !ic->cells || cells_settled(ic->cells, why, size);
}

static size_t cells_keep_children(void *data)
{
	struct init_cells *ic = data;
	return ic->cells ? cells_children(ic->cells) : 0;
}

static void cells_keep_keeper(void *data, const struct keep_keeper *k, bool fresh)
{
	struct init_cells *ic = data;
	if (!ic->cells)
		return;
	if (k)
		ic->keeper =
		    (struct cells_keeper){.keep = k->keep, .unkeep = k->unkeep, .data = k->data};
	cells_set_keeper(ic->cells, k ? &ic->keeper : NULL, fresh);
}

static void cells_keep_stop(void *data)
{
	init_cells_shutdown(data);
}

static void cells_keep_free(void *data)
{
	init_cells_free(data);
}

/* At kin's stop the library goes with the other parts' stops, init's
 * memory after the server (api's Cells service points into it). */
static const struct keep_part cells_part = {.name = "the cells",
                                            .tag = KEEP_TAG_CELLS,
                                            .level = KEEP_LEVEL_CELLS,
                                            .start = cells_keep_start,
                                            .save = cells_keep_save,
                                            .settled = cells_keep_settled,
                                            .children = cells_keep_children,
                                            .set_keeper = cells_keep_keeper,
                                            .stop = cells_keep_stop,
                                            .free = cells_keep_free,
                                            .served = true};

int init_cells_new(struct keep *k, struct ev_loop *loop, struct child_table *children,
                   struct rpc_server *rpc, const char *base, bool units, struct init_cells **ret)
{
	*ret = NULL;
	if (!rpc)
		return 0; /* nobody could reach them: no cells (container init) */
	struct init_cells *ic = calloc(1, sizeof(*ic));
	if (!ic)
		return -ENOMEM;
	*ic = (struct init_cells){
	    .keep = k, .loop = loop, .children = children, .base = base, .units = units};
	snprintf(ic->why, sizeof(ic->why), "not started yet");
	struct keep_part p = cells_part;
	p.data = ic;
	int r = keep_register(k, &p);
	if (r < 0) {
		free(ic);
		return r;
	}
	*ret = ic;
	return 0;
}

void init_cells_stop(struct init_cells *ic, uint64_t grace_ms)
{
	if (!ic || !ic->cells)
		return;
	size_t n = exec_stop_all(ic->cells, grace_ms);
	if (n)
		log_info("cells: stopping %zu executables", n);
}

void init_cells_kill(struct init_cells *ic)
{
	if (ic && ic->cells)
		cell_kill_all(ic->cells);
}

void init_cells_shutdown(struct init_cells *ic)
{
	if (!ic)
		return;
	if (ic->listener)
		cells_unlisten(ic->cells, ic->listener);
	ic->listener = NULL;
	cells_free(ic->cells);
	ic->cells = NULL;
}

void init_cells_free(struct init_cells *ic)
{
	if (!ic)
		return;
	keep_unregister(ic->keep, ic);
	if (ic->listener)
		cells_unlisten(ic->cells, ic->listener);
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
