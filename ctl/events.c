/* events: `kin ctl events [--cell PATH]` over kin.v1.Events — one line
 * per event (or one JSON object per line) until interrupted. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>

static void event_print(const ProtobufCMessage *m)
{
	const Kin__V1__Event *e = (const Kin__V1__Event *)m;
	if (e->dropped)
		printf("(%llu events dropped: this reader was too slow)\n",
		       (unsigned long long)e->dropped);
	printf("%llu.%06llu %-9s %s%s%s", (unsigned long long)(e->time_ns / 1000000000ull),
	       (unsigned long long)(e->time_ns % 1000000000ull / 1000), e->name, e->cell,
	       e->exec[0] ? "/" : "", e->exec);
	if (e->pid)
		printf(" pid=%d", e->pid);
	if (e->type == KIN__V1__EVENT_TYPE__EXEC_EXIT && e->status_unknown)
		printf(" status=unknown");
	else if (e->type == KIN__V1__EVENT_TYPE__EXEC_EXIT)
		printf(e->signal ? " signal=%d" : " status=%d",
		       e->signal ? e->signal : e->exit_code);
	if (e->type == KIN__V1__EVENT_TYPE__OOM_KILL ||
	    e->type == KIN__V1__EVENT_TYPE__EXEC_RESTART)
		printf(" count=%llu", (unsigned long long)e->count);
	if (e->type == KIN__V1__EVENT_TYPE__EXEC_RESTART)
		printf(" delay=%llums", (unsigned long long)e->delay_ms);
	putchar('\n');
	fflush(stdout);
}

const struct option ctl_events_opts[] = {
    {"cell", required_argument, NULL, 'c'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int ctl_events_main(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__EventsRequest in = KIN__V1__EVENTS_REQUEST__INIT;
	int c, r;
	ctl->what = "events";
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", ctl_events_opts, NULL)) != -1) {
		int k = ctl_common_opt(ctl, c, argv, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == 'c')
			in.cell = optarg;
	}
	if (optind < argc)
		return ctl_usage(ctl, "unexpected argument '%s'", argv[optind]);
	return ctl_stream_run(ctl, "kin.v1.Events", "Subscribe", &in.base,
	                      &kin__v1__event__descriptor, event_print);
}
