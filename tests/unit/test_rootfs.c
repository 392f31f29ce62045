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
	CHECK_STR(s.init, "");
	CHECK(rootfs_root_parse("root=/dev/vda init=/lib/systemd/systemd", &s));
	CHECK_STR(s.init, "/lib/systemd/systemd");
	CHECK(rootfs_root_parse("root=/dev/vda init=bin/sh init=/a/../b", &s));
	CHECK_STR(s.init, ""); /* relative, or with "..": not taken */
}

TEST(rootfs_root_resolve_missing)
{
	char dev[256];
	/* No such label anywhere: an error after the (short) wait. */
	CHECK_EQ(rootfs_root_resolve("LABEL=kin-unit-no-such-label", 0, dev, sizeof(dev)), -ENODEV);
}

/* `kin image build`'s flags as the command line gives them. */
static int build_args(struct rootfs_build_opts *o, struct err *d, const char *line)
{
	static char buf[1024];
	char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof(buf), "build %s", line);
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 31;
	     w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	return rootfs_build_args(argc, argv, o, d);
}

TEST(rootfs_build_args_debian)
{
	struct rootfs_build_opts o;
	struct err d;
	unsetenv("SOURCE_DATE_EPOCH");
	CHECK_EQ(build_args(&o, &d,
	                    "--format ext4 --distribution debian --release bookworm --packages "
	                    "cron,openssh-server,g++,libc6.1 -o x.img --hostname web-1 --size 2G "
	                    "--mirror http://deb.debian.org/debian"),
	         0);
	CHECK_STR(o.distribution, "debian");
	CHECK_STR(o.release, "bookworm");
	CHECK_STR(o.packages, "cron,openssh-server,g++,libc6.1");
	CHECK_STR(o.hostname, "web-1");
	CHECK_STR(o.mirror, "http://deb.debian.org/debian");
	CHECK_EQ(o.size_mb, 2048);
	CHECK_EQ(o.format, ROOTFS_FORMAT_EXT4);
	CHECK(!o.mtime_given);
	/* A base alone is fine; the key file must be readable. */
	CHECK_EQ(build_args(&o, &d,
	                    "--format ext4 --distribution debian --release sid -o x "
	                    "--root-authorized-key /dev/null"),
	         0);
	CHECK_STR(o.root_key, "/dev/null");
	CHECK_EQ(build_args(&o, &d, "-h"), 1);

	static const struct {
		const char *line, *says;
	} bad[] = {
	    {"--distribution debian --release bookworm -o x", "--format ext4"},
	    {"--format ext4 --distribution debian -o x", "needs --release"},
	    {"--format ext4 --distribution ubuntu --release jammy -o x", "expected debian"},
	    {"--format ext4 --distribution debian --release Bookworm -o x", "--release"},
	    {"--format ext4 --distribution debian --release ../x -o x", "--release"},
	    {"--format ext4 --distribution debian --release bookworm --packages -o -o x",
	     "--packages"},
	    {"--format ext4 --distribution debian --release bookworm --packages a,,b -o x",
	     "--packages"},
	    {"--format ext4 --distribution debian --release bookworm --packages a, -o x",
	     "--packages"},
	    {"--format ext4 --distribution debian --release bookworm --packages a;b -o x",
	     "--packages"},
	    {"--format ext4 --distribution debian --release bookworm --packages Cron -o x",
	     "--packages"},
	    {"--format ext4 --distribution debian --release bookworm --mirror ftp://x -o x",
	     "--mirror"},
	    {"--format ext4 --distribution debian --release bookworm --hostname a_b -o x",
	     "--hostname"},
	    {"--format ext4 --distribution debian --release bookworm "
	     "--root-authorized-key /nonexistent/key -o x",
	     "--root-authorized-key"},
	    {"--format ext4 --packages cron -o x", "for --distribution debian"},
	    {"--format ext4 --distribution debian --release bookworm", "needs -o"},
	    {"--format ext4 --distribution debian --release bookworm --size 4M -o x", "--size"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = build_args(&o, &d, bad[i].line);
		CHECK_EQ(r, -EINVAL);
		if (r != -EINVAL || !strstr(d.msg, bad[i].says))
			printf("    case %zu: '%s' said '%s'\n", i, bad[i].line, d.msg);
		CHECK(strstr(d.msg, bad[i].says) != NULL);
	}
	/* 257 names is one too many. */
	static char many[257 * 3 + 1];
	size_t n = 0;
	for (int i = 0; i < 257; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%s%c%c", i ? "," : "",
		                      'a' + i % 26, 'a' + i / 26);
	char line[1024];
	snprintf(line, sizeof(line),
	         "--format ext4 --distribution debian --release b --packages %s -o x", many);
	CHECK_EQ(build_args(&o, &d, line), -EINVAL);

	setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
	CHECK_EQ(build_args(&o, &d, "--format ext4 --distribution debian --release b -o x"), 0);
	CHECK(o.mtime_given);
	CHECK_EQ(o.mtime, 1700000000);
	unsetenv("SOURCE_DATE_EPOCH");
}

TEST(rootfs_debian_mirror_parse)
{
	char m[256];
	/* One-line format: options skipped, -security and -updates passed over. */
	CHECK_EQ(
	    rootfs_debian_mirror_parse(
	        "# a comment\n"
	        "deb http://security.debian.org/debian-security bookworm-security main\n"
	        "deb-src http://src.example/debian bookworm main\n"
	        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n",
	        false, m, sizeof(m)),
	    0);
	CHECK_STR(m, "http://mirror.example/debian");
	CHECK_EQ(rootfs_debian_mirror_parse("deb http://x/debian bookworm-updates main\n", false, m,
	                                    sizeof(m)),
	         -ENOENT);
	/* deb822, as Debian's own debian.sources. */
	CHECK_EQ(
	    rootfs_debian_mirror_parse(
	        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n"
	        "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n"
	        "Types: deb\nURIs: http://sec.example/debian-security\n"
	        "Suites: bookworm-security\n\n"
	        "Types: deb deb-src\nURIs: http://deb.debian.org/debian http://b/debian\n"
	        "Suites: bookworm-updates bookworm\nComponents: main\n",
	        true, m, sizeof(m)),
	    0);
	CHECK_STR(m, "http://deb.debian.org/debian");
	CHECK_EQ(rootfs_debian_mirror_parse("", true, m, sizeof(m)), -ENOENT);
	CHECK_EQ(rootfs_debian_mirror_parse("Types: deb\nURIs: http://x\n", true, m, sizeof(m)),
	         -ENOENT);
	/* Too long for the caller's buffer: not cut, refused. */
	CHECK_EQ(rootfs_debian_mirror_parse("deb http://example.org/debian bookworm main\n", false,
	                                    m, 10),
	         -ENOENT);
}
