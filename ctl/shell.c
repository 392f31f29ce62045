/* shell: `kin ctl shell [--user U] [CELL]`, what `machinectl shell` gives —
 * a login shell of U (root by default) on a pty of the kin reached (any
 * --target), in a fresh executable of CELL (default "shell", made when
 * missing), attached until it ends, its record deleted then. The shell is
 * the user's own from that kin's /etc/passwd (ExecSpec.login); TERM is the
 * client's. A detach leaves it running; kin ctl ended by a signal (its
 * terminal gone) hangs it up. */
#include "ctl/ctl-int.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHELL_CELL "shell"

const struct option ctl_shell_opts[] = {
    {"user", required_argument, NULL, 'u'},
    {"detach-key", required_argument, NULL, 'd'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The cell, made unless it is there. */
static int shell_cell(struct ctl *ctl, const char *cell)
{
	Kin__V1__CreateCellRequest in = KIN__V1__CREATE_CELL_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	struct err st;
	in.path = (char *)cell;
	const struct ctl_call c = {.service = "kin.v1.Cells",
	                           .method = "Create",
	                           .in = &in.base,
	                           .out_desc = &kin__v1__cell__descriptor,
	                           .timeout_ms = ctl->timeout_ms,
	                           .quiet = true};
	int r = ctl_call(ctl, &c, &out, &st);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	if (r == CTL_RPC_ERROR && st.code == ERR_ALREADY_EXISTS)
		return CTL_OK;
	return r == CTL_RPC_ERROR ? ctl_result(ctl, 0, &st) : r;
}

static int shell_start(struct ctl *ctl, const char *cell, const char *name, const char *user)
{
	Kin__V1__StartRequest in = KIN__V1__START_REQUEST__INIT;
	Kin__V1__ExecSpec spec = KIN__V1__EXEC_SPEC__INIT;
	static char term[256];
	char *env[1];
	const char *t = getenv("TERM");
	snprintf(term, sizeof(term), "TERM=%s", t && *t ? t : "xterm");
	env[0] = term;
	spec.env = env;
	spec.n_env = 1;
	spec.login = true;
	spec.user = (char *)user;
	spec.terminal = true;
	in.cell = (char *)cell;
	in.name = (char *)name;
	in.spec = &spec;
	ProtobufCMessage *out = NULL;
	int r = ctl_exec_start_call(ctl, &in, &out);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	return r;
}

/* kin ctl was ended by a signal (its terminal closed: SIGHUP, or a
 * SIGTERM): the session ends too, as a login's does when its line hangs up
 * — SIGHUP to the shell, then a stop (TERM, KILL a second later) for
 * whatever ignores it. */
static void shell_hangup(struct ctl *ctl, const char *cell, const char *name)
{
	Kin__V1__SignalRequest sig = KIN__V1__SIGNAL_REQUEST__INIT;
	Kin__V1__StopRequest stop = KIN__V1__STOP_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	struct err st;
	sig.cell = stop.cell = (char *)cell;
	sig.name = stop.name = (char *)name;
	sig.signal = SIGHUP;
	stop.grace_ms = 1000;
	struct ctl_call c = {.service = "kin.v1.Exec",
	                     .method = "Signal",
	                     .in = &sig.base,
	                     .out_desc = &kin__v1__exec_status__descriptor,
	                     .timeout_ms = ctl->timeout_ms,
	                     .quiet = true};
	if (ctl_call(ctl, &c, &out, &st) == CTL_OK && out)
		protobuf_c_message_free_unpacked(out, NULL);
	out = NULL;
	c.method = "Stop";
	c.in = &stop.base;
	if (ctl_call(ctl, &c, &out, &st) == CTL_OK && out)
		protobuf_c_message_free_unpacked(out, NULL);
}

/* The ended session's record goes (a detached one stays: attach to it). */
static void shell_forget(struct ctl *ctl, const char *cell, const char *name)
{
	Kin__V1__ExecRequest in = KIN__V1__EXEC_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	struct err st;
	in.cell = (char *)cell;
	in.name = (char *)name;
	const struct ctl_call c = {.service = "kin.v1.Exec",
	                           .method = "Delete",
	                           .in = &in.base,
	                           .out_desc = &kin__v1__empty__descriptor,
	                           .timeout_ms = ctl->timeout_ms,
	                           .quiet = true};
	if (ctl_call(ctl, &c, &out, &st) == CTL_OK && out)
		protobuf_c_message_free_unpacked(out, NULL);
}

int ctl_shell_main(struct ctl *ctl, int argc, char **argv)
{
	const char *user = "", *cell = SHELL_CELL;
	int detach_key = CTL_DETACH_KEY_DEFAULT, c, r;
	ctl->what = "shell";
	optind = 0; /* 0: glibc starts over, in its default (permuting) order */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:hu:", ctl_shell_opts, NULL)) != -1) {
		int k = ctl_common_opt(ctl, c, argv, &r);
		if (k > 0)
			return r;
		if (k == 0)
			continue;
		if (c == 'u')
			user = optarg;
		else if (c == 'd' && (detach_key = ctl_detach_key_parse(optarg)) < -1)
			return ctl_usage(ctl, "--detach-key '%s': expected ^X or none", optarg);
	}
	if (optind < argc)
		cell = argv[optind++];
	if (optind < argc)
		return ctl_usage(ctl, "unexpected argument '%s'", argv[optind]);
	if (ctl->json)
		return ctl_usage(ctl, "a shell prints what the shell does, not json");
	char name[64];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "shell-%d-%lx", (int)getpid(), (unsigned long)ts.tv_nsec);
	if ((r = shell_cell(ctl, cell)) != CTL_OK ||
	    (r = shell_start(ctl, cell, name, user)) != CTL_OK)
		return r;
	const struct ctl_attach at = {
	    .cell = cell, .name = name, .terminal = true, .resume = true, .detach_key = detach_key};
	r = ctl_attach(ctl, &at);
	if (r > 128 && r < 128 + NSIG && ctl_attach_signalled())
		shell_hangup(ctl, cell, name);
	shell_forget(ctl, cell, name); /* refused while it runs (a detach): kept */
	return r;
}
