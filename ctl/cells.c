/* ctl_cells: `kin ctl cell …`, `kin ctl exec …` and `kin ctl events` — the
 * command line over kin.v1.Cells, Exec and Events. Values are parsed here
 * only as far as the wire needs (numbers, key=value pairs); what they mean
 * is checked by kin, whose sentence is printed as is. `-o json` prints the
 * answer message itself (field names as in rpc/cells.proto), one object
 * per line for streams.
 *
 * This file holds what every command shares: the help text, JSON output,
 * errors, calls and the entry points; the commands themselves are in
 * rpc/ctl_cell.c (cell) and rpc/ctl_exec.c (exec, events). */
#include "ctl/cc.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

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

void ctl_cc_json_line(const ProtobufCMessage *m)
{
	json_msg(m);
	putchar('\n');
	fflush(stdout);
}

int ctl_cc_print_error(struct cc *cc, const struct err *st)
{
	fprintf(stderr, "kin ctl: %s: %s\n", err_code_name(st->code), st->msg);
	if (cc->json) {
		printf("{\"error\":{\"code\":\"%s\",\"message\":", err_code_name(st->code));
		json_str(st->msg, strlen(st->msg));
		printf("}}\n");
	}
	return CTL_RPC_ERROR;
}

int ctl_cc_print_unreachable(struct cc *cc, int r)
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

int ctl_cc_call(struct cc *cc, const char *service, const char *method, const ProtobufCMessage *in,
                const ProtobufCMessageDescriptor *out_desc, ProtobufCMessage **ret_out, bool waits)
{
	struct err st;
	int timeout = waits && !cc->o->timeout_set ? 0 : cc->o->timeout_ms;
	int r = rpc_client_connect(cc->o->address, timeout, &cc->client);
	if (r == 0)
		r = rpc_client_set_metadata(cc->client, cc->o->metadata, cc->o->n_metadata);
	if (r == 0)
		r = rpc_client_call(cc->client, service, method, in, out_desc, &st, ret_out);
	rpc_client_free(cc->client);
	cc->client = NULL;
	if (r < 0)
		return ctl_cc_print_unreachable(cc, r);
	if (st.code != ERR_OK)
		return ctl_cc_print_error(cc, &st);
	return CTL_OK;
}

int ctl_cc_usage(struct cc *cc, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kin ctl %s: ", cc->what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'kin ctl --help'.\n", stderr);
	return CTL_USAGE;
}

int ctl_cc_common_opt(struct cc *cc, int c, char **av, int *ret)
{
	switch (c) {
	case 'o':
		if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
			*ret = ctl_cc_usage(cc, "-o '%s': expected text or json", optarg);
			return 1;
		}
		cc->json = !strcmp(optarg, "json");
		return 0;
	case 'h':
		fputs(usage_text, stdout);
		*ret = CTL_OK;
		return 1;
	case ':':
		*ret = ctl_cc_usage(cc, "option '%s' needs a value", av[optind - 1]);
		return 1;
	case '?':
		*ret = ctl_cc_usage(cc, "unknown option '%s'", av[optind - 1]);
		return 1;
	default:
		return -1;
	}
}

/* ---- streams ---------------------------------------------------------------------- */

int ctl_cc_stream_run(struct cc *cc, const char *service, const char *method,
                      const ProtobufCMessage *in, const ProtobufCMessageDescriptor *desc,
                      void (*print)(const ProtobufCMessage *m))
{
	struct rpc_stream *s;
	struct err st;
	int r = rpc_client_stream_open(cc->o->address, cc->o->timeout_ms, service, method, in,
	                               cc->o->metadata, cc->o->n_metadata, &s);
	if (r < 0)
		return ctl_cc_print_unreachable(cc, r);
	for (;;) {
		ProtobufCMessage *m;
		r = rpc_client_stream_next(s, desc, &m, &st);
		if (r <= 0)
			break;
		if (cc->json)
			ctl_cc_json_line(m);
		else
			print(m);
		protobuf_c_message_free_unpacked(m, NULL);
	}
	rpc_client_stream_free(s);
	if (r < 0)
		return ctl_cc_print_unreachable(cc, r);
	return st.code == ERR_OK ? CTL_OK : ctl_cc_print_error(cc, &st);
}

bool ctl_cells_is_command(const char *cmd)
{
	return !strcmp(cmd, "cell") || !strcmp(cmd, "exec") || !strcmp(cmd, "events");
}

int ctl_cells_main(const struct ctl_opts *o, int argc, char **argv)
{
	struct cc cc = {.o = o, .json = o->json, .what = argv[0]};
	int r;
	if (!strcmp(argv[0], "cell"))
		r = ctl_cc_cmd_cell(&cc, argc, argv);
	else if (!strcmp(argv[0], "exec"))
		r = ctl_cc_cmd_exec(&cc, argc, argv);
	else
		r = ctl_cc_cmd_events(&cc, argc, argv);
	fflush(stdout);
	return r;
}

const char *ctl_cells_usage(void)
{
	return usage_text;
}
