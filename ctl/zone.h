/* ctl_zone: `kin ctl zone create|list|status|stop|kill` (rpc/ctl_zone.c),
 * called from rpc/ctl.c's dispatch; argv[0] is "zone". Exit codes as
 * `kin ctl`'s. */
#pragma once

struct ctl_opts; /* rpc/ctl.h */

int ctl_zone_main(const struct ctl_opts *o, int argc, char **argv);
const char *ctl_zone_usage(void);
