/* Fuzz target: depmod's text files as kin reads them (modules.dep,
 * modules.alias, modules.softdep, modules.builtin), then resolution and the
 * closure over whatever index came out. The input is the four files
 * separated by 0xff bytes. The closure must list each module once, after
 * every module it depends on. */
#include "rootfs/rootfs.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *part[4] = {NULL, NULL, NULL, NULL};
	size_t len[4] = {0, 0, 0, 0}, k = 0, start = 0;
	for (size_t i = 0; i <= size && k < 4; i++) {
		if (i == size || data[i] == 0xff) {
			part[k] = (const char *)data + start;
			len[k++] = i - start;
			start = i + 1;
		}
	}
	struct rootfs_modules_index *idx = NULL;
	struct err d = {0};
	if (rootfs_modules_index_parse(part[0], len[0], part[1], len[1], part[2], len[2], part[3],
	                               len[3], &idx, &d) < 0)
		return 0;
	size_t n = rootfs_modules_index_count(idx);
	const char *names[8];
	size_t nn = 0;
	for (size_t i = 0; i < n && nn < 6; i += 1 + n / 6)
		names[nn++] = rootfs_modules_index_name(idx, i);
	names[nn++] = "alias-probe";
	size_t m[16];
	for (size_t i = 0; i < nn; i++)
		(void)rootfs_modules_resolve(idx, names[i], m, 16);
	size_t *order = NULL, no = 0;
	if (rootfs_modules_closure(idx, names, nn, &order, &no, &d) == 0) {
		char *seen = calloc(n ? n : 1, 1);
		for (size_t i = 0; i < no; i++) {
			if (order[i] >= n || seen[order[i]])
				__builtin_trap();
			seen[order[i]] = 1;
		}
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			rootfs_modules_write_subset(idx, order, no, null, null, null);
			fclose(null);
		}
		free(seen);
		free(order);
	}
	rootfs_modules_index_free(idx);
	return 0;
}
