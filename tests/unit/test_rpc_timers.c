/* rpc timers (rpc/timers.c): the deadline heap the server arms its one
 * timerfd from. Entries come out in time order whatever order they went
 * in, removal from anywhere keeps the order, moving one re-sorts it. */
#include "rpc/rpc-int.h"
#include "unit.h"

#define N 500

/* Pops everything; checks non-decreasing times and that each entry is
 * unqueued once out. Returns how many came out. */
static size_t drain_in_order(struct rpc_timers *t)
{
	uint64_t last = 0;
	size_t n = 0;
	struct rpc_timer *e;
	while ((e = rpc_timers_first(t))) {
		CHECK(e->when_ns >= last);
		last = e->when_ns;
		rpc_timers_remove(t, e);
		CHECK_EQ(e->slot, 0);
		n++;
	}
	return n;
}

TEST(rpc_timers_order_remove_move)
{
	static struct rpc_timer e[N];
	struct rpc_timers t = {0};
	uint32_t seed = 12345;
	for (size_t i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		CHECK_EQ(rpc_timers_add(&t, &e[i], 1 + (seed >> 8) % 1000), 0);
	}
	CHECK_EQ(t.n, N);
	/* Remove every third from wherever it sits; removing twice is a no-op. */
	for (size_t i = 0; i < N; i += 3) {
		rpc_timers_remove(&t, &e[i]);
		rpc_timers_remove(&t, &e[i]);
	}
	CHECK_EQ(t.n, N - (N + 2) / 3);
	/* Move some earlier and some later. */
	for (size_t i = 1; i < N; i += 7)
		if (e[i].slot)
			CHECK_EQ(rpc_timers_add(&t, &e[i], i % 2 ? 0 : 5000), 0);
	CHECK_EQ(t.n, N - (N + 2) / 3);
	CHECK_EQ(rpc_timers_first(&t)->when_ns, 0);
	CHECK_EQ(drain_in_order(&t), N - (N + 2) / 3);
	CHECK(rpc_timers_first(&t) == NULL);

	/* Equal times, and the last entry removed. */
	for (size_t i = 0; i < 10; i++)
		rpc_timers_add(&t, &e[i], 7);
	rpc_timers_remove(&t, t.heap[t.n - 1]);
	CHECK_EQ(drain_in_order(&t), 9);

	/* Done with entries still queued leaves them unqueued. */
	rpc_timers_add(&t, &e[0], 1);
	rpc_timers_add(&t, &e[1], 2);
	rpc_timers_done(&t);
	CHECK_EQ(e[0].slot, 0);
	CHECK_EQ(e[1].slot, 0);
	CHECK(t.heap == NULL && t.n == 0);
}
