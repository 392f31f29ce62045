/* ctl_vm: `kin ctl vm ...` — microVMs run by a kin (kin.v1.Vm). The guest
 * itself is reached with `kin ctl --target vm/NAME ...`. */
#include "ctl/vm.h"
#include "ctl/ctl-int.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define CTL_VM_LIMITS_MAX 32

const char *ctl_vm_usage(void)
{
	return "\nMicroVMs (kin as the guest's PID 1; reach one with --target vm/NAME):\n"
	       "  vm start NAME --kernel FILE --image FILE [--disk FILE] [--cpus N]\n"
	       "           [--memory MIB] [--accel auto|kvm|tcg] [--append TEXT] [KEY=VALUE...]\n"
	       "                            the VMM runs as exec vmm of cell vms/NAME (logs:\n"
	       "                            exec logs vms/NAME vmm); KEY=VALUE: its limits\n"
	       "  vm list                   every VM: state, pid, accel, link, console log\n"
	       "  vm status NAME\n"
	       "  vm stop [--timeout DUR] NAME   Poweroff over the link, then Ctrl-Alt-Del,\n"
	       "                            then SIGKILL after DUR (default 30s); waits\n"
	       "                            for the VMM to exit and prints its status\n";
}

static void print_info(const Kin__V1__VmInfo *m, bool json, bool one_line)
{
	if (json) {
		printf("{\"name\":");
		ctl_json_str(m->name);
		printf(",\"state\":");
		ctl_json_str(m->state);
		printf(",\"pid\":%u,\"accel\":", m->pid);
		ctl_json_str(m->accel);
		printf(",\"cpus\":%u,\"memory_mb\":%u,\"exit_status\":%d,\"console_log\":", m->cpus,
		       m->memory_mb, m->exit_status);
		ctl_json_str(m->console_log);
		printf(",\"link\":");
		ctl_json_str(m->link);
		printf(",\"route\":");
		ctl_json_str(m->route);
		printf(",\"link_ready\":%s,\"uptime_ns\":%llu,\"cell\":",
		       m->link_ready ? "true" : "false", (unsigned long long)m->uptime_ns);
		ctl_json_str(m->cell);
		printf(",\"vmm_note\":");
		ctl_json_str(m->vmm_note);
		printf(",\"vsock_cid\":%u}\n", m->vsock_cid);
		return;
	}
	char status[32] = "";
	if (strcmp(m->state, "exited") == 0)
		snprintf(status, sizeof(status), " (status %d)", m->exit_status);
	if (one_line) {
		printf("%-16s %-8s%-13s %7u %-4s %4u %6u  %-5s %s\n", m->name, m->state, status,
		       m->pid, m->accel, m->cpus, m->memory_mb, m->link_ready ? "ready" : "-",
		       m->console_log);
		return;
	}
	printf("name:     %s\nstate:    %s%s\npid:      %u\naccel:    %s\ncpus:     %u\n"
	       "memory:   %u MiB\nroute:    %s (%s)\nlink:     %s\nconsole:  %s\n",
	       m->name, m->state, status, m->pid, m->accel, m->cpus, m->memory_mb, m->route,
	       m->link_ready ? "ready" : "not ready", m->link, m->console_log);
	if (m->cell[0])
		printf("vmm:      cell %s, exec vmm\n", m->cell);
	else
		printf("vmm:      %s\n", m->vmm_note[0] ? m->vmm_note : "a plain child of kin");
	if (m->vsock_cid)
		printf("vsock:    cid %u\n", m->vsock_cid);
	printf("uptime:   %llu.%03llus\n", (unsigned long long)(m->uptime_ns / 1000000000ull),
	       (unsigned long long)(m->uptime_ns / 1000000ull % 1000));
}

static int call(const struct ctl_opts *o, int timeout_ms, const char *method,
                const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                ProtobufCMessage **ret_out)
{
	struct rpc_client *c = NULL;
	struct err st;
	int r = rpc_client_connect(o->address, timeout_ms, &c);
	if (r == 0)
		r = rpc_client_set_metadata(c, o->metadata, o->n_metadata);
	if (r == 0)
		r = rpc_client_call(c, "kin.v1.Vm", method, in, out_desc, &st, ret_out);
	rpc_client_free(c);
	return ctl_call_end(o->address, o->json, r, &st);
}

static int usage(const char *fmt, const char *arg) _printf_(1, 0);
static int usage(const char *fmt, const char *arg)
{
	return ctl_usage("vm", fmt, arg);
}

int ctl_vm_opt(struct ctl_vm_args *a, const char *cmd, int c, const char *arg)
{
	uint32_t u;
	switch (c) {
	case 'k':
	case 'i':
	case 'd':
		if (!realpath(arg, c == 'k' ? a->kernel : c == 'i' ? a->image : a->disk))
			return ctl_usage(cmd, "%s: no such file", arg);
		return CTL_OK;
	case 'c':
	case 'm':
		if (str_to_u32(arg, &u) < 0 || u == 0)
			return ctl_usage(cmd, "'%s' is not a positive number", arg);
		if (c == 'c')
			a->cpus = u;
		else
			a->memory_mb = u;
		return CTL_OK;
	case 'a':
		a->accel = arg;
		return CTL_OK;
	default: /* 'A' */
		a->append = arg;
		return CTL_OK;
	}
}

static int cmd_start(const struct ctl_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},
	    {"image", required_argument, NULL, 'i'},
	    {"disk", required_argument, NULL, 'd'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"memory", required_argument, NULL, 'm'},
	    {"accel", required_argument, NULL, 'a'},
	    {"append", required_argument, NULL, 'A'},
	    {"output", required_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0},
	};
	Kin__V1__VmStartRequest in = KIN__V1__VM_START_REQUEST__INIT;
	Kin__V1__Limit lims[CTL_VM_LIMITS_MAX], *lptr[CTL_VM_LIMITS_MAX];
	struct ctl_vm_args vm = CTL_VM_ARGS_INIT;
	struct ctl_opts oo = *o;
	int c, r;

	opterr = 0;
	optind = 0; /* 0: glibc starts over (the "+" mode of kin ctl's own parse) */
	/* Options before and after NAME. */
	while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
		case 'i':
		case 'd':
		case 'c':
		case 'm':
		case 'a':
		case 'A':
			if ((r = ctl_vm_opt(&vm, "vm", c, optarg)) != CTL_OK)
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
	if (optind >= argc)
		return usage("%s", "start needs a NAME");
	in.name = argv[optind];
	/* KEY=VALUE after NAME: the VMM cell's limits. */
	for (int i = optind + 1; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq || eq == argv[i])
			return usage("'%s': start takes one NAME, then KEY=VALUE limits", argv[i]);
		if (in.n_limits == CTL_VM_LIMITS_MAX)
			return usage("too many limits ('%s')", argv[i]);
		*eq = '\0';
		kin__v1__limit__init(&lims[in.n_limits]);
		lims[in.n_limits].key = argv[i];
		lims[in.n_limits].value = eq + 1;
		lptr[in.n_limits] = &lims[in.n_limits];
		in.n_limits++;
	}
	in.limits = lptr;
	in.kernel = vm.kernel;
	in.image = vm.image;
	in.disk = vm.disk;
	in.cpus = vm.cpus;
	in.memory_mb = vm.memory_mb;
	in.accel = (char *)vm.accel;
	in.append = (char *)vm.append;
	if (!in.kernel[0] || !in.image[0])
		return usage("%s", "start needs --kernel FILE and --image FILE");
	ProtobufCMessage *out;
	r = call(&oo, oo.timeout_ms, "Start", &in.base, &kin__v1__vm_info__descriptor, &out);
	if (r != CTL_OK)
		return r;
	print_info((Kin__V1__VmInfo *)out, oo.json, false);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

int ctl_vm_main(const struct ctl_opts *o, int argc, char **argv)
{
	if (argc < 2)
		return usage("%s", "expected start, list, status or stop");
	const char *sub = argv[1];
	struct ctl_opts oo = *o;
	argc--, argv++;
	if (strcmp(sub, "start") == 0)
		return cmd_start(o, argc, argv);
	/* list, status, stop: [-o json] [--timeout DUR] [NAME] */
	uint64_t stop_ms = 0;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			if (strcmp(argv[i + 1], "json") && strcmp(argv[i + 1], "text"))
				return usage("-o '%s': expected text or json", argv[i + 1]);
			oo.json = strcmp(argv[++i], "json") == 0;
		} else if (strcmp(argv[i], "--timeout") == 0 && strcmp(sub, "stop") == 0 &&
		           i + 1 < argc) {
			if (str_to_duration_ms(argv[++i], 3600 * 1000, &stop_ms) < 0 || !stop_ms)
				return usage("--timeout '%s': expected a duration such as 30s",
				             argv[i]);
		} else if (argv[i][0] == '-') {
			return usage("unknown option or missing value '%s'", argv[i]);
		} else if (!name) {
			name = argv[i];
		} else {
			return usage("unexpected argument '%s'", argv[i]);
		}
	}
	ProtobufCMessage *out;
	int r;
	if (strcmp(sub, "list") == 0) {
		if (name)
			return usage("list takes no NAME ('%s')", name);
		Kin__V1__VmListRequest in = KIN__V1__VM_LIST_REQUEST__INIT;
		r = call(&oo, oo.timeout_ms, "List", &in.base,
		         &kin__v1__vm_list_response__descriptor, &out);
		if (r != CTL_OK)
			return r;
		const Kin__V1__VmListResponse *m = (Kin__V1__VmListResponse *)out;
		if (!oo.json)
			printf("%-16s %-21s %7s %-4s %4s %6s  %-5s %s\n", "NAME", "STATE", "PID",
			       "ACCEL", "CPUS", "MIB", "LINK", "CONSOLE");
		for (size_t i = 0; i < m->n_vms; i++)
			print_info(m->vms[i], oo.json, true);
	} else if (strcmp(sub, "status") == 0 || strcmp(sub, "stop") == 0) {
		if (!name)
			return usage("%s needs a NAME", sub);
		bool stop = strcmp(sub, "stop") == 0;
		Kin__V1__VmRequest in = KIN__V1__VM_REQUEST__INIT;
		Kin__V1__VmStopRequest sin = KIN__V1__VM_STOP_REQUEST__INIT;
		in.name = sin.name = (char *)name;
		sin.timeout_ms = stop_ms;
		/* Stop waits for the VMM: the call outlasts the stop timeout. */
		int t = stop ? (int)((stop_ms ? stop_ms : 30000) + 15000) : oo.timeout_ms;
		if (stop && oo.timeout_set && oo.timeout_ms > t)
			t = oo.timeout_ms;
		r = call(&oo, t, stop ? "Stop" : "Status", stop ? &sin.base : &in.base,
		         &kin__v1__vm_info__descriptor, &out);
		if (r != CTL_OK)
			return r;
		print_info((Kin__V1__VmInfo *)out, oo.json, false);
	} else {
		return usage("unknown vm command '%s' (start, list, status, stop)", sub);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}
