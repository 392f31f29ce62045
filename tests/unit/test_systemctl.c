/* The systemctl personality without a kin: its command line, the verbs it
 * knows and how each is translated, what `show` prints, the exit codes of
 * its queries, and the status and list output `kin ctl service` shares. */
#include "unit.h"

#include "ctl/ctl-int.h"

#include <stdlib.h>

static int parse(struct ctl_sc_args *a, char *line)
{
	static char copy[512];
	char *argv[32], *save = NULL, why[256];
	int argc = 0;
	snprintf(copy, sizeof(copy), "%s", line);
	for (char *t = strtok_r(copy, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	return ctl_sc_parse(argc, argv, a, why, sizeof(why));
}

TEST(systemctl_parse)
{
	static struct ctl_sc_args a;
	/* deb-systemd-helper's preset call */
	CHECK_EQ(
	    parse(&a, "systemctl --root=/ --system --preset-mode=enable-only preset ssh.service"),
	    CTL_OK);
	CHECK_STR(a.verb, "preset");
	CHECK_STR(a.root, "/");
	CHECK_STR(a.preset_mode, "enable-only");
	CHECK(a.nargs == 1 && !strcmp(a.args[0], "ssh.service"));
	/* deb-systemd-invoke's */
	CHECK_EQ(parse(&a, "systemctl --system is-enabled -- ssh.service"), CTL_OK);
	CHECK_STR(a.verb, "is-enabled");
	CHECK(a.nargs == 1 && !strcmp(a.args[0], "ssh.service"));
	CHECK_EQ(parse(&a, "systemctl --system --quiet is-active -- cron.service"), CTL_OK);
	CHECK(a.quiet && a.nargs == 1);
	CHECK_EQ(parse(&a, "systemctl --quiet --system restart a.service b.service"), CTL_OK);
	CHECK(a.nargs == 2 && !strcmp(a.args[1], "b.service"));
	CHECK_EQ(parse(&a, "systemctl --no-legend --quiet list-units user@*"), CTL_OK);
	CHECK(a.no_legend && a.nargs == 1 && !strcmp(a.verb, "list-units"));
	/* invoke-rc.d's */
	CHECK_EQ(parse(&a, "systemctl show --value --property SourcePath cron.service"), CTL_OK);
	CHECK(a.value && a.nprops == 1 && !strcmp(a.props[0], "SourcePath"));
	CHECK_EQ(parse(&a, "systemctl -p LoadState show cron.service"), CTL_OK);
	CHECK(a.nprops == 1 && !strcmp(a.verb, "show"));
	CHECK_EQ(parse(&a, "systemctl --signal=KILL kill cron.service"), CTL_OK);
	CHECK_STR(a.signal, "KILL");
	CHECK_EQ(parse(&a, "systemctl status --full --no-pager cron.service"), CTL_OK);
	CHECK(a.full && a.lines == 10);
	/* -p lists, options after the verb, -- */
	CHECK_EQ(parse(&a, "systemctl show ssh -p MainPID,ActiveState --property=Id"), CTL_OK);
	CHECK(a.nprops == 3 && !strcmp(a.props[1], "ActiveState") && !strcmp(a.props[2], "Id"));
	CHECK_EQ(parse(&a, "systemctl enable --now -- --weird.service"), CTL_OK);
	CHECK(a.now && a.nargs == 1 && !strcmp(a.args[0], "--weird.service"));
	CHECK_EQ(parse(&a, "systemctl -n 3 -a -t service --state=failed list-units"), CTL_OK);
	CHECK(a.lines == 3 && a.all && !strcmp(a.type, "service") && !strcmp(a.state, "failed"));
	CHECK_EQ(parse(&a, "systemctl --runtime --no-block --no-ask-password --force start x"),
	         CTL_OK);
	CHECK(a.runtime && a.no_block && a.force);
	CHECK_EQ(parse(&a, "systemctl"), CTL_OK);
	CHECK(a.verb == NULL);
	/* refused: unknown options, missing values, bad values */
	CHECK_EQ(parse(&a, "systemctl --frobnicate start x"), CTL_USAGE);
	CHECK_EQ(parse(&a, "systemctl start x --type"), CTL_USAGE);
	CHECK_EQ(parse(&a, "systemctl --preset-mode=sometimes preset x"), CTL_USAGE);
	CHECK_EQ(parse(&a, "systemctl -n lots status x"), CTL_USAGE);
	CHECK_EQ(parse(&a, "systemctl --lines=1001 status x"), CTL_USAGE);
}

TEST(systemctl_parse_bounds)
{
	static struct ctl_sc_args a;
	static char line[8192], why[256];
	char *argv[80];
	int argc = 0;
	argv[argc++] = "systemctl";
	argv[argc++] = "start";
	for (int i = 0; i < 70; i++)
		argv[argc++] = "x.service";
	argv[argc] = NULL;
	CHECK_EQ(ctl_sc_parse(argc, argv, &a, why, sizeof(why)), CTL_USAGE);
	CHECK(strstr(why, "at most 64") != NULL);
	/* -p with more names than fit */
	memset(line, 'A', 5000);
	line[5000] = '\0';
	char *argv2[] = {"systemctl", "-p", line, "show", "x", NULL};
	CHECK_EQ(ctl_sc_parse(5, argv2, &a, why, sizeof(why)), CTL_USAGE);
}

TEST(systemctl_verbs)
{
	/* Every verb Debian's scripts call, and what it becomes. */
	static const struct {
		const char *verb, *job;
		bool offline;
	} want[] = {
	    {"start", "start", false},
	    {"stop", "stop", false},
	    {"restart", "restart", false},
	    {"reload", "reload", false},
	    {"try-restart", "try-restart", false},
	    {"condrestart", "try-restart", false},
	    {"reload-or-restart", "reload-or-restart", false},
	    {"try-reload-or-restart", "try-reload-or-restart", false},
	    {"force-reload", "try-reload-or-restart", false},
	    {"enable", "enable", true},
	    {"disable", "disable", true},
	    {"reenable", "enable", true},
	    {"preset", "enable", true},
	    {"mask", "mask", true},
	    {"unmask", "unmask", true},
	    {"is-enabled", NULL, true},
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct ctl_sc_verb *v = ctl_sc_verb_find(want[i].verb);
		CHECK(v != NULL);
		if (!v)
			continue;
		if (want[i].job)
			CHECK_STR(v->job, want[i].job);
		CHECK_EQ(v->offline, want[i].offline);
		CHECK_EQ(v->min_args, 1);
	}
	static const char *const also[] = {"is-active",
	                                   "is-failed",
	                                   "status",
	                                   "show",
	                                   "cat",
	                                   "list-units",
	                                   "list-unit-files",
	                                   "is-system-running",
	                                   "daemon-reload",
	                                   "daemon-reexec",
	                                   "kill"};
	for (size_t i = 0; i < ARRAY_SIZE(also); i++)
		CHECK(ctl_sc_verb_find(also[i]) != NULL);
	CHECK(ctl_sc_verb_find("isolate") == NULL);
	CHECK(ctl_sc_verb_find("") == NULL);
}

static Kin__V1__UnitStatus *sample(void)
{
	static Kin__V1__UnitStatus u;
	kin__v1__unit_status__init(&u);
	u.name = "ssh.service";
	u.description = "OpenBSD Secure Shell server";
	u.load_state = "loaded";
	u.active_state = "active";
	u.sub_state = "running";
	u.result = "success";
	u.fragment = "/lib/systemd/system/ssh.service";
	u.unit_file_state = "enabled";
	u.cell = "system.slice/ssh.service";
	u.main_pid = 4242;
	u.restarts = 2;
	u.has_memory = true;
	u.memory_current = 4718592;
	u.type = "service";
	u.service_type = "notify";
	u.restart = "on-failure";
	u.can_reload = true;
	return &u;
}

static char *show(const Kin__V1__UnitStatus *u, const char *const *props, size_t n, bool value)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ctl_sc_show(f, u, props, n, value);
	fclose(f);
	return buf;
}

TEST(systemctl_show)
{
	Kin__V1__UnitStatus *u = sample();
	static const char *const p1[] = {"MainPID"};
	char *s = show(u, p1, 1, true);
	CHECK_STR(s, "4242\n");
	free(s);
	static const char *const p2[] = {"ActiveState", "SubState", "NoSuchProperty", "Id"};
	s = show(u, p2, 4, false);
	CHECK_STR(s, "ActiveState=active\nSubState=running\nId=ssh.service\n");
	free(s);
	static const char *const p3[] = {
	    "LoadState", "CanReload", "SourcePath",    "UnitFileState", "ControlGroup", "Type",
	    "Restart",   "NRestarts", "MemoryCurrent", "TasksCurrent",  "ExecMainCode"};
	s = show(u, p3, ARRAY_SIZE(p3), false);
	CHECK_STR(s,
	          "LoadState=loaded\nCanReload=yes\nSourcePath=\nUnitFileState=enabled\n"
	          "ControlGroup=/system.slice/ssh.service\nType=notify\nRestart=on-failure\n"
	          "NRestarts=2\nMemoryCurrent=4718592\nTasksCurrent=[not set]\nExecMainCode=0\n");
	free(s);
	/* an ended main process: systemd's code and status */
	u->exited = true;
	u->exit_code = 1;
	static const char *const p4[] = {"ExecMainCode", "ExecMainStatus", "MainPID"};
	s = show(u, p4, 3, true);
	CHECK_STR(s, "1\n1\n0\n");
	free(s);
	u->exit_signal = 9;
	s = show(u, p4, 2, true);
	CHECK_STR(s, "2\n9\n");
	free(s);
	/* unknown only: nothing at all; none asked: every known one */
	static const char *const p5[] = {"Frobnication"};
	s = show(u, p5, 1, true);
	CHECK_STR(s, "");
	free(s);
	s = show(u, NULL, 0, false);
	CHECK(strstr(s, "\nMainPID=") &&
	      strstr(s, "\nFragmentPath=/lib/systemd/system/ssh.service\n"));
	free(s);
	u->exited = false;
	u->exit_code = u->exit_signal = 0;
}

TEST(systemctl_codes)
{
	CHECK_EQ(ctl_sc_is_active_code("active"), 0);
	CHECK_EQ(ctl_sc_is_active_code("reloading"), 0);
	CHECK_EQ(ctl_sc_is_active_code("inactive"), 3);
	CHECK_EQ(ctl_sc_is_active_code("failed"), 3);
	CHECK_EQ(ctl_sc_is_active_code("activating"), 3);
	CHECK_EQ(ctl_sc_is_enabled_code("enabled"), 0);
	CHECK_EQ(ctl_sc_is_enabled_code("static"), 0);
	CHECK_EQ(ctl_sc_is_enabled_code("alias"), 0);
	CHECK_EQ(ctl_sc_is_enabled_code("disabled"), 1);
	CHECK_EQ(ctl_sc_is_enabled_code("masked"), 1);
	CHECK_EQ(ctl_sc_is_enabled_code("linked"), 1);
	Kin__V1__UnitStatus *u = sample();
	CHECK_EQ(ctl_sc_status_code(u), 0);
	u->active_state = "inactive";
	CHECK_EQ(ctl_sc_status_code(u), 3);
	u->load_state = "not-found";
	CHECK_EQ(ctl_sc_status_code(u), 4);
	u->load_state = "loaded";
	u->active_state = "active";

	Kin__V1__UnitStatus a = *u, b = *u;
	Kin__V1__UnitStatus *v[] = {&a, &b};
	Kin__V1__ListUnitsResponse m = KIN__V1__LIST_UNITS_RESPONSE__INIT;
	m.units = v;
	m.n_units = 2;
	CHECK_STR(ctl_sc_system_state(&m), "running");
	b.active_state = "failed";
	CHECK_STR(ctl_sc_system_state(&m), "degraded");
	a.job = "start";
	CHECK_STR(ctl_sc_system_state(&m), "starting");
}

TEST(systemctl_names)
{
	char buf[CTL_UNIT_NAME_MAX + 1];
	CHECK_STR(ctl_unit_name("ssh", buf, sizeof(buf)), "ssh.service");
	CHECK_STR(ctl_unit_name("ssh.service", buf, sizeof(buf)), "ssh.service");
	CHECK_STR(ctl_unit_name("dbus.socket", buf, sizeof(buf)), "dbus.socket");
	CHECK_STR(ctl_unit_name("getty@tty1", buf, sizeof(buf)), "getty@tty1.service");
	CHECK_STR(ctl_unit_name("multi-user.target", buf, sizeof(buf)), "multi-user.target");
	CHECK_STR(ctl_unit_name("nginx.conf", buf, sizeof(buf)), "nginx.conf.service");
	/* too long: passed as given, for kin to refuse by name */
	static char big[10240];
	memset(big, 'a', sizeof(big) - 1);
	CHECK(ctl_unit_name(big, buf, sizeof(buf)) == big);
}

static char *print_status(const Kin__V1__UnitStatusResponse *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ctl_unit_print_status(f, m);
	fclose(f);
	return buf;
}

TEST(systemctl_status_text)
{
	Kin__V1__UnitStatusResponse m = KIN__V1__UNIT_STATUS_RESPONSE__INIT;
	char *log[] = {"Server listening on 0.0.0.0 port 22.", "Accepted publickey for root"};
	m.unit = sample();
	m.log = log;
	m.n_log = 2;
	char *s = print_status(&m);
	CHECK(!strncmp(s, "● ssh.service - OpenBSD Secure Shell server\n", 45));
	CHECK(strstr(s, "     Loaded: loaded (/lib/systemd/system/ssh.service; enabled)\n"));
	CHECK(strstr(s, "     Active: active (running)\n"));
	CHECK(strstr(s, "   Main PID: 4242\n"));
	CHECK(strstr(s, "     Memory: 4.5M\n"));
	CHECK(strstr(s, "     CGroup: /system.slice/ssh.service\n"));
	CHECK(strstr(s, "\n\nServer listening on 0.0.0.0 port 22.\nAccepted publickey for root\n"));
	free(s);
	m.unit->active_state = "failed";
	m.unit->sub_state = "failed";
	m.unit->result = "exit-code";
	m.unit->exited = true;
	m.unit->exit_code = 255;
	m.n_log = 0;
	s = print_status(&m);
	CHECK(!strncmp(s, "× ssh.service", 14));
	CHECK(strstr(s, "     Active: failed (failed) (Result: exit-code)\n"));
	CHECK(strstr(s, "   Main PID: 4242 (code=exited, status=255/FAILURE)\n"));
	free(s);
	m.unit->load_state = "not-found";
	s = print_status(&m);
	CHECK(strstr(s, "     Loaded: not-found (Reason: Unit ssh.service not found.)\n"));
	free(s);
	*m.unit = *sample();
	m.unit->active_state = "active";
	m.unit->sub_state = "running";
	m.unit->result = "success";
	m.unit->exited = false;
	m.unit->exit_code = 0;
	m.unit->load_state = "loaded";

	char since[160];
	ctl_unit_since(1000000ull * 100, 1000000ull * (100 + 2 * 3600 + 3 * 60 + 4), since,
	               sizeof(since));
	CHECK(strstr(since, "; 2h 3min ago") != NULL);
	ctl_unit_since(1000000ull * 100, 1000000ull * (100 + 86400 + 7200), since, sizeof(since));
	CHECK(strstr(since, "; 1 day 2h ago") != NULL);
}

TEST(systemctl_changes_text)
{
	Kin__V1__UnitFileChange c1 = KIN__V1__UNIT_FILE_CHANGE__INIT, c2 = c1;
	c1.type = "created";
	c1.link = "/etc/systemd/system/multi-user.target.wants/ssh.service";
	c1.target = "/lib/systemd/system/ssh.service";
	c2.type = "removed";
	c2.link = "/etc/systemd/system/sshd.service";
	c2.target = "";
	Kin__V1__UnitFileChange *v[] = {&c1, &c2};
	Kin__V1__UnitFilesResponse m = KIN__V1__UNIT_FILES_RESPONSE__INIT;
	m.changes = v;
	m.n_changes = 2;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ctl_unit_print_changes(f, &m);
	fclose(f);
	CHECK_STR(buf, "Created symlink /etc/systemd/system/multi-user.target.wants/ssh.service → "
	               "/lib/systemd/system/ssh.service.\n"
	               "Removed \"/etc/systemd/system/sshd.service\".\n");
	free(buf);
}
