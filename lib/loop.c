/* loop: the epoll set every module registers its fds with. A source removed
 * while a batch of events is being dispatched is struck from the batch, so a
 * handler may free other sources (a connection closing its peer, a reaped
 * child) without a use-after-free. Adds deferred (ev_defer) are made in
 * slices of EV_DEFER_SLICE_NS between turns. */
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
};

int ev_loop_new(struct ev_loop **ret_loop)
{
	struct ev_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
	list_init(&loop->deferred);
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

/* The oldest deferred adds, for a slice of time. */
static void add_deferred(struct ev_loop *loop)
{
	uint64_t end = now_monotonic_ns() + EV_DEFER_SLICE_NS;
	unsigned n = 0;
	while (!list_is_empty(&loop->deferred) && (n++ % 16 || now_monotonic_ns() < end)) {
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
	if (!list_is_empty(&loop->deferred)) {
		add_deferred(loop);
		if (!list_is_empty(&loop->deferred))
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
