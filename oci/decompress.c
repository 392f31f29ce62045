/* decompress: a reader that inflates gzip (zlib, concatenated members as
 * gzip(1) writes them) or zstd (libzstd's streaming API, its window capped
 * so a hostile frame cannot ask for gigabytes), or passes plain bytes on.
 * AUTO looks at the first bytes. Corrupt, truncated or trailing data is an
 * error naming the label. */
#include "oci/oci-int.h"

#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define DECOMP_IN_SIZE  (128 * 1024)
#define ZSTD_WINDOW_LOG 27 /* 128 MiB: zstd's own default limit for decoders */

struct decomp {
	struct oci_reader r;
	struct oci_reader *in;
	enum oci_compression comp;
	const char *label;
	uint8_t *buf;
	size_t pos, len; /* unread input in buf */
	bool in_eof, done;
	z_stream z;
	bool z_init;
	ZSTD_DStream *zs;
	size_t zs_ret; /* last ZSTD_decompressStream result: 0 at a frame's end */
};

/* More input into buf (after what is left): 0 at the end of the input. */
static ssize_t fill(struct decomp *d, struct err *err)
{
	if (d->pos && d->pos < d->len)
		memmove(d->buf, d->buf + d->pos, d->len - d->pos);
	d->len -= d->pos;
	d->pos = 0;
	if (d->in_eof || d->len == DECOMP_IN_SIZE)
		return 0;
	ssize_t n = oci_read(d->in, d->buf + d->len, DECOMP_IN_SIZE - d->len, err);
	if (n < 0)
		return n;
	if (n == 0)
		d->in_eof = true;
	d->len += (size_t)n;
	return n;
}

static ssize_t corrupt(struct decomp *d, struct err *err, const char *what)
{
	return err_set(err, -EBADMSG, ERR_INVALID_ARGUMENT, "%s: %s data: %s", d->label,
	               d->comp == OCI_COMP_GZIP ? "gzip" : "zstd", what);
}

static ssize_t read_plain(struct decomp *d, void *out, size_t size, struct err *err)
{
	if (d->pos < d->len) { /* what AUTO looked at */
		size_t n = d->len - d->pos < size ? d->len - d->pos : size;
		memcpy(out, d->buf + d->pos, n);
		d->pos += n;
		return (ssize_t)n;
	}
	return oci_read(d->in, out, size, err);
}

static ssize_t read_gzip(struct decomp *d, void *out, size_t size, struct err *err)
{
	if (size > (1u << 30))
		size = 1u << 30;
	d->z.next_out = out;
	d->z.avail_out = (uInt)size;
	while (d->z.avail_out == size && !d->done) {
		if (d->pos == d->len) {
			ssize_t n = fill(d, err);
			if (n < 0)
				return n;
			if (d->len == 0)
				return corrupt(d, err, "truncated");
		}
		d->z.next_in = d->buf + d->pos;
		d->z.avail_in = (uInt)(d->len - d->pos);
		int zr = inflate(&d->z, Z_NO_FLUSH);
		d->pos = d->len - d->z.avail_in;
		if (zr == Z_OK || (zr == Z_BUF_ERROR && d->pos == d->len))
			continue; /* more input, then */
		if (zr != Z_STREAM_END)
			return corrupt(d, err, d->z.msg ? d->z.msg : "inflate failed");
		/* The end of a member: another may follow (gzip a; gzip b), else
		 * nothing may. */
		while (d->len - d->pos < 2 && !d->in_eof) {
			ssize_t n = fill(d, err);
			if (n < 0)
				return n;
		}
		if (d->pos == d->len) {
			d->done = true;
		} else if (d->len - d->pos < 2 || d->buf[d->pos] != 0x1f ||
		           d->buf[d->pos + 1] != 0x8b) {
			return corrupt(d, err, "trailing bytes after the stream");
		} else {
			inflateReset(&d->z);
		}
	}
	return (ssize_t)(size - d->z.avail_out);
}

static ssize_t read_zstd(struct decomp *d, void *out, size_t size, struct err *err)
{
	ZSTD_outBuffer ob = {out, size, 0};
	while (ob.pos == 0 && !d->done) {
		if (d->pos == d->len) {
			ssize_t n = fill(d, err);
			if (n < 0)
				return n;
			if (d->len == 0) {
				if (d->zs_ret != 0)
					return corrupt(d, err, "truncated");
				d->done = true;
				break;
			}
		}
		ZSTD_inBuffer ib = {d->buf + d->pos, d->len - d->pos, 0};
		size_t zr = ZSTD_decompressStream(d->zs, &ob, &ib);
		d->pos += ib.pos;
		if (ZSTD_isError(zr))
			return corrupt(d, err, ZSTD_getErrorName(zr));
		d->zs_ret = zr;
	}
	return (ssize_t)ob.pos;
}

static ssize_t decomp_read(struct oci_reader *r, void *out, size_t size, struct err *err)
{
	struct decomp *d = container_of(r, struct decomp, r);
	if (size == 0)
		return 0;
	switch (d->comp) {
	case OCI_COMP_GZIP:
		return read_gzip(d, out, size, err);
	case OCI_COMP_ZSTD:
		return read_zstd(d, out, size, err);
	default:
		return read_plain(d, out, size, err);
	}
}

int oci_decomp_new(struct oci_reader *in, enum oci_compression c, const char *label,
                   struct oci_reader **ret, struct err *err)
{
	struct decomp *d = calloc(1, sizeof(*d));
	if (!d || !(d->buf = malloc(DECOMP_IN_SIZE))) {
		free(d);
		return err_set_errno(err, -ENOMEM, "%s: out of memory", label);
	}
	d->r.read = decomp_read;
	d->in = in;
	d->label = label;
	if (c == OCI_COMP_AUTO) {
		/* Enough bytes to tell (a short input is plain). */
		ssize_t n;
		while (d->len < 4 && (n = fill(d, err)) > 0)
			;
		if (n < 0) {
			oci_decomp_free(&d->r);
			return (int)n;
		}
		static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
		if (d->len >= 2 && d->buf[0] == 0x1f && d->buf[1] == 0x8b)
			c = OCI_COMP_GZIP;
		else if (d->len >= 4 && !memcmp(d->buf, zstd_magic, 4))
			c = OCI_COMP_ZSTD;
		else
			c = OCI_COMP_NONE;
	}
	d->comp = c;
	if (c == OCI_COMP_GZIP) {
		if (inflateInit2(&d->z, 16 + MAX_WBITS) != Z_OK) {
			oci_decomp_free(&d->r);
			return err_set_errno(err, -ENOMEM, "%s: zlib: out of memory", label);
		}
		d->z_init = true;
	} else if (c == OCI_COMP_ZSTD) {
		d->zs = ZSTD_createDStream();
		if (!d->zs || ZSTD_isError(ZSTD_DCtx_setParameter(d->zs, ZSTD_d_windowLogMax,
		                                                  ZSTD_WINDOW_LOG))) {
			oci_decomp_free(&d->r);
			return err_set_errno(err, -ENOMEM, "%s: zstd: out of memory", label);
		}
	}
	*ret = &d->r;
	return 0;
}

void oci_decomp_free(struct oci_reader *r)
{
	if (!r)
		return;
	struct decomp *d = container_of(r, struct decomp, r);
	if (d->z_init)
		inflateEnd(&d->z);
	ZSTD_freeDStream(d->zs);
	free(d->buf);
	free(d);
}
