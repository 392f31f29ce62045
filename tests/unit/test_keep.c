/* The handover's registry (keep/keep.h): participants start, save and
 * answer in level order whatever order they registered in, each is
 * started once and handed its own record, tags are unique, and a part
 * that goes is never called again. */
#include "unit.h"
#include "keep/keep.h"

#include <string.h>

struct probe {
	char log[256];
	const char *why; /* settled: NULL, or false with this */
	const char *uncarried;
	size_t children;
	uint64_t got; /* the number in the record handed to start */
	int seen;     /* what start was handed: 0 none, 1 a record, 2 fresh */
};

static struct probe *log_to;

static void note(struct probe *p, const char *what)
{
	strncat(log_to->log, what, sizeof(log_to->log) - strlen(log_to->log) - 1);
	(void)p;
}

static int p_start(void *data, const struct keep_from *from)
{
	struct probe *p = data;
	note(p, p->why ? "S!" : "S");
	p->seen = from->record ? 1 : from->how == KEEP_FRESH ? 2 : 3;
	if (from->record && state_get_u64(from->record, &p->got) < 0)
		p->got = 0;
	return 0;
}

static int p_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	struct probe *p = data;
	(void)err;
	note(p, "W");
	state_put_u64(w, tag, 1000 + tag);
	return 0;
}

static bool p_settled(void *data, char *why, size_t size)
{
	struct probe *p = data;
	if (p->why)
		snprintf(why, size, "%s", p->why);
	return !p->why;
}

static const char *p_uncarried(void *data)
{
	return ((struct probe *)data)->uncarried;
}

static size_t p_children(void *data)
{
	return ((struct probe *)data)->children;
}

static struct keep_part part(uint16_t tag, unsigned level, struct probe *p)
{
	return (struct keep_part){.name = "probe",
	                          .tag = tag,
	                          .level = level,
	                          .start = p_start,
	                          .save = p_save,
	                          .uncarried = p_uncarried,
	                          .settled = p_settled,
	                          .children = p_children,
	                          .data = p};
}

TEST(keep_level_order_and_records)
{
	struct probe shared = {0}, a = {.children = 2}, b = {.children = 3}, c = {0};
	struct keep *k = NULL;
	CHECK_EQ(keep_new(&k), 0);
	log_to = &shared;
	/* registered out of order: c (level 30), a (10), b (20) */
	struct keep_part pc = part(3, 30, &c), pa = part(1, 10, &a), pb = part(2, 20, &b);
	CHECK_EQ(keep_register(k, &pc), 0);
	CHECK_EQ(keep_register(k, &pa), 0);
	CHECK_EQ(keep_register(k, &pb), 0);
	struct keep_part dup = part(2, 40, &c);
	CHECK_EQ(keep_register(k, &dup), -EEXIST);

	struct state_w w;
	struct err err = {0};
	state_w_init(&w);
	CHECK_EQ(keep_save(k, &w, &err), 0);
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	state_w_free(&w);
	struct state_in in;
	uint32_t format;
	CHECK_EQ(state_in_open(fd, &in, &format), 0);
	close(fd);

	/* the next kin: the state handed out, a level at a time */
	shared.log[0] = '\0';
	keep_take_from(k, KEEP_REEXEC, &in, NULL, 0);
	keep_start(k, 15);
	CHECK(strcmp(shared.log, "S") == 0);
	CHECK_EQ(a.seen, 1);
	CHECK_EQ(a.got, 1001u);
	CHECK_EQ(b.seen, 0);
	keep_start(k, KEEP_LEVEL_MAX);
	keep_start(k, KEEP_LEVEL_MAX); /* once each */
	CHECK(strcmp(shared.log, "SSS") == 0);
	CHECK_EQ(b.got, 1002u);
	CHECK_EQ(c.got, 1003u);
	state_in_close(&in);

	char why[64] = "";
	CHECK(keep_settled(k, why, sizeof(why)));
	CHECK_EQ(keep_children(k), 5u);
	CHECK(keep_uncarried(k) == NULL);
	b.why = "b is starting";
	c.uncarried = "c";
	CHECK(!keep_settled(k, why, sizeof(why)));
	CHECK(strcmp(why, "b is starting") == 0);
	CHECK(strcmp(keep_uncarried(k), "c") == 0);

	/* b goes: never asked again */
	keep_unregister(k, &b);
	CHECK(keep_settled(k, why, sizeof(why)));
	CHECK_EQ(keep_children(k), 2u);
	keep_free(k);
}

TEST(keep_fresh_and_late_registration)
{
	struct probe shared = {0}, a = {0}, late = {0};
	struct keep *k = NULL;
	CHECK_EQ(keep_new(&k), 0);
	log_to = &shared;
	struct keep_part pa = part(1, KEEP_LEVEL_CELLS, &a);
	CHECK_EQ(keep_register(k, &pa), 0);
	keep_start(k, KEEP_LEVEL_CELLS);
	CHECK_EQ(a.seen, 2); /* no state: fresh */
	/* a part registered after its level went by starts at the next call */
	struct keep_part pl = part(5, KEEP_LEVEL_ZONES, &late);
	CHECK_EQ(keep_register(k, &pl), 0);
	struct state_field f;
	CHECK_EQ(keep_record(k, 5, &f), 0);
	keep_start(k, KEEP_LEVEL_MAX);
	CHECK_EQ(late.seen, 2);
	CHECK(keep_keeper(k) == NULL); /* no state file */
	CHECK(keep_file_dir(k) == NULL);
	keep_changed(k); /* nothing to write: no state file */
	keep_free(k);
}

/* ---- kin's stop (keep_stop) ---- */

struct stopper {
	char name;
	struct keep *k;
	void *drop; /* its free lets this part go too (NULL: none) */
};

static char stop_log[64];

static void s_note(const struct stopper *s, char what)
{
	size_t n = strlen(stop_log);
	if (n + 3 < sizeof(stop_log)) {
		stop_log[n] = what;
		stop_log[n + 1] = s->name;
		stop_log[n + 2] = '\0';
	}
}

static void s_stop(void *data)
{
	s_note(data, 's');
}

static void s_free(void *data)
{
	struct stopper *s = data;
	s_note(s, 'f');
	keep_unregister(s->k, s);
	if (s->drop)
		keep_unregister(s->k, s->drop);
}

static struct keep_part stop_part(uint16_t tag, unsigned level, bool served, struct stopper *s)
{
	return (struct keep_part){.name = "stopper",
	                          .tag = tag,
	                          .level = level,
	                          .stop = s_stop,
	                          .free = s_free,
	                          .served = served,
	                          .data = s};
}

/* The order kin's end has (keep.h's levels), with today's participants'
 * hooks: every stop from the last level down (the shim's tasks, the
 * services, the cells library), then the frees of parts not served (the
 * units, a machine's end, the gateway, the server), then the served
 * parts' frees (the tasks, the services, init's cells) — whatever order
 * they registered in; within a level the last registered first. */
TEST(keep_stop_order)
{
	struct keep *k = NULL;
	CHECK_EQ(keep_new(&k), 0);
	struct stopper task = {'T', k, NULL}, api = {'A', k, NULL}, units = {'U', k, NULL},
	               tls = {'G', k, NULL}, cells = {'C', k, NULL}, rpc = {'R', k, NULL},
	               api2 = {'B', k, NULL}, machine = {'M', k, NULL};
	struct keep_part parts[] = {
	    stop_part(KEEP_TAG_RPC, KEEP_LEVEL_RPC, false, &rpc),
	    stop_part(KEEP_TAG_CELLS, KEEP_LEVEL_CELLS, true, &cells),
	    stop_part(KEEP_TAG_TASK, KEEP_LEVEL_TASK, true, &task),
	    stop_part(KEEP_TAG_UNITS, KEEP_LEVEL_UNITS, false, &units),
	    stop_part(KEEP_TAG_API, KEEP_LEVEL_API, true, &api),
	    stop_part(KEEP_TAG_TLS, KEEP_LEVEL_TLS, false, &tls),
	    stop_part(KEEP_TAG_ZONES, KEEP_LEVEL_API, true, &api2), /* after api, same level */
	    stop_part(KEEP_TAG_MACHINE, KEEP_LEVEL_MACHINE, false, &machine),
	};
	/* Only the tasks, the services and the cells stop before they go. */
	parts[0].stop = parts[3].stop = parts[5].stop = parts[7].stop = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		CHECK_EQ(keep_register(k, &parts[i]), 0);
	stop_log[0] = '\0';
	keep_stop(k);
	CHECK(strcmp(stop_log, "sTsBsAsCfUfMfGfRfTfBfAfC") == 0);
	keep_stop(k); /* every part went: nothing is called again */
	CHECK(strcmp(stop_log, "sTsBsAsCfUfMfGfRfTfBfAfC") == 0);
	keep_free(k);
}

/* A part another part's free let go is not freed by the walk. */
TEST(keep_stop_skips_what_went)
{
	struct keep *k = NULL;
	CHECK_EQ(keep_new(&k), 0);
	struct stopper low = {'L', k, NULL}, high = {'H', k, &low};
	struct keep_part pl = stop_part(1, KEEP_LEVEL_CELLS, false, &low);
	struct keep_part ph = stop_part(2, KEEP_LEVEL_UNITS, false, &high);
	CHECK_EQ(keep_register(k, &pl), 0);
	CHECK_EQ(keep_register(k, &ph), 0);
	stop_log[0] = '\0';
	keep_stop(k);
	CHECK(strcmp(stop_log, "sHsLfH") == 0);
	keep_free(k);
}
