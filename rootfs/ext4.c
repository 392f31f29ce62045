/* ext4: a directory written as an ext4 image through mke2fs -d, the one
 * way every ext4 image is made (a staged image tree, a Debian root). mke2fs
 * copies owners, modes, xattrs and hard links from the directory and walks
 * it in sorted order; the UUID and directory hash seed come from the label,
 * mke2fs's clock from E2FSPROGS_FAKE_TIME, and debugfs rewrites the ctimes
 * it copied (no one can set a ctime on the host) and the atimes (its own
 * reading moves them under relatime), so the same directory gives the
 * same bytes. */
#include "rootfs/rootfs-int.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>

#define HELPER_TIMEOUT_MS (30 * 60 * 1000ull)

void rootfs_label_uuid(const char *label, char *out, size_t size)
{
	uint8_t u[16];
	uint64_t h1 = 1469598103934665603ull, h2 = 0x9e3779b97f4a7c15ull;
	for (const char *p = label; *p; p++) {
		h1 = (h1 ^ (uint8_t)*p) * 1099511628211ull;
		h2 = (h2 ^ (uint8_t)*p) * 0x100000001b3ull + 0x5bd1e995;
	}
	memcpy(u, &h1, 8);
	memcpy(u + 8, &h2, 8);
	u[6] = (u[6] & 0x0f) | 0x40;
	u[8] = (u[8] & 0x3f) | 0x80;
	snprintf(out, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
	         u[13], u[14], u[15]);
}

/* nftw has no user pointer: the one walk in progress. */
static struct {
	FILE *script; /* sif lines, or NULL when only counting */
	size_t root_len;
	uint64_t bytes, mtime;
	int err;
} walk;

static int walk_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	walk.bytes += (((uint64_t)st->st_size + 4095) & ~4095ull) + 512;
	const char *rel = path + walk.root_len;
	if (walk.script && *rel && !strpbrk(rel, "\"\n\\"))
		fprintf(walk.script, "sif \"%s\" ctime @%llu\nsif \"%s\" atime @%llu\n", rel,
		        (unsigned long long)walk.mtime, rel, (unsigned long long)walk.mtime);
	return 0;
}

static int walk_dir(const char *dir, FILE *script, uint64_t mtime, uint64_t *ret_bytes)
{
	walk.script = script;
	walk.root_len = strlen(dir);
	walk.bytes = 0;
	walk.mtime = mtime;
	if (nftw(dir, walk_one, 32, FTW_PHYS) < 0)
		return -errno;
	if (ret_bytes)
		*ret_bytes = walk.bytes;
	return 0;
}

static int fix_ctimes(const char *dir, const char *scratch, const char *img,
                      const char *const env[], uint64_t mtime, struct err *d)
{
	char script[ROOTFS_PATH_MAX + 16];
	struct rootfs_run_tail tail;
	snprintf(script, sizeof(script), "%s/ctimes", scratch);
	FILE *f = fopen(script, "we");
	if (!f)
		return -errno;
	fprintf(f, "sif / ctime @%llu\nsif /lost+found ctime @%llu\n", (unsigned long long)mtime,
	        (unsigned long long)mtime);
	int r = walk_dir(dir, f, mtime, NULL);
	if (fclose(f) != 0 && r == 0)
		r = -EIO;
	if (r < 0)
		return err_set_errno(d, r, "%s: %s", dir, strerror(-r));
	const char *const argv[] = {"debugfs", "-w", "-f", script, img, NULL};
	const struct rootfs_run_opts ro = {.env = env, .timeout_ms = HELPER_TIMEOUT_MS};
	r = rootfs_run_capture(argv, &ro, &tail);
	unlink(script);
	return r == 0 ? 0 : rootfs_run_fail(d, "debugfs", r, &tail);
}

/* mke2fs takes its environment from us plus the fake clock. */
static int fake_env(char *fake, size_t size, uint64_t mtime, const char **env, size_t max)
{
	size_t n = 0;
	snprintf(fake, size, "E2FSPROGS_FAKE_TIME=%llu", (unsigned long long)(mtime ? mtime : 1));
	env[n++] = fake;
	for (char **e = environ; *e && n + 1 < max; e++)
		if (!str_startswith(*e, "E2FSPROGS_FAKE_TIME="))
			env[n++] = *e;
	env[n] = NULL;
	return 0;
}

int rootfs_ext4_write(const char *dir, const char *out, const char *label, uint64_t size_mb,
                      uint64_t mtime, struct err *d)
{
	char scratch[] = "/tmp/kin-ext4.XXXXXX", uuid[40], size[32], fake[64], extended[160];
	const char *env[512];
	struct rootfs_run_tail tail;
	uint64_t bytes = 0;
	int r;

	if (!size_mb) {
		r = walk_dir(dir, NULL, mtime, &bytes);
		if (r < 0)
			return err_set_errno(d, r, "%s: %s", dir, strerror(-r));
		size_mb = bytes * 5 / 4 / (1 << 20) + 32;
	}
	if (!mkdtemp(scratch))
		return err_set_errno(d, -errno, "%s: %s", scratch, strerror(errno));
	snprintf(size, sizeof(size), "%llum", (unsigned long long)size_mb);
	rootfs_label_uuid(label, uuid, sizeof(uuid));
	snprintf(extended, sizeof(extended), "hash_seed=%s,root_owner=0:0,nodiscard", uuid);
	fake_env(fake, sizeof(fake), mtime, env, ARRAY_SIZE(env));
	const char *const argv[] = {"mke2fs", "-q",  "-F", "-t",  "ext4", "-b", "4096",
	                            "-I",     "256", "-L", label, "-U",   uuid, "-E",
	                            extended, "-d",  dir,  out,   size,   NULL};
	const struct rootfs_run_opts ro = {.env = env, .timeout_ms = HELPER_TIMEOUT_MS};
	r = rootfs_run_capture(argv, &ro, &tail);
	if (r != 0)
		r = rootfs_run_fail(d, "mke2fs", r, &tail);
	if (r == 0)
		r = fix_ctimes(dir, scratch, out, env, mtime, d);
	dir_remove_tree(AT_FDCWD, scratch, 0);
	return r;
}
