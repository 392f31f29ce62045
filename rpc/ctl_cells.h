/* ctl_cells: `kin ctl cell|exec|events` (rpc/ctl_cells.c), called from
 * rpc/ctl.c's dispatch. argv[0] is the command word. Returns the exit code
 * (README "RPC": 0, 1 RPC error, 2 usage, 3 unreachable; `exec wait`: the
 * executable's own status). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct rpc_kv;

struct ctl_cells_opts {
	const char *address;
	bool json;
	int timeout_ms;   /* unary calls */
	bool timeout_set; /* given: also bounds waits (wait, stop, freeze, delete) */
	const struct rpc_kv *metadata; /* --target: sent with every call */
	size_t n_metadata;
};

bool rpc_ctl_cells_is_command(const char *cmd);
int rpc_ctl_cells_main(const struct ctl_cells_opts *o, int argc, char **argv);
/* The commands' part of `kin ctl --help`. */
const char *rpc_ctl_cells_usage(void);
