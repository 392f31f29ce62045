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

/* Where kin's builder keeps what it fetched: kernel/, debian/. */
#define ROOTFS_CACHE_ROOT "/var/cache/kin"

/* "kin image: ..." and a newline on o->progress (NULL: quiet). */
void rootfs_note(const struct rootfs_build_opts *o, const char *fmt, ...) _printf_(2, 3);

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
/* What a helper said: the last ROOTFS_RUN_TAIL bytes of its stdout and
 * stderr together (a chatty apt-get or debootstrap cannot grow it). */
#define ROOTFS_RUN_TAIL 4096
struct rootfs_run_tail {
	char buf[ROOTFS_RUN_TAIL + 1];
	size_t len;
};
struct rootfs_run_opts {
	const char *const *env; /* the whole environment; NULL: ours */
	const char *root;       /* chroot here (and cd /) before exec; NULL: none */
	const char *cwd;        /* NULL: ours, or / with root */
	uint64_t timeout_ms;    /* then the helper's process group is killed; 0: none */
};
/* Runs argv (PATH searched) with stdin from /dev/null and its output into
 * tail. Returns the exit status (0-255, 128+N for a signal), -ETIMEDOUT
 * when the deadline passed (the helper and its children killed), or -errno. */
int rootfs_run_capture(const char *const argv[], const struct rootfs_run_opts *o,
                       struct rootfs_run_tail *tail);
/* Fills d after a failed rootfs_run_capture: "WHAT failed (exit status N):
 * LINES", LINES being apt's "E:" lines if the tail has any, else its last
 * two lines. Returns a -errno (-EIO for a non-zero status). */
int rootfs_run_fail(struct err *d, const char *what, int status,
                    const struct rootfs_run_tail *tail);
/* The ext4 UUID (and hash seed) a label stands for. */
void rootfs_label_uuid(const char *label, char *out, size_t size);
/* dir as an ext4 image at out (size_mb 0: the contents plus a quarter plus
 * 32 MiB), every ctime set to mtime. */
int rootfs_ext4_write(const char *dir, const char *out, const char *label, uint64_t size_mb,
                      uint64_t mtime, struct err *d);
