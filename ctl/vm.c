/* vm: `kin ctl vm start|list|status|stop` — microVMs run by a kin
 * (kin.v1.Vm). The guest itself is reached with `kin ctl --target vm/NAME
 * ...`. ctl_vm_opt parses the VM options `zone create --vm` shares,
 * through vm/'s one table. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_VM_LIMITS_MAX 32

const char ctl_vm_help[] =
    "\nMicroVMs (kin as the guest's PID 1; reach one with --target vm/NAME):\n"
    "  vm start NAME --kernel FILE --image FILE [--disk FILE] [--cpus N]\n"
    "           [--memory SIZE] [--accel auto|kvm|tcg] [--append TEXT] [KEY=VALUE...]\n"
    "                            the VMM runs as exec vmm of cell vms/NAME (logs:\n"
    "                            exec logs vms/NAME vmm); KEY=VALUE: its limits;\n"
    "                            SIZE: 512M, 1G, or MiB (2048)\n"
    "  vm list                   every VM: state, pid, accel, link, console log\n"
    "  vm status NAME\n"
    "  vm stop [--timeout DUR] NAME   Poweroff over the link, then Ctrl-Alt-Del,\n"
    "                            then SIGKILL after DUR (default 30s); waits\n"
    "                            for the VMM to exit and prints its status\n";

void ctl_vm_args_init(struct ctl_vm_args *a)
{
	vm_spec_defaults(&a->spec);
	a->given = 0;
}

int ctl_vm_opt(struct ctl *ctl, struct ctl_vm_args *a, unsigned door, int c, const char *arg)
{
	enum vm_opt_id id = (enum vm_opt_id)(c - VM_OPT_VAL);
	char abs[PATH_MAX];
	struct err e = {0};
	if (c < VM_OPT_VAL || c >= VM_OPT_VAL + VM_OPT_N || !(vm_options[id].doors & door))
		return ctl_usage(ctl, "unknown option '--%s'",
		                 c >= VM_OPT_VAL && c < VM_OPT_VAL + VM_OPT_N ? vm_options[id].name
		                                                              : "?");
	bool path = id == VM_OPT_KERNEL || id == VM_OPT_IMAGE || id == VM_OPT_DISK;
	if (path && !realpath(arg, abs))
		return ctl_usage(ctl, "%s: no such file", arg);
	if (vm_option_set(id, &a->spec, path ? abs : arg, &e) < 0)
		return ctl_usage(ctl, "--%s", e.msg);
	a->given |= 1u << id;
	return CTL_OK;
}

const char *ctl_vm_str(const struct ctl_vm_args *a, enum vm_opt_id id)
{
	if (!(a->given & (1u << id)))
		return "";
	switch (id) {
	case VM_OPT_KERNEL:
		return a->spec.kernel;
	case VM_OPT_IMAGE:
		return a->spec.image;
	case VM_OPT_DISK:
		return a->spec.disk;
	case VM_OPT_ACCEL:
		return vm_accel_name(a->spec.accel);
	case VM_OPT_APPEND:
		return a->spec.cmdline;
	default:
		return "";
	}
}

uint32_t ctl_vm_num(const struct ctl_vm_args *a, enum vm_opt_id id)
{
	if (!(a->given & (1u << id)))
		return 0;
	return id == VM_OPT_CPUS ? a->spec.cpus : id == VM_OPT_MEMORY ? a->spec.memory_mb : 0;
}

static void print_info(const Kin__V1__VmInfo *m, bool json, bool one_line)
{
	if (json) {
		ctl_json_line(&m->base);
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

/* One kin.v1.Vm call answered by a VmInfo, printed. */
static int call_info(struct ctl *ctl, int timeout_ms, const char *method,
                     const ProtobufCMessage *in)
{
	struct err st;
	ProtobufCMessage *out;
	const struct ctl_call c = {.service = "kin.v1.Vm",
	                           .method = method,
	                           .in = in,
	                           .out_desc = &kin__v1__vm_info__descriptor,
	                           .timeout_ms = timeout_ms};
	int r = ctl_call(ctl, &c, &out, &st);
	if (r != CTL_OK)
		return r;
	print_info((Kin__V1__VmInfo *)out, ctl->json, false);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static const struct option start_opts[] = {
    VM_GETOPT(KERNEL, "kernel"), VM_GETOPT(IMAGE, "image"),
    VM_GETOPT(DISK, "disk"),     VM_GETOPT(CPUS, "cpus"),
    VM_GETOPT(MEMORY, "memory"), VM_GETOPT(ACCEL, "accel"),
    VM_GETOPT(APPEND, "append"), {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

/* The options, before and after NAME: CTL_OK to go on, else the exit code. */
static int start_parse(struct ctl *ctl, int argc, char **argv, struct ctl_vm_args *vm)
{
	int c, r;
	opterr = 0;
	optind = 0; /* 0: glibc starts over (not the "+" mode of kin ctl's own parse) */
	while ((c = getopt_long(argc, argv, ":o:", start_opts, NULL)) != -1) {
		if (c == 'o')
			r = ctl_output_opt(ctl, optarg);
		else if (c == ':')
			r = ctl_usage(ctl, "option '%s' needs a value", argv[optind - 1]);
		else if (c == '?')
			r = ctl_usage(ctl, "unknown option '%s'", argv[optind - 1]);
		else
			r = ctl_vm_opt(ctl, vm, VM_OPT_FOR_CTL, c, optarg);
		if (r != CTL_OK)
			return r;
	}
	if (optind >= argc)
		return ctl_usage(ctl, "start needs a NAME");
	return CTL_OK;
}

static int cmd_start(struct ctl *ctl, int argc, char **argv)
{
	static Kin__V1__Limit lims[CTL_VM_LIMITS_MAX], *lptr[CTL_VM_LIMITS_MAX];
	static struct ctl_vm_args vm;
	Kin__V1__VmStartRequest in = KIN__V1__VM_START_REQUEST__INIT;
	ctl_vm_args_init(&vm);
	int r = start_parse(ctl, argc - 1, argv + 1, &vm);
	if (r != CTL_OK)
		return r;
	in.name = argv[1 + optind];
	for (int i = 2 + optind; i < argc; i++) /* KEY=VALUE after NAME: the VMM cell's limits */
		if ((r = ctl_limit_add(ctl, lims, lptr, &in.n_limits, CTL_VM_LIMITS_MAX, argv[i],
		                       "'%s': start takes one NAME, then KEY=VALUE limits",
		                       "too many limits ('%s')")) != CTL_OK)
			return r;
	in.limits = lptr;
	in.kernel = (char *)ctl_vm_str(&vm, VM_OPT_KERNEL);
	in.image = (char *)ctl_vm_str(&vm, VM_OPT_IMAGE);
	in.disk = (char *)ctl_vm_str(&vm, VM_OPT_DISK);
	in.cpus = ctl_vm_num(&vm, VM_OPT_CPUS);
	in.memory_mb = ctl_vm_num(&vm, VM_OPT_MEMORY);
	in.accel = (char *)ctl_vm_str(&vm, VM_OPT_ACCEL);
	in.append = (char *)ctl_vm_str(&vm, VM_OPT_APPEND);
	if (!in.kernel[0] || !in.image[0])
		return ctl_usage(ctl, "start needs --kernel FILE and --image FILE");
	return call_info(ctl, ctl->timeout_ms, "Start", &in.base);
}

/* list, status, stop: [-o json] [--timeout DUR (stop)] [NAME] */
struct vm_args {
	uint64_t stop_ms;
	const char *name;
};

static int vm_parse(struct ctl *ctl, int argc, char **argv, struct vm_args *a)
{
	bool stop = !strcmp(argv[1], "stop");
	int r;
	*a = (struct vm_args){0};
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			if ((r = ctl_output_opt(ctl, argv[++i])) != CTL_OK)
				return r;
		} else if (!strcmp(argv[i], "--timeout") && stop && i + 1 < argc) {
			if (str_to_duration_ms(argv[++i], 3600 * 1000, &a->stop_ms) < 0 ||
			    !a->stop_ms)
				return ctl_usage(ctl,
				                 "--timeout '%s': expected a duration such as 30s",
				                 argv[i]);
		} else if (argv[i][0] == '-') {
			return ctl_usage(ctl, "unknown option or missing value '%s'", argv[i]);
		} else if (!a->name) {
			a->name = argv[i];
		} else {
			return ctl_usage(ctl, "unexpected argument '%s'", argv[i]);
		}
	}
	if (a->name && !strcmp(argv[1], "list"))
		return ctl_usage(ctl, "list takes no NAME ('%s')", a->name);
	if (!a->name && strcmp(argv[1], "list"))
		return ctl_usage(ctl, "%s needs a NAME", argv[1]);
	return CTL_OK;
}

static int cmd_list(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__VmListRequest in = KIN__V1__VM_LIST_REQUEST__INIT;
	ProtobufCMessage *out;
	struct vm_args a;
	int r = vm_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	r = ctl_call_simple(ctl, "kin.v1.Vm", "List", &in.base,
	                    &kin__v1__vm_list_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__VmListResponse *m = (Kin__V1__VmListResponse *)out;
	if (!ctl->json)
		printf("%-16s %-21s %7s %-4s %4s %6s  %-5s %s\n", "NAME", "STATE", "PID", "ACCEL",
		       "CPUS", "MIB", "LINK", "CONSOLE");
	for (size_t i = 0; i < m->n_vms; i++)
		print_info(m->vms[i], ctl->json, true);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__VmRequest in = KIN__V1__VM_REQUEST__INIT;
	struct vm_args a;
	int r = vm_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	in.name = (char *)a.name;
	return call_info(ctl, ctl->timeout_ms, "Status", &in.base);
}

static int cmd_stop(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__VmStopRequest in = KIN__V1__VM_STOP_REQUEST__INIT;
	struct vm_args a;
	int r = vm_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	in.name = (char *)a.name;
	in.timeout_ms = a.stop_ms;
	/* Stop waits for the VMM: the call outlasts the stop timeout. */
	int t = (int)((a.stop_ms ? a.stop_ms : 30000) + 15000);
	if (ctl->timeout_set && ctl->timeout_ms > t)
		t = ctl->timeout_ms;
	return call_info(ctl, t, "Stop", &in.base);
}

static const struct option list_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};
static const struct option stop_opts[] = {
    {"timeout", required_argument, NULL, 't'},
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

const struct ctl_cmd ctl_vm_cmds[] = {
    {"start", "start a microVM", cmd_start, start_opts, NULL},
    {"list", "every VM", cmd_list, list_opts, NULL},
    {"status", "one VM", cmd_status, list_opts, NULL},
    {"stop", "stop a VM and wait for its VMM", cmd_stop, stop_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_vm_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(ctl, ctl_vm_cmds, argc, argv,
	                        "expected start, list, status or stop",
	                        "unknown vm command '%s' (start, list, status, stop)", false);
}
