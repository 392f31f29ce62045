/* The driver of tests/ns/oci-layer.test.sh: unpacks one layer blob (tar,
 * tar+gzip or tar+zstd) into an empty directory as the image store will,
 * and prints what it saw: "entries N bytes N digest sha256:… diff_id
 * sha256:…" (the blob's digest and its uncompressed stream's). Errors:
 * the sentence on stderr, exit 1.
 *
 *	oci-layer-unpack [--whiteouts] [--max-bytes N] BLOB DIR */
#include "oci/oci-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	unsigned flags = 0;
	struct oci_layer_limits lim = {0};
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--whiteouts") == 0)
			flags |= OCI_UNPACK_WHITEOUTS;
		else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
			lim.max_bytes = strtoull(argv[++i], NULL, 10);
		else
			break;
	}
	/* kin's import uses these; 0 would refuse everything. */
	lim.max_entries = 1u << 22;
	if (!lim.max_bytes)
		lim.max_bytes = 1ull << 40;
	if (argc - i != 2) {
		fprintf(stderr, "usage: oci-layer-unpack [--whiteouts] [--max-bytes N] BLOB DIR\n");
		return 2;
	}
	int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
	int dirfd = open(argv[i + 1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || dirfd < 0) {
		perror(fd < 0 ? argv[i] : argv[i + 1]);
		return 1;
	}
	struct oci_fd_reader f;
	struct oci_hash_reader blob, diff;
	struct oci_reader *d;
	struct oci_layer_stats st;
	struct err e = {0};
	oci_fd_reader_init(&f, fd, UINT64_MAX, argv[i]);
	oci_hash_reader_init(&blob, &f.r);
	if (oci_decomp_new(&blob.r, OCI_COMP_AUTO, argv[i], &d, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	oci_hash_reader_init(&diff, d);
	int r = oci_layer_unpack(&diff.r, dirfd, "test", &lim, flags, &st, &e);
	oci_decomp_free(d);
	if (r < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	char a[OCI_DIGEST_LEN + 1], b[OCI_DIGEST_LEN + 1];
	oci_hash_reader_digest(&blob, a);
	oci_hash_reader_digest(&diff, b);
	printf("entries %llu bytes %llu digest %s diff_id %s\n", (unsigned long long)st.entries,
	       (unsigned long long)st.bytes, a, b);
	return 0;
}
