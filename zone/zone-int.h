/* zone internals: the spawn step shared by zone.c and spawn.c. */
#pragma once

#include "net/net.h"
#include "zone/zone.h"

#include <limits.h>
#include <sys/un.h>

#define ZONE_RPC_FD      3
#define ZONE_LISTEN_FD   4 /* the reconnect socket, when there is one */
#define ZONE_ARGS_MAX    64
#define ZONE_OVERLAY_MAX 4000 /* mount(2) data is one page */

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
	ZSTEP_SHARE,
	ZSTEP_NETNS,
	ZSTEP_ROOT_CHECK, /* the given root: a directory (here, not in kin: a hung mount
	                   * stalls this child, which has a deadline) */
	ZSTEP_SYSCTL,     /* writing the zone's sysctls */
};
const char *zone_step_name(int step);

struct zone_spawn {
	const char *name;
	const char *cgroup_dir; /* absolute: the zone's cell */
	const char *root;       /* NULL: the parent's root, read-only, on scratch */
	const char *scratch;    /* an empty directory of ours to mount on */
	const char *overlay;    /* mount data of an overlay at root, or NULL: root bound */
	int exe_fd;             /* the sealed memfd */
	char *const *argv;
	bool net;
	const char *netns;    /* joined by the child first, or NULL */
	const char *hostname; /* the zone's */
	const char *share_src, *share_dst;
	bool share_peer, host_ipc, host_pid;
	char *const *sysctls;
	int out_fd;    /* the zone kin's stdout and stderr (stdin: /dev/null); -1: ours */
	int listen_fd; /* its reconnect socket, or -1 */
	/* Runs in the parent once the child exists, before it goes on. */
	int (*net_setup)(void *data, pid_t pid);
	void *net_data;
};

struct zone_spawned {
	pid_t pid;
	int pidfd;
	int rpc_fd;    /* our end */
	int report_fd; /* non-blocking: EOF once exec'd, or (step, errno) */
};

/* Clones the zone kin and, for --net, makes its veth before it goes on;
 * returns as soon as the child runs its own setup, never waiting on it.
 * A failure here (*ret_step ZSTEP_NET or -1) leaves no process. */
int zone_spawn(const struct zone_spawn *a, struct zone_spawned *ret, int *ret_step);
/* Its report pipe is read with lib's spawn_report_read. */

/* ---- log.c: a zone kin's output, in a capped, rotated file -------------- */
struct zone_log {
	struct ev_source src; /* the pipe's read end; fd -1: closed */
	struct ev_loop *loop;
	int file_fd;
	char path[PATH_MAX];
	size_t cap;       /* bytes in NAME.log before it becomes NAME.log.1 */
	uint64_t size;    /* bytes in NAME.log now */
	uint64_t dropped; /* bytes that could not be written */
};
void zone_log_init(struct zone_log *l);
/* Truncates path (and removes path.1), makes the pipe and watches it:
 * *ret_write_fd is the end for the zone kin's stdout and stderr. */
int zone_log_open(struct zone_log *l, struct ev_loop *loop, const char *path, size_t cap,
                  int *ret_write_fd);
/* Appends, rotating to path.1 whenever path would pass cap. */
void zone_log_write(struct zone_log *l, const void *buf, size_t len);
/* Writes what the pipe still holds, then closes both. NULL-safe. */
void zone_log_close(struct zone_log *l, struct ev_loop *loop);

/* The logs of the last ZONE_LOGS_KEPT gone zones stay for a post-mortem;
 * an older one is removed, so names never seen again cannot fill /run. */
struct zone_logs_kept {
	char *path[ZONE_LOGS_KEPT]; /* malloc'd; oldest first */
	unsigned n;
};
void zone_logs_keep(struct zone_logs_kept *k, const char *path);
/* A new zone of the same name owns path now: never remove it for the old. */
void zone_logs_forget(struct zone_logs_kept *k, const char *path);
/* Frees the list; the logs stay on disk. */
void zone_logs_kept_free(struct zone_logs_kept *k);
/* A log a previous kin (before a re-exec) had open: its pipe's read end
 * and its file, size bytes in it so far. Takes both fds. */
int zone_log_adopt(struct zone_log *l, struct ev_loop *loop, const char *path, size_t cap,
                   int pipe_fd, int file_fd, uint64_t size);

/* ---- zone.c: the records ---- */
struct zone {
	struct zone_info info;
	struct zones *z; /* NULL once zones_free forgot us */
	struct child *child;
	uint32_t slot;
	int deleg; /* our delegation it holds, -1: none */
	struct zone_log log;
	zone_done_fn done;
	void *done_data;
	struct ev_source timer;  /* setup deadline or stop timeout (cgroup.kill), then
	                            cleanup retries */
	struct ev_source report; /* the setup's report pipe while starting; fd -1 after */
	bool starting;           /* created not called yet */
	zone_created_fn created;
	void *created_data;
	char *root;  /* the spec's root while starting (for its check's report) */
	int spawn_r; /* the first reason the start failed, 0: none yet */
	struct err spawn_err;
	int status;
	bool cleaning;         /* reaped: removing what the zone kin made in its cell */
	bool reconnect;        /* its reconnect socket is bound: unlinked at the end */
	unsigned retries;      /* of that removal */
	struct list_node node; /* in zones->list, oldest first */
};

struct zones {
	struct ev_loop *loop;
	struct child_table *children;
	struct cells *cells;
	char self[PATH_MAX];
	unsigned depth, depth_max;
	bool exec_self; /* zones_config's */
	bool has_subnet;
	struct net_subnet subnet; /* its links and delegations, which are held */
	char state_dir[PATH_MAX], scratch[PATH_MAX + 8];
	size_t log_bytes;
	struct zone_logs_kept kept;
	char log_level[16];
	char image_store[PATH_MAX];
	uint64_t stop_timeout_ms;
	char reconnect_dir[PATH_MAX]; /* "": none */
	struct cells_keeper keeper;   /* keep NULL: none */
	int exe_fd;
	struct zone_events ev;
	struct list_node list;
	size_t count;
};

/* Holds x's link (a --net zone's) and delegation (if any) in its kin's
 * subnet, or lets go of them: held while the zone is listed. */
void zone_addrs_hold(struct zone *x, bool held);
/* ---- spec.c: a spec checked, and the zone kin's command line ---- */
/* Everything zone_create can refuse before a side effect: the name, the
 * depth, paths, arguments, limits, a free /30 for --net. */
int zone_spec_check(struct zones *z, const struct zone_spec *spec, struct err *err);
/* The zone kin's command line into argv; the strings in bufs (depth,
 * depth_max). */
void zone_spec_argv(const struct zones *z, const struct zone *x, const struct zone_spec *spec,
                    char depth[16], char depth_max[16], char *argv[ZONE_ARGS_MAX]);

/* The zone kin was reaped (child_exit_fn; data: the zone). */
void zone_on_exit(const siginfo_t *si, void *data);
struct zone *zone_find(struct zones *z, const char *name);
/* Its reconnect socket's address; -ENAMETOOLONG when it does not fit. */
int zone_reconnect_addr(const struct zones *z, const char *name, struct sockaddr_un *ret);
