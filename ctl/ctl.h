/* ctl: `kin ctl`, the client of every kin.v1 service. It speaks to kin
 * only through rpc/'s client and proto/'s messages; it includes no header
 * of cells/, zone/ or vm/. */
#pragma once

#include <stddef.h>

/* `kin ctl [--socket PATH|--connect ADDR] [-o json] COMMAND`: exit 0 ok,
 * 1 RPC error, 2 usage error, 3 unreachable. */
int ctl_main(int argc, char **argv);

/* kin called as `systemctl` (ctl/systemctl.c): systemctl's command line
 * made into kin.v1.Units calls on the local socket ($KIN_SOCKET, else
 * kin's default). Without a kin to answer (a chroot, an image build) or
 * with --root, enable/disable/mask/unmask/preset/is-enabled work on the
 * unit files themselves, through env's functions: ctl_systemctl_files
 * (ctl/systemctl_files.c, units/'s) for kin's systemctl. */
struct err;
typedef void (*ctl_unit_change_fn)(const char *what, const char *link, const char *target,
                                   void *data);
struct ctl_systemctl_env {
	const char *version; /* kin's, for --version */
	/* verb: "enable", "disable", "mask", "unmask"; root "" or "/": the real one */
	int (*files)(const char *root, const char *verb, const char *name,
	             ctl_unit_change_fn change, void *data, struct err *err);
	/* -ENOENT: no such unit file */
	int (*file_state)(const char *root, const char *name, char *buf, size_t size);
};
int ctl_systemctl_main(int argc, char **argv, const struct ctl_systemctl_env *env);
extern const struct ctl_systemctl_env ctl_systemctl_files;
