/* registry: the participants of a handover (keep.h) and the loops over
 * them. The list is kept sorted by level (registration order within a
 * level), so every loop is a walk in one order and stop walks back. */
#include "keep/keep-int.h"

#include <string.h>

int keep_new(struct keep **ret)
{
	struct keep *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*ret = k;
	return 0;
}

void keep_free(struct keep *k)
{
	if (k)
		keep_file_close(k, false);
	free(k);
}

int keep_register(struct keep *k, const struct keep_part *p)
{
	size_t i;
	for (i = 0; i < k->n; i++)
		if (k->parts[i].p.tag == p->tag)
			return -EEXIST;
	if (k->n == KEEP_PARTS_MAX)
		return -ENOSPC;
	for (i = k->n; i > 0 && k->parts[i - 1].p.level > p->level; i--)
		k->parts[i] = k->parts[i - 1];
	k->parts[i] = (struct keep_entry){.p = *p};
	k->n++;
	return 0;
}

void keep_unregister(struct keep *k, void *data)
{
	size_t j = 0;
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.data != data)
			k->parts[j++] = k->parts[i];
	k->n = j;
}

void keep_take_from(struct keep *k, enum keep_how how, struct state_in *in, int *kept, size_t nkept)
{
	k->how = in ? how : KEEP_FRESH;
	k->in = in;
	k->kept = kept;
	k->nkept = nkept;
}

int keep_record(const struct keep *k, uint16_t tag, struct state_field *ret)
{
	if (!k->in)
		return 0;
	struct state_r r = k->in->top;
	while (state_next(&r, ret) > 0)
		if (ret->tag == tag)
			return 1;
	return 0;
}

static const char *how_name(enum keep_how how)
{
	return how == KEEP_REEXEC ? "re-exec" : how == KEEP_ADOPT ? "adopt" : "start";
}

void keep_from_for(const struct keep *k, uint16_t tag, struct keep_from *ret,
                   struct state_field *buf)
{
	*ret = (struct keep_from){.how = k->how,
	                          .how_name = how_name(k->how),
	                          .in = k->in,
	                          .record = keep_record(k, tag, buf) ? buf : NULL,
	                          .kept = k->kept,
	                          .nkept = k->nkept};
}

void keep_start(struct keep *k, unsigned level)
{
	/* By index: a start may register participants of a later level. */
	for (size_t i = 0; i < k->n && k->parts[i].p.level <= level; i++) {
		struct keep_entry *e = &k->parts[i];
		if (e->started)
			continue;
		e->started = true;
		if (!e->p.start)
			continue;
		struct state_field f;
		struct keep_from from;
		keep_from_for(k, e->p.tag, &from, &f);
		int r = e->p.start(e->p.data, &from);
		if (r < 0)
			log_error("%s: %s could not be taken over: %s", from.how_name, e->p.name,
			          strerror(-r));
	}
}

int keep_parts_save(struct keep *k, struct state_w *w, bool wire, struct err *err)
{
	for (size_t i = 0; i < k->n; i++) {
		const struct keep_part *p = &k->parts[i].p;
		int r = p->save && p->wire == wire ? p->save(p->data, w, p->tag, err) : 0;
		if (r < 0)
			return r;
	}
	return 0;
}

int keep_save(struct keep *k, struct state_w *w, struct err *err)
{
	int r = keep_parts_save(k, w, false, err);
	return r < 0 ? r : keep_parts_save(k, w, true, err);
}

void keep_parts_resume(struct keep *k)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.resume)
			k->parts[i].p.resume(k->parts[i].p.data);
}

const char *keep_uncarried(const struct keep *k)
{
	const char *what;
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.uncarried && (what = k->parts[i].p.uncarried(k->parts[i].p.data)))
			return what;
	return NULL;
}

bool keep_settled(const struct keep *k, char *why, size_t size)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.settled && !k->parts[i].p.settled(k->parts[i].p.data, why, size))
			return false;
	return true;
}

size_t keep_children(const struct keep *k)
{
	size_t n = 0;
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.children)
			n += k->parts[i].p.children(k->parts[i].p.data);
	return n;
}

void keep_parts_set_keeper(struct keep *k, const struct keep_keeper *kk, bool fresh)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.set_keeper)
			k->parts[i].p.set_keeper(k->parts[i].p.data, kk, fresh);
}

/* Whether p is still registered (a hook may have let another part go). */
static bool registered(const struct keep *k, const struct keep_part *p)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->parts[i].p.tag == p->tag && k->parts[i].p.data == p->data)
			return true;
	return false;
}

void keep_stop(struct keep *k)
{
	keep_reexec_stop(k);
	keep_file_close(k, false); /* kept: kin did not stop its work */
	/* A copy: the hooks unregister parts as they go. */
	struct keep_part parts[KEEP_PARTS_MAX];
	size_t n = k->n;
	for (size_t i = 0; i < n; i++)
		parts[i] = k->parts[i].p;
	for (size_t i = n; i-- > 0;)
		if (parts[i].stop && registered(k, &parts[i]))
			parts[i].stop(parts[i].data);
	/* The served parts' memory after the server's (KEEP_LEVEL_RPC). */
	for (int served = 0; served <= 1; served++)
		for (size_t i = n; i-- > 0;)
			if (parts[i].free && parts[i].served == served && registered(k, &parts[i]))
				parts[i].free(parts[i].data);
}
