/* rootfs: what kin knows about root filesystems and kernels.
 *
 * The builder side (`kin image ...`, on a host): an in-memory image tree
 * written as a reproducible cpio newc initramfs or, through mke2fs -d, an
 * ext4 root disk; the kernel modules a guest needs with their dependency
 * closure (modules.dep, modules.alias, modules.softdep, modules.builtin); host
 * binaries with the shared libraries their ELF headers name; Debian's kernel
 * fetched into a cache.
 *
 * The boot side (machine init in a guest): the module loader (finit_module(2),
 * dependencies first, builtins and loaded modules skipped) and root=
 * (device, LABEL=, UUID= through libblkid) with switch_root.
 *
 * Errors are -errno; where a human needs to know which object failed, a
 * struct err (lib/err.h) gets one sentence naming it. Nothing here logs above
 * debug except the two boot entry points, which are the deciders. */
#pragma once

#include "lib/lib.h"

#include <stdio.h>
#include <sys/stat.h>

#define ROOTFS_DEBIAN_EPOCH     1700000000 /* a Debian root's file times unless given */
#define ROOTFS_PATH_MAX         1024       /* a path inside an image, or on the host */
#define ROOTFS_ENTRIES_MAX      262144     /* entries in one image tree */
#define ROOTFS_MODULES_NAME_MAX 55         /* the kernel's MODULE_NAME_LEN - 1 */
#define ROOTFS_MODULES_LIST_MAX 256        /* names in one kin.modules= / --modules list */
#define ROOTFS_MODULES_CSV_MAX  4096       /* bytes in one such list */

/* ---- image tree ------------------------------------------------------ */

/* Paths are image paths ("/usr/bin/x" or "usr/bin/x"); missing parent
 * directories are made (0755). Intermediate components go through the
 * image's own symlinks, so with the merged-/usr links in place "lib/x" lands
 * in "usr/lib/x". A later non-directory replaces an earlier one at the same
 * path; a directory and a non-directory at one path is -EEXIST. */
struct rootfs_tree;
int rootfs_tree_new(struct rootfs_tree **ret);
void rootfs_tree_free(struct rootfs_tree *t);
size_t rootfs_tree_count(const struct rootfs_tree *t);
int rootfs_tree_add_dir(struct rootfs_tree *t, const char *path, mode_t perm);
/* A regular file whose bytes are read from host_path when the image is
 * written (its size is taken now and checked then). */
int rootfs_tree_add_file(struct rootfs_tree *t, const char *path, mode_t perm,
                         const char *host_path);
int rootfs_tree_add_data(struct rootfs_tree *t, const char *path, mode_t perm, const void *data,
                         size_t len);
int rootfs_tree_add_symlink(struct rootfs_tree *t, const char *path, const char *target);
/* A character or block device node: mode carries S_IFCHR or S_IFBLK. */
int rootfs_tree_add_node(struct rootfs_tree *t, const char *path, mode_t mode, dev_t rdev);
/* `--add SRC:DST`: a host file, or a directory tree (symlinks kept as
 * links, device nodes kept, sockets and fifos skipped), at DST. */
int rootfs_tree_add_host(struct rootfs_tree *t, const char *src, const char *dst, struct err *d);
/* A host file at its own path, with every symlink met on the way (in any
 * component) added as a link too. The real path is returned in ret_real. */
int rootfs_tree_add_host_path(struct rootfs_tree *t, const char *host_path, char *ret_real,
                              size_t real_size, struct err *d);
/* True (and the kind in ret_mode's S_IFMT bits) when path is in the tree. */
bool rootfs_tree_has(const struct rootfs_tree *t, const char *path, mode_t *ret_mode);

/* Writes the tree as a cpio newc archive: entries sorted by path, inode
 * numbers in that order, uid/gid 0, every mtime = mtime. Same tree, same
 * bytes. */
int rootfs_cpio_write(const struct rootfs_tree *t, int fd, uint64_t mtime, struct err *d);
/* Reads one regular file (at most max bytes) out of a cpio newc archive. */
int rootfs_cpio_read_file(const char *archive, const char *name, size_t max, char **ret_buf,
                          size_t *ret_len);
/* Materialises the tree under dir (for mke2fs -d), times set to mtime.
 * dir may hold a root already (a Debian one): its directories and equal
 * symlinks are kept, other entries at the tree's paths replaced, and no
 * symlink in dir is followed (one on the way is -ELOOP). */
int rootfs_tree_stage(const struct rootfs_tree *t, const char *dir, uint64_t mtime, struct err *d);

/* ---- ELF dependencies ----------------------------------------------- */

#define ROOTFS_ELF_NEEDED_MAX 128
#define ROOTFS_ELF_STR_MAX    256

struct rootfs_elf_info {
	uint16_t machine;
	bool dynamic; /* has PT_DYNAMIC */
	char interp[ROOTFS_ELF_STR_MAX];
	size_t n_needed;
	char needed[ROOTFS_ELF_NEEDED_MAX][ROOTFS_ELF_STR_MAX];
	char runpath[ROOTFS_PATH_MAX];
	char rpath[ROOTFS_PATH_MAX];
};

/* Parses an ELF64 little-endian image held in memory: PT_INTERP, DT_NEEDED,
 * DT_RUNPATH, DT_RPATH. Every offset is checked against len: -ENOEXEC for
 * something that is not such an ELF, -EBADMSG for a damaged one. */
int rootfs_elf_parse(const uint8_t *buf, size_t len, struct rootfs_elf_info *ret);
int rootfs_elf_read(const char *path, struct rootfs_elf_info *ret);
/* `--add-binary PATH`: the binary, its interpreter and the closure of its
 * DT_NEEDED libraries (RPATH, RUNPATH, then Debian's multiarch and default
 * directories), each at its host path with its symlinks. */
int rootfs_tree_add_binary(struct rootfs_tree *t, const char *path, struct err *d);

/* ---- kernel modules -------------------------------------------------- */

struct rootfs_modules_index;
/* Reads moddir/modules.dep (required), modules.alias, modules.softdep and
 * modules.builtin (optional). A malformed line is -EBADMSG naming the file
 * and line. */
int rootfs_modules_index_load(const char *moddir, struct rootfs_modules_index **ret, struct err *d);
/* The same from buffers (NULL for an absent file): what the fuzzer drives. */
int rootfs_modules_index_parse(const char *dep, size_t dep_len, const char *alias, size_t alias_len,
                               const char *softdep, size_t softdep_len, const char *builtin,
                               size_t builtin_len, struct rootfs_modules_index **ret,
                               struct err *d);
void rootfs_modules_index_free(struct rootfs_modules_index *idx);
size_t rootfs_modules_index_count(const struct rootfs_modules_index *idx);
const char *rootfs_modules_index_name(const struct rootfs_modules_index *idx, size_t i);
const char *rootfs_modules_index_path(const struct rootfs_modules_index *idx, size_t i);

/* "virtio-net" and "virtio_net" are one module. */
int rootfs_modules_name_normalize(const char *in, char *out, size_t size);
bool rootfs_modules_is_builtin(const struct rootfs_modules_index *idx, const char *name);
/* A name, or an alias pattern match, to module indices (up to max);
 * returns how many, 0 for a builtin, -ENOENT for none. */
int rootfs_modules_resolve(const struct rootfs_modules_index *idx, const char *name, size_t *ret,
                           size_t max);

/* Every module the names need, dependencies (and softdep "pre:") before
 * their users, each once: indices into idx in load order. -ENOENT names an
 * unknown module, -ELOOP a dependency cycle. */
int rootfs_modules_closure(const struct rootfs_modules_index *idx, const char *const *names,
                           size_t n, size_t **ret_order, size_t *ret_n, struct err *d);
/* The subset of the index files describing the modules in order: what an
 * image ships next to those modules. */
int rootfs_modules_write_subset(const struct rootfs_modules_index *idx, const size_t *order,
                                size_t n, FILE *dep, FILE *alias, FILE *softdep);

/* Splits a comma list ("a,b,c") into names: each a valid module name or
 * alias of at most ROOTFS_MODULES_NAME_MAX bytes... or an alias up to 255; at most
 * ROOTFS_MODULES_LIST_MAX of them. Fills names (pointers into buf) and returns n. */
int rootfs_modules_csv_split(char *buf, const char **names, size_t max);
/* Validates a kin.modules= value without keeping it. */
bool rootfs_modules_csv_valid(const char *csv);

/* The loader. finit and is_loaded are seams for tests; NULL means the real
 * finit_module(2) and /sys/module/NAME/initstate. report gets each failure
 * (module name, -errno); NULL means log_error. */
struct rootfs_modules_ops {
	int (*finit)(int fd, const char *params, int flags, void *data);
	bool (*is_loaded)(const char *name, void *data);
	void (*report)(const char *module, int err, const char *why, void *data);
	void *data;
};
/* Loads each name (aliases resolved), dependencies first. Returns the
 * number of names that failed, or -errno when the index cannot be read. */
int rootfs_modules_load(const char *moddir, const char *const *names, size_t n,
                        const struct rootfs_modules_ops *ops);
int rootfs_modules_load_list(const char *moddir, const char *names_csv,
                             const struct rootfs_modules_ops *ops);
/* Machine init loads the image's /etc/kin/modules plus extra_csv
 * (kin.modules=) from /lib/modules/$(uname -r) in steps, so that kin is
 * ready (RPC listening) after loading only what that needs:
 *   EARLY  the RPC link's modules among the image's (virtio_pci,
 *          virtio_console, vsock, vmw_vsock_virtio_transport), everything
 *          kin.modules= names, and with root= from an initramfs the disk's
 *          (virtio_blk, rootfstype= or ext4) when the image lists them
 *   NET    virtio_net (eth0), first after ready
 *   REST   the image's other modules (ext4, overlay, veth, bridge, ...)
 *   ALL    everything at once
 * A release other than the image's /etc/kin/kernel-release is refused
 * (-EXDEV, logged once by EARLY/ALL). Returns the number of names that
 * failed (each logged by module name) or -errno; st (may be NULL) adds the
 * modules loaded and the time spent inside finit_module(2). */
enum rootfs_modules_boot_step {
	ROOTFS_MODULES_BOOT_EARLY,
	ROOTFS_MODULES_BOOT_NET,
	ROOTFS_MODULES_BOOT_REST,
	ROOTFS_MODULES_BOOT_ALL,
};
struct rootfs_modules_boot_stats {
	unsigned loaded;
	uint64_t kernel_ns;
};
int rootfs_modules_load_boot(enum rootfs_modules_boot_step step, const char *extra_csv,
                             struct rootfs_modules_boot_stats *st);

/* ---- root= and switch_root ------------------------------------------- */

struct rootfs_root_spec {
	char root[ROOTFS_PATH_MAX]; /* root= value: /dev/x, LABEL=, UUID=, PARTUUID= */
	char fstype[64];            /* rootfstype=, "" to probe */
	char flags[256];            /* rootflags= */
	bool ro;                    /* "ro" (default rw) */
	int wait_ms;                /* rootwait=SECONDS* 1000; default 10 s */
	char init[ROOTFS_PATH_MAX]; /* init=: an absolute path, "" for /sbin/init */
};
/* Fills spec from a kernel command line; false when there is no root=. */
bool rootfs_root_parse(const char *cmdline, struct rootfs_root_spec *spec);
/* True (spec filled) when / is an initramfs and /proc/cmdline has root=:
 * what rootfs_switch_root_boot will act on. */
bool rootfs_root_wanted(struct rootfs_root_spec *spec);
/* root= to a device node through libblkid, retrying while devices appear. */
int rootfs_root_resolve(const char *spec, int wait_ms, char *ret_dev, size_t size);
/* Machine init, as PID 1 of an initramfs: with root= on /proc/cmdline,
 * mount it, move /dev /proc /sys /run into it, free the initramfs, make it
 * / and exec its /sbin/init (or init=) with argv, whose argv[0] is replaced
 * by the program run (NULL: just the program). Returns 0
 * when there is nothing to do (no root=, or / is already a real root) or the
 * new root has no /sbin/init (kin goes on in it); -errno on failure. */
int rootfs_switch_root_boot(char *argv[]);
/* Machine init staying on the initramfs: the rootfs mount has no parent, so
 * pivot_root(2) refuses it (EINVAL) and no cell could have a root of its
 * own. A recursive bind of it, moved over / and chrooted to, becomes the
 * root instead: the same files, no copy, and a mount with a parent, as
 * after a switch_root. 1 done, 0 not an initramfs, -errno. */
int rootfs_initramfs_rebind(void);

/* ---- building -------------------------------------------------------- */

enum rootfs_format { ROOTFS_FORMAT_CPIO, ROOTFS_FORMAT_EXT4 };
#define ROOTFS_ADDS_MAX 256

struct rootfs_build_opts {
	const char *output;
	enum rootfs_format format;
	const char *kernel_dir;  /* a kernel root: lib/modules/REL inside */
	const char *modules_dir; /* /lib/modules/REL itself */
	const char *cache_dir;   /* kernel cache (default rootfs_kernel_cache_dir()) */
	bool no_modules;
	const char *modules_csv; /* added to the defaults */
	size_t n_adds;
	const char *add_src[ROOTFS_ADDS_MAX], *add_dst[ROOTFS_ADDS_MAX];
	size_t n_binaries;
	const char *binaries[ROOTFS_ADDS_MAX];
	const char *label; /* ext4 label, default "kin-root" */
	const char *self;  /* kin's binary, default /proc/self/exe */
	uint64_t mtime;    /* SOURCE_DATE_EPOCH or 0 (ROOTFS_DEBIAN_EPOCH for a Debian root) */
	uint64_t size_mb;  /* ext4 size; 0 = computed */
	bool mtime_given;  /* SOURCE_DATE_EPOCH was set (passed on to apt in a Debian root) */
	/* --distribution debian: the image is a Debian root (debootstrap'ed
	 * once into a cache, packages installed with apt-get in a chroot) with
	 * kin as /sbin/init; ext4 only. */
	const char *distribution;
	const char *release;      /* bookworm */
	const char *packages;     /* comma list for apt-get install; NULL: none */
	const char *mirror;       /* default: the host's apt mirror */
	const char *hostname;     /* default "kin" */
	const char *root_key;     /* root's authorized_keys; root has no password anyway */
	const char *debian_cache; /* default rootfs_debian_cache_dir() */
	FILE *progress;           /* a line per step and skipped default; NULL: quiet */
};
/* The modules every image loads at boot, before --modules / kin.modules=. */
extern const char *const rootfs_default_modules[];
#define ROOTFS_PACKAGES_MAX     256  /* names in --packages */
#define ROOTFS_PACKAGES_CSV_MAX 8192 /* bytes in --packages */
int rootfs_build(const struct rootfs_build_opts *o, struct err *d);
/* `kin image build`'s flags into o (zeroed first; the strings point into
 * argv): 0, 1 when help was asked for, -EINVAL with d naming the flag. */
int rootfs_build_args(int argc, char **argv, struct rootfs_build_opts *o, struct err *d);

/* ---- Debian roots ---------------------------------------------------- */

/* $KIN_DEBIAN_CACHE, else /var/cache/kin/debian (beside the kernel's). */
const char *rootfs_debian_cache_dir(void);
/* The Debian mirror an apt sources file names: the first "deb" entry of a
 * release itself (a suite without '-': not -updates or -security). deb822
 * for a .sources file, else one-line format. 0, or -ENOENT for none. */
int rootfs_debian_mirror_parse(const char *text, bool deb822, char *out, size_t size);

/* ---- kernel cache ---------------------------------------------------- */

/* $KIN_KERNEL_CACHE, else /var/cache/kin/kernel. */
const char *rootfs_kernel_cache_dir(void);
/* Fetches Debian's current kernel (linux-image-amd64's dependency) with
 * apt-get download + dpkg -x into cache/RELEASE, runs depmod, points
 * cache/current at it; a cached release is reused. Returns the release. */
int rootfs_kernel_fetch(const char *cache, char *ret_release, size_t size, struct err *d);
/* The cached current kernel: its root (lib/modules/REL, boot/vmlinuz-REL). */
int rootfs_kernel_cached(const char *cache, char *ret_root, size_t root_size, char *ret_release,
                         size_t rel_size);

/* `kin image ...`: 0, 1 on a failed build, 2 on a usage error. */
int rootfs_main(int argc, char **argv);
