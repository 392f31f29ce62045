/* systemctl: kin answering as `systemctl` (a link to it at /usr/bin/systemctl,
 * as Debian images have), so package scripts — deb-systemd-helper,
 * deb-systemd-invoke, invoke-rc.d — and people's habits work on a kin
 * host. This file reads systemctl's command line, says what `show` and the
 * is-* queries print and exit with; systemctl_verbs.c makes each verb the
 * kin.v1.Units calls `kin ctl service` makes. Options systemd has for
 * things kin has no part of (pagers, password agents) are taken and
 * ignored; those whose meaning kin cannot give are refused by name. */
#include "ctl/ctl-int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
	O_SYSTEM = 256,
	O_USER,
	O_GLOBAL,
	O_NO_BLOCK,
	O_NO_PAGER,
	O_NO_ASK,
	O_NO_RELOAD,
	O_NOW,
	O_RUNTIME,
	O_ROOT,
	O_VALUE,
	O_NO_LEGEND,
	O_PRESET_MODE,
	O_STATE,
	O_VERSION,
	O_PLAIN,
	O_KILL_WHOM,
};

static const struct option sc_opts[] = {
    {"system", no_argument, NULL, O_SYSTEM},
    {"user", no_argument, NULL, O_USER},
    {"global", no_argument, NULL, O_GLOBAL},
    {"quiet", no_argument, NULL, 'q'},
    {"no-block", no_argument, NULL, O_NO_BLOCK},
    {"no-pager", no_argument, NULL, O_NO_PAGER},
    {"no-ask-password", no_argument, NULL, O_NO_ASK},
    {"no-reload", no_argument, NULL, O_NO_RELOAD},
    {"now", no_argument, NULL, O_NOW},
    {"force", no_argument, NULL, 'f'},
    {"full", no_argument, NULL, 'l'},
    {"all", no_argument, NULL, 'a'},
    {"type", required_argument, NULL, 't'},
    {"state", required_argument, NULL, O_STATE},
    {"runtime", no_argument, NULL, O_RUNTIME},
    {"root", required_argument, NULL, O_ROOT},
    {"property", required_argument, NULL, 'p'},
    {"value", no_argument, NULL, O_VALUE},
    {"no-legend", no_argument, NULL, O_NO_LEGEND},
    {"plain", no_argument, NULL, O_PLAIN},
    {"preset-mode", required_argument, NULL, O_PRESET_MODE},
    {"signal", required_argument, NULL, 's'},
    {"kill-whom", required_argument, NULL, O_KILL_WHOM},
    {"lines", required_argument, NULL, 'n'},
    {"version", no_argument, NULL, O_VERSION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* -p A,B and -p C: the names, split into a->props_buf. */
static int props_add(struct ctl_sc_args *a, const char *arg, char *why, size_t why_size)
{
	size_t len = strlen(arg);
	if (a->props_len + len + 1 > sizeof(a->props_buf)) {
		snprintf(why, why_size, "--property: too many property names");
		return CTL_USAGE;
	}
	char *p = memcpy(a->props_buf + a->props_len, arg, len + 1);
	a->props_len += len + 1;
	char *save = NULL;
	for (char *t = strtok_r(p, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (a->nprops == CTL_SC_PROPS_MAX) {
			snprintf(why, why_size, "--property: at most %d names", CTL_SC_PROPS_MAX);
			return CTL_USAGE;
		}
		a->props[a->nprops++] = t;
	}
	return CTL_OK;
}

static int sc_opt(struct ctl_sc_args *a, int c, char *why, size_t why_size)
{
	switch (c) {
	case O_SYSTEM:
	case O_NO_PAGER:
	case O_NO_ASK:
	case O_NO_RELOAD:
	case O_PLAIN:
	case O_KILL_WHOM:
		return CTL_OK; /* kin is the system manager; nothing pages or asks */
	case O_USER:
	case O_GLOBAL:
		a->user = true;
		return CTL_OK;
	case 'q':
		a->quiet = true;
		return CTL_OK;
	case O_NO_BLOCK:
		a->no_block = true;
		return CTL_OK;
	case O_NOW:
		a->now = true;
		return CTL_OK;
	case 'f':
		a->force = true;
		return CTL_OK;
	case 'l':
		a->full = true;
		return CTL_OK;
	case 'a':
		a->all = true;
		return CTL_OK;
	case 't':
		a->type = optarg;
		return CTL_OK;
	case O_STATE:
		a->state = optarg;
		return CTL_OK;
	case O_RUNTIME:
		a->runtime = true;
		return CTL_OK;
	case O_ROOT:
		a->root = optarg;
		return CTL_OK;
	case 'p':
		return props_add(a, optarg, why, why_size);
	case O_VALUE:
		a->value = true;
		return CTL_OK;
	case O_NO_LEGEND:
		a->no_legend = true;
		return CTL_OK;
	case O_PRESET_MODE:
		if (strcmp(optarg, "full") && strcmp(optarg, "enable-only") &&
		    strcmp(optarg, "disable-only")) {
			snprintf(why, why_size,
			         "--preset-mode=%s: expected full, enable-only or "
			         "disable-only",
			         optarg);
			return CTL_USAGE;
		}
		a->preset_mode = optarg;
		return CTL_OK;
	case 's':
		a->signal = optarg;
		return CTL_OK;
	case 'n':
		if (str_to_u32(optarg, &a->lines) < 0 || a->lines > 1000) {
			snprintf(why, why_size, "--lines=%s: expected a number up to 1000", optarg);
			return CTL_USAGE;
		}
		return CTL_OK;
	case O_VERSION:
		a->version = true;
		return CTL_OK;
	case 'h':
		a->help = true;
		return CTL_OK;
	}
	return CTL_USAGE;
}

int ctl_sc_parse(int argc, char **argv, struct ctl_sc_args *a, char *why, size_t why_size)
{
	int c, r;
	memset(a, 0, sizeof(*a));
	a->lines = 10;
	why[0] = '\0';
	optind = 0; /* 0: glibc starts over, permuting: options anywhere, "--" ends them */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":qflat:p:s:n:h", sc_opts, NULL)) != -1) {
		if (c == ':' || c == '?') {
			snprintf(why, why_size,
			         c == ':' ? "option '%s' needs a value"
			                  : "option '%s' is not supported by kin",
			         argv[optind - 1]);
			return CTL_USAGE;
		}
		if ((r = sc_opt(a, c, why, why_size)) != CTL_OK) {
			if (!why[0])
				snprintf(why, why_size, "option '%s' is not supported by kin",
				         argv[optind - 1]);
			return r;
		}
	}
	if (optind < argc)
		a->verb = argv[optind++];
	for (; optind < argc; optind++) {
		if (a->nargs == CTL_SC_ARGS_MAX) {
			snprintf(why, why_size, "too many units (at most %d)", CTL_SC_ARGS_MAX);
			return CTL_USAGE;
		}
		a->args[a->nargs++] = argv[optind];
	}
	return CTL_OK;
}

/* ---- show and the queries' exit codes ------------------------------------------------------ */

typedef void (*prop_fn)(const Kin__V1__UnitStatus *u, char *buf, size_t size);

static void stamp(uint64_t us, char *buf, size_t size)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	buf[0] = '\0';
	if (us && localtime_r(&t, &tm))
		strftime(buf, size, "%a %Y-%m-%d %H:%M:%S %Z", &tm);
}

#define PROP_STR(fn, field)                                                                        \
	static void fn(const Kin__V1__UnitStatus *u, char *b, size_t n)                            \
	{                                                                                          \
		snprintf(b, n, "%s", u->field);                                                    \
	}
PROP_STR(p_id, name)
PROP_STR(p_description, description)
PROP_STR(p_load, load_state)
PROP_STR(p_active, active_state)
PROP_STR(p_sub, sub_state)
PROP_STR(p_file_state, unit_file_state)
PROP_STR(p_fragment, fragment)
PROP_STR(p_result, result)
PROP_STR(p_type, service_type)
PROP_STR(p_restart, restart)
PROP_STR(p_status_text, status_text)
PROP_STR(p_job, job)

static void p_main_pid(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%d", u->main_pid > 0 && !u->exited ? u->main_pid : 0);
}
static void p_control_pid(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%d", u->control_pid > 0 ? u->control_pid : 0);
}
/* systemd's: the signal number when killed, else the exit status. */
static void p_exec_status(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%d", u->exited ? (u->exit_signal ? u->exit_signal : u->exit_code) : 0);
}
/* si_code: 0 never ended, 1 CLD_EXITED, 2 CLD_KILLED. */
static void p_exec_code(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%d", !u->exited ? 0 : u->exit_signal ? 2 : 1);
}
static void p_restarts(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%u", u->restarts);
}
static void p_active_enter(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	stamp(u->active_enter_us, b, n);
}
static void p_inactive_enter(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	stamp(u->inactive_enter_us, b, n);
}
static void p_memory(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	if (u->has_memory)
		snprintf(b, n, "%llu", (unsigned long long)u->memory_current);
	else
		snprintf(b, n, "[not set]");
}
static void p_tasks(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	if (u->has_tasks)
		snprintf(b, n, "%llu", (unsigned long long)u->tasks_current);
	else
		snprintf(b, n, "[not set]");
}
static void p_cgroup(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%s%s", u->cell[0] ? "/" : "", u->cell);
}
static void p_can_reload(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%s", u->can_reload ? "yes" : "no");
}
static void p_condition(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	snprintf(b, n, "%s", u->condition[0] ? "no" : "yes");
}
/* kin has no SysV generator: no unit comes from /etc/init.d. */
static void p_empty(const Kin__V1__UnitStatus *u, char *b, size_t n)
{
	(void)u;
	snprintf(b, n, "%s", "");
}

static const struct {
	const char *name;
	prop_fn fn;
} props[] = {
    {"Type", p_type},
    {"Restart", p_restart},
    {"MainPID", p_main_pid},
    {"ControlPID", p_control_pid},
    {"ExecMainPID", p_main_pid},
    {"ExecMainCode", p_exec_code},
    {"ExecMainStatus", p_exec_status},
    {"StatusText", p_status_text},
    {"Result", p_result},
    {"NRestarts", p_restarts},
    {"ControlGroup", p_cgroup},
    {"MemoryCurrent", p_memory},
    {"TasksCurrent", p_tasks},
    {"Id", p_id},
    {"Names", p_id},
    {"Description", p_description},
    {"LoadState", p_load},
    {"ActiveState", p_active},
    {"SubState", p_sub},
    {"FragmentPath", p_fragment},
    {"SourcePath", p_empty},
    {"UnitFileState", p_file_state},
    {"ActiveEnterTimestamp", p_active_enter},
    {"InactiveEnterTimestamp", p_inactive_enter},
    {"CanReload", p_can_reload},
    {"ConditionResult", p_condition},
    {"Job", p_job},
};

void ctl_sc_show(FILE *f, const Kin__V1__UnitStatus *u, const char *const *names, size_t n,
                 bool value)
{
	char buf[512];
	size_t count = n ? n : ARRAY_SIZE(props);
	for (size_t i = 0; i < count; i++) {
		size_t k = n ? ARRAY_SIZE(props) : i;
		for (size_t j = 0; n && j < ARRAY_SIZE(props); j++)
			if (!strcmp(props[j].name, names[i]))
				k = j;
		if (k == ARRAY_SIZE(props))
			continue; /* systemctl prints nothing for a property it does not know */
		props[k].fn(u, buf, sizeof(buf));
		if (value)
			fprintf(f, "%s\n", buf);
		else
			fprintf(f, "%s=%s\n", props[k].name, buf);
	}
}

int ctl_sc_is_active_code(const char *active_state)
{
	return !strcmp(active_state, "active") || !strcmp(active_state, "reloading") ? 0 : 3;
}

int ctl_sc_is_enabled_code(const char *s)
{
	static const char *const yes[] = {"enabled", "enabled-runtime", "static",   "indirect",
	                                  "alias",   "generated",       "transient"};
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
		if (!strcmp(s, yes[i]))
			return 0;
	return 1;
}

int ctl_sc_status_code(const Kin__V1__UnitStatus *u)
{
	if (!strcmp(u->load_state, "not-found"))
		return 4;
	return ctl_sc_is_active_code(u->active_state);
}

const char *ctl_sc_system_state(const Kin__V1__ListUnitsResponse *m)
{
	bool failed = false;
	for (size_t i = 0; i < m->n_units; i++) {
		if (m->units[i]->job[0])
			return "starting";
		failed |= !strcmp(m->units[i]->active_state, "failed");
	}
	return failed ? "degraded" : "running";
}

/* ---- main --------------------------------------------------------------------------------- */

static void help(void)
{
	fputs("usage: systemctl [OPTIONS] COMMAND [UNIT...]   (kin's systemctl)\n"
	      "\n"
	      "Units: list-units [PATTERN...], list-unit-files, status [UNIT...], show UNIT...\n"
	      "       (-p/--property=A,B, --value), cat UNIT, is-active, is-failed, is-enabled,\n"
	      "       start, stop, restart, reload, try-restart, reload-or-restart,\n"
	      "       try-reload-or-restart, condrestart, force-reload, kill --signal=KILL\n"
	      "Files: enable, disable, reenable, preset, mask, unmask (--now, --root=DIR)\n"
	      "Manager: daemon-reload, is-system-running, --version\n"
	      "\n"
	      "Calls kin on $KIN_SOCKET (default " RPC_SOCKET_DEFAULT "); without a kin there,\n"
	      "or with --root, enable/disable/mask/unmask/preset/is-enabled work on the files.\n",
	      stdout);
}

int ctl_systemctl_main(int argc, char **argv, const struct ctl_systemctl_env *env)
{
	static struct ctl_sc_args a;
	char why[256];
	const char *sock = getenv("KIN_SOCKET");
	struct ctl ctl = {.address = sock && *sock ? sock : RPC_SOCKET_DEFAULT,
	                  .timeout_ms = 5000,
	                  .what = "systemctl"};
	if (ctl_sc_parse(argc, argv, &a, why, sizeof(why)) != CTL_OK) {
		fprintf(stderr, "systemctl: %s\n", why);
		return 1;
	}
	if (a.help) {
		help();
		return 0;
	}
	if (a.version) {
		printf("systemd 252 (kin %s)\n-PAM -AUDIT -SELINUX -APPARMOR -SYSVINIT\n",
		       env && env->version ? env->version : "");
		return 0;
	}
	const char *name = a.verb ? a.verb : "list-units";
	const struct ctl_sc_verb *v = ctl_sc_verb_find(name);
	if (!v) {
		fprintf(stderr, "systemctl: verb %s is not supported by kin\n", name);
		return 1;
	}
	if ((int)a.nargs < v->min_args) {
		fprintf(stderr, "systemctl: %s needs %s\n", v->name,
		        v->min_args > 1 ? "more arguments" : "a unit name");
		return 1;
	}
	if (a.runtime && !a.quiet)
		fprintf(stderr,
		        "systemctl: --runtime: kin makes the change in /etc (persistent)\n");
	int r = v->run(&ctl, &a, v, env);
	rpc_client_free(ctl.client);
	fflush(stdout);
	return r;
}
