/* units/ file layer: names, the unit file syntax, loading from a search
 * path in throwaway roots laid out as Debian's (merged /usr, packages'
 * units under /lib/systemd/system, deb-systemd-helper's links in /etc),
 * enable/disable, conditions, and hostile trees. */
#include "unit.h"
#include "units/units.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ----------------------------------------------------------------- */

struct diags {
	unsigned n;
	char last[512];
};

static void diag_collect(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	struct diags *d = data;
	va_list ap;
	(void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(d->last, sizeof(d->last), fmt, ap);
	va_end(ap);
	d->n++;
}

static void put(const char *root, const char *path, const char *text)
{
	char full[PATH_MAX], dir[PATH_MAX];
	snprintf(full, sizeof(full), "%s%s", root, path);
	snprintf(dir, sizeof(dir), "%s", full);
	*strrchr(dir, '/') = '\0';
	mkdir_p(dir, 0755);
	FILE *f = fopen(full, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *root, const char *path, const char *target)
{
	char full[PATH_MAX], dir[PATH_MAX];
	snprintf(full, sizeof(full), "%s%s", root, path);
	snprintf(dir, sizeof(dir), "%s", full);
	*strrchr(dir, '/') = '\0';
	mkdir_p(dir, 0755);
	if (symlink(target, full) < 0)
		printf("    symlink %s: %m\n", full);
}

static void rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("    could not remove %s\n", dir);
}

static const char ssh_unit[] = "[Unit]\n"
                               "Description=OpenBSD Secure Shell server\n"
                               "After=network.target auditd.service\n"
                               "ConditionPathExists=!/etc/ssh/sshd_not_to_be_run\n\n"
                               "[Service]\n"
                               "ExecStart=/usr/sbin/sshd -D $SSHD_OPTS\n\n"
                               "[Install]\n"
                               "WantedBy=multi-user.target\n"
                               "Alias=sshd.service\n";
static const char getty_unit[] = "[Unit]\nDescription=Getty on %i\nAfter=getty-pre.target\n"
                                 "[Service]\nExecStart=-/sbin/agetty -o '-p -- \\\\u' %I\n"
                                 "[Install]\nWantedBy=getty.target\nDefaultInstance=tty1\n";

/* A bookworm-like root: /lib -> usr/lib, units in /usr/lib/systemd/system,
 * links in /etc/systemd/system as deb-systemd-helper leaves them. */
static void debian_root(char *root, size_t size)
{
	snprintf(root, size, "/tmp/kin-units-XXXXXX");
	if (!mkdtemp(root)) {
		root[0] = '\0';
		return;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/usr/lib/systemd/system", root);
	mkdir_p(p, 0755);
	link_to(root, "/lib", "usr/lib");
	const char *lib = "/usr/lib/systemd/system";
	char f[PATH_MAX];
#define LIB(name, text) (snprintf(f, sizeof(f), "%s/%s", lib, name), put(root, f, text))
	LIB("ssh.service", ssh_unit);
	LIB("getty@.service", getty_unit);
	LIB("postgresql@.service", "[Unit]\nDescription=PostgreSQL Cluster %i\n");
	LIB("rsyslog.service",
	    "[Unit]\nDescription=System Logging Service\nRequires=syslog.socket\n"
	    "[Install]\nWantedBy=multi-user.target\nAlias=syslog.service\n");
	LIB("foo.service", "[Unit]\nDescription=masked below\n");
	LIB("static.service", "[Unit]\nDescription=no install\n");
	LIB("ssh.service.d/10-a.conf", "[Unit]\nDescription=lib 10\n");
	LIB("ssh.service.d/20-b.conf", "[Unit]\nWants=b.service\n");
	LIB("service.d/05-all.conf", "[Unit]\nWants=all.service\n");
	LIB("getty@.service.d/override.conf", "[Unit]\nWants=tmpl.service\n");
	LIB("multi-user.target.wants/vendor.service", "");
	put(root, "/etc/systemd/system/ssh.service.d/10-a.conf", "[Unit]\nDescription=etc 10\n");
	put(root, "/etc/systemd/system/sshd.service.d/30-c.conf", "[Unit]\nWants=c.service\n");
	put(root, "/etc/systemd/system/ssh.service.d/20-b.conf.txt", "[Unit]\nWants=x.service\n");
	link_to(root, "/etc/systemd/system/sshd.service", "/lib/systemd/system/ssh.service");
	link_to(root, "/etc/systemd/system/multi-user.target.wants/ssh.service",
	        "/lib/systemd/system/ssh.service");
	link_to(root, "/etc/systemd/system/getty.target.wants/getty@tty1.service",
	        "/lib/systemd/system/getty@.service");
	link_to(root, "/etc/systemd/system/syslog.service", "/lib/systemd/system/rsyslog.service");
	link_to(root, "/etc/systemd/system/foo.service", "/dev/null");
#undef LIB
}

static struct unit_def *load(const char *root, const char *name, struct diags *dg, int *ret_r,
                             struct err *e)
{
	struct unit_paths p;
	struct unit_def *d = NULL;
	struct unit_spec_ctx ctx = {.hostname = "host"};
	unit_paths_init(&p, root);
	*ret_r = unit_load(&p, name, &ctx, diag_collect, dg, &d, e);
	return d;
}

/* ---- names ----------------------------------------------------------------- */

TEST(units_names)
{
	struct unit_name n;
	struct err e = {0};
	CHECK(unit_name_parse("getty@tty1.service", &n, &e) == 0);
	CHECK_STR(n.prefix, "getty");
	CHECK_STR(n.instance, "tty1");
	CHECK_STR(n.template_name, "getty@.service");
	CHECK(n.type == UNIT_SERVICE);
	CHECK(unit_name_parse("getty@.service", &n, &e) == 0 && n.instance && !n.instance[0]);
	CHECK(unit_name_parse("ssh.service", &n, &e) == 0 && !n.instance && !n.template_name[0]);
	CHECK(unit_name_parse("-.slice", &n, &e) == 0 && n.type == UNIT_SLICE);
	CHECK(unit_name_parse("dev-sda1.device", &n, &e) == 0);
	CHECK(unit_name_parse("a@b@c.service", &n, &e) == -EINVAL && strstr(e.msg, "a@b@c"));
	CHECK(!unit_name_valid("ssh"));
	CHECK(!unit_name_valid("ssh.conf"));
	CHECK(!unit_name_valid("@x.service"));
	CHECK(!unit_name_valid(".service"));
	CHECK(!unit_name_valid("a b.service"));
	CHECK(!unit_name_valid("a/b.service"));
	CHECK(!unit_name_valid(""));
	char big[300];
	memset(big, 'a', sizeof(big));
	strcpy(big + 280, ".service");
	CHECK(!unit_name_valid(big));
	char buf[UNIT_NAME_MAX + 1];
	CHECK(unit_name_instantiate("getty@.service", "tty1", buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "getty@tty1.service");
	CHECK(unit_name_instantiate("ssh.service", "x", buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_instantiate("getty@tty2.service", "x", buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_instantiate("getty@.service", "a/b", buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_instantiate("getty@.service", "x", buf, 8) == -ENAMETOOLONG);

	CHECK(unit_name_escape("/dev/sda1", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "dev-sda1");
	CHECK(unit_name_escape("/", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "-");
	CHECK(unit_name_escape("//var//lib/", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "var-lib");
	CHECK(unit_name_escape("/a/../b", true, buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_escape("/dev/disk/by-label/my disk", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "dev-disk-by\\x2dlabel-my\\x20disk");
	CHECK(unit_name_escape(".hidden/x", false, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "\\x2ehidden-x");
	CHECK(unit_name_escape("Hello-World", false, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "Hello\\x2dWorld");
	CHECK(unit_name_unescape("dev-disk-by\\x2dlabel-my\\x20disk", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "/dev/disk/by-label/my disk");
	CHECK(unit_name_unescape("-", true, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "/");
	CHECK(unit_name_unescape("tty1", false, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "tty1");
	CHECK(unit_name_unescape("a-b\\x2dc", false, buf, sizeof(buf)) == 0);
	CHECK_STR(buf, "a/b-c");
	CHECK(unit_name_unescape("bad\\x4", false, buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_unescape("nul\\x00", false, buf, sizeof(buf)) == -EINVAL);
	CHECK(unit_name_unescape("abcdef", false, buf, 4) == -ENAMETOOLONG);
}

/* ---- syntax ---------------------------------------------------------------- */

struct seen {
	struct diags dg; /* first: the diag callback gets the same data */
	char text[2048];
	unsigned n;
};

static int collect(const struct unit_assign *a, void *data)
{
	struct seen *s = data;
	size_t len = strlen(s->text);
	snprintf(s->text + len, sizeof(s->text) - len, "%s.%s=%s@%u|", a->section, a->key, a->value,
	         a->line);
	s->n++;
	return 0;
}

TEST(units_syntax)
{
	static const char text[] = "# comment\n"
	                           "Orphan=1\n"
	                           "[Unit]\n"
	                           "  Description =  spaced value  \r\n"
	                           "; another comment\n"
	                           "Wants=\n"
	                           "nonsense line\n"
	                           "[Service]\n"
	                           "ExecStart=/bin/a \\\n"
	                           "# a comment inside the continuation\n"
	                           "  --flag \\\n"
	                           "  last\n"
	                           "Escaped=x\\\\\n"
	                           "[Bad section\n"
	                           "Hidden=1\n"
	                           "[X-Vendor]\n"
	                           "=novalue\n"
	                           "Tail=end \\";
	struct seen s = {0};
	struct diags *dgp = &s.dg;
	struct err e = {0};
	CHECK(unit_file_parse(text, strlen(text), "t.service", collect, diag_collect, &s, &e) == 0);
	CHECK_STR(s.text, "Unit.Description=spaced value@4|Unit.Wants=@6|"
	                  "Service.ExecStart=/bin/a    --flag    last@9|Service.Escaped=x\\\\@13|"
	                  "X-Vendor.Tail=end@18|");
	CHECK_EQ(dgp->n, 4); /* Orphan, nonsense, bad section, =novalue */
	CHECK(strstr(dgp->last, "t.service:17") != NULL);

	/* Bounds: a NUL refuses the file, so does a size past the bound; a
	 * huge line is reported and the rest still parses. */
	memset(&s, 0, sizeof(s));
	CHECK(unit_file_parse("[Unit]\nA=b\0c\n", 13, "nul.service", collect, NULL, &s, &e) ==
	      -EINVAL);
	CHECK(strstr(e.msg, "nul.service") && strstr(e.msg, "NUL") && s.n == 0);
	CHECK(unit_file_parse("", UNIT_FILE_MAX + 1, "big.service", collect, NULL, &s, &e) ==
	      -EFBIG);
	size_t big = UNIT_LINE_MAX + 100;
	char *huge = malloc(big + 64);
	strcpy(huge, "[Unit]\nDescription=");
	size_t off = strlen(huge);
	memset(huge + off, 'x', big);
	strcpy(huge + off + big, "\nAfter=a.target\n");
	memset(&s, 0, sizeof(s));
	CHECK(unit_file_parse(huge, strlen(huge), "huge.service", collect, diag_collect, &s, &e) ==
	      0);
	CHECK_STR(s.text, "Unit.After=a.target@3|");
	CHECK(dgp->n == 1 && strstr(dgp->last, "huge.service:2") && strstr(dgp->last, "longer"));
	free(huge);
}

/* ---- loading ----------------------------------------------------------------- */

TEST(units_load_debian)
{
	char root[64];
	debian_root(root, sizeof(root));
	CHECK(root[0]);
	struct diags dg = {0};
	struct err e = {0};
	int r;

	/* The alias name loads the unit under its own name. */
	struct unit_def *d = load(root, "sshd.service", &dg, &r, &e);
	CHECK_EQ(r, 0);
	if (d) {
		CHECK_STR(d->name.full, "ssh.service");
		CHECK_STR(d->source.fragment, "/lib/systemd/system/ssh.service");
		CHECK(unit_strv_contains(&d->source.aliases, "sshd.service"));
		/* Drop-ins by file name, /etc hiding /lib's 10-a.conf, the alias's
		 * and the type's included, a non-.conf file not. */
		CHECK_EQ(d->source.dropins.n, 4);
		if (d->source.dropins.n == 4) {
			CHECK_STR(d->source.dropins.v[0],
			          "/lib/systemd/system/service.d/05-all.conf");
			CHECK_STR(d->source.dropins.v[1],
			          "/etc/systemd/system/ssh.service.d/10-a.conf");
			CHECK_STR(d->source.dropins.v[2],
			          "/lib/systemd/system/ssh.service.d/20-b.conf");
			CHECK_STR(d->source.dropins.v[3],
			          "/etc/systemd/system/sshd.service.d/30-c.conf");
		}
		CHECK_STR(d->description, "etc 10");
		CHECK(unit_strv_contains(&d->deps[UNIT_DEP_WANTS], "all.service"));
		CHECK(unit_strv_contains(&d->deps[UNIT_DEP_WANTS], "c.service"));
		CHECK(!unit_strv_contains(&d->deps[UNIT_DEP_WANTS], "x.service"));
		CHECK(!d->source.masked);
		unit_def_free(d);
	}
	/* By its own name: the alias is found from the other link. */
	d = load(root, "ssh.service", &dg, &r, &e);
	CHECK(r == 0 && d && unit_strv_contains(&d->source.aliases, "sshd.service"));
	CHECK(d && d->source.dropins.n == 4);
	unit_def_free(d);

	/* An instance from its template, specifiers seeing the instance. */
	d = load(root, "getty@tty1.service", &dg, &r, &e);
	CHECK_EQ(r, 0);
	if (d) {
		CHECK_STR(d->name.full, "getty@tty1.service");
		CHECK_STR(d->source.fragment, "/lib/systemd/system/getty@.service");
		CHECK_STR(d->description, "Getty on tty1");
		CHECK(unit_strv_contains(&d->deps[UNIT_DEP_WANTS], "tmpl.service"));
		unit_def_free(d);
	}
	d = load(root, "postgresql@15-main.service", &dg, &r, &e);
	CHECK(r == 0 && d && strcmp(d->description, "PostgreSQL Cluster 15-main") == 0);
	unit_def_free(d);

	/* A mask in /etc hides the file below. */
	d = load(root, "foo.service", &dg, &r, &e);
	CHECK(r == 0 && d && d->source.masked && !d->description);
	unit_def_free(d);

	/* Built-ins: the targets with the enablement links of /etc and /lib. */
	d = load(root, "default.target", &dg, &r, &e);
	CHECK_EQ(r, 0);
	if (d) {
		CHECK_STR(d->name.full, "multi-user.target");
		CHECK_STR(d->source.fragment, "");
		CHECK(unit_strv_contains(&d->source.aliases, "default.target"));
		CHECK_STR(d->description, "Multi-User System");
		CHECK(unit_strv_contains(&d->deps[UNIT_DEP_REQUIRES], "basic.target"));
		CHECK_EQ(d->wants_dir.n, 2);
		CHECK(d->wants_dir.n == 2 && strcmp(d->wants_dir.v[0], "ssh.service") == 0 &&
		      strcmp(d->wants_dir.v[1], "vendor.service") == 0);
		unit_def_free(d);
	}
	d = load(root, "getty.target", &dg, &r, &e);
	CHECK(r == 0 && d && d->wants_dir.n == 1 &&
	      strcmp(d->wants_dir.v[0], "getty@tty1.service") == 0);
	unit_def_free(d);
	/* rsyslog's syslog.service link, and Debian's syslog.socket. */
	d = load(root, "syslog.service", &dg, &r, &e);
	CHECK(r == 0 && d && strcmp(d->name.full, "rsyslog.service") == 0);
	CHECK(d && unit_strv_contains(&d->deps[UNIT_DEP_REQUIRES], "syslog.socket"));
	unit_def_free(d);
	d = load(root, "syslog.socket", &dg, &r, &e);
	CHECK(r == 0 && d && d->socket.service && strcmp(d->socket.service, "syslog.service") == 0);
	unit_def_free(d);
	static const char *const builtins[] = {"graphical.target",
	                                       "basic.target",
	                                       "sysinit.target",
	                                       "sockets.target",
	                                       "timers.target",
	                                       "paths.target",
	                                       "slices.target",
	                                       "local-fs.target",
	                                       "network.target",
	                                       "network-online.target",
	                                       "nss-lookup.target",
	                                       "time-sync.target",
	                                       "rescue.target",
	                                       "emergency.target",
	                                       "shutdown.target",
	                                       "reboot.target",
	                                       "poweroff.target",
	                                       "halt.target",
	                                       "final.target",
	                                       "umount.target",
	                                       "swap.target",
	                                       "cryptsetup.target",
	                                       "system-update.target",
	                                       "sound.target",
	                                       "-.slice",
	                                       "system.slice",
	                                       "remote-fs.target",
	                                       "getty-pre.target"};
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		dg.n = 0;
		d = load(root, builtins[i], &dg, &r, &e);
		if (r != 0 || !d || strcmp(d->name.full, builtins[i]) != 0 || !d->description)
			printf("    built-in %s: %d %s\n", builtins[i], r, e.msg);
		CHECK(r == 0 && d && d->description && d->source.fragment[0] == '\0');
		unit_def_free(d);
	}
	/* A file on disk wins over a built-in. */
	put(root, "/etc/systemd/system/network.target", "[Unit]\nDescription=mine\n");
	d = load(root, "network.target", &dg, &r, &e);
	CHECK(r == 0 && d && strcmp(d->description, "mine") == 0);
	unit_def_free(d);
	d = load(root, "nope.service", &dg, &r, &e);
	CHECK(r == -ENOENT && !d && e.code == ERR_NOT_FOUND && strstr(e.msg, "nope.service"));
	rm_rf(root);
}

/* Trees that try to break the loader: each an error naming the unit, or a
 * diag, never a hang or a file outside the root. */
TEST(units_load_hostile)
{
	char root[64], outside[64];
	debian_root(root, sizeof(root));
	snprintf(outside, sizeof(outside), "/tmp/kin-units-out-XXXXXX");
	CHECK(mkdtemp(outside) != NULL);
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/escape.service", outside);
	put("", p, "[Unit]\nDescription=outside the root\n");
	const char *etc = "/etc/systemd/system";
	char f[PATH_MAX], t[PATH_MAX];
	/* /run/systemd/system is a link out of the root: read as the root's. */
	snprintf(t, sizeof(t), "/../../../..%s", outside);
	link_to(root, "/run/systemd/system", t);
	snprintf(f, sizeof(f), "%s/escape.service", etc);
	snprintf(t, sizeof(t), "../../../../../../../..%s/escape.service", outside);
	link_to(root, f, t);
	snprintf(f, sizeof(f), "%s/escape2.service", etc);
	snprintf(t, sizeof(t), "%s/escape.service", outside);
	link_to(root, f, t);
	link_to(root, "/etc/systemd/system/loop1.service", "loop2.service");
	link_to(root, "/etc/systemd/system/loop2.service", "loop1.service");
	link_to(root, "/etc/systemd/system/spin.service", "spin");
	link_to(root, "/etc/systemd/system/spin", "spin.service");
	snprintf(f, sizeof(f), "%s%s/dir.service", root, etc);
	mkdir_p(f, 0755);
	put(root, "/etc/systemd/system/nul.service", "[Unit]\nDescription=a\0b");
	snprintf(f, sizeof(f), "%s%s/nul.service", root, etc);
	FILE *fp = fopen(f, "w");
	if (fp) {
		fwrite("[Unit]\nDescription=a\0b\n", 1, 24, fp);
		fclose(fp);
	}
	snprintf(f, sizeof(f), "%s%s/fifo.service", root, etc);
	CHECK(mkfifo(f, 0644) == 0);

	struct diags dg = {0};
	struct err e = {0};
	int r;
	struct unit_def *d = load(root, "escape.service", &dg, &r, &e);
	CHECK(r < 0 && !d && strstr(e.msg, "escape.service"));
	d = load(root, "escape2.service", &dg, &r, &e);
	CHECK(r < 0 && !d && strstr(e.msg, "escape2.service"));
	d = load(root, "loop1.service", &dg, &r, &e);
	CHECK(r == -ELOOP && !d && strstr(e.msg, "loop"));
	d = load(root, "spin.service", &dg, &r, &e);
	CHECK(r == -ELOOP && !d && strstr(e.msg, "spin.service"));
	d = load(root, "dir.service", &dg, &r, &e);
	CHECK(r < 0 && !d && strstr(e.msg, "dir.service"));
	d = load(root, "nul.service", &dg, &r, &e);
	CHECK(r == -EINVAL && !d && strstr(e.msg, "nul.service") && strstr(e.msg, "NUL"));
	d = load(root, "fifo.service", &dg, &r, &e);
	CHECK(r < 0 && !d && strstr(e.msg, "fifo.service"));
	d = load(root, "../../x.service", &dg, &r, &e);
	CHECK(r == -EINVAL && !d);
	/* A bad drop-in does not fail its unit. */
	put(root, "/etc/systemd/system/ssh.service.d/99-nul.conf", "");
	snprintf(f, sizeof(f), "%s%s/ssh.service.d/99-nul.conf", root, etc);
	if ((fp = fopen(f, "w"))) {
		fwrite("[Unit]\0", 1, 7, fp);
		fclose(fp);
	}
	dg.n = 0;
	d = load(root, "ssh.service", &dg, &r, &e);
	CHECK(r == 0 && d && d->source.dropins.n == 4 && dg.n >= 1);
	unit_def_free(d);
	rm_rf(root);
	rm_rf(outside);
}

/* ---- enable / disable ---------------------------------------------------------- */

struct changes {
	unsigned n;
	char text[2048];
};

static void change_collect(const char *what, const char *link, const char *target, void *data)
{
	struct changes *c = data;
	size_t len = strlen(c->text);
	snprintf(c->text + len, sizeof(c->text) - len, "%s %s -> %s|", what, link, target);
	c->n++;
}

static bool link_is(const char *root, const char *path, const char *target)
{
	char full[PATH_MAX], have[PATH_MAX];
	snprintf(full, sizeof(full), "%s%s", root, path);
	ssize_t n = readlink(full, have, sizeof(have) - 1);
	if (n < 0)
		return false;
	have[n] = '\0';
	return strcmp(have, target) == 0;
}

static int list_collect(const char *name, const char *st, const char *path, void *data)
{
	struct changes *c = data;
	size_t len = strlen(c->text);
	(void)path;
	snprintf(c->text + len, sizeof(c->text) - len, "%s=%s|", name, st);
	c->n++;
	return 0;
}

static const char *state(const struct unit_paths *p, const char *name, char *buf)
{
	return unit_file_state(p, name, buf, 32) == 0 ? buf : "(error)";
}

TEST(units_install)
{
	char root[64], buf[32];
	snprintf(root, sizeof(root), "/tmp/kin-units-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	char p0[PATH_MAX];
	snprintf(p0, sizeof(p0), "%s/usr/lib/systemd/system", root);
	mkdir_p(p0, 0755);
	link_to(root, "/lib", "usr/lib");
	put(root, "/usr/lib/systemd/system/ssh.service", ssh_unit);
	put(root, "/usr/lib/systemd/system/getty@.service", getty_unit);
	put(root, "/usr/lib/systemd/system/static.service", "[Unit]\nDescription=s\n");
	put(root, "/usr/lib/systemd/system/also.service", "[Install]\nAlso=ssh.service\n");
	struct unit_paths p;
	struct changes c = {0};
	struct err e = {0};
	unit_paths_init(&p, root);
	CHECK_STR(state(&p, "ssh.service", buf), "disabled");
	CHECK_STR(state(&p, "static.service", buf), "static");
	CHECK_STR(state(&p, "also.service", buf), "indirect");
	CHECK_STR(state(&p, "multi-user.target", buf), "static");
	CHECK(unit_file_state(&p, "nope.service", buf, sizeof(buf)) == -ENOENT);

	/* The links deb-systemd-helper makes. */
	CHECK_EQ(unit_enable(&p, "ssh.service", change_collect, &c, &e), 0);
	CHECK(link_is(root, "/etc/systemd/system/multi-user.target.wants/ssh.service",
	              "/lib/systemd/system/ssh.service"));
	CHECK(link_is(root, "/etc/systemd/system/sshd.service", "/lib/systemd/system/ssh.service"));
	CHECK_EQ(c.n, 2);
	CHECK_STR(state(&p, "ssh.service", buf), "enabled");
	CHECK_STR(state(&p, "sshd.service", buf), "alias");
	c = (struct changes){0};
	CHECK_EQ(unit_enable(&p, "ssh.service", change_collect, &c, &e), 0);
	CHECK_EQ(c.n, 0); /* already there: nothing made */
	/* A template with DefaultInstance=. */
	CHECK_EQ(unit_enable(&p, "getty@.service", change_collect, &c, &e), 0);
	CHECK(link_is(root, "/etc/systemd/system/getty.target.wants/getty@tty1.service",
	              "/lib/systemd/system/getty@.service"));
	CHECK_STR(state(&p, "getty@.service", buf), "enabled");
	CHECK_STR(state(&p, "getty@tty1.service", buf), "enabled");
	CHECK_STR(state(&p, "getty@tty2.service", buf), "disabled");
	CHECK_EQ(unit_enable(&p, "getty@tty2.service", NULL, NULL, &e), 0);
	CHECK(link_is(root, "/etc/systemd/system/getty.target.wants/getty@tty2.service",
	              "/lib/systemd/system/getty@.service"));
	/* A link of another target is refused, not replaced. */
	link_to(root, "/etc/systemd/system/static.target.wants/x", "y");
	put(root, "/usr/lib/systemd/system/clash.service", "[Install]\nAlias=clash2.service\n");
	link_to(root, "/etc/systemd/system/clash2.service", "/elsewhere/clash2.service");
	CHECK(unit_enable(&p, "clash.service", NULL, NULL, &e) == -EEXIST &&
	      strstr(e.msg, "clash2.service"));

	c = (struct changes){0};
	CHECK_EQ(unit_disable(&p, "ssh.service", change_collect, &c, &e), 0);
	CHECK_EQ(c.n, 2);
	CHECK(
	    !link_is(root, "/etc/systemd/system/sshd.service", "/lib/systemd/system/ssh.service"));
	CHECK_STR(state(&p, "ssh.service", buf), "disabled");
	CHECK_EQ(unit_enable(&p, "also.service", NULL, NULL, &e), 0); /* Also= followed */
	CHECK_STR(state(&p, "ssh.service", buf), "enabled");
	CHECK_EQ(unit_disable(&p, "getty@.service", NULL, NULL, &e), 0);
	CHECK(!link_is(root, "/etc/systemd/system/getty.target.wants/getty@tty2.service",
	               "/lib/systemd/system/getty@.service"));

	c = (struct changes){0};
	CHECK_EQ(unit_mask(&p, "static.service", true, change_collect, &c, &e), 0);
	CHECK(link_is(root, "/etc/systemd/system/static.service", "/dev/null") && c.n == 1);
	CHECK_STR(state(&p, "static.service", buf), "masked");
	CHECK(unit_enable(&p, "static.service", NULL, NULL, &e) == -ERFKILL);
	CHECK_EQ(unit_disable(&p, "static.service", NULL, NULL, &e), 0); /* a mask stays */
	CHECK_STR(state(&p, "static.service", buf), "masked");
	CHECK_EQ(unit_mask(&p, "static.service", false, change_collect, &c, &e), 0);
	CHECK_STR(state(&p, "static.service", buf), "static");
	CHECK(c.n == 2 && strstr(c.text, "removed"));
	CHECK(unit_mask(&p, "../x.service", true, NULL, NULL, &e) == -EINVAL);

	/* The listing: every name with its state. */
	struct changes l = {0};
	CHECK_EQ(unit_files_list(&p, list_collect, &l), 0);
	CHECK(strstr(l.text, "ssh.service=enabled|") && strstr(l.text, "static.service=static|"));
	CHECK(strstr(l.text, "sshd.service=alias|") && !strstr(l.text, "getty@"));
	rm_rf(root);
}

/* ---- conditions ---------------------------------------------------------------- */

TEST(units_conditions)
{
	char root[64], why[256];
	snprintf(root, sizeof(root), "/tmp/kin-units-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	put(root, "/etc/ssh/sshd_config", "Port 22\n");
	put(root, "/etc/empty", "");
	put(root, "/usr/bin/tool", "#!/bin/sh\n");
	char f[PATH_MAX];
	snprintf(f, sizeof(f), "%s/usr/bin/tool", root);
	chmod(f, 0755);
	link_to(root, "/etc/link", "/etc/ssh/sshd_config");
	struct unit_cond_env env = {.root = root,
	                            .cmdline = "quiet root=/dev/vda ro \"opt=a b\" debug",
	                            .virtualization = "kvm",
	                            .caps = 1ull << 12,
	                            .hostname = "web1",
	                            .architecture = "x86-64"};
#define C(t, a, ...) ((struct unit_condition){.type = (t), .arg = (a), __VA_ARGS__})
	struct unit_condition pass[] = {
	    C(UNIT_COND_PATH_EXISTS, "/etc/ssh/sshd_config"),
	    C(UNIT_COND_PATH_EXISTS, "/etc/ssh/sshd_not_to_be_run", .negate = true),
	    C(UNIT_COND_PATH_IS_DIRECTORY, "/etc/ssh"),
	    C(UNIT_COND_PATH_IS_SYMBOLIC_LINK, "/etc/link"),
	    C(UNIT_COND_PATH_EXISTS_GLOB, "/etc/ssh/*_config"),
	    C(UNIT_COND_DIRECTORY_NOT_EMPTY, "/etc/ssh"),
	    C(UNIT_COND_FILE_NOT_EMPTY, "/etc/empty", .negate = true),
	    C(UNIT_COND_FILE_IS_EXECUTABLE, "/usr/bin/tool"),
	    C(UNIT_COND_KERNEL_COMMAND_LINE, "root"),
	    C(UNIT_COND_KERNEL_COMMAND_LINE, "root=/dev/vda"),
	    C(UNIT_COND_KERNEL_COMMAND_LINE, "roo", .negate = true),
	    C(UNIT_COND_VIRTUALIZATION, "vm"),
	    C(UNIT_COND_VIRTUALIZATION, "container", .negate = true),
	    C(UNIT_COND_CAPABILITY, "CAP_NET_ADMIN"),
	    C(UNIT_COND_HOST, "web*"),
	    C(UNIT_COND_ARCHITECTURE, "x86-64"),
	    C(UNIT_COND_FIRST_BOOT, "no"),
	    C(UNIT_COND_SECURITY, "selinux"),
	    C(UNIT_COND_PATH_EXISTS, "/nope", .trigger = true),
	    C(UNIT_COND_PATH_EXISTS, "/etc", .trigger = true),
	};
	CHECK_EQ(
	    unit_conditions_check(pass, sizeof(pass) / sizeof(pass[0]), &env, why, sizeof(why)), 1);
	CHECK_STR(why, "");
	/* A file outside the root is not seen through a link. */
	link_to(root, "/etc/out", "/../../../../etc/hostname");
	struct unit_condition fail[] = {
	    C(UNIT_COND_PATH_EXISTS, "/etc/ssh/sshd_config"),
	    C(UNIT_COND_PATH_EXISTS, "/etc/out"),
	};
	CHECK_EQ(unit_conditions_check(fail, 2, &env, why, sizeof(why)), 0);
	CHECK_STR(why, "ConditionPathExists=/etc/out");
	struct unit_condition neg[] = {C(UNIT_COND_PATH_EXISTS, "/etc/ssh", .negate = true)};
	CHECK_EQ(unit_conditions_check(neg, 1, &env, why, sizeof(why)), 0);
	CHECK_STR(why, "ConditionPathExists=!/etc/ssh");
	struct unit_condition trig[] = {
	    C(UNIT_COND_PATH_EXISTS, "/a", .trigger = true),
	    C(UNIT_COND_PATH_EXISTS, "/b", .trigger = true),
	};
	CHECK_EQ(unit_conditions_check(trig, 2, &env, why, sizeof(why)), 0);
	CHECK_STR(why, "ConditionPathExists=|/a");
	/* Conditions first: a failing one skips, before a failing assert. */
	struct unit_condition as[] = {
	    C(UNIT_COND_VIRTUALIZATION, "docker", .assert = true),
	    C(UNIT_COND_HOST, "db*"),
	};
	CHECK_EQ(unit_conditions_check(as, 2, &env, why, sizeof(why)), 0);
	CHECK_EQ(unit_conditions_check(as, 1, &env, why, sizeof(why)), -EPERM);
	CHECK_STR(why, "AssertVirtualization=docker");
	CHECK_EQ(unit_conditions_check(NULL, 0, &env, why, sizeof(why)), 1);
#undef C
	rm_rf(root);
}
