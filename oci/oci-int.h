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

/* ---- the store's insides (store.c), for import ---------------------------- */

int oci_store_fd(const struct oci_store *s);
/* Takes the store's writer lock (blocking: a child's call); returns its fd. */
int oci_store_lock(struct oci_store *s, struct err *err);
/* Writes img's record (tmp/ then rename into refs/). */
int oci_store_record_write(struct oci_store *s, const struct oci_image *img, struct err *err);
/* Empties tmp/ (under the lock: what is there is left from a dead import). */
int oci_store_sweep(struct oci_store *s);

/* ---- decompression, tar, layers ------------------------------------------- */

enum oci_compression { OCI_COMP_AUTO, OCI_COMP_NONE, OCI_COMP_GZIP, OCI_COMP_ZSTD };
int oci_decomp_new(struct oci_reader *in, enum oci_compression c, const char *label,
                   struct oci_reader **ret, struct err *err);
void oci_decomp_free(struct oci_reader *r);
struct oci_layer_limits {
	uint64_t max_entries, max_bytes;
	uint64_t reserve_bytes;
};
struct oci_layer_stats {
	uint64_t entries, bytes;
};
/* Converts OCI whiteouts (.wh.NAME, .wh..wh..opq) into overlayfs's own
 * (a 0:0 character device, trusted.overlay.opaque=y); without it (whole
 * archives) they are plain names. */
enum { OCI_UNPACK_WHITEOUTS = 1 };
int oci_layer_unpack(struct oci_reader *tar_stream, int dirfd, const char *label,
                     const struct oci_layer_limits *lim, unsigned flags,
                     struct oci_layer_stats *ret_stats, struct err *err);

/* The tar reader (tar.c): entries one by one, each entry's data through
 * oci_tar_data (what is not read is skipped by the next oci_tar_next). */
struct oci_tar_limits {
	size_t max_name; /* bytes of a path or link target */
	size_t max_pax;  /* bytes of one extended header */
	uint64_t max_entries;
	size_t max_xattrs;      /* per entry */
	size_t max_xattr_bytes; /* per entry */
};
enum oci_tar_type {
	OCI_TAR_FILE,
	OCI_TAR_DIR,
	OCI_TAR_SYMLINK,
	OCI_TAR_HARDLINK,
	OCI_TAR_CHAR,
	OCI_TAR_BLOCK,
	OCI_TAR_FIFO,
};
struct oci_tar_xattr {
	char *name;
	void *value;
	size_t len;
};
struct oci_tar_entry {
	enum oci_tar_type type;
	const char *name, *linkname; /* as in the archive (pax and GNU names applied) */
	uint32_t mode;               /* permission bits with setuid, setgid, sticky */
	uint32_t uid, gid;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t size; /* data bytes (0 but for files) */
	uint32_t devmajor, devminor;
	const struct oci_tar_xattr *xattrs;
	size_t nxattrs;
};
struct oci_tar;
int oci_tar_new(struct oci_reader *in, const struct oci_tar_limits *lim, const char *label,
                struct oci_tar **ret, struct err *err);
/* 1 and *ret (valid until the next call), 0 at the end (the input then
 * read to its end), or -errno with a sentence naming the entry. */
int oci_tar_next(struct oci_tar *t, const struct oci_tar_entry **ret, struct err *err);
struct oci_reader *oci_tar_data(struct oci_tar *t);
void oci_tar_free(struct oci_tar *t);
