/* call: what every `kin ctl` command shares — the one connection of a
 * run and its calls, how a call's result and a usage error are said (and
 * the exit code they end with), the options every subcommand takes, and
 * the dispatch through a command table. */
#include "ctl/ctl-int.h"
#include "tls/tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct ctl_cmd *ctl_cmd_find(const struct ctl_cmd *table, const char *name)
{
	for (const struct ctl_cmd *c = table; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

int ctl_cmd_dispatch(struct ctl *ctl, const struct ctl_cmd *table, int argc, char **argv,
                     const char *missing, const char *unknown, bool what_sub)
{
	ctl->what = argv[0];
	if (argc < 2)
		return ctl_usage(ctl, "%s", missing);
	if (what_sub) {
		snprintf(ctl->what_buf, sizeof(ctl->what_buf), "%s %s", argv[0], argv[1]);
		ctl->what = ctl->what_buf;
	}
	const struct ctl_cmd *c = ctl_cmd_find(table, argv[1]);
	if (!c)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		return ctl_usage(ctl, unknown, argv[1]);
#pragma GCC diagnostic pop
	return c->run(ctl, argc, argv);
}

int ctl_usage(struct ctl *ctl, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kin ctl%s%s: ", ctl->what ? " " : "", ctl->what ? ctl->what : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'kin ctl --help'.\n", stderr);
	return CTL_USAGE;
}

int ctl_output_opt(struct ctl *ctl, const char *arg)
{
	if (strcmp(arg, "json") && strcmp(arg, "text"))
		return ctl_usage(ctl, "-o '%s': expected text or json", arg);
	ctl->json = !strcmp(arg, "json");
	return CTL_OK;
}

int ctl_common_opt(struct ctl *ctl, int c, char **av, int *ret)
{
	switch (c) {
	case 'o':
		*ret = ctl_output_opt(ctl, optarg);
		return *ret != CTL_OK;
	case 'h':
		fputs(ctl_cells_help, stdout);
		*ret = CTL_OK;
		return 1;
	case ':':
		*ret = ctl_usage(ctl, "option '%s' needs a value", av[optind - 1]);
		return 1;
	case '?':
		*ret = ctl_usage(ctl, "unknown option '%s'", av[optind - 1]);
		return 1;
	default:
		return -1;
	}
}

static void print_error_json(const char *code, const char *msg)
{
	printf("{\"error\":{\"code\":\"%s\",\"message\":", code);
	ctl_json_str(msg, strlen(msg));
	printf("}}\n");
}

bool ctl_address_is_tls(const char *a)
{
	char host[256];
	uint16_t port;
	return str_startswith(a, "tls:") &&
	       str_hostport_split(a + 4, host, sizeof(host), &port, NULL) == 0;
}

int ctl_dial(struct ctl *ctl, int *ret_fd)
{
	if (!str_startswith(ctl->address, "tls:")) {
		struct rpc_address a;
		int r = rpc_address_parse(ctl->address, &a);
		if (r < 0)
			return r;
		int fd = rpc_address_connect(&a, ctl->timeout_ms);
		if (fd < 0)
			return fd;
		*ret_fd = fd;
		return 0;
	}
	char host[256], port[8];
	uint16_t p;
	struct tls_client_config c = {.server_name = ctl->server_name,
	                              .files = {.cert = ctl->cert, .key = ctl->key, .ca = ctl->ca},
	                              .timeout_ms = ctl->timeout_ms ? ctl->timeout_ms : 5000};
	struct err err = {0};
	if (str_hostport_split(ctl->address + 4, host, sizeof(host), &p, NULL) < 0)
		return -EINVAL;
	snprintf(port, sizeof(port), "%u", p);
	c.host = host;
	c.port = port;
	if (!ctl->cert || !ctl->key || !ctl->ca) {
		snprintf(ctl->dial_err, sizeof(ctl->dial_err),
		         "TLS needs --cert, --key and --ca (or a context that has them)");
		return -EINVAL;
	}
	if (ctl->n_relays == CTL_RELAYS_MAX) {
		snprintf(ctl->dial_err, sizeof(ctl->dial_err), "too many TLS connections");
		return -EMFILE;
	}
	pid_t pid;
	int r = tls_client_open(&c, ret_fd, &pid, &err);
	if (r < 0) {
		snprintf(ctl->dial_err, sizeof(ctl->dial_err), "%s", err.msg);
		return r;
	}
	ctl->relays[ctl->n_relays++] = pid;
	return 0;
}

int ctl_result(struct ctl *ctl, int r, const struct err *st)
{
	if (r < 0) {
		const char *why = ctl->dial_err[0] ? ctl->dial_err
		                  : r == -EPROTO   ? "not a ttrpc server"
		                                   : strerror(-r);
		fprintf(stderr, "kin ctl: cannot reach kin at %s: %s\n", ctl->address, why);
		if (ctl->json)
			print_error_json("UNAVAILABLE", why);
		return CTL_UNREACHABLE;
	}
	if (st->code != ERR_OK) {
		fprintf(stderr, "kin ctl: %s: %s\n", err_code_name(st->code), st->msg);
		if (ctl->json)
			print_error_json(err_code_name(st->code), st->msg);
		return CTL_RPC_ERROR;
	}
	return CTL_OK;
}

int ctl_call(struct ctl *ctl, const struct ctl_call *c, ProtobufCMessage **ret_out, struct err *st)
{
	struct rpc_kv md = {RPC_TARGET_KEY, c->target};
	int r = 0;
	if (!ctl->client) {
		int fd;
		r = ctl_dial(ctl, &fd);
		if (r == 0)
			r = rpc_client_from_fd(fd, ctl->timeout_ms, &ctl->client);
	}
	if (r == 0) {
		rpc_client_set_timeout(ctl->client, c->timeout_ms);
		r = c->target ? rpc_client_set_metadata(ctl->client, &md, 1)
		              : rpc_client_set_metadata(ctl->client, ctl->md, ctl->n_md);
	}
	if (r == 0)
		r = rpc_client_call(ctl->client, c->service, c->method, c->in, c->out_desc, st,
		                    ret_out);
	if (r < 0) { /* the connection is gone: a later call connects again */
		rpc_client_free(ctl->client);
		ctl->client = NULL;
	}
	if (r >= 0 && st->code != ERR_OK && c->quiet)
		return CTL_RPC_ERROR;
	return ctl_result(ctl, r, st);
}

int ctl_call_simple(struct ctl *ctl, const char *service, const char *method,
                    const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                    ProtobufCMessage **ret_out, bool waits)
{
	struct err st;
	const struct ctl_call c = {
	    .service = service,
	    .method = method,
	    .in = in,
	    .out_desc = out_desc,
	    .timeout_ms = waits && !ctl->timeout_set ? 0 : ctl->timeout_ms,
	};
	return ctl_call(ctl, &c, ret_out, &st);
}

int ctl_stream_run(struct ctl *ctl, const char *service, const char *method,
                   const ProtobufCMessage *in, const ProtobufCMessageDescriptor *desc,
                   void (*print)(const ProtobufCMessage *m))
{
	struct rpc_stream *s;
	struct err st;
	int fd;
	int r = ctl_dial(ctl, &fd);
	if (r == 0)
		r = rpc_client_stream_open_fd(fd, service, method, in, ctl->md, ctl->n_md, &s);
	if (r < 0)
		return ctl_result(ctl, r, NULL);
	for (;;) {
		ProtobufCMessage *m;
		r = rpc_client_stream_next(s, desc, &m, &st);
		if (r <= 0)
			break;
		if (ctl->json)
			ctl_json_line(m);
		else
			print(m);
		protobuf_c_message_free_unpacked(m, NULL);
	}
	rpc_client_stream_free(s);
	return ctl_result(ctl, r, &st);
}

int ctl_limit_add(struct ctl *ctl, Kin__V1__Limit *lims, Kin__V1__Limit **ptrs, size_t *n,
                  size_t max, char *kv, const char *bad_fmt, const char *full_fmt)
{
	char *eq = strchr(kv, '=');
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	if (!eq || eq == kv)
		return ctl_usage(ctl, bad_fmt, kv);
	if (*n == max)
		return ctl_usage(ctl, full_fmt, kv);
#pragma GCC diagnostic pop
	*eq = '\0';
	kin__v1__limit__init(&lims[*n]);
	lims[*n].key = kv;
	lims[*n].value = eq + 1;
	ptrs[*n] = &lims[*n];
	(*n)++;
	return CTL_OK;
}
