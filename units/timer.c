/* timer: .timer units — OnCalendar= (calendar.c's forms), OnBootSec=,
 * OnStartupSec=, OnActiveSec=, OnUnitActiveSec=, OnUnitInactiveSec=, and
 * Persistent= (a stamp file per timer: a run missed while the machine was
 * down happens at the timer's start). One CLOCK_REALTIME timerfd per
 * timer, armed at the earliest next elapse; RandomizedDelaySec= adds a
 * random delay up to it; AccuracySec= is not needed (no coalescing). */
#include "units/units-int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct tmr {
	struct unit *u;
	struct ev_source src;
	uint64_t activated_us; /* CLOCK_REALTIME when the timer started */
	uint64_t next_us;      /* 0: none */
	uint64_t last_us;      /* last trigger */
};

static uint64_t boot_realtime_us(void)
{
	struct timespec rt, bt;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_BOOTTIME, &bt);
	uint64_t now = (uint64_t)rt.tv_sec * 1000000u + (uint64_t)rt.tv_nsec / 1000u;
	uint64_t up = (uint64_t)bt.tv_sec * 1000000u + (uint64_t)bt.tv_nsec / 1000u;
	return now > up ? now - up : 0;
}

static void stamp_path(const struct tmr *t, char *buf, size_t size)
{
	/* root ≤ 255 and a unit name ≤ 255: always fits 1024 */
	(void)!snprintf(buf, size, "%s/var/lib/systemd/timers/stamp-%s", t->u->m->root, t->u->name);
}

static uint64_t stamp_read(const struct tmr *t)
{
	char path[1024];
	struct stat st;
	stamp_path(t, path, sizeof(path));
	if (stat(path, &st) < 0)
		return 0;
	return (uint64_t)st.st_mtim.tv_sec * 1000000u + (uint64_t)st.st_mtim.tv_nsec / 1000u;
}

static void stamp_touch(const struct tmr *t)
{
	char path[1024], dir[1024];
	stamp_path(t, path, sizeof(path));
	str_copy(dir, sizeof(dir), path);
	*strrchr(dir, '/') = '\0';
	mkdir_p(dir, 0755);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
}

static long tz_offset(int64_t when)
{
	time_t tt = (time_t)when;
	struct tm tm;
	return localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
}

static struct unit *target_unit(struct tmr *t)
{
	char name[UNIT_NAME_MAX + 1];
	unit_triggered_name(t->u, name, sizeof(name));
	return name[0] ? units_get(t->u->m, name, NULL) : NULL;
}

/* The earliest elapse after `after` (us, realtime), 0 when none. */
static uint64_t next_elapse(struct tmr *t, uint64_t after)
{
	const struct unit_timer *c = &t->u->def->timer;
	uint64_t best = 0;
#define CONSIDER(v)                                                                                \
	do {                                                                                       \
		uint64_t v_ = (v);                                                                 \
		if (v_ > after && (!best || v_ < best))                                            \
			best = v_;                                                                 \
	} while (0)
	for (size_t i = 0; i < c->non_calendar; i++) {
		int64_t next;
		int64_t a = (int64_t)(after / 1000000u);
		if (unit_calendar_next(&c->on_calendar[i], a,
		                       c->on_calendar[i].utc ? 0 : tz_offset(a), &next) == 0)
			CONSIDER((uint64_t)next * 1000000u);
	}
	uint64_t boot = boot_realtime_us();
	if (c->on_boot_us)
		CONSIDER(boot + c->on_boot_us);
	if (c->on_startup_us)
		CONSIDER(t->u->m->started_us + c->on_startup_us);
	if (c->on_active_us)
		CONSIDER(t->activated_us + c->on_active_us);
	struct unit *x = target_unit(t);
	/* systemd's base: when the unit last began to start, so a oneshot
	 * (never "active") repeats too */
	uint64_t began = x && x->inactive_exit_us ? x->inactive_exit_us
	                 : x                      ? x->active_enter_us
	                                          : 0;
	if (c->on_unit_active_us && began)
		CONSIDER(began + c->on_unit_active_us);
	if (x && c->on_unit_inactive_us && x->inactive_enter_us)
		CONSIDER(x->inactive_enter_us + c->on_unit_inactive_us);
#undef CONSIDER
	if (best && c->randomized_delay_us) {
		uint64_t r = 0;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == sizeof(r))
			best += r % c->randomized_delay_us;
	}
	return best;
}

static void arm(struct tmr *t)
{
	uint64_t now = units_now_realtime_us();
	/* after the last trigger, so a trigger never repeats the same second */
	t->next_us = next_elapse(t, t->last_us > now ? t->last_us : now);
	struct itimerspec its = {0};
	if (t->next_us) {
		its.it_value.tv_sec = (time_t)(t->next_us / 1000000u);
		its.it_value.tv_nsec = (long)(t->next_us % 1000000u) * 1000;
	}
	timerfd_settime(t->src.fd, TFD_TIMER_ABSTIME, &its, NULL);
	if (t->next_us)
		unit_set_active(t->u, UNIT_ACTIVE_ACTIVE, "waiting");
	else if (t->u->def->timer.remain_after_elapse)
		unit_set_active(t->u, UNIT_ACTIVE_ACTIVE, "elapsed");
	else
		unit_set_active(t->u, UNIT_ACTIVE_INACTIVE, "dead");
}

static void trigger(struct tmr *t)
{
	struct unit *x = target_unit(t);
	struct err err = {0};
	t->last_us = units_now_realtime_us();
	if (t->u->def->timer.persistent)
		stamp_touch(t);
	if (!x || !x->def) {
		log_warn("units: %s: the unit it starts is not there", t->u->name);
		return;
	}
	x->triggered_by = t->u;
	if (x->active == UNIT_ACTIVE_INACTIVE || x->active == UNIT_ACTIVE_FAILED) {
		log_info("units: %s: starting %s", t->u->name, x->name);
		if (units_job_add(t->u->m, x, JOB_START, NULL, &err) < 0)
			log_warn("units: %s: %s", t->u->name, err.msg);
		units_dispatch_later(t->u->m);
	}
}

void timer_target_changed(struct unit *target)
{
	struct units *m = target->m;
	char name[UNIT_NAME_MAX + 1];
	for (size_t i = 0; i < m->nunits; i++) {
		struct unit *u = m->units[i];
		struct tmr *t = u->type_data;
		if (u->type != UNIT_TIMER || !t || t->src.fd < 0 || !u->def ||
		    (!u->def->timer.on_unit_active_us && !u->def->timer.on_unit_inactive_us))
			continue;
		unit_triggered_name(u, name, sizeof(name));
		if (strcmp(name, target->name) == 0)
			arm(t);
	}
}

static void on_timer(struct ev_source *src, uint32_t events)
{
	struct tmr *t = src->data;
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) != sizeof(n))
		return;
	trigger(t);
	arm(t);
}

static struct tmr *tmr_get(struct unit *u)
{
	struct tmr *t = u->type_data;
	if (!t) {
		if (!(t = calloc(1, sizeof(*t))))
			return NULL;
		t->u = u;
		t->src = (struct ev_source){.fd = -1, .fn = on_timer, .data = t};
		u->type_data = t;
	}
	return t;
}

/* Its timerfd, watched. */
static int tmr_open(struct tmr *t, struct err *err)
{
	struct unit *u = t->u;
	if (t->src.fd < 0) {
		int fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
		if (fd < 0)
			return err_set_errno(err, -errno, "unit \"%s\": timerfd: %m", u->name);
		t->src.fd = fd;
		if (ev_add(u->m->loop, &t->src, EPOLLIN) < 0) {
			close(fd);
			t->src.fd = -1;
			return err_set(err, -EIO, ERR_INTERNAL,
			               "unit \"%s\": cannot watch its timer", u->name);
		}
	}
	return 0;
}

static int tmr_start(struct unit *u, struct err *err)
{
	struct tmr *t = tmr_get(u);
	if (!t)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	int r = tmr_open(t, err);
	if (r < 0)
		return r;
	t->activated_us = units_now_realtime_us();
	if (u->def->timer.persistent && u->def->timer.non_calendar) {
		/* a run missed while kin was down: now */
		uint64_t last = stamp_read(t);
		t->last_us = last;
		if (last && next_elapse(t, last) <= t->activated_us) {
			log_info("units: %s: a run was missed (Persistent=yes)", u->name);
			trigger(t);
		}
	}
	arm(t);
	return 0;
}

static int tmr_stop(struct unit *u, struct err *err)
{
	struct tmr *t = u->type_data;
	(void)err;
	if (t && t->src.fd >= 0) {
		ev_close(u->m->loop, &t->src);
		t->next_us = 0;
	}
	unit_set_active(u, UNIT_ACTIVE_INACTIVE, "dead");
	return 0;
}

static void tmr_status(struct unit *u, struct unit_status *st)
{
	struct tmr *t = u->type_data;
	if (t)
		st->next_elapse_us = t->next_us;
}

static void tmr_free(struct unit *u)
{
	tmr_stop(u, NULL);
	free(u->type_data);
	u->type_data = NULL;
}

/* ---- re-exec (units.h): when it started and last fired go along ---- */

enum { TM_ACTIVATED = UNIT_STATE_TYPE_TIMER, TM_LAST };

static const struct state_num tmr_nums[] = {
    STATE_NUM(TM_ACTIVATED, struct tmr, activated_us),
    STATE_NUM(TM_LAST, struct tmr, last_us),
};

static void tmr_save(struct unit *u, struct state_w *w)
{
	if (u->type_data)
		state_put_nums(w, u->type_data, tmr_nums, ARRAY_SIZE(tmr_nums));
}

static int tmr_restore(struct unit *u, struct state_in *in, const struct state_field *f)
{
	(void)in;
	if (f->tag != TM_ACTIVATED && f->tag != TM_LAST)
		return 0;
	struct tmr *t = tmr_get(u);
	return t ? state_get_num(f, t, tmr_nums, ARRAY_SIZE(tmr_nums)) : -ENOMEM;
}

static int tmr_resume(struct unit *u, char *why, size_t size)
{
	struct tmr *t = u->type_data;
	struct err err = {0};
	if (u->active != UNIT_ACTIVE_ACTIVE)
		return 0;
	if (!t || tmr_open(t, &err) < 0) {
		snprintf(why, size, "%s", t ? err.msg : "out of memory");
		return -ENOMEM;
	}
	/* One that fell due while no kin listened fires now, then the next. */
	uint64_t due = next_elapse(t, t->last_us ? t->last_us : t->activated_us);
	if (due && due <= units_now_realtime_us())
		trigger(t);
	arm(t);
	return 0;
}

const struct unit_ops units_timer_ops = {
    .save = tmr_save,
    .restore = tmr_restore,
    .resume = tmr_resume,
    .start = tmr_start,
    .stop = tmr_stop,
    .status = tmr_status,
    .free = tmr_free,
};
