/* units/syscalls.c: SystemCallFilter= and RestrictAddressFamilies= as the
 * profile text cells reads — systemd's allow/deny rules, its @groups
 * (nested), per-name errnos, families on socket(2) — each profile parsed
 * and compiled to BPF by cells as a service's start would. */
#include "cells/cells-int.h"
#include "unit.h"
#include "units/units.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void no_diag(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	(void)file;
	(void)line;
	(void)fmt;
	++*(int *)data;
}

/* A unit from "Key=value" lines of its [Service] section. */
static struct unit_def *def_of(int *diags, ...)
{
	struct unit_name n;
	struct unit_def *d = NULL;
	if (unit_name_parse("t.service", &n, NULL) < 0 || unit_def_new(&n, &d) < 0)
		return NULL;
	struct unit_spec_ctx ctx = {.name = &d->name, .hostname = "host"};
	va_list ap;
	va_start(ap, diags);
	for (const char *kv; (kv = va_arg(ap, const char *));) {
		char key[64];
		const char *eq = strchr(kv, '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		struct unit_assign a = {
		    .section = "Service", .key = key, .value = eq + 1, .file = "t", .line = 1};
		unit_def_apply(d, &a, &ctx, no_diag, diags);
	}
	va_end(ap);
	return d;
}

/* The line for NAME in a profile ("" when none). */
static const char *line_of(const char *text, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && p[n] == ' ') {
			snprintf(buf, size, "%.*s", (int)strcspn(p, "\n"), p);
			return buf;
		}
	return "";
}

/* cells takes it: parsed, compiled. */
static bool cells_take(const char *text)
{
	struct exec_sc_profile *p = calloc(1, sizeof(*p));
	struct sock_fprog prog = {0};
	struct err err = {0};
	bool ok = p && exec_sc_parse(text, p, &err) == 0 && exec_sc_build(p, 0, &prog, &err) == 0;
	if (!ok)
		fprintf(stderr, "cells refused the profile: %s\n", err.msg);
	free(prog.filter);
	free(p);
	return ok;
}

TEST(units_syscall_allow_list)
{
	int diags = 0;
	char b[128];
	char *text = NULL;
	/* Debian's usual shape: @system-service, less privileged calls. */
	struct unit_def *d =
	    def_of(&diags, "SystemCallFilter=@system-service",
	           "SystemCallFilter=~@privileged @resources", "SystemCallErrorNumber=EPERM", NULL);
	CHECK(d);
	CHECK_EQ(diags, 0);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(text);
	CHECK(strstr(text, "default errno 1\n"));
	CHECK_STR(line_of(text, "read", b, sizeof(b)), "read allow");
	CHECK_STR(line_of(text, "execve", b, sizeof(b)), "execve allow"); /* @default */
	CHECK_STR(line_of(text, "epoll_wait", b, sizeof(b)), "epoll_wait allow");
	CHECK_STR(line_of(text, "reboot", b, sizeof(b)), "");      /* @privileged's @reboot */
	CHECK_STR(line_of(text, "chown", b, sizeof(b)), "");       /* @privileged's @chown */
	CHECK_STR(line_of(text, "setpriority", b, sizeof(b)), ""); /* @resources */
	CHECK_STR(line_of(text, "mount", b, sizeof(b)), "");       /* never in it */
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);

	/* A plain list gets @default; kill is the default action. */
	d = def_of(&diags, "SystemCallFilter=read write", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "default kill\n"));
	CHECK_STR(line_of(text, "exit_group", b, sizeof(b)), "exit_group allow");
	CHECK_STR(line_of(text, "write", b, sizeof(b)), "write allow");
	CHECK_STR(line_of(text, "open", b, sizeof(b)), "");
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);

	/* A group kin does not know: no filter rather than a narrower one. */
	d = def_of(&diags, "SystemCallFilter=@system-service @no-such-group", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(!text);
	unit_def_free(d);
	/* Neither directive: nothing. */
	d = def_of(&diags, "Nice=1", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(!text);
	unit_def_free(d);
}

TEST(units_syscall_deny_list)
{
	int diags = 0;
	char b[128];
	char *text = NULL;
	struct unit_def *d =
	    def_of(&diags, "SystemCallFilter=~@mount @swap reboot:EACCES",
	           "SystemCallFilter=umount2", "SystemCallErrorNumber=EPERM", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "default allow\n"));
	CHECK_STR(line_of(text, "mount", b, sizeof(b)), "mount errno 1");
	CHECK_STR(line_of(text, "swapon", b, sizeof(b)), "swapon errno 1");
	CHECK_STR(line_of(text, "reboot", b, sizeof(b)), "reboot errno 13"); /* its own errno */
	CHECK_STR(line_of(text, "umount2", b, sizeof(b)), "");               /* allowed again */
	CHECK_STR(line_of(text, "read", b, sizeof(b)), "");
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);
	/* A group nested in a group: @privileged has @clock. */
	d = def_of(&diags, "SystemCallFilter=~@privileged", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK_STR(line_of(text, "settimeofday", b, sizeof(b)), "settimeofday kill");
	CHECK_STR(line_of(text, "init_module", b, sizeof(b)), "init_module kill");
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);
}

TEST(units_syscall_families)
{
	int diags = 0;
	char b[128];
	char *text = NULL;
	/* Alone: socket(2) refused for every family but those. */
	struct unit_def *d =
	    def_of(&diags, "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "default allow\n"));
	CHECK(strstr(text, "socket errno 97 arg0 eq 16\n")); /* AF_NETLINK */
	CHECK(strstr(text, "socket errno 97 arg0 ge 46\n"));
	CHECK(!strstr(text, "arg0 eq 1\n"));
	CHECK(!strstr(text, "arg0 eq 10\n"));
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);
	/* With an allow-list: socket allowed per family, refused for others. */
	d = def_of(&diags, "SystemCallFilter=@system-service", "RestrictAddressFamilies=AF_UNIX",
	           NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "socket allow arg0 eq 1\n"));
	CHECK(strstr(text, "socket errno 97 arg0 eq 2\n"));
	CHECK(strstr(text, "socket errno 97 arg0 ge 46\n"));
	CHECK(!strstr(text, "socket allow\n"));
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);
	/* A deny-list of families, and "none". */
	d = def_of(&diags, "RestrictAddressFamilies=~AF_PACKET AF_NOSUCH", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "socket errno 97 arg0 eq 17\n"));
	CHECK(!strstr(text, "arg0 eq 2\n"));
	CHECK(cells_take(text));
	free(text);
	unit_def_free(d);
	d = def_of(&diags, "RestrictAddressFamilies=none", NULL);
	CHECK_EQ(unit_syscall_profile(d, &text), 0);
	CHECK(strstr(text, "socket errno 97 arg0 eq 1\n"));
	CHECK(cells_take(text));
	CHECK_STR(line_of(text, "socket", b, sizeof(b)), "socket errno 97 arg0 eq 0");
	free(text);
	unit_def_free(d);
}
