/* ctl: `kin ctl`, the command-line client: its own options, the top
 * command table (health, version, poweroff, reboot here; the groups in
 * ctl/cell.c, exec.c, vm.c, zone.c), and the help. Exit codes are the
 * contract scripts rely on: 0 success, 1 the call failed (code and
 * message printed), 2 usage error, 3 kin could not be reached. */
#include "ctl/ctl.h"
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static void help(FILE *f)
{
	fputs("usage: kin ctl [OPTIONS] COMMAND\n"
	      "\n"
	      "Calls a running kin over RPC (ttrpc).\n"
	      "\n"
	      "  --socket PATH       kin's unix socket (default " RPC_SOCKET_DEFAULT ")\n"
	      "  --connect ADDR      unix:PATH, vsock:CID:PORT or tls:HOST:PORT\n"
	      "  --cert FILE, --key FILE  tls: this client's certificate and key (PEM)\n"
	      "  --ca FILE           tls: the CA the server's certificate must chain to\n"
	      "  --server-name NAME  tls: the name the server's certificate must carry\n"
	      "                      (default: HOST)\n"
	      "  --context NAME      a context of the client config (~/.config/kin/config\n"
	      "                      or $KIN_CONFIG): address, credentials, target; flags\n"
	      "                      given here win over it\n"
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
	      "  policy reload       re-read kin's authorization policy (as SIGHUP does)\n"
	      "  reexec [--binary PATH]  re-execute kin in place (an upgrade): workloads\n"
	      "                      keep running; PATH default: the file kin started from\n"
	      "  config list         the contexts of the client config (* the current)\n"
	      "  config use NAME     make NAME the current context\n"
	      "  completion bash     a bash completion script for kin (commands, options)\n"
	      "\n"
	      "Exit status: 0 ok, 1 RPC error, 2 usage error, 3 kin unreachable.\n\n",
	      f);
	fputs(ctl_cells_help, f);
	fputs(ctl_vm_help, f);
	fputs(ctl_zone_help, f);
	fputs(ctl_image_help, f);
	fputs(ctl_service_help, f);
}

/* A command of no words: health, version, poweroff, reboot. One call,
 * its answer printed by print (or as JSON, json_first first). */
static int call_plain(struct ctl *ctl, int argc, char **argv, const char *service,
                      const char *method, const ProtobufCMessage *in,
                      const ProtobufCMessageDescriptor *out_desc,
                      void (*print)(const ProtobufCMessage *m), const char *const *json_first)
{
	ProtobufCMessage *out;
	if (argc > 1) {
		fprintf(stderr, "kin ctl %s: unexpected argument '%s'\n", argv[0], argv[1]);
		return CTL_USAGE;
	}
	int r = ctl_call_simple(ctl, service, method, in, out_desc, &out, false);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line_ordered(out, json_first);
	else
		print(out);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static void print_health(const ProtobufCMessage *out)
{
	const Kin__V1__CheckResponse *m = (const Kin__V1__CheckResponse *)out;
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
	    &kin__v1__check_response__serving_status__descriptor, (int)m->status);
	printf("%s\n", v ? v->name : "UNKNOWN");
}

static int cmd_health(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__CheckRequest in = KIN__V1__CHECK_REQUEST__INIT;
	return call_plain(ctl, argc, argv, "kin.v1.Health", "Check", &in.base,
	                  &kin__v1__check_response__descriptor, print_health, NULL);
}

static void print_version(const ProtobufCMessage *out)
{
	const Kin__V1__VersionResponse *m = (const Kin__V1__VersionResponse *)out;
	printf("version:  %s\nrole:     %s%s%s\nhostname: %s\nkernel:   %s\n"
	       "uptime:   %llu.%03llus\npid:      %u\n",
	       m->version, m->role, m->zone[0] ? " " : "", m->zone, m->hostname, m->kernel_release,
	       (unsigned long long)(m->uptime_ns / 1000000000ull),
	       (unsigned long long)(m->uptime_ns / 1000000ull % 1000), m->pid);
}

static int cmd_version(struct ctl *ctl, int argc, char **argv)
{
	static const char *const first[] = {"version", "role", "zone", NULL};
	Kin__V1__VersionRequest in = KIN__V1__VERSION_REQUEST__INIT;
	return call_plain(ctl, argc, argv, "kin.v1.Health", "Version", &in.base,
	                  &kin__v1__version_response__descriptor, print_version, first);
}

static void print_power(const ProtobufCMessage *out)
{
	const Kin__V1__PowerResponse *m = (const Kin__V1__PowerResponse *)out;
	printf("%s (%s kin)\n", m->action, m->role);
}

static int cmd_poweroff(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__PoweroffRequest in = KIN__V1__POWEROFF_REQUEST__INIT;
	return call_plain(ctl, argc, argv, "kin.v1.System", "Poweroff", &in.base,
	                  &kin__v1__power_response__descriptor, print_power, NULL);
}

static int cmd_reboot(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__RebootRequest in = KIN__V1__REBOOT_REQUEST__INIT;
	return call_plain(ctl, argc, argv, "kin.v1.System", "Reboot", &in.base,
	                  &kin__v1__power_response__descriptor, print_power, NULL);
}

static void print_reload(const ProtobufCMessage *out)
{
	const Kin__V1__ReloadPolicyResponse *m = (const Kin__V1__ReloadPolicyResponse *)out;
	printf("policy %s: %u rules\n", m->source[0] ? m->source : "(none)", m->rules);
}

static int cmd_policy(struct ctl *ctl, int argc, char **argv)
{
	ctl->what = "policy";
	if (argc < 2 || strcmp(argv[1], "reload") != 0)
		return ctl_usage(ctl, "expected reload");
	Kin__V1__ReloadPolicyRequest in = KIN__V1__RELOAD_POLICY_REQUEST__INIT;
	return call_plain(ctl, argc - 1, argv + 1, "kin.v1.System", "ReloadPolicy", &in.base,
	                  &kin__v1__reload_policy_response__descriptor, print_reload, NULL);
}

/* Version again, quietly, on a fresh connection: the old one ended with
 * the exec. -errno while kin is not back yet. */
static int version_quiet(struct ctl *ctl, Kin__V1__VersionResponse **ret)
{
	Kin__V1__VersionRequest in = KIN__V1__VERSION_REQUEST__INIT;
	struct err st;
	int fd;
	rpc_client_free(ctl->client);
	ctl->client = NULL;
	int r = ctl_dial(ctl, &fd);
	if (r == 0)
		r = rpc_client_from_fd(fd, 1000, &ctl->client);
	if (r == 0)
		r = rpc_client_set_metadata(ctl->client, ctl->md, ctl->n_md);
	if (r == 0)
		r = rpc_client_call(ctl->client, "kin.v1.Health", "Version", &in.base,
		                    &kin__v1__version_response__descriptor, &st,
		                    (ProtobufCMessage **)ret);
	if (r == 0 && st.code != ERR_OK)
		r = -EAGAIN;
	return r;
}

#define REEXEC_BACK_MS 10000 /* how long ctl waits for the new kin's answer */

/* reexec [--binary PATH]: the call, then Version until the new kin
 * answers (its count went up) or the old one says it fell back. */
static int cmd_reexec(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ReexecRequest in = KIN__V1__REEXEC_REQUEST__INIT;
	ctl->what = "reexec";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--binary") == 0 && i + 1 < argc)
			in.binary = argv[++i];
		else if (str_startswith(argv[i], "--binary="))
			in.binary = argv[i] + STRLEN("--binary=");
		else
			return ctl_usage(ctl, "unexpected argument '%s' (reexec [--binary PATH])",
			                 argv[i]);
	}
	ProtobufCMessage *out;
	uint64_t t0 = now_monotonic_ns();
	int r = ctl_call_simple(ctl, "kin.v1.System", "Reexec", &in.base,
	                        &kin__v1__reexec_response__descriptor, &out, true);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ReexecResponse *m = (const Kin__V1__ReexecResponse *)out;
	char binary[PATH_MAX];
	str_copy(binary, sizeof(binary), m->binary);
	uint64_t before = m->reexecs;
	protobuf_c_message_free_unpacked(out, NULL);
	uint64_t deadline = t0 + REEXEC_BACK_MS * 1000000ull;
	for (;;) {
		Kin__V1__VersionResponse *v = NULL;
		if (version_quiet(ctl, &v) == 0) {
			bool back = v->reexecs > before, failed = v->reexec_error[0] != '\0';
			if (back || failed) {
				int code = back && !failed ? CTL_OK : CTL_RPC_ERROR;
				if (ctl->json)
					ctl_json_line(&v->base);
				else if (code == CTL_OK)
					printf(
					    "re-executed %s: kin %s, pid %u, answering again after "
					    "%.1f ms\n",
					    binary, v->version, v->pid,
					    (double)(now_monotonic_ns() - t0) / 1e6);
				else
					fprintf(stderr, "kin ctl: %s\n", v->reexec_error);
				protobuf_c_message_free_unpacked(&v->base, NULL);
				return code;
			}
			protobuf_c_message_free_unpacked(&v->base, NULL);
		}
		if (now_monotonic_ns() >= deadline) {
			fprintf(stderr,
			        "kin ctl: reexec: kin did not answer as re-executed within %d "
			        "ms\n",
			        REEXEC_BACK_MS);
			return CTL_UNREACHABLE;
		}
		usleep(1000);
	}
}

static const struct ctl_cmd policy_cmds[] = {
    {"reload", "re-read the authorization policy", NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static const struct ctl_cmd config_cmds[] = {
    {"list", "the contexts (* the current)", NULL, NULL, NULL},
    {"use", "make a context the current", NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

const struct ctl_cmd ctl_cmds[] = {
    {"health", "is kin serving", cmd_health, NULL, NULL},
    {"version", "kin's version, role, hostname, kernel, uptime", cmd_version, NULL, NULL},
    {"poweroff", "stop kin (machine init: power off)", cmd_poweroff, NULL, NULL},
    {"reboot", "reboot (machine init only)", cmd_reboot, NULL, NULL},
    {"cell", "cells: cgroups with limits", ctl_cell_main, ctl_cell_opts, ctl_cell_cmds},
    {"exec", "executables in cells", ctl_exec_main, ctl_exec_opts, ctl_exec_cmds},
    {"events", "follow events until interrupted", ctl_events_main, ctl_events_opts, NULL},
    {"shell", "a login shell on a pty: shell [--user U] [CELL]", ctl_shell_main, ctl_shell_opts,
     NULL},
    {"vm", "microVMs", ctl_vm_main, NULL, ctl_vm_cmds},
    {"zone", "nested kins", ctl_zone_main, NULL, ctl_zone_cmds},
    {"image", "the OCI image store", ctl_image_main, NULL, ctl_image_cmds},
    {"service", "systemd units kin runs as services", ctl_service_main, ctl_service_opts,
     ctl_service_cmds},
    {"daemon-reload", "reread every unit file", ctl_daemon_reload_main, NULL, NULL},
    {"policy", "the authorization policy: policy reload", cmd_policy, NULL, policy_cmds},
    {"reexec", "re-execute kin in place (an upgrade): reexec [--binary PATH]", cmd_reexec, NULL,
     NULL},
    {"config", "client contexts: config list, config use NAME", ctl_config_main, NULL, config_cmds},
    {"completion", "a shell completion script: completion bash", ctl_completion_main, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

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

const struct option ctl_main_opts[] = {
    {"socket", required_argument, NULL, 's'},
    {"connect", required_argument, NULL, 'c'},
    {"output", required_argument, NULL, 'o'},
    {"timeout", required_argument, NULL, 't'},
    {"target", required_argument, NULL, 'T'},
    {"cert", required_argument, NULL, 'C'},
    {"key", required_argument, NULL, 'K'},
    {"ca", required_argument, NULL, 'A'},
    {"server-name", required_argument, NULL, 'N'},
    {"context", required_argument, NULL, 'X'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int opt_address(struct ctl *ctl, int c, const char *arg)
{
	struct rpc_address a;
	if ((c == 's' && (str_startswith(arg, "vsock:") || str_startswith(arg, "tls:") || !*arg)) ||
	    (str_startswith(arg, "tls:") ? !ctl_address_is_tls(arg)
	                                 : rpc_address_parse(arg, &a) < 0)) {
		fprintf(stderr, "kin ctl: '%s' is not a valid %s\n", arg,
		        c == 's' ? "socket path"
		                 : "address (unix:PATH, vsock:CID:PORT or tls:HOST:PORT)");
		return CTL_USAGE;
	}
	ctl->address = arg;
	ctl->address_set = true;
	return CTL_OK;
}

static int opt_timeout(struct ctl *ctl, const char *arg)
{
	uint64_t ms;
	if (str_to_duration_ms(arg, 3600 * 1000, &ms) < 0 || ms == 0) {
		fprintf(stderr,
		        "kin ctl: --timeout '%s': expected a duration such as 5s or 1500ms, at "
		        "most 1h\n",
		        arg);
		return CTL_USAGE;
	}
	ctl->timeout_ms = (int)ms;
	ctl->timeout_set = true;
	return CTL_OK;
}

static int opt_target(struct ctl *ctl, const char *arg)
{
	if (!target_is_valid(arg)) {
		fprintf(stderr,
		        "kin ctl: --target '%s': expected hops joined by '/', each a zone name or "
		        "vm/NAME\n",
		        arg);
		return CTL_USAGE;
	}
	ctl->md[0] = (struct rpc_kv){RPC_TARGET_KEY, arg};
	ctl->n_md = 1;
	return CTL_OK;
}

/* One of kin ctl's own options; -1: --help done. */
static int main_opt(struct ctl *ctl, int c, char **argv)
{
	switch (c) {
	case 's':
	case 'c':
		return opt_address(ctl, c, optarg);
	case 'o':
		if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
			fprintf(stderr, "kin ctl: -o '%s': expected text or json\n", optarg);
			return CTL_USAGE;
		}
		ctl->json = strcmp(optarg, "json") == 0;
		return CTL_OK;
	case 't':
		return opt_timeout(ctl, optarg);
	case 'T':
		return opt_target(ctl, optarg);
	case 'C':
		ctl->cert = optarg;
		return CTL_OK;
	case 'K':
		ctl->key = optarg;
		return CTL_OK;
	case 'A':
		ctl->ca = optarg;
		return CTL_OK;
	case 'N':
		ctl->server_name = optarg;
		return CTL_OK;
	case 'X':
		ctl->context = optarg;
		return CTL_OK;
	case 'h':
		help(stdout);
		return -1;
	case ':':
		fprintf(stderr, "kin ctl: option '%s' needs a value\n", argv[optind - 1]);
		return CTL_USAGE;
	default:
		fprintf(stderr, "kin ctl: unknown option '%s'\nTry 'kin ctl --help'.\n",
		        argv[optind - 1]);
		return CTL_USAGE;
	}
}

/* The context (--context, else the config's current one, if any) fills
 * in what the command line left unsaid. */
static int apply_context(struct ctl *ctl, struct ctl_config *cfg)
{
	struct err err = {0};
	if (ctl_config_load(cfg, &err) < 0) {
		/* Only an address given here makes the file not matter: going
		 * on without it could call the wrong kin (its current context
		 * may name another machine). */
		if (ctl->address_set && !ctl->context)
			return CTL_OK;
		fprintf(stderr, "kin ctl: %s\n", err.msg);
		return CTL_USAGE;
	}
	const char *name = ctl->context ? ctl->context : cfg->current[0] ? cfg->current : NULL;
	if (!name)
		return CTL_OK;
	const struct ctl_context *c = ctl_config_find(cfg, name);
	if (!c) {
		fprintf(stderr, "kin ctl: %s %s: no such context in %s\n",
		        ctl->context ? "--context" : "current-context", name,
		        cfg->path[0] ? cfg->path : "(no config: no HOME, no KIN_CONFIG)");
		return CTL_USAGE;
	}
	if (!ctl->address_set && c->address[0]) {
		if (str_startswith(c->address, "tls:") ? !ctl_address_is_tls(c->address)
		                                       : !c->address[0]) {
			fprintf(stderr, "kin ctl: context %s: address '%s' is not valid\n", name,
			        c->address);
			return CTL_USAGE;
		}
		ctl->address = c->address;
	}
	if (!ctl->cert && c->cert[0])
		ctl->cert = c->cert;
	if (!ctl->key && c->key[0])
		ctl->key = c->key;
	if (!ctl->ca && c->ca[0])
		ctl->ca = c->ca;
	if (!ctl->server_name && c->server_name[0])
		ctl->server_name = c->server_name;
	if (!ctl->n_md && c->target[0] && opt_target(ctl, c->target) != CTL_OK)
		return CTL_USAGE;
	return CTL_OK;
}

/* Our ends are closed, so the relays end; one that has not within a
 * second is killed (it never outlives us anyway: PR_SET_PDEATHSIG). */
static void relays_reap(struct ctl *ctl)
{
	uint64_t deadline = now_monotonic_ns() + 1000000000ull;
	for (size_t i = 0; i < ctl->n_relays; i++) {
		while (waitpid(ctl->relays[i], NULL, WNOHANG) == 0) {
			if (now_monotonic_ns() > deadline) {
				kill(ctl->relays[i], SIGKILL);
				waitpid(ctl->relays[i], NULL, 0);
				break;
			}
			usleep(2000);
		}
	}
}

int ctl_main(int argc, char **argv)
{
	struct ctl ctl = {.address = RPC_SOCKET_DEFAULT, .timeout_ms = 5000};
	static struct ctl_config cfg; /* large: not on the stack */
	int c, r;

	opterr = 0;
	optind = 0; /* 0: glibc starts over (not the state an earlier parse left) */
	while ((c = getopt_long(argc, argv, "+:o:h", ctl_main_opts, NULL)) != -1)
		if ((r = main_opt(&ctl, c, argv)) != CTL_OK)
			return r < 0 ? CTL_OK : r;
	if (optind >= argc) {
		help(stderr);
		return CTL_USAGE;
	}
	const struct ctl_cmd *cmd = ctl_cmd_find(ctl_cmds, argv[optind]);
	if (!cmd) {
		fprintf(stderr, "kin ctl: unknown command '%s'\nTry 'kin ctl --help'.\n",
		        argv[optind]);
		return CTL_USAGE;
	}
	/* `config` reads the file itself (and may be what mends it). */
	if (strcmp(cmd->name, "config") != 0 && (r = apply_context(&ctl, &cfg)) != CTL_OK)
		return r;
	ctl.what = cmd->name;
	r = cmd->run(&ctl, argc - optind, argv + optind);
	rpc_client_free(ctl.client);
	relays_reap(&ctl);
	fflush(stdout);
	return r;
}
