/* rootfs internals shared between its files (not a public header). */
#pragma once

#include "rootfs/rootfs.h"

enum rootfs_kind { ROOTFS_DIR, ROOTFS_FILE, ROOTFS_SYMLINK, ROOTFS_CHR, ROOTFS_BLK };

struct rootfs_entry {
	char *path; /* normalised, no leading slash */
	enum rootfs_kind kind;
	mode_t perm;
	uint64_t size; /* file bytes or symlink target length */
	char *host;    /* file: read from here when written */
	void *data;    /* file: in-memory bytes; symlink: target (NUL-terminated) */
	dev_t rdev;
};

struct rootfs_tree {
	struct rootfs_entry *e;
	size_t n, cap;
	uint32_t *slots; /* open addressing, entry index + 1 */
	size_t nslots;
};

int rootfs_path_normalize(const char *in, char *out, size_t size);
struct rootfs_entry *rootfs_tree_lookup(const struct rootfs_tree *t, const char *path);
mode_t rootfs_entry_mode(const struct rootfs_entry *e);
/* Every entry, sorted by path; the array (not the entries) is the caller's. */
int rootfs_tree_sorted(const struct rootfs_tree *t, const struct rootfs_entry ***ret);

/* Runs argv (PATH searched) with extra environment (NULL-terminated
 * "K=V" list or NULL) in cwd (NULL: ours), stdout to out_fd (-1:
 * inherited), and waits.
 * Returns the exit status (0-255, 128+N for a signal) or -errno. */
int rootfs_run(const char *const argv[], const char *const env_extra[], const char *cwd,
               int out_fd);
/* rm -rf of a scratch directory we made. */
int rootfs_rm_rf(const char *path);
