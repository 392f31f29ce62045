/* zone: nested kins in namespaces. A zone is a cell (cells/) running a
 * copy of kin — exec'd from a sealed memfd of /proc/self/exe made once, so
 * a replaced host binary cannot touch running zones — as PID 1 of new pid,
 * mount, uts, ipc and cgroup namespaces (and net with a veth pair), on a
 * given root or a minimal one (tmpfs with /proc, /sys, /dev, /run), as
 * `kin init --zone NAME --zone-depth N --rpc-fd 3`. fd 3 is one end of a
 * socketpair: the zone kin serves RPC on it, the parent keeps the other end
 * for rpc/ to forward calls through (kin-target).
 *
 * When a zone ends — stopped (SIGTERM to its kin, which stops its own
 * processes), killed (cgroup.kill) or on its own — its cell is killed and
 * removed and its veth deleted: no process, cgroup, mount or link is left.
 *
 * Layer: rpc -> zone -> {cells, net} -> lib. Errors are -errno with a
 * struct err sentence and gRPC-numbered code, as in cells/. */
#pragma once

#include "cells/cells.h"
#include "lib/lib.h"

#include <limits.h>
#include <net/if.h>

#define ZONES_MAX              256            /* zones one kin runs at once */
#define ZONE_DEPTH_MAX_DEFAULT 8              /* nesting: a zone of a zone of ... */
#define ZONE_SUBNET_DEFAULT    "10.88.0.0/16" /* a depth-0 kin's, when not given */
#define ZONE_LOG_BYTES_DEFAULT (256 * 1024)   /* a zone's log file, before it rotates */
#define ZONE_LOG_BYTES_MIN     4096
#define ZONE_LOG_BYTES_MAX     (64 * 1024 * 1024)
#define ZONE_LOGS_KEPT         16      /* logs of gone zones kept, newest first */
#define ZONE_STOP_TIMEOUT_MS   15000   /* SIGTERM -> cgroup.kill if still there */
#define ZONE_CELL_PARENT       "zones" /* zones are cells zones/NAME */

struct zones_config {
	const char *self;   /* kin's binary: default /proc/self/exe */
	unsigned depth;     /* ours: 0 for a machine or daemon kin */
	unsigned depth_max; /* 0: ZONE_DEPTH_MAX_DEFAULT; zone kins get it too */
	/* Where --net zones' addresses come from (see net.h's subnets).
	 * NULL: ZONE_SUBNET_DEFAULT at depth 0, none deeper (a zone kin uses
	 * only the range its parent delegated: --zone-subnet). "none": no
	 * --net zones. */
	const char *subnet;
	const char *state_dir; /* default /run/kin/zones; zone logs go here */
	size_t log_bytes;      /* per zone log file; 0: ZONE_LOG_BYTES_DEFAULT */
	const char *log_level; /* passed to zone kins; NULL: theirs */
	/* Passed to zone kins (--image-store): a zone without a root of its
	 * own sees its parent's root read-only, the parent's image store
	 * included, at the same path. NULL: theirs (the default). */
	const char *image_store;
	uint64_t stop_timeout_ms; /* 0: ZONE_STOP_TIMEOUT_MS */
	/* Zone kins exec'd from this kin's own binary file (an fd of self)
	 * rather than a sealed memfd copy of it: no copy in memory per parent,
	 * the text shared with this kin's, and no more exposed to the file
	 * being rewritten than this kin itself is. For a containerd shim,
	 * whose one zone would otherwise cost a 5 MB copy per pod. */
	bool exec_self;
	/* Where each zone's reconnect socket is bound (DIR/NAME.sock, the
	 * directory made 0700): the zone kin listens there, so that after
	 * this kin was killed its successor can adopt the zone (zones_adopt).
	 * NULL: none; a killed kin's zones are then removed. */
	const char *reconnect_dir;
	/* Given the read end of each zone's log pipe, so that a zone kin's
	 * output waits in its pipe while no kin runs (a daemon's keeper of
	 * pipes, keep/file.c). NULL: none. */
	const struct cells_keeper *keeper;
};

struct zone_spec {
	char name[NAME_MAX_LEN + 1];
	const char *root; /* a directory, or NULL: the parent's root, read-only */
	/* With root: an overlay mounted there by the zone's child (a zone from
	 * an image: its layers, top first, and a writable layer). All three
	 * or none. */
	const char *root_lowerdirs, *root_upperdir, *root_workdir;
	bool net; /* own network namespace with a veth pair */
	/* Or the network namespace at this path (a CNI netns, /proc/PID/ns/net)
	 * joined by the zone's child; not with net. NULL: the parent's. */
	const char *netns;
	const char *hostname; /* NULL: the name */
	/* A directory of the parent's bound (writable) at share_dst in the
	 * zone, as a slave: mounts the parent makes below share_src later
	 * appear in the zone (share_src must be a shared mount for that), the
	 * zone's own mounts there stay its own. share_dst is absolute, below
	 * /run (the zone's own tmpfs). Both or neither. */
	const char *share_src, *share_dst;
	/* The shared directory a peer of share_src, not a slave: mounts the
	 * zone makes below it reach the parent too (a pod's bidirectional
	 * volumes, whose containers mount there with rshared). */
	bool share_peer;
	/* The parent's IPC namespace kept (a pod's hostIPC), not a new one;
	 * the parent's PID namespace (a pod's hostPID): the zone's kin is
	 * then not PID 1 but its processes' subreaper. */
	bool host_ipc, host_pid;
	/* "key=value" written in the zone's namespaces before its kin starts
	 * (a pod's sysctls): net.* with a network namespace not the parent's,
	 * kernel.shm/msg/sem and fs.mqueue.* with its own IPC namespace. */
	char *const *sysctls;
	struct cell_limits limits; /* of the zone's cell */
	char *const *argv;         /* the zone kin's workload, or NULL */
};

/* STARTING: cloned, its own setup (root, mounts, exec) not done yet. */
enum zone_state { ZONE_RUNNING, ZONE_STOPPING, ZONE_GONE, ZONE_STARTING };
const char *zone_state_name(enum zone_state s);

struct zone_info {
	char name[NAME_MAX_LEN + 1];
	enum zone_state state;
	pid_t pid;      /* the zone kin, in our pid namespace */
	unsigned depth; /* the zone kin's: ours + 1 */
	char cell[CELLS_PATH_MAX];
	bool net;
	char host_if[IF_NAMESIZE]; /* our end of the veth */
	char addr[32];             /* the zone's eth0, "10.88.0.2/30" */
	char gateway[32];          /* our end: "10.88.0.1" */
	char subnet[32];           /* delegated to it (--zone-subnet), "" none */
	char log[PATH_MAX];        /* its kin's stdout and stderr: STATE_DIR/NAME.log */
	int rpc_fd;                /* our end of the zone's RPC socketpair (owned by zones) */
	uint64_t started_ns;
};

/* Called from the loop when a zone is gone and cleaned up: status is the
 * zone kin's (exit code or 128+signal; -1 unknown: an adopted zone kin is
 * not our child). */
struct zone_events {
	void (*gone)(const struct zone_info *info, int status, void *data);
	void *data;
};

struct zones;
/* Validates the config (subnet, depth) before anything. */
int zones_new(struct ev_loop *loop, struct child_table *children, struct cells *cells,
              const struct zones_config *cfg, const struct zone_events *ev, struct zones **ret,
              struct err *err);
/* Forgets every zone (their processes go on, but one still in its setup
 * is killed; a later reap calls nothing, nor any created). */
void zones_free(struct zones *z);

/* Checks everything first (name, duplicate, count, depth, root, limits,
 * subnet room), then: cell zones/NAME, the zone kin cloned into it with its
 * namespaces, the veth pair; the child sets its root and hostname and
 * execs. That setup is watched from the loop, never waited for: returns
 * 1 (pending; the zone is listed as starting and its name taken) or
 * -errno with err set and nothing made. created runs once from the loop:
 * result 0 when the zone kin was exec'd, or -errno with err naming the
 * failed step, a setup that took over EXEC_START_TIMEOUT_MS, or a stop or
 * kill that came first; by then the child is killed and reaped and its
 * cell and veth are gone (no gone event follows a failed start). Not
 * called after zones_free. */
typedef void (*zone_created_fn)(int result, const struct err *err, void *data);
int zone_create(struct zones *z, const struct zone_spec *spec, zone_created_fn created, void *data,
                struct err *err);
/* SIGTERM to the zone kin; it stops what it runs and exits. done runs once
 * the zone is gone and cleaned up (after stop_timeout, cgroup.kill).
 * Returns 1 (pending) or -errno. */
typedef void (*zone_done_fn)(int status, void *data);
int zone_stop(struct zones *z, const char *name, zone_done_fn done, void *data, struct err *err);
/* cgroup.kill of the zone's cell: everything in it dies at once. The
 * cleanup follows when the zone kin is reaped. A zone still starting is
 * killed by either, and its create fails (CANCELLED). */
int zone_kill(struct zones *z, const char *name, struct err *err);
int zone_get(struct zones *z, const char *name, struct zone_info *ret, struct err *err);
/* Every live zone, in creation order. */
void zone_foreach(struct zones *z, void (*fn)(const struct zone_info *info, void *data),
                  void *data);
size_t zone_count(const struct zones *z);
/* Each zone's log pipe to the keeper again: a keeper started anew (the
 * last one died) holds none. */
void zones_keep_all(struct zones *z);

/* ---- re-exec (zone/state.c) ---------------------------------------------
 * The zones go along when kin re-executes itself: each running zone kin
 * stays this kin's child (no signal, no restart), with its channel, its
 * log pipe and file, its address and delegation. Only settled zones go:
 * none starting, stopping or being cleaned up (why says which). */
bool zones_settled(const struct zones *z, char *why, size_t size);
/* Zone kins this library tracks as children. */
size_t zones_children(const struct zones *z);
struct state_w;
struct state_in;
struct state_field;
/* One record (tag) with every zone in it, creation order. */
void zones_save(struct zones *z, struct state_w *w, uint16_t tag);
/* In the next kin, into a zones_new one with no zones yet: each zone kin
 * is tracked again (still unreaped, so its real exit status is seen). A
 * zone that cannot be taken back (a record that does not read, a kin
 * that is not our child) is killed and removed with a log line naming
 * it. Returns how many zones were restored; -EBADMSG when the record
 * does not read at all. */
int zones_restore(struct zones *z, struct state_in *in, const struct state_field *f);
/* The running binary's sealed copy (self_copy), if the process has one,
 * kept for the zones to come: a re-exec's kin with zones keeps the one
 * handed over rather than copy 12 MB at the next zone's start. */
void zones_keep_exe(struct zones *z);
/* After kin was killed: zones_save into a file state (w->file) writes
 * each running zone without fds (its log pipe by inode). The successor,
 * into a zones_new one with reconnect_dir set, adopts each zone whose kin
 * still runs in its cell as PID 1 of its namespace: watched through a
 * pidfd (not our child: its end is seen, its status is unknown), its
 * channel a new connection to its reconnect socket, its log pipe taken
 * from kept (set to -1 there) and its log file appended to, its address
 * and delegation held again. Every other cell under zones/ (a zone not
 * adopted, one the record does not name) is killed and removed, with a
 * log line naming it. f NULL: no record. Returns how many were adopted. */
int zones_adopt(struct zones *z, const struct state_field *f, int *kept, size_t nkept);
