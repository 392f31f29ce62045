/* buf: the input buffer and output queue of lib/buf.h — allocation,
 * growth under a cap and a shared budget, the non-blocking read and
 * write, and giving large buffers back once empty. */
#include "lib/lib.h"

#include <string.h>
#include <sys/socket.h>

/* data becomes new_cap bytes (0: freed), and the shared total follows.
 * -ENOMEM leaves everything as it was. */
static int resize(uint8_t **data, size_t *cap, size_t *total, size_t new_cap)
{
	if (new_cap) {
		uint8_t *p = realloc(*data, new_cap);
		if (!p)
			return -ENOMEM;
		*data = p;
	} else {
		free(*data);
		*data = NULL;
	}
	if (total)
		*total = *total - *cap + new_cap;
	*cap = new_cap;
	return 0;
}

/* Would growing from cap to new_cap take the shared total past budget?
 * Buffers up to keep are always allowed: every stream gets a small one. */
static bool over_budget(const size_t *total, size_t budget, size_t keep, size_t cap, size_t new_cap)
{
	return total && new_cap > keep && *total - cap + new_cap > budget;
}

/* ---- input -------------------------------------------------------------------------- */

void buf_in_init(struct buf_in *b, size_t min, size_t keep, size_t budget, size_t *total)
{
	*b = (struct buf_in){.min = min, .keep = keep, .budget = budget, .total = total};
}

ssize_t buf_in_read(struct buf_in *b, int fd, bool socket)
{
	if (!b->data && resize(&b->data, &b->cap, b->total, b->min) < 0)
		return -ENOMEM;
	if (b->len == b->cap)
		return -EAGAIN;
	ssize_t n = socket ? recv(fd, b->data + b->len, b->cap - b->len, MSG_DONTWAIT)
	                   : read(fd, b->data + b->len, b->cap - b->len);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	b->len += (size_t)n;
	return n;
}

static void in_move_to_front(struct buf_in *b)
{
	if (!b->off)
		return;
	memmove(b->data, b->data + b->off, b->len - b->off);
	b->len -= b->off;
	b->off = 0;
}

int buf_in_reserve(struct buf_in *b, size_t n)
{
	if (n <= b->cap - b->off)
		return 0;
	in_move_to_front(b);
	if (n <= b->cap)
		return 0;
	if (over_budget(b->total, b->budget, b->keep, b->cap, n))
		return -ENOBUFS;
	return resize(&b->data, &b->cap, b->total, n);
}

int buf_in_append(struct buf_in *b, const void *p, size_t n)
{
	int r = buf_in_reserve(b, buf_in_pending(b) + n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void buf_in_compact(struct buf_in *b)
{
	in_move_to_front(b);
	if (b->len == 0 && b->cap > b->keep)
		buf_in_free(b);
}

void buf_in_free(struct buf_in *b)
{
	resize(&b->data, &b->cap, b->total, 0);
	b->off = b->len = 0;
}

/* ---- output ------------------------------------------------------------------------- */

void buf_out_init(struct buf_out *b, size_t max, size_t keep, size_t budget, size_t *total)
{
	*b = (struct buf_out){.max = max, .keep = keep, .budget = budget, .total = total};
}

int buf_out_reserve(struct buf_out *b, size_t n, uint8_t **ret)
{
	size_t pending = buf_out_pending(b);
	if (pending + n > b->max)
		return -ENOBUFS;
	if (b->len + n > b->cap && b->off) {
		memmove(b->data, b->data + b->off, pending);
		b->len = pending;
		b->off = 0;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : BUF_OUT_MIN;
		while (cap < b->len + n)
			cap *= 2;
		if (over_budget(b->total, b->budget, b->keep, b->cap, cap))
			return -ENOBUFS;
		if (resize(&b->data, &b->cap, b->total, cap) < 0)
			return -ENOMEM;
	}
	*ret = b->data + b->len;
	return 0;
}

int buf_out_append(struct buf_out *b, const void *data, size_t n)
{
	uint8_t *p;
	int r = buf_out_reserve(b, n, &p);
	if (r < 0)
		return r;
	if (n)
		memcpy(p, data, n);
	buf_out_commit(b, n);
	return 0;
}

int buf_out_flush(struct buf_out *b, int fd, bool socket)
{
	while (buf_out_pending(b)) {
		const uint8_t *p = b->data + b->off;
		ssize_t n = socket ? send(fd, p, buf_out_pending(b), MSG_NOSIGNAL | MSG_DONTWAIT)
		                   : write(fd, p, buf_out_pending(b));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -EAGAIN : -errno;
		}
		b->off += (size_t)n;
	}
	b->off = b->len = 0;
	if (b->cap > b->keep)
		buf_out_free(b);
	return 0;
}

void buf_out_free(struct buf_out *b)
{
	resize(&b->data, &b->cap, b->total, 0);
	b->off = b->len = 0;
}
