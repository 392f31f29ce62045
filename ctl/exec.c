/* exec: `kin ctl exec start|list|status|signal|stop|wait|logs|stdin|attach|resize|delete`
 * over kin.v1.Exec. An ExecSpec is filled from the options in fixed-size
 * tables (static: one command per process), so a long command line is
 * refused with a sentence, never allocated for. `exec wait` exits with the
 * executable's own status, as a shell would. Every subcommand parses the
 * same options (exec_parse) and refuses those that are not its own. */
#include "ctl/ctl-int.h"

#include <poll.h>

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text output ------------------------------------------------------------------------- */

static void print_status(const Kin__V1__ExecStatus *s)
{
	printf("cell:      %s\nname:      %s\nstate:     %s\npid:       %d\n", s->cell, s->name,
	       s->state, s->pid);
	if (s->exited && s->status_unknown)
		printf("ended:     status unknown (adopted after a restart of kin, whose child it "
		       "was not)\n");
	else if (s->exited && s->signal)
		printf("ended:     killed by signal %d\n", s->signal);
	else if (s->exited)
		printf("ended:     exit status %d\n", s->exit_code);
	printf("restarts:  %u\noutput:    %llu bytes stdout, %llu bytes stderr\n", s->restarts,
	       (unsigned long long)s->stdout_bytes, (unsigned long long)s->stderr_bytes);
}

static void print_status_row(const Kin__V1__ExecStatus *s)
{
	char end[32] = "-";
	if (s->exited && s->status_unknown)
		snprintf(end, sizeof(end), "unknown");
	else if (s->exited && s->signal)
		snprintf(end, sizeof(end), "signal %d", s->signal);
	else if (s->exited)
		snprintf(end, sizeof(end), "exit %d", s->exit_code);
	printf("%-24s %-16s %-9s %7d  %-10s %u\n", s->cell, s->name, s->state, s->pid, end,
	       s->restarts);
}

/* ---- exec ---------------------------------------------------------------------------------- */

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
	    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
	    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"CONT", SIGCONT},
	    {"STOP", SIGSTOP}, {"ALRM", SIGALRM}, {"PIPE", SIGPIPE}, {"WINCH", SIGWINCH},
	    {"TSTP", SIGTSTP},
	};
	uint32_t n;
	if (str_to_u32(s, &n) == 0)
		return n >= 1 && n <= (uint32_t)SIGRTMAX ? (int)n : -1;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].sig;
	return -1;
}

static int parse_idmap(const char *s, Kin__V1__IdMap *m)
{
	unsigned a, b, c;
	char tail;
	if (sscanf(s, "%u:%u:%u%c", &a, &b, &c, &tail) != 3)
		return -EINVAL;
	kin__v1__id_map__init(m);
	m->inside = a;
	m->outside = b;
	m->count = c;
	return 0;
}

enum {
	O_ENV = 256,
	O_CWD,
	O_UID,
	O_GID,
	O_GROUPS,
	O_UMASK,
	O_RLIMIT,
	O_CAPS,
	O_AMBIENT,
	O_NNP,
	O_SECCOMP,
	O_NS,
	O_UIDMAP,
	O_GIDMAP,
	O_HOSTNAME,
	O_ROOT,
	O_IMAGE,
	O_USER,
	O_BUNDLE,
	O_STDIN_FROM,
	O_STDOUT_TO,
	O_STDERR_TO,
	O_RO,
	O_STDIN,
	O_LOGSIZE,
	O_RESTART,
	O_BACKOFF,
	O_GRACE,
	O_DETACH_KEY,
	O_STDOUT,
	O_STDERR,
	O_CLOSE,
	O_FROM,
};

const struct option ctl_exec_opts[] = {
    {"env", required_argument, NULL, O_ENV},
    {"cwd", required_argument, NULL, O_CWD},
    {"uid", required_argument, NULL, O_UID},
    {"gid", required_argument, NULL, O_GID},
    {"groups", required_argument, NULL, O_GROUPS},
    {"umask", required_argument, NULL, O_UMASK},
    {"rlimit", required_argument, NULL, O_RLIMIT},
    {"caps", required_argument, NULL, O_CAPS},
    {"ambient", required_argument, NULL, O_AMBIENT},
    {"no-new-privs", no_argument, NULL, O_NNP},
    {"seccomp", required_argument, NULL, O_SECCOMP},
    {"ns", required_argument, NULL, O_NS},
    {"namespaces", required_argument, NULL, O_NS},
    {"uid-map", required_argument, NULL, O_UIDMAP},
    {"gid-map", required_argument, NULL, O_GIDMAP},
    {"hostname", required_argument, NULL, O_HOSTNAME},
    {"root", required_argument, NULL, O_ROOT},
    {"image", required_argument, NULL, O_IMAGE},
    {"user", required_argument, NULL, O_USER},
    {"bundle", required_argument, NULL, O_BUNDLE},
    {"stdin-from", required_argument, NULL, O_STDIN_FROM},
    {"stdout-to", required_argument, NULL, O_STDOUT_TO},
    {"stderr-to", required_argument, NULL, O_STDERR_TO},
    {"read-only", no_argument, NULL, O_RO},
    {"stdin", no_argument, NULL, O_STDIN},
    {"log-size", required_argument, NULL, O_LOGSIZE},
    {"restart", required_argument, NULL, O_RESTART},
    {"backoff", required_argument, NULL, O_BACKOFF},
    {"grace", required_argument, NULL, O_GRACE},
    {"follow", no_argument, NULL, 'f'},
    {"stdout", no_argument, NULL, O_STDOUT},
    {"stderr", no_argument, NULL, O_STDERR},
    {"close", no_argument, NULL, O_CLOSE},
    {"from", required_argument, NULL, O_FROM},
    {"tty", no_argument, NULL, 't'},
    {"interactive", no_argument, NULL, 'i'},
    {"detach-key", required_argument, NULL, O_DETACH_KEY},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the options and words after `exec SUB` say. The spec's tables are
 * fixed-size: a long command line is refused, never allocated for. */
struct exec_args {
	Kin__V1__ExecSpec spec;
	char *env[256], *rlimits[16];
	uint32_t groups[32];
	Kin__V1__IdMap umaps[8], gmaps[8], *umapp[8], *gmapp[8];
	bool follow, close_at_eof, resume, tty, interactive;
	int detach_key; /* -1: none */
	uint64_t grace, from[2];
	Kin__V1__LogStream which;
	int dd; /* the index of "--", argc without one */
	char **pos;
	int npos;
};

/* The ExecSpec field a plain string option sets, or NULL. */
static char **start_str_field(Kin__V1__ExecSpec *sp, int c)
{
	switch (c) {
	case O_CWD:
		return &sp->cwd;
	case O_UMASK:
		return &sp->umask;
	case O_CAPS:
		return &sp->caps;
	case O_AMBIENT:
		return &sp->ambient;
	case O_SECCOMP:
		return &sp->seccomp;
	case O_NS:
		return &sp->namespaces;
	case O_HOSTNAME:
		return &sp->hostname;
	case O_ROOT:
		return &sp->root;
	case O_IMAGE:
		return &sp->image;
	case O_USER:
		return &sp->user;
	case O_BUNDLE:
		return &sp->bundle;
	case O_STDIN_FROM:
		return &sp->stdin_path;
	case O_STDOUT_TO:
		return &sp->stdout_path;
	case O_STDERR_TO:
		return &sp->stderr_path;
	case O_RESTART:
		return &sp->restart;
	default:
		return NULL;
	}
}

static int start_opt_groups(struct ctl *ctl, struct exec_args *a, char *arg)
{
	char *save, *tok, *s = arg;
	uint64_t v;
	while ((tok = strtok_r(s, ",", &save))) {
		s = NULL;
		if (a->spec.n_groups == ARRAY_SIZE(a->groups) ||
		    str_to_u64(tok, UINT32_MAX - 1, &v) < 0)
			return ctl_usage(ctl, "--groups: expected at most 32 numeric ids");
		a->groups[a->spec.n_groups++] = (uint32_t)v;
	}
	return CTL_OK;
}

static int start_opt_idmap(struct ctl *ctl, struct exec_args *a, int c, char *arg)
{
	bool u = c == O_UIDMAP;
	size_t *n = u ? &a->spec.n_uid_map : &a->spec.n_gid_map;
	Kin__V1__IdMap *m = u ? a->umaps : a->gmaps, **p = u ? a->umapp : a->gmapp;
	if (*n == 8 || parse_idmap(arg, &m[*n]) < 0)
		return ctl_usage(ctl, "'%s': expected INSIDE:OUTSIDE:COUNT (at most 8)", arg);
	p[*n] = &m[*n];
	(*n)++;
	return CTL_OK;
}

static int start_opt_backoff(struct ctl *ctl, Kin__V1__ExecSpec *sp, char *arg)
{
	char *colon = strchr(arg, ':');
	if (colon)
		*colon = '\0';
	if (str_to_duration_ms(arg, 3600 * 1000, &sp->backoff_base_ms) < 0 ||
	    (colon && str_to_duration_ms(colon + 1, 3600 * 1000, &sp->backoff_cap_ms) < 0))
		return ctl_usage(ctl, "--backoff: expected BASE[:CAP] durations (100ms:30s)");
	return CTL_OK;
}

/* One of exec start's own options (O_ENV..O_BACKOFF) into the spec. */
static int start_opt(struct ctl *ctl, struct exec_args *a, int c, char *arg)
{
	Kin__V1__ExecSpec *sp = &a->spec;
	char **field = start_str_field(sp, c);
	uint64_t v;
	if (field) {
		*field = arg;
		return CTL_OK;
	}
	switch (c) {
	case O_ENV:
		if (sp->n_env == ARRAY_SIZE(a->env) || !strchr(arg, '='))
			return ctl_usage(ctl, "--env '%s': expected K=V (at most 256)", arg);
		a->env[sp->n_env++] = arg;
		return CTL_OK;
	case O_UID:
	case O_GID:
		if (str_to_u64(arg, UINT32_MAX - 1, &v) < 0)
			return ctl_usage(ctl, "'%s': expected a numeric id", arg);
		*(c == O_UID ? &sp->uid : &sp->gid) = (uint32_t)v;
		return CTL_OK;
	case O_GROUPS:
		return start_opt_groups(ctl, a, arg);
	case O_RLIMIT:
		if (sp->n_rlimits == ARRAY_SIZE(a->rlimits))
			return ctl_usage(ctl, "at most 16 --rlimit");
		a->rlimits[sp->n_rlimits++] = arg;
		return CTL_OK;
	case O_UIDMAP:
	case O_GIDMAP:
		return start_opt_idmap(ctl, a, c, arg);
	case O_NNP:
	case O_RO:
	case O_STDIN:
		*(c == O_NNP  ? &sp->no_new_privs
		  : c == O_RO ? &sp->root_readonly
		              : &sp->stdin_pipe) = true;
		return CTL_OK;
	case O_LOGSIZE:
		if (str_to_size(arg, 1, UINT64_MAX, &sp->log_bytes) < 0)
			return ctl_usage(ctl, "--log-size '%s': expected bytes, K, M or G", arg);
		return CTL_OK;
	default: /* O_BACKOFF */
		return start_opt_backoff(ctl, sp, arg);
	}
}

/* The options of the other subcommands (logs, stop, stdin). */
static int other_opt(struct ctl *ctl, struct exec_args *a, int c, const char *arg)
{
	switch (c) {
	case 'f':
		a->follow = true;
		return CTL_OK;
	case O_STDOUT:
	case O_STDERR:
		a->which =
		    c == O_STDOUT ? KIN__V1__LOG_STREAM__STDOUT : KIN__V1__LOG_STREAM__STDERR;
		return CTL_OK;
	case O_CLOSE:
		a->close_at_eof = true;
		return CTL_OK;
	case O_FROM: { /* OUT[:ERR] */
		char out[24], *err;
		str_copy(out, sizeof(out), arg);
		if ((err = strchr(out, ':')))
			*err++ = '\0';
		if (strlen(arg) >= sizeof(out) || str_to_u64(out, UINT64_MAX, &a->from[0]) < 0 ||
		    str_to_u64(err ? err : out, UINT64_MAX, &a->from[1]) < 0)
			return ctl_usage(ctl, "--from '%s': expected a byte offset, or OUT:ERR",
			                 arg);
		a->resume = true;
		return CTL_OK;
	}
	case 't':
	case 'i':
		*(c == 't' ? &a->tty : &a->interactive) = true;
		return CTL_OK;
	case O_DETACH_KEY:
		if ((a->detach_key = ctl_detach_key_parse(arg)) < -1)
			return ctl_usage(ctl,
			                 "--detach-key '%s': expected ^X (a control key: ^], ^P) "
			                 "or none",
			                 arg);
		return CTL_OK;
	case O_GRACE:
		if (str_to_duration_ms(arg, 3600 * 1000, &a->grace) < 0 || !a->grace)
			return ctl_usage(
			    ctl, "--grace '%s': expected a duration (10s, 500ms), at most 1h", arg);
		return CTL_OK;
	default:
		return CTL_USAGE;
	}
}

/* Options that are not sub's own are refused by name. */
static int exec_opts_check(struct ctl *ctl, const struct exec_args *a, const char *sub)
{
	bool attach = !strcmp(sub, "attach"), start = !strcmp(sub, "start");
	if ((a->follow || a->which != KIN__V1__LOG_STREAM__BOTH) && strcmp(sub, "logs"))
		return ctl_usage(ctl, "-f, --stdout and --stderr are for exec logs");
	if (a->resume && strcmp(sub, "logs") && !attach)
		return ctl_usage(ctl, "--from is for exec logs and exec attach");
	if ((a->tty || a->detach_key != CTL_DETACH_KEY_DEFAULT) && !start && !attach)
		return ctl_usage(ctl, "-t and --detach-key are for exec start and exec attach");
	if (a->interactive && !start)
		return ctl_usage(ctl, "-i is for exec start (exec attach is interactive)");
	if ((a->interactive || attach) && ctl->json)
		return ctl_usage(ctl, "an attached exec prints what the executable does, not json");
	if (a->grace && strcmp(sub, "stop"))
		return ctl_usage(ctl, "--grace is for exec stop");
	if (a->close_at_eof && strcmp(sub, "stdin"))
		return ctl_usage(ctl, "--close is for exec stdin");
	return CTL_OK;
}

static void exec_args_init(struct exec_args *a, int argc, char **argv)
{
	Kin__V1__ExecSpec *sp = &a->spec;
	*a = (struct exec_args){
	    .which = KIN__V1__LOG_STREAM__BOTH, .dd = argc, .detach_key = CTL_DETACH_KEY_DEFAULT};
	kin__v1__exec_spec__init(sp);
	sp->env = a->env;
	sp->rlimits = a->rlimits;
	sp->groups = a->groups;
	sp->uid_map = a->umapp;
	sp->gid_map = a->gmapp;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			a->dd = i;
			break;
		}
}

/* The options before "--" (getopt permutes), then the words left in
 * a->pos: CTL_OK to go on, else the exit code. */
static int exec_parse(struct ctl *ctl, int argc, char **argv, struct exec_args *a)
{
	bool is_start = !strcmp(argv[1], "start");
	int c, r;
	exec_args_init(a, argc, argv);
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(a->dd - 1, argv + 1, ":fo:hit", ctl_exec_opts, NULL)) != -1) {
		int k = ctl_common_opt(ctl, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		bool start_only = c >= O_ENV && c <= O_BACKOFF;
		if (start_only && !is_start)
			return ctl_usage(ctl, "option '%s' is for exec start", argv[optind]);
		r = start_only ? start_opt(ctl, a, c, optarg) : other_opt(ctl, a, c, optarg);
		if (r != CTL_OK)
			return r;
	}
	if ((r = exec_opts_check(ctl, a, argv[1])) != CTL_OK)
		return r;
	/* An image brings its own Entrypoint and Cmd. */
	if (is_start && a->dd == argc && !a->spec.image[0] && !a->spec.bundle[0])
		return ctl_usage(ctl,
		                 "needs '-- ARGV...' after the options (or --image, --bundle)");
	a->pos = argv + 1 + optind;
	a->npos = a->dd - 1 - optind;
	return CTL_OK;
}

/* exec_parse, then CELL NAME (and as many more words as extra), no "--". */
static int exec_parse_target(struct ctl *ctl, int argc, char **argv, struct exec_args *a, int extra)
{
	int r = exec_parse(ctl, argc, argv, a);
	if (r != CTL_OK)
		return r;
	if (a->npos != 2 + extra)
		return ctl_usage(ctl, !extra                       ? "needs CELL NAME"
		                      : !strcmp(argv[1], "resize") ? "needs CELL NAME ROWSxCOLS"
		                                                   : "needs CELL NAME SIGNAL");
	if (a->dd != argc && strcmp(argv[1], "start"))
		return ctl_usage(ctl, "'--' is for exec start");
	return CTL_OK;
}

int ctl_exit_status(const Kin__V1__ExecStatus *s)
{
	if (s->status_unknown)
		return 255;
	if (s->signal)
		return 128 + s->signal;
	return s->exit_code & 0xff;
}

int ctl_exec_start_call(struct ctl *ctl, Kin__V1__StartRequest *in, ProtobufCMessage **ret_out)
{
	unsigned rows, cols;
	if (in->spec->terminal && !in->spec->rows && ctl_window_size(&rows, &cols)) {
		in->spec->rows = rows < 4096 ? rows : 4096;
		in->spec->cols = cols < 4096 ? cols : 4096;
	}
	/* kin answers a start within its setup deadline (then kills the
	 * child): by default wait that long, and a little more, so a setup
	 * that times out is told as such, not as an unreachable kin. */
	struct err st;
	const struct ctl_call c = {
	    .service = "kin.v1.Exec",
	    .method = "Start",
	    .in = &in->base,
	    .out_desc = &kin__v1__exec_status__descriptor,
	    .timeout_ms = !ctl->timeout_set && ctl->timeout_ms < CTL_EXEC_START_WAIT_MS
	                      ? CTL_EXEC_START_WAIT_MS
	                      : ctl->timeout_ms,
	};
	return ctl_call(ctl, &c, ret_out, &st);
}

static int exec_start(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__StartRequest in = KIN__V1__START_REQUEST__INIT;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	if (a.dd + 1 >= argc && !a.spec.image[0] && !a.spec.bundle[0])
		return ctl_usage(ctl, "needs a command after '--'");
	static char bundle[PATH_MAX];
	if (a.spec.bundle[0] && a.spec.bundle[0] != '/') { /* kin on this machine, as usual */
		if (!realpath(a.spec.bundle, bundle))
			return ctl_usage(ctl, "--bundle %s: no such directory", a.spec.bundle);
		a.spec.bundle = bundle;
	}
	in.cell = a.pos[0];
	in.name = a.pos[1];
	in.spec = &a.spec;
	a.spec.terminal = a.tty;
	a.spec.stdin_pipe = a.spec.stdin_pipe || (a.interactive && !a.tty);
	a.spec.argv = a.dd + 1 < argc ? argv + a.dd + 1 : NULL;
	a.spec.n_argv = a.dd + 1 < argc ? (size_t)(argc - a.dd - 1) : 0;
	ProtobufCMessage *out;
	if ((r = ctl_exec_start_call(ctl, &in, &out)) != CTL_OK)
		return r;
	const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
	if (ctl->json)
		ctl_json_line(out);
	else if (!a.interactive)
		printf("started %s/%s pid %d\n", s->cell, s->name, s->pid);
	protobuf_c_message_free_unpacked(out, NULL);
	if (!a.interactive)
		return CTL_OK;
	/* Everything it wrote since it started, then live: nothing is missed. */
	const struct ctl_attach at = {.cell = in.cell,
	                              .name = in.name,
	                              .terminal = a.tty,
	                              .resume = true,
	                              .close_at_eof = true,
	                              .detach_key = a.detach_key};
	return ctl_attach(ctl, &at);
}

static int exec_attach(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	/* Whether it has a terminal decides raw mode: asked first. */
	r = ctl_call_simple(ctl, "kin.v1.Exec", "Status", &in.base,
	                    &kin__v1__exec_status__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	bool tty = ((Kin__V1__ExecStatus *)out)->terminal;
	protobuf_c_message_free_unpacked(out, NULL);
	const struct ctl_attach at = {.cell = in.cell,
	                              .name = in.name,
	                              .terminal = tty,
	                              .require_terminal = a.tty,
	                              .resume = a.resume,
	                              .from = {a.from[0], a.from[1]},
	                              .detach_key = a.detach_key};
	return ctl_attach(ctl, &at);
}

static int exec_list(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__ListExecRequest in = KIN__V1__LIST_EXEC_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = exec_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	if (a.npos > 1)
		return ctl_usage(ctl, "takes at most one CELL");
	in.cell = a.npos ? a.pos[0] : (char *)"";
	r = ctl_call_simple(ctl, "kin.v1.Exec", "List", &in.base,
	                    &kin__v1__list_exec_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ListExecResponse *m = (Kin__V1__ListExecResponse *)out;
	if (ctl->json) {
		ctl_json_line(out);
	} else {
		printf("%-24s %-16s %-9s %7s  %-10s %s\n", "CELL", "NAME", "STATE", "PID", "ENDED",
		       "RESTARTS");
		for (size_t i = 0; i < m->n_executables; i++)
			print_status_row(m->executables[i]);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

/* An ExecStatus answer (status, wait, signal, stop) printed; wait's exit
 * code is the executable's status. */
static int print_answer(struct ctl *ctl, ProtobufCMessage *out, bool waits)
{
	const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
	if (ctl->json)
		ctl_json_line(out);
	else if (waits && s->status_unknown)
		printf("%s/%s ended; its status is unknown (adopted after a restart of kin)\n",
		       s->cell, s->name);
	else if (waits && s->signal)
		printf("%s/%s killed by signal %d\n", s->cell, s->name, s->signal);
	else if (waits)
		printf("%s/%s exited with status %d\n", s->cell, s->name, s->exit_code);
	else
		print_status(s);
	int r = waits ? ctl_exit_status(s) : CTL_OK;
	protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

/* status and wait */
static int exec_status(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	bool waits = !strcmp(argv[1], "wait");
	ProtobufCMessage *out;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	r = ctl_call_simple(ctl, "kin.v1.Exec", waits ? "Wait" : "Status", &in.base,
	                    &kin__v1__exec_status__descriptor, &out, waits);
	return r != CTL_OK ? r : print_answer(ctl, out, waits);
}

static int exec_signal(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__SignalRequest in = KIN__V1__SIGNAL_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = exec_parse_target(ctl, argc, argv, &a, 1);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	in.signal = parse_signal(a.pos[2]);
	if (in.signal < 0)
		return ctl_usage(ctl, "'%s': expected a signal name (TERM, SIGKILL) or number",
		                 a.pos[2]);
	r = ctl_call_simple(ctl, "kin.v1.Exec", "Signal", &in.base,
	                    &kin__v1__exec_status__descriptor, &out, false);
	return r != CTL_OK ? r : print_answer(ctl, out, false);
}

/* A terminal's window size; kin checks the range (1-4096 each). */
static int exec_resize(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__ResizeRequest in = KIN__V1__RESIZE_REQUEST__INIT;
	ProtobufCMessage *out;
	uint64_t rows, cols;
	char buf[32], *x;
	int r = exec_parse_target(ctl, argc, argv, &a, 1);
	if (r != CTL_OK)
		return r;
	str_copy(buf, sizeof(buf), a.pos[2]);
	if (!(x = strchr(buf, 'x')) || (*x++ = '\0', str_to_u64(buf, UINT32_MAX, &rows) < 0) ||
	    str_to_u64(x, UINT32_MAX, &cols) < 0)
		return ctl_usage(ctl, "'%s': expected ROWSxCOLS (40x120)", a.pos[2]);
	in.cell = a.pos[0];
	in.name = a.pos[1];
	in.rows = (uint32_t)rows;
	in.cols = (uint32_t)cols;
	r = ctl_call_simple(ctl, "kin.v1.Exec", "Resize", &in.base, &kin__v1__empty__descriptor,
	                    &out, false);
	if (r != CTL_OK)
		return r;
	protobuf_c_message_free_unpacked(out, NULL);
	if (ctl->json)
		printf("{}\n");
	return CTL_OK;
}

static int exec_stop(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__StopRequest in = KIN__V1__STOP_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	in.grace_ms = a.grace;
	r = ctl_call_simple(ctl, "kin.v1.Exec", "Stop", &in.base, &kin__v1__exec_status__descriptor,
	                    &out, true);
	return r != CTL_OK ? r : print_answer(ctl, out, false);
}

static int exec_delete(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	r = ctl_call_simple(ctl, "kin.v1.Exec", "Delete", &in.base, NULL, NULL, false);
	if (r == CTL_OK)
		printf(ctl->json ? "{}\n" : "deleted %s/%s\n", in.cell, in.name);
	return r;
}

void ctl_log_print(const ProtobufCMessage *m)
{
	const Kin__V1__LogChunk *c = (const Kin__V1__LogChunk *)m;
	if (c->dropped)
		fprintf(stderr,
		        "kin ctl: [%llu bytes missed: not kept, or this reader was too slow]\n",
		        (unsigned long long)c->dropped);
	FILE *f = c->stream == KIN__V1__LOG_STREAM__STDERR ? stderr : stdout;
	fwrite(c->data.data, 1, c->data.len, f);
	fflush(f);
}

static int exec_logs(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	Kin__V1__LogsRequest in = KIN__V1__LOGS_REQUEST__INIT;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	in.follow = a.follow;
	in.stream = a.which;
	in.resume = a.resume;
	in.stdout_from = a.from[0];
	in.stderr_from = a.from[1];
	return ctl_stream_run(ctl, "kin.v1.Exec", "Logs", &in.base, &kin__v1__log_chunk__descriptor,
	                      ctl_log_print);
}

/* One chunk to the executable's stdin pipe, over the run's connection.
 * kin writes what the pipe takes now and says how much: the rest is sent
 * again. Only when the pipe took nothing does kin ctl wait before asking
 * again, from 1 ms growing to 64 ms, so a slow reader costs few calls. */
static int stdin_send(struct ctl *ctl, Kin__V1__StdinRequest *in, uint8_t *buf, size_t n,
                      bool close)
{
	size_t off = 0;
	int idle_ms = 0;
	do {
		ProtobufCMessage *out;
		in->data.data = buf + off;
		in->data.len = n - off;
		in->close = close;
		int r = ctl_call_simple(ctl, "kin.v1.Exec", "Stdin", &in->base,
		                        &kin__v1__stdin_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		uint64_t w = ((Kin__V1__StdinResponse *)out)->written;
		protobuf_c_message_free_unpacked(out, NULL);
		off += (size_t)w;
		idle_ms = w ? 0 : !idle_ms ? 1 : idle_ms < 64 ? idle_ms * 2 : 64;
		if (idle_ms && off < n)
			poll(NULL, 0, idle_ms); /* the pipe is full: the reader is slow */
	} while (off < n);
	return CTL_OK;
}

static int exec_stdin(struct ctl *ctl, int argc, char **argv)
{
	static struct exec_args a;
	static uint8_t buf[64 * 1024];
	Kin__V1__StdinRequest in = KIN__V1__STDIN_REQUEST__INIT;
	int r = exec_parse_target(ctl, argc, argv, &a, 0);
	if (r != CTL_OK)
		return r;
	in.cell = a.pos[0];
	in.name = a.pos[1];
	for (bool eof = false; !eof;) {
		size_t n = fread(buf, 1, sizeof(buf), stdin);
		eof = n < sizeof(buf);
		if ((r = stdin_send(ctl, &in, buf, n, eof && a.close_at_eof)) != CTL_OK)
			return r;
	}
	if (ctl->json)
		printf("{}\n");
	return CTL_OK;
}

const struct ctl_cmd ctl_exec_cmds[] = {
    {"start", "start an executable in a cell", exec_start, ctl_exec_opts, NULL},
    {"list", "executables, of one cell or all", exec_list, ctl_exec_opts, NULL},
    {"status", "an executable's state", exec_status, ctl_exec_opts, NULL},
    {"signal", "send a signal", exec_signal, ctl_exec_opts, NULL},
    {"stop", "stop it: TERM, then KILL after the grace", exec_stop, ctl_exec_opts, NULL},
    {"wait", "wait for its end; exits with its status", exec_status, ctl_exec_opts, NULL},
    {"logs", "its output", exec_logs, ctl_exec_opts, NULL},
    {"stdin", "send kin ctl's stdin", exec_stdin, ctl_exec_opts, NULL},
    {"attach", "attach to its terminal or pipes", exec_attach, ctl_exec_opts, NULL},
    {"resize", "set its terminal's window size", exec_resize, ctl_exec_opts, NULL},
    {"delete", "forget an ended executable", exec_delete, ctl_exec_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_exec_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(
	    ctl, ctl_exec_cmds, argc, argv,
	    "needs a subcommand: start, list, status, signal, stop, wait, "
	    "logs, stdin, attach, resize, delete",
	    "unknown subcommand (start, list, status, signal, stop, wait, logs, "
	    "stdin, attach, resize, delete)",
	    true);
}
