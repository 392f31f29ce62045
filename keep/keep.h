/* keep: handover — what lets kin's work outlive kin. Read this first.
 *
 * Everything with state that must survive `kin ctl reexec` or a crash is
 * a *participant*: it registers once (keep_register) with a name, a tag
 * (its record in a state), a level and its hooks. A re-exec, an adoption
 * after a crash and the state file are loops over the registry in level
 * order, never a hand-written sequence:
 *   - keep_save: every participant writes its record (re-exec: into the
 *     sealed memfd, fds kept open; the state file: w->file, no fds);
 *   - keep_start: the next kin (or a killed kin's successor, or a fresh
 *     kin) starts every participant registered up to a level, each
 *     handed its record of the state being taken over (keep_from);
 *   - keep_settled / keep_uncarried / keep_children: whether a re-exec
 *     may go now;
 *   - keep_set_keeper: a keeper (below) started anew gets every
 *     participant's pipes;
 *   - keep_stop: kin's end, every participant's stop and free walked
 *     back down the levels.
 * A new stateful part touches its own file and one registration (and
 * one tag below).
 *
 * The state file (a daemon's state directory, --state-dir /run/kin): a
 * lock that makes the directory this kin's alone, and the participants'
 * records rewritten shortly after each change (keep_changed), so a
 * successor adopts what a killed kin ran. A clean stop removes it.
 *
 * The keeper (`kin keeper FD`, keep/keeper.c) is a small process that
 * holds the other ends of the workloads' pipes and the units' sockets
 * while no kin runs; a successor takes them back.
 *
 * keep/ knows no participant: it sees records, fds and hooks. */
#pragma once

#include "lib/lib.h"
#include "lib/state.h"

/* Each participant's record in a state: a stable number (a state's
 * layout, lib/state.h's STATE_FORMAT), unique here. */
enum keep_tag {
	KEEP_TAG_INIT = 1, /* kin's own: start time, the workload, the boot */
	KEEP_TAG_CELLS = 2,
	KEEP_TAG_RPC = 3, /* the server's sockets, routes and connections */
	KEEP_TAG_UNITS = 8,
	KEEP_TAG_TLS = 9,
	KEEP_TAG_VMS = 11,
	KEEP_TAG_ZONES = 12,
	KEEP_TAG_EXEC_IMAGES = 13,
	KEEP_TAG_TASK = 14,
	KEEP_TAG_IMAGES = 15,
	KEEP_TAG_RPC_CONNS = 16,  /* no record: KEEP_TAG_RPC's connections, taken last */
	KEEP_TAG_API = 17,        /* no record: the kin.v1 services, at kin's stop */
	KEEP_TAG_MACHINE = 18,    /* no record: a machine's end (reboot(2)) */
	KEEP_TAG_FIRST_FREE = 19, /* the handover's own records start at 32 */
};

/* The order participants start and take over in; kin's stop (keep_stop)
 * walks it back. Each level names what it needs from the ones before it,
 * and why its stop and free are where they are. */
enum keep_level {
	KEEP_LEVEL_INIT = 1, /* the workload is kin's child again */
	/* The server and its routes: the cells' owner. At the stop its free
	 * comes after every part above it went but before the served ones
	 * (their memory is its handlers'): the server goes with the
	 * connections it still has, then its guard (auth: the calls' ends
	 * are audited) and the VM link (the server closed its port without
	 * calling back). */
	KEEP_LEVEL_RPC = 2,
	/* Everything else runs in cells. Stop: the cells library goes once
	 * the services' calls and streams ended (it answers their cancelled
	 * waits, reaching the parts above it that are still there: units
	 * are freed after it). */
	KEEP_LEVEL_CELLS = 10,
	/* The gateway runs in a cell; the policy (rpc's guard) starts with
	 * it, first (its free is the server's: KEEP_LEVEL_RPC). */
	KEEP_LEVEL_TLS = 20,
	/* A machine stops here (reboot(2), never returns): after the units
	 * went (the next boot's seed saved before the unmount); the gateway,
	 * the server and what is below are the kernel's to end. */
	KEEP_LEVEL_MACHINE = 25,
	/* Services are cells and executables. Free: after the cells library
	 * (its last callbacks, cancelled waits, reach live units). */
	KEEP_LEVEL_UNITS = 30,
	/* The kin.v1 services (api_start, after the service manager, which
	 * kin.v1.Units serves). Stop: their pending calls and streams end
	 * (zones, VMs, cells) before the cells library goes. */
	KEEP_LEVEL_API = 35,
	KEEP_LEVEL_EXEC_IMAGES = 40, /* executables' containers (a cells executable's) */
	KEEP_LEVEL_VMS = 41,         /* before zones: a VM zone's owner binds its VM */
	KEEP_LEVEL_ZONES = 42,
	KEEP_LEVEL_IMAGES = 43, /* layers nobody took: after every container's owner */
	/* The shim's pods: their zones are there to own. Stop: first of all,
	 * as api's services (the last started, first). */
	KEEP_LEVEL_TASK = 50,
	KEEP_LEVEL_CONNS = 90, /* calls read already are answered: every service is back */
	KEEP_LEVEL_MAX = 100,
};

enum keep_how { KEEP_FRESH, KEEP_REEXEC, KEEP_ADOPT };

/* What a participant takes over at its start. */
struct keep_from {
	enum keep_how how;
	const char *how_name;             /* "re-exec", "adopt", "start": starts log lines */
	struct state_in *in;              /* the state (NULL: fresh) */
	const struct state_field *record; /* its record in it; NULL: none */
	int *kept;                        /* adopt: the fds the keeper gave back (taken ones -1) */
	size_t nkept;
};

/* A keeper of fds, as participants hand theirs to it (cells_keeper's
 * shape: keep the other ends of pipes as they are made, let go of one). */
struct keep_keeper {
	void (*keep)(const int *fds, size_t n, void *data);
	void (*unkeep)(int fd, void *data);
	void *data;
};

struct keep_part {
	const char *name; /* "the zones": for messages */
	uint16_t tag;     /* enum keep_tag */
	unsigned level;   /* enum keep_level */
	/* Starts it, or takes over from->record (fresh: from->in NULL).
	 * Called once, in level order; < 0 is logged and the start goes on. */
	int (*start)(void *data, const struct keep_from *from);
	/* Its record, as a field of tag (w->file: what a successor can adopt,
	 * no fds). < 0 with err: the state cannot be written (a re-exec is
	 * refused). NULL: nothing to save. */
	int (*save)(void *data, struct state_w *w, uint16_t tag, struct err *err);
	/* What cannot be handed over at all now ("a VM zone"), or NULL. */
	const char *(*uncarried)(void *data);
	/* false while something is half-done (a start): why says what. */
	bool (*settled)(void *data, char *why, size_t size);
	/* The children of kin it tracks and hands over. */
	size_t (*children)(void *data);
	/* The keeper from now on (NULL: none); fresh: it holds none of this
	 * participant's fds yet, give it every one. */
	void (*set_keeper)(void *data, const struct keep_keeper *k, bool fresh);
	/* The wire (RPC's sockets and connections): saved in a re-exec after
	 * the caller is answered, for saving ends every other call. */
	bool wire;
	/* A re-exec's execve failed after save: go on as before it. */
	void (*resume)(void *data);
	/* kin's end (keep_stop), once its processes are gone: its work ends
	 * (pending calls answered, streams closed, what it holds let go). */
	void (*stop)(void *data);
	/* Then it goes (its memory; NULL: nothing of it is freed here). */
	void (*free)(void *data);
	/* The RPC server's handlers point into it: freed after the server
	 * (KEEP_LEVEL_RPC's free), in a walk of their own. */
	bool served;
	void *data;
};

struct keep;
int keep_new(struct keep **ret);
void keep_free(struct keep *k);
/* -EEXIST for a tag taken, -ENOSPC past KEEP_PARTS_MAX. p is copied. */
#define KEEP_PARTS_MAX 32
int keep_register(struct keep *k, const struct keep_part *p);
/* The part of data goes (its owner is freed): no hook is called again. */
void keep_unregister(struct keep *k, void *data);

/* The state the next keep_start calls hand out (in stays the caller's;
 * kept: adopt's fds). Without one, participants start fresh. */
void keep_take_from(struct keep *k, enum keep_how how, struct state_in *in, int *kept,
                    size_t nkept);
/* The record of tag in that state (1), or 0 when there is none. */
int keep_record(const struct keep *k, uint16_t tag, struct state_field *ret);
/* For a participant that makes itself from its record, outside
 * keep_start (register it with start NULL): what it takes over (*ret,
 * its record in *buf). */
void keep_from_for(const struct keep *k, uint16_t tag, struct keep_from *ret,
                   struct state_field *buf);
/* Starts every registered participant of level <= level not started yet. */
void keep_start(struct keep *k, unsigned level);
/* Every participant's record, in level order; the first error. */
int keep_save(struct keep *k, struct state_w *w, struct err *err);
const char *keep_uncarried(const struct keep *k);
bool keep_settled(const struct keep *k, char *why, size_t size);
size_t keep_children(const struct keep *k);
/* kin stops: a re-exec under way ends, the state file is closed (kept
 * unless keep_file_close said stopped), and the participants go, each
 * walk from the last level (the last registered) to the first: every
 * stop; every free of a part not served (a machine's end among them:
 * then this never returns); every served part's free. A part that went
 * meanwhile (keep_unregister) is not called. k itself stays (keep_free). */
void keep_stop(struct keep *k);

/* ---- re-exec (keep/reexec.c) ---- */

/* What a re-exec asks of its owner, beyond the participants' hooks. */
struct keep_reexec_ops {
	/* < 0 with err: kin cannot hand over now (it is stopping, its boot
	 * runs, the next kin would refuse the policy...). */
	int (*check)(void *data, struct err *err);
	void *data;
};
/* kin re-executes itself (System/Reexec): kind names the owner's kind of
 * kin (its role: a state of another kind is refused), argv its command
 * line (kept: the next kin's), children its child table. */
int keep_reexec_init(struct keep *k, struct ev_loop *loop, struct child_table *children,
                     const char *kind, char **argv, const struct keep_reexec_ops *ops);
/* Begins one: the binary ("" or NULL: the file kin was started from, as
 * it is now) probed, the participants settled, their state written, kin
 * executed. 0 and done called later, once, from the loop (0 as kin is
 * about to exec, or -errno and err), or -errno with err now. */
typedef void (*keep_reexec_done_fn)(int result, const struct err *err, const char *binary,
                                    uint64_t reexecs, void *call_data);
int keep_reexec_begin(struct keep *k, const char *binary, keep_reexec_done_fn done, void *call_data,
                      struct err *err);
/* The caller went away: done is not called for call_data. */
void keep_reexec_cancel(struct keep *k, void *call_data);
/* kin is stopping: one under way ends UNAVAILABLE (its probe killed). */
void keep_reexec_stop(struct keep *k);
/* Re-execs so far, and why the last one fell back ("" none). */
void keep_reexec_count(const struct keep *k, uint64_t *ret_count, const char **ret_error);
/* The next kin: was it handed a state? */
bool keep_reexec_pending(void);
/* Reads the state handed over and hands it to the participants as they
 * start (keep_start). When it cannot be read (another format, another
 * kind of kin), the previous binary (kept in a sealed memfd) is exec'd
 * again with it and this never returns; 0 on success. */
int keep_reexec_restore(struct keep *k);
/* Once every participant started: the state is closed (every fd nobody
 * took with it), the previous epoll set emptied, the time kin did not
 * answer logged. */
void keep_reexec_restored(struct keep *k);

/* ---- the state file and the keeper (keep/file.c) ---- */

#define KEEPER_FDS_MAX 8192 /* fds the keeper holds (3 per executable) */
/* `kin keeper FD` (keep/keeper.c): the process that holds them. */
int keep_keeper_main(int argc, char **argv);

/* Opens dir as this kin's state directory: its lock taken, a keeper
 * connected (started if none runs). < 0 (logged): another kin holds it,
 * or it is not root's own — no state is kept. */
int keep_file_open(struct keep *k, const char *dir);
/* What a killed kin left: its state file, mapped, and the fds its keeper
 * held, handed to the participants by the next keep_start calls
 * (keep_take_from). 1 when there is one, 0 none, < 0 (logged) when it
 * does not read. */
int keep_file_load(struct keep *k);
/* After the adoption: closes the kept fds nobody took (the keeper lets go
 * of such a socket too: nobody listens on it any more), unmaps. */
void keep_file_loaded(struct keep *k);
/* Writes the state file now and, from now on, soon after each
 * keep_changed; the participants get the keeper. */
int keep_file_watch(struct keep *k, struct ev_loop *loop);
/* Something a successor adopts changed: the file is written soon. */
void keep_changed(struct keep *k);
/* The directory (NULL: no state file) and DIR/zones, where zones' reconnect
 * sockets live (NULL: none, or too long). */
const char *keep_file_dir(const struct keep *k);
const char *keep_file_zones_dir(const struct keep *k);
/* The keeper, for fds handed to it outside the participants' hooks;
 * NULL without one. */
const struct keep_keeper *keep_keeper(struct keep *k);
/* Ends the state file. stopped: kin stopped cleanly, nothing is left to
 * adopt (the file goes, the keeper ends); otherwise both stay for a
 * successor. */
void keep_file_close(struct keep *k, bool stopped);
