/* ctl_cells: `kin ctl cell …`, `kin ctl exec …` and `kin ctl events` — the
 * command line over kin.v1.Cells, Exec and Events. Values are parsed here
 * only as far as the wire needs (numbers, key=value pairs); what they mean
 * is checked by kin, whose sentence is printed as is. `-o json` prints the
 * answer message itself (field names as in rpc/cells.proto), one object
 * per line for streams. */
#include "rpc/ctl_cells.h"
#include "rpc/cells.pb-c.h"
#include "rpc/internal.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

enum { CTL_OK = 0, CTL_RPC_ERROR = 1, CTL_USAGE = 2, CTL_UNREACHABLE = 3 };

struct cc {
	const struct ctl_cells_opts *o;
	bool json;
	struct rpc_client *client;
	const char *what; /* "cell create", for messages */
};

static const char usage_text[] =
    "Cells:\n"
    "  cell create PATH [KEY=VALUE...]   a cell with limits (memory.max=512M, cpu.max=\"50000 "
    "100000\",\n"
    "                                    cpuset.cpus=0-1, pids.max=100, cpu.weight, io.weight, "
    "...)\n"
    "  cell update PATH KEY=VALUE...     change limits live\n"
    "  cell list [PATH]                  the tree, parents first\n"
    "  cell show PATH                    info, limits, cpu/memory/pids stats, PSI\n"
    "  cell freeze|thaw|kill PATH\n"
    "  cell delete [--force] PATH\n"
    "Executables:\n"
    "  exec start CELL NAME [OPTIONS] -- ARGV...\n"
    "      --env K=V  --cwd DIR  --uid N  --gid N  --groups N,N  --umask 022\n"
    "      --rlimit nofile=1024:4096  --caps LIST  --ambient LIST  --no-new-privs\n"
    "      --seccomp default|none|FILE  --ns pid,mnt,net,uts,ipc,user,cgroup\n"
    "      --uid-map IN:OUT:N  --gid-map IN:OUT:N  --hostname H  --root DIR  --read-only\n"
    "      --stdin  --log-size SIZE  --restart no|on-failure|always  --backoff BASE[:CAP]\n"
    "  exec list [CELL]\n"
    "  exec status|wait|delete CELL NAME   (wait exits with the executable's status)\n"
    "  exec signal CELL NAME SIGNAL        (TERM, SIGKILL, 9, ...)\n"
    "  exec stop [--grace DURATION] CELL NAME\n"
    "  exec logs [-f] [--stdout|--stderr] CELL NAME\n"
    "  exec stdin [--close] CELL NAME      (sends kin ctl's stdin)\n"
    "  events [--cell PATH]                follow events until interrupted\n";

/* ---- output --------------------------------------------------------------------- */

static void json_str(const char *s, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_msg(const ProtobufCMessage *m);

static void json_value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		json_str(s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		json_str((const char *)b->data, b->len);
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)p ? "true" : "false", stdout);
		break;
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		printf("%d", *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		printf("%u", *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		printf("%llu", (unsigned long long)*(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		printf("%lld", (long long)*(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		printf("%.2f", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		printf("%.2f", (double)*(const float *)p);
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *v =
		    protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
		if (v)
			json_str(v->name, strlen(v->name));
		else
			printf("%d", *(const int *)p);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		if (sub)
			json_msg(sub);
		else
			fputs("null", stdout);
		break;
	}
	}
}

static size_t field_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	default:
		return 4;
	}
}

/* A message as JSON, by its descriptor: every field, proto names. */
static void json_msg(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	putchar('{');
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const uint8_t *base = (const uint8_t *)m;
		if (i)
			putchar(',');
		json_str(f->name, strlen(f->name));
		putchar(':');
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const uint8_t *arr = *(uint8_t *const *)(base + f->offset);
			putchar('[');
			for (size_t k = 0; k < n; k++) {
				if (k)
					putchar(',');
				json_value(f, arr + k * field_size(f));
			}
			putchar(']');
		} else {
			json_value(f, base + f->offset);
		}
	}
	putchar('}');
}

static void json_line(const ProtobufCMessage *m)
{
	json_msg(m);
	putchar('\n');
	fflush(stdout);
}

static int print_error(struct cc *cc, const struct rpc_status *st)
{
	fprintf(stderr, "kin ctl: %s: %s\n", rpc_code_name(st->code), st->message);
	if (cc->json) {
		printf("{\"error\":{\"code\":\"%s\",\"message\":", rpc_code_name(st->code));
		json_str(st->message, strlen(st->message));
		printf("}}\n");
	}
	return CTL_RPC_ERROR;
}

static int print_unreachable(struct cc *cc, int r)
{
	fprintf(stderr, "kin ctl: cannot reach kin at %s: %s\n", cc->o->address,
	        r == -EPROTO ? "not a ttrpc server" : strerror(-r));
	if (cc->json) {
		printf("{\"error\":{\"code\":\"UNAVAILABLE\",\"message\":");
		json_str(strerror(-r), strlen(strerror(-r)));
		printf("}}\n");
	}
	return CTL_UNREACHABLE;
}

/* ---- calls ------------------------------------------------------------------------ */

/* One unary call; waits: no timeout unless --timeout was given. */
static int call(struct cc *cc, const char *service, const char *method, const ProtobufCMessage *in,
                const ProtobufCMessageDescriptor *out_desc, ProtobufCMessage **ret_out, bool waits)
{
	struct rpc_status st;
	int timeout = waits && !cc->o->timeout_set ? 0 : cc->o->timeout_ms;
	int r = rpc_client_connect(cc->o->address, timeout, &cc->client);
	if (r == 0)
		r = rpc_client_set_metadata(cc->client, cc->o->metadata, cc->o->n_metadata);
	if (r == 0)
		r = rpc_client_call(cc->client, service, method, in, out_desc, &st, ret_out);
	rpc_client_free(cc->client);
	cc->client = NULL;
	if (r < 0)
		return print_unreachable(cc, r);
	if (st.code != RPC_OK)
		return print_error(cc, &st);
	return CTL_OK;
}

static int usage(struct cc *cc, const char *fmt, ...) _printf_(2, 3);
static int usage(struct cc *cc, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kin ctl %s: ", cc->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'kin ctl --help'.\n", stderr);
	return CTL_USAGE;
}

/* Options every subcommand takes: -o json|text, -h; and getopt's errors.
 * Returns 1 when the command ends with *ret, 0 when parsing goes on, -1
 * when c is not one of them. av is the vector given to getopt. */
static int common_opt(struct cc *cc, int c, char **av, int *ret)
{
	switch (c) {
	case 'o':
		if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
			*ret = usage(cc, "-o '%s': expected text or json", optarg);
			return 1;
		}
		cc->json = !strcmp(optarg, "json");
		return 0;
	case 'h':
		fputs(usage_text, stdout);
		*ret = CTL_OK;
		return 1;
	case ':':
		*ret = usage(cc, "option '%s' needs a value", av[optind - 1]);
		return 1;
	case '?':
		*ret = usage(cc, "unknown option '%s'", av[optind - 1]);
		return 1;
	default:
		return -1;
	}
}

/* ---- text output ------------------------------------------------------------------------- */

static void print_cell_line(const Kin__V1__Cell *c, bool indent)
{
	printf("%*s%s%s%s  execs=%u", indent ? (int)(c->depth - 1) * 2 : 0, "", c->path,
	       c->populated ? "  populated" : "", c->frozen ? "  frozen" : "", c->executables);
	for (size_t i = 0; i < c->n_limits; i++)
		printf("  %s=%s", c->limits[i]->key, c->limits[i]->value);
	putchar('\n');
}

static void print_psi(const char *name, const Kin__V1__Psi *p)
{
	if (!p || !p->some)
		return;
	printf("psi %-7s some avg10=%.2f avg60=%.2f total=%lluus", name, p->some->avg10,
	       p->some->avg60, (unsigned long long)p->some->total_us);
	if (p->full)
		printf("; full avg10=%.2f total=%lluus", p->full->avg10,
		       (unsigned long long)p->full->total_us);
	putchar('\n');
}

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

/* ---- cell ---------------------------------------------------------------------------------- */

static int add_limit(struct cc *cc, Kin__V1__CreateCellRequest *req, Kin__V1__Limit *lims,
                     Kin__V1__Limit **ptrs, size_t max, char *kv)
{
	char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return usage(cc, "'%s': expected KEY=VALUE (memory.max=512M)", kv);
	if (req->n_limits == max)
		return usage(cc, "too many limits (at most %zu)", max);
	*eq = '\0';
	kin__v1__limit__init(&lims[req->n_limits]);
	lims[req->n_limits].key = kv;
	lims[req->n_limits].value = eq + 1;
	ptrs[req->n_limits] = &lims[req->n_limits];
	req->n_limits++;
	return CTL_OK;
}

static int cmd_cell(struct cc *cc, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"force", no_argument, NULL, 'f'},
	    {"limit", required_argument, NULL, 'l'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	enum { MAXL = 64 };
	Kin__V1__Limit lims[MAXL], *ptrs[MAXL];
	Kin__V1__CreateCellRequest creq = KIN__V1__CREATE_CELL_REQUEST__INIT;
	bool force = false;
	int c, r;
	static char what[64];

	if (argc < 2)
		return usage(cc, "needs a subcommand: create, update, list, show, freeze, thaw, "
		                 "kill, delete");
	const char *sub = argv[1];
	snprintf(what, sizeof(what), "cell %s", sub);
	cc->what = what;
	creq.limits = ptrs;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":fl:o:h", longopts, NULL)) != -1) {
		int k = common_opt(cc, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == 'f')
			force = true;
		else if (c == 'l' && (r = add_limit(cc, &creq, lims, ptrs, MAXL, optarg)) != CTL_OK)
			return r;
	}
	char **pos = argv + 1 + optind;
	int npos = argc - 1 - optind;
	bool is_create = !strcmp(sub, "create"), is_update = !strcmp(sub, "update");

	if (is_create || is_update) {
		if (npos < 1)
			return usage(cc, "needs a cell PATH");
		for (int i = 1; i < npos; i++)
			if ((r = add_limit(cc, &creq, lims, ptrs, MAXL, pos[i])) != CTL_OK)
				return r;
		if (force)
			return usage(cc, "--force is for delete");
		if (is_update && creq.n_limits == 0)
			return usage(cc, "needs at least one KEY=VALUE");
		creq.path = pos[0];
		ProtobufCMessage *out;
		r = call(cc, "kin.v1.Cells", is_create ? "Create" : "Update", &creq.base,
		         &kin__v1__cell__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			json_line(out);
		else
			print_cell_line((Kin__V1__Cell *)out, false);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (creq.n_limits)
		return usage(cc, "limits are for create and update");
	if (!strcmp(sub, "list")) {
		if (npos > 1 || force)
			return usage(cc, "takes at most one PATH");
		Kin__V1__ListCellsRequest in = KIN__V1__LIST_CELLS_REQUEST__INIT;
		ProtobufCMessage *out;
		in.path = npos ? pos[0] : (char *)"";
		r = call(cc, "kin.v1.Cells", "List", &in.base,
		         &kin__v1__list_cells_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ListCellsResponse *m = (Kin__V1__ListCellsResponse *)out;
		if (cc->json)
			json_line(out);
		else
			for (size_t i = 0; i < m->n_cells; i++)
				print_cell_line(m->cells[i], true);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (npos != 1)
		return usage(cc, "needs exactly one cell PATH");
	if (force && strcmp(sub, "delete"))
		return usage(cc, "--force is for delete");
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	in.path = pos[0];
	ProtobufCMessage *out = NULL;
	if (!strcmp(sub, "show")) {
		r = call(cc, "kin.v1.Cells", "Show", &in.base,
		         &kin__v1__show_cell_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ShowCellResponse *m = (Kin__V1__ShowCellResponse *)out;
		const Kin__V1__CellStats *s = m->stats;
		if (cc->json) {
			json_line(out);
		} else if (m->cell && s) {
			const Kin__V1__Cell *cl = m->cell;
			printf(
			    "path:        %s\ndepth:       %u\npopulated:   %s\nfrozen:      %s\n"
			    "executables: %u\nprocesses:   %llu\ncontrollers:",
			    cl->path, cl->depth, cl->populated ? "yes" : "no",
			    cl->frozen ? "yes" : "no", cl->executables,
			    (unsigned long long)s->procs);
			for (size_t i = 0; i < cl->n_controllers; i++)
				printf(" %s", cl->controllers[i]);
			putchar('\n');
			for (size_t i = 0; i < cl->n_limits; i++)
				printf("limit:       %s = %s\n", cl->limits[i]->key,
				       cl->limits[i]->value);
			if (s->has_cpu)
				printf("cpu:         usage %lluus (user %llu, system %llu), "
				       "periods %llu, throttled %llu (%lluus)\n",
				       (unsigned long long)s->cpu_usage_us,
				       (unsigned long long)s->cpu_user_us,
				       (unsigned long long)s->cpu_system_us,
				       (unsigned long long)s->cpu_nr_periods,
				       (unsigned long long)s->cpu_nr_throttled,
				       (unsigned long long)s->cpu_throttled_us);
			if (s->has_memory)
				printf("memory:      current %llu, peak %llu; events high %llu max "
				       "%llu "
				       "oom %llu oom_kill %llu\n",
				       (unsigned long long)s->memory_current,
				       (unsigned long long)s->memory_peak,
				       (unsigned long long)s->memory_events_high,
				       (unsigned long long)s->memory_events_max,
				       (unsigned long long)s->memory_events_oom,
				       (unsigned long long)s->memory_events_oom_kill);
			if (s->has_pids)
				printf("pids:        %llu\n", (unsigned long long)s->pids_current);
			print_psi("cpu", s->psi_cpu);
			print_psi("memory", s->psi_memory);
			print_psi("io", s->psi_io);
		}
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (!strcmp(sub, "freeze") || !strcmp(sub, "thaw")) {
		bool fr = !strcmp(sub, "freeze");
		r = call(cc, "kin.v1.Cells", fr ? "Freeze" : "Thaw", &in.base,
		         &kin__v1__cell__descriptor, &out, true);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			json_line(out);
		else
			printf("%s %s\n", fr ? "frozen" : "thawed", in.path);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (!strcmp(sub, "kill") || !strcmp(sub, "delete")) {
		bool del = !strcmp(sub, "delete");
		Kin__V1__DeleteCellRequest din = KIN__V1__DELETE_CELL_REQUEST__INIT;
		din.path = in.path;
		din.force = force;
		r = del ? call(cc, "kin.v1.Cells", "Delete", &din.base, NULL, NULL, true)
		        : call(cc, "kin.v1.Cells", "Kill", &in.base, NULL, NULL, false);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			printf("{}\n");
		else
			printf("%s %s\n", del ? "deleted" : "killed", in.path);
		return CTL_OK;
	}
	return usage(cc, "unknown subcommand (create, update, list, show, freeze, thaw, kill, "
	                 "delete)");
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

/* A server stream to its end: each message printed (as JSON with -o json)
 * as it comes; the exit code says how the stream ended. */
static int stream_run(struct cc *cc, const char *service, const char *method,
                      const ProtobufCMessage *in, const ProtobufCMessageDescriptor *desc,
                      void (*print)(const ProtobufCMessage *m))
{
	struct rpc_stream *s;
	struct rpc_status st;
	int r = rpc_client_stream_open(cc->o->address, cc->o->timeout_ms, service, method, in,
	                               cc->o->metadata, cc->o->n_metadata, &s);
	if (r < 0)
		return print_unreachable(cc, r);
	for (;;) {
		ProtobufCMessage *m;
		r = rpc_client_stream_next(s, desc, &m, &st);
		if (r <= 0)
			break;
		if (cc->json)
			json_line(m);
		else
			print(m);
		protobuf_c_message_free_unpacked(m, NULL);
	}
	rpc_client_stream_free(s);
	if (r < 0)
		return print_unreachable(cc, r);
	return st.code == RPC_OK ? CTL_OK : print_error(cc, &st);
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
	return stream_run(cc, "kin.v1.Exec", "Logs", &in.base, &kin__v1__log_chunk__descriptor,
	                  log_print);
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
			int r = call(cc, "kin.v1.Exec", "Stdin", &in.base,
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

static int cmd_exec(struct cc *cc, int argc, char **argv)
{
	static char what[64];
	static struct start_args sa;
	Kin__V1__ExecSpec *sp = &sa.spec;
	bool follow = false, close_at_eof = false;
	uint64_t grace = 0, v;
	Kin__V1__LogStream which = KIN__V1__LOG_STREAM__BOTH;
	int c, r, dd = argc;

	if (argc < 2)
		return usage(cc, "needs a subcommand: start, list, status, signal, stop, wait, "
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
		return usage(cc, "needs '-- ARGV...' after the options");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(dd - 1, argv + 1, ":fo:h", exec_longopts, NULL)) != -1) {
		int k = common_opt(cc, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		bool start_only = c >= O_ENV && c <= O_BACKOFF;
		if (start_only && !is_start)
			return usage(cc, "option '%s' is for exec start", argv[optind]);
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
				return usage(cc,
				             "--grace '%s': expected a duration (10s, 500ms), at "
				             "most 1h",
				             optarg);
			break;
		case O_ENV:
			if (sp->n_env == ARRAY_SIZE(sa.env) || !strchr(optarg, '='))
				return usage(cc, "--env '%s': expected K=V (at most 256)", optarg);
			sa.env[sp->n_env++] = optarg;
			break;
		case O_CWD:
			sp->cwd = optarg;
			break;
		case O_UID:
		case O_GID:
			if (str_to_u64(optarg, UINT32_MAX - 1, &v) < 0)
				return usage(cc, "'%s': expected a numeric id", optarg);
			*(c == O_UID ? &sp->uid : &sp->gid) = (uint32_t)v;
			break;
		case O_GROUPS: {
			char *save, *tok, *s = optarg;
			while ((tok = strtok_r(s, ",", &save))) {
				s = NULL;
				if (sp->n_groups == ARRAY_SIZE(sa.groups) ||
				    str_to_u64(tok, UINT32_MAX - 1, &v) < 0)
					return usage(cc,
					             "--groups: expected at most 32 numeric ids");
				sa.groups[sp->n_groups++] = (uint32_t)v;
			}
			break;
		}
		case O_UMASK:
			sp->umask = optarg;
			break;
		case O_RLIMIT:
			if (sp->n_rlimits == ARRAY_SIZE(sa.rlimits))
				return usage(cc, "at most 16 --rlimit");
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
				return usage(cc, "'%s': expected INSIDE:OUTSIDE:COUNT (at most 8)",
				             optarg);
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
				return usage(cc, "--log-size '%s': expected bytes, K, M or G",
				             optarg);
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
				return usage(
				    cc, "--backoff: expected BASE[:CAP] durations (100ms:30s)");
			break;
		}
		default:
			return CTL_USAGE;
		}
	}
	if ((follow || which != KIN__V1__LOG_STREAM__BOTH) && strcmp(sub, "logs"))
		return usage(cc, "-f, --stdout and --stderr are for exec logs");
	if (grace && strcmp(sub, "stop"))
		return usage(cc, "--grace is for exec stop");
	if (close_at_eof && strcmp(sub, "stdin"))
		return usage(cc, "--close is for exec stdin");
	char **pos = argv + 1 + optind;
	int npos = dd - 1 - optind;

	if (!strcmp(sub, "list")) {
		if (npos > 1)
			return usage(cc, "takes at most one CELL");
		Kin__V1__ListExecRequest in = KIN__V1__LIST_EXEC_REQUEST__INIT;
		ProtobufCMessage *out;
		in.cell = npos ? pos[0] : (char *)"";
		r = call(cc, "kin.v1.Exec", "List", &in.base,
		         &kin__v1__list_exec_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ListExecResponse *m = (Kin__V1__ListExecResponse *)out;
		if (cc->json) {
			json_line(out);
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
		return usage(cc, is_signal ? "needs CELL NAME SIGNAL" : "needs CELL NAME");
	char *cell = pos[0], *name = pos[1];
	ProtobufCMessage *out = NULL;

	if (is_start) {
		Kin__V1__StartRequest in = KIN__V1__START_REQUEST__INIT;
		if (dd + 1 >= argc)
			return usage(cc, "needs a command after '--'");
		in.cell = cell;
		in.name = name;
		in.spec = sp;
		sp->argv = argv + dd + 1;
		sp->n_argv = (size_t)(argc - dd - 1);
		r = call(cc, "kin.v1.Exec", "Start", &in.base, &kin__v1__exec_status__descriptor,
		         &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
		if (cc->json)
			json_line(out);
		else
			printf("started %s/%s pid %d\n", s->cell, s->name, s->pid);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (dd != argc)
		return usage(cc, "'--' is for exec start");
	if (!strcmp(sub, "logs"))
		return exec_logs(cc, cell, name, follow, which);
	if (!strcmp(sub, "stdin"))
		return exec_stdin(cc, cell, name, close_at_eof);
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	in.cell = cell;
	in.name = name;
	if (!strcmp(sub, "delete")) {
		r = call(cc, "kin.v1.Exec", "Delete", &in.base, NULL, NULL, false);
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
			return usage(cc, "'%s': expected a signal name (TERM, SIGKILL) or number",
			             pos[2]);
		r = call(cc, "kin.v1.Exec", "Signal", &sin.base, &kin__v1__exec_status__descriptor,
		         &out, false);
	} else if (!strcmp(sub, "stop")) {
		Kin__V1__StopRequest sin = KIN__V1__STOP_REQUEST__INIT;
		sin.cell = cell;
		sin.name = name;
		sin.grace_ms = grace;
		r = call(cc, "kin.v1.Exec", "Stop", &sin.base, &kin__v1__exec_status__descriptor,
		         &out, true);
	} else if (!strcmp(sub, "wait") || !strcmp(sub, "status")) {
		waits = !strcmp(sub, "wait");
		r = call(cc, "kin.v1.Exec", waits ? "Wait" : "Status", &in.base,
		         &kin__v1__exec_status__descriptor, &out, waits);
	} else {
		return usage(cc,
		             "unknown subcommand (start, list, status, signal, stop, wait, logs, "
		             "stdin, delete)");
	}
	if (r != CTL_OK)
		return r;
	const Kin__V1__ExecStatus *s = (Kin__V1__ExecStatus *)out;
	if (cc->json)
		json_line(out);
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

static int cmd_events(struct cc *cc, int argc, char **argv)
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
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		int k = common_opt(cc, c, argv, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == O_CELL)
			in.cell = optarg;
	}
	if (optind < argc)
		return usage(cc, "unexpected argument '%s'", argv[optind]);
	return stream_run(cc, "kin.v1.Events", "Subscribe", &in.base, &kin__v1__event__descriptor,
	                  event_print);
}

bool rpc_ctl_cells_is_command(const char *cmd)
{
	return !strcmp(cmd, "cell") || !strcmp(cmd, "exec") || !strcmp(cmd, "events");
}

int rpc_ctl_cells_main(const struct ctl_cells_opts *o, int argc, char **argv)
{
	struct cc cc = {.o = o, .json = o->json, .what = argv[0]};
	int r;
	if (!strcmp(argv[0], "cell"))
		r = cmd_cell(&cc, argc, argv);
	else if (!strcmp(argv[0], "exec"))
		r = cmd_exec(&cc, argc, argv);
	else
		r = cmd_events(&cc, argc, argv);
	fflush(stdout);
	return r;
}

const char *rpc_ctl_cells_usage(void)
{
	return usage_text;
}
