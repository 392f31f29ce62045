/* rootfs: the image tree, the cpio newc writer (against a golden archive
 * worked out by hand), reproducibility, root= parsing. */
#include "rootfs/rootfs.h"
#include "unit.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Writes the tree to a memfd and returns its bytes (malloc'ed). */
static char *cpio_bytes(struct rootfs_tree *t, uint64_t mtime, size_t *ret_len)
{
	int fd = memfd_create("cpio", MFD_CLOEXEC);
	struct err d = {0};
	if (fd < 0 || rootfs_cpio_write(t, fd, mtime, &d) < 0)
		return NULL;
	off_t len = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)len + 1);
	if (!buf || pread(fd, buf, (size_t)len, 0) != len)
		return NULL;
	close(fd);
	*ret_len = (size_t)len;
	return buf;
}

TEST(rootfs_cpio_golden)
{
	struct rootfs_tree *t;
	CHECK_EQ(rootfs_tree_new(&t), 0);
	/* Inserted out of order: the archive is sorted by path. */
	CHECK_EQ(rootfs_tree_add_symlink(t, "/l", "d/f"), 0);
	CHECK_EQ(rootfs_tree_add_data(t, "/d/f", 0644, "hi\n", 3), 0);
	CHECK_EQ(rootfs_tree_add_dir(t, "d", 0755), 0);
	/* newc: "070701", then ino mode uid gid nlink mtime filesize devmajor
	 * devminor rdevmajor rdevminor namesize check as 8 hex digits; the
	 * name (with its NUL) padded so header+name is a multiple of 4, and
	 * the data padded to 4. Inodes count from 1 in path order. */
	static const char golden[] =
	    /* "d": 110 + 2 = 112, no padding */
	    "070701"
	    "00000001"
	    "000041ed"
	    "00000000"
	    "00000000"
	    "00000002"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000002"
	    "00000000"
	    "d\0"
	    /* "d/f": 110 + 4 = 114, 2 bytes of padding; "hi\n" + 1 */
	    "070701"
	    "00000002"
	    "000081a4"
	    "00000000"
	    "00000000"
	    "00000001"
	    "00000000"
	    "00000003"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000004"
	    "00000000"
	    "d/f\0"
	    "\0\0"
	    "hi\n"
	    "\0"
	    /* "l" -> "d/f": 112; target + 1 */
	    "070701"
	    "00000003"
	    "0000a1ff"
	    "00000000"
	    "00000000"
	    "00000001"
	    "00000000"
	    "00000003"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000002"
	    "00000000"
	    "l\0"
	    "d/f"
	    "\0"
	    /* trailer: 110 + 11 = 121, 3 bytes of padding */
	    "070701"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000001"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "00000000"
	    "0000000b"
	    "00000000"
	    "TRAILER!!!\0"
	    "\0\0\0";
	size_t len = 0;
	char *bytes = cpio_bytes(t, 0, &len);
	CHECK(bytes != NULL);
	CHECK_EQ(len, sizeof(golden) - 1);
	CHECK(bytes && len == sizeof(golden) - 1 && memcmp(bytes, golden, len) == 0);
	CHECK_EQ(len % 4, 0);
	free(bytes);

	/* The device node and mtime fields. */
	CHECK_EQ(rootfs_tree_add_node(t, "dev/console", S_IFCHR | 0600, makedev(5, 1)), 0);
	bytes = cpio_bytes(t, 0x1234, &len);
	CHECK(bytes != NULL);
	const char *hdr = bytes ? memmem(bytes, len, "dev/console", 12) : NULL;
	CHECK(hdr != NULL);
	if (hdr) {
		hdr -= 110;
		CHECK(memcmp(hdr + 14, "00002180", 8) == 0); /* S_IFCHR | 0600 */
		CHECK(memcmp(hdr + 46, "00001234", 8) == 0); /* mtime */
		CHECK(memcmp(hdr + 78, "0000000500000001", 16) == 0);
	}
	free(bytes);
	rootfs_tree_free(t);
}

TEST(rootfs_cpio_reproducible_and_readable)
{
	char dir[] = "/tmp/kin-unit-cpio-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char sub[128], f[128], out[128];
	snprintf(sub, sizeof(sub), "%s/tree/x", dir);
	CHECK_EQ(mkdir_p(sub, 0755), 0);
	snprintf(f, sizeof(f), "%s/tree/x/file", dir);
	int fd = open(f, O_WRONLY | O_CREAT, 0640);
	CHECK_EQ(write_all(fd, "payload", 7), 0);
	close(fd);
	snprintf(f, sizeof(f), "%s/tree/link", dir);
	CHECK_EQ(symlink("x/file", f), 0);

	char *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	for (int round = 0; round < 2; round++) {
		struct rootfs_tree *t;
		struct err d = {0};
		snprintf(f, sizeof(f), "%s/tree", dir);
		CHECK_EQ(rootfs_tree_new(&t), 0);
		CHECK_EQ(rootfs_tree_add_host(t, f, "/opt/app", &d), 0);
		if (round == 1) {
			/* A different mtime on the host changes nothing. */
			snprintf(f, sizeof(f), "%s/tree/x/file", dir);
			struct timespec ts[2] = {{12345, 0}, {12345, 0}};
			utimensat(AT_FDCWD, f, ts, 0);
		}
		char **p = round ? &b : &a;
		*p = cpio_bytes(t, 7, round ? &lb : &la);
		rootfs_tree_free(t);
	}
	CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
	snprintf(out, sizeof(out), "%s/img.cpio", dir);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK_EQ(write_all(fd, a, la), 0);
	close(fd);
	char *body = NULL;
	size_t blen = 0;
	CHECK_EQ(rootfs_cpio_read_file(out, "/opt/app/x/file", 100, &body, &blen), 0);
	CHECK_EQ(blen, 7);
	CHECK_STR(body, "payload");
	free(body);
	CHECK_EQ(rootfs_cpio_read_file(out, "/opt/app/x/none", 100, &body, &blen), -ENOENT);
	CHECK_EQ(rootfs_cpio_read_file(out, "/opt/app/x/file", 3, &body, &blen), -EFBIG);
	/* A damaged archive is an error, not a crash. */
	fd = open(out, O_WRONLY | O_TRUNC);
	CHECK_EQ(write_all(fd, "070701zz", 8), 0);
	close(fd);
	CHECK_EQ(rootfs_cpio_read_file(out, "x", 100, &body, &blen), -EBADMSG);
	free(a);
	free(b);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

TEST(rootfs_tree_rules)
{
	struct rootfs_tree *t;
	mode_t m = 0;
	CHECK_EQ(rootfs_tree_new(&t), 0);
	CHECK_EQ(rootfs_tree_add_symlink(t, "lib", "usr/lib"), 0);
	CHECK_EQ(rootfs_tree_add_data(t, "/lib/x/y", 0600, "a", 1), 0);
	/* Through the image's own link: one name per file. */
	CHECK(rootfs_tree_has(t, "usr/lib/x/y", &m));
	CHECK(S_ISREG(m));
	CHECK(rootfs_tree_has(t, "usr/lib", &m) && S_ISDIR(m));
	CHECK(!rootfs_tree_has(t, "lib/x/y", NULL));
	/* Lexical normalisation. */
	CHECK_EQ(rootfs_tree_add_data(t, "//usr/./lib/../lib/z", 0644, "", 0), 0);
	CHECK(rootfs_tree_has(t, "usr/lib/z", NULL));
	/* Conflicts. */
	CHECK_EQ(rootfs_tree_add_dir(t, "usr/lib/z", 0755), -EEXIST);
	CHECK_EQ(rootfs_tree_add_data(t, "usr/lib/z/w", 0644, "", 0), -ENOTDIR);
	CHECK_EQ(rootfs_tree_add_data(t, "usr/lib/z", 0644, "new", 3), 0); /* later wins */
	CHECK_EQ(rootfs_tree_add_data(t, "/", 0644, "", 0), -EINVAL);
	/* A symlink loop in the image. */
	CHECK_EQ(rootfs_tree_add_symlink(t, "a", "b"), 0);
	CHECK_EQ(rootfs_tree_add_symlink(t, "b", "a"), 0);
	CHECK_EQ(rootfs_tree_add_data(t, "a/f", 0644, "", 0), -ELOOP);
	/* Overlong paths. */
	char longp[ROOTFS_PATH_MAX + 10];
	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	CHECK_EQ(rootfs_tree_add_data(t, longp, 0644, "", 0), -ENAMETOOLONG);
	CHECK_EQ(rootfs_tree_add_symlink(t, "s", ""), -EINVAL);
	/* Missing host files. */
	struct err d = {0};
	CHECK_EQ(rootfs_tree_add_file(t, "nope", 0644, "/nonexistent/kin-unit"), -ENOENT);
	CHECK_EQ(rootfs_tree_add_host(t, "/nonexistent/kin-unit", "/x", &d), -ENOENT);
	CHECK(strstr(d.msg, "/nonexistent/kin-unit") != NULL);
	CHECK_EQ(rootfs_tree_add_host_path(t, "relative/path", NULL, 0, &d), -EINVAL);
	CHECK_EQ(rootfs_tree_add_file(t, "dir", 0644, "/tmp"), -EINVAL);
	rootfs_tree_free(t);
}

TEST(rootfs_host_path_keeps_links)
{
	char dir[] = "/tmp/kin-unit-links-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char p[256], q[256], real[ROOTFS_PATH_MAX];
	snprintf(p, sizeof(p), "%s/real/bin", dir);
	CHECK_EQ(mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/real/bin/tool", dir);
	int fd = open(p, O_WRONLY | O_CREAT, 0755);
	close(fd);
	snprintf(p, sizeof(p), "%s/alias", dir);
	CHECK_EQ(symlink("real", p), 0); /* a directory link */
	snprintf(p, sizeof(p), "%s/real/bin/t", dir);
	CHECK_EQ(symlink("tool", p), 0); /* a file link */

	struct rootfs_tree *t;
	struct err d = {0};
	mode_t m = 0;
	CHECK_EQ(rootfs_tree_new(&t), 0);
	snprintf(p, sizeof(p), "%s/alias/bin/t", dir);
	CHECK_EQ(rootfs_tree_add_host_path(t, p, real, sizeof(real), &d), 0);
	snprintf(q, sizeof(q), "%s/real/bin/tool", dir);
	CHECK_STR(real, q);
	snprintf(q, sizeof(q), "%s/alias", dir + 1);
	CHECK(rootfs_tree_has(t, q, &m) && S_ISLNK(m));
	snprintf(q, sizeof(q), "%s/real/bin/t", dir + 1);
	CHECK(rootfs_tree_has(t, q, &m) && S_ISLNK(m));
	snprintf(q, sizeof(q), "%s/real/bin/tool", dir + 1);
	CHECK(rootfs_tree_has(t, q, &m) && S_ISREG(m) && (m & 0777) == 0755);
	rootfs_tree_free(t);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK_EQ(system(p), 0);
}

TEST(rootfs_root_parse)
{
	struct rootfs_root_spec s;
	CHECK(!rootfs_root_parse("console=ttyS0 quiet", &s));
	CHECK(!rootfs_root_parse("console=ttyS0 -- root=/dev/vda", &s));
	CHECK(rootfs_root_parse("console=ttyS0 root=LABEL=kin-root rootfstype=ext4 ro", &s));
	CHECK_STR(s.root, "LABEL=kin-root");
	CHECK_STR(s.fstype, "ext4");
	CHECK(s.ro);
	CHECK_EQ(s.wait_ms, 10000);
	CHECK(rootfs_root_parse("root=/dev/vda rootwait=3 rootflags=noatime ro rw", &s));
	CHECK_STR(s.root, "/dev/vda");
	CHECK_STR(s.flags, "noatime");
	CHECK(!s.ro);
	CHECK_EQ(s.wait_ms, 3000);
	CHECK(rootfs_root_parse("root=UUID=1234 rootwait=99999999", &s));
	CHECK_EQ(s.wait_ms, 10000); /* out of range: the default stays */
	CHECK(!rootfs_root_parse("root=", &s));
}

TEST(rootfs_root_resolve_missing)
{
	char dev[256];
	/* No such label anywhere: an error after the (short) wait. */
	CHECK_EQ(rootfs_root_resolve("LABEL=kin-unit-no-such-label", 0, dev, sizeof(dev)), -ENODEV);
}
