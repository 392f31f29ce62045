/* ctl_vm: `kin ctl vm start|list|status|stop` (rpc/ctl_vm.c), called from
 * rpc/ctl.c's dispatch; argv[0] is "vm". Exit codes as `kin ctl`'s. */
#pragma once

#include <limits.h>
#include <stdint.h>

struct ctl_opts; /* rpc/ctl.h */

int ctl_vm_main(const struct ctl_opts *o, int argc, char **argv);
const char *ctl_vm_usage(void);

/* The VM options `vm start` and `zone create --vm` share: --kernel 'k',
 * --image 'i', --cpus 'c', --memory 'm', --accel 'a' (`vm start` also
 * --disk 'd', --append 'A'), with their values as the request messages
 * take them: "" or 0 when not given. Paths are absolute: the kin that
 * starts QEMU may run elsewhere (cwd). */
struct ctl_vm_args {
	char kernel[PATH_MAX], image[PATH_MAX], disk[PATH_MAX];
	uint32_t cpus, memory_mb;
	const char *accel, *append;
};
#define CTL_VM_ARGS_INIT                                                                           \
	{                                                                                          \
		.accel = "", .append = ""                                                          \
	}

/* One of those options (c, with its value arg) into a. Returns CTL_OK, or
 * CTL_USAGE once "kin ctl CMD: ..." has said what is wrong with it. */
int ctl_vm_opt(struct ctl_vm_args *a, const char *cmd, int c, const char *arg);
