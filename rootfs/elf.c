/* elf: what a dynamic binary needs at run time, read from its ELF64
 * headers (PT_INTERP, PT_DYNAMIC's DT_NEEDED/DT_RUNPATH/DT_RPATH), and the
 * library search the dynamic loader would do, so `--add-binary` puts a
 * working program into an image. The parser takes untrusted bytes: every
 * offset and size is checked against the buffer before use. */
#include "rootfs/rootfs-int.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define ELF_FILE_MAX (1ull << 30)
#define ELF_DYN_MAX  65536
#define LIBS_MAX     512

/* Debian's loader path for x86_64 (ld.so.conf.d/x86_64-linux-gnu.conf and
 * the built-in defaults), fixed so a build does not depend on the host's
 * ld.so.cache or environment. */
static const char *const default_dirs[] = {
    "/usr/local/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
};

static bool range_ok(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* A NUL-terminated string at off in [lo, hi), copied into out. */
static int copy_str(const uint8_t *buf, uint64_t lo, uint64_t hi, uint64_t off, char *out,
                    size_t size)
{
	if (off < lo || off >= hi)
		return -EBADMSG;
	const uint8_t *s = buf + off, *nul = memchr(s, '\0', hi - off);
	if (!nul)
		return -EBADMSG;
	size_t n = (size_t)(nul - s);
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(out, s, n + 1);
	return 0;
}

static bool vaddr_to_off(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh, uint64_t va,
                         uint64_t *ret)
{
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, buf + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || va < ph.p_vaddr || va - ph.p_vaddr >= ph.p_filesz)
			continue;
		uint64_t off = va - ph.p_vaddr + ph.p_offset;
		if (off < ph.p_offset || off >= len)
			return false;
		*ret = off;
		return true;
	}
	return false;
}

/* PT_INTERP into ret->interp; PT_DYNAMIC (checked to lie in buf) into dyn. */
static int elf_program_headers(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh,
                               Elf64_Phdr *dyn, struct rootfs_elf_info *ret)
{
	if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !range_ok(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), len))
		return -EBADMSG;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, buf + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_INTERP && ph.p_type != PT_DYNAMIC)
			continue;
		if (!range_ok(ph.p_offset, ph.p_filesz, len))
			return -EBADMSG;
		if (ph.p_type == PT_DYNAMIC) {
			*dyn = ph;
			ret->dynamic = true;
			continue;
		}
		int r = copy_str(buf, ph.p_offset, ph.p_offset + ph.p_filesz, ph.p_offset,
		                 ret->interp, sizeof(ret->interp));
		if (r < 0)
			return r;
	}
	return 0;
}

/* What PT_DYNAMIC points at: string table offsets, -1 for absent. */
struct elf_dyn_refs {
	uint64_t strtab_va, strsz;
	uint64_t needed[ROOTFS_ELF_NEEDED_MAX];
	size_t n_needed;
	int64_t runpath, rpath;
};

static int elf_dynamic_scan(const uint8_t *buf, const Elf64_Phdr *dyn, struct elf_dyn_refs *refs)
{
	size_t n_dyn = dyn->p_filesz / sizeof(Elf64_Dyn);
	*refs = (struct elf_dyn_refs){.runpath = -1, .rpath = -1};
	if (n_dyn > ELF_DYN_MAX)
		return -EBADMSG;
	for (size_t i = 0; i < n_dyn; i++) {
		Elf64_Dyn d;
		memcpy(&d, buf + dyn->p_offset + i * sizeof(d), sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		switch (d.d_tag) {
		case DT_STRTAB:
			refs->strtab_va = d.d_un.d_ptr;
			break;
		case DT_STRSZ:
			refs->strsz = d.d_un.d_val;
			break;
		case DT_NEEDED:
			if (refs->n_needed == ROOTFS_ELF_NEEDED_MAX)
				return -E2BIG;
			refs->needed[refs->n_needed++] = d.d_un.d_val;
			break;
		case DT_RUNPATH:
			refs->runpath = (int64_t)(d.d_un.d_val & INT64_MAX);
			break;
		case DT_RPATH:
			refs->rpath = (int64_t)(d.d_un.d_val & INT64_MAX);
			break;
		default:
			break;
		}
	}
	return 0;
}

/* The string at index ref of the table [strtab, strtab + strsz). */
static int elf_dyn_str(const uint8_t *buf, uint64_t strtab, uint64_t strsz, uint64_t ref, char *out,
                       size_t size)
{
	if (ref >= strsz)
		return -EBADMSG;
	return copy_str(buf, strtab, strtab + strsz, strtab + ref, out, size);
}

static int elf_dynamic_strings(const uint8_t *buf, size_t len, const Elf64_Ehdr *eh,
                               const struct elf_dyn_refs *refs, struct rootfs_elf_info *ret)
{
	uint64_t strtab, strsz = refs->strsz;
	int r;
	if (!vaddr_to_off(buf, len, eh, refs->strtab_va, &strtab) || !range_ok(strtab, strsz, len))
		return -EBADMSG;
	for (size_t i = 0; i < refs->n_needed; i++) {
		r = elf_dyn_str(buf, strtab, strsz, refs->needed[i], ret->needed[i],
		                sizeof(ret->needed[i]));
		if (r < 0)
			return r;
		if (!ret->needed[i][0])
			return -EBADMSG;
	}
	ret->n_needed = refs->n_needed;
	if (refs->runpath >= 0 && (r = elf_dyn_str(buf, strtab, strsz, (uint64_t)refs->runpath,
	                                           ret->runpath, sizeof(ret->runpath))) < 0)
		return r;
	if (refs->rpath >= 0 && (r = elf_dyn_str(buf, strtab, strsz, (uint64_t)refs->rpath,
	                                         ret->rpath, sizeof(ret->rpath))) < 0)
		return r;
	return 0;
}

int rootfs_elf_parse(const uint8_t *buf, size_t len, struct rootfs_elf_info *ret)
{
	Elf64_Ehdr eh;
	Elf64_Phdr dyn = {0};
	struct elf_dyn_refs refs;

	memset(ret, 0, sizeof(*ret));
	if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	if (len < sizeof(eh))
		return -EBADMSG;
	memcpy(&eh, buf, sizeof(eh));
	ret->machine = eh.e_machine;
	if (eh.e_phnum == 0)
		return 0;
	int r = elf_program_headers(buf, len, &eh, &dyn, ret);
	if (r < 0 || !ret->dynamic)
		return r;
	r = elf_dynamic_scan(buf, &dyn, &refs);
	if (r < 0)
		return r;
	if (refs.n_needed == 0 && refs.runpath < 0 && refs.rpath < 0)
		return 0;
	return elf_dynamic_strings(buf, len, &eh, &refs, ret);
}

int rootfs_elf_read(const char *path, struct rootfs_elf_info *ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > ELF_FILE_MAX)
		return -EFBIG;
	if (st.st_size < EI_NIDENT)
		return -ENOEXEC;
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	int r = rootfs_elf_parse(map, (size_t)st.st_size, ret);
	munmap(map, (size_t)st.st_size);
	return r;
}

/* A candidate library is usable if it is an ELF64 for the same machine. */
static bool lib_matches(const char *path, uint16_t machine)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	Elf64_Ehdr eh;
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return false;
	return memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	       eh.e_machine == machine;
}

/* Searches a colon-separated list ($ORIGIN expanded) for name. */
static bool search_list(const char *list, const char *origin, const char *name, uint16_t machine,
                        char *out, size_t size)
{
	char copy[ROOTFS_PATH_MAX];
	if (!list[0] || str_copy(copy, sizeof(copy), list) < 0)
		return false;
	char *save = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char expanded[ROOTFS_PATH_MAX];
		if (str_startswith(dir, "$ORIGIN"))
			snprintf(expanded, sizeof(expanded), "%s%s", origin, dir + 7);
		else if (str_startswith(dir, "${ORIGIN}"))
			snprintf(expanded, sizeof(expanded), "%s%s", origin, dir + 9);
		else
			snprintf(expanded, sizeof(expanded), "%s", dir);
		if (snprintf(out, size, "%s/%s", expanded, name) < (int)size &&
		    lib_matches(out, machine))
			return true;
	}
	return false;
}

static int find_lib(const struct rootfs_elf_info *obj, const char *obj_path, const char *name,
                    char *out, size_t size)
{
	char origin[ROOTFS_PATH_MAX];
	const char *slash = strrchr(obj_path, '/');
	snprintf(origin, sizeof(origin), "%.*s", slash ? (int)(slash - obj_path) : 1,
	         slash ? obj_path : ".");
	if (strchr(name, '/'))
		return lib_matches(name, obj->machine) ? str_copy(out, size, name) : -ENOENT;
	/* The loader ignores DT_RPATH when DT_RUNPATH is present. */
	if (!obj->runpath[0] && search_list(obj->rpath, origin, name, obj->machine, out, size))
		return 0;
	if (search_list(obj->runpath, origin, name, obj->machine, out, size))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(default_dirs); i++)
		if (snprintf(out, size, "%s/%s", default_dirs[i], name) < (int)size &&
		    lib_matches(out, obj->machine))
			return 0;
	return -ENOENT;
}

int rootfs_tree_add_binary(struct rootfs_tree *t, const char *path, struct err *d)
{
	/* A work list of real paths; seen ones are not parsed twice. */
	_cleanup_free_ char(*todo)[ROOTFS_PATH_MAX] = calloc(LIBS_MAX, ROOTFS_PATH_MAX);
	_cleanup_free_ struct rootfs_elf_info *info = malloc(sizeof(*info));
	size_t n = 0;
	int r;

	if (!todo || !info)
		return -ENOMEM;
	err_clear(d);
	r = rootfs_tree_add_host_path(t, path, todo[0], ROOTFS_PATH_MAX, d);
	if (r < 0)
		return r;
	n = 1;
	for (size_t i = 0; i < n; i++) {
		r = rootfs_elf_read(todo[i], info);
		if (r == -ENOEXEC && i == 0)
			return 0; /* a script or data: nothing to follow */
		if (r < 0) {
			return err_set_errno(d, r, "%s: %s", todo[i],
			                     r == -ENOEXEC ? "not an ELF64 object" : strerror(-r));
		}
		char found[ROOTFS_PATH_MAX];
		for (size_t k = 0; k <= info->n_needed; k++) {
			const char *name = k < info->n_needed ? info->needed[k] : info->interp;
			if (!name[0])
				continue;
			r = k < info->n_needed ? find_lib(info, todo[i], name, found, sizeof(found))
			                       : str_copy(found, sizeof(found), name);
			if (r < 0) {
				err_set_errno(d, -ENOENT,
				              "%s needed by %s: not found in RPATH, RUNPATH or %s",
				              name, todo[i], "the multiarch library directories");
				return -ENOENT;
			}
			char real[ROOTFS_PATH_MAX];
			r = rootfs_tree_add_host_path(t, found, real, sizeof(real), d);
			if (r < 0)
				return r;
			bool seen = false;
			for (size_t j = 0; j < n && !seen; j++)
				seen = strcmp(todo[j], real) == 0;
			if (seen)
				continue;
			if (n == LIBS_MAX) {
				return err_set_errno(d, -E2BIG, "%s: more than %d libraries", path,
				                     LIBS_MAX);
			}
			memcpy(todo[n++], real, ROOTFS_PATH_MAX);
		}
	}
	return 0;
}
