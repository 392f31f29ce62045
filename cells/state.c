/* state: the cells library handed over across a re-exec of kin (see
 * cells.h "re-exec" and lib/state.h). Cells are written parents first, so
 * each is restored under a parent already there; executables keep their
 * order, pids, pipes, rings and timers. Tags are never reused. */
#include "cells/cells-int.h"
#include "lib/state.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

enum { T_MOUNT = 1, T_ROOT, T_SEQ, T_CELL, T_EXEC, T_INOTIFY };
/* C_WD_*, C_POPULATED, C_FROZEN: a re-exec's, with the inotify. */
enum { C_PATH = 1, C_OOM, C_CPUS, C_MEMS, C_WD_EVENTS, C_WD_MEMORY, C_POPULATED, C_FROZEN };
/* limits: 20... */
static const struct state_num limit_nums[] = {
    STATE_NUM(20, struct cell_limits, set),
    STATE_NUM(21, struct cell_limits, cpu_weight),
    STATE_NUM(22, struct cell_limits, cpu_quota_us),
    STATE_NUM(23, struct cell_limits, cpu_period_us),
    STATE_NUM(24, struct cell_limits, memory_min),
    STATE_NUM(25, struct cell_limits, memory_low),
    STATE_NUM(26, struct cell_limits, memory_high),
    STATE_NUM(27, struct cell_limits, memory_max),
    STATE_NUM(28, struct cell_limits, memory_swap_max),
    STATE_NUM(29, struct cell_limits, pids_max),
    STATE_NUM(30, struct cell_limits, io_weight),
};
enum {
	E_CELL = 1,
	E_NAME,
	E_SPEC,
	E_STATE,
	E_PID,
	E_RUNNING,
	E_EXITED,
	E_NO_RESTART,
	E_EXIT_CODE,
	E_SIGNAL,
	E_RESTARTS,
	E_ATTEMPT,
	E_STARTED,
	E_EXITED_NS,
	E_SEQ,
	E_RAN,
	E_RING_OUT,
	E_RING_ERR,
	E_PIPE_OUT,
	E_PIPE_ERR,
	E_STDIN,
	E_DEADLINE,
	E_NO_ADOPT, /* a file state: what it needs cannot be written down */
	E_INO_OUT,  /* a file state: the pipes' inodes, to find them again */
	E_INO_ERR,
	E_INO_IN,
	E_PIDFD,   /* a re-exec: the run's pidfd, kept */
	E_WATCHED, /* and it is watched (adopted), not kin's child */
	E_PASS_FD, /* a re-exec: each fd it holds to pass to its restarts, in order */
};
enum { R_CAP = 1, R_END, R_DATA };

static bool settled(const struct cell *cell, char *why, size_t size)
{
	if (cell->freeze_op.active || cell->delete_op.active) {
		snprintf(why, size, "cell \"%s\" is being %s", cell->path,
		         cell->delete_op.active ? "deleted" : "frozen or thawed");
		return false;
	}
	const struct exec *e;
	list_for_each(e, &cell->execs, node) {
		if (e->state == EXEC_STARTING) {
			snprintf(why, size, "exec \"%s\" is starting", e->label);
			return false;
		}
	}
	const struct cell *ch;
	list_for_each(ch, &cell->children, sibling) {
		if (!settled(ch, why, size))
			return false;
	}
	return true;
}

bool cells_settled(const struct cells *c, char *why, size_t size)
{
	return settled(&c->top, why, size);
}

static size_t running(const struct cell *cell)
{
	size_t n = 0;
	const struct exec *e;
	list_for_each(e, &cell->execs, node)
		n += e->token != NULL;
	const struct cell *ch;
	list_for_each(ch, &cell->children, sibling)
		n += running(ch);
	return n;
}

size_t cells_children(const struct cells *c)
{
	return running(&c->top);
}

/* ---- writing ---- */

static void ring_save(struct state_w *w, uint16_t tag, const struct exec_ring *r)
{
	size_t at = state_open(w, tag);
	state_put_u64(w, R_CAP, r->cap);
	state_put_u64(w, R_END, r->end);
	uint64_t pos = exec_ring_start(r);
	size_t kept = (size_t)(r->end - pos);
	uint8_t *p = state_put_room(w, R_DATA, kept);
	if (p)
		exec_ring_read(r, &pos, p, kept, NULL);
	state_close(w, at);
}

/* A file state (w->file) keeps no fds and no output: a successor finds
 * the pipes again through the process, by inode. Fds passed to a run
 * (socket activation) are its own once it started: the next kin's spec
 * has none, but those an executable cells restarts holds (exec_fds_hold)
 * go along a re-exec as its pipes do; a file cannot carry them. */
static int exec_save(const struct exec *e, struct state_w *w, struct err *err)
{
	bool owned = e->spec->release && !e->spec->release_carried;
	bool unadoptable = owned || e->fds_held;
	if (owned && !w->file)
		return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		               "exec \"%s\" cannot be handed over yet (what it runs from is its "
		               "starter's)",
		               e->label);
	size_t at = state_open(w, T_EXEC);
	state_put_str(w, E_CELL, e->cell->path);
	state_put_str(w, E_NAME, e->name);
	exec_spec_save(w, E_SPEC, e->spec);
	state_put_u64(w, E_STATE, e->state);
	state_put_u64(w, E_PID, (uint64_t)e->pid);
	state_put_u64(w, E_RUNNING, e->token != NULL);
	state_put_u64(w, E_EXITED, e->exited);
	state_put_u64(w, E_NO_RESTART, e->no_restart);
	state_put_i64(w, E_EXIT_CODE, e->exit_code);
	state_put_i64(w, E_SIGNAL, e->signal);
	state_put_u64(w, E_RESTARTS, e->restarts);
	state_put_u64(w, E_ATTEMPT, e->attempt);
	state_put_u64(w, E_STARTED, e->started_ns);
	state_put_u64(w, E_EXITED_NS, e->exited_ns);
	state_put_u64(w, E_SEQ, e->seq);
	state_put_u64(w, E_RAN, e->ran);
	if (!w->file) {
		ring_save(w, E_RING_OUT, &e->ring[0]);
		ring_save(w, E_RING_ERR, &e->ring[1]);
		state_put_fd(w, E_PIPE_OUT, e->out[0].src.fd);
		state_put_fd(w, E_PIPE_ERR, e->out[1].src.fd);
		state_put_fd(w, E_STDIN, e->stdin_fd);
		if (e->token) {
			state_put_fd(w, E_PIDFD, child_pidfd(e->token->child));
			state_put_u64(w, E_WATCHED, child_watched(e->token->child));
		}
		for (size_t i = 0; e->fds_held && i < e->spec->npass_fds; i++)
			state_put_fd(w, E_PASS_FD, e->spec->pass_fds[i]);
	} else if (e->token) {
		if (unadoptable)
			state_put_u64(w, E_NO_ADOPT, 1);
		state_put_u64(w, E_INO_OUT, fd_ino(e->out[0].src.fd));
		state_put_u64(w, E_INO_ERR, fd_ino(e->out[1].src.fd));
		state_put_u64(w, E_INO_IN, fd_ino(e->stdin_fd));
	}
	if (e->timer.fd >= 0 && e->timer_due) /* no timerfd_gettime each: a thousand calls */
		state_put_u64(w, E_DEADLINE, e->timer_due);
	state_close(w, at);
	return 0;
}

static int cell_save(const struct cells *c, const struct cell *cell, struct state_w *w,
                     struct err *err)
{
	if (cell != &c->top) {
		size_t at = state_open(w, T_CELL);
		state_put_str(w, C_PATH, cell->path);
		state_put_nums(w, &cell->limits, limit_nums, ARRAY_SIZE(limit_nums));
		state_put_str(w, C_CPUS, cell->limits.cpuset_cpus);
		state_put_str(w, C_MEMS, cell->limits.cpuset_mems);
		state_put_u64(w, C_OOM, cell->oom_kills);
		if (!w->file) { /* what a re-exec's kin need not ask the cgroup again */
			state_put_i64(w, C_WD_EVENTS, cell->wd_events);
			state_put_i64(w, C_WD_MEMORY, cell->wd_memory);
			state_put_u64(w, C_POPULATED, cell->populated);
			state_put_u64(w, C_FROZEN, cell->frozen);
		}
		state_close(w, at);
	}
	/* Oldest first, so the restore's pushes give the same order. */
	const struct exec *e;
	for (struct list_node *n = cell->execs.prev; n != &cell->execs; n = n->prev) {
		e = list_entry(n, struct exec, node);
		int r = exec_save(e, w, err);
		if (r < 0)
			return r;
	}
	const struct cell *ch;
	list_for_each(ch, &cell->children, sibling) {
		int r = cell_save(c, ch, w, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int cells_save(const struct cells *c, struct state_w *w, uint16_t tag, struct err *err)
{
	size_t at = state_open(w, tag);
	state_put_str(w, T_MOUNT, c->mount);
	state_put_str(w, T_ROOT, c->root);
	state_put_u64(w, T_SEQ, c->exec_seq);
	/* The watches go along: closing an inotify waits for the kernel's
	 * grace period (~15 ms, in the exec), and nothing is missed. */
	state_put_fd(w, T_INOTIFY, c->inotify.fd);
	int r = cell_save(c, &c->top, w, err);
	state_close(w, at);
	return r;
}

/* ---- reading ---- */

static int ring_restore(const struct state_field *f, struct exec_ring *r)
{
	struct state_r rr;
	struct state_field g;
	uint64_t cap = 0, end = 0;
	const uint8_t *data = NULL;
	size_t len = 0;
	int k;
	state_get_record(f, &rr);
	while ((k = state_next(&rr, &g)) > 0) {
		if (g.tag == R_CAP)
			k = state_get_u64(&g, &cap);
		else if (g.tag == R_END)
			k = state_get_u64(&g, &end);
		else if (g.tag == R_DATA)
			data = g.data, len = g.len;
		if (k < 0)
			return k;
	}
	if (k < 0 || cap < EXEC_LOG_MIN || cap > EXEC_LOG_MAX || len > cap || len > end)
		return -EBADMSG;
	exec_ring_free(r);
	k = exec_ring_init(r, (size_t)cap);
	if (k < 0)
		return k;
	r->end = end - len; /* the kept bytes land where they were */
	if (len)
		exec_ring_write(r, data, len);
	return 0;
}

struct exec_in {
	char cell[CELLS_PATH_MAX], name[CELLS_NAME_MAX + 1];
	uint64_t state, pid, running, exited, no_restart, restarts, attempt, ran, deadline;
	uint64_t no_adopt, ino[3], watched;
	int64_t exit_code, signal;
	uint64_t started, exited_ns, seq;
	/* Records and fds, each there when its data is not NULL. */
	struct state_field spec, ring[2], pipe[3], pidfd;
	struct state_field pass[EXEC_PASS_FDS_MAX];
	size_t npass;
};

static const struct state_num exec_nums[] = {
    STATE_NUM(E_STATE, struct exec_in, state),
    STATE_NUM(E_PID, struct exec_in, pid),
    STATE_NUM(E_RUNNING, struct exec_in, running),
    STATE_NUM(E_EXITED, struct exec_in, exited),
    STATE_NUM(E_NO_RESTART, struct exec_in, no_restart),
    STATE_NUM(E_EXIT_CODE, struct exec_in, exit_code),
    STATE_NUM(E_SIGNAL, struct exec_in, signal),
    STATE_NUM(E_RESTARTS, struct exec_in, restarts),
    STATE_NUM(E_ATTEMPT, struct exec_in, attempt),
    STATE_NUM(E_STARTED, struct exec_in, started),
    STATE_NUM(E_EXITED_NS, struct exec_in, exited_ns),
    STATE_NUM(E_SEQ, struct exec_in, seq),
    STATE_NUM(E_RAN, struct exec_in, ran),
    STATE_NUM(E_DEADLINE, struct exec_in, deadline),
    STATE_NUM(E_NO_ADOPT, struct exec_in, no_adopt),
    STATE_NUM(E_INO_OUT, struct exec_in, ino[0]),
    STATE_NUM(E_INO_ERR, struct exec_in, ino[1]),
    STATE_NUM(E_INO_IN, struct exec_in, ino[2]),
    STATE_NUM(E_WATCHED, struct exec_in, watched),
};

static int exec_in_field(struct exec_in *x, const struct state_field *f)
{
	switch (f->tag) {
	case E_CELL:
		return state_get_str(f, x->cell, sizeof(x->cell));
	case E_NAME:
		return state_get_str(f, x->name, sizeof(x->name));
	case E_SPEC:
		x->spec = *f;
		return 0;
	case E_RING_OUT:
	case E_RING_ERR:
		x->ring[f->tag - E_RING_OUT] = *f;
		return 0;
	case E_PIPE_OUT:
	case E_PIPE_ERR:
	case E_STDIN:
		x->pipe[f->tag - E_PIPE_OUT] = *f;
		return 0;
	case E_PIDFD:
		x->pidfd = *f;
		return 0;
	case E_PASS_FD:
		if (x->npass == EXEC_PASS_FDS_MAX)
			return -EBADMSG;
		x->pass[x->npass++] = *f;
		return 0;
	}
	int r = state_get_num(f, x, exec_nums, ARRAY_SIZE(exec_nums));
	return r < 0 ? r : 0;
}

/* Whether pid runs in the cgroup dir (under c's mount) itself, or, with
 * below, in it or any cgroup under it. */
static bool dir_holds(const struct cells *c, const char *dir, pid_t pid, bool below)
{
	char file[64], want[PATH_MAX + 4];
	_cleanup_free_ char *buf = NULL;
	size_t len;
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (file_read_small(file, 4096, &buf, &len) < 0)
		return false;
	const char *rel = dir + strlen(c->mount); /* "/base/cells/a" */
	size_t n = (size_t)snprintf(want, sizeof(want), "0::%s", rel);
	/* The cgroup2 line: "0::/base/cells/a", then its end or "/" and more. */
	for (const char *line = buf; line && *line;
	     line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!strncmp(line, want, n) &&
		    (line[n] == '\n' || line[n] == '\0' || (below && line[n] == '/')))
			return true;
	return false;
}

bool cell_holds(struct cells *c, const char *path, pid_t pid)
{
	char dir[PATH_MAX];
	return cells_cgroup_dir(c, path, dir, sizeof(dir)) == 0 && dir_holds(c, dir, pid, false);
}

bool cell_holds_below(struct cells *c, const char *path, pid_t pid)
{
	char dir[PATH_MAX];
	return cells_cgroup_dir(c, path, dir, sizeof(dir)) == 0 && dir_holds(c, dir, pid, true);
}

/* Whether the process pidfd refers to runs in cell: read from /proc,
 * then the pidfd still open on a live process proves it was this one. */
static bool in_cell(const struct exec *e, pid_t pid, int pidfd)
{
	char dir[PATH_MAX];
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	return cells_cell_dir(e->owner, e->cell, dir, sizeof(dir)) == 0 &&
	       dir_holds(e->owner, dir, pid, false) && poll(&pfd, 1, 0) == 0;
}

/* Tracks a running executable again: kin's child still (a re-exec), or
 * one a killed kin started, found in its cell (its end is seen, its
 * status is not). False when it is gone. */
static bool exec_retrack(struct exec *e, struct state_in *in, const struct exec_in *x,
                         bool *ret_watched)
{
	struct exec_token *token = calloc(1, sizeof(*token));
	if (!token)
		return false;
	token->e = e;
	*ret_watched = false;
	int pidfd = -1, r;
	if (in && x->pidfd.data && state_get_fd(in, &x->pidfd, &pidfd) == 0) {
		r = child_retrack(e->owner->children, e->pid, pidfd, x->watched, exec_on_child_exit,
		                  token, &token->child);
		*ret_watched = r == 0 && x->watched;
	} else
		r = child_adopt(e->owner->children, e->pid, exec_on_child_exit, token,
		                &token->child);
	if (r == -ECHILD) {
		pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
		r = pidfd < 0 ? -errno : in_cell(e, e->pid, pidfd) ? 0 : -ESRCH;
		if (r == 0)
			r = child_watch(e->owner->children, e->pid, pidfd, exec_on_child_exit,
			                token, &token->child);
		else if (pidfd >= 0)
			close(pidfd);
		*ret_watched = r == 0;
	}
	if (r < 0) {
		free(token);
		return false;
	}
	e->token = token;
	return true;
}

static int exec_pipes(struct exec *e, struct state_in *in, const struct exec_in *x)
{
	int fds[3] = {-1, -1, -1};
	for (int i = 0; i < 3; i++)
		if (x->pipe[i].data && state_get_fd(in, &x->pipe[i], &fds[i]) < 0)
			fds[i] = -1;
	e->stdin_fd = fds[2];
	return exec_output_attach(e, fds[0], fds[1], true); /* made so before the re-exec */
}

/* What an adoption works from: the pipe ends a keeper held (fds, with
 * their inodes); NULL for a re-exec's restore. */
struct kept_ino {
	uint64_t ino;
	size_t i; /* in fds */
};
struct adopt {
	int *fds;
	struct kept_ino *by_ino; /* sorted: thousands of pipes, three looked up each */
	size_t n;
};

static int kept_cmp(const void *x, const void *y)
{
	const struct kept_ino *a = x, *b = y;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static int take_kept(struct adopt *a, uint64_t ino)
{
	struct kept_ino key = {.ino = ino};
	const struct kept_ino *k =
	    ino && a->n ? bsearch(&key, a->by_ino, a->n, sizeof(key), kept_cmp) : NULL;
	if (!k || a->fds[k->i] < 0)
		return -1;
	int fd = a->fds[k->i];
	a->fds[k->i] = -1;
	return fd;
}

/* An adopted process's pipes: the ends the keeper held, found by the
 * inodes the file state names. Without them (no keeper) its output is not
 * captured, and its stdin is closed. */
static int exec_pipes_adopted(struct exec *e, const struct exec_in *x, struct adopt *a)
{
	int fds[3];
	for (int i = 0; i < 3; i++)
		fds[i] = take_kept(a, x->ino[i]);
	if (e->spec->terminal && fds[0] >= 0) /* its input is its master too */
		fds[2] = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
	e->stdin_fd = fds[2];
	if (e->stdin_fd >= 0)
		fd_set_nonblock(e->stdin_fd, true);
	if (fds[0] < 0 && fds[1] < 0 && (x->ino[0] || x->ino[1]))
		return -ENOENT;
	return exec_output_attach(e, fds[0], fds[1], false);
}

/* The fds a restarting executable held, its own again in its spec. */
static int exec_fds_back(struct exec *e, struct state_in *in, const struct exec_in *x)
{
	int fds[EXEC_PASS_FDS_MAX];
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; i < x->npass && r == 0; i++)
		if ((r = state_get_fd(in, &x->pass[i], &fds[n])) == 0)
			n++;
	struct exec_spec s = *e->spec, *copy = NULL;
	s.pass_fds = fds;
	s.npass_fds = n;
	if (r == 0)
		r = exec_spec_copy(&s, &copy);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			close(fds[i]);
		return r;
	}
	free(e->spec); /* a restored spec has no release hook to call (cells.h) */
	e->spec = copy;
	e->fds_held = true;
	return 0;
}

static void exec_restore(struct cells *c, struct state_in *in, const struct state_field *f,
                         struct adopt *adopt)
{
	struct exec_in x = {0};
	struct state_r r;
	struct state_field g;
	struct err err = {0};
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0)
		if ((k = exec_in_field(&x, &g)) < 0)
			break;
	struct cell *cell = k == 0 && x.spec.data ? cells_lookup(c, x.cell, NULL) : NULL;
	if (!cell || !cell_name_valid(x.name) || x.state > EXEC_EXITED ||
	    x.state == EXEC_STARTING) {
		log_error("restore: exec \"%s/%s\" left out: its record does not read", x.cell,
		          x.name);
		return;
	}
	struct exec *e = exec_alloc(c, cell, x.name);
	if (!e) {
		log_error("restore: exec \"%s/%s\" left out: out of memory", x.cell, x.name);
		return;
	}
	e->state = (enum exec_state)x.state;
	e->pid = (pid_t)x.pid;
	e->exited = x.exited;
	e->no_restart = x.no_restart;
	e->exit_code = (int)x.exit_code;
	e->signal = (int)x.signal;
	e->restarts = (uint32_t)x.restarts;
	e->attempt = (uint32_t)x.attempt;
	e->started_ns = x.started;
	e->exited_ns = x.exited_ns;
	e->seq = x.seq;
	e->ran = x.ran;
	k = exec_spec_restore(&x.spec, &e->spec, &err);
	/* The size the spec asks for: a kept ring brings its own (the same),
	 * an adopted executable's (not on disk) begins empty at that size. */
	if (k == 0)
		k = exec_output_init(e, e->spec->log_bytes ? e->spec->log_bytes : EXEC_LOG_DEFAULT);
	for (int s = 0; s < 2 && k == 0; s++)
		k = x.ring[s].data ? ring_restore(&x.ring[s], &e->ring[s]) : 0;
	if (k < 0) {
		log_error("restore: exec \"%s\" left out: %s", e->label,
		          err.msg[0] ? err.msg : strerror(-k));
		exec_output_free(e);
		exec_spec_free(e->spec);
		free(e);
		return;
	}
	if (!adopt && x.npass && exec_fds_back(e, in, &x) < 0) {
		log_warn("restore: exec \"%s\": the fds passed to it did not come along; it is "
		         "not restarted",
		         e->label);
		e->no_restart = true;
	}
	list_push(&cell->execs, &e->node);
	c->nexecs++;
	bool watched = false;
	if (x.running && !exec_retrack(e, adopt ? NULL : in, &x, &watched)) {
		/* Gone meanwhile, and not kin's child: its end was not seen. */
		log_warn("%s: exec \"%s\": pid %d has ended meanwhile; its status is unknown",
		         adopt ? "adopt" : "restore", e->label, (int)e->pid);
		e->status_unknown = true;
		e->exit_code = e->signal = 0;
		exec_run_ended(e); /* restarts as its policy says */
	} else if (x.running && x.no_adopt) {
		log_warn("adopt: exec \"%s\" (pid %d) ran with fds it was given or from what "
		         "its starter kept, which a killed kin cannot hand on: it is killed",
		         e->label, (int)e->pid);
		e->no_restart = true;
		exec_kill(e, SIGKILL);
	}
	if (adopt ? e->token && exec_pipes_adopted(e, &x, adopt) < 0 : exec_pipes(e, in, &x) < 0)
		log_warn("%s: exec \"%s\": its output pipes are lost", adopt ? "adopt" : "restore",
		         e->label);
	if (watched)
		log_info("adopt: exec \"%s\": pid %d adopted", e->label, (int)e->pid);
	if (x.deadline && (e->state == EXEC_BACKOFF || (e->state == EXEC_STOPPING && e->token))) {
		uint64_t now = now_monotonic_ns();
		if (exec_timer_arm(e, x.deadline > now ? (x.deadline - now) / 1000000 : 0) < 0)
			log_warn("restore: exec \"%s\": cannot arm its timer", e->label);
	}
}

/* watched: the inotify went along (a re-exec), so a record with its
 * watches and states is taken as is — what changed meanwhile waits in the
 * inotify as an event — instead of asking the cgroup again. */
static int cell_restore(struct cells *c, const struct state_field *f, bool watched)
{
	struct state_r r;
	struct state_field g;
	char path[CELLS_PATH_MAX] = "";
	struct cell_limits limits = {0};
	int64_t wd_events = -2, wd_memory = -2;
	uint64_t oom = 0, populated = 0, frozen = 0;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if (g.tag == C_PATH)
			k = state_get_str(&g, path, sizeof(path));
		else if (g.tag == C_OOM)
			k = state_get_u64(&g, &oom);
		else if (g.tag == C_WD_EVENTS)
			k = state_get_i64(&g, &wd_events);
		else if (g.tag == C_WD_MEMORY)
			k = state_get_i64(&g, &wd_memory);
		else if (g.tag == C_POPULATED)
			k = state_get_u64(&g, &populated);
		else if (g.tag == C_FROZEN)
			k = state_get_u64(&g, &frozen);
		else if (g.tag == C_CPUS)
			k = state_get_str(&g, limits.cpuset_cpus, sizeof(limits.cpuset_cpus));
		else if (g.tag == C_MEMS)
			k = state_get_str(&g, limits.cpuset_mems, sizeof(limits.cpuset_mems));
		else
			k = state_get_num(&g, &limits, limit_nums, ARRAY_SIZE(limit_nums));
		if (k < 0)
			break;
	}
	if (k < 0 || cell_path_check(path, NULL) < 0) {
		log_error("restore: a cell's record does not read; left out");
		return 0;
	}
	const char *slash = strrchr(path, '/');
	struct cell *parent = &c->top;
	if (slash) {
		char pp[CELLS_PATH_MAX];
		snprintf(pp, sizeof(pp), "%.*s", (int)(slash - path), path);
		parent = cells_lookup(c, pp, NULL);
	}
	struct cell *cell =
	    parent ? cells_cell_alloc(c, parent, slash ? slash + 1 : path, path) : NULL;
	char dir[PATH_MAX];
	struct stat st;
	if (!cell) {
		log_error("restore: cell \"%s\" left out: %s", path,
		          parent ? "out of memory" : "its parent was left out");
		return 0;
	}
	cell->limits = limits;
	watched = watched && wd_events >= -1 && wd_events <= INT_MAX && wd_memory >= -1 &&
	          wd_memory <= INT_MAX;
	if (!watched && (cells_cell_dir(c, cell, dir, sizeof(dir)) < 0 || stat(dir, &st) < 0)) {
		log_warn("restore: cell \"%s\" is gone (its cgroup was removed meanwhile)", path);
		free(cell);
		return 0;
	}
	list_append(&parent->children, &cell->sibling);
	c->ncells++;
	if (!watched) {
		cells_watch_add(c, cell);
		return 0;
	}
	cell->wd_events = (int)wd_events;
	cell->wd_memory = (int)wd_memory;
	cell->populated = populated != 0;
	cell->frozen = frozen != 0;
	cell->oom_kills = oom;
	return 0;
}

/* The record's mount, root and sequence: 0, or -EBADMSG. */
/* in and ret_inotify NULL: a file's, which carries no fds. */
static int record_paths(struct state_in *in, const struct state_field *f, char *mount, char *root,
                        uint64_t *seq, int *ret_inotify)
{
	struct state_r r;
	struct state_field g;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if (g.tag == T_MOUNT)
			k = state_get_str(&g, mount, PATH_MAX);
		else if (g.tag == T_ROOT)
			k = state_get_str(&g, root, PATH_MAX);
		else if (g.tag == T_SEQ)
			k = state_get_u64(&g, seq);
		else if (g.tag == T_INOTIFY && in && state_get_fd(in, &g, ret_inotify) < 0)
			*ret_inotify = -1;
		if (k < 0)
			return k;
	}
	return k < 0 || !mount[0] || !root[0] ? -EBADMSG : 0;
}

/* Cells are written parents first, so each one's parent is there. */
static void restore_records(struct cells *c, struct state_in *in, const struct state_field *f,
                            struct adopt *adopt, bool watched)
{
	struct state_r r;
	struct state_field g;
	state_get_record(f, &r);
	while (state_next(&r, &g) > 0) {
		if (g.tag == T_CELL)
			cell_restore(c, &g, watched);
		else if (g.tag == T_EXEC)
			exec_restore(c, in, &g, adopt);
	}
	exec_spec_restore_end();
}

int cells_restore(struct ev_loop *loop, struct child_table *children, struct state_in *in,
                  const struct state_field *f, struct cells **ret, struct err *err)
{
	_cleanup_free_ struct cells *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "cells: out of memory");
	c->inotify.fd = -1;
	int inotify = -1;
	int k = record_paths(in, f, c->mount, c->root, &c->exec_seq, &inotify);
	if (k < 0) {
		if (inotify >= 0)
			close(inotify);
		return err_set(err, -EBADMSG, ERR_INTERNAL,
		               "cells: the handed-over record does "
		               "not read");
	}
	if ((k = cells_init_loop(c, loop, children, inotify, err)) < 0)
		return k;
	restore_records(c, in, f, NULL, inotify >= 0 && c->inotify.fd == inotify);
	log_info("cells: %zu cells and %zu executables taken over", c->ncells, c->nexecs);
	*ret = TAKE_PTR(c);
	return 0;
}

int cells_adopt(struct ev_loop *loop, struct child_table *children, const struct cells_config *cfg,
                struct state_in *in, const struct state_field *f,
                const char *const *not_adopted_kinds, const char *const *delegated_kinds, int *kept,
                size_t nkept, struct cells **ret, struct err *err)
{
	struct cells *c;
	int k = cells_open(loop, children, cfg, &c, err);
	if (k < 0)
		return k;
	_cleanup_free_ char *mount = calloc(2, PATH_MAX);
	char *root = mount ? mount + PATH_MAX : NULL;
	uint64_t seq = 0;
	if (!mount)
		k = -ENOMEM;
	else if (f && (k = record_paths(NULL, f, mount, root, &seq, NULL)) < 0)
		log_error("adopt: the state's cells record does not read; nothing adopted");
	else if (f && strcmp(root, c->root))
		log_warn("adopt: the state is of cells in %s, these are in %s; nothing adopted",
		         root, c->root);
	else if (f) {
		_cleanup_free_ struct kept_ino *by_ino = calloc(nkept ? nkept : 1, sizeof(*by_ino));
		struct adopt a = {.fds = kept, .by_ino = by_ino, .n = by_ino ? nkept : 0};
		for (size_t i = 0; i < a.n; i++)
			by_ino[i] = (struct kept_ino){.ino = fd_ino(kept[i]), .i = i};
		qsort(by_ino, a.n, sizeof(*by_ino), kept_cmp); /* the keeper holds each once */
		c->exec_seq = seq;
		restore_records(c, in, f, &a, false);
		log_info("cells: %zu cells and %zu executables adopted", c->ncells, c->nexecs);
	}
	cells_sweep(c, not_adopted_kinds, delegated_kinds);
	*ret = c;
	return 0;
}
