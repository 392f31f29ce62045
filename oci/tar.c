/* tar: a streaming reader of tar archives as image layers and `docker
 * save` / oci-archive files hold them — ustar (prefix + name), pax
 * extended headers (path, linkpath, size, uid, gid, mtime, SCHILY.xattr),
 * GNU long names and links ('L', 'K'), base-256 numbers, old v7 headers.
 * Every header's checksum is verified; every length is bounded before
 * anything is allocated for it. Sparse files, multi-volume parts and the
 * other GNU extensions no image writer uses are refused by name.
 *
 * The end is two zero blocks (one and then the input's end is taken too,
 * as GNU tar and Go's archive/tar do, and so is the input ending at an
 * entry boundary). What follows the end is read and dropped, at most
 * TAR_TRAILER_MAX bytes, so a hashing reader below sees the whole stream:
 * a layer's diff_id covers it. */
#include "oci/oci-int.h"

#include <stdio.h>
#include <string.h>

#define TAR_BLOCK       512
#define TAR_TRAILER_MAX (64u << 20)

struct oci_tar {
	struct oci_reader *in;
	struct oci_tar_limits lim;
	const char *label;
	struct oci_tar_entry e;
	char *name, *link;  /* lim.max_name + 1 each */
	uint64_t left, pad; /* of the current entry's data */
	uint64_t entries;
	bool ended;
	/* What a pax header or GNU long name says of the next entry. */
	char *pax_path, *pax_link;
	bool pax_size_set, pax_uid_set, pax_gid_set, pax_mtime_set;
	uint64_t pax_size, pax_uid, pax_gid;
	int64_t pax_mtime;
	long pax_mtime_nsec;
	struct oci_tar_xattr *xattrs;
	size_t nxattrs, xattr_bytes;
	struct oci_reader data;
	uint8_t block[TAR_BLOCK];
};

/* ---- reading -------------------------------------------------------------------- */

static int fail(struct oci_tar *t, struct err *err, int r, const char *fmt, ...) _printf_(4, 5);
static int fail(struct oci_tar *t, struct err *err, int r, const char *fmt, ...)
{
	char what[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (t->name[0])
		return err_set(err, r, ERR_INVALID_ARGUMENT, "%s: entry \"%.200s\": %s", t->label,
		               t->name, what);
	return err_set(err, r, ERR_INVALID_ARGUMENT, "%s: entry %llu: %s", t->label,
	               (unsigned long long)t->entries + 1, what);
}

/* Exactly n bytes: 1, or 0 at a clean end (nothing read), or an error. */
static int read_exact(struct oci_tar *t, void *buf, size_t n, struct err *err)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = oci_read(t->in, (char *)buf + got, n - got, err);
		if (r < 0)
			return (int)r;
		if (r == 0)
			return got == 0 ? 0 : fail(t, err, -EBADMSG, "the archive is truncated");
		got += (size_t)r;
	}
	return 1;
}

static int skip(struct oci_tar *t, uint64_t n, struct err *err)
{
	uint8_t buf[16384];
	while (n) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		int r = read_exact(t, buf, k, err);
		if (r <= 0)
			return r < 0 ? r : fail(t, err, -EBADMSG, "the archive is truncated");
		n -= k;
	}
	return 0;
}

/* ---- header fields --------------------------------------------------------------- */

/* An octal field (spaces and NULs around it), or base-256 (high bit of
 * the first byte; negative values refused). -1 when malformed. */
static int parse_num(const uint8_t *f, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	if (f[0] & 0x80) {
		if (f[0] == 0xff)
			return -1; /* negative */
		v = f[0] & 0x7f;
		for (size_t i = 1; i < n; i++) {
			if (v >> 56)
				return -1;
			v = v << 8 | f[i];
		}
		*ret = v;
		return 0;
	}
	size_t i = 0;
	while (i < n && f[i] == ' ')
		i++;
	bool digits = false;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
		digits = true;
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -1;
	*ret = digits ? v : 0;
	return 0;
}

static bool checksum_ok(const uint8_t *b)
{
	uint64_t want;
	if (parse_num(b + 148, 8, &want) < 0)
		return false;
	uint64_t u = 0;
	int64_t s = 0;
	for (int i = 0; i < TAR_BLOCK; i++) {
		uint8_t c = (i >= 148 && i < 156) ? ' ' : b[i];
		u += c;
		s += (int8_t)c;
	}
	return want == u || (int64_t)want == s;
}

static bool all_zero(const uint8_t *b)
{
	for (int i = 0; i < TAR_BLOCK; i++)
		if (b[i])
			return false;
	return true;
}

/* A NUL-padded field into buf (at most max bytes, NUL-terminated). */
static size_t field_str(const uint8_t *f, size_t n, char *buf)
{
	size_t k = strnlen((const char *)f, n);
	memcpy(buf, f, k);
	buf[k] = 0;
	return k;
}

/* ---- pax and GNU long names -------------------------------------------------------- */

static void pax_reset(struct oci_tar *t)
{
	free(t->pax_path);
	free(t->pax_link);
	t->pax_path = t->pax_link = NULL;
	t->pax_size_set = t->pax_uid_set = t->pax_gid_set = t->pax_mtime_set = false;
	for (size_t i = 0; i < t->nxattrs; i++) {
		free(t->xattrs[i].name);
		free(t->xattrs[i].value);
	}
	t->nxattrs = t->xattr_bytes = 0;
}

/* A whole extended header or long name of size bytes, NUL-terminated. */
static int read_blob(struct oci_tar *t, uint64_t size, size_t max, const char *what, char **ret,
                     struct err *err)
{
	if (size > max)
		return fail(t, err, -E2BIG, "%s of %llu bytes, over the %zu-byte limit", what,
		            (unsigned long long)size, max);
	char *buf = malloc((size_t)size + 1);
	if (!buf)
		return fail(t, err, -ENOMEM, "%s: out of memory", what);
	int r = size ? read_exact(t, buf, (size_t)size, err) : 1;
	if (r == 1)
		r = skip(t, (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK, err);
	else if (r == 0)
		r = fail(t, err, -EBADMSG, "the archive is truncated");
	if (r < 0) {
		free(buf);
		return r;
	}
	buf[size] = 0;
	*ret = buf;
	return 0;
}

static int pax_time(const char *v, int64_t *sec, long *nsec)
{
	char *end;
	errno = 0;
	long long s = strtoll(v, &end, 10);
	if (errno || end == v || s < 0)
		return -1;
	*sec = s;
	*nsec = 0;
	if (*end == '.') {
		long ns = 0;
		int digits = 0;
		for (end++; *end >= '0' && *end <= '9'; end++)
			if (digits++ < 9)
				ns = ns * 10 + (*end - '0');
		for (; digits < 9; digits++)
			ns *= 10;
		*nsec = ns;
	}
	return *end ? -1 : 0;
}

static int pax_xattr(struct oci_tar *t, const char *name, const char *value, size_t vlen,
                     struct err *err)
{
	if (t->nxattrs >= t->lim.max_xattrs || t->xattr_bytes + vlen > t->lim.max_xattr_bytes)
		return fail(t, err, -E2BIG,
		            "more than %zu extended attributes or %zu bytes of them",
		            t->lim.max_xattrs, t->lim.max_xattr_bytes);
	void *p = reallocarray(t->xattrs, t->nxattrs + 1, sizeof(*t->xattrs));
	if (!p)
		return fail(t, err, -ENOMEM, "out of memory");
	t->xattrs = p;
	struct oci_tar_xattr *x = &t->xattrs[t->nxattrs];
	x->name = strdup(name);
	x->value = malloc(vlen ? vlen : 1);
	if (!x->name || !x->value) {
		free(x->name);
		free(x->value);
		return fail(t, err, -ENOMEM, "out of memory");
	}
	memcpy(x->value, value, vlen);
	x->len = vlen;
	t->nxattrs++;
	t->xattr_bytes += vlen;
	return 0;
}

static int pax_record(struct oci_tar *t, char *key, char *value, size_t vlen, struct err *err)
{
	bool text = strlen(value) == vlen;
	if (!strcmp(key, "path") || !strcmp(key, "linkpath")) {
		if (!text || vlen > t->lim.max_name)
			return fail(t, err, -EINVAL,
			            "pax %s: longer than %zu bytes or holding a NUL", key,
			            t->lim.max_name);
		char **dst = key[0] == 'p' ? &t->pax_path : &t->pax_link;
		free(*dst);
		return (*dst = strdup(value)) ? 0 : fail(t, err, -ENOMEM, "out of memory");
	}
	if (!strcmp(key, "size") || !strcmp(key, "uid") || !strcmp(key, "gid")) {
		uint64_t v;
		if (!text || str_to_u64(value, INT64_MAX, &v) < 0)
			return fail(t, err, -EINVAL, "pax %s \"%.32s\" is not a number", key,
			            value);
		if (key[0] == 's')
			t->pax_size = v, t->pax_size_set = true;
		else if (key[0] == 'u')
			t->pax_uid = v, t->pax_uid_set = true;
		else
			t->pax_gid = v, t->pax_gid_set = true;
		return 0;
	}
	if (!strcmp(key, "mtime")) {
		if (!text || pax_time(value, &t->pax_mtime, &t->pax_mtime_nsec) < 0)
			return fail(t, err, -EINVAL, "pax mtime \"%.32s\" is not a time", value);
		t->pax_mtime_set = true;
		return 0;
	}
	if (str_startswith(key, "SCHILY.xattr."))
		return pax_xattr(t, key + 13, value, vlen, err);
	if (str_startswith(key, "GNU.sparse."))
		return fail(t, err, -ENOTSUP, "sparse files are not supported");
	return 0; /* atime, ctime, charset, comments, LIBARCHIVE.*: not needed */
}

/* "LEN key=value\n" records; LEN counts the whole record. */
static int pax_parse(struct oci_tar *t, char *buf, size_t size, struct err *err)
{
	for (size_t off = 0; off < size;) {
		char *p = buf + off, *end;
		errno = 0;
		unsigned long len = strtoul(p, &end, 10);
		if (errno || end == p || *end != ' ' || len < 5 || len > size - off ||
		    buf[off + len - 1] != '\n')
			return fail(t, err, -EBADMSG, "malformed pax record at byte %zu", off);
		char *key = end + 1, *eq = memchr(key, '=', (size_t)(buf + off + len - key));
		if (!eq || eq == key)
			return fail(t, err, -EBADMSG, "malformed pax record at byte %zu", off);
		*eq = 0;
		buf[off + len - 1] = 0;
		size_t vlen = (size_t)(buf + off + len - 1 - (eq + 1));
		int r = pax_record(t, key, eq + 1, vlen, err);
		if (r < 0)
			return r;
		off += len;
	}
	return 0;
}

/* ---- entries ------------------------------------------------------------------------ */

static int entry_type(char flag, const char *name, enum oci_tar_type *ret)
{
	switch (flag) {
	case '0':
	case '7':
		*ret = OCI_TAR_FILE;
		return 0;
	case 0: /* v7: a directory is a name ending in '/' */
		*ret = name[0] && name[strlen(name) - 1] == '/' ? OCI_TAR_DIR : OCI_TAR_FILE;
		return 0;
	case '1':
		*ret = OCI_TAR_HARDLINK;
		return 0;
	case '2':
		*ret = OCI_TAR_SYMLINK;
		return 0;
	case '3':
		*ret = OCI_TAR_CHAR;
		return 0;
	case '4':
		*ret = OCI_TAR_BLOCK;
		return 0;
	case '5':
		*ret = OCI_TAR_DIR;
		return 0;
	case '6':
		*ret = OCI_TAR_FIFO;
		return 0;
	default:
		return -1;
	}
}

/* The header in t->block (checksum verified) into t->e. */
static int entry_fill(struct oci_tar *t, struct err *err)
{
	const uint8_t *b = t->block;
	struct oci_tar_entry *e = &t->e;
	uint64_t mode, uid, gid, size, mtime, maj = 0, min = 0;
	bool ustar = !memcmp(b + 257, "ustar", 5);
	if (t->pax_path) {
		str_copy(t->name, t->lim.max_name + 1, t->pax_path);
	} else {
		char prefix[156], name[101];
		field_str(b, 100, name);
		if (ustar && field_str(b + 345, 155, prefix))
			snprintf(t->name, t->lim.max_name + 1, "%s/%s", prefix, name);
		else
			str_copy(t->name, t->lim.max_name + 1, name);
	}
	if (t->pax_link)
		str_copy(t->link, t->lim.max_name + 1, t->pax_link);
	else
		field_str(b + 157, 100, t->link);
	if (parse_num(b + 100, 8, &mode) < 0 || parse_num(b + 108, 8, &uid) < 0 ||
	    parse_num(b + 116, 8, &gid) < 0 || parse_num(b + 124, 12, &size) < 0 ||
	    parse_num(b + 136, 12, &mtime) < 0 ||
	    (ustar && (parse_num(b + 329, 8, &maj) < 0 || parse_num(b + 337, 8, &min) < 0)))
		return fail(t, err, -EBADMSG, "malformed numeric field in its header");
	if (entry_type((char)b[156], t->name, &e->type) < 0)
		return fail(t, err, -ENOTSUP,
		            "entry type '%c' is not supported (only files, "
		            "directories, links, devices and FIFOs)",
		            b[156] >= 32 && b[156] < 127 ? b[156] : '?');
	e->name = t->name;
	e->linkname = t->link;
	e->mode = (uint32_t)(mode & 07777);
	e->uid = (uint32_t)(t->pax_uid_set ? t->pax_uid : uid);
	e->gid = (uint32_t)(t->pax_gid_set ? t->pax_gid : gid);
	if ((t->pax_uid_set ? t->pax_uid : uid) > UINT32_MAX - 1 ||
	    (t->pax_gid_set ? t->pax_gid : gid) > UINT32_MAX - 1)
		return fail(t, err, -ERANGE, "uid or gid out of range");
	e->mtime_sec = t->pax_mtime_set ? t->pax_mtime : (int64_t)mtime;
	e->mtime_nsec = t->pax_mtime_set ? t->pax_mtime_nsec : 0;
	e->size = t->pax_size_set ? t->pax_size : size;
	e->devmajor = (uint32_t)(maj > 0xfff ? 0xfff : maj);
	e->devminor = (uint32_t)(min > 0xfffff ? 0xfffff : min);
	e->xattrs = t->xattrs;
	e->nxattrs = t->nxattrs;
	/* Header-only types carry no data whatever size says (Go, GNU). */
	t->left = e->type == OCI_TAR_FILE ? e->size : 0;
	if (e->type != OCI_TAR_FILE)
		e->size = 0;
	t->pad = (TAR_BLOCK - t->left % TAR_BLOCK) % TAR_BLOCK;
	return 0;
}

/* After the end marker: the rest of the input, read and dropped. */
static int drain(struct oci_tar *t, struct err *err)
{
	uint8_t buf[16384];
	uint64_t n = 0;
	for (ssize_t r; (r = oci_read(t->in, buf, sizeof(buf), err)) != 0; n += (uint64_t)r) {
		if (r < 0)
			return (int)r;
		if (n > TAR_TRAILER_MAX)
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "%s: more than %u MiB after the end of the archive",
			               t->label, TAR_TRAILER_MAX >> 20);
	}
	return 0;
}

int oci_tar_next(struct oci_tar *t, const struct oci_tar_entry **ret, struct err *err)
{
	int r;
	if (t->ended)
		return 0;
	if ((r = skip(t, t->left + t->pad, err)) < 0)
		return r;
	t->left = t->pad = 0;
	pax_reset(t);
	t->name[0] = 0;
	for (;;) {
		r = read_exact(t, t->block, TAR_BLOCK, err);
		if (r < 0)
			return r;
		if (r == 0 || all_zero(t->block)) {
			if (r == 1 && (r = read_exact(t, t->block, TAR_BLOCK, err)) < 0)
				return r;
			if (r == 1 && !all_zero(t->block))
				return fail(t, err, -EBADMSG, "a zero block inside the archive");
			t->ended = true;
			return drain(t, err);
		}
		if (!checksum_ok(t->block))
			return fail(t, err, -EBADMSG, "header checksum mismatch");
		if (t->entries >= t->lim.max_entries)
			return fail(t, err, -E2BIG, "more than %llu entries",
			            (unsigned long long)t->lim.max_entries);
		uint64_t size;
		char flag = (char)t->block[156];
		if (parse_num(t->block + 124, 12, &size) < 0)
			return fail(t, err, -EBADMSG, "malformed size field");
		char *blob = NULL;
		switch (flag) {
		case 'x':
		case 'g':
			r = read_blob(t, size, t->lim.max_pax, "pax header", &blob, err);
			if (r == 0 && flag == 'x')
				r = pax_parse(t, blob, (size_t)size, err);
			free(blob);
			if (r < 0)
				return r;
			continue;
		case 'L':
		case 'K':
			r = read_blob(t, size, t->lim.max_name + 1, "GNU long name", &blob, err);
			if (r < 0)
				return r;
			free(flag == 'L' ? t->pax_path : t->pax_link);
			*(flag == 'L' ? &t->pax_path : &t->pax_link) = blob;
			continue;
		case 'V': /* a volume label: nothing to write */
			if ((r = skip(t, size + (TAR_BLOCK - size % TAR_BLOCK) % TAR_BLOCK, err)) <
			    0)
				return r;
			continue;
		default:
			break;
		}
		if ((r = entry_fill(t, err)) < 0)
			return r;
		t->entries++;
		*ret = &t->e;
		return 1;
	}
}

static ssize_t data_read(struct oci_reader *r, void *buf, size_t size, struct err *err)
{
	struct oci_tar *t = container_of(r, struct oci_tar, data);
	if (t->left == 0)
		return 0;
	if (size > t->left)
		size = (size_t)t->left;
	ssize_t n = oci_read(t->in, buf, size, err);
	if (n == 0)
		return fail(t, err, -EBADMSG, "the archive is truncated");
	if (n > 0)
		t->left -= (uint64_t)n;
	return n;
}

struct oci_reader *oci_tar_data(struct oci_tar *t)
{
	return &t->data;
}

int oci_tar_new(struct oci_reader *in, const struct oci_tar_limits *lim, const char *label,
                struct oci_tar **ret, struct err *err)
{
	struct oci_tar *t = calloc(1, sizeof(*t));
	if (!t)
		return err_set_errno(err, -ENOMEM, "%s: out of memory", label);
	t->in = in;
	t->lim = *lim;
	t->label = label;
	t->data.read = data_read;
	t->name = malloc(lim->max_name + 1);
	t->link = malloc(lim->max_name + 1);
	if (!t->name || !t->link) {
		oci_tar_free(t);
		return err_set_errno(err, -ENOMEM, "%s: out of memory", label);
	}
	t->name[0] = t->link[0] = 0;
	*ret = t;
	return 0;
}

void oci_tar_free(struct oci_tar *t)
{
	if (!t)
		return;
	pax_reset(t);
	free(t->xattrs);
	free(t->name);
	free(t->link);
	free(t);
}
