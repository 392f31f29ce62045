/* ctl_cell: `kin ctl cell create|update|list|show|freeze|thaw|kill|delete`
 * over kin.v1.Cells. Limits go to kin as the KEY=VALUE words they were
 * typed as: kin knows which keys a cell has and says what is wrong. */
#include "ctl/cc.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

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

static int add_limit(struct cc *cc, Kin__V1__CreateCellRequest *req, Kin__V1__Limit *lims,
                     Kin__V1__Limit **ptrs, size_t max, char *kv)
{
	char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return ctl_cc_usage(cc, "'%s': expected KEY=VALUE (memory.max=512M)", kv);
	if (req->n_limits == max)
		return ctl_cc_usage(cc, "too many limits (at most %zu)", max);
	*eq = '\0';
	kin__v1__limit__init(&lims[req->n_limits]);
	lims[req->n_limits].key = kv;
	lims[req->n_limits].value = eq + 1;
	ptrs[req->n_limits] = &lims[req->n_limits];
	req->n_limits++;
	return CTL_OK;
}

int ctl_cc_cmd_cell(struct cc *cc, int argc, char **argv)
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
		return ctl_cc_usage(cc,
		                    "needs a subcommand: create, update, list, show, freeze, thaw, "
		                    "kill, delete");
	const char *sub = argv[1];
	snprintf(what, sizeof(what), "cell %s", sub);
	cc->what = what;
	creq.limits = ptrs;
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":fl:o:h", longopts, NULL)) != -1) {
		int k = ctl_cc_common_opt(cc, c, argv + 1, &r);
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
			return ctl_cc_usage(cc, "needs a cell PATH");
		for (int i = 1; i < npos; i++)
			if ((r = add_limit(cc, &creq, lims, ptrs, MAXL, pos[i])) != CTL_OK)
				return r;
		if (force)
			return ctl_cc_usage(cc, "--force is for delete");
		if (is_update && creq.n_limits == 0)
			return ctl_cc_usage(cc, "needs at least one KEY=VALUE");
		creq.path = pos[0];
		ProtobufCMessage *out;
		r = ctl_cc_call(cc, "kin.v1.Cells", is_create ? "Create" : "Update", &creq.base,
		                &kin__v1__cell__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			ctl_cc_json_line(out);
		else
			print_cell_line((Kin__V1__Cell *)out, false);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (creq.n_limits)
		return ctl_cc_usage(cc, "limits are for create and update");
	if (!strcmp(sub, "list")) {
		if (npos > 1 || force)
			return ctl_cc_usage(cc, "takes at most one PATH");
		Kin__V1__ListCellsRequest in = KIN__V1__LIST_CELLS_REQUEST__INIT;
		ProtobufCMessage *out;
		in.path = npos ? pos[0] : (char *)"";
		r = ctl_cc_call(cc, "kin.v1.Cells", "List", &in.base,
		                &kin__v1__list_cells_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ListCellsResponse *m = (Kin__V1__ListCellsResponse *)out;
		if (cc->json)
			ctl_cc_json_line(out);
		else
			for (size_t i = 0; i < m->n_cells; i++)
				print_cell_line(m->cells[i], true);
		protobuf_c_message_free_unpacked(out, NULL);
		return CTL_OK;
	}
	if (npos != 1)
		return ctl_cc_usage(cc, "needs exactly one cell PATH");
	if (force && strcmp(sub, "delete"))
		return ctl_cc_usage(cc, "--force is for delete");
	Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
	in.path = pos[0];
	ProtobufCMessage *out = NULL;
	if (!strcmp(sub, "show")) {
		r = ctl_cc_call(cc, "kin.v1.Cells", "Show", &in.base,
		                &kin__v1__show_cell_response__descriptor, &out, false);
		if (r != CTL_OK)
			return r;
		const Kin__V1__ShowCellResponse *m = (Kin__V1__ShowCellResponse *)out;
		const Kin__V1__CellStats *s = m->stats;
		if (cc->json) {
			ctl_cc_json_line(out);
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
		r = ctl_cc_call(cc, "kin.v1.Cells", fr ? "Freeze" : "Thaw", &in.base,
		                &kin__v1__cell__descriptor, &out, true);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			ctl_cc_json_line(out);
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
		r = del ? ctl_cc_call(cc, "kin.v1.Cells", "Delete", &din.base, NULL, NULL, true)
		        : ctl_cc_call(cc, "kin.v1.Cells", "Kill", &in.base, NULL, NULL, false);
		if (r != CTL_OK)
			return r;
		if (cc->json)
			printf("{}\n");
		else
			printf("%s %s\n", del ? "deleted" : "killed", in.path);
		return CTL_OK;
	}
	return ctl_cc_usage(cc,
	                    "unknown subcommand (create, update, list, show, freeze, thaw, kill, "
	                    "delete)");
}
