/* state: the format a kin hands its state over in when it re-executes
 * itself (init/reexec.c) — a header, then tagged fields. A field is a
 * 16-bit tag, a 32-bit length and its bytes: a number (8 bytes, little
 * endian), a string (its bytes, no NUL), or a record (fields again). A
 * reader skips tags it does not know and keeps defaults for the ones it
 * misses, so a newer kin reads an older one's state and the other way
 * round; STATE_FORMAT goes up only for a change that cannot be read so,
 * and a kin refuses any other format with a sentence saying so.
 *
 * Open fds are handed over by number: state_put_fd clears O_CLOEXEC on
 * them (state_w_unkeep sets it again when the execve failed), and the
 * reader takes each one it restores with state_get_fd; those nobody took
 * are closed by state_r_close_unclaimed, so nothing leaks into the new
 * kin. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_MAGIC      "KINSTATE"
#define STATE_FORMAT     2u
#define STATE_HEADER     16 /* magic, format, length (a file's; 0: all of it) */
#define STATE_FIELD_HEAD 6  /* tag, length */
#define STATE_SIZE_MAX   (2ull << 30)
#define STATE_FDS_MAX    65536
#define STATE_TAG_KEPT   0xffff /* the last field: the fds kept, u32 each */
#define STATE_TAG_PAD    0xfffe /* after a file's state: the rest of the file */

struct state_w {
	uint8_t *data;
	size_t len, cap;
	int err; /* the first error (sticky): -ENOMEM, -E2BIG */
	int *fds;
	size_t nfds, fds_cap;
	/* A state for a file (what a successor adopts after kin was killed):
	 * no fd can go along, so state_put_fd writes nothing. */
	bool file;
};

/* Starts a state with its header. */
void state_w_init(struct state_w *w);
void state_w_free(struct state_w *w);
void state_put_u64(struct state_w *w, uint16_t tag, uint64_t v);
void state_put_i64(struct state_w *w, uint16_t tag, int64_t v);
void state_put_bytes(struct state_w *w, uint16_t tag, const void *p, size_t n);
/* NULL: nothing written (the reader keeps its NULL). */
void state_put_str(struct state_w *w, uint16_t tag, const char *s);
/* An fd to keep across execve (O_CLOEXEC cleared); < 0: nothing written. */
void state_put_fd(struct state_w *w, uint16_t tag, int fd);
/* Room for a field of n bytes the caller fills in (NULL on error). */
uint8_t *state_put_room(struct state_w *w, uint16_t tag, size_t n);
/* A record: state_open returns where it starts, state_close ends it. */
size_t state_open(struct state_w *w, uint16_t tag);
void state_close(struct state_w *w, size_t at);
/* Writes the state into a sealed memfd (O_CLOEXEC cleared: it is kept
 * too); *ret_fd. w->err if anything failed before. */
int state_w_seal(struct state_w *w, int *ret_fd);
/* The execve did not happen: every kept fd is O_CLOEXEC again. */
void state_w_unkeep(struct state_w *w);
/* Writes a file state as dir/name, whole or not at all (written as
 * dir/.name.new, the previous one's file, then the two exchanged), mode
 * 0600; no disk block is freed, so it never waits for the device. w->err
 * if anything failed before. */
int state_w_write_file(struct state_w *w, int dirfd, const char *name);
/* Removes dir/name and dir/.name.new (missing ones are fine). */
int state_file_remove(int dirfd, const char *name);

struct state_field {
	uint16_t tag;
	const uint8_t *data;
	uint32_t len;
};

struct state_r {
	const uint8_t *data;
	size_t len, pos;
};

/* The next field: 1, 0 at the end, -EBADMSG when a length runs past. */
int state_next(struct state_r *r, struct state_field *f);
/* -EBADMSG when the field is not of that shape. */
int state_get_u64(const struct state_field *f, uint64_t *ret);
int state_get_i64(const struct state_field *f, int64_t *ret);
/* Into buf (NUL-terminated): -ENAMETOOLONG when it does not fit,
 * -EBADMSG with a NUL inside. */
int state_get_str(const struct state_field *f, char *buf, size_t size);
/* A malloc'ed copy, NUL-terminated. */
int state_get_strdup(const struct state_field *f, char **ret);
void state_get_record(const struct state_field *f, struct state_r *ret);

/* Number members of a struct, described once for both directions:
 * STATE_NUM(tag, struct x, member) in a table. */
struct state_num {
	uint16_t tag;
	uint16_t off;
	uint8_t size; /* 1, 2, 4 or 8 */
	bool flag;    /* a bool: stored as 0 or 1 whatever the number */
};
#define STATE_NUM(tag, type, member)                                                               \
	{                                                                                          \
		(tag), offsetof(type, member), sizeof(((type *)0)->member), false                  \
	}
#define STATE_FLAG(tag, type, member)                                                              \
	{                                                                                          \
		(tag), offsetof(type, member), sizeof(bool), true                                  \
	}
void state_put_nums(struct state_w *w, const void *base, const struct state_num *t, size_t n);
/* 1: f is one of t's (stored into base), 0: it is not, -EBADMSG. */
int state_get_num(const struct state_field *f, void *base, const struct state_num *t, size_t n);

/* The whole handed-over state, mapped from its memfd. */
struct state_in {
	uint8_t *map;
	size_t size, map_size;
	struct state_r top; /* the fields after the header */
	/* Bitmaps of STATE_FDS_MAX bits (16 KiB), allocated while open: every
	 * kin holds a struct state_in (init/reexec.c's, zeroed at start), few
	 * open one; in place they were 16 KiB of every kin's dirty memory. */
	uint64_t *kept;    /* the fds the writer kept */
	uint64_t *claimed; /* and those a reader took */
	bool cloexec_each; /* no close_range: marked one by one */
};
/* Maps the memfd and checks the header: -EPROTO for another format
 * (*ret_format says which), -EBADMSG when it is not a state at all; on
 * error no fd is touched (they go to the previous binary whole); on
 * success every kept fd is close-on-exec again. */
int state_in_open(int fd, struct state_in *in, uint32_t *ret_format);
/* A kept fd: checked kept and not taken yet, marked taken. */
int state_get_fd(struct state_in *in, const struct state_field *f, int *ret);
/* Closes every fd the writer kept that no reader took; unmaps. */
void state_in_close(struct state_in *in);
