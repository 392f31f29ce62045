/* state: the re-exec handover format. See state.h. */
#include "lib/lib.h"
#include "lib/state.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/close_range.h>

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint8_t *room(struct state_w *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > STATE_SIZE_MAX - w->len) {
		w->err = -E2BIG;
		return NULL;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap < w->len + n)
			cap *= 2;
		uint8_t *d = realloc(w->data, cap);
		if (!d) {
			w->err = -ENOMEM;
			return NULL;
		}
		w->data = d;
		w->cap = cap;
	}
	uint8_t *p = w->data + w->len;
	w->len += n;
	return p;
}

void state_w_init(struct state_w *w)
{
	*w = (struct state_w){0};
	uint8_t *p = room(w, STATE_HEADER);
	if (!p)
		return;
	memcpy(p, STATE_MAGIC, 8);
	put_le(p + 8, STATE_FORMAT, 4);
	put_le(p + 12, 0, 4);
}

void state_w_free(struct state_w *w)
{
	free(w->data);
	free(w->fds);
	*w = (struct state_w){0};
}

static uint8_t *field(struct state_w *w, uint16_t tag, size_t n)
{
	if (n > UINT32_MAX) {
		if (!w->err)
			w->err = -E2BIG;
		return NULL;
	}
	uint8_t *p = room(w, STATE_FIELD_HEAD + n);
	if (!p)
		return NULL;
	put_le(p, tag, 2);
	put_le(p + 2, n, 4);
	return p + STATE_FIELD_HEAD;
}

void state_put_u64(struct state_w *w, uint16_t tag, uint64_t v)
{
	uint8_t *p = field(w, tag, 8);
	if (p)
		put_le(p, v, 8);
}

void state_put_i64(struct state_w *w, uint16_t tag, int64_t v)
{
	state_put_u64(w, tag, (uint64_t)v);
}

void state_put_bytes(struct state_w *w, uint16_t tag, const void *data, size_t n)
{
	uint8_t *p = field(w, tag, n);
	if (p && n)
		memcpy(p, data, n);
}

uint8_t *state_put_room(struct state_w *w, uint16_t tag, size_t n)
{
	return field(w, tag, n);
}

void state_put_str(struct state_w *w, uint16_t tag, const char *s)
{
	if (s)
		state_put_bytes(w, tag, s, strlen(s));
}

void state_put_fd(struct state_w *w, uint16_t tag, int fd)
{
	if (fd < 0 || w->err || w->file)
		return;
	if (fd >= STATE_FDS_MAX) {
		w->err = -EMFILE;
		return;
	}
	if (w->nfds == w->fds_cap) {
		size_t cap = w->fds_cap ? w->fds_cap * 2 : 64;
		int *f = realloc(w->fds, cap * sizeof(int));
		if (!f) {
			w->err = -ENOMEM;
			return;
		}
		w->fds = f;
		w->fds_cap = cap;
	}
	int r = fd_set_cloexec(fd, false);
	if (r < 0) {
		w->err = r;
		return;
	}
	w->fds[w->nfds++] = fd;
	state_put_u64(w, tag, (uint64_t)fd);
}

size_t state_open(struct state_w *w, uint16_t tag)
{
	size_t at = w->len;
	field(w, tag, 0);
	return at;
}

void state_close(struct state_w *w, size_t at)
{
	if (w->err)
		return;
	size_t n = w->len - at - STATE_FIELD_HEAD;
	if (n > UINT32_MAX) {
		w->err = -E2BIG;
		return;
	}
	put_le(w->data + at + 2, n, 4);
}

void state_w_unkeep(struct state_w *w)
{
	for (size_t i = 0; i < w->nfds; i++)
		fd_set_cloexec(w->fds[i], true);
}

int state_w_seal(struct state_w *w, int *ret_fd)
{
	uint8_t *p = field(w, STATE_TAG_KEPT, w->nfds * 4);
	for (size_t i = 0; p && i < w->nfds; i++)
		put_le(p + 4 * i, (uint64_t)w->fds[i], 4);
	if (w->err)
		return w->err;
	_cleanup_close_ int fd = memfd_create("kin-state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, w->data, w->len);
	if (r < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	r = fd_set_cloexec(fd, false);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* No block of the directory's filesystem is ever freed here (a freed
 * block can wait for the device: a discard, seen taking up to ~0.9 s on
 * a disk): the state is written over the previous one's file, .NAME.new,
 * never truncated (the header says how long it is), and the two names
 * exchanged, so NAME is always a whole state and no inode is let go. The
 * previous one's tail is made one field (STATE_TAG_PAD) that a reader
 * which reads the whole file (a kin from before the header's length)
 * skips. */
int state_w_write_file(struct state_w *w, int dirfd, const char *name)
{
	char tmp[NAME_MAX + 1];
	if (w->err)
		return w->err;
	if (w->len > UINT32_MAX)
		return -E2BIG;
	if (snprintf(tmp, sizeof(tmp), ".%s.new", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	put_le(w->data + 12, w->len, 4);
	_cleanup_close_ int fd =
	    openat(dirfd, tmp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, w->data, w->len);
	struct stat st;
	if (r == 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > w->len) {
		uint64_t rest = (uint64_t)st.st_size - w->len;
		uint8_t pad[STATE_FIELD_HEAD];
		put_le(pad, STATE_TAG_PAD, 2);
		put_le(pad + 2, rest > STATE_FIELD_HEAD ? rest - STATE_FIELD_HEAD : 0, 4);
		if (pwrite(fd, pad, sizeof(pad), (off_t)w->len) != (ssize_t)sizeof(pad))
			r = -EIO;
	}
	if (r == 0 && renameat2(dirfd, tmp, dirfd, name, RENAME_EXCHANGE) < 0) {
		/* The first one (nothing to exchange with), or a filesystem
		 * that cannot exchange: renamed over. */
		int e = errno;
		if (e != ENOENT && e != EINVAL)
			r = -e;
		else if (renameat(dirfd, tmp, dirfd, name) < 0)
			r = -errno;
	}
	return r;
}

int state_file_remove(int dirfd, const char *name)
{
	char tmp[NAME_MAX + 1];
	if (snprintf(tmp, sizeof(tmp), ".%s.new", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static uint64_t num_load(const void *base, const struct state_num *f)
{
	const uint8_t *p = (const uint8_t *)base + f->off;
	uint8_t v1;
	uint16_t v2;
	uint32_t v4;
	uint64_t v8;
	switch (f->size) {
	case 1:
		return memcpy(&v1, p, 1), v1;
	case 2:
		return memcpy(&v2, p, 2), v2;
	case 4:
		return memcpy(&v4, p, 4), v4;
	default:
		return memcpy(&v8, p, 8), v8;
	}
}

static void num_store(void *base, const struct state_num *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)base + f->off;
	uint8_t v1 = (uint8_t)v;
	uint16_t v2 = (uint16_t)v;
	uint32_t v4 = (uint32_t)v;
	switch (f->size) {
	case 1:
		memcpy(p, &v1, 1);
		break;
	case 2:
		memcpy(p, &v2, 2);
		break;
	case 4:
		memcpy(p, &v4, 4);
		break;
	default:
		memcpy(p, &v, 8);
	}
}

void state_put_nums(struct state_w *w, const void *base, const struct state_num *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		state_put_u64(w, t[i].tag, num_load(base, &t[i]));
}

/* ---- reading ---- */

int state_get_num(const struct state_field *f, void *base, const struct state_num *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tag == f->tag) {
			uint64_t v;
			int r = state_get_u64(f, &v);
			if (r < 0)
				return r;
			num_store(base, &t[i], t[i].flag ? v != 0 : v);
			return 1;
		}
	return 0;
}

int state_next(struct state_r *r, struct state_field *f)
{
	if (r->pos >= r->len)
		return 0;
	if (r->len - r->pos < STATE_FIELD_HEAD)
		return -EBADMSG;
	const uint8_t *p = r->data + r->pos;
	uint64_t n = get_le(p + 2, 4);
	if (n > r->len - r->pos - STATE_FIELD_HEAD)
		return -EBADMSG;
	*f = (struct state_field){
	    .tag = (uint16_t)get_le(p, 2), .data = p + STATE_FIELD_HEAD, .len = (uint32_t)n};
	r->pos += STATE_FIELD_HEAD + n;
	return 1;
}

int state_get_u64(const struct state_field *f, uint64_t *ret)
{
	if (f->len != 8)
		return -EBADMSG;
	*ret = get_le(f->data, 8);
	return 0;
}

int state_get_i64(const struct state_field *f, int64_t *ret)
{
	uint64_t v;
	int r = state_get_u64(f, &v);
	if (r == 0)
		*ret = (int64_t)v;
	return r;
}

int state_get_str(const struct state_field *f, char *buf, size_t size)
{
	if (memchr(f->data, 0, f->len))
		return -EBADMSG;
	if (f->len >= size)
		return -ENAMETOOLONG;
	memcpy(buf, f->data, f->len);
	buf[f->len] = '\0';
	return 0;
}

int state_get_strdup(const struct state_field *f, char **ret)
{
	if (memchr(f->data, 0, f->len))
		return -EBADMSG;
	char *s = malloc((size_t)f->len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, f->data, f->len);
	s[f->len] = '\0';
	*ret = s;
	return 0;
}

void state_get_record(const struct state_field *f, struct state_r *ret)
{
	*ret = (struct state_r){.data = f->data, .len = f->len};
}

/* Unmapped, its fds left as they are: a state that does not read is
 * handed to the previous binary whole. */
static void in_unmap(struct state_in *in)
{
	if (in->map)
		munmap(in->map, in->map_size);
	in->map = NULL;
	free(in->kept); /* claimed is its second half */
	in->kept = in->claimed = NULL;
}

/* The kept fds are this kin's from now on: close-on-exec again, all in
 * one call (a re-exec hands over thousands; one fcntl each was a good
 * part of its restore). What else lies between the lowest and the
 * highest is closed, or opened close-on-exec by this kin already. A
 * kernel without close_range's flag: state_get_fd marks each one. */
static void mark_cloexec(struct state_in *in)
{
	int lo = -1, hi = -1;
	for (unsigned w = 0; w < STATE_FDS_MAX / 64; w++) {
		if (!in->kept[w])
			continue;
		if (lo < 0)
			lo = (int)(w * 64 + (unsigned)__builtin_ctzll(in->kept[w]));
		hi = (int)(w * 64 + 63 - (unsigned)__builtin_clzll(in->kept[w]));
	}
	if (lo >= 0 &&
	    syscall(SYS_close_range, (unsigned)lo, (unsigned)hi, CLOSE_RANGE_CLOEXEC) < 0)
		in->cloexec_each = true;
}

int state_in_open(int fd, struct state_in *in, uint32_t *ret_format)
{
	struct stat st;
	*in = (struct state_in){0};
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < STATE_HEADER || (uint64_t)st.st_size > STATE_SIZE_MAX)
		return -EBADMSG;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	in->map = map;
	in->size = in->map_size = (size_t)st.st_size;
	if (memcmp(in->map, STATE_MAGIC, 8) != 0) {
		in_unmap(in);
		return -EBADMSG;
	}
	uint32_t format = (uint32_t)get_le(in->map + 8, 4);
	if (ret_format)
		*ret_format = format;
	if (format != STATE_FORMAT) {
		in_unmap(in);
		return -EPROTO;
	}
	in->kept = calloc(2 * STATE_FDS_MAX / 64, sizeof(uint64_t));
	if (!in->kept) {
		in_unmap(in);
		return -ENOMEM;
	}
	in->claimed = in->kept + STATE_FDS_MAX / 64;
	/* A file's header says how long it is (what follows is the rest of
	 * an older, longer one); 0: the whole of it. */
	uint32_t len = (uint32_t)get_le(in->map + 12, 4);
	if (len && (len < STATE_HEADER || len > in->size)) {
		in_unmap(in);
		return -EBADMSG;
	}
	if (len)
		in->size = len;
	in->top = (struct state_r){.data = in->map + STATE_HEADER, .len = in->size - STATE_HEADER};
	struct state_r r = in->top;
	struct state_field f;
	int k;
	while ((k = state_next(&r, &f)) > 0)
		for (size_t i = 0; f.tag == STATE_TAG_KEPT && i + 4 <= f.len; i += 4) {
			uint64_t v = get_le(f.data + i, 4);
			if (v < STATE_FDS_MAX)
				in->kept[v / 64] |= 1ull << (v % 64);
		}
	if (k < 0) {
		in_unmap(in);
		return k;
	}
	mark_cloexec(in);
	return 0;
}

int state_get_fd(struct state_in *in, const struct state_field *f, int *ret)
{
	uint64_t v;
	int r = state_get_u64(f, &v);
	if (r < 0)
		return r;
	uint64_t bit = 1ull << (v % 64);
	/* Not one the writer kept, or one taken twice (or in is not open). */
	if (!in->kept || v >= STATE_FDS_MAX || !(in->kept[v / 64] & bit) ||
	    (in->claimed[v / 64] & bit))
		return -EBADF;
	int fd = (int)v;
	r = in->cloexec_each ? fd_set_cloexec(fd, true) : 0;
	if (r < 0)
		return r;
	in->claimed[v / 64] |= 1ull << (v % 64);
	*ret = fd;
	return 0;
}

void state_in_close(struct state_in *in)
{
	for (size_t w = 0; in->kept && w < STATE_FDS_MAX / 64; w++) {
		for (uint64_t left = in->kept[w] & ~in->claimed[w]; left; left &= left - 1)
			close((int)(w * 64 + (unsigned)__builtin_ctzll(left)));
		in->claimed[w] = 0;
	}
	in_unmap(in);
}
