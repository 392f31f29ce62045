/* ctl_zone: `kin ctl zone ...` — nested kins (kin.v1.Zones). A zone is
 * reached with `kin ctl --target NAME ...`; `zone list` draws the tree by
 * calling List again through each zone's target, to --depth levels (each
 * kin answers only for its own zones; see rpc/zone.proto). */
#include "ctl/zone.h"
#include "ctl/ctl-int.h"
#include "ctl/vm.h"
#include "proto/zone.pb-c.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define ZONE_LIST_DEPTH_DEFAULT 16
#define ZONE_CREATE_LIMITS_MAX  32

const char *ctl_zone_usage(void)
{
	return "\nZones (nested kins; reach one with --target NAME, deeper NAME/INNER):\n"
	       "  zone create NAME [--net] [--root DIR] [KEY=VALUE...]   namespaces: own\n"
	       "           pid, mount, uts, ipc, cgroup (and net: a veth, an address from\n"
	       "           this kin's subnet) namespaces; limits as for cells; answered\n"
	       "           once the zone's kin answers RPC\n"
	       "  zone create NAME --vm --kernel FILE --image FILE [--cpus N] [--memory MIB]\n"
	       "           [--accel auto|kvm|tcg]   a microVM with kin as its PID 1\n"
	       "  zone list [--depth N]     the tree below this kin (default 16 levels)\n"
	       "  zone status NAME\n"
	       "  zone stop [--timeout DUR] NAME   the zone's kin stops its cells and exits;\n"
	       "                            everything is killed after DUR; waits for the end\n"
	       "  zone kill NAME            cgroup.kill of the zone (a VM zone: its VMM)\n";
}

static int usage(const char *fmt, const char *arg) _printf_(1, 0);
static int usage(const char *fmt, const char *arg)
{
	return ctl_usage("zone", fmt, arg);
}

/* One call, with target (NULL: none) as kin-target. quiet: no message on
 * an RPC error (list's subtrees print their own). */
static int call(const struct ctl_opts *o, struct rpc_client **c, int timeout_ms, const char *target,
                const char *method, const ProtobufCMessage *in,
                const ProtobufCMessageDescriptor *out_desc, ProtobufCMessage **ret_out,
                struct err *st, bool quiet)
{
	struct rpc_client *own = NULL;
	struct rpc_kv md = {RPC_TARGET_KEY, target};
	int r = 0;
	if (!c)
		c = &own;
	if (!*c)
		r = rpc_client_connect(o->address, timeout_ms, c);
	if (r == 0)
		r = rpc_client_set_metadata(*c, &md, target ? 1 : 0);
	if (r == 0)
		r = rpc_client_call(*c, "kin.v1.Zones", method, in, out_desc, st, ret_out);
	rpc_client_free(own);
	if (r >= 0 && st->code != ERR_OK && quiet)
		return CTL_RPC_ERROR;
	return ctl_call_end(o->address, o->json, r, st);
}

static const char *base_target(const struct ctl_opts *o)
{
	return o->n_metadata ? o->metadata[0].value : NULL;
}

static void print_json(const Kin__V1__ZoneInfo *m, const char *path, unsigned level)
{
	printf("{");
	if (path) {
		printf("\"path\":");
		ctl_json_str(path);
		printf(",\"level\":%u,", level);
	}
	const char *keys[] = {"name",   "kind", "state", "address", "gateway",
	                      "subnet", "log",  "route", "cell"};
	const char *vals[] = {m->name,   m->kind, m->state, m->address, m->gateway,
	                      m->subnet, m->log,  m->route, m->cell};
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		printf("\"%s\":", keys[i]);
		ctl_json_str(vals[i]);
		fputc(',', stdout);
	}
	printf("\"pid\":%u,\"depth\":%u,\"net\":%s,\"ready\":%s,\"uptime_ns\":%llu,"
	       "\"exit_status\":%d}\n",
	       m->pid, m->depth, m->net ? "true" : "false", m->ready ? "true" : "false",
	       (unsigned long long)m->uptime_ns, m->exit_status);
}

static void print_info(const Kin__V1__ZoneInfo *m, bool json)
{
	if (json) {
		print_json(m, NULL, 0);
		return;
	}
	char status[32] = "";
	if (strcmp(m->state, "gone") == 0)
		snprintf(status, sizeof(status), " (status %d)", m->exit_status);
	printf("name:     %s\nkind:     %s\nstate:    %s%s\npid:      %u\ndepth:    %u\n"
	       "route:    %s (%s)\n",
	       m->name, m->kind, m->state, status, m->pid, m->depth, m->route,
	       m->ready ? "ready" : "not ready");
	if (m->net)
		printf("address:  %s via %s\n", m->address, m->gateway);
	if (m->subnet[0])
		printf("subnet:   %s (for its own --net zones)\n", m->subnet);
	if (m->cell[0])
		printf("cell:     %s\n", m->cell);
	printf("log:      %s\nuptime:   %llu.%03llus\n", m->log,
	       (unsigned long long)(m->uptime_ns / 1000000000ull),
	       (unsigned long long)(m->uptime_ns / 1000000ull % 1000));
}

static int cmd_create(const struct ctl_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"vm", no_argument, NULL, 'v'},           {"net", no_argument, NULL, 'n'},
	    {"root", required_argument, NULL, 'r'},   {"kernel", required_argument, NULL, 'k'},
	    {"image", required_argument, NULL, 'i'},  {"cpus", required_argument, NULL, 'c'},
	    {"memory", required_argument, NULL, 'm'}, {"accel", required_argument, NULL, 'a'},
	    {"output", required_argument, NULL, 'o'}, {NULL, 0, NULL, 0},
	};
	Kin__V1__ZoneCreateRequest in = KIN__V1__ZONE_CREATE_REQUEST__INIT;
	Kin__V1__Limit lims[ZONE_CREATE_LIMITS_MAX], *lptr[ZONE_CREATE_LIMITS_MAX];
	struct ctl_vm_args vm = CTL_VM_ARGS_INIT;
	struct ctl_opts oo = *o;
	const char *name = NULL;
	int c, r;

	opterr = 0;
	optind = 0; /* 0: glibc starts over */
	while ((c = getopt_long(argc, argv, "-:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 1: { /* NAME or KEY=VALUE, in order */
			char *eq = strchr(optarg, '=');
			if (!eq) {
				if (name)
					return usage("create takes one NAME ('%s')", optarg);
				name = optarg;
				break;
			}
			if (eq == optarg)
				return usage("'%s': expected KEY=VALUE (memory.max=512M)", optarg);
			if (in.n_limits == ZONE_CREATE_LIMITS_MAX)
				return usage("too many limits ('%s')", optarg);
			*eq = '\0';
			kin__v1__limit__init(&lims[in.n_limits]);
			lims[in.n_limits].key = optarg;
			lims[in.n_limits].value = eq + 1;
			lptr[in.n_limits] = &lims[in.n_limits];
			in.n_limits++;
			break;
		}
		case 'v':
			in.vm = true;
			break;
		case 'n':
			in.net = true;
			break;
		case 'r':
			in.root = optarg; /* a path on the zone's parent kin: as given */
			break;
		case 'k':
		case 'i':
		case 'c':
		case 'm':
		case 'a':
			if ((r = ctl_vm_opt(&vm, "zone", c, optarg)) != CTL_OK)
				return r;
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "text"))
				return usage("-o '%s': expected text or json", optarg);
			oo.json = strcmp(optarg, "json") == 0;
			break;
		case ':':
			return usage("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!name)
		return usage("%s", "create needs a NAME");
	in.name = (char *)name;
	in.limits = lptr;
	in.kernel = vm.kernel;
	in.image = vm.image;
	in.cpus = vm.cpus;
	in.memory_mb = vm.memory_mb;
	in.accel = (char *)vm.accel;
	if (in.vm && (!in.kernel[0] || !in.image[0]))
		return usage("%s", "create --vm needs --kernel FILE and --image FILE");
	ProtobufCMessage *out;
	struct err st;
	/* Answered once the zone's kin answers: more than a unary call's time. */
	int t = oo.timeout_set ? oo.timeout_ms : 30000;
	r = call(&oo, NULL, t, base_target(&oo), "Create", &in.base,
	         &kin__v1__zone_info__descriptor, &out, &st, false);
	if (r != CTL_OK)
		return r;
	print_info((Kin__V1__ZoneInfo *)out, oo.json);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

/* One kin's zones, then each zone's own through its target. */
static int list_level(const struct ctl_opts *o, struct rpc_client **c, const char *target,
                      unsigned level, unsigned max_level)
{
	Kin__V1__ZoneListRequest in = KIN__V1__ZONE_LIST_REQUEST__INIT;
	ProtobufCMessage *out;
	struct err st;
	int r = call(o, c, o->timeout_ms, target, "List", &in.base,
	             &kin__v1__zone_list_response__descriptor, &out, &st, level > 0);
	if (r != CTL_OK) {
		if (level > 0 && r == CTL_RPC_ERROR) { /* a subtree we cannot see: say so */
			if (o->json) {
				printf("{\"path\":");
				ctl_json_str(target);
				printf(",\"level\":%u,\"error\":{\"code\":\"%s\",\"message\":",
				       level, err_code_name(st.code));
				ctl_json_str(st.msg);
				printf("}}\n");
			} else {
				printf("%*s(%s: %s)\n", 2 * (int)level, "", err_code_name(st.code),
				       st.msg);
			}
			return CTL_OK;
		}
		return r;
	}
	const Kin__V1__ZoneListResponse *m = (const Kin__V1__ZoneListResponse *)out;
	for (size_t i = 0; i < m->n_zones && r == CTL_OK; i++) {
		const Kin__V1__ZoneInfo *z = m->zones[i];
		char path[RPC_VALUE_MAX];
		if (snprintf(path, sizeof(path), "%s%s%s", target ? target : "", target ? "/" : "",
		             z->name) >= (int)sizeof(path))
			continue;
		if (o->json) {
			print_json(z, path, level + 1);
		} else {
			char name[96], addr[48];
			snprintf(name, sizeof(name), "%*s%s", 2 * (int)level, "", z->name);
			snprintf(addr, sizeof(addr), "%s", z->net ? z->address : "-");
			printf("%-24s %-9s %-9s %7u %5u  %-18s %s\n", name, z->kind, z->state,
			       z->pid, z->depth, addr, z->ready ? "ready" : "-");
		}
		if (level + 1 < max_level && z->ready)
			r = list_level(o, c, path, level + 1, max_level);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

int ctl_zone_main(const struct ctl_opts *o, int argc, char **argv)
{
	if (argc < 2)
		return usage("%s", "expected create, list, status, stop or kill");
	const char *sub = argv[1];
	struct ctl_opts oo = *o;
	argc--, argv++;
	if (strcmp(sub, "create") == 0)
		return cmd_create(o, argc, argv);
	/* list, status, stop, kill: [-o json] [--timeout DUR] [--depth N] [NAME] */
	uint64_t stop_ms = 0;
	uint32_t depth = ZONE_LIST_DEPTH_DEFAULT;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			if (strcmp(argv[i + 1], "json") && strcmp(argv[i + 1], "text"))
				return usage("-o '%s': expected text or json", argv[i + 1]);
			oo.json = strcmp(argv[++i], "json") == 0;
		} else if (strcmp(argv[i], "--timeout") == 0 && strcmp(sub, "stop") == 0 &&
		           i + 1 < argc) {
			if (str_to_duration_ms(argv[++i], 3600 * 1000, &stop_ms) < 0 || !stop_ms)
				return usage("--timeout '%s': expected a duration such as 15s",
				             argv[i]);
		} else if (strcmp(argv[i], "--depth") == 0 && strcmp(sub, "list") == 0 &&
		           i + 1 < argc) {
			if (str_to_u32(argv[++i], &depth) < 0 || depth == 0 || depth > 64)
				return usage("--depth '%s': expected 1 to 64 levels", argv[i]);
		} else if (argv[i][0] == '-') {
			return usage("unknown option or missing value '%s'", argv[i]);
		} else if (!name) {
			name = argv[i];
		} else {
			return usage("unexpected argument '%s'", argv[i]);
		}
	}
	if (strcmp(sub, "list") == 0) {
		if (name)
			return usage("list takes no NAME ('%s')", name);
		struct rpc_client *c = NULL;
		if (!oo.json)
			printf("%-24s %-9s %-9s %7s %5s  %-18s %s\n", "NAME", "KIND", "STATE",
			       "PID", "DEPTH", "ADDRESS", "RPC");
		int r = list_level(&oo, &c, base_target(&oo), 0, depth);
		rpc_client_free(c);
		return r;
	}
	bool stop = strcmp(sub, "stop") == 0, kill = strcmp(sub, "kill") == 0;
	if (!stop && !kill && strcmp(sub, "status") != 0)
		return usage("unknown zone command '%s' (create, list, status, stop, kill)", sub);
	if (!name)
		return usage("%s needs a NAME", sub);
	Kin__V1__ZoneRequest in = KIN__V1__ZONE_REQUEST__INIT;
	Kin__V1__ZoneStopRequest sin = KIN__V1__ZONE_STOP_REQUEST__INIT;
	in.name = sin.name = (char *)name;
	sin.timeout_ms = stop_ms;
	/* Stop waits for the end: the call outlasts the stop timeout. */
	int t = stop ? (int)((stop_ms ? stop_ms : 30000) + 15000) : oo.timeout_ms;
	if (stop && oo.timeout_set && oo.timeout_ms > t)
		t = oo.timeout_ms;
	ProtobufCMessage *out;
	struct err st;
	int r =
	    call(&oo, NULL, t, base_target(&oo),
	         stop   ? "Stop"
	         : kill ? "Kill"
	                : "Status",
	         stop ? &sin.base : &in.base, &kin__v1__zone_info__descriptor, &out, &st, false);
	if (r != CTL_OK)
		return r;
	print_info((Kin__V1__ZoneInfo *)out, oo.json);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}
