#include "unit.h"
#include "units/units.h"

#include <stdlib.h>

/* Parses value for a unit named name; returns the parse result. */
static int parse(const char *value, const char *name, struct unit_cmds *l, struct err *e)
{
	struct unit_name n;
	if (unit_name_parse(name, &n, NULL) < 0)
		return -999;
	struct unit_spec_ctx ctx = {.name = &n, .hostname = "web1.example.org"};
	return unit_cmd_parse(value, &ctx, l, e);
}

/* The words of argv joined with '|' (a test's view of a command). */
static const char *joined(char *const *argv, size_t n)
{
	static char buf[4096];
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(buf, "|");
		strncat(buf, argv[i], sizeof(buf) - strlen(buf) - 2);
	}
	return buf;
}

static const char *expanded(const struct unit_cmd *c, char *const *env, size_t nenv)
{
	char **argv = NULL;
	struct err e = {0};
	if (unit_cmd_expand(c, env, nenv, &argv, &e) < 0)
		return "(error)";
	size_t n = 0;
	while (argv[n])
		n++;
	const char *s = joined(argv, n);
	unit_argv_free(argv);
	return s;
}

TEST(units_cmd_debian)
{
	struct unit_cmds l = {0};
	struct err e = {0};
	CHECK(parse("/usr/sbin/sshd -D $SSHD_OPTS", "ssh.service", &l, &e) == 0);
	CHECK(l.n == 1 && l.v[0].flags == 0);
	CHECK_STR(l.v[0].path, "/usr/sbin/sshd");
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc), "/usr/sbin/sshd|-D|$SSHD_OPTS");
	char *env[] = {"SSHD_OPTS=-o  LogLevel=DEBUG ", "SSHD_OPTS=-4 -o X=y"};
	CHECK_STR(expanded(&l.v[0], env, 2), "/usr/sbin/sshd|-D|-4|-o|X=y");
	CHECK_STR(expanded(&l.v[0], env, 1), "/usr/sbin/sshd|-D|-o|LogLevel=DEBUG");
	CHECK_STR(expanded(&l.v[0], NULL, 0), "/usr/sbin/sshd|-D");
	char *blank[] = {"SSHD_OPTS="};
	CHECK_STR(expanded(&l.v[0], blank, 1), "/usr/sbin/sshd|-D");
	unit_cmds_clear(&l);

	CHECK(parse("/bin/kill -HUP $MAINPID", "ssh.service", &l, &e) == 0);
	char *pid[] = {"MAINPID=4242"};
	CHECK_STR(expanded(&l.v[0], pid, 1), "/bin/kill|-HUP|4242");
	unit_cmds_clear(&l);

	CHECK(parse("/usr/sbin/nginx -t -q -g 'daemon on; master_process on;'", "nginx.service", &l,
	            &e) == 0);
	CHECK(l.n == 1);
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc),
	          "/usr/sbin/nginx|-t|-q|-g|daemon on; master_process on;");
	unit_cmds_clear(&l);

	CHECK(parse("-/usr/bin/pg_ctlcluster --skip-systemctl-redirect %i start",
	            "postgresql@15-main.service", &l, &e) == 0);
	CHECK(l.n == 1 && l.v[0].flags == UNIT_CMD_IGNORE_FAILURE);
	CHECK_STR(l.v[0].path, "/usr/bin/pg_ctlcluster");
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc),
	          "/usr/bin/pg_ctlcluster|--skip-systemctl-redirect|15-main|start");
	unit_cmds_clear(&l);

	/* getty@.service as Debian ships it: the unit file has '\\u'. */
	CHECK(parse("-/sbin/agetty -o '-p -- \\\\u' --noclear - $TERM", "getty@tty1.service", &l,
	            &e) == 0);
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc), "/sbin/agetty|-o|-p -- \\u|--noclear|-|$TERM");
	char *term[] = {"TERM=linux"};
	CHECK_STR(expanded(&l.v[0], term, 1), "/sbin/agetty|-o|-p -- \\u|--noclear|-|linux");
	unit_cmds_clear(&l);

	/* %I unescapes, %H, %N, %p, %f. */
	CHECK(parse("/bin/echo %I %H %N %p %f %t/%p",
	            "systemd-fsck@dev-disk-by\\x2dlabel-root.service", &l, &e) == 0);
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc),
	          "/bin/echo|dev/disk/by-label/root|web1.example.org|"
	          "systemd-fsck@dev-disk-by\\x2dlabel-root|systemd-fsck|/dev/disk/by-label/root|"
	          "/run/systemd-fsck");
	unit_cmds_clear(&l);
	/* A specifier's value is one word: its spaces and quotes are bytes. */
	CHECK(parse("/bin/echo %I", "x@a\\x20b\\x27c.service", &l, &e) == 0);
	CHECK(l.n == 1 && l.v[0].argc == 2);
	CHECK_STR(l.v[0].argv[1], "a b'c");
	unit_cmds_clear(&l);
}

TEST(units_cmd_prefixes_and_separators)
{
	struct unit_cmds l = {0};
	struct err e = {0};
	CHECK(parse("-@/bin/sh sh-argv0 -c 'echo hi' ; +/bin/true ; !!:/usr/bin/id \\; x",
	            "a.service", &l, &e) == 0);
	CHECK(l.n == 3);
	CHECK(l.v[0].flags == (UNIT_CMD_IGNORE_FAILURE | UNIT_CMD_ARGV0));
	CHECK_STR(l.v[0].path, "/bin/sh");
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc), "sh-argv0|-c|echo hi");
	CHECK(l.v[1].flags == UNIT_CMD_FULL_PRIVILEGES && l.v[1].argc == 1);
	CHECK(l.v[2].flags == (UNIT_CMD_AMBIENT | UNIT_CMD_NO_ENV_EXPAND));
	CHECK_STR(joined(l.v[2].argv, l.v[2].argc), "/usr/bin/id|;|x");
	/* Appends: a second value adds to the list. */
	CHECK(parse("!true", "a.service", &l, &e) == 0 && l.n == 4);
	CHECK(l.v[3].flags == UNIT_CMD_NO_SETUID);
	CHECK_STR(l.v[3].path, "true");
	unit_cmds_clear(&l);

	/* ';' inside a word is no separator; '\;' alone is a literal. */
	CHECK(parse("/bin/find . -exec rm {} \\;", "a.service", &l, &e) == 0 && l.n == 1);
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc), "/bin/find|.|-exec|rm|{}|;");
	unit_cmds_clear(&l);
	CHECK(parse("/bin/a b;c", "a.service", &l, &e) == 0 && l.n == 1 && l.v[0].argc == 2);
	unit_cmds_clear(&l);

	/* Escapes. */
	CHECK(parse("/bin/printf \"a\\tb\\x41\\101\\u00e9\\n\" x\"y z\"w ''", "a.service", &l,
	            &e) == 0);
	CHECK_STR(joined(l.v[0].argv, l.v[0].argc), "/bin/printf|a\tbAA\xc3\xa9\n|xy zw|");
	CHECK(l.v[0].argc == 4);
	unit_cmds_clear(&l);

	/* ':' keeps $ as it is, '$$' is a '$', ${X} in a word unsplit. */
	CHECK(parse(":/bin/echo $A ${A}", "a.service", &l, &e) == 0);
	CHECK(parse("/bin/echo $A x$A ${A} \"${A}y\" $$A ${B} $ a$ ${unterminated $B", "a.service",
	            &l, &e) == 0);
	char *env[] = {"A=1 2", "B="};
	CHECK_STR(expanded(&l.v[0], env, 2), "/bin/echo|$A|${A}");
	CHECK_STR(expanded(&l.v[1], env, 2), "/bin/echo|1|2|x1 2|1 2|1 2y|$A||$|a$|${unterminated");
	unit_cmds_clear(&l);
}

TEST(units_cmd_refused)
{
	struct unit_cmds l = {0};
	struct err e = {0};
	const char *bad[] = {
	    "",
	    "   ",
	    "/bin/echo 'unterminated",
	    "/bin/echo \"unterminated",
	    "/bin/echo trailing\\",
	    "/bin/echo \\q",
	    "/bin/echo \\x0",
	    "/bin/echo \\x00",
	    "/bin/echo \\000",
	    "/bin/echo \\ud800",
	    "bin/echo",
	    "./echo",
	    "/bin/../echo",
	    "/bin/",
	    "-",
	    "- /bin/echo",
	    "--/bin/echo",
	    "+!/bin/echo",
	    "!!!/bin/echo",
	    "@/bin/echo",
	    "/bin/a ; ; /bin/b",
	    "; /bin/b",
	    "/bin/echo %q",
	    "/bin/echo %y",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		int r = parse(bad[i], "a.service", &l, &e);
		if (r != -EINVAL || l.n != 0 || !e.msg[0])
			printf("    refused? \"%s\": %d %s\n", bad[i], r, e.msg);
		CHECK(r == -EINVAL && l.n == 0 && e.msg[0]);
	}
	/* A ';' ending the value ends the last command. */
	CHECK(parse("/bin/a ;", "a.service", &l, &e) == 0 && l.n == 1);
	unit_cmds_clear(&l);
	CHECK(parse("/bin/echo %q", "a.service", &l, &e) == -EINVAL && strstr(e.msg, "%q"));
	/* '%' at the end stays, as systemd keeps it. */
	CHECK(parse("/bin/echo 100%", "a.service", &l, &e) == 0 && l.n == 1);
	CHECK_STR(l.v[0].argv[1], "100%");
	unit_cmds_clear(&l);

	/* Bounds: 300 words, 1 MB values, too many commands. */
	char *big = malloc(1 << 20);
	strcpy(big, "/bin/echo");
	for (int i = 0; i < 300; i++)
		strcat(big, " w");
	CHECK(parse(big, "a.service", &l, &e) == -E2BIG && l.n == 0);
	memset(big, 'a', (1 << 20) - 1);
	big[0] = '/';
	big[(1 << 20) - 1] = '\0';
	CHECK(parse(big, "a.service", &l, &e) == -E2BIG && l.n == 0);
	strcpy(big, "/bin/a");
	for (int i = 0; i < UNIT_CMDS_MAX; i++)
		strcat(big, " ; /bin/b");
	CHECK(parse(big, "a.service", &l, &e) == -E2BIG && l.n == 0);
	/* %n 30000 times: more than the expansion cap. */
	strcpy(big, "/bin/echo ");
	for (int i = 0; i < 30000; i++)
		strcat(big, "%n");
	CHECK(parse(big, "a-long-name-of-a-service-for-expansion.service", &l, &e) == -E2BIG);
	free(big);

	/* Expansion bounds: a variable of 300 words. */
	CHECK(parse("/bin/echo $MANY", "a.service", &l, &e) == 0);
	char *many = malloc(1000);
	strcpy(many, "MANY=");
	for (int i = 0; i < 300; i++)
		strcat(many, " x");
	char *env[] = {many};
	char **argv = NULL;
	CHECK(unit_cmd_expand(&l.v[0], env, 1, &argv, &e) == -E2BIG && !argv);
	free(many);
	unit_cmds_clear(&l);
}

TEST(units_env)
{
	struct unit_strv l = {0};
	struct err e = {0};
	CHECK(unit_env_assign_parse("A=1 'B=two words' \"C=x\" 1BAD=x no-eq D= E==e", &l, &e) == 0);
	CHECK(l.n == 5);
	CHECK_STR(l.v[0], "A=1");
	CHECK_STR(l.v[1], "B=two words");
	CHECK_STR(l.v[2], "C=x");
	CHECK_STR(l.v[3], "D=");
	CHECK_STR(l.v[4], "E==e");
	CHECK(unit_env_assign_parse("F=1 'G=2", &l, &e) == -EINVAL && l.n == 5);
	unit_strv_clear(&l);

	/* A Debian-like /etc/default file. */
	const char *f = "# Options to pass to sshd\n"
	                "SSHD_OPTS=\n"
	                "; comment\n"
	                "  SPACED = value with  spaces   \n"
	                "SQ='single $HOME \\n'\n"
	                "DQ=\"a \\\"q\\\" \\$x \\n\n"
	                "line2\"\n"
	                "CONT=one\\\n"
	                "two\n"
	                "ESC=a\\ b\\\\c\r\n"
	                "export EXPORTED=1\n"
	                "if [ -f /x ]; then\n"
	                "MID=a'b'\"c\"\n"
	                "LAST=end";
	size_t bad = 99;
	CHECK(unit_envfile_parse(f, strlen(f), &l, &bad, &e) == 0);
	CHECK_EQ(bad, 2);
	CHECK(l.n == 8);
	if (l.n == 8) {
		CHECK_STR(l.v[0], "SSHD_OPTS=");
		CHECK_STR(l.v[1], "SPACED=value with  spaces");
		CHECK_STR(l.v[2], "SQ=single $HOME \\n");
		CHECK_STR(l.v[3], "DQ=a \"q\" $x \\n\nline2");
		CHECK_STR(l.v[4], "CONT=onetwo");
		CHECK_STR(l.v[5], "ESC=a b\\c");
		CHECK_STR(l.v[6], "MID=a'b'\"c\"");
		CHECK_STR(l.v[7], "LAST=end");
	}
	unit_strv_clear(&l);
	CHECK(unit_envfile_parse("A='open\n", 8, &l, &bad, &e) == 0 && bad == 1 && l.n == 0);
	CHECK(unit_envfile_parse("A=\0B", 4, &l, &bad, &e) == -EINVAL);
	CHECK(unit_envfile_parse("", 0, &l, &bad, &e) == 0 && bad == 0 && l.n == 0);
	char *big = malloc(UNIT_ENVFILE_MAX + 2);
	memset(big, 'a', UNIT_ENVFILE_MAX + 1);
	CHECK(unit_envfile_parse(big, UNIT_ENVFILE_MAX + 1, &l, &bad, &e) == -EFBIG);
	/* One line of 256K - 1 bytes is fine; 300 assignments are too many. */
	big[0] = 'A', big[1] = '=';
	CHECK(unit_envfile_parse(big, UNIT_ENVFILE_MAX, &l, &bad, &e) == 0 && l.n == 1);
	unit_strv_clear(&l);
	size_t k = 0;
	for (int i = 0; i < 300; i++)
		k += (size_t)sprintf(big + k, "V%d=%d\n", i, i);
	CHECK(unit_envfile_parse(big, k, &l, &bad, &e) == -E2BIG && l.n == 0);
	free(big);
}

TEST(units_specifiers)
{
	struct unit_name n;
	CHECK(unit_name_parse("foo@a-b\\x20c.service", &n, NULL) == 0);
	struct unit_spec_ctx ctx = {.name = &n, .machine_id = "abc", .kernel_release = "6.1.0"};
	char *s = NULL;
	struct err e = {0};
	CHECK(
	    unit_specifiers_expand("%n %N %p %P %i %I %j %f %m %v %H %b %% %u %U %g %G %h %S %C %L "
	                           "%E %T %V %t",
	                           &ctx, &s, &e) == 0);
	CHECK_STR(s, "foo@a-b\\x20c.service foo@a-b\\x20c foo foo a-b\\x20c a/b c foo /a/b c abc "
	             "6.1.0   % root 0 root 0 /root /var/lib /var/cache /var/log /etc /tmp "
	             "/var/tmp /run");
	free(s);
	CHECK(unit_specifiers_expand("no specifiers", NULL, &s, &e) == 0);
	CHECK_STR(s, "no specifiers");
	free(s);
	CHECK(unit_specifiers_expand("%Z", &ctx, &s, &e) == -EINVAL && strstr(e.msg, "%Z"));
	CHECK(unit_specifiers_expand("%i", NULL, &s, &e) == 0);
	CHECK_STR(s, "");
	free(s);
}
