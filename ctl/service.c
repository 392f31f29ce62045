/* service: `kin ctl service list|status|start|stop|restart|reload|
 * try-restart|enable|disable|mask|unmask|cat|logs` and `kin ctl
 * daemon-reload` over kin.v1.Units, and the calls the systemctl
 * personality makes through the same functions. Names are mangled as
 * systemctl does ("ssh" → "ssh.service"); everything else about a name is
 * kin's to check. Jobs wait for their end (no timeout unless --timeout)
 * unless --no-block. */
#include "ctl/ctl-int.h"

#include <string.h>

const char ctl_service_help[] =
    "Services (systemd units; kin runs them as a host's init or with --unit-dir):\n"
    "  service list [--all]                the units loaded (--all: files too)\n"
    "  service status [-n LINES] NAME      as systemctl status (last 10 log lines)\n"
    "  service start|stop|restart|reload|try-restart [--no-block] NAME...\n"
    "  service enable|disable [--now] NAME...   the [Install] links (--now: start/stop)\n"
    "  service mask|unmask NAME...\n"
    "  service cat NAME                    its unit file and drop-ins\n"
    "  service logs [-f] [--stdout|--stderr] NAME   its main output\n"
    "  daemon-reload                       reread every unit file\n";

/* ---- the calls ------------------------------------------------------------------------ */

/* One call of kin.v1.Units; waits: no timeout unless --timeout was given. */
static int units_call(struct ctl *ctl, const char *method, const ProtobufCMessage *in,
                      const ProtobufCMessageDescriptor *desc, void *ret, bool waits, bool quiet,
                      struct err *st)
{
	const struct ctl_call c = {.service = "kin.v1.Units",
	                           .method = method,
	                           .in = in,
	                           .out_desc = desc,
	                           .timeout_ms = waits && !ctl->timeout_set ? 0 : ctl->timeout_ms,
	                           .quiet = quiet};
	return ctl_call(ctl, &c, (ProtobufCMessage **)ret, st);
}

int ctl_unit_status(struct ctl *ctl, const char *name, uint32_t log_lines, bool quiet,
                    Kin__V1__UnitStatusResponse **ret, struct err *st)
{
	Kin__V1__UnitStatusRequest in = KIN__V1__UNIT_STATUS_REQUEST__INIT;
	in.name = (char *)name;
	in.log_lines = log_lines;
	return units_call(ctl, "Status", &in.base, &kin__v1__unit_status_response__descriptor, ret,
	                  false, quiet, st);
}

int ctl_unit_job(struct ctl *ctl, const char *name, const char *type, bool no_block, bool quiet,
                 Kin__V1__UnitJobResponse **ret, struct err *st)
{
	Kin__V1__UnitJobRequest in = KIN__V1__UNIT_JOB_REQUEST__INIT;
	in.name = (char *)name;
	in.type = (char *)type;
	in.no_block = no_block;
	return units_call(ctl, "Job", &in.base, &kin__v1__unit_job_response__descriptor, ret,
	                  !no_block, quiet, st);
}

int ctl_unit_files(struct ctl *ctl, const char *method, char **names, size_t n, bool quiet,
                   Kin__V1__UnitFilesResponse **ret, struct err *st)
{
	Kin__V1__UnitFilesRequest in = KIN__V1__UNIT_FILES_REQUEST__INIT;
	in.names = names;
	in.n_names = n;
	return units_call(ctl, method, &in.base, &kin__v1__unit_files_response__descriptor, ret,
	                  false, quiet, st);
}

int ctl_unit_list(struct ctl *ctl, bool all, bool quiet, Kin__V1__ListUnitsResponse **ret,
                  struct err *st)
{
	Kin__V1__ListUnitsRequest in = KIN__V1__LIST_UNITS_REQUEST__INIT;
	in.all = all;
	return units_call(ctl, "List", &in.base, &kin__v1__list_units_response__descriptor, ret,
	                  false, quiet, st);
}

int ctl_daemon_reload(struct ctl *ctl, bool quiet, struct err *st)
{
	Kin__V1__DaemonReloadRequest in = KIN__V1__DAEMON_RELOAD_REQUEST__INIT;
	return units_call(ctl, "DaemonReload", &in.base, NULL, NULL, true, quiet, st);
}

/* ---- options ------------------------------------------------------------------------------ */

#define SERVICE_NAMES_MAX 64 /* kin's own bound on one call */

struct service_args {
	bool all, follow, no_block, now;
	Kin__V1__LogStream which;
	uint32_t lines;
	char *names[SERVICE_NAMES_MAX];
	char bufs[SERVICE_NAMES_MAX][CTL_UNIT_NAME_MAX + 1];
	size_t n;
};

/* Long-only options have letters no short option uses, so a subcommand's
 * allowed set is one string. */
enum { O_NO_BLOCK = 'B', O_NOW = 'N', O_STDOUT = 'O', O_STDERR = 'E' };

const struct option ctl_service_opts[] = {
    {"all", no_argument, NULL, 'a'},         {"follow", no_argument, NULL, 'f'},
    {"lines", required_argument, NULL, 'n'}, {"no-block", no_argument, NULL, O_NO_BLOCK},
    {"now", no_argument, NULL, O_NOW},       {"stdout", no_argument, NULL, O_STDOUT},
    {"stderr", no_argument, NULL, O_STDERR}, {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
};

static int service_opt(struct ctl *ctl, struct service_args *a, int c)
{
	switch (c) {
	case 'a':
		a->all = true;
		return CTL_OK;
	case 'f':
		a->follow = true;
		return CTL_OK;
	case 'n':
		if (str_to_u32(optarg, &a->lines) < 0 || a->lines > 1000)
			return ctl_usage(ctl, "-n '%s': expected a number of lines up to 1000",
			                 optarg);
		return CTL_OK;
	case O_NO_BLOCK:
		a->no_block = true;
		return CTL_OK;
	case O_NOW:
		a->now = true;
		return CTL_OK;
	case O_STDOUT:
		a->which = KIN__V1__LOG_STREAM__STDOUT;
		return CTL_OK;
	case O_STDERR:
		a->which = KIN__V1__LOG_STREAM__STDERR;
		return CTL_OK;
	}
	return ctl_usage(ctl, "unknown option");
}

/* Options anywhere, then the names (mangled). allowed: the option letters
 * this subcommand takes; min/max: how many names. -1: --help printed. */
static int service_parse(struct ctl *ctl, int argc, char **argv, struct service_args *a,
                         const char *allowed, size_t min, size_t max)
{
	int c, r;
	*a = (struct service_args){.lines = 10};
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":afn:o:h", ctl_service_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(ctl_service_help, stdout);
			return -1;
		}
		int k = ctl_common_opt(ctl, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (!strchr(allowed, c)) {
			const struct option *o = ctl_service_opts;
			while (o->name && o->val != c)
				o++;
			return o->name
			           ? ctl_usage(ctl, "option --%s is not for %s", o->name, ctl->what)
			           : ctl_usage(ctl, "option -%c is not for %s", c, ctl->what);
		}
		if ((r = service_opt(ctl, a, c)) != CTL_OK)
			return r;
	}
	size_t npos = (size_t)(argc - 1 - optind);
	if (npos < min || npos > max)
		return max == 0   ? ctl_usage(ctl, "takes no unit name")
		       : max == 1 ? ctl_usage(ctl, "needs exactly one unit NAME")
		                  : ctl_usage(ctl, "needs 1 to %d unit NAMEs", SERVICE_NAMES_MAX);
	for (size_t i = 0; i < npos; i++)
		a->names[a->n++] = (char *)ctl_unit_name(argv[1 + optind + (int)i], a->bufs[i],
		                                         sizeof(a->bufs[i]));
	return CTL_OK;
}

/* ---- the subcommands ---------------------------------------------------------------------- */

static int service_list(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	Kin__V1__ListUnitsResponse *m;
	struct err st;
	int r = service_parse(ctl, argc, argv, &a, "a", 0, 0);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	if ((r = ctl_unit_list(ctl, a.all, false, &m, &st)) != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(&m->base);
	else
		ctl_unit_print_list(stdout, m, true);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return CTL_OK;
}

static int service_status(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	Kin__V1__UnitStatusResponse *m;
	struct err st;
	int r = service_parse(ctl, argc, argv, &a, "n", 1, 1);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	if ((r = ctl_unit_status(ctl, a.names[0], a.lines, false, &m, &st)) != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(&m->base);
	else
		ctl_unit_print_status(stdout, m);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return CTL_OK;
}

/* start, stop, restart, reload, try-restart: one job per name, in order. */
static int service_job(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	const char *type = argv[1];
	struct err st;
	int r = service_parse(ctl, argc, argv, &a, "B", 1, SERVICE_NAMES_MAX);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	for (size_t i = 0; i < a.n; i++) {
		Kin__V1__UnitJobResponse *m;
		if ((r = ctl_unit_job(ctl, a.names[i], type, a.no_block, false, &m, &st)) != CTL_OK)
			return r;
		if (ctl->json)
			ctl_json_line(&m->base);
		else if (m->unit)
			printf("%s: %s (%s)%s\n", m->unit->name, m->unit->active_state,
			       m->unit->sub_state, m->queued ? ", job queued" : "");
		protobuf_c_message_free_unpacked(&m->base, NULL);
	}
	return CTL_OK;
}

static const char *files_method(const char *sub)
{
	return !strcmp(sub, "enable")    ? "Enable"
	       : !strcmp(sub, "disable") ? "Disable"
	       : !strcmp(sub, "mask")    ? "Mask"
	                                 : "Unmask";
}

/* enable, disable, mask, unmask; --now starts (enable) or stops (disable). */
static int service_files(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	bool en = !strcmp(argv[1], "enable"), dis = !strcmp(argv[1], "disable");
	Kin__V1__UnitFilesResponse *m;
	struct err st;
	int r = service_parse(ctl, argc, argv, &a, en || dis ? "N" : "", 1, SERVICE_NAMES_MAX);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	if ((r = ctl_unit_files(ctl, files_method(argv[1]), a.names, a.n, false, &m, &st)) !=
	    CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(&m->base);
	else
		ctl_unit_print_changes(stdout, m);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	for (size_t i = 0; a.now && i < a.n; i++) {
		Kin__V1__UnitJobResponse *j;
		if ((r = ctl_unit_job(ctl, a.names[i], en ? "start" : "stop", false, false, &j,
		                      &st)) != CTL_OK)
			return r;
		protobuf_c_message_free_unpacked(&j->base, NULL);
	}
	return CTL_OK;
}

static int service_cat(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	Kin__V1__UnitRequest in = KIN__V1__UNIT_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = service_parse(ctl, argc, argv, &a, "", 1, 1);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	in.name = a.names[0];
	r = ctl_call_simple(ctl, "kin.v1.Units", "Cat", &in.base,
	                    &kin__v1__unit_cat_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(out);
	else
		fputs(((Kin__V1__UnitCatResponse *)out)->text, stdout);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int service_logs(struct ctl *ctl, int argc, char **argv)
{
	static struct service_args a;
	Kin__V1__UnitLogsRequest in = KIN__V1__UNIT_LOGS_REQUEST__INIT;
	int r = service_parse(ctl, argc, argv, &a, "fOE", 1, 1);
	if (r != CTL_OK)
		return r < 0 ? CTL_OK : r;
	in.name = a.names[0];
	in.follow = a.follow;
	in.stream = a.which;
	return ctl_stream_run(ctl, "kin.v1.Units", "Logs", &in.base,
	                      &kin__v1__log_chunk__descriptor, ctl_log_print);
}

const struct ctl_cmd ctl_service_cmds[] = {
    {"list", "the units loaded (--all: files too)", service_list, ctl_service_opts, NULL},
    {"status", "as systemctl status", service_status, ctl_service_opts, NULL},
    {"start", "start units, wait for the end", service_job, ctl_service_opts, NULL},
    {"stop", "stop units", service_job, ctl_service_opts, NULL},
    {"restart", "restart units", service_job, ctl_service_opts, NULL},
    {"reload", "reload units (ExecReload=)", service_job, ctl_service_opts, NULL},
    {"try-restart", "restart units that are active", service_job, ctl_service_opts, NULL},
    {"enable", "make the [Install] links", service_files, ctl_service_opts, NULL},
    {"disable", "remove the [Install] links", service_files, ctl_service_opts, NULL},
    {"mask", "link units to /dev/null", service_files, ctl_service_opts, NULL},
    {"unmask", "remove the mask", service_files, ctl_service_opts, NULL},
    {"cat", "the unit file and drop-ins", service_cat, ctl_service_opts, NULL},
    {"logs", "a service's main output", service_logs, ctl_service_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_service_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(ctl, ctl_service_cmds, argc, argv,
	                        "needs a subcommand: list, status, start, stop, restart, reload, "
	                        "try-restart, enable, disable, mask, unmask, cat, logs",
	                        "unknown subcommand '%s' (list, status, start, stop, restart, "
	                        "reload, try-restart, enable, disable, mask, unmask, cat, logs)",
	                        true);
}

int ctl_daemon_reload_main(struct ctl *ctl, int argc, char **argv)
{
	if (argc > 1)
		return ctl_usage(ctl, "unexpected argument '%s'", argv[1]);
	struct err st;
	int r = ctl_daemon_reload(ctl, false, &st);
	if (r == CTL_OK && ctl->json)
		printf("{}\n");
	return r;
}
