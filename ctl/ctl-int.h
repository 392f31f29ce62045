/* ctl-int: what the files of `kin ctl` share, never included outside
 * ctl/: the options kin ctl hands to each command group, the exit codes,
 * and how a usage error or a failed call is said (helpers in ctl/ctl.c). */
#pragma once

#include "rpc/rpc.h"
#include "proto/kin.pb-c.h"
#include "proto/system.pb-c.h"
#include "proto/vm.pb-c.h"

/* Exit codes, the contract scripts rely on (README "RPC"). */
enum { CTL_OK = 0, CTL_RPC_ERROR = 1, CTL_USAGE = 2, CTL_UNREACHABLE = 3 };

/* How long `exec start` waits by default: kin's own deadline for a
 * child's setup (5 s, README "Cells") and 5 s more, so a setup that times
 * out is reported as DEADLINE_EXCEEDED, not as an unreachable kin. */
#define CTL_EXEC_START_WAIT_MS (5000 + 5000)

/* kin ctl's own options, given to `cell`, `exec`, `events`, `vm`, `zone`. */
struct ctl_opts {
	const char *address;
	bool json;
	int timeout_ms;                /* unary calls */
	bool timeout_set;              /* given: also bounds waits (wait, stop, freeze, delete) */
	const struct rpc_kv *metadata; /* --target: sent with every call */
	size_t n_metadata;
};

/* "kin ctl CMD: " and fmt with arg on stderr, then where help is; returns
 * CTL_USAGE. */
int ctl_usage(const char *cmd, const char *fmt, const char *arg) _printf_(2, 0);
/* s as a JSON string on stdout. */
void ctl_json_str(const char *s);
/* How a call ended (r: rpc_client_call's result, st: its status when r >=
 * 0), said on stderr and, with json, as {"error":...} on stdout; returns
 * the exit code. */
int ctl_call_end(const char *address, bool json, int r, const struct err *st);
