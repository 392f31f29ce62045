/* buf: kin's one input buffer and one output queue for non-blocking byte
 * streams cut into frames (an RPC connection, a route to a child kin).
 * They know bytes, not frames: a reader peeks at a header it decodes
 * itself, asks for room for the whole frame (buf_in_reserve), and
 * consumes it once handled. Both are bounded: the output by its pending
 * bytes, and each may share a byte budget with others of its kind
 * through a counter (all of a server's connections together), so many
 * peers cannot claim a cap each. A buffer grown past `keep` is given
 * back once empty, so an idle stream holds little. Included by lib/lib.h.
 *
 *	buf_in_read(&in, fd, true);
 *	while (buf_in_has(&in, HDR) && buf_in_has(&in, HDR + length_in(buf_in_peek(&in))))
 *		handle the frame, buf_in_consume(&in, its size);
 *	(short of a frame: buf_in_reserve(&in, its size) and wait for more)
 *	buf_in_compact(&in);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BUF_OUT_MIN 4096 /* an output queue's first allocation; it doubles from there */

struct buf_in {
	uint8_t *data;
	size_t off, len, cap; /* unread bytes: data[off, len) */
	size_t min;           /* allocated by the first read */
	size_t keep;          /* a larger buffer is freed once empty */
	size_t budget;        /* with total: what all buffers sharing it may hold */
	size_t *total;        /* bytes allocated by those buffers; NULL: no budget */
};

struct buf_out {
	uint8_t *data;
	size_t off, len, cap; /* queued, not yet written: data[off, len) */
	size_t max;           /* pending bytes at most */
	size_t keep;          /* a larger queue is freed once drained */
	size_t budget;        /* with total, as for struct buf_in */
	size_t *total;
};

/* ---- input ---- */
/* An empty buffer; nothing is allocated before the first read. Growing
 * past keep fails once *total would pass budget (total NULL: never). */
void buf_in_init(struct buf_in *b, size_t min, size_t keep, size_t budget, size_t *total);
/* One read(2) (recv(2) with MSG_DONTWAIT on a socket) into the room
 * after the unread bytes. Returns the bytes read, 0 at the end of the
 * stream, -EAGAIN when there is nothing now (or no room: a full buffer
 * holds a frame its reader is not taking yet), -ENOMEM, or -errno. */
ssize_t buf_in_read(struct buf_in *b, int fd, bool socket);

static inline size_t buf_in_pending(const struct buf_in *b)
{
	return b->len - b->off;
}

/* The first unread byte (valid for buf_in_pending bytes). */
static inline const uint8_t *buf_in_peek(const struct buf_in *b)
{
	return b->data + b->off;
}

/* Is a whole frame of n bytes here? */
static inline bool buf_in_has(const struct buf_in *b, size_t n)
{
	return buf_in_pending(b) >= n;
}

/* Drops n (<= pending) bytes that were handled or are to be skipped. */
static inline void buf_in_consume(struct buf_in *b, size_t n)
{
	b->off += n;
}

/* Room for n unread bytes (a frame whose size a checked header gave):
 * the unread bytes move to the front, the buffer grows to exactly n.
 * -ENOBUFS when that would take the shared total past its budget,
 * -ENOMEM. */
int buf_in_reserve(struct buf_in *b, size_t n);
/* Appends n bytes as if read (a stream's unread bytes handed over by a
 * previous kin): buf_in_reserve's errors. */
int buf_in_append(struct buf_in *b, const void *p, size_t n);
/* After a round of consuming: the unread bytes move to the front, and
 * an empty buffer over keep is freed. */
void buf_in_compact(struct buf_in *b);
/* Frees the bytes (the total goes down); b stays usable, empty. */
void buf_in_free(struct buf_in *b);

/* ---- output ---- */
void buf_out_init(struct buf_out *b, size_t max, size_t keep, size_t budget, size_t *total);

static inline size_t buf_out_pending(const struct buf_out *b)
{
	return b->len - b->off;
}

/* Room for n more bytes at *ret, to be filled and then buf_out_commit'ed.
 * -ENOBUFS past max pending bytes or the shared budget, -ENOMEM. */
int buf_out_reserve(struct buf_out *b, size_t n, uint8_t **ret);

static inline void buf_out_commit(struct buf_out *b, size_t n)
{
	b->len += n;
}

/* Queues n bytes, all or nothing: buf_out_reserve's errors. */
int buf_out_append(struct buf_out *b, const void *data, size_t n);
/* Writes what fd takes (send(2) with MSG_NOSIGNAL|MSG_DONTWAIT on a
 * socket, write(2) otherwise). 0: all written (a queue over keep is
 * freed); -EAGAIN: fd is full; -errno. */
int buf_out_flush(struct buf_out *b, int fd, bool socket);
void buf_out_free(struct buf_out *b);
