/* rootfs: the ELF64 reader (a dynamic /bin/sh, a static-pie ldconfig, a
 * bare static header, damaged copies) and --add-binary's closure. */
#include "rootfs/rootfs.h"
#include "unit.h"

#include <elf.h>

static uint8_t *load(const char *path, size_t *len)
{
	char *buf = NULL;
	return file_read_small(path, 64 << 20, &buf, len) == 0 ? (uint8_t *)buf : NULL;
}

TEST(elf_dynamic_sh)
{
	static struct rootfs_elf_info info;
	CHECK_EQ(rootfs_elf_read("/bin/sh", &info), 0);
	CHECK_EQ(info.machine, EM_X86_64);
	CHECK(info.dynamic);
	CHECK_STR(info.interp, "/lib64/ld-linux-x86-64.so.2");
	bool libc = false;
	for (size_t i = 0; i < info.n_needed; i++)
		libc |= strcmp(info.needed[i], "libc.so.6") == 0;
	CHECK(libc);
}

TEST(elf_static)
{
	static struct rootfs_elf_info info;
	/* Debian's ldconfig is static-pie: PT_DYNAMIC, but nothing needed. */
	CHECK_EQ(rootfs_elf_read("/sbin/ldconfig", &info), 0);
	CHECK_EQ(info.n_needed, 0);
	CHECK_STR(info.interp, "");
	/* A plain static executable's header: no program headers to follow. */
	Elf64_Ehdr eh = {0};
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_machine = EM_X86_64;
	CHECK_EQ(rootfs_elf_parse((uint8_t *)&eh, sizeof(eh), &info), 0);
	CHECK(!info.dynamic);
	CHECK_EQ(info.n_needed, 0);
}

TEST(elf_damaged)
{
	static struct rootfs_elf_info info;
	size_t len = 0;
	uint8_t *sh = load("/bin/sh", &len);
	CHECK(sh != NULL && len > 4096);
	if (!sh)
		return;
	/* Not ELF, 32-bit, truncated everywhere. */
	CHECK_EQ(rootfs_elf_parse((const uint8_t *)"#!/bin/sh\n", 10, &info), -ENOEXEC);
	CHECK_EQ(rootfs_elf_parse(sh, 3, &info), -ENOEXEC);
	CHECK_EQ(rootfs_elf_parse(sh, 40, &info), -EBADMSG);
	for (size_t cut = 64; cut < len; cut += 97) {
		int r = rootfs_elf_parse(sh, cut, &info);
		CHECK(r == 0 || r == -EBADMSG);
	}
	uint8_t *copy = malloc(len);
	memcpy(copy, sh, len);
	copy[EI_CLASS] = ELFCLASS32;
	CHECK_EQ(rootfs_elf_parse(copy, len, &info), -ENOEXEC);
	/* Program headers pointing past the end. */
	memcpy(copy, sh, len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;
	eh->e_phoff = len - 8;
	CHECK_EQ(rootfs_elf_parse(copy, len, &info), -EBADMSG);
	memcpy(copy, sh, len);
	eh->e_phentsize = 12;
	CHECK_EQ(rootfs_elf_parse(copy, len, &info), -EBADMSG);
	/* Every PT_DYNAMIC/PT_INTERP offset pushed out of the file. */
	memcpy(copy, sh, len);
	Elf64_Phdr *ph = (Elf64_Phdr *)(copy + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC || ph[i].p_type == PT_INTERP)
			ph[i].p_offset = len + 1;
	CHECK_EQ(rootfs_elf_parse(copy, len, &info), -EBADMSG);
	/* Random byte flips never crash (ASan in make check SANITIZE=1). */
	srand(7);
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, sh, 4096);
		for (int k = 0; k < 8; k++)
			copy[rand() % 4096] = (uint8_t)rand();
		(void)rootfs_elf_parse(copy, 4096, &info);
	}
	free(copy);
	free(sh);
	CHECK_EQ(rootfs_elf_read("/nonexistent/kin-unit", &info), -ENOENT);
	CHECK_EQ(rootfs_elf_read("/tmp", &info), -EINVAL);
}

TEST(elf_add_binary_closure)
{
	struct rootfs_tree *t;
	struct err d = {0};
	mode_t m = 0;
	CHECK_EQ(rootfs_tree_new(&t), 0);
	CHECK_EQ(rootfs_tree_add_binary(t, "/bin/sh", &d), 0);
	if (d.msg[0])
		printf("    %s\n", d.msg);
	/* bookworm: /bin -> usr/bin, sh -> dash, libc and the loader with
	 * the /lib64 link chain. */
	CHECK(rootfs_tree_has(t, "bin", &m) && S_ISLNK(m));
	CHECK(rootfs_tree_has(t, "usr/bin/sh", &m) && S_ISLNK(m));
	CHECK(rootfs_tree_has(t, "usr/bin/dash", &m) && S_ISREG(m));
	CHECK(rootfs_tree_has(t, "usr/lib/x86_64-linux-gnu/libc.so.6", &m) && S_ISREG(m));
	CHECK(rootfs_tree_has(t, "lib64", &m) && S_ISLNK(m));
	CHECK(rootfs_tree_has(t, "usr/lib64/ld-linux-x86-64.so.2", &m) && S_ISLNK(m));
	CHECK(rootfs_tree_has(t, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", &m) &&
	      S_ISREG(m));
	/* A static binary brings nothing but itself. */
	size_t before = rootfs_tree_count(t);
	CHECK_EQ(rootfs_tree_add_binary(t, "/sbin/ldconfig", &d), 0);
	CHECK(rootfs_tree_count(t) >= before + 1 && rootfs_tree_count(t) <= before + 3);
	/* Missing and non-absolute. */
	CHECK_EQ(rootfs_tree_add_binary(t, "/nonexistent/kin-unit", &d), -ENOENT);
	CHECK(strstr(d.msg, "/nonexistent") != NULL);
	/* A script is added as it is. */
	CHECK_EQ(rootfs_tree_add_binary(t, "/etc/hostname", &d), 0);
	rootfs_tree_free(t);
}
