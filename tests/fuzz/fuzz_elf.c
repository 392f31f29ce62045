/* Fuzz target: the ELF64 reader behind --add-binary, fed arbitrary bytes.
 * Whatever it accepts must have bounded, NUL-terminated strings. */
#include "rootfs/rootfs.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rootfs_elf_info info;
	if (rootfs_elf_parse(data, size, &info) < 0)
		return 0;
	if (info.n_needed > ROOTFS_ELF_NEEDED_MAX ||
	    strnlen(info.interp, sizeof(info.interp)) == sizeof(info.interp) ||
	    strnlen(info.runpath, sizeof(info.runpath)) == sizeof(info.runpath))
		__builtin_trap();
	for (size_t i = 0; i < info.n_needed; i++)
		if (!info.needed[i][0] ||
		    strnlen(info.needed[i], ROOTFS_ELF_STR_MAX) == ROOTFS_ELF_STR_MAX)
			__builtin_trap();
	return 0;
}
