/* state: the service manager handed over across a re-exec of kin (units.h
 * "re-exec", lib/state.h). One record per loaded unit: what every unit has
 * (its active state, result, timestamps, start rate limit, what triggered
 * it), then its type's fields (service.c, socket.c, timer.c). The next kin
 * loads each unit again from its files, gives it its state back, and only
 * once every unit is back lets the types watch their processes, fds and
 * timers again — so an exit seen then finds every unit it may touch. Tags
 * are never reused. */
#include "units/units-int.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum { M_UNIT = 1, M_NOTIFY_FD, M_STARTED, M_NOTIFY_INO };
enum {
	U_NAME = 1,
	U_ACTIVE,
	U_SUB,
	U_RESULT,
	U_CONDITION,
	U_ACTIVE_ENTER,
	U_INACTIVE_ENTER,
	U_STARTS,
	U_NSTARTS,
	U_TRIGGERED_BY,
	U_INACTIVE_EXIT,
};

static const struct state_num unit_nums[] = {
    STATE_NUM(U_ACTIVE_ENTER, struct unit, active_enter_us),
    STATE_NUM(U_INACTIVE_ENTER, struct unit, inactive_enter_us),
    STATE_NUM(U_NSTARTS, struct unit, nstarts),
    STATE_NUM(U_INACTIVE_EXIT, struct unit, inactive_exit_us),
};

bool units_settled(const struct units *m, char *why, size_t size)
{
	if (m->jobs) {
		snprintf(why, size, "units: a %s job of %s is under way",
		         job_type_name(m->jobs->type), m->jobs->u->name);
		return false;
	}
	for (size_t i = 0; i < m->nunits; i++) {
		const struct unit *u = m->units[i];
		if (u->ops && u->ops->settled && !u->ops->settled(u, why, size))
			return false;
	}
	return true;
}

size_t units_children(const struct units *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nunits; i++)
		n += m->units[i]->type == UNIT_SERVICE && service_tracks_child(m->units[i]);
	return n;
}

static void unit_save(struct unit *u, struct state_w *w)
{
	size_t at = state_open(w, M_UNIT);
	state_put_str(w, U_NAME, u->name);
	state_put_u64(w, U_ACTIVE, u->active);
	state_put_str(w, U_SUB, u->sub);
	state_put_str(w, U_RESULT, u->result);
	state_put_str(w, U_CONDITION, u->condition);
	state_put_nums(w, u, unit_nums, ARRAY_SIZE(unit_nums));
	state_put_bytes(w, U_STARTS, u->starts, sizeof(u->starts));
	if (u->triggered_by)
		state_put_str(w, U_TRIGGERED_BY, u->triggered_by->name);
	if (u->ops && u->ops->save)
		u->ops->save(u, w);
	state_close(w, at);
}

void units_save(struct units *m, struct state_w *w, uint16_t tag)
{
	size_t at = state_open(w, tag);
	state_put_u64(w, M_STARTED, m->started_us);
	state_put_fd(w, M_NOTIFY_FD, units_notify_fd(m->notify));
	state_put_u64(w, M_NOTIFY_INO, fd_ino(units_notify_fd(m->notify)));
	for (size_t i = 0; i < m->nunits; i++)
		unit_save(m->units[i], w);
	state_close(w, at);
}

int units_state_notify_fd(struct state_in *in, const struct state_field *f, int *kept, size_t nkept)
{
	struct state_r r;
	struct state_field g;
	uint64_t ino = 0;
	int fd = -1;
	state_get_record(f, &r);
	while (fd < 0 && state_next(&r, &g) > 0) {
		if (g.tag == M_NOTIFY_FD && state_get_fd(in, &g, &fd) < 0)
			fd = -1;
		else if (g.tag == M_NOTIFY_INO && state_get_u64(&g, &ino) < 0)
			ino = 0;
	}
	return fd >= 0 ? fd : units_kept_take(kept, nkept, ino);
}

int units_kept_take(int *kept, size_t nkept, uint64_t ino)
{
	for (size_t i = 0; ino && i < nkept; i++) {
		struct stat st;
		int fd = kept[i];
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (uint64_t)st.st_ino == ino) {
			kept[i] = -1;
			return fd;
		}
	}
	return -1;
}

/* ---- the next kin's side ---- */

/* A unit that cannot be taken back: what its type holds goes (fds
 * closed), and a service's processes are killed with its cell — a unit
 * nobody manages is never left running. name: the record's own. */
static void give_up(struct units *m, struct unit *u, const char *name, const char *why)
{
	char cell[CELLS_PATH_MAX] = "";
	bool service = unit_type_from_suffix(name) == UNIT_SERVICE;
	if (service && cell_name_valid(name))
		snprintf(cell, sizeof(cell), "%s/%s", m->slice, name);
	log_error("%s: unit \"%.255s\" cannot be taken over: %s%s",
	          m->adopting ? "adopt" : "re-exec", name, why,
	          cell[0] ? "; its processes are killed" : "");
	if (u && strcmp(u->name, name) == 0) {
		socket_unkeep(u); /* else a port stays bound in the keeper */
		if (u->ops && u->ops->free)
			u->ops->free(u);
		u->active = UNIT_ACTIVE_FAILED;
		str_copy(u->sub, sizeof(u->sub), "failed");
		str_copy(u->result, sizeof(u->result), "resources");
		u->carried = false;
	}
	if (cell[0]) {
		cell_kill(m->cells, cell, NULL);
		cell_delete(m->cells, cell, true, NULL, NULL, NULL);
	}
}

/* The unit-wide fields (1 taken, 0 another's, < 0 bad). */
static int unit_field(struct unit *u, const struct state_field *g, char *trig, size_t trig_size)
{
	uint64_t v;
	int r = state_get_num(g, u, unit_nums, ARRAY_SIZE(unit_nums));
	if (r != 0)
		return r;
	switch (g->tag) {
	case U_ACTIVE:
		if ((r = state_get_u64(g, &v)) < 0 || v > UNIT_ACTIVE_FAILED)
			return -EBADMSG;
		u->active = (enum unit_active)v;
		return 1;
	case U_SUB:
		return state_get_str(g, u->sub, sizeof(u->sub)) < 0 ? -EBADMSG : 1;
	case U_RESULT:
		return state_get_str(g, u->result, sizeof(u->result)) < 0 ? -EBADMSG : 1;
	case U_CONDITION:
		return state_get_str(g, u->condition, sizeof(u->condition)) < 0 ? -EBADMSG : 1;
	case U_STARTS:
		if (g->len != sizeof(u->starts))
			return -EBADMSG;
		memcpy(u->starts, g->data, sizeof(u->starts));
		return 1;
	case U_TRIGGERED_BY:
		return state_get_str(g, trig, trig_size) < 0 ? -EBADMSG : 1;
	}
	return 0;
}

static bool running(const struct unit *u)
{
	return u->active != UNIT_ACTIVE_INACTIVE && u->active != UNIT_ACTIVE_FAILED;
}

static void unit_take(struct units *m, struct state_in *in, const struct state_field *f)
{
	char name[UNIT_NAME_MAX + 1] = "", trig[UNIT_NAME_MAX + 1] = "";
	struct state_r r;
	struct state_field g;
	struct err err = {0};
	state_get_record(f, &r);
	/* the name first: the other fields need the unit */
	while (!name[0] && state_next(&r, &g) > 0)
		if (g.tag == U_NAME && state_get_str(&g, name, sizeof(name)) < 0)
			break;
	if (!unit_name_valid(name)) {
		log_error("%s: a unit record without a valid name is dropped",
		          m->adopting ? "adopt" : "re-exec");
		return;
	}
	struct unit *u = units_get(m, name, &err);
	if (!u) {
		give_up(m, NULL, name, err.msg);
		return;
	}
	if (strcmp(u->name, name) != 0 || u->carried) {
		give_up(m, NULL, name,
		        u->carried ? "a second record of it"
		                   : "its name is another unit's alias now");
		return;
	}
	u->carried = true;
	int k = 0;
	state_get_record(f, &r);
	while (k >= 0 && (k = state_next(&r, &g)) > 0) {
		if ((k = unit_field(u, &g, trig, sizeof(trig))) == 0 && u->ops && u->ops->restore)
			k = u->ops->restore(u, in, &g);
	}
	if (k < 0) {
		give_up(m, u, name, "its record does not read");
		return;
	}
	if (!u->def && running(u)) {
		give_up(m, u, name, u->load_error[0] ? u->load_error : "its unit file is gone");
		return;
	}
	if (trig[0])
		u->triggered_by = units_find(m, trig);
}

void units_on_change(struct units *m, void (*fn)(void *data), void *data)
{
	m->on_change = fn;
	m->on_change_data = data;
}

int units_adopt(struct units *m, struct state_in *in, const struct state_field *f, int *kept,
                size_t nkept)
{
	m->adopting = true;
	m->kept = kept;
	m->nkept = nkept;
	int r = units_restore(m, in, f);
	m->adopting = false;
	m->kept = NULL;
	m->nkept = 0;
	return r;
}

void units_set_keeper(struct units *m, const struct cells_keeper *k)
{
	m->keeper = k ? *k : (struct cells_keeper){0};
	int fd = units_notify_fd(m->notify);
	if (m->keeper.keep && fd >= 0)
		m->keeper.keep(&fd, 1, m->keeper.data);
	sockets_keep(m);
}

int units_restore(struct units *m, struct state_in *in, const struct state_field *f)
{
	struct state_r r;
	struct state_field g;
	int e;
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0) {
		if (g.tag == M_UNIT)
			unit_take(m, in, &g);
		else if (g.tag == M_STARTED)
			state_get_u64(&g, &m->started_us);
	}
	units_boot_target(m, NULL); /* every dependency resolved, as a boot has them */
	/* Now that every unit is back, their sources: an exit seen here may
	 * stop or start others. */
	int n = 0;
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		char why[256] = "";
		if (!u->carried)
			continue;
		if (u->ops && u->ops->resume && u->ops->resume(u, why, sizeof(why)) < 0) {
			give_up(m, u, u->name, why);
			continue;
		}
		n++;
	}
	units_dispatch_later(m);
	return e < 0 ? -EBADMSG : n;
}
