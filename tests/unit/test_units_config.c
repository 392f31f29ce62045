/* units/ directive table: assignments applied one by one to a unit_def
 * for every directive family — systemd's defaults, lists and their reset
 * by an empty value, old names, bad values dropped with one diag, unknown
 * and not-acted-on directives counted — and, when KIN_DEBIAN_UNITS names
 * a tree scripts/debian-units.sh made, Debian's own unit files. */
#include "unit.h"
#include "units/units.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>

struct diags {
	unsigned n;
	char last[512];
	char file[64];
	unsigned line;
};

static void diag_collect(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	struct diags *d = data;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->last, sizeof(d->last), fmt, ap);
	va_end(ap);
	snprintf(d->file, sizeof(d->file), "%s", file ? file : "");
	d->line = line;
	d->n++;
}

static struct unit_def *def_new(const char *name)
{
	struct unit_name n;
	struct unit_def *d = NULL;
	if (unit_name_parse(name, &n, NULL) < 0 || unit_def_new(&n, &d) < 0)
		return NULL;
	return d;
}

/* One assignment from "Section", "Key", "value" at test.conf:line. */
static int set(struct unit_def *d, struct diags *dg, const char *section, const char *key,
               const char *value)
{
	static unsigned line;
	struct unit_spec_ctx ctx = {.name = &d->name, .hostname = "host"};
	struct unit_assign a = {
	    .section = section, .key = key, .value = value, .file = "test.conf", .line = ++line};
	return unit_def_apply(d, &a, &ctx, diag_collect, dg);
}

#define SVC(k, v)  set(d, &dg, "Service", k, v)
#define UNIT(k, v) set(d, &dg, "Unit", k, v)

TEST(units_config_defaults)
{
	struct unit_def *d = def_new("getty@tty1.service");
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK_STR(d->name.full, "getty@tty1.service");
	CHECK(d->name.instance && d->name.instance == d->name.instance_buf);
	CHECK_STR(d->name.instance, "tty1");
	CHECK(d->default_dependencies && d->service.type == UNIT_SVC_SIMPLE);
	CHECK_EQ(d->service.timeout_start_us, 90000000ull);
	CHECK_EQ(d->service.timeout_stop_us, 90000000ull);
	CHECK_EQ(d->service.restart_us, 100000);
	CHECK(d->service.kill_mode == UNIT_KILL_CONTROL_GROUP);
	CHECK(d->service.kill_signal == SIGTERM && d->service.final_kill_signal == SIGKILL);
	CHECK(d->service.send_sigkill && !d->service.send_sighup && d->service.guess_main_pid);
	CHECK(d->service.notify_access == UNIT_NOTIFY_NONE &&
	      d->service.restart == UNIT_RESTART_NO);
	CHECK_EQ(d->start_limit_interval_us, 10000000ull);
	CHECK_EQ(d->start_limit_burst, 5);
	CHECK(d->socket.socket_mode == 0666 && d->socket.directory_mode == 0755);
	CHECK(d->socket.backlog == SOMAXCONN && d->socket.bind_ipv6_only == -1);
	CHECK(d->exec.dir_modes[UNIT_DIR_RUNTIME] == 0755 &&
	      d->exec.dir_modes[UNIT_DIR_CONFIG] == 0755);
	CHECK(!d->exec.umask_set && !d->description && d->ignored == 0 && d->res.set == 0);
	unit_def_free(d);
	unit_def_free(NULL);
}

TEST(units_config_unit)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("web@blue.service");
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(UNIT("Description", "Web %i on %H") == 0);
	CHECK_STR(d->description, "Web blue on host");
	UNIT("Documentation", "man:a(8) https://b");
	UNIT("Documentation", "man:c(1)");
	CHECK(d->documentation.n == 3);
	UNIT("Documentation", "");
	CHECK(d->documentation.n == 0);
	UNIT("After", "network.target  a.service");
	UNIT("After", "b@%i.service");
	CHECK(d->deps[UNIT_DEP_AFTER].n == 3 &&
	      unit_strv_contains(&d->deps[UNIT_DEP_AFTER], "b@blue.service"));
	/* an empty value does not reset dependencies (nor does it in systemd) */
	UNIT("After", "");
	CHECK_EQ(d->deps[UNIT_DEP_AFTER].n, 3);
	/* a bad name is reported, the others on the line kept */
	dg.n = 0;
	UNIT("Wants", "good.service bad/name.service other.target");
	CHECK(d->deps[UNIT_DEP_WANTS].n == 2 && dg.n == 1 && strstr(dg.last, "bad/name"));
	static const char *const deps[] = {"Requires",  "Requisite", "BindsTo",   "PartOf",
	                                   "Conflicts", "Before",    "OnFailure", "Upholds"};
	for (size_t i = 0; i < ARRAY_SIZE(deps); i++)
		UNIT(deps[i], "x.service");
	for (int k = 0; k < UNIT_DEP_COUNT; k++)
		CHECK(d->deps[k].n >= 1);
	UNIT("RequiresMountsFor", "/var/lib /srv/%i");
	CHECK(d->requires_mounts_for.n == 2 &&
	      strcmp(d->requires_mounts_for.v[1], "/srv/blue") == 0);
	UNIT("DefaultDependencies", "no");
	UNIT("RefuseManualStart", "yes");
	UNIT("RefuseManualStop", "true");
	UNIT("StopWhenUnneeded", "1");
	UNIT("AllowIsolate", "on");
	UNIT("IgnoreOnIsolate", "yes");
	CHECK(!d->default_dependencies && d->refuse_manual_start && d->refuse_manual_stop);
	CHECK(d->stop_when_unneeded && d->allow_isolate && d->ignore_on_isolate);
	UNIT("JobTimeoutSec", "5min");
	UNIT("StartLimitIntervalSec", "30s");
	UNIT("StartLimitBurst", "3");
	CHECK(d->job_timeout_us == 300000000ull && d->start_limit_interval_us == 30000000ull &&
	      d->start_limit_burst == 3);
	/* the old [Service] spellings */
	SVC("StartLimitInterval", "1min");
	SVC("StartLimitBurst", "7");
	CHECK(d->start_limit_interval_us == 60000000ull && d->start_limit_burst == 7);
	CHECK_EQ(d->ignored, 1);
	unit_def_free(d);
}

TEST(units_config_conditions)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("ssh.service");
	CHECK(d != NULL);
	if (!d)
		return;
	UNIT("ConditionPathExists", "!/etc/ssh/sshd_not_to_be_run");
	UNIT("ConditionPathExists", "|/a");
	UNIT("ConditionPathIsDirectory", "| ! /run/%n");
	UNIT("AssertPathExists", "/etc/ssh");
	CHECK_EQ(d->nconds, 4);
	if (d->nconds == 4) {
		CHECK(d->conds[0].type == UNIT_COND_PATH_EXISTS && d->conds[0].negate &&
		      !d->conds[0].trigger && !d->conds[0].assert);
		CHECK_STR(d->conds[0].arg, "/etc/ssh/sshd_not_to_be_run");
		CHECK(d->conds[1].trigger && !d->conds[1].negate);
		CHECK(d->conds[2].type == UNIT_COND_PATH_IS_DIRECTORY && d->conds[2].trigger &&
		      d->conds[2].negate);
		CHECK_STR(d->conds[2].arg, "/run/ssh.service");
		CHECK(d->conds[3].assert);
	}
	/* an empty value drops the conditions, not the asserts */
	UNIT("ConditionPathExists", "");
	CHECK(d->nconds == 1 && d->conds[0].assert);
	UNIT("ConditionVirtualization", "!container");
	UNIT("ConditionKernelCommandLine", "!nossh");
	CHECK_EQ(d->nconds, 3);
	/* a type kin does not know: reported, ignored */
	dg.n = 0;
	UNIT("ConditionKernelVersion", ">=5.10");
	CHECK(d->nconds == 3 && dg.n == 1 && strstr(dg.last, "ConditionKernelVersion"));
	UNIT("ConditionPathExists", "|!");
	CHECK_EQ(d->nconds, 3);
	for (int i = 0; i < UNIT_CONDS_MAX + 5; i++)
		UNIT("AssertPathExists", "/x");
	CHECK_EQ(d->nconds, UNIT_CONDS_MAX);
	unit_def_free(d);
}

TEST(units_config_service)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("ssh.service");
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(SVC("Type", "notify") == 0 && d->service.type == UNIT_SVC_NOTIFY);
	SVC("Type", "dbus");
	CHECK(d->service.type == UNIT_SVC_DBUS);
	SVC("Type", "forking");
	SVC("Type", "sometimes");
	CHECK(d->service.type == UNIT_SVC_FORKING && d->ignored == 1);
	SVC("ExecStartPre", "/usr/sbin/sshd -t");
	SVC("ExecStart", "/usr/sbin/sshd -D $SSHD_OPTS");
	SVC("ExecReload", "/usr/sbin/sshd -t");
	SVC("ExecReload", "/bin/kill -HUP $MAINPID");
	CHECK(d->service.exec_start.n == 1 && d->service.exec_reload.n == 2);
	if (d->service.exec_start.n == 1) {
		CHECK_STR(d->service.exec_start.v[0].path, "/usr/sbin/sshd");
		CHECK(d->service.exec_start.v[0].argc == 3);
	}
	SVC("ExecStart", "");
	SVC("ExecStart", "-/bin/true");
	CHECK(d->service.exec_start.n == 1 &&
	      (d->service.exec_start.v[0].flags & UNIT_CMD_IGNORE_FAILURE));
	SVC("ExecStop", "/bin/stop");
	SVC("ExecStopPost", "/bin/post");
	SVC("ExecStartPost", "/bin/started");
	SVC("ExecCondition", "/bin/cond");
	CHECK(d->service.exec_stop.n == 1 && d->service.exec_stop_post.n == 1 &&
	      d->service.exec_start_post.n == 1 && d->service.exec_condition.n == 1);
	for (int i = 0; i < UNIT_CMDS_MAX + 3; i++)
		SVC("ExecStartPost", "/bin/more");
	CHECK_EQ(d->service.exec_start_post.n, UNIT_CMDS_MAX);
	SVC("Restart", "on-failure");
	SVC("RestartSec", "5");
	CHECK(d->service.restart == UNIT_RESTART_ON_FAILURE && d->service.restart_us == 5000000);
	SVC("RestartPreventExitStatus", "255 SIGKILL");
	SVC("SuccessExitStatus", "1 2 KILL 15");
	SVC("RestartForceExitStatus", "SIGHUP");
	CHECK(unit_exit_set_has(&d->service.restart_prevent, 255, 0));
	CHECK(unit_exit_set_has(&d->service.restart_prevent, 0, SIGKILL));
	CHECK(d->service.success_exit_status.ncodes == 3 &&
	      unit_exit_set_has(&d->service.success_exit_status, 0, SIGKILL));
	CHECK(unit_exit_set_has(&d->service.restart_force, 0, SIGHUP));
	SVC("SuccessExitStatus", "");
	CHECK(d->service.success_exit_status.ncodes == 0 &&
	      d->service.success_exit_status.nsignals == 0);
	SVC("TimeoutSec", "30");
	CHECK(d->service.timeout_start_us == 30000000 && d->service.timeout_stop_us == 30000000);
	SVC("TimeoutStopSec", "0");
	SVC("TimeoutStartSec", "infinity");
	SVC("TimeoutAbortSec", "10s");
	SVC("RuntimeMaxSec", "1h");
	SVC("WatchdogSec", "infinity");
	CHECK(d->service.timeout_stop_us == UNIT_INFINITY &&
	      d->service.timeout_start_us == UNIT_INFINITY);
	CHECK(d->service.timeout_abort_us == 10000000 &&
	      d->service.runtime_max_us == 3600000000ull && d->service.watchdog_us == 0);
	SVC("KillMode", "process");
	SVC("KillSignal", "SIGINT");
	SVC("RestartKillSignal", "HUP");
	SVC("FinalKillSignal", "9");
	SVC("SendSIGKILL", "no");
	SVC("SendSIGHUP", "yes");
	CHECK(d->service.kill_mode == UNIT_KILL_PROCESS && d->service.kill_signal == SIGINT &&
	      d->service.restart_kill_signal == SIGHUP && d->service.final_kill_signal == SIGKILL);
	CHECK(!d->service.send_sigkill && d->service.send_sighup);
	unsigned before = d->ignored;
	SVC("KillSignal", "SIGNOPE");
	CHECK(d->service.kill_signal == SIGINT && d->ignored == before + 1);
	SVC("NotifyAccess", "all");
	SVC("RemainAfterExit", "yes");
	SVC("GuessMainPID", "no");
	SVC("NonBlocking", "yes");
	CHECK(d->service.notify_access == UNIT_NOTIFY_ALL && d->service.remain_after_exit &&
	      !d->service.guess_main_pid && d->service.non_blocking);
	SVC("PIDFile", "%p.pid");
	CHECK_STR(d->service.pid_file, "/run/ssh.pid");
	SVC("PIDFile", "/var/run/nginx.pid");
	CHECK_STR(d->service.pid_file, "/run/nginx.pid");
	SVC("BusName", "org.freedesktop.Foo");
	CHECK_STR(d->service.bus_name, "org.freedesktop.Foo");
	SVC("Sockets", "a.socket b.socket");
	CHECK(d->service.sockets.n == 2);
	SVC("FileDescriptorStoreMax", "4");
	CHECK_STR(d->service.file_descriptor_store, "4");
	unit_def_free(d);
}

TEST(units_config_exec)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("redis-server.service");
	CHECK(d != NULL);
	if (!d)
		return;
	struct unit_exec *e = &d->exec;
	SVC("User", "redis");
	SVC("Group", "redis");
	SVC("SupplementaryGroups", "adm disk");
	SVC("DynamicUser", "yes");
	CHECK_STR(e->user, "redis");
	CHECK(e->supplementary_groups.n == 2 && e->dynamic_user);
	SVC("WorkingDirectory", "-~");
	CHECK_STR(e->working_directory, "-~");
	SVC("WorkingDirectory", "relative");
	CHECK_STR(e->working_directory, "-~");
	SVC("RootDirectory", "/srv/root");
	SVC("UMask", "007");
	CHECK(e->umask_set && e->umask == 07);
	SVC("UMask", "0999");
	CHECK(e->umask == 07);
	SVC("Nice", "-5");
	SVC("OOMScoreAdjust", "-900");
	CHECK(e->nice_set && e->nice == -5 && e->oom_score_adjust_set &&
	      e->oom_score_adjust == -900);
	SVC("Nice", "20");
	CHECK(e->nice == -5);
	/* limits: numbers, soft:hard, infinity, sizes, µs */
	SVC("LimitNOFILE", "65536");
	SVC("LimitNOFILE", "1024:524288");
	SVC("LimitCORE", "infinity");
	SVC("LimitMEMLOCK", "64M");
	SVC("LimitRTTIME", "5s");
	SVC("LimitNICE", "-10");
	SVC("LimitCPU", "2min");
	CHECK_EQ(e->nrlimits, 6);
	for (size_t i = 0; i < e->nrlimits; i++) {
		const struct unit_rlimit *rl = &e->rlimits[i];
		if (rl->resource == RLIMIT_NOFILE)
			CHECK(rl->soft == 1024 && rl->hard == 524288);
		if (rl->resource == RLIMIT_CORE)
			CHECK(rl->soft == UNIT_INFINITY && rl->hard == UNIT_INFINITY);
		if (rl->resource == RLIMIT_MEMLOCK)
			CHECK(rl->soft == 64ull << 20);
		if (rl->resource == RLIMIT_RTTIME)
			CHECK(rl->soft == 5000000);
		if (rl->resource == RLIMIT_NICE)
			CHECK(rl->soft == 30);
		if (rl->resource == RLIMIT_CPU)
			CHECK(rl->soft == 120);
	}
	SVC("LimitNOFILE", "2:1");
	SVC("LimitCORE", "");
	CHECK_EQ(e->nrlimits, 5);
	/* environment */
	SVC("Environment", "A=1 B=%i");
	SVC("Environment", "C=3");
	CHECK(e->environment.n == 3);
	SVC("Environment", "");
	SVC("Environment", "D=4");
	CHECK(e->environment.n == 1 && strcmp(e->environment.v[0], "D=4") == 0);
	SVC("EnvironmentFile", "-/etc/default/ssh");
	SVC("EnvironmentFile", "/etc/default/other");
	SVC("EnvironmentFile", "relative");
	CHECK(e->environment_files.n == 2 &&
	      strcmp(e->environment_files.v[0], "-/etc/default/ssh") == 0);
	SVC("PassEnvironment", "TERM LANG");
	SVC("UnsetEnvironment", "X");
	CHECK(e->pass_environment.n == 2 && e->unset_environment.n == 1);
	/* stdio */
	SVC("StandardOutput", "journal+console");
	SVC("StandardError", "append:/var/log/x.log");
	SVC("StandardInput", "tty-force");
	CHECK(e->std_output == UNIT_STDIO_DEFAULT && e->std_error == UNIT_STDIO_APPEND &&
	      e->std_input == UNIT_STDIO_TTY);
	CHECK_STR(e->std_error_path, "/var/log/x.log");
	SVC("StandardOutput", "file:/tmp/o");
	SVC("StandardInput", "append:/tmp/i");
	CHECK(e->std_output == UNIT_STDIO_FILE && e->std_input == UNIT_STDIO_TTY);
	SVC("StandardOutput", "null");
	SVC("StandardError", "socket");
	CHECK(e->std_output == UNIT_STDIO_NULL && e->std_error == UNIT_STDIO_SOCKET);
	SVC("TTYPath", "/dev/tty%i");
	SVC("TTYReset", "yes");
	SVC("TTYVHangup", "yes");
	SVC("SyslogIdentifier", "redis");
	CHECK(e->tty_reset && e->tty_vhangup && e->syslog_identifier);
	/* directories */
	SVC("RuntimeDirectory", "redis redis/sub");
	SVC("RuntimeDirectoryMode", "2755");
	SVC("StateDirectory", "redis /abs ../up");
	SVC("LogsDirectory", "redis");
	SVC("CacheDirectory", "redis");
	SVC("ConfigurationDirectory", "redis");
	SVC("RuntimeDirectoryPreserve", "restart");
	CHECK(e->dirs[UNIT_DIR_RUNTIME].n == 2 && e->dir_modes[UNIT_DIR_RUNTIME] == 02755);
	CHECK(e->dirs[UNIT_DIR_STATE].n == 1 && e->dirs[UNIT_DIR_LOGS].n == 1 &&
	      e->dirs[UNIT_DIR_CACHE].n == 1 && e->dirs[UNIT_DIR_CONFIG].n == 1);
	SVC("RuntimeDirectory", "");
	CHECK(e->dirs[UNIT_DIR_RUNTIME].n == 0);
	unit_def_free(d);
}

TEST(units_config_sandbox)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("redis-server.service");
	CHECK(d != NULL);
	if (!d)
		return;
	struct unit_exec *e = &d->exec;
	/* capabilities: lines merge, '~' removes, empty is the empty set */
	SVC("CapabilityBoundingSet", "CAP_NET_BIND_SERVICE CAP_SETUID");
	SVC("CapabilityBoundingSet", "CAP_CHOWN CAP_NOT_A_CAP");
	CHECK(e->caps_bounding_set && e->caps_bounding == ((1ull << 10) | (1ull << 7) | 1ull));
	SVC("CapabilityBoundingSet", "~CAP_SETUID");
	CHECK(e->caps_bounding == ((1ull << 10) | 1ull));
	SVC("CapabilityBoundingSet", "");
	CHECK(e->caps_bounding_set && e->caps_bounding == 0);
	struct unit_def *d2 = def_new("b.service");
	if (d2) {
		set(d2, &dg, "Service", "CapabilityBoundingSet", "~CAP_SYS_ADMIN");
		CHECK(d2->exec.caps_bounding_set && !(d2->exec.caps_bounding & (1ull << 21)) &&
		      (d2->exec.caps_bounding & 1ull));
		unit_def_free(d2);
	}
	SVC("AmbientCapabilities", "CAP_NET_BIND_SERVICE");
	CHECK(e->caps_ambient == 1ull << 10);
	SVC("AmbientCapabilities", "");
	SVC("AmbientCapabilities", "~CAP_CHOWN");
	CHECK(e->caps_ambient && !(e->caps_ambient & 1ull) && (e->caps_ambient & (1ull << 10)));
	SVC("NoNewPrivileges", "yes");
	SVC("PrivateTmp", "yes");
	SVC("PrivateNetwork", "yes");
	SVC("PrivateDevices", "yes");
	SVC("ProtectProc", "invisible");
	SVC("ProtectSystem", "strict");
	SVC("ProtectHome", "read-only");
	CHECK(e->no_new_privileges && e->private_tmp && e->private_network && e->private_devices &&
	      e->protect_proc_invisible);
	CHECK(e->protect_system == UNIT_PROTECT_SYSTEM_STRICT &&
	      e->protect_home == UNIT_PROTECT_HOME_READ_ONLY);
	SVC("ProtectSystem", "yes");
	SVC("ProtectHome", "tmpfs");
	CHECK(e->protect_system == UNIT_PROTECT_SYSTEM_YES &&
	      e->protect_home == UNIT_PROTECT_HOME_TMPFS);
	SVC("ProtectSystem", "full");
	SVC("ProtectHome", "no");
	CHECK(e->protect_system == UNIT_PROTECT_SYSTEM_FULL &&
	      e->protect_home == UNIT_PROTECT_HOME_NO);
	SVC("ReadWritePaths", "-/var/lib/redis +/x");
	SVC("ReadWriteDirectories", "-/etc/redis");
	SVC("ReadOnlyPaths", "/etc");
	SVC("InaccessiblePaths", "-/home relative");
	CHECK(e->read_write_paths.n == 3 &&
	      strcmp(e->read_write_paths.v[0], "-/var/lib/redis") == 0);
	CHECK(e->read_only_paths.n == 1 && e->inaccessible_paths.n == 1);
	/* SystemCallFilter: the first decides; the other kind subtracts */
	SVC("SystemCallFilter", "@system-service");
	SVC("SystemCallFilter", "~ @privileged @resources");
	CHECK(!e->syscall_filter_deny && e->syscall_filter.n == 3);
	CHECK(unit_strv_contains(&e->syscall_filter, "~@privileged"));
	SVC("SystemCallFilter", "");
	SVC("SystemCallFilter", "~@mount");
	SVC("SystemCallFilter", "~@swap");
	CHECK(e->syscall_filter_deny && e->syscall_filter.n == 2 &&
	      unit_strv_contains(&e->syscall_filter, "@swap"));
	SVC("SystemCallErrorNumber", "EPERM");
	CHECK(e->syscall_errno == EPERM);
	SVC("SystemCallErrorNumber", "ENOTANERRNO");
	CHECK(e->syscall_errno == EPERM);
	SVC("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX");
	CHECK(!e->address_families_deny && e->address_families.n == 3);
	SVC("RestrictAddressFamilies", "");
	SVC("RestrictAddressFamilies", "~AF_PACKET");
	CHECK(e->address_families_deny && e->address_families.n == 1);
	/* not acted on: reported once, counted each time */
	dg.n = 0;
	unsigned before = d->ignored;
	SVC("ProtectKernelTunables", "yes");
	SVC("ProtectKernelTunables", "yes");
	SVC("MemoryDenyWriteExecute", "yes");
	CHECK(dg.n == 2 && d->ignored == before + 3 && strstr(dg.last, "MemoryDenyWriteExecute") &&
	      strstr(dg.last, "ignored"));
	unit_def_free(d);
}

TEST(units_config_resources)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("db.service");
	CHECK(d != NULL);
	if (!d)
		return;
	struct unit_resources *r = &d->res;
	SVC("MemoryMax", "512M");
	SVC("MemoryHigh", "1G");
	SVC("MemoryLow", "infinity");
	SVC("MemoryMin", "4096");
	SVC("MemorySwapMax", "50%");
	CHECK(r->memory_max == 512ull << 20 && r->memory_high == 1ull << 30 &&
	      r->memory_low == UNIT_INFINITY && r->memory_min == 4096);
	CHECK(r->memory_swap_max > 0 && r->memory_swap_max != UNIT_INFINITY);
	CHECK(r->set & (1u << UNIT_RES_MEMORY_SWAP_MAX));
	SVC("MemoryLimit", "2T");
	CHECK(r->memory_max == 2ull << 40);
	SVC("MemoryMax", "lots");
	CHECK(r->memory_max == 2ull << 40);
	SVC("MemoryMax", "");
	CHECK(!(r->set & (1u << UNIT_RES_MEMORY_MAX)));
	SVC("CPUQuota", "20%");
	CHECK(r->cpu_quota_per_sec_us == 200000 && (r->set & (1u << UNIT_RES_CPU_QUOTA)));
	SVC("CPUQuota", "250%");
	CHECK(r->cpu_quota_per_sec_us == 2500000);
	SVC("CPUWeight", "idle");
	CHECK(r->cpu_weight == 1);
	SVC("CPUWeight", "500");
	CHECK(r->cpu_weight == 500);
	SVC("CPUShares", "2048");
	CHECK(r->cpu_weight == 200);
	SVC("CPUWeight", "10001");
	CHECK(r->cpu_weight == 200);
	SVC("IOWeight", "50");
	CHECK(r->io_weight == 50 && (r->set & (1u << UNIT_RES_IO_WEIGHT)));
	SVC("BlockIOWeight", "1000");
	CHECK(r->io_weight == 200);
	SVC("TasksMax", "100");
	CHECK(r->tasks_max == 100);
	SVC("TasksMax", "infinity");
	CHECK(r->tasks_max == UNIT_INFINITY);
	SVC("TasksMax", "10%");
	CHECK(r->tasks_max > 0 && r->tasks_max < UNIT_INFINITY);
	SVC("AllowedCPUs", "0-1 3");
	CHECK_STR(r->allowed_cpus, "0-1,3");
	SVC("AllowedMemoryNodes", "0");
	CHECK_STR(r->allowed_mems, "0");
	SVC("AllowedCPUs", "all");
	CHECK_STR(r->allowed_cpus, "0-1,3");
	SVC("Delegate", "cpu memory");
	CHECK(r->delegate);
	SVC("Delegate", "no");
	CHECK(!r->delegate);
	unit_def_free(d);
}

TEST(units_config_socket)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("ssh.socket");
	CHECK(d != NULL);
	if (!d)
		return;
	struct unit_socket *s = &d->socket;
#define SOCK(k, v) set(d, &dg, "Socket", k, v)
	SOCK("ListenStream", "22");
	SOCK("ListenStream", "[::]:2222");
	SOCK("ListenDatagram", "/run/%p.dgram");
	SOCK("ListenSequentialPacket", "@abstract");
	SOCK("ListenFIFO", "/run/fifo");
	CHECK_EQ(s->nlisten, 5);
	if (s->nlisten == 5) {
		CHECK(s->listen[0].type == UNIT_LISTEN_STREAM);
		CHECK_STR(s->listen[2].address, "/run/ssh.dgram");
		CHECK(s->listen[3].type == UNIT_LISTEN_SEQPACKET &&
		      s->listen[4].type == UNIT_LISTEN_FIFO);
	}
	SOCK("ListenStream", "");
	CHECK_EQ(s->nlisten, 0);
	for (int i = 0; i < UNIT_LISTENS_MAX + 2; i++)
		SOCK("ListenStream", "80");
	CHECK_EQ(s->nlisten, UNIT_LISTENS_MAX);
	SOCK("Accept", "yes");
	SOCK("SocketMode", "0600");
	SOCK("DirectoryMode", "0700");
	SOCK("SocketUser", "www");
	SOCK("SocketGroup", "www");
	SOCK("FileDescriptorName", "web");
	SOCK("Service", "sshd@x.service");
	SOCK("Backlog", "4096");
	SOCK("BindIPv6Only", "ipv6-only");
	SOCK("MaxConnections", "64");
	SOCK("PassCredentials", "yes");
	SOCK("PassSecurity", "yes");
	SOCK("RemoveOnStop", "yes");
	SOCK("ReusePort", "yes");
	SOCK("FreeBind", "yes");
	CHECK(s->accept && s->socket_mode == 0600 && s->directory_mode == 0700);
	CHECK(s->backlog == 4096 && s->bind_ipv6_only == 1 && s->max_connections == 64);
	CHECK(s->pass_credentials && s->pass_security && s->remove_on_stop && s->reuse_port &&
	      s->free_bind);
	CHECK_STR(s->socket_user, "www");
	CHECK_STR(s->file_descriptor_name, "web");
	CHECK_STR(s->service, "sshd@x.service");
	SOCK("Service", "x.socket");
	SOCK("FileDescriptorName", "a:b");
	CHECK_STR(s->service, "sshd@x.service");
	CHECK_STR(s->file_descriptor_name, "web");
	/* exec settings and resources are valid in [Socket] too */
	SOCK("User", "nobody");
	SOCK("MemoryMax", "1M");
	SOCK("KillMode", "mixed");
	CHECK(d->exec.user && d->res.memory_max == 1ull << 20);
	/* a [Service] section in a .socket unit: reported once for the section */
	dg.n = 0;
	set(d, &dg, "Service", "ExecStart", "/bin/x");
	set(d, &dg, "Service", "Type", "simple");
	CHECK(dg.n == 1 && strstr(dg.last, "[Service]") && d->service.exec_start.n == 0);
#undef SOCK
	unit_def_free(d);
}

TEST(units_config_timer_install)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("pg_dump@15-main.timer");
	CHECK(d != NULL);
	if (!d)
		return;
	struct unit_timer *t = &d->timer;
#define TIMER(k, v) set(d, &dg, "Timer", k, v)
	TIMER("OnCalendar", "daily");
	TIMER("OnCalendar", "Mon..Fri *-*-* 9:00");
	CHECK(t->non_calendar == 2 && t->on_calendar_text[1] &&
	      strcmp(t->on_calendar_text[1], "Mon..Fri *-*-* 9:00") == 0);
	TIMER("OnCalendar", "");
	CHECK(t->non_calendar == 0);
	TIMER("OnBootSec", "15min");
	TIMER("OnStartupSec", "1h");
	TIMER("OnActiveSec", "1");
	TIMER("OnUnitActiveSec", "1d");
	TIMER("OnUnitInactiveSec", "2s");
	TIMER("RandomizedDelaySec", "30s");
	TIMER("AccuracySec", "1us");
	TIMER("Persistent", "true");
	TIMER("WakeSystem", "yes");
	TIMER("RemainAfterElapse", "no");
	TIMER("Unit", "pg_dump@%i.service");
	CHECK(t->on_boot_us == 900000000ull && t->on_startup_us == 3600000000ull &&
	      t->on_active_us == 1000000 && t->on_unit_active_us == 86400000000ull &&
	      t->on_unit_inactive_us == 2000000);
	CHECK(t->randomized_delay_us == 30000000 && t->accuracy_us == 1);
	CHECK(t->persistent && t->wake_system && !t->remain_after_elapse);
	CHECK_STR(t->unit, "pg_dump@15-main.service");
	TIMER("OnBootSec", "");
	CHECK(t->on_boot_us == 0);
	TIMER("Unit", "other.timer");
	CHECK_STR(t->unit, "pg_dump@15-main.service");
	/* [Install] */
	set(d, &dg, "Install", "WantedBy", "timers.target");
	set(d, &dg, "Install", "RequiredBy", "a.target");
	set(d, &dg, "Install", "Alias", "pgd.timer");
	set(d, &dg, "Install", "Also", "x.service");
	set(d, &dg, "Install", "DefaultInstance", "%i");
	CHECK(d->install.wanted_by.n == 1 && d->install.required_by.n == 1 &&
	      d->install.alias.n == 1 && d->install.also.n == 1);
	CHECK_STR(d->install.default_instance, "15-main");
	set(d, &dg, "Install", "WantedBy", "");
	CHECK(d->install.wanted_by.n == 0);
#undef TIMER
	unit_def_free(d);
}

TEST(units_config_diag)
{
	struct diags dg = {0};
	struct unit_def *d = def_new("x.service");
	CHECK(d != NULL);
	if (!d)
		return;
	/* unknown: one diag naming file:line, the unit and the directive */
	CHECK(SVC("NoSuchThing", "1") == 0);
	CHECK(dg.n == 1 && d->ignored == 1);
	CHECK(strstr(dg.last, "test.conf:") && strstr(dg.last, "\"x.service\"") &&
	      strstr(dg.last, "NoSuchThing") && strstr(dg.last, "unknown"));
	CHECK(strcmp(dg.file, "test.conf") == 0 && dg.line > 0);
	SVC("NoSuchThing", "2");
	CHECK(dg.n == 1 && d->ignored == 2);
	/* the same key in another section is another directive */
	UNIT("NoSuchThing", "1");
	CHECK(dg.n == 2);
	/* a key of another section */
	UNIT("ExecStart", "/bin/true");
	CHECK(dg.n == 3 && strstr(dg.last, "not valid") && d->service.exec_start.n == 0);
	/* a bad value drops that assignment only */
	SVC("RemainAfterExit", "perhaps");
	CHECK(dg.n == 4 && strstr(dg.last, "perhaps") && !d->service.remain_after_exit);
	SVC("RestartSec", "soon");
	CHECK(dg.n == 5 && d->service.restart_us == 100000);
	/* a bad specifier */
	UNIT("Description", "100%z");
	CHECK(dg.n == 6 && !d->description);
	/* sections: unknown, of another type (once each); X- ones silent */
	set(d, &dg, "Bogus", "A", "1");
	set(d, &dg, "Bogus", "B", "1");
	set(d, &dg, "Mount", "What", "/dev/sda");
	CHECK(dg.n == 8 && strstr(dg.last, "mount"));
	set(d, &dg, "X-Vendor", "A", "1");
	SVC("X-Mine", "1");
	CHECK(dg.n == 8);
	/* list bounds: past UNIT_LIST_MAX the rest is dropped, reported */
	char *many = malloc(UNIT_LIST_MAX * 8 + 64);
	if (many) {
		many[0] = '\0';
		for (int i = 0; i < UNIT_LIST_MAX + 4; i++)
			sprintf(many + strlen(many), "g%d ", i);
		unsigned before = dg.n;
		CHECK(SVC("SupplementaryGroups", many) == 0);
		CHECK(d->exec.supplementary_groups.n == UNIT_LIST_MAX && dg.n == before + 1);
		free(many);
	}
	unit_def_free(d);
}

/* ---- Debian's own unit files ---------------------------------------------------- */

struct debian_diags {
	unsigned n, unknown;
	char last_unknown[512];
};

static void debian_diag(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	struct debian_diags *dd = data;
	char msg[512];
	va_list ap;
	(void)file, (void)line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dd->n++;
	/* anything but a directive kin knows and does not act on */
	if (getenv("KIN_DEBIAN_UNITS_ALL"))
		printf("      %s\n", msg);
	if (!strstr(msg, "kin does not act on it")) {
		dd->unknown++;
		snprintf(dd->last_unknown, sizeof(dd->last_unknown), "%s", msg);
		printf("    %s\n", msg);
	}
}

static bool is_unit_file(const char *name)
{
	enum unit_type t = unit_type_from_suffix(name);
	return t == UNIT_SERVICE || t == UNIT_SOCKET || t == UNIT_TIMER;
}

TEST(units_debian)
{
	const char *dir = getenv("KIN_DEBIAN_UNITS");
	if (!dir || !*dir) {
		printf("    SKIP: KIN_DEBIAN_UNITS is not set (scripts/debian-units.sh DIR makes "
		       "the tree)\n");
		return;
	}
	struct unit_paths p;
	char root[PATH_MAX / 2], sysdir[PATH_MAX];
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(sysdir, sizeof(sysdir), "%s/lib/systemd/system", root);
	CHECK(unit_paths_init(&p, root) == 0);
	DIR *dp = opendir(sysdir);
	CHECK(dp != NULL);
	if (!dp)
		return;
	struct unit_spec_ctx ctx = {.hostname = "debian"};
	struct debian_diags dd = {0};
	unsigned loaded = 0;
	for (struct dirent *de; (de = readdir(dp));) {
		if (!is_unit_file(de->d_name) || de->d_type == DT_LNK)
			continue;
		char name[UNIT_NAME_MAX + 1];
		struct unit_name n;
		/* a template loads as an instance of it */
		if (unit_name_parse(de->d_name, &n, NULL) < 0)
			continue;
		if (n.instance && !n.instance[0])
			unit_name_instantiate(de->d_name, "15-main", name, sizeof(name));
		else
			snprintf(name, sizeof(name), "%s", de->d_name);
		struct unit_def *d = NULL;
		struct err e = {0};
		int r = unit_load(&p, name, &ctx, debian_diag, &dd, &d, &e);
		if (r < 0)
			printf("    %s: %s\n", name, e.msg);
		CHECK(r == 0 && d);
		loaded++;
		if (d && strcmp(d->name.full, "ssh.service") == 0) {
			const struct unit_service *s = &d->service;
			CHECK(s->type == UNIT_SVC_NOTIFY && s->kill_mode == UNIT_KILL_PROCESS);
			CHECK(s->exec_start.n == 1 && s->exec_start_pre.n == 1 &&
			      s->exec_reload.n == 2);
			if (s->exec_start.n == 1) {
				CHECK_STR(s->exec_start.v[0].path, "/usr/sbin/sshd");
				CHECK(s->exec_start.v[0].argc == 3);
				CHECK_STR(s->exec_start.v[0].argv[2], "$SSHD_OPTS");
			}
			CHECK(d->exec.dirs[UNIT_DIR_RUNTIME].n == 1 &&
			      strcmp(d->exec.dirs[UNIT_DIR_RUNTIME].v[0], "sshd") == 0);
			CHECK(unit_exit_set_has(&s->restart_prevent, 255, 0));
			CHECK(d->nconds == 1 && d->conds[0].negate);
			CHECK(unit_strv_contains(&d->install.alias, "sshd.service"));
		}
		if (d && strcmp(d->name.full, "redis-server.service") == 0)
			CHECK(d->exec.caps_bounding_set && d->exec.caps_bounding == 0 &&
			      d->exec.umask == 07 && d->service.timeout_stop_us == UNIT_INFINITY);
		unit_def_free(d);
	}
	closedir(dp);
	printf("    %u units, %u diags, %u not about a directive kin knows\n", loaded, dd.n,
	       dd.unknown);
	CHECK(loaded >= 10);
	CHECK_EQ(dd.unknown, 0);
}
