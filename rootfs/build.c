/* build: `kin image build` — the image tree (kin as /init, merged-/usr
 * layout, the directories kin mounts on, /dev/console, the kernel modules
 * a guest needs with their closure, the user's trees and binaries, the
 * default configuration), written as cpio newc or as an ext4 disk through
 * mke2fs -d. Every input that could vary between builds (times, owners,
 * directory order, UUIDs) is fixed so the same inputs give the same bytes. */
#include "rootfs/debian-int.h"
#include "rootfs/modules-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

const char *const rootfs_default_modules[] = {
    "virtio_pci", "virtio_blk",
    "virtio_net", "virtio_console",
    "virtio_rng", "vmw_vsock_virtio_transport",
    "ext4",       "overlay",
    "veth",       "bridge",
    "tun",        "9pnet_virtio",
    "9p",         NULL,
};

void rootfs_note(const struct rootfs_build_opts *o, const char *fmt, ...)
{
	va_list ap;
	if (!o->progress)
		return;
	fputs("kin image: ", o->progress);
	va_start(ap, fmt);
	vfprintf(o->progress, fmt, ap);
	va_end(ap);
	fputc('\n', o->progress);
}

/* Debian bookworm's merged /usr: one name per file in the image. */
static const char *const merged_links[][2] = {
    {"bin", "usr/bin"},
    {"sbin", "usr/sbin"},
    {"lib", "usr/lib"},
    {"lib64", "usr/lib64"},
};

/* What a Debian root has already: the links, so that what the tree adds
 * at /lib/x lands at /usr/lib/x as in the root. */
static int merged_usr(struct rootfs_tree *t)
{
	int r = 0;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(merged_links); i++)
		r = rootfs_tree_add_symlink(t, merged_links[i][0], merged_links[i][1]);
	return r;
}

static int base_layout(struct rootfs_tree *t, const char *self, struct err *d)
{
	static const struct {
		const char *path;
		mode_t perm;
	} dirs[] = {
	    {"usr", 0755},       {"usr/bin", 0755}, {"usr/sbin", 0755}, {"usr/lib", 0755},
	    {"usr/lib64", 0755}, {"dev", 0755},     {"proc", 0555},     {"sys", 0555},
	    {"run", 0755},       {"tmp", 01777},    {"root", 0700},     {"etc", 0755},
	    {"etc/kin", 0755},   {"mnt", 0755},
	};
	int r;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if ((r = rootfs_tree_add_dir(t, dirs[i].path, dirs[i].perm)) < 0)
			return r;
	if ((r = merged_usr(t)) < 0)
		return r;
	/* The kernel opens /dev/console for init before devtmpfs exists. */
	if ((r = rootfs_tree_add_node(t, "dev/console", S_IFCHR | 0600, makedev(5, 1))) < 0)
		return r;
	r = rootfs_tree_add_file(t, "init", 0755, self);
	if (r < 0) {
		return err_set_errno(d, r, "kin itself (%s): %s", self, strerror(-r));
	}
	r = rootfs_tree_add_symlink(t, "sbin/init", "/init");
	/* `kin ctl ...` inside the guest: the same binary under its own name
	 * (main() picks the job from argv[0]'s basename). */
	if (r == 0)
		r = rootfs_tree_add_symlink(t, "usr/bin/kin", "/init");
	return r;
}

/* Where the modules come from: a directory holding modules.dep, and the
 * kernel release it is for. */
static int find_moddir(const struct rootfs_build_opts *o, char *moddir, size_t size, char *rel,
                       size_t rel_size, struct err *d)
{
	char root[ROOTFS_PATH_MAX], base[ROOTFS_PATH_MAX + 32];
	int r;
	if (o->modules_dir) {
		char real[PATH_MAX];
		if (!realpath(o->modules_dir, real)) {
			r = -errno;
			err_set_errno(d, r, "--modules-dir %s: %s", o->modules_dir, strerror(-r));
			return r;
		}
		const char *slash = strrchr(real, '/');
		str_copy(rel, rel_size, slash ? slash + 1 : real);
		return str_copy(moddir, size, real);
	}
	if (o->kernel_dir) {
		str_copy(root, sizeof(root), o->kernel_dir);
	} else {
		const char *cache = o->cache_dir ? o->cache_dir : rootfs_kernel_cache_dir();
		r = rootfs_kernel_cached(cache, root, sizeof(root), rel, rel_size);
		if (r < 0) {
			return err_set_errno(
			    d, r,
			    "no kernel in the cache %s: run 'kin image kernel' first, "
			    "or give --kernel-dir, --modules-dir or --no-modules",
			    cache);
		}
	}
	/* The one release under ROOT/lib/modules. */
	snprintf(base, sizeof(base), "%s/lib/modules", root);
	DIR *dir = opendir(base);
	if (!dir) {
		r = -errno;
		err_set_errno(d, r, "%s: %s", base, strerror(-r));
		return r;
	}
	struct dirent *de;
	int found = 0;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.') {
			found++;
			str_copy(rel, rel_size, de->d_name);
		}
	closedir(dir);
	if (found != 1) {
		return err_set_errno(d, -EINVAL, "%s: expected one kernel release, found %d", base,
		                     found);
	}
	if (snprintf(moddir, size, "%s/%s", base, rel) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

static int add_stream(struct rootfs_tree *t, const char *path, FILE *f, char **buf, size_t *len)
{
	if (fflush(f) != 0 || ferror(f))
		return -EIO;
	return rootfs_tree_add_data(t, path, 0644, *buf, *len);
}

static int add_modules(struct rootfs_tree *t, const struct rootfs_build_opts *o, struct err *d)
{
	char moddir[ROOTFS_PATH_MAX], rel[256], img[ROOTFS_PATH_MAX + 300];
	char csv[ROOTFS_MODULES_CSV_MAX + 1];
	const char *names[ROOTFS_MODULES_LIST_MAX * 2];
	size_t n = 0, *order = NULL, n_order = 0;
	struct rootfs_modules_index *idx = NULL;
	int r = find_moddir(o, moddir, sizeof(moddir), rel, sizeof(rel), d);
	if (r < 0)
		return r;
	r = rootfs_modules_index_load(moddir, &idx, d);
	if (r < 0)
		return r;
	/* Defaults the kernel does not have are skipped; asked-for ones not. */
	for (size_t i = 0; rootfs_default_modules[i]; i++) {
		size_t m[8];
		if (rootfs_modules_resolve(idx, rootfs_default_modules[i], m, ARRAY_SIZE(m)) >= 0)
			names[n++] = rootfs_default_modules[i];
		else
			rootfs_note(o, "kernel %s has no module %s; skipped", rel,
			            rootfs_default_modules[i]);
	}
	if (o->modules_csv) {
		str_copy(csv, sizeof(csv), o->modules_csv);
		int k = rootfs_modules_csv_split(csv, names + n, ROOTFS_MODULES_LIST_MAX);
		if (k < 0) {
			err_set_errno(d, k, "--modules: not a valid list of module names");
			r = k;
			goto out;
		}
		n += (size_t)k;
	}
	r = rootfs_modules_closure(idx, names, n, &order, &n_order, d);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n_order && r >= 0; i++) {
		const char *p = rootfs_modules_index_path(idx, order[i]);
		char host[ROOTFS_PATH_MAX * 2];
		snprintf(host, sizeof(host), "%s/%s", moddir, p);
		snprintf(img, sizeof(img), "usr/lib/modules/%s/%s", rel, p);
		r = rootfs_tree_add_file(t, img, 0644, host);
		if (r < 0)
			err_set_errno(d, r, "module file %s: %s", host, strerror(-r));
	}
	if (r < 0)
		goto out;
	{
		char *bd = NULL, *ba = NULL, *bs = NULL;
		size_t ld = 0, la = 0, ls = 0;
		FILE *fd = open_memstream(&bd, &ld), *fa = open_memstream(&ba, &la),
		     *fs = open_memstream(&bs, &ls);
		if (!fd || !fa || !fs)
			r = -ENOMEM;
		if (r == 0)
			r = rootfs_modules_write_subset(idx, order, n_order, fd, fa, fs);
#define SUBSET(f, file, b, l)                                                                      \
	if (r == 0) {                                                                              \
		snprintf(img, sizeof(img), "usr/lib/modules/%s/" file, rel);                       \
		r = add_stream(t, img, f, &b, &l);                                                 \
	}
		SUBSET(fd, "modules.dep", bd, ld)
		SUBSET(fa, "modules.alias", ba, la)
		SUBSET(fs, "modules.softdep", bs, ls)
#undef SUBSET
		if (fd)
			fclose(fd);
		if (fa)
			fclose(fa);
		if (fs)
			fclose(fs);
		free(bd);
		free(ba);
		free(bs);
	}
	char host[ROOTFS_PATH_MAX + 32];
	snprintf(host, sizeof(host), "%s/modules.builtin", moddir);
	snprintf(img, sizeof(img), "usr/lib/modules/%s/modules.builtin", rel);
	if (r == 0 && access(host, R_OK) == 0)
		r = rootfs_tree_add_file(t, img, 0644, host);
	if (r < 0)
		goto out;
	/* What boot loads (the lead's machine init reads these two). */
	char text[ROOTFS_MODULES_LIST_MAX * 2 * (ROOTFS_MODULES_NAME_MAX + 2) + 128];
	size_t len = (size_t)snprintf(text, sizeof(text),
	                              "# Modules kin loads at boot (kin.modules= adds to them).\n");
	for (size_t i = 0; i < n && len < sizeof(text); i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", names[i]);
	r = rootfs_tree_add_data(t, "etc/kin/modules", 0644, text, strlen(text));
	if (r == 0) {
		snprintf(text, sizeof(text), "%s\n", rel);
		r = rootfs_tree_add_data(t, "etc/kin/kernel-release", 0644, text, strlen(text));
	}
	if (r == 0)
		rootfs_note(o, "kernel %s, %zu modules", rel, n_order);
out:
	free(order);
	rootfs_modules_index_free(idx);
	return r;
}

static int write_ext4(const struct rootfs_tree *t, const struct rootfs_build_opts *o,
                      const char *tmp_out, struct err *d)
{
	char staging[] = "/tmp/kin-image.XXXXXX", root[64];
	if (!mkdtemp(staging))
		return -errno;
	snprintf(root, sizeof(root), "%s/root", staging);
	int r = mkdir(root, 0755) < 0 ? -errno : 0;
	if (r == 0)
		r = rootfs_tree_stage(t, root, o->mtime, d);
	if (r == 0)
		r = rootfs_ext4_write(root, tmp_out, o->label ? o->label : "kin-root", o->size_mb,
		                      o->mtime, d);
	dir_remove_tree(AT_FDCWD, staging, 0);
	return r;
}

int rootfs_build(const struct rootfs_build_opts *o, struct err *d)
{
	struct rootfs_tree *t = NULL;
	char tmp_out[ROOTFS_PATH_MAX + 16];
	int r;

	err_clear(d);
	if (!o->output ||
	    snprintf(tmp_out, sizeof(tmp_out), "%s.tmp", o->output) >= (int)sizeof(tmp_out))
		return -EINVAL;
	r = rootfs_tree_new(&t);
	if (r < 0)
		return r;
	if (o->distribution)
		r = merged_usr(t);
	else
		r = base_layout(t, o->self ? o->self : "/proc/self/exe", d);
	if (r == 0 && !o->no_modules)
		r = add_modules(t, o, d);
	for (size_t i = 0; r == 0 && i < o->n_binaries; i++)
		r = rootfs_tree_add_binary(t, o->binaries[i], d);
	for (size_t i = 0; r == 0 && i < o->n_adds; i++)
		r = rootfs_tree_add_host(t, o->add_src[i], o->add_dst[i], d);
	if (r < 0)
		goto out;
	unlink(tmp_out);
	if (o->format == ROOTFS_FORMAT_CPIO) {
		_cleanup_close_ int fd =
		    open(tmp_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
		if (fd < 0) {
			r = -errno;
			err_set_errno(d, r, "%s: %s", tmp_out, strerror(-r));
			goto out;
		}
		r = rootfs_cpio_write(t, fd, o->mtime, d);
		if (r == 0 && fsync(fd) < 0)
			r = -errno;
	} else if (o->distribution) {
		r = rootfs_debian_write(t, o, tmp_out, d);
	} else {
		r = write_ext4(t, o, tmp_out, d);
	}
	if (r == 0 && rename(tmp_out, o->output) < 0) {
		r = -errno;
		err_set_errno(d, r, "%s: %s", o->output, strerror(-r));
	}
	if (r < 0)
		unlink(tmp_out);
	else
		rootfs_note(o, "wrote %s (%zu entries%s)", o->output, t->n,
		            o->distribution ? " on a Debian root" : "");
out:
	rootfs_tree_free(t);
	return r;
}
