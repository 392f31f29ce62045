/* Fuzz target: a layer as kin imports it — bytes through the
 * decompressor (gzip, zstd or plain, sniffed) and the tar reader into the
 * layer writer, unpacking into a fresh directory. After each input the
 * directory next to it must still be empty: an entry that escaped its
 * layer aborts (the fuzzer reports it). Small limits keep runs fast. */
#include "oci/oci-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem_reader {
	struct oci_reader r;
	const uint8_t *p;
	size_t left;
};

static ssize_t mem_read(struct oci_reader *r, void *buf, size_t n, struct err *err)
{
	struct mem_reader *m = container_of(r, struct mem_reader, r);
	(void)err;
	if (n > m->left)
		n = m->left;
	/* Short reads now and then, as pipes and decompressors give them. */
	if (n > 7 && (m->left & 1))
		n = n / 2 + 1;
	memcpy(buf, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

static char top[64];

static void remove_top(void)
{
	dir_remove_tree(AT_FDCWD, top, 0);
}

static bool empty_dir(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char buf[1024];
	if (fd < 0)
		return false;
	/* "." and ".." only. */
	long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
	int entries = 0;
	for (long off = 0; off < n;) {
		unsigned short reclen = *(unsigned short *)(buf + off + 16);
		entries++;
		off += reclen;
	}
	return entries == 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char layer[96], canary[96];
	if (!top[0]) {
		snprintf(top, sizeof(top), "/tmp/kin-fuzz-layer.%d", (int)getpid());
		mkdir(top, 0700);
		atexit(remove_top);
	}
	snprintf(layer, sizeof(layer), "%s/layer", top);
	snprintf(canary, sizeof(canary), "%s/canary", top);
	mkdir(canary, 0700);
	mkdir(layer, 0700);
	_cleanup_close_ int dirfd = open(layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		abort();
	struct mem_reader m = {.r = {.read = mem_read}, .p = data, .left = size};
	struct oci_reader *dec = NULL;
	struct err err = {0};
	const struct oci_layer_limits lim = {
	    .max_entries = 256, .max_bytes = 1 << 20, .reserve_bytes = 0};
	struct oci_layer_stats stats;
	if (oci_decomp_new(&m.r, OCI_COMP_AUTO, "layer fuzz", &dec, &err) == 0) {
		int r = oci_layer_unpack(dec, dirfd, "layer fuzz", &lim, OCI_UNPACK_WHITEOUTS,
		                         &stats, &err);
		if (r < 0 && !err.msg[0])
			abort(); /* every refusal says why */
		oci_decomp_free(dec);
	}
	if (!empty_dir(canary))
		abort(); /* an entry escaped its layer */
	dir_remove_tree(AT_FDCWD, layer, 0);
	return 0;
}
