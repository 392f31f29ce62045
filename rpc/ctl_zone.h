/* ctl_zone: `kin ctl zone create|list|status|stop|kill` (rpc/ctl_zone.c),
 * called from rpc/ctl.c's dispatch; argv[0] is "zone". Exit codes as
 * `kin ctl`'s. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct rpc_kv;

struct ctl_zone_opts {
	const char *address;
	bool json;
	int timeout_ms;
	bool timeout_set;
	const struct rpc_kv *metadata; /* --target */
	size_t n_metadata;
};

int rpc_ctl_zone_main(const struct ctl_zone_opts *o, int argc, char **argv);
const char *rpc_ctl_zone_usage(void);
