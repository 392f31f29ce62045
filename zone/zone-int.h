/* zone internals: the spawn step shared by zone.c and spawn.c. */
#pragma once

#include "zone/zone.h"

#include <limits.h>

#define ZONE_RPC_FD 3

enum zone_step {
	ZSTEP_SYNC,
	ZSTEP_PRIVATE,
	ZSTEP_ROOT,
	ZSTEP_PROC,
	ZSTEP_DEV,
	ZSTEP_RUN,
	ZSTEP_PIVOT,
	ZSTEP_HOSTNAME,
	ZSTEP_FDS,
	ZSTEP_EXEC,
	ZSTEP_NET, /* the parent's side: the veth pair */
};
const char *zone_step_name(int step);

struct zone_spawn {
	const char *name;
	const char *cgroup_dir; /* absolute: the zone's cell */
	const char *root;	/* NULL: a tmpfs on scratch */
	const char *scratch;	/* an empty directory of ours to mount on */
	bool self_dynamic;	/* kin needs its loader: bind /usr in a minimal root */
	int exe_fd;		/* the sealed memfd */
	char *const *argv;
	bool net;
	/* Runs in the parent once the child exists, before it goes on. */
	int (*net_setup)(void *data, pid_t pid);
	void *net_data;
};

struct zone_spawned {
	pid_t pid;
	int pidfd;
	int rpc_fd; /* our end */
};

int zone_spawn(const struct zone_spawn *a, struct zone_spawned *ret, int *ret_step);
