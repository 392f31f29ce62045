/* ctl_exec: `kin ctl exec ...` over kin.v1.Exec and `kin ctl events` over
 * kin.v1.Events. An ExecSpec is filled from the options in fixed-size
 * tables (static: one command per process), so a long command line is
 * refused with a sentence, never allocated for. `exec wait` exits with the
 * executable's own status, as a shell would. */
#include "ctl/cc.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* ---- text output ------------------------------------------------------------------------- */

static void print_status(const Kin__V1__ExecStatus *s)
{
	printf("cell:      %s\nname:      %s\nstate:     %s\npid:       %d\n", s->cell, s->name,
	       s->state, s->pid);
	if (s->exited && s->signal)
		printf("ended:     killed by signal %d\n", s->signal);
	else if (s->exited)
		printf("ended:     exit status %d\n", s->exit_code);
	printf("restarts:  %u\noutput:    %llu bytes stdout, %llu bytes stderr\n", s->restarts,
	       (unsigned long long)s->stdout_bytes, (unsigned long long)s->stderr_bytes);
}

static void print_status_row(const Kin__V1__ExecStatus *s)
{
	char end[32] = "-";
	if (s->exited && s->signal)
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

static int parse_size(const char *s, uint64_t *ret)
{
	char num[32];
	size_t n = strlen(s);
	uint64_t mul = 1, v;
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'K':
	case 'k':
		mul = 1024;
		break;
	case 'M':
	case 'm':
		mul = 1024 * 1024;
		break;
	case 'G':
	case 'g':
		mul = 1024 * 1024 * 1024;
		break;
	default:
		break;
	}
	if (mul > 1)
		num[n - 1] = '\0';
	if (str_to_u64(num, UINT64_MAX / mul, &v) < 0)
		return -EINVAL;
	*ret = v * mul;
	return 0;
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
	O_RO,
	O_STDIN,
	O_LOGSIZE,
	O_RESTART,
	O_BACKOFF,
	O_GRACE,
	O_STDOUT,
	O_STDERR,
	O_CLOSE,
	O_CELL,
};

static const struct option exec_longopts[] = {
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
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct start_args {
	Kin__V1__ExecSpec spec;
	char *env[256], *rlimits[16];
	uint32_t groups[32];
	Kin__V1__IdMap umaps[8], gmaps[8], *umapp[8], *gmapp[8];
};

/* Waits for a run to end; exits with its status as a shell would. */
static int exit_status_of(const Kin__V1__ExecStatus *s)
{
	if (s->signal)
		return 128 + s->signal;
	return s->exit_code & 0xff;
}

static void log_print(const ProtobufCMessage *m)
{
	const Kin__V1__LogChunk *c = (const Kin__V1__LogChunk *)m;
	if (c->dropped)
		fprintf(stderr, "kin ctl: [%llu bytes dropped: this reader was too slow]\n",
		        (unsigned long long)c->dropped);
	FILE *f = c->stream == KIN__V1__LOG_STREAM__STDERR ? stderr : stdout;
	fwrite(c->data.data, 1, c->data.len, f);
	fflush(f);
}

static int exec_logs(struct cc *cc, const char *cell, const char *name, bool follow,
                     Kin__V1__LogStream which)
{
	Kin__V1__LogsRequest in = KIN__V1__LOGS_REQUEST__INIT;
	in.cell = (char *)cell;
	in.name = (char *)name;
	in.follow = follow;
	in.stream = which;
	return ctl_cc_stream_run(cc, "kin.v1.Exec", "Logs", &in.base,
	                         &kin__v1__log_chunk__descriptor, log_print);
}

static int exec_stdin(struct cc *cc, const char *cell, const char *name, bool close_at_eof)
{
	static uint8_t buf[64 * 1024];
	Kin__V1__StdinRequest in = KIN__V1__STDIN_REQUEST__INIT;
	in.cell = (char *)cell;
	in.name = (char *)name;
	for (;;) {
		size_t n = fread(buf, 1, sizeof(buf), stdin);
		bool eof = n < sizeof(buf);
		size_t off = 0;
		do {
			ProtobufCMessage *out;
			in.data.data = buf + off;
			in.data.len = n - off;
			in.close = eof && close_at_eof;
			int r = ctl_cc_call(cc, "kin.v1.Exec", "Stdin", &in.base,
			                    &kin__v1__stdin_response__descriptor, &out, false);
			if (r != CTL_OK)
				return r;
			uint64_t w = ((Kin__V1__StdinResponse *)out)->written;
			protobuf_c_message_free_unpacked(out, NULL);
			off += (size_t)w;
			if (w == 0 && off < n)
				usleep(10000); /* the pipe is full: the executable reads slowly */
		} while (off < n);
		if (eof)
			break;
	}
	if (cc->json)
		printf("{}\n");
	return CTL_OK;
}

int ctl_cc_cmd_exec(struct cc *cc, int argc, char **argv)
{
	static char what[64];
	static struct start_args sa;
	Kin__V1__ExecSpec *sp = &sa.spec;
	bool follow = false, close_at_eof = false;
	uint64_t grace = 0, v;
	Kin__V1__LogStream which = KIN__V1__LOG_STREAM__BOTH;
	int c, r, dd = argc;

	if (argc < 2)
		return ctl_cc_usage(cc,
		                    "needs a subcommand: start, list, status, signal, stop, wait, "
		                    "logs, stdin, delete");
	const char *sub = argv[1];
	snprintf(what, sizeof(what), "exec %s", sub);
	cc->what = what;
	bool is_start = !strcmp(sub, "start");
	kin__v1__exec_spec__init(sp);
	sp->env = sa.env;
	sp->rlimits = sa.rlimits;
	sp->groups = sa.groups;
	sp->uid_map = sa.umapp;
	sp->gid_map = sa.gmapp;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	if (is_start && dd == argc)
		return ctl_cc_usage(cc, "needs '-- ARGV...' after the options");
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(dd - 1, argv + 1, ":fo:h", exec_longopts, NULL)) != -1) {
		int k = ctl_cc_common_opt(cc, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		bool start_only = c >= O_ENV && c <= O_BACKOFF;
		if (start_only && !is_start)
			return ctl_cc_usage(cc, "option '%s' is for exec start", argv[optind]);
		switch (c) {
		case 'f':
			follow = true;
			break;
		case O_STDOUT:
			which = KIN__V1__LOG_STREAM__STDOUT;
			break;
		case O_STDERR:
			which = KIN__V1__LOG_STREAM__STDERR;
			break;
		case O_CLOSE:
			close_at_eof = true;
			break;
		case O_GRACE:
			if (str_to_duration_ms(optarg, 3600 * 1000, &grace) < 0 || !grace)
				return ctl_cc_usage(
				    cc,
				    "--grace '%s': expected a duration (10s, 500ms), at "
				    "most 1h",
				    optarg);
			break;
		case O_ENV:
			if (sp->n_env == ARRAY_SIZE(sa.env) || !strchr(optarg, '='))
				return ctl_cc_usage(cc, "--env '%s': expected K=V (at most 256)",
				                    optarg);
			sa.env[sp->n_env++] = optarg;
			break;
		case O_CWD:
			sp->cwd = optarg;
			break;
		case O_UID:
		case O_GID:
			if (str_to_u64(optarg, UINT32_MAX - 1, &v) < 0)
				return ctl_cc_usage(cc, "'%s': expected a numeric id", optarg);
			*(c == O_UID ? &sp->uid : &sp->gid) = (uint32_t)v;
			break;
		case O_GROUPS: {
			char *save, *tok, *s = optarg;
			while ((tok = strtok_r(s, ",", &save))) {
				s = NULL;
				if (sp->n_groups == ARRAY_SIZE(sa.groups) ||
				    str_to_u64(tok, UINT32_MAX - 1, &v) < 0)
					return ctl_cc_usage(
					    cc, "--groups: expected at most 32 numeric ids");
				sa.groups[sp->n_groups++] = (uint32_t)v;
			}
			break;
		}
		case O_UMASK:
			sp->umask = optarg;
			break;
		case O_RLIMIT:
			if (sp->n_rlimits == ARRAY_SIZE(sa.rlimits))
				return ctl_cc_usage(cc, "at most 16 --rlimit");
			sa.rlimits[sp->n_rlimits++] = optarg;
			break;
		case O_CAPS:
			sp->caps = optarg;
			break;
		case O_AMBIENT:
			sp->ambient = optarg;
			break;
		case O_NNP:
			sp->no_new_privs = true;
			break;
		case O_SECCOMP:
			sp->seccomp = optarg;
			break;
		case O_NS:
			sp->namespaces = optarg;
			break;
		case O_UIDMAP:
		case O_GIDMAP: {
			bool u = c == O_UIDMAP;
			size_t *n = u ? &sp->n_uid_map : &sp->n_gid_map;
			Kin__V1__IdMap *m = u ? sa.umaps : sa.gmaps, **p = u ? sa.umapp : sa.gmapp;
			if (*n == 8 || parse_idmap(optarg, &m[*n]) < 0)
				return ctl_cc_usage(
				    cc, "'%s': expected INSIDE:OUTSIDE:COUNT (at most 8)", optarg);
			p[*n] = &m[*n];
			(*n)++;
			break;
		}
		case O_HOSTNAME:
			sp->hostname = optarg;
			break;
		case O_ROOT:
			sp->root = optarg;
			break;
		case O_RO:
			sp->root_readonly = true;
			break;
		case O_STDIN:
			sp->stdin_pipe = true;
			break;
		case O_LOGSIZE:
			if (parse_size(optarg, &sp->log_bytes) < 0)
				return ctl_cc_usage(
				    cc, "--log-size '%s': expected bytes, K, M or G", optarg);
			break;
		case O_RESTART:
			sp->restart = optarg;
			break;
		case O_BACKOFF: {
			char *colon = strchr(optarg, ':');
			if (colon)
				*colon = '\0';
			if (str_to_duration_ms(optarg, 3600 * 1000, &sp->backoff_base_ms) < 0 ||
			    (colon &&
			     str_to_duration_ms(colon + 1, 3600 * 1000, &sp->backoff_cap_ms) < 0))
				return ctl_cc_usage(
				    cc, "--backoff: expected BASE[:CAP] durations (100ms:30s)");
			break;
		}
		default:
			return CTL_USAGE;
		}
	}
	if ((follow || which != KIN__V1__LOG_STREAM__BOTH) && strcmp(sub, "logs"))
		return ctl_cc_usage(cc, "-f, --stdout and --stderr are for exec logs");
	if (grace && strcmp(sub, "stop"))
		return ctl_cc_usage(cc, "--grace is for exec stop");
	if (close_at_eof && strcmp(sub, "stdin"))
		return ctl_cc_usage(cc, "--close is for exec stdin");
	char **pos = argv + 1 + optind;
	int npos = dd - 1 - optind;

	if (!strcmp(sub, "list")) {
		if (npos > 1)
			return ctl_cc_usage(cc, "takes at most one CELL");
		Kin__V1__ListExecRequest in = KIN__V1__LIST_EXEC_REQUEST__INIT;
		ProtobufCMessage *out;
		in.cell = npos ? pos[0] : (char *)"";
		r = ctl_cc_call(cc, "kin.v1.Exec", "List", &in.base,
		                &kin__v1__list_exec_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ListExecResponse *m = (Kin__V1__ListExecResponse *)out;
		if (cc->json) {
			ctl_cc_json_line(out);
		} else {
			printf("%-24s %-16s %-9s %7s  %-10s %s\n", "CELL", "NAME", "STATE", "PID",
			       "ENDED", "RESTARTS");
			for (size_t i = 0; i < m->n_executables; i++)
				print_status_row(m->executables[i]);
		}
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	bool is_signal = !strcmp(sub, "signal");
	if (npos != (is_signal ? 3 : 2))
		return ctl_cc_usage(cc, is_signal ? "needs CELL NAME SIGNAL" : "needs CELL NAME");
	char *cell = pos[0], *name = pos[1];
	ProtobufCMessage *out = NULL;

	if (is_start) {
		Kin__V1__StartRequest in = KIN__V1__START_REQUEST__INIT;
		if (dd + 1 >= argc)
			return ctl_cc_usage(cc, "needs a command after '--'");
		in.cell = cell;
		in.name = name;
		in.spec = sp;
		sp->argv = argv + dd + 1;
		sp->n_argv = (size_t)(argc - dd - 1);
		/* kin answers a start within its setup deadline (then kills the
		 * child): by default wait that long, and a little more, so a
		 * setup that times out is told as such, not as an unreachable kin. */
		struct ctl_opts o = *cc->o;
		const struct ctl_opts *given = cc->o;
		if (!o.timeout_set && o.timeout_ms < CTL_EXEC_START_WAIT_MS)
			o.timeout_ms = CTL_EXEC_START_WAIT_MS;
		cc->o = &o;
		r = ctl_cc_call(cc, "kin.v1.Exec", "Start", &in.base,
		                &kin__v1__exec_status__descriptor, &out, false);
		cc->o = given;
		if (r != CTL_OK)
			return r;
		const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
		if (cc->json)
			ctl_cc_json_line(out);
		else
			printf("started %s/%s pid %d\n", s->cell, s->name, s->pid);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (dd != argc)
		return ctl_cc_usage(cc, "'--' is for exec start");
	if (!strcmp(sub, "logs"))
		return exec_logs(cc, cell, name, follow, which);
	if (!strcmp(sub, "stdin"))
		return exec_stdin(cc, cell, name, close_at_eof);
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	in.cell = cell;
	in.name = name;
	if (!strcmp(sub, "delete")) {
		r = ctl_cc_call(cc, "kin.v1.Exec", "Delete", &in.base, NULL, NULL, false);
		if (r == CTL_OK)
			printf(cc->json ? "{}\n" : "deleted %s/%s\n", cell, name);
		return r;
	}
	bool waits = false;
	if (is_signal) {
		Kin__V1__SignalRequest sin = KIN__V1__SIGNAL_REQUEST__INIT;
		sin.cell = cell;
		sin.name = name;
		sin.signal = parse_signal(pos[2]);
		if (sin.signal < 0)
			return ctl_cc_usage(
			    cc, "'%s': expected a signal name (TERM, SIGKILL) or number", pos[2]);
		r = ctl_cc_call(cc, "kin.v1.Exec", "Signal", &sin.base,
		                &kin__v1__exec_status__descriptor, &out, false);
	} else if (!strcmp(sub, "stop")) {
		Kin__V1__StopRequest sin = KIN__V1__STOP_REQUEST__INIT;
		sin.cell = cell;
		sin.name = name;
		sin.grace_ms = grace;
		r = ctl_cc_call(cc, "kin.v1.Exec", "Stop", &sin.base,
		                &kin__v1__exec_status__descriptor, &out, true);
	} else if (!strcmp(sub, "wait") || !strcmp(sub, "status")) {
		waits = !strcmp(sub, "wait");
		r = ctl_cc_call(cc, "kin.v1.Exec", waits ? "Wait" : "Status", &in.base,
		                &kin__v1__exec_status__descriptor, &out, waits);
	} else {
		return ctl_cc_usage(
		    cc, "unknown subcommand (start, list, status, signal, stop, wait, logs, "
		        "stdin, delete)");
	}
	if (r != CTL_OK)
		return r;
	const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
	if (cc->json)
		ctl_cc_json_line(out);
	else if (waits && s->signal)
		printf("%s/%s killed by signal %d\n", s->cell, s->name, s->signal);
	else if (waits)
		printf("%s/%s exited with status %d\n", s->cell, s->name, s->exit_code);
	else
		print_status(s);
	r = waits ? exit_status_of(s) : CTL_OK;
	protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

/* ---- events -------------------------------------------------------------------------------- */

static void event_print(const ProtobufCMessage *m)
{
	const Kin__V1__Event *e = (const Kin__V1__Event *)m;
	if (e->dropped)
		printf("(%llu events dropped: this reader was too slow)\n",
		       (unsigned long long)e->dropped);
	printf("%llu.%06llu %-9s %s%s%s", (unsigned long long)(e->time_ns / 1000000000ull),
	       (unsigned long long)(e->time_ns % 1000000000ull / 1000), e->name, e->cell,
	       e->exec[0] ? "/" : "", e->exec);
	if (e->pid)
		printf(" pid=%d", e->pid);
	if (e->type == KIN__V1__EVENT_TYPE__EXEC_EXIT)
		printf(e->signal ? " signal=%d" : " status=%d",
		       e->signal ? e->signal : e->exit_code);
	if (e->type == KIN__V1__EVENT_TYPE__OOM_KILL ||
	    e->type == KIN__V1__EVENT_TYPE__EXEC_RESTART)
		printf(" count=%llu", (unsigned long long)e->count);
	if (e->type == KIN__V1__EVENT_TYPE__EXEC_RESTART)
		printf(" delay=%llums", (unsigned long long)e->delay_ms);
	putchar('\n');
	fflush(stdout);
}

int ctl_cc_cmd_events(struct cc *cc, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"cell", required_argument, NULL, O_CELL},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	Kin__V1__EventsRequest in = KIN__V1__EVENTS_REQUEST__INIT;
	int c, r;
	cc->what = "events";
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		int k = ctl_cc_common_opt(cc, c, argv, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == O_CELL)
			in.cell = optarg;
	}
	if (optind < argc)
		return ctl_cc_usage(cc, "unexpected argument '%s'", argv[optind]);
	return ctl_cc_stream_run(cc, "kin.v1.Events", "Subscribe", &in.base,
	                         &kin__v1__event__descriptor, event_print);
}
