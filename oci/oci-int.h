/* oci internals shared by its files: byte streams, decompression, the tar
 * reader and the layer writer. */
#pragma once

#include "oci/oci.h"
#include "lib/sha256.h"

/* ---- byte streams ------------------------------------------------------- */

/* A source of bytes: read() fills up to size bytes and returns how many,
 * 0 at the end, or -errno with err set (naming what was read). Layers flow
 * file -> (hash) -> decompress -> (hash) -> tar -> files, each stage a
 * reader over the one below. */
struct oci_reader {
	ssize_t (*read)(struct oci_reader *r, void *buf, size_t size, struct err *err);
};

static inline ssize_t oci_read(struct oci_reader *r, void *buf, size_t size, struct err *err)
{
	return r->read(r, buf, size, err);
}

/* A reader over an fd (a blob file, a pipe), at most limit bytes (more is
 * -EFBIG naming label). */
struct oci_fd_reader {
	struct oci_reader r;
	int fd;
	uint64_t limit, done;
	const char *label;
};
void oci_fd_reader_init(struct oci_fd_reader *f, int fd, uint64_t limit, const char *label);

/* A pass-through reader hashing every byte it hands on (digests of blobs
 * and of uncompressed layers, the diff_ids). */
struct oci_hash_reader {
	struct oci_reader r;
	struct oci_reader *in;
	struct sha256 sha;
	uint64_t bytes;
};
void oci_hash_reader_init(struct oci_hash_reader *h, struct oci_reader *in);
/* "sha256:<hex>" of what went through, into buf (at least OCI_DIGEST_LEN+1). */
void oci_hash_reader_digest(struct oci_hash_reader *h, char *buf);
