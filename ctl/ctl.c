/* ctl: `kin ctl`, the command-line client. Exit codes are the contract
 * scripts rely on: 0 success, 1 the call failed (code and message
 * printed), 2 usage error, 3 kin could not be reached. */
#include "ctl/ctl.h"
#include "ctl/ctl-int.h"
#include "ctl/cells.h"
#include "ctl/vm.h"
#include "ctl/zone.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

struct ctl {
	const char *address;
	bool json;
	int timeout_ms;
	bool timeout_set;
	struct rpc_kv md[1]; /* kin-target */
	size_t n_md;
	struct rpc_client *client;
};

static void ctl_help(FILE *f)
{
	fputs("usage: kin ctl [OPTIONS] COMMAND\n"
	      "\n"
	      "Calls a running kin over RPC (ttrpc).\n"
	      "\n"
	      "  --socket PATH       kin's unix socket (default " RPC_SOCKET_DEFAULT ")\n"
	      "  --connect ADDR      unix:PATH or vsock:CID:PORT\n"
	      "  -o, --output FMT    text (default) or json\n"
	      "  --timeout DURATION  per call: 5s (default), 1500ms, ...\n"
	      "  --target PATH       a kin below this one: a zone NAME or vm/NAME, hops\n"
	      "                      joined by '/' (pod1/vm/db); every command goes there\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Commands:\n"
	      "  health              is kin serving (SERVING, STOPPING)\n"
	      "  version             kin's version, role, hostname, kernel, uptime\n"
	      "  poweroff, reboot    stop kin: machine init powers off or reboots, other\n"
	      "                      roles stop and exit (reboot: machine init only)\n"
	      "\n"
	      "Exit status: 0 ok, 1 RPC error, 2 usage error, 3 kin unreachable.\n\n",
	      f);
	fputs(ctl_cells_usage(), f);
	fputs(ctl_vm_usage(), f);
	fputs(ctl_zone_usage(), f);
}

void ctl_json_str(const char *s)
{
	fputc('"', stdout);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			fputc(*p, stdout);
	}
	fputc('"', stdout);
}

int ctl_usage(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "kin ctl %s: ", cmd);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	fprintf(stderr, fmt, arg);
#pragma GCC diagnostic pop
	fputs("\nTry 'kin ctl --help'.\n", stderr);
	return CTL_USAGE;
}

int ctl_call_end(const char *address, bool json, int r, const struct err *st)
{
	if (r < 0) {
		fprintf(stderr, "kin ctl: cannot reach kin at %s: %s\n", address,
		        r == -EPROTO ? "not a ttrpc server" : strerror(-r));
		if (json) {
			printf("{\"error\":{\"code\":\"UNAVAILABLE\",\"message\":");
			ctl_json_str(strerror(-r));
			printf("}}\n");
		}
		return CTL_UNREACHABLE;
	}
	if (st->code != ERR_OK) {
		fprintf(stderr, "kin ctl: %s: %s\n", err_code_name(st->code), st->msg);
		if (json) {
			printf("{\"error\":{\"code\":\"%s\",\"message\":", err_code_name(st->code));
			ctl_json_str(st->msg);
			printf("}}\n");
		}
		return CTL_RPC_ERROR;
	}
	return CTL_OK;
}

/* Connects and calls; prints the failure and maps it to an exit code. */
static int ctl_call(struct ctl *ctl, const char *service, const char *method,
                    const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                    ProtobufCMessage **ret_out)
{
	struct err st;
	int r = 0;
	if (!ctl->client) {
		r = rpc_client_connect(ctl->address, ctl->timeout_ms, &ctl->client);
		if (r == 0)
			r = rpc_client_set_metadata(ctl->client, ctl->md, ctl->n_md);
	}
	if (r == 0)
		r = rpc_client_call(ctl->client, service, method, in, out_desc, &st, ret_out);
	return ctl_call_end(ctl->address, ctl->json, r, &st);
}

static const char *serving_name(int status)
{
	switch (status) {
	case KIN__V1__CHECK_RESPONSE__SERVING_STATUS__SERVING:
		return "SERVING";
	case KIN__V1__CHECK_RESPONSE__SERVING_STATUS__STOPPING:
		return "STOPPING";
	default:
		return "UNKNOWN";
	}
}

static int cmd_health(struct ctl *ctl)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = ctl_call(ctl, "kin.v1.Health", "Check", &in.base,
	                 &kin__v1__check_response__descriptor, &out);
	if (r != CTL_OK)
		return r;
	const Kin__V1__CheckResponse *m = (const Kin__V1__CheckResponse *)out;
	if (ctl->json)
		printf("{\"status\":\"%s\"}\n", serving_name(m->status));
	else
		printf("%s\n", serving_name(m->status));
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int cmd_version(struct ctl *ctl)
{
	Kin__V1__VersionRequest in = KIN__V1__VERSION_REQUEST__INIT;
	ProtobufCMessage *out;
	int r = ctl_call(ctl, "kin.v1.Health", "Version", &in.base,
	                 &kin__v1__version_response__descriptor, &out);
	if (r != CTL_OK)
		return r;
	const Kin__V1__VersionResponse *m = (const Kin__V1__VersionResponse *)out;
	if (ctl->json) {
		const char *keys[] = {"version", "role", "zone", "hostname", "kernel_release"};
		const char *vals[] = {m->version, m->role, m->zone, m->hostname, m->kernel_release};
		fputc('{', stdout);
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
			printf("\"%s\":", keys[i]);
			ctl_json_str(vals[i]);
			fputc(',', stdout);
		}
		printf("\"uptime_ns\":%llu,\"pid\":%u}\n", (unsigned long long)m->uptime_ns,
		       m->pid);
	} else {
		printf("version:  %s\nrole:     %s%s%s\nhostname: %s\nkernel:   %s\n"
		       "uptime:   %llu.%03llus\npid:      %u\n",
		       m->version, m->role, m->zone[0] ? " " : "", m->zone, m->hostname,
		       m->kernel_release, (unsigned long long)(m->uptime_ns / 1000000000ull),
		       (unsigned long long)(m->uptime_ns / 1000000ull % 1000), m->pid);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int cmd_power(struct ctl *ctl, bool reboot)
{
	Kin__V1__PoweroffRequest off = KIN__V1__POWEROFF_REQUEST__INIT;
	Kin__V1__RebootRequest reb = KIN__V1__REBOOT_REQUEST__INIT;
	ProtobufCMessage *out;
	int r =
	    ctl_call(ctl, "kin.v1.System", reboot ? "Reboot" : "Poweroff",
	             reboot ? &reb.base : &off.base, &kin__v1__power_response__descriptor, &out);
	if (r != CTL_OK)
		return r;
	const Kin__V1__PowerResponse *m = (const Kin__V1__PowerResponse *)out;
	if (ctl->json) {
		printf("{\"action\":");
		ctl_json_str(m->action);
		printf(",\"role\":");
		ctl_json_str(m->role);
		printf("}\n");
	} else {
		printf("%s (%s kin)\n", m->action, m->role);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

/* "pod1/vm/db": hops of zone names or vm/NAME (the kin on the way checks
 * them too; this catches typos before connecting). */
static bool target_is_valid(const char *t)
{
	char buf[RPC_VALUE_MAX + 1];
	if (str_copy(buf, sizeof(buf), t) < 0 || !*t)
		return false;
	char *save = NULL;
	bool want_vm_name = false;
	size_t len = strlen(t);
	if (t[0] == '/' || t[len - 1] == '/' || strstr(t, "//"))
		return false;
	for (char *e = strtok_r(buf, "/", &save); e; e = strtok_r(NULL, "/", &save)) {
		if (!name_is_valid(e))
			return false;
		if (want_vm_name)
			want_vm_name = false;
		else if (strcmp(e, "vm") == 0)
			want_vm_name = true;
	}
	return !want_vm_name;
}

int ctl_main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"connect", required_argument, NULL, 'c'},
	    {"output", required_argument, NULL, 'o'},
	    {"timeout", required_argument, NULL, 't'},
	    {"target", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct ctl ctl = {.address = RPC_SOCKET_DEFAULT, .timeout_ms = 5000};
	struct rpc_address a;
	uint64_t ms;
	int c;

	opterr = 0;
	optind = 0; /* 0: glibc starts over (not the state an earlier parse left) */
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
		case 'c':
			if ((c == 's' && (str_startswith(optarg, "vsock:") || !*optarg)) ||
			    rpc_address_parse(optarg, &a) < 0) {
				fprintf(stderr, "kin ctl: '%s' is not a valid %s\n", optarg,
				        c == 's' ? "socket path"
				                 : "address (unix:PATH or vsock:CID:PORT)");
				return CTL_USAGE;
			}
			ctl.address = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				fprintf(stderr, "kin ctl: -o '%s': expected text or json\n",
				        optarg);
				return CTL_USAGE;
			}
			ctl.json = strcmp(optarg, "json") == 0;
			break;
		case 't':
			if (str_to_duration_ms(optarg, 3600 * 1000, &ms) < 0 || ms == 0) {
				fprintf(stderr,
				        "kin ctl: --timeout '%s': expected a duration such "
				        "as 5s or 1500ms, at most 1h\n",
				        optarg);
				return CTL_USAGE;
			}
			ctl.timeout_ms = (int)ms;
			ctl.timeout_set = true;
			break;
		case 'T':
			if (!target_is_valid(optarg)) {
				fprintf(stderr,
				        "kin ctl: --target '%s': expected hops joined by '/', "
				        "each a zone name or vm/NAME\n",
				        optarg);
				return CTL_USAGE;
			}
			ctl.md[0] = (struct rpc_kv){RPC_TARGET_KEY, optarg};
			ctl.n_md = 1;
			break;
		case 'h':
			ctl_help(stdout);
			return CTL_OK;
		case ':':
			fprintf(stderr, "kin ctl: option '%s' needs a value\n", argv[optind - 1]);
			return CTL_USAGE;
		default:
			fprintf(stderr, "kin ctl: unknown option '%s'\nTry 'kin ctl --help'.\n",
			        argv[optind - 1]);
			return CTL_USAGE;
		}
	}
	if (optind >= argc) {
		ctl_help(stderr);
		return CTL_USAGE;
	}
	const char *cmd = argv[optind];
	struct ctl_opts o = {ctl.address,     ctl.json, ctl.timeout_ms,
	                     ctl.timeout_set, ctl.md,   ctl.n_md};
	if (ctl_cells_is_command(cmd)) /* cell, exec, events: rpc/ctl_cells.c */
		return ctl_cells_main(&o, argc - optind, argv + optind);
	if (strcmp(cmd, "vm") == 0)
		return ctl_vm_main(&o, argc - optind, argv + optind);
	if (strcmp(cmd, "zone") == 0)
		return ctl_zone_main(&o, argc - optind, argv + optind);
	if (optind + 1 < argc) {
		fprintf(stderr, "kin ctl %s: unexpected argument '%s'\n", cmd, argv[optind + 1]);
		return CTL_USAGE;
	}
	int r;
	if (strcmp(cmd, "health") == 0)
		r = cmd_health(&ctl);
	else if (strcmp(cmd, "version") == 0)
		r = cmd_version(&ctl);
	else if (strcmp(cmd, "poweroff") == 0 || strcmp(cmd, "reboot") == 0)
		r = cmd_power(&ctl, strcmp(cmd, "reboot") == 0);
	else {
		fprintf(stderr, "kin ctl: unknown command '%s'\nTry 'kin ctl --help'.\n", cmd);
		r = CTL_USAGE;
	}
	rpc_client_free(ctl.client);
	fflush(stdout);
	return r;
}
