/* loop: the epoll set every module registers its fds with. A source removed
 * while a batch of events is being dispatched is struck from the batch, so a
 * handler may free other sources (a connection closing its peer, a reaped
 * child) without a use-after-free. */
#include "lib.h"

#include <string.h>
#include <sys/epoll.h>

#define EV_BATCH 64

struct ev_loop {
	int epfd;
	struct epoll_event batch[EV_BATCH];
	int batch_len;
	int batch_pos;
};

int ev_loop_new(struct ev_loop **ret_loop)
{
	struct ev_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return -ENOMEM;
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
	return ev_ctl(loop, EPOLL_CTL_ADD, src, events);
}

int ev_mod(struct ev_loop *loop, struct ev_source *src, uint32_t events)
{
	return ev_ctl(loop, EPOLL_CTL_MOD, src, events);
}

int ev_del(struct ev_loop *loop, struct ev_source *src)
{
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
