/* stream: the two plain readers every import stage stacks on — bytes from
 * an fd with a hard limit, and a pass-through that hashes what it hands on
 * (a blob's digest while it is copied, a layer's diff_id while it is
 * unpacked), so nothing is read twice. */
#include "oci/oci-int.h"

#include <string.h>

static ssize_t fd_read(struct oci_reader *r, void *buf, size_t size, struct err *err)
{
	struct oci_fd_reader *f = container_of(r, struct oci_fd_reader, r);
	ssize_t n;
	do
		n = read(f->fd, buf, size);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return err_set_errno(err, -errno, "%s: read: %m", f->label);
	f->done += (uint64_t)n;
	if (f->done > f->limit)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT, "%s: more than %llu bytes",
		               f->label, (unsigned long long)f->limit);
	return n;
}

void oci_fd_reader_init(struct oci_fd_reader *f, int fd, uint64_t limit, const char *label)
{
	*f = (struct oci_fd_reader){
	    .r = {.read = fd_read}, .fd = fd, .limit = limit, .label = label};
}

static ssize_t hash_read(struct oci_reader *r, void *buf, size_t size, struct err *err)
{
	struct oci_hash_reader *h = container_of(r, struct oci_hash_reader, r);
	ssize_t n = oci_read(h->in, buf, size, err);
	if (n > 0) {
		sha256_update(&h->sha, buf, (size_t)n);
		h->bytes += (uint64_t)n;
	}
	return n;
}

void oci_hash_reader_init(struct oci_hash_reader *h, struct oci_reader *in)
{
	*h = (struct oci_hash_reader){.r = {.read = hash_read}, .in = in};
	sha256_init(&h->sha);
}

void oci_hash_reader_digest(struct oci_hash_reader *h, char *buf)
{
	uint8_t d[SHA256_LEN];
	struct sha256 copy = h->sha;
	sha256_final(&copy, d);
	memcpy(buf, "sha256:", 7);
	sha256_hex(d, buf + 7);
}
