/* start: one run of an executable, from preparing what its child needs to
 * the child's report that its setup reached execve (or which step failed),
 * without ever waiting in the loop: the report pipe and a deadline
 * (e->timer) are loop sources, and the child is tracked by its pidfd from
 * clone on. A start is settled by exactly one of: the report (EOF: exec'd),
 * the deadline, a stop, or the child's reap. A failure kills the child and
 * is answered only once it is reaped, so it leaves no process behind; the
 * record of a first start that failed goes too (the name's previous ended
 * run, unlinked meanwhile, comes back). A failed restart counts as a run
 * that exited 127, and the restart policy goes on. */
#include "cells/cells-int.h"

#include <sys/ioctl.h>

#include <sched.h>

#include <linux/nsfs.h>

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static void exec_unlink(struct exec *e)
{
	list_remove(&e->node);
}

/* A first start failed: the ended run it would have replaced is back. */
static void exec_restore_replaced(struct exec *e)
{
	struct exec *old = e->replaces;
	if (!old)
		return;
	e->replaces = NULL;
	list_push(&old->cell->execs, &old->node);
}

static void status_close(struct exec *e)
{
	if (e->status.fd < 0)
		return;
	ev_del(e->owner->loop, &e->status);
	close(e->status.fd);
	e->status.fd = -1;
}

/* The start failed: kill the child (the pid is ours until reaped); the
 * answer waits for the reap. The first verdict stands. */
static void verdict_err(struct exec *e, const struct err *err)
{
	if (e->start_failed)
		return;
	e->start_failed = true;
	e->start_err = *err;
	status_close(e);
	exec_timer_disarm(e);
	if (e->token)
		kill(e->pid, SIGKILL); /* not reaped yet: the pid is still ours */
}

static void verdict(struct exec *e, int err_no, int code, const char *fmt, ...) _printf_(4, 5);
static void verdict(struct exec *e, int err_no, int code, const char *fmt, ...)
{
	struct err err;
	char what[sizeof(err.msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	err_set(&err, -err_no, code, "exec \"%s\": %s", e->label, what);
	verdict_err(e, &err);
}

static void start_answer(struct exec *e, int result, const struct err *err)
{
	exec_start_fn done = e->start_done;
	e->start_done = NULL;
	if (done)
		done(result, err, e->start_data);
}

/* The child reached execve: the run is on. */
static void start_succeeded(struct exec *e)
{
	status_close(e);
	exec_timer_disarm(e);
	e->state = EXEC_RUNNING;
	e->ran = true;
	e->started_ns = now_monotonic_ns();
	if (e->replaces) {
		struct exec *old = e->replaces;
		e->replaces = NULL;
		exec_free(old);
	}
	cells_emit(e->owner, &(struct cells_event){.type = CELLS_EV_EXEC_START,
	                                           .cell = e->cell->path,
	                                           .exec = e->name,
	                                           .pid = e->pid,
	                                           .count = e->restarts});
	start_answer(e, 0, NULL);
}

/* Reads whatever the child reported; false when nothing yet. */
static bool status_check(struct exec *e)
{
	struct err err = {0};
	if (e->start_failed || e->status.fd < 0)
		return false;
	int r = exec_spawn_result(e->status.fd, e->label, &err);
	if (r == -EAGAIN)
		return false;
	if (r == 0)
		start_succeeded(e);
	else
		verdict_err(e, &err);
	return true;
}

static void on_status(struct ev_source *src, uint32_t events)
{
	(void)events;
	status_check(src->data);
}

void exec_start_timeout(struct exec *e)
{
	if (e->state != EXEC_STARTING || status_check(e))
		return; /* its report came in the same turn: it stands */
	verdict(e, ETIMEDOUT, ERR_DEADLINE_EXCEEDED, "setup did not reach execve within %d ms",
	        EXEC_START_TIMEOUT_MS);
}

void exec_start_cancel(struct exec *e)
{
	if (e->state != EXEC_STARTING || status_check(e))
		return;
	verdict(e, ECANCELED, ERR_CANCELLED, "stopped before its setup reached execve");
}

bool exec_start_reaped(struct exec *e, const siginfo_t *si)
{
	/* Killed by someone else (a cell kill, a signal) with no report: the
	 * same as before it was asynchronous, a run that began and ended. */
	if (!e->start_failed && !status_check(e))
		start_succeeded(e);
	if (!e->start_failed)
		return true;
	struct err err = e->start_err;
	status_close(e);
	exec_timer_disarm(e);
	if (e->ran) { /* a restart: a run that could not start, as exit 127 */
		log_warn("%s", err.msg);
		e->exit_code = 127;
		e->signal = 0;
		return true;
	}
	/* A first start: waits and stops learn the run's end, then the
	 * record goes. */
	e->state = EXEC_EXITED;
	e->exited = true;
	e->exit_code = si->si_code == CLD_EXITED ? si->si_status : 0;
	e->signal = si->si_code == CLD_EXITED ? 0 : si->si_status;
	e->exited_ns = now_monotonic_ns();
	exec_waiters_finish(e, 0);
	start_answer(e, err.errnum, &err);
	exec_restore_replaced(e);
	exec_free(e);
	return false;
}

void exec_start_forget(struct exec *e)
{
	struct err err;
	if (e->state == EXEC_STARTING && e->token)
		kill(e->pid, SIGKILL); /* nobody will see it run: its reap is silent */
	status_close(e);
	if (e->start_done) {
		err_set(&err, -ECANCELED, ERR_CANCELLED, "exec \"%s\": start cancelled", e->label);
		start_answer(e, -ECANCELED, &err);
	}
	if (e->replaces) {
		struct exec *old = e->replaces;
		e->replaces = NULL;
		exec_free(old);
	}
}

/* ---- preparing the child ---------------------------------------------------- */

/* One set of caps from a mask. */
static int caps_flag(cap_t caps, cap_flag_t flag, uint64_t mask)
{
	cap_value_t list[64];
	int n = 0;
	for (int cap = 0; cap < 64 && cap <= CAP_LAST_CAP; cap++)
		if ((mask >> cap) & 1)
			list[n++] = cap;
	return n && cap_set_flag(caps, flag, n, list, CAP_SET) < 0 ? -EINVAL : 0;
}

/* Permitted, effective and inheritable: caps for all three, or each its
 * own (caps_split; caps is then the bounding set alone). */
static int build_caps(const struct exec_spec *s, cap_t *ret)
{
	_cleanup_cap_ cap_t caps = cap_init();
	if (!caps)
		return -ENOMEM;
	bool split = s->caps_split;
	if (caps_flag(caps, CAP_PERMITTED, split ? s->caps_permitted : s->caps) < 0 ||
	    caps_flag(caps, CAP_EFFECTIVE, split ? s->caps_effective : s->caps) < 0 ||
	    caps_flag(caps, CAP_INHERITABLE, split ? s->caps_inheritable : s->caps) < 0)
		return -EINVAL;
	*ret = TAKE_PTR(caps);
	return 0;
}

/* The namespaces to join, opened and checked to be of their kind. */
static int open_joins(struct exec *e, struct spawn_req *req, struct err *err)
{
	const struct exec_spec *s = req->spec;
	req->join_pid_fd = -1;
	for (size_t i = 0; i < s->njoins; i++) {
		uint32_t t = s->joins[i].ns;
		int want = t == EXEC_NS_NET   ? CLONE_NEWNET
		           : t == EXEC_NS_IPC ? CLONE_NEWIPC
		           : t == EXEC_NS_UTS ? CLONE_NEWUTS
		           : t == EXEC_NS_PID ? CLONE_NEWPID
		           : t == EXEC_NS_MNT ? CLONE_NEWNS
		                              : CLONE_NEWCGROUP;
		int fd = open(s->joins[i].path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return err_set_errno(err, -errno, "exec \"%s\": namespace %s: %m", e->label,
			                     s->joins[i].path);
		if (t == EXEC_NS_PID)
			req->join_pid_fd = fd;
		else
			req->join_fds[req->njoins++] = fd;
		if (ioctl(fd, NS_GET_NSTYPE) != want)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "exec \"%s\": %s is not a namespace of the kind to join",
			               e->label, s->joins[i].path);
	}
	return 0;
}

static void close_joins(struct spawn_req *req)
{
	for (size_t i = 0; i < req->njoins; i++)
		close(req->join_fds[i]);
	req->njoins = 0;
	if (req->join_pid_fd >= 0)
		close(req->join_pid_fd);
	req->join_pid_fd = -1;
}

static int build_seccomp(struct exec *e, struct sock_fprog *prog, struct err *err)
{
	const struct exec_spec *s = e->spec;
	if (s->seccomp == EXEC_SECCOMP_NONE)
		return 0;
	if (s->seccomp == EXEC_SECCOMP_DEFAULT)
		return exec_sc_build(NULL, s->caps, prog, err);
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct exec_sc_profile *p = malloc(sizeof(*p));
	if (!p)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	int r = s->seccomp == EXEC_SECCOMP_TEXT
	            ? 0
	            : file_read_regular(s->seccomp_file, EXEC_SC_FILE_MAX, &text, NULL);
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "seccomp profile %s: %s",
		               s->seccomp_file, r == -EINVAL ? "not a regular file" : strerror(-r));
	r = exec_sc_parse(text ? text : s->seccomp_file, p, err);
	if (r < 0)
		return r;
	return exec_sc_build(p, s->caps, prog, err);
}

/* Prefixes err's message with the executable's name. */
static int exec_fail_prefix(struct exec *e, int r, struct err *err)
{
	cells_err_prefix(err, "exec", e->label);
	return r;
}

/* Begins one run of e: everything that can fail before the child exists
 * is prepared first; whatever failed is undone by the cleanups. The child
 * is tracked from the start, so its exit is never lost to the orphan sweep
 * while its setup runs. */
/* A stdio path of the spec, opened without ever waiting: O_NONBLOCK for
 * the open (a FIFO's writer end fails ENXIO with no reader rather than
 * block), cleared after, since the child expects ordinary blocking I/O. */
static int stdio_path_open(struct exec *e, int which, struct err *err)
{
	static const char *const names[] = {"stdin", "stdout", "stderr"};
	const char *path = e->spec->stdio_paths[which];
	int flags = (which == 0 ? O_RDONLY : O_WRONLY | O_APPEND | O_CREAT) | O_NONBLOCK |
	            O_NOCTTY | O_CLOEXEC;
	_cleanup_close_ int fd = open(path, flags, 0640);
	if (fd < 0 && errno == ENXIO)
		return err_set(err, -ENXIO, ERR_FAILED_PRECONDITION,
		               "exec \"%s\": %s %s: a FIFO nobody reads", e->label, names[which],
		               path);
	if (fd < 0)
		return err_set_errno(err, -errno, "exec \"%s\": %s %s: %m", e->label, names[which],
		                     path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_set_errno(err, -errno, "exec \"%s\": %s %s: %m", e->label, names[which],
		                     path);
	if (!S_ISFIFO(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s\": %s %s: not a FIFO, regular file or character device",
		               e->label, names[which], path);
	/* procfs and sysfs files look regular, but kin opened them: its own
	 * /proc/self/mem must not become a child's stdin. */
	struct statfs sf;
	if (fstatfs(fd, &sf) == 0 && (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s\": %s %s: a /proc or /sys file is not stdio", e->label,
		               names[which], path);
	int r = fd_set_nonblock(fd, false);
	if (r < 0)
		return err_set_errno(err, r, "exec \"%s\": %s %s: %s", e->label, names[which], path,
		                     strerror(-r));
	return TAKE_FD(fd);
}

/* The child's stdio: stdin from /dev/null, a pipe kin writes or a path;
 * stdout and stderr into pipes kin reads, or paths. fds[0..5]: in_r, in_w
 * (-1 without a stdin pipe), out_r, out_w, err_r, err_w (out_r, err_r -1
 * for a path); closed by the caller. */
static int exec_stdio_open(struct exec *e, int fds[6], struct err *err)
{
	const struct exec_spec *s = e->spec;
	int p[2];
	if (s->terminal) { /* the slave for 0, 1, 2; the master read and written */
		int r = exec_tty_open(e, &fds[2], &fds[0], err);
		if (r < 0)
			return r;
		fds[1] = fcntl(fds[2], F_DUPFD_CLOEXEC, 3);
		fds[3] = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
		fds[5] = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
		if (fds[1] < 0 || fds[3] < 0 || fds[5] < 0)
			return err_set_errno(err, -errno, "exec \"%s\": terminal: %m", e->label);
		return 0;
	}
	if (s->stdio_paths[0]) {
		if ((fds[0] = stdio_path_open(e, 0, err)) < 0)
			return fds[0];
	} else if (s->stdin_pipe ? pipe2(p, O_CLOEXEC)
	                         : (p[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		return err_set_errno(err, -errno, "exec \"%s\": stdin: %m", e->label);
	} else {
		fds[0] = p[0], fds[1] = s->stdin_pipe ? p[1] : -1;
	}
	for (int i = 1; i <= 2; i++) {
		if (s->stdio_paths[i]) {
			if ((fds[2 * i + 1] = stdio_path_open(e, i, err)) < 0)
				return fds[2 * i + 1];
		} else if (pipe2(p, O_CLOEXEC) < 0) {
			return err_set_errno(err, -errno, "exec \"%s\": output pipes: %m",
			                     e->label);
		} else {
			fds[2 * i] = p[0], fds[2 * i + 1] = p[1];
		}
	}
	return 0;
}

/* The child runs and is tracked: the run's state, its stdin and output,
 * and its setup watched from the loop (report pipe and deadline). */
static void exec_started(struct exec *e, struct exec_token *token, pid_t pid, int fds[6],
                         int status_fd)
{
	e->token = token;
	e->pid = pid;
	e->state = EXEC_STARTING;
	e->start_failed = false;
	e->exited = false;
	e->exit_code = e->signal = 0;
	e->status_unknown = false;
	e->started_ns = now_monotonic_ns();
	if (e->stdin_fd >= 0)
		close(e->stdin_fd);
	e->stdin_fd = TAKE_FD(fds[1]);
	if (e->stdin_fd >= 0)
		fd_set_nonblock(e->stdin_fd, true);
	int r = exec_output_attach(e, TAKE_FD(fds[2]), TAKE_FD(fds[4]), e->spec->terminal);
	if (r < 0)
		log_warn("exec \"%s\": output not captured: %s", e->label, strerror(-r));
	exec_keep_pipes(e);
	/* Without its report in the loop, or without a deadline, the start
	 * could never settle: kill the child, the reap settles it. */
	e->status = (struct ev_source){.fd = status_fd, .fn = on_status, .data = e};
	r = ev_add(e->owner->loop, &e->status, EPOLLIN);
	if (r < 0) {
		close(e->status.fd);
		e->status.fd = -1;
	}
	if (r == 0)
		r = exec_timer_arm(e, EXEC_START_TIMEOUT_MS);
	if (r < 0)
		verdict(e, -r, ERR_INTERNAL, "cannot watch its setup: %s", strerror(-r));
}

static void close_fds6(int (*fds)[6])
{
	for (int i = 0; i < 6; i++)
		if ((*fds)[i] >= 0)
			close((*fds)[i]);
}

int exec_run(struct exec *e, struct err *err)
{
	const struct exec_spec *s = e->spec;
	struct spawn_req req = {.spec = s, .label = e->label, .join_pid_fd = -1};
	_cleanup_close_ int cg = -1, status_fd = -1;
	_cleanup_(close_fds6) int fds[6] = {-1, -1, -1, -1, -1, -1};
	_cleanup_free_ struct sock_filter *filter = NULL;
	_cleanup_cap_ cap_t caps = NULL;
	char dir[PATH_MAX];
	int r;

	r = build_seccomp(e, &req.seccomp, err);
	if (r < 0)
		return exec_fail_prefix(e, r, err);
	filter = req.seccomp.filter;
	if ((r = build_caps(s, &caps)) < 0)
		return err_set_errno(err, r, "exec \"%s\": capabilities: %s", e->label,
		                     strerror(-r));
	req.caps = caps;
	if ((r = open_joins(e, &req, err)) < 0) {
		close_joins(&req);
		return r;
	}
	cells_cell_dir(e->owner, e->cell, dir, sizeof(dir));
	if ((cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		close_joins(&req);
		return err_set_errno(err, -errno, "exec \"%s\": %s: %m", e->label, dir);
	}
	if ((r = exec_stdio_open(e, fds, err)) < 0) {
		close_joins(&req);
		return r;
	}
	if ((r = exec_devices_attach(s, cg, e->label, err)) < 0) {
		close_joins(&req);
		return r;
	}
	req.cgroup_fd = cg;
	req.stdio[0] = fds[0], req.stdio[1] = fds[3], req.stdio[2] = fds[5];
	const char *path = exec_env_get(s->env, "PATH");
	size_t n = 0;
	if (!path)
		req.envp[n++] = (char *)"PATH=" DEFAULT_PATH;
	for (size_t i = 0; s->env && s->env[i]; i++)
		req.envp[n++] = s->env[i];
	if (s->listen_env && s->npass_fds) {
		snprintf(req.listen_fds, sizeof(req.listen_fds), "LISTEN_FDS=%zu", s->npass_fds);
		snprintf(req.listen_pid, sizeof(req.listen_pid), "LISTEN_PID=0");
		req.envp[n++] = req.listen_fds;
		req.envp[n++] = req.listen_pid;
	}
	req.envp[n] = NULL;
	req.path = path ? path : DEFAULT_PATH;

	struct exec_token *token = calloc(1, sizeof(*token));
	if (!token) {
		close_joins(&req);
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	}
	pid_t pid;
	int pidfd;
	r = exec_spawn(&req, &pid, &pidfd, &status_fd, err);
	close_joins(&req);
	if (r < 0) {
		free(token);
		return r;
	}
	token->e = e;
	r = child_track(e->owner->children, pid, pidfd, exec_on_child_exit, token, &token->child);
	if (r < 0) {
		/* Untracked, it would never be reaped: kill it now, reap it later
		 * through the owner's orphan sweep. */
		kill(pid, SIGKILL);
		free(token);
		return err_set_errno(err, r, "exec \"%s\": cannot track pid %d: %s", e->label,
		                     (int)pid, strerror(-r));
	}
	exec_started(e, token, pid, fds, TAKE_FD(status_fd));
	return 0;
}

/* ---- exec_start ------------------------------------------------------------ */

static struct exec *oldest_ended(struct cell *cell, struct exec *best)
{
	struct exec *e;
	list_for_each(e, &cell->execs, node)
		if (e->state == EXEC_EXITED && !e->token && (!best || e->seq < best->seq))
			best = e;
	struct cell *ch;
	list_for_each(ch, &cell->children, sibling)
		best = oldest_ended(ch, best);
	return best;
}

/* exec_start's work; *handed once the record owns a copy of spec (and so
 * its release hook). */
static int start_record(struct cells *c, const char *cell, const char *name,
                        const struct exec_spec *spec, exec_start_fn done, void *data, bool *handed,
                        struct err *err)
{
	struct cell *ce;
	struct exec *old = NULL;
	int r = cells_get(c, cell, &ce, err);
	if (r < 0)
		return r;
	if (!cell_name_valid(name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s/%s\": names are 1-%d of [A-Za-z0-9_.-], not . or ..",
		               cell, name ? name : "", CELLS_NAME_MAX);
	if (!spec)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "exec \"%s/%s\": no spec", cell,
		               name);
	if ((r = exec_spec_validate(spec, err)) < 0) {
		char label[CELLS_PATH_MAX + CELLS_NAME_MAX + 2];
		snprintf(label, sizeof(label), "%s/%s", cell, name);
		cells_err_prefix(err, "exec", label);
		return r;
	}
	struct exec *it;
	list_for_each(it, &ce->execs, node)
		if (strcmp(it->name, name) == 0)
			old = it;
	if (!done)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s/%s\": start without a callback", cell, name);
	if (old && old->state != EXEC_EXITED)
		return err_set(err, -EEXIST, ERR_ALREADY_EXISTS, "exec \"%s/%s\" is already %s",
		               cell, name, exec_state_name(old->state));
	if (ce->delete_op.active)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
		               "exec \"%s/%s\": the cell is being deleted", cell, name);
	bool populated, frozen = ce->frozen;
	cells_read_events(c, ce, &populated, &frozen);
	if (frozen)
		return err_set(err, -EBUSY, ERR_FAILED_PRECONDITION,
		               "exec \"%s/%s\": the cell is frozen (thaw it first)", cell, name);
	if (!old && c->nexecs >= CELLS_EXEC_MAX) {
		struct exec *victim = oldest_ended(&c->top, NULL);
		if (!victim)
			return err_set(err, -ENOSPC, ERR_RESOURCE_EXHAUSTED,
			               "exec \"%s/%s\": %d executables are running", cell, name,
			               CELLS_EXEC_MAX);
		exec_free(victim);
	}

	struct exec *e = exec_alloc(c, ce, name);
	if (!e)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	r = exec_spec_copy(spec, &e->spec);
	*handed = r == 0;
	if (r == 0)
		r = exec_output_init(e, spec->log_bytes ? spec->log_bytes : EXEC_LOG_DEFAULT);
	if (r < 0)
		err_set(err, r, ERR_RESOURCE_EXHAUSTED, "exec \"%s/%s\": %s", cell, name,
		        strerror(-r));
	else
		r = exec_fds_hold(e, err);
	if (r < 0) {
		exec_output_free(e);
		exec_spec_free(e->spec);
		free(e);
		return r;
	}
	/* Linked before the run so a second start of the name finds it; the
	 * ended run it replaces is unlinked until the start is over (put back
	 * if it fails, freed once the new run reached execve). */
	if (old)
		exec_unlink(old);
	e->replaces = old;
	e->seq = ++c->exec_seq;
	list_push(&ce->execs, &e->node);
	c->nexecs++;
	r = exec_run(e, err);
	if (r < 0) {
		exec_restore_replaced(e);
		exec_free(e);
		return r;
	}
	e->start_done = done;
	e->start_data = data;
	return 1;
}

int exec_start(struct cells *c, const char *cell, const char *name, const struct exec_spec *spec,
               exec_start_fn done, void *data, struct err *err)
{
	bool handed = false;
	int r = start_record(c, cell, name, spec, done, data, &handed, err);
	if (r < 0 && !handed && spec && spec->release)
		spec->release(spec->release_data);
	return r;
}
