/* cell: `kin ctl cell create|update|list|show|freeze|thaw|kill|delete`
 * over kin.v1.Cells. Limits go to kin as the KEY=VALUE words they were
 * typed as: kin knows which keys a cell has and says what is wrong. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>

/* The help of cell, exec and events (kin ctl --help, and their -h). */
const char ctl_cells_help[] =
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
    "  exec start CELL NAME --image NAME [--user USER[:GROUP]] [OPTIONS] [-- ARGV...]\n"
    "                 a container from an image (ARGV replaces its Cmd)\n"
    "  exec start CELL NAME --bundle DIR [-- ARGV...]   a runtime-spec bundle\n"
    "      --env K=V  --cwd DIR  --uid N  --gid N  --groups N,N  --umask 022\n"
    "      --rlimit nofile=1024:4096  --caps LIST  --ambient LIST  --no-new-privs\n"
    "      --seccomp default|none|FILE  --ns pid,mnt,net,uts,ipc,user,cgroup\n"
    "      --uid-map IN:OUT:N  --gid-map IN:OUT:N  --hostname H  --root DIR  --read-only\n"
    "      --stdin  --log-size SIZE  --restart no|on-failure|always  --backoff BASE[:CAP]\n"
    "      --stdin-from PATH  --stdout-to PATH  --stderr-to PATH   (FIFOs, files)\n"
    "  exec list [CELL]\n"
    "  exec status|wait|delete CELL NAME   (wait exits with the executable's status)\n"
    "  exec signal CELL NAME SIGNAL        (TERM, SIGKILL, 9, ...)\n"
    "  exec stop [--grace DURATION] CELL NAME\n"
    "  exec logs [-f] [--stdout|--stderr] [--from OUT[:ERR]] CELL NAME\n"
    "  exec stdin [--close] CELL NAME      (sends kin ctl's stdin)\n"
    "  exec start -it CELL NAME -- ARGV... a new pty (-t), attached (-i)\n"
    "  exec attach [-t] [--from OUT[:ERR]] [--detach-key ^X|none] CELL NAME\n"
    "                 its terminal or pipes; Ctrl-] detaches; exits with its status\n"
    "  exec resize CELL NAME ROWSxCOLS     a terminal's window size\n"
    "  shell [--user U] [CELL]             a login shell on a pty (cell \"shell\")\n"
    "  events [--cell PATH]                follow events until interrupted\n";

#define CELL_LIMITS_MAX 64 /* said in add_limit's sentence */

/* What the options and words after `cell SUB` say. */
struct cell_args {
	bool force;
	Kin__V1__CreateCellRequest req; /* path and limits (create, update) */
	Kin__V1__Limit lims[CELL_LIMITS_MAX], *ptrs[CELL_LIMITS_MAX];
	char **pos;
	int npos;
};

const struct option ctl_cell_opts[] = {
    {"force", no_argument, NULL, 'f'},
    {"limit", required_argument, NULL, 'l'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int add_limit(struct ctl *ctl, struct cell_args *a, char *kv)
{
	return ctl_limit_add(ctl, a->lims, a->ptrs, &a->req.n_limits, CELL_LIMITS_MAX, kv,
	                     "'%s': expected KEY=VALUE (memory.max=512M)",
	                     "too many limits (at most 64)");
}

/* The options (anywhere: getopt permutes), then the words left in a->pos.
 * Returns CTL_OK to go on, else the exit code. */
static int cell_parse(struct ctl *ctl, int argc, char **argv, struct cell_args *a)
{
	int c, r;
	kin__v1__create_cell_request__init(&a->req);
	a->req.limits = a->ptrs;
	a->force = false;
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":fl:o:h", ctl_cell_opts, NULL)) != -1) {
		int k = ctl_common_opt(ctl, c, argv + 1, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == 'f')
			a->force = true;
		else if (c == 'l' && (r = add_limit(ctl, a, optarg)) != CTL_OK)
			return r;
	}
	a->pos = argv + 1 + optind;
	a->npos = argc - 1 - optind;
	return CTL_OK;
}

/* cell_parse, then: one PATH, no limits, --force only for delete. */
static int cell_parse_one(struct ctl *ctl, int argc, char **argv, struct cell_args *a)
{
	int r = cell_parse(ctl, argc, argv, a);
	if (r != CTL_OK)
		return r;
	if (a->req.n_limits)
		return ctl_usage(ctl, "limits are for create and update");
	if (a->npos != 1)
		return ctl_usage(ctl, "needs exactly one cell PATH");
	if (a->force && strcmp(argv[1], "delete"))
		return ctl_usage(ctl, "--force is for delete");
	return CTL_OK;
}

static void print_cell_line(const Kin__V1__Cell *c, bool indent)
{
	printf("%*s%s%s%s  execs=%u", indent ? (int)(c->depth - 1) * 2 : 0, "", c->path,
	       c->populated ? "  populated" : "", c->frozen ? "  frozen" : "", c->executables);
	for (size_t i = 0; i < c->n_limits; i++)
		printf("  %s=%s", c->limits[i]->key, c->limits[i]->value);
	putchar('\n');
}

/* create and update: PATH [KEY=VALUE...] */
static int cell_set(struct ctl *ctl, int argc, char **argv)
{
	static struct cell_args a;
	bool is_update = !strcmp(argv[1], "update");
	int r = cell_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	if (a.npos < 1)
		return ctl_usage(ctl, "needs a cell PATH");
	for (int i = 1; i < a.npos; i++)
		if ((r = add_limit(ctl, &a, a.pos[i])) != CTL_OK)
			return r;
	if (a.force)
		return ctl_usage(ctl, "--force is for delete");
	if (is_update && a.req.n_limits == 0)
		return ctl_usage(ctl, "needs at least one KEY=VALUE");
	a.req.path = a.pos[0];
	ProtobufCMessage *out;
	r = ctl_call_simple(ctl, "kin.v1.Cells", is_update ? "Update" : "Create", &a.req.base,
	                    &kin__v1__cell__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(out);
	else
		print_cell_line((Kin__V1__Cell *)out, false);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int cell_list(struct ctl *ctl, int argc, char **argv)
{
	static struct cell_args a;
	int r = cell_parse(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	if (a.req.n_limits)
		return ctl_usage(ctl, "limits are for create and update");
	if (a.npos > 1 || a.force)
		return ctl_usage(ctl, "takes at most one PATH");
	Kin__V1__ListCellsRequest in = KIN__V1__LIST_CELLS_REQUEST__INIT;
	ProtobufCMessage *out;
	in.path = a.npos ? a.pos[0] : (char *)"";
	r = ctl_call_simple(ctl, "kin.v1.Cells", "List", &in.base,
	                    &kin__v1__list_cells_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ListCellsResponse *m = (Kin__V1__ListCellsResponse *)out;
	if (ctl->json)
		ctl_json_line(out);
	else
		for (size_t i = 0; i < m->n_cells; i++)
			print_cell_line(m->cells[i], true);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
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

static void print_stats(const Kin__V1__CellStats *s)
{
	if (s->has_cpu)
		printf("cpu:         usage %lluus (user %llu, system %llu), "
		       "periods %llu, throttled %llu (%lluus)\n",
		       (unsigned long long)s->cpu_usage_us, (unsigned long long)s->cpu_user_us,
		       (unsigned long long)s->cpu_system_us, (unsigned long long)s->cpu_nr_periods,
		       (unsigned long long)s->cpu_nr_throttled,
		       (unsigned long long)s->cpu_throttled_us);
	if (s->has_memory)
		printf("memory:      current %llu, peak %llu; events high %llu max %llu "
		       "oom %llu oom_kill %llu\n",
		       (unsigned long long)s->memory_current, (unsigned long long)s->memory_peak,
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

static void print_show(const Kin__V1__Cell *cl, const Kin__V1__CellStats *s)
{
	printf("path:        %s\ndepth:       %u\npopulated:   %s\nfrozen:      %s\n"
	       "executables: %u\nprocesses:   %llu\ncontrollers:",
	       cl->path, cl->depth, cl->populated ? "yes" : "no", cl->frozen ? "yes" : "no",
	       cl->executables, (unsigned long long)s->procs);
	for (size_t i = 0; i < cl->n_controllers; i++)
		printf(" %s", cl->controllers[i]);
	putchar('\n');
	for (size_t i = 0; i < cl->n_limits; i++)
		printf("limit:       %s = %s\n", cl->limits[i]->key, cl->limits[i]->value);
	print_stats(s);
}

static int cell_show(struct ctl *ctl, int argc, char **argv)
{
	static struct cell_args a;
	int r = cell_parse_one(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	ProtobufCMessage *out;
	in.path = a.pos[0];
	r = ctl_call_simple(ctl, "kin.v1.Cells", "Show", &in.base,
	                    &kin__v1__show_cell_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ShowCellResponse *m = (Kin__V1__ShowCellResponse *)out;
	if (ctl->json)
		ctl_json_line(out);
	else if (m->cell && m->stats)
		print_show(m->cell, m->stats);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

/* freeze and thaw */
static int cell_freeze(struct ctl *ctl, int argc, char **argv)
{
	static struct cell_args a;
	bool fr = !strcmp(argv[1], "freeze");
	int r = cell_parse_one(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	ProtobufCMessage *out;
	in.path = a.pos[0];
	r = ctl_call_simple(ctl, "kin.v1.Cells", fr ? "Freeze" : "Thaw", &in.base,
	                    &kin__v1__cell__descriptor, &out, true);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(out);
	else
		printf("%s %s\n", fr ? "frozen" : "thawed", in.path);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

/* kill and delete */
static int cell_kill(struct ctl *ctl, int argc, char **argv)
{
	static struct cell_args a;
	bool del = !strcmp(argv[1], "delete");
	int r = cell_parse_one(ctl, argc, argv, &a);
	if (r != CTL_OK)
		return r;
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	Kin__V1__DeleteCellRequest din = KIN__V1__DELETE_CELL_REQUEST__INIT;
	in.path = din.path = a.pos[0];
	din.force = a.force;
	r = del ? ctl_call_simple(ctl, "kin.v1.Cells", "Delete", &din.base, NULL, NULL, true)
	        : ctl_call_simple(ctl, "kin.v1.Cells", "Kill", &in.base, NULL, NULL, false);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		printf("{}\n");
	else
		printf("%s %s\n", del ? "deleted" : "killed", in.path);
	return CTL_OK;
}

const struct ctl_cmd ctl_cell_cmds[] = {
    {"create", "a cell with limits", cell_set, ctl_cell_opts, NULL},
    {"update", "change limits live", cell_set, ctl_cell_opts, NULL},
    {"list", "the tree, parents first", cell_list, ctl_cell_opts, NULL},
    {"show", "info, limits, stats, PSI", cell_show, ctl_cell_opts, NULL},
    {"freeze", "freeze a cell", cell_freeze, ctl_cell_opts, NULL},
    {"thaw", "thaw a cell", cell_freeze, ctl_cell_opts, NULL},
    {"kill", "kill a cell's processes", cell_kill, ctl_cell_opts, NULL},
    {"delete", "delete a cell", cell_kill, ctl_cell_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_cell_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(ctl, ctl_cell_cmds, argc, argv,
	                        "needs a subcommand: create, update, list, show, freeze, thaw, "
	                        "kill, delete",
	                        "unknown subcommand (create, update, list, show, freeze, thaw, "
	                        "kill, delete)",
	                        true);
}
