/* loop: the epoll set every module registers its fds with. A source removed
 * while a batch of events is being dispatched is struck from the batch, so a
 * handler may free other sources (a connection closing its peer, a reaped
 * child) without a use-after-free. Adds deferred (ev_defer) are made, and
 * a retired epoll set emptied (ev_retire), in slices of EV_DEFER_SLICE_NS
 * between turns. */
#include "lib.h"

#include <string.h>
#include <sys/epoll.h>

#define EV_BATCH          64
#define EV_DEFER_SLICE_NS 1000000ull

struct ev_loop {
	int epfd;
	struct epoll_event batch[EV_BATCH];
	int batch_len;
	int batch_pos;
	bool defer;
	struct list_node deferred; /* struct ev_source, oldest first */
	int retired;               /* an old epoll set being emptied, or -1 */
	uint64_t *retired_fds;     /* bitmap: what may still be in it */
	size_t retired_nbits, retired_pos;
};

int ev_loop_new(struct ev_loop **ret_loop)
{
	struct ev_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	list_init(&loop->deferred);
	loop->retired = -1;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int r = -errno;
		free(loop);
		return r;
	}
	*ret_loop = loop;
	return 0;
}

void ev_loop_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	struct ev_source *src, *tmp;
	list_for_each_safe(src, tmp, &loop->deferred, deferred)
		list_remove(&src->deferred);
	if (loop->retired >= 0)
		close(loop->retired);
	free(loop->retired_fds);
	close(loop->epfd);
	free(loop);
}

static int ev_ctl(struct ev_loop *loop, int op, struct ev_source *src, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = src};
	return epoll_ctl(loop->epfd, op, src->fd, &ev) < 0 ? -errno : 0;
}

int ev_add(struct ev_loop *loop, struct ev_source *src, uint32_t events)
{
	if (!loop->defer)
		return ev_ctl(loop, EPOLL_CTL_ADD, src, events);
	if (src->fd < 0 || list_is_linked(&src->deferred))
		return src->fd < 0 ? -EBADF : -EEXIST;
	src->deferred_events = events;
	list_append(&loop->deferred, &src->deferred);
	return 0;
}

void ev_defer(struct ev_loop *loop, bool on)
{
	loop->defer = on;
}

int ev_loop_fd(const struct ev_loop *loop)
{
	return loop->epfd;
}

int ev_retire(struct ev_loop *loop, int old_epfd, const uint64_t *fds, size_t nbits)
{
	if (loop->retired >= 0) {
		close(old_epfd); /* one at a time: this one all at once */
		return -EBUSY;
	}
	size_t words = (nbits + 63) / 64;
	loop->retired_fds = malloc(words * sizeof(uint64_t));
	if (!loop->retired_fds) {
		close(old_epfd);
		return -ENOMEM;
	}
	memcpy(loop->retired_fds, fds, words * sizeof(uint64_t));
	loop->retired = old_epfd;
	loop->retired_nbits = words * 64;
	loop->retired_pos = 0;
	return 0;
}

static bool slice_left(unsigned *n, uint64_t end)
{
	return (*n)++ % 16 || now_monotonic_ns() < end;
}

/* The retired set's fds taken out one by one (each a small step; its
 * close would take them all out at once), then the set closed. */
static void retire_some(struct ev_loop *loop, uint64_t end)
{
	unsigned n = 0;
	while (loop->retired_pos < loop->retired_nbits) {
		size_t i = loop->retired_pos;
		uint64_t word = loop->retired_fds[i / 64] >> (i % 64);
		if (!word) { /* the rest of this word: none */
			loop->retired_pos = (i / 64 + 1) * 64;
			continue;
		}
		i += (size_t)__builtin_ctzll(word);
		if (!slice_left(&n, end)) {
			loop->retired_pos = i;
			return;
		}
		if ((int)i != loop->retired)
			epoll_ctl(loop->retired, EPOLL_CTL_DEL, (int)i, NULL);
		loop->retired_pos = i + 1;
	}
	close(loop->retired);
	loop->retired = -1;
	free(loop->retired_fds);
	loop->retired_fds = NULL;
}

/* The oldest deferred adds, for a slice of time. */
static void add_deferred(struct ev_loop *loop, uint64_t end)
{
	unsigned n = 0;
	while (!list_is_empty(&loop->deferred) && slice_left(&n, end)) {
		struct list_node *first = loop->deferred.next;
		struct ev_source *src = list_entry(first, struct ev_source, deferred);
		list_remove(first);
		int r = ev_ctl(loop, EPOLL_CTL_ADD, src, src->deferred_events);
		if (r < 0)
			log_error("loop: cannot watch fd %d (added late): %s; its events are lost",
			          src->fd, strerror(-r));
	}
}

int ev_mod(struct ev_loop *loop, struct ev_source *src, uint32_t events)
{
	if (list_is_linked(&src->deferred)) {
		src->deferred_events = events;
		return 0;
	}
	return ev_ctl(loop, EPOLL_CTL_MOD, src, events);
}

int ev_del(struct ev_loop *loop, struct ev_source *src)
{
	if (list_is_linked(&src->deferred)) {
		list_remove(&src->deferred);
		return 0;
	}
	for (int i = loop->batch_pos; i < loop->batch_len; i++)
		if (loop->batch[i].data.ptr == src)
			loop->batch[i].data.ptr = NULL;
	return epoll_ctl(loop->epfd, EPOLL_CTL_DEL, src->fd, NULL) < 0 ? -errno : 0;
}

void ev_close(struct ev_loop *loop, struct ev_source *src)
{
	if (src->fd < 0)
		return;
	if (loop)
		ev_del(loop, src);
	close(src->fd);
	src->fd = -1;
}

int ev_run_once(struct ev_loop *loop, int timeout_ms)
{
	if (!list_is_empty(&loop->deferred) || loop->retired >= 0) {
		uint64_t end = now_monotonic_ns() + EV_DEFER_SLICE_NS;
		add_deferred(loop, end);
		if (list_is_empty(&loop->deferred) && loop->retired >= 0)
			retire_some(loop, end);
		if (!list_is_empty(&loop->deferred) || loop->retired >= 0)
			timeout_ms = 0;
	}
	int n = epoll_wait(loop->epfd, loop->batch, EV_BATCH, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	loop->batch_len = n;
	for (loop->batch_pos = 0; loop->batch_pos < n;) {
		struct epoll_event *ev = &loop->batch[loop->batch_pos++];
		struct ev_source *src = ev->data.ptr;
		if (src)
			src->fn(src, ev->events);
	}
	loop->batch_len = loop->batch_pos = 0;
	return n;
}
