/* ctl_vm: `kin ctl vm start|list|status|stop` (rpc/ctl_vm.c), called from
 * rpc/ctl.c's dispatch; argv[0] is "vm". Exit codes as `kin ctl`'s. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct rpc_kv;

struct ctl_vm_opts {
	const char *address;
	bool json;
	int timeout_ms;
	bool timeout_set;
	const struct rpc_kv *metadata; /* --target */
	size_t n_metadata;
};

int rpc_ctl_vm_main(const struct ctl_vm_opts *o, int argc, char **argv);
const char *rpc_ctl_vm_usage(void);
