/* timers: the server's deadlines (calls with a client timeout, frames that
 * started arriving) in one binary min-heap, so one timerfd per server,
 * armed for the earliest, serves them all. Each entry knows its slot in
 * the heap: removing one (a call answered in time, the common case) costs
 * O(log n), never a scan. Bounded by what it holds: calls and connections
 * are bounded by the server's limits. */
#include "rpc/rpc-int.h"

#include <string.h>

static void heap_set(struct rpc_timers *t, size_t i, struct rpc_timer *e)
{
	t->heap[i] = e;
	e->slot = i + 1;
}

static void sift_up(struct rpc_timers *t, size_t i)
{
	struct rpc_timer *e = t->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (t->heap[parent]->when_ns <= e->when_ns)
			break;
		heap_set(t, i, t->heap[parent]);
		i = parent;
	}
	heap_set(t, i, e);
}

static void sift_down(struct rpc_timers *t, size_t i)
{
	struct rpc_timer *e = t->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		uint64_t best = e->when_ns;
		if (l < t->n && t->heap[l]->when_ns < best)
			m = l, best = t->heap[l]->when_ns;
		if (l + 1 < t->n && t->heap[l + 1]->when_ns < best)
			m = l + 1;
		if (m == i)
			break;
		heap_set(t, i, t->heap[m]);
		i = m;
	}
	heap_set(t, i, e);
}

int rpc_timers_add(struct rpc_timers *t, struct rpc_timer *e, uint64_t when_ns)
{
	if (e->slot) {
		uint64_t old = e->when_ns;
		e->when_ns = when_ns;
		if (when_ns < old)
			sift_up(t, e->slot - 1);
		else
			sift_down(t, e->slot - 1);
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct rpc_timer **p = reallocarray(t->heap, cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->heap = p;
		t->cap = cap;
	}
	e->when_ns = when_ns;
	heap_set(t, t->n++, e);
	sift_up(t, t->n - 1);
	return 0;
}

void rpc_timers_remove(struct rpc_timers *t, struct rpc_timer *e)
{
	if (!e->slot)
		return;
	size_t i = e->slot - 1;
	e->slot = 0;
	struct rpc_timer *last = t->heap[--t->n];
	if (i == t->n)
		return;
	heap_set(t, i, last);
	if (i > 0 && t->heap[(i - 1) / 2]->when_ns > last->when_ns)
		sift_up(t, i);
	else
		sift_down(t, i);
}

struct rpc_timer *rpc_timers_first(const struct rpc_timers *t)
{
	return t->n ? t->heap[0] : NULL;
}

void rpc_timers_done(struct rpc_timers *t)
{
	for (size_t i = 0; i < t->n; i++)
		t->heap[i]->slot = 0;
	free(t->heap);
	*t = (struct rpc_timers){0};
}
