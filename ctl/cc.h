/* ctl_cc: what rpc/ctl_cells.c, rpc/ctl_cell.c and rpc/ctl_exec.c share
 * (never included outside rpc/). One `kin ctl cell|exec|events` run is a
 * struct cc: the options it was given and the words its messages start
 * with. Every helper here prints what went wrong itself and returns the
 * exit code to end with, so a command only passes codes on. */
#pragma once

#include "ctl/ctl-int.h"
#include "ctl/cells.h"
#include "proto/cells.pb-c.h"

struct cc {
	const struct ctl_opts *o;
	bool json;
	struct rpc_client *client;
	const char *what; /* "cell create", for messages */
};

/* One answer on its own line, as JSON (-o json); flushed for followers. */
void ctl_cc_json_line(const ProtobufCMessage *m);
/* An RPC error or an unreachable kin on stderr (and as JSON with -o
 * json); return CTL_RPC_ERROR and CTL_UNREACHABLE. */
int ctl_cc_print_error(struct cc *cc, const struct err *st);
int ctl_cc_print_unreachable(struct cc *cc, int r);
/* One unary call; waits: no timeout unless --timeout was given. */
int ctl_cc_call(struct cc *cc, const char *service, const char *method, const ProtobufCMessage *in,
                const ProtobufCMessageDescriptor *out_desc, ProtobufCMessage **ret_out, bool waits);
/* A server stream to its end: each message printed (as JSON with -o json)
 * as it comes; the exit code says how the stream ended. */
int ctl_cc_stream_run(struct cc *cc, const char *service, const char *method,
                      const ProtobufCMessage *in, const ProtobufCMessageDescriptor *desc,
                      void (*print)(const ProtobufCMessage *m));
/* A usage error, "kin ctl WHAT: ..." on stderr; returns CTL_USAGE. */
int ctl_cc_usage(struct cc *cc, const char *fmt, ...) _printf_(2, 3);
/* Options every subcommand takes: -o json|text, -h; and getopt's errors.
 * Returns 1 when the command ends with *ret, 0 when parsing goes on, -1
 * when c is not one of them. av is the vector given to getopt. */
int ctl_cc_common_opt(struct cc *cc, int c, char **av, int *ret);

/* The commands (argv[0] is the command word). */
int ctl_cc_cmd_cell(struct cc *cc, int argc, char **argv);   /* ctl_cell.c */
int ctl_cc_cmd_exec(struct cc *cc, int argc, char **argv);   /* ctl_exec.c */
int ctl_cc_cmd_events(struct cc *cc, int argc, char **argv); /* ctl_exec.c */
