/* ctl_cells: `kin ctl cell|exec|events` (rpc/ctl_cells.c), called from
 * rpc/ctl.c's dispatch. argv[0] is the command word. Returns the exit code
 * (README "RPC": 0, 1 RPC error, 2 usage, 3 unreachable; `exec wait`: the
 * executable's own status). */
#pragma once

#include <stdbool.h>

struct ctl_opts; /* rpc/ctl.h */

bool ctl_cells_is_command(const char *cmd);
int ctl_cells_main(const struct ctl_opts *o, int argc, char **argv);
/* The commands' part of `kin ctl --help`. */
const char *ctl_cells_usage(void);
