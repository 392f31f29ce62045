/* rootfs: modules.dep/alias/softdep/builtin parsing, the closure, the
 * loader against a synthetic tree (finit_module behind a seam: the host's
 * kernel is never asked to load anything), and kin image build end to end. */
#include "rootfs/rootfs.h"
#include "unit.h"

#include <fcntl.h>
#include <sys/stat.h>

static const char dep[] = "kernel/a.ko: kernel/b.ko kernel/c.ko\n"
                          "kernel/b.ko: kernel/c.ko\n"
                          "# a comment\n"
                          "\n"
                          "kernel/c.ko:\n"
                          "kernel/sub/d-x.ko.xz:\n"
                          "kernel/e.ko:\n";
static const char alias[] = "alias fs-thing e\n"
                            "alias pci:v00001234d* b\n"
                            "alias multi a\n"
                            "alias multi e\n";
static const char softdep[] = "softdep a pre: d-x post: e\n";
static const char builtin[] = "kernel/drivers/builtin1.ko\n";

static struct rootfs_modules_index *make_index(void)
{
	struct rootfs_modules_index *idx = NULL;
	struct err d = {0};
	int r = rootfs_modules_index_parse(dep, strlen(dep), alias, strlen(alias), softdep,
	                                   strlen(softdep), builtin, strlen(builtin), &idx, &d);
	if (r < 0)
		printf("    parse: %s\n", d.msg);
	return idx;
}

static void order_names(const struct rootfs_modules_index *idx, const size_t *order, size_t n,
                        char *out, size_t size)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strncat(out, rootfs_modules_index_name(idx, order[i]), size - strlen(out) - 2);
		strcat(out, " ");
	}
}

TEST(modules_closure_order)
{
	struct rootfs_modules_index *idx = make_index();
	CHECK(idx != NULL);
	if (!idx)
		return;
	CHECK_EQ(rootfs_modules_index_count(idx), 5);
	const char *names[] = {"a"};
	size_t *order = NULL, n = 0;
	char got[256];
	struct err d = {0};
	CHECK_EQ(rootfs_modules_closure(idx, names, 1, &order, &n, &d), 0);
	order_names(idx, order, n, got, sizeof(got));
	/* softdep pre first, then dependencies before users, post after. */
	CHECK_STR(got, "d_x c b a e ");
	free(order);
	const char *two[] = {"c", "b"};
	CHECK_EQ(rootfs_modules_closure(idx, two, 2, &order, &n, &d), 0);
	order_names(idx, order, n, got, sizeof(got));
	CHECK_STR(got, "c b ");
	free(order);
	const char *bad[] = {"c", "nope"};
	CHECK_EQ(rootfs_modules_closure(idx, bad, 2, &order, &n, &d), -ENOENT);
	CHECK(strstr(d.msg, "nope") != NULL);
	rootfs_modules_index_free(idx);
}

TEST(modules_alias_and_builtin)
{
	struct rootfs_modules_index *idx = make_index();
	size_t m[8];
	CHECK(idx != NULL);
	if (!idx)
		return;
	CHECK_EQ(rootfs_modules_resolve(idx, "fs-thing", m, 8), 1);
	CHECK_STR(rootfs_modules_index_name(idx, m[0]), "e");
	CHECK_EQ(rootfs_modules_resolve(idx, "pci:v00001234d00005678", m, 8), 1);
	CHECK_STR(rootfs_modules_index_name(idx, m[0]), "b");
	CHECK_EQ(rootfs_modules_resolve(idx, "d-x", m, 8), 1); /* '-' and '_' are one */
	CHECK_STR(rootfs_modules_index_path(idx, m[0]), "kernel/sub/d-x.ko.xz");
	CHECK_EQ(rootfs_modules_resolve(idx, "multi", m, 8), 2);
	CHECK_EQ(rootfs_modules_resolve(idx, "multi", m, 1), -ENOBUFS);
	CHECK_EQ(rootfs_modules_resolve(idx, "builtin1", m, 8), 0);
	CHECK(rootfs_modules_is_builtin(idx, "builtin1"));
	CHECK(!rootfs_modules_is_builtin(idx, "a"));
	CHECK_EQ(rootfs_modules_resolve(idx, "pci:v00009999d0", m, 8), -ENOENT);
	rootfs_modules_index_free(idx);
}

static int parse_err(const char *d_text, const char *a_text, char *msg, size_t size)
{
	struct rootfs_modules_index *idx = NULL;
	struct err d = {0};
	int r = rootfs_modules_index_parse(d_text, strlen(d_text), a_text,
	                                   a_text ? strlen(a_text) : 0, NULL, 0, NULL, 0, &idx, &d);
	snprintf(msg, size, "%s", d.msg);
	rootfs_modules_index_free(idx);
	return r;
}

TEST(modules_bad_input)
{
	char msg[512];
	CHECK_EQ(parse_err("kernel/a.ko kernel/b.ko\n", NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "modules.dep line 1") != NULL);
	CHECK_EQ(parse_err("kernel/a.ko:\n: x\n", NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "line 2") != NULL);
	CHECK_EQ(parse_err("kernel/a.txt:\n", NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK_EQ(parse_err("kernel/a.ko: kernel/missing.ko\n", NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "missing") != NULL);
	CHECK_EQ(parse_err("kernel/a.ko:\nother/a.ko:\n", NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "twice") != NULL);
	CHECK_EQ(parse_err("kernel/a.ko:\n", "alias onlytwo\n", msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "modules.alias line 1") != NULL);
	CHECK_EQ(parse_err("kernel/a.ko:\n", "notalias x a\n", msg, sizeof(msg)), -EBADMSG);
	/* Overlong module name (the kernel's limit is 55 bytes). */
	char longdep[200];
	snprintf(longdep, sizeof(longdep), "kernel/%060d.ko:\n", 0);
	CHECK_EQ(parse_err(longdep, NULL, msg, sizeof(msg)), -EBADMSG);
	CHECK(strstr(msg, "too long") != NULL);
	/* A NUL byte inside a line. */
	struct rootfs_modules_index *idx = NULL;
	CHECK_EQ(rootfs_modules_index_parse("kernel/a.ko:\0x\n", 14, NULL, 0, NULL, 0, NULL, 0,
	                                    &idx, NULL),
	         -EBADMSG);
	/* An empty modules.dep is a valid, empty index. */
	CHECK_EQ(rootfs_modules_index_parse("", 0, NULL, 0, NULL, 0, NULL, 0, &idx, NULL), 0);
	CHECK_EQ(rootfs_modules_index_count(idx), 0);
	rootfs_modules_index_free(idx);
}

TEST(modules_cycle)
{
	static const char cyc[] = "kernel/p.ko: kernel/q.ko\nkernel/q.ko: kernel/r.ko\n"
	                          "kernel/r.ko: kernel/p.ko\nkernel/ok.ko:\n";
	struct rootfs_modules_index *idx = NULL;
	struct err d = {0};
	CHECK_EQ(rootfs_modules_index_parse(cyc, strlen(cyc), NULL, 0, NULL, 0, NULL, 0, &idx, &d),
	         0);
	const char *names[] = {"ok", "p"};
	size_t *order = NULL, n = 0;
	CHECK_EQ(rootfs_modules_closure(idx, names, 2, &order, &n, &d), -ELOOP);
	CHECK(strstr(d.msg, "cycle") != NULL);
	rootfs_modules_index_free(idx);
}

TEST(modules_csv)
{
	char buf[64];
	const char *names[4];
	strcpy(buf, "a,b-c,fs-ext4");
	CHECK_EQ(rootfs_modules_csv_split(buf, names, 4), 3);
	CHECK_STR(names[1], "b-c");
	strcpy(buf, "a,b,c,d,e");
	CHECK_EQ(rootfs_modules_csv_split(buf, names, 4), -E2BIG);
	strcpy(buf, "a,b c");
	CHECK_EQ(rootfs_modules_csv_split(buf, names, 4), -EINVAL);
	CHECK(rootfs_modules_csv_valid("virtio_net,ext4"));
	CHECK(!rootfs_modules_csv_valid(""));
	CHECK(!rootfs_modules_csv_valid("a,,b"));
	CHECK(!rootfs_modules_csv_valid("a,"));
	CHECK(!rootfs_modules_csv_valid("../x"));
	CHECK(!rootfs_modules_csv_valid("a=b"));
	char big[ROOTFS_MODULES_CSV_MAX + 10];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(!rootfs_modules_csv_valid(big));
	/* More names than the bound. */
	char many[ROOTFS_MODULES_LIST_MAX * 3 + 8] = "";
	for (int i = 0; i <= ROOTFS_MODULES_LIST_MAX; i++)
		strcat(many, i ? ",m" : "m");
	CHECK(!rootfs_modules_csv_valid(many));
}

/* ---- the loader against a synthetic tree ---- */

static char loaded[512];
static int load_flags_dx = -1;
static const char *fail_name;
static char reports[1024];

static int fake_finit(int fd, const char *params, int flags, void *data)
{
	char link[64], path[256];
	(void)params;
	(void)data;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return -EBADF;
	path[n] = '\0';
	const char *base = strrchr(path, '/') + 1;
	if (strncmp(base, "d-x", 3) == 0)
		load_flags_dx = flags;
	if (fail_name && strncmp(base, fail_name, strlen(fail_name)) == 0)
		return -EINVAL;
	strncat(loaded, base, sizeof(loaded) - strlen(loaded) - 2);
	strcat(loaded, " ");
	return 0;
}

static bool fake_is_loaded(const char *name, void *data)
{
	(void)data;
	return strcmp(name, "c") == 0; /* already in the kernel */
}

static void fake_report(const char *module, int err, const char *why, void *data)
{
	(void)data;
	snprintf(reports + strlen(reports), sizeof(reports) - strlen(reports), "%s:%d:%s;", module,
	         -err, why);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	mkdir_p(p, 0755);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (write_all(fd, text, strlen(text)) < 0)
		unit_failures++;
	close(fd);
}

static void make_tree(char *dir)
{
	write_file(dir, "modules.dep", dep);
	write_file(dir, "modules.alias", alias);
	write_file(dir, "modules.softdep", softdep);
	write_file(dir, "modules.builtin", builtin);
	static const char *const files[] = {"kernel/a.ko", "kernel/b.ko", "kernel/c.ko",
	                                    "kernel/sub/d-x.ko.xz", "kernel/e.ko"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++)
		write_file(dir, files[i], "\177ELF");
}

TEST(modules_loader_synthetic)
{
	char dir[] = "/tmp/kin-unit-mods-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	make_tree(dir);
	struct rootfs_modules_ops ops = {fake_finit, fake_is_loaded, fake_report, NULL};

	loaded[0] = reports[0] = '\0';
	fail_name = NULL;
	CHECK_EQ(rootfs_modules_load_list(dir, "a,builtin1", &ops), 0);
	/* c is loaded already; d-x is a softdep; e comes after a (post:). */
	CHECK_STR(loaded, "d-x.ko.xz b.ko a.ko e.ko ");
	CHECK_EQ(load_flags_dx, 4); /* MODULE_INIT_COMPRESSED_FILE */
	CHECK_STR(reports, "");

	loaded[0] = reports[0] = '\0';
	fail_name = "b.ko";
	CHECK_EQ(rootfs_modules_load_list(dir, "fs-thing,a,nope", &ops), 2);
	CHECK_STR(loaded, "e.ko d-x.ko.xz ");
	CHECK(strstr(reports, "b:22:finit_module;") != NULL);
	CHECK(strstr(reports, "a:22:needs b, which failed;") != NULL);
	CHECK(strstr(reports, "nope:2:no such module") != NULL);

	/* A module file that vanished is named with its errno. */
	char p[256];
	snprintf(p, sizeof(p), "%s/kernel/e.ko", dir);
	unlink(p);
	loaded[0] = reports[0] = '\0';
	fail_name = NULL;
	CHECK_EQ(rootfs_modules_load_list(dir, "e", &ops), 1);
	CHECK(strstr(reports, "e:2:cannot open its file;") != NULL);
	/* A missing index is an error of its own. */
	CHECK_EQ(rootfs_modules_load_list("/nonexistent/kin-unit", "e", &ops), -ENOENT);
	CHECK_EQ(rootfs_modules_load_list(dir, "bad name", &ops), -EINVAL);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	CHECK_EQ(system(p), 0);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	return file_read_small(path, 64 << 20, &buf, len) == 0 ? buf : NULL;
}

TEST(rootfs_build_end_to_end)
{
	char dir[] = "/tmp/kin-unit-build-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char moddir[128], self[128], out1[128], out2[128];
	snprintf(moddir, sizeof(moddir), "%s/lib/modules/9.9.9-test", dir);
	make_tree(moddir);
	snprintf(self, sizeof(self), "%s/fake-kin", dir);
	write_file(dir, "fake-kin", "#!kin\n");
	snprintf(out1, sizeof(out1), "%s/one.cpio", dir);
	snprintf(out2, sizeof(out2), "%s/two.cpio", dir);

	struct rootfs_build_opts o = {
	    .output = out1, .modules_dir = moddir, .modules_csv = "a", .self = self};
	struct err d = {0};
	CHECK_EQ(rootfs_build(&o, &d), 0);
	o.output = out2;
	CHECK_EQ(rootfs_build(&o, &d), 0);
	size_t l1 = 0, l2 = 0;
	char *a = slurp(out1, &l1), *b = slurp(out2, &l2);
	CHECK(a && b && l1 == l2 && memcmp(a, b, l1) == 0);
	free(a);
	free(b);
	char *body = NULL;
	CHECK_EQ(rootfs_cpio_read_file(out1, "etc/kin/kernel-release", 100, &body, NULL), 0);
	CHECK_STR(body, "9.9.9-test\n");
	free(body);
	CHECK_EQ(rootfs_cpio_read_file(out1, "init", 100, &body, NULL), 0);
	CHECK_STR(body, "#!kin\n");
	free(body);
	CHECK_EQ(rootfs_cpio_read_file(out1, "etc/kin/modules", 4096, &body, NULL), 0);
	CHECK(body && strstr(body, "\na\n") != NULL);
	free(body);
	CHECK_EQ(rootfs_cpio_read_file(out1, "usr/lib/modules/9.9.9-test/modules.dep", 4096, &body,
	                               NULL),
	         0);
	/* The subset: a's closure only, with its own dependency lines. */
	CHECK_STR(body, "kernel/a.ko: kernel/b.ko kernel/c.ko\nkernel/b.ko: kernel/c.ko\n"
	                "kernel/c.ko:\nkernel/sub/d-x.ko.xz:\nkernel/e.ko:\n");
	free(body);
	CHECK_EQ(rootfs_cpio_read_file(out1, "usr/lib/modules/9.9.9-test/kernel/sub/d-x.ko.xz", 100,
	                               &body, NULL),
	         0);
	free(body);

	/* An unknown module is named; the output is not left behind. */
	o.modules_csv = "a,nosuchmod";
	o.output = out2;
	unlink(out2);
	CHECK_EQ(rootfs_build(&o, &d), -ENOENT);
	CHECK(strstr(d.msg, "nosuchmod") != NULL);
	CHECK(access(out2, F_OK) < 0);
	/* No modules at all. */
	o = (struct rootfs_build_opts){.output = out2, .no_modules = true, .self = self};
	CHECK_EQ(rootfs_build(&o, &d), 0);
	CHECK_EQ(rootfs_cpio_read_file(out2, "etc/kin/kernel-release", 100, &body, NULL), -ENOENT);
	/* A kin binary that is not there. */
	o.self = "/nonexistent/kin";
	CHECK_EQ(rootfs_build(&o, &d), -ENOENT);
	CHECK(strstr(d.msg, "/nonexistent/kin") != NULL);
	snprintf(self, sizeof(self), "rm -rf %s", dir);
	CHECK_EQ(system(self), 0);
}
