/* ring: the bounded output buffer of one stream of one executable. Offsets
 * are bytes since the first start, so a reader (a follower, a paged read)
 * resumes where it stopped and learns how much was overwritten meanwhile. */
#include "cells/cells-int.h"

#include <string.h>

/* The buffer comes with the first output: a thousand quiet executables
 * (or a re-exec taking them over) cost no allocation each. */
int exec_ring_init(struct exec_ring *r, size_t cap)
{
	*r = (struct exec_ring){0};
	if (cap == 0)
		return -EINVAL;
	r->cap = cap;
	return 0;
}

void exec_ring_free(struct exec_ring *r)
{
	free(r->buf);
	*r = (struct exec_ring){0};
}

uint64_t exec_ring_start(const struct exec_ring *r)
{
	return r->end > r->cap ? r->end - r->cap : 0;
}

void exec_ring_write(struct exec_ring *r, const void *data, size_t len)
{
	const uint8_t *p = data;
	if (!r->cap)
		return;
	if (!r->buf && !(r->buf = malloc(r->cap))) {
		r->end += len; /* out of memory: counted as dropped by readers */
		return;
	}
	if (len > r->cap) { /* only the tail can survive */
		r->end += len - r->cap;
		p += len - r->cap;
		len = r->cap;
	}
	size_t at = (size_t)(r->end % r->cap);
	size_t first = r->cap - at < len ? r->cap - at : len;
	memcpy(r->buf + at, p, first);
	memcpy(r->buf, p + first, len - first);
	r->end += len;
}

size_t exec_ring_read(const struct exec_ring *r, uint64_t *pos, void *out, size_t len,
                      uint64_t *ret_dropped)
{
	uint64_t start = exec_ring_start(r);
	uint64_t dropped = 0;
	if (*pos < start) {
		dropped = start - *pos;
		*pos = start;
	}
	if (*pos > r->end)
		*pos = r->end;
	if (ret_dropped)
		*ret_dropped = dropped;
	uint64_t avail = r->end - *pos;
	size_t n = avail < len ? (size_t)avail : len;
	if (!n || !r->buf)
		return 0;
	size_t at = (size_t)(*pos % r->cap);
	size_t first = r->cap - at < n ? r->cap - at : n;
	memcpy(out, r->buf + at, first);
	memcpy((uint8_t *)out + first, r->buf, n - first);
	*pos += n;
	return n;
}
