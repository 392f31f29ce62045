/* zone: `kin ctl zone create|list|status|stop|kill` — nested kins
 * (kin.v1.Zones). A zone is reached with `kin ctl --target NAME ...`;
 * `zone list` draws the tree by calling List again through each zone's
 * target, to --depth levels (each kin answers only for its own zones; see
 * proto/zone.proto), all over the run's one connection. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>

#define ZONE_LIST_DEPTH_DEFAULT 16
#define ZONE_CREATE_LIMITS_MAX  32

const char ctl_zone_help[] =
    "\nZones (nested kins; reach one with --target NAME, deeper NAME/INNER):\n"
    "  zone create NAME [--net] [--root DIR | --image NAME] [KEY=VALUE...]\n"
    "           namespaces: own\n"
    "           pid, mount, uts, ipc, cgroup (and net: a veth, an address from\n"
    "           this kin's subnet) namespaces; limits as for cells; answered\n"
    "           once the zone's kin answers RPC\n"
    "  zone create NAME --vm --kernel FILE --image FILE [--cpus N] [--memory SIZE]\n"
    "           [--accel auto|kvm|tcg]   a microVM with kin as its PID 1\n"
    "  zone list [--depth N]     the tree below this kin (default 16 levels)\n"
    "  zone status NAME\n"
    "  zone stop [--timeout DUR] NAME   the zone's kin stops its cells and exits;\n"
    "                            everything is killed after DUR; waits for the end\n"
    "  zone kill NAME            cgroup.kill of the zone (a VM zone: its VMM)\n";

static const char *base_target(const struct ctl *ctl)
{
	return ctl->n_md ? ctl->md[0].value : NULL;
}

/* A ZoneInfo as JSON: with path, its place in the tree (list). */
static void print_json(const Kin__V1__ZoneInfo *m, const char *path, unsigned level)
{
	putchar('{');
	if (path) {
		printf("\"path\":");
		ctl_json_str(path, strlen(path));
		printf(",\"level\":%u", level);
	}
	static const char *const first[] = {"name",   "kind", "state", "address", "gateway",
	                                    "subnet", "log",  "route", "cell",    NULL};
	ctl_json_fields(&m->base, first, path != NULL);
	printf("}\n");
}

static void print_info(const Kin__V1__ZoneInfo *m, bool json)
{
	if (json) {
		print_json(m, NULL, 0);
		return;
	}
	char status[32] = "";
	if (strcmp(m->state, "gone") == 0 && m->exit_status < 0)
		snprintf(status, sizeof(status), " (status unknown)");
	else if (strcmp(m->state, "gone") == 0)
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

/* One kin.v1.Zones call answered by a ZoneInfo, printed. */
static int call_info(struct ctl *ctl, int timeout_ms, const char *method,
                     const ProtobufCMessage *in)
{
	struct err st;
	ProtobufCMessage *out;
	const struct ctl_call c = {.service = "kin.v1.Zones",
	                           .method = method,
	                           .in = in,
	                           .out_desc = &kin__v1__zone_info__descriptor,
	                           .timeout_ms = timeout_ms,
	                           .target = base_target(ctl)};
	int r = ctl_call(ctl, &c, &out, &st);
	if (r != CTL_OK)
		return r;
	print_info((Kin__V1__ZoneInfo *)out, ctl->json);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static const struct option create_opts[] = {
    {"vm", no_argument, NULL, 'v'},
    {"net", no_argument, NULL, 'n'},
    {"root", required_argument, NULL, 'r'},
    VM_GETOPT(KERNEL, "kernel"),
    {"image", required_argument, NULL, 'i'}, /* --vm's, or an image of the store */
    VM_GETOPT(CPUS, "cpus"),
    VM_GETOPT(MEMORY, "memory"),
    VM_GETOPT(ACCEL, "accel"),
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

struct create_args {
	Kin__V1__ZoneCreateRequest in;
	Kin__V1__Limit lims[ZONE_CREATE_LIMITS_MAX], *lptr[ZONE_CREATE_LIMITS_MAX];
	struct ctl_vm_args vm;
	const char *image; /* --vm: the initramfs; else an image of the store */
};

/* NAME or KEY=VALUE, in order. */
static int create_word(struct ctl *ctl, struct create_args *a, char *w)
{
	if (!strchr(w, '=')) {
		if (a->in.name)
			return ctl_usage(ctl, "create takes one NAME ('%s')", w);
		a->in.name = w;
		return CTL_OK;
	}
	return ctl_limit_add(ctl, a->lims, a->lptr, &a->in.n_limits, ZONE_CREATE_LIMITS_MAX, w,
	                     "'%s': expected KEY=VALUE (memory.max=512M)",
	                     "too many limits ('%s')");
}

static int create_opt(struct ctl *ctl, struct create_args *a, int c, char **av)
{
	switch (c) {
	case 1:
		return create_word(ctl, a, optarg);
	case 'v':
	case 'n':
		*(c == 'v' ? &a->in.vm : &a->in.net) = true;
		return CTL_OK;
	case 'r':
		a->in.root = optarg; /* a path on the zone's parent kin: as given */
		return CTL_OK;
	case 'i': /* what it is depends on --vm, which may come later */
		a->image = optarg;
		return CTL_OK;
	case 'o':
		return ctl_output_opt(ctl, optarg);
	case ':':
		return ctl_usage(ctl, "option '%s' needs a value", av[optind - 1]);
	case '?':
		return ctl_usage(ctl, "unknown option '%s'", av[optind - 1]);
	default: /* the VM's: kernel cpus memory accel */
		return ctl_vm_opt(ctl, &a->vm, VM_OPT_FOR_ZONE, c, optarg);
	}
}

static int zone_create(struct ctl *ctl, int argc, char **argv)
{
	static struct create_args a;
	int c, r;
	a = (struct create_args){.in = KIN__V1__ZONE_CREATE_REQUEST__INIT};
	ctl_vm_args_init(&a.vm);
	a.in.name = NULL;
	opterr = 0;
	optind = 0; /* 0: glibc starts over */
	while ((c = getopt_long(argc - 1, argv + 1, "-:o:", create_opts, NULL)) != -1)
		if ((r = create_opt(ctl, &a, c, argv + 1)) != CTL_OK)
			return r;
	if (!a.in.name)
		return ctl_usage(ctl, "create needs a NAME");
	if (a.image && a.in.vm &&
	    (r = ctl_vm_opt(ctl, &a.vm, VM_OPT_FOR_ZONE, VM_OPT_VAL + VM_OPT_IMAGE, a.image)) !=
	        CTL_OK)
		return r;
	if (a.image && !a.in.vm)
		a.in.root_image = (char *)a.image;
	a.in.limits = a.lptr;
	a.in.kernel = (char *)ctl_vm_str(&a.vm, VM_OPT_KERNEL);
	a.in.image = (char *)ctl_vm_str(&a.vm, VM_OPT_IMAGE);
	a.in.cpus = ctl_vm_num(&a.vm, VM_OPT_CPUS);
	a.in.memory_mb = ctl_vm_num(&a.vm, VM_OPT_MEMORY);
	a.in.accel = (char *)ctl_vm_str(&a.vm, VM_OPT_ACCEL);
	if (a.in.vm && (!a.in.kernel[0] || !a.in.image[0]))
		return ctl_usage(ctl, "create --vm needs --kernel FILE and --image FILE");
	/* Answered once the zone's kin answers: more than a unary call's time. */
	return call_info(ctl, ctl->timeout_set ? ctl->timeout_ms : 30000, "Create", &a.in.base);
}

/* list, status, stop, kill: [-o json] [--timeout DUR] [--depth N] [NAME] */
struct zone_args {
	uint64_t stop_ms;
	uint32_t depth;
	const char *name;
};

static int zone_opt(struct ctl *ctl, const char *sub, char **argv, int *i, struct zone_args *a)
{
	const char *o = argv[*i], *v = argv[*i + 1];
	if (!strcmp(o, "-o"))
		return (*i)++, ctl_output_opt(ctl, v);
	if (!strcmp(o, "--timeout") && !strcmp(sub, "stop")) {
		(*i)++;
		if (str_to_duration_ms(v, 3600 * 1000, &a->stop_ms) < 0 || !a->stop_ms)
			return ctl_usage(ctl, "--timeout '%s': expected a duration such as 15s", v);
		return CTL_OK;
	}
	if (!strcmp(o, "--depth") && !strcmp(sub, "list")) {
		(*i)++;
		if (str_to_u32(v, &a->depth) < 0 || a->depth == 0 || a->depth > 64)
			return ctl_usage(ctl, "--depth '%s': expected 1 to 64 levels", v);
		return CTL_OK;
	}
	return ctl_usage(ctl, "unknown option or missing value '%s'", o);
}

static int zone_parse(struct ctl *ctl, int argc, char **argv, struct zone_args *a)
{
	const char *sub = argv[1];
	int r;
	*a = (struct zone_args){.depth = ZONE_LIST_DEPTH_DEFAULT};
	for (int i = 2; i < argc; i++) {
		if (argv[i][0] == '-') {
			if (i + 1 == argc)
				return ctl_usage(ctl, "unknown option or missing value '%s'",
				                 argv[i]);
			if ((r = zone_opt(ctl, sub, argv, &i, a)) != CTL_OK)
				return r;
		} else if (!a->name) {
			a->name = argv[i];
		} else {
			return ctl_usage(ctl, "unexpected argument '%s'", argv[i]);
		}
	}
	if (a->name && !strcmp(sub, "list"))
		return ctl_usage(ctl, "list takes no NAME ('%s')", a->name);
	if (!a->name && strcmp(sub, "list"))
		return ctl_usage(ctl, "%s needs a NAME", sub);
	return CTL_OK;
}

/* A subtree we cannot see: said in its place. */
static void list_error(const struct ctl *ctl, const char *target, unsigned level,
                       const struct err *st)
{
	if (ctl->json) {
		printf("{\"path\":");
		ctl_json_str(target, strlen(target));
		printf(",\"level\":%u,\"error\":{\"code\":\"%s\",\"message\":", level,
		       err_code_name(st->code));
		ctl_json_str(st->msg, strlen(st->msg));
		printf("}}\n");
	} else {
		printf("%*s(%s: %s)\n", 2 * (int)level, "", err_code_name(st->code), st->msg);
	}
}

static void list_row(const struct ctl *ctl, const Kin__V1__ZoneInfo *z, const char *path,
                     unsigned level)
{
	if (ctl->json) {
		print_json(z, path, level + 1);
		return;
	}
	char name[96], addr[48];
	snprintf(name, sizeof(name), "%*s%s", 2 * (int)level, "", z->name);
	snprintf(addr, sizeof(addr), "%s", z->net ? z->address : "-");
	printf("%-24s %-9s %-9s %7u %5u  %-18s %s\n", name, z->kind, z->state, z->pid, z->depth,
	       addr, z->ready ? "ready" : "-");
}

/* One kin's zones, then each zone's own through its target. */
static int list_level(struct ctl *ctl, const char *target, unsigned level, unsigned max_level)
{
	Kin__V1__ZoneListRequest in = KIN__V1__ZONE_LIST_REQUEST__INIT;
	ProtobufCMessage *out;
	struct err st;
	const struct ctl_call c = {.service = "kin.v1.Zones",
	                           .method = "List",
	                           .in = &in.base,
	                           .out_desc = &kin__v1__zone_list_response__descriptor,
	                           .timeout_ms = ctl->timeout_ms,
	                           .target = target,
	                           .quiet = level > 0};
	int r = ctl_call(ctl, &c, &out, &st);
	if (r == CTL_RPC_ERROR && level > 0) {
		list_error(ctl, target, level, &st);
		return CTL_OK;
	}
	if (r != CTL_OK)
		return r;
	const Kin__V1__ZoneListResponse *m = (const Kin__V1__ZoneListResponse *)out;
	for (size_t i = 0; i < m->n_zones && r == CTL_OK; i++) {
		const Kin__V1__ZoneInfo *z = m->zones[i];
		char path[RPC_VALUE_MAX];
		if (snprintf(path, sizeof(path), "%s%s%s", target ? target : "", target ? "/" : "",
		             z->name) >= (int)sizeof(path))
			continue;
		list_row(ctl, z, path, level);
		if (level + 1 < max_level && z->ready)
			r = list_level(ctl, path, level + 1, max_level);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

static int zone_list(struct ctl *ctl, int argc, char **argv)
{
	struct zone_args a;
	int r = zone_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	if (!ctl->json)
		printf("%-24s %-9s %-9s %7s %5s  %-18s %s\n", "NAME", "KIND", "STATE", "PID",
		       "DEPTH", "ADDRESS", "RPC");
	return list_level(ctl, base_target(ctl), 0, a.depth);
}

/* status and kill */
static int zone_status(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ZoneRequest in = KIN__V1__ZONE_REQUEST__INIT;
	struct zone_args a;
	int r = zone_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	in.name = (char *)a.name;
	return call_info(ctl, ctl->timeout_ms, strcmp(argv[1], "kill") ? "Status" : "Kill",
	                 &in.base);
}

static int zone_stop(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ZoneStopRequest in = KIN__V1__ZONE_STOP_REQUEST__INIT;
	struct zone_args a;
	int r = zone_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	in.name = (char *)a.name;
	in.timeout_ms = a.stop_ms;
	/* Stop waits for the end: the call outlasts the stop timeout. */
	int t = (int)((a.stop_ms ? a.stop_ms : 30000) + 15000);
	if (ctl->timeout_set && ctl->timeout_ms > t)
		t = ctl->timeout_ms;
	return call_info(ctl, t, "Stop", &in.base);
}

static const struct option list_opts[] = {
    {"depth", required_argument, NULL, 'd'},
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};
static const struct option status_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};
static const struct option stop_opts[] = {
    {"timeout", required_argument, NULL, 't'},
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

const struct ctl_cmd ctl_zone_cmds[] = {
    {"create", "a nested kin (namespaces or a microVM)", zone_create, create_opts, NULL},
    {"list", "the tree below this kin", zone_list, list_opts, NULL},
    {"status", "one zone", zone_status, status_opts, NULL},
    {"stop", "stop a zone's kin and wait for the end", zone_stop, stop_opts, NULL},
    {"kill", "cgroup.kill of the zone", zone_status, status_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_zone_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(
	    ctl, ctl_zone_cmds, argc, argv, "expected create, list, status, stop or kill",
	    "unknown zone command '%s' (create, list, status, stop, kill)", false);
}
