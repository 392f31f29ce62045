/* reexec: kin re-executes itself in place (System/Reexec, docs/reexec.md).
 * The new binary is probed first (`BINARY version --state-format`, a
 * child with a deadline: it must be a kin that reads this state format);
 * then kin waits, each loop turn and at most SETTLE_TIMEOUT_MS, for every
 * participant to settle (nothing half-done: a start, a freeze, a forced
 * delete) and for every child to be one a participant hands over; then
 * every participant writes its record into a sealed memfd (lib/state.h),
 * the caller is answered, the wire's participants write theirs (the
 * connections end UNAVAILABLE "kin is re-executing; retry": a client
 * cannot tell which frames of a stream it has seen, so streams end
 * rather than carry on), and kin executes the binary with its own
 * command line. The workloads stay kin's children throughout: nobody
 * reaps between the exec and the restore, so no exit status is lost.
 *
 * The previous binary goes along as a sealed memfd: a new kin that cannot
 * read the state execs it again with the same state and says why
 * (Health's reexec_error), so a failed upgrade loses nothing. */
#include "keep/keep-int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>

#define PROBE_TIMEOUT_MS  5000
#define SETTLE_TIMEOUT_MS 5000
#define PROBE_OUT_MAX     4096
#define SETTLE_POLL_MS    2
#define ENV_STATE         "KIN_STATE_FD"
#define ENV_FALLBACK      "KIN_STATE_FALLBACK_FD"
#define ENV_FAILED        "KIN_STATE_FAILED"

/* The handover's own record (the participants' tags are below 32). */
enum { S_KEEP = 32, S_SILENT_SINCE, S_OLD_LOOP };
enum {
	R_KIND = 1, /* the owner's kind of kin (its role): another's state is refused */
	R_REEXECS,
	R_EXE_DEV, /* what the fallback is a copy of (struct file_id) */
	R_EXE_INO,
	R_EXE_SIZE,
	R_EXE_MTIME,
	R_EXE_CTIME,
};

enum reexec_phase { RX_IDLE, RX_PROBING, RX_SETTLING };

struct keep_reexec {
	struct keep *k;
	struct ev_loop *loop;
	struct child_table *children;
	struct keep_reexec_ops ops;
	char kind[32];
	char **argv;
	uint64_t count;
	char error[ERR_MSG_MAX]; /* why the last re-exec fell back */
	enum reexec_phase phase;
	char binary[PATH_MAX];
	keep_reexec_done_fn done;
	void *call_data;
	struct child *probe;
	pid_t probe_pid;
	int probe_out; /* read end of the probe's stdout */
	int probe_report;
	int fallback;               /* a sealed copy of the running binary (self_copy's, dup'd) */
	struct file_id fallback_id; /* what it is a copy of */
	struct self_copy_job copy;  /* that copy, made by the probe's child */
	struct ev_source timer;
	uint64_t deadline_ns;
	/* The next kin's: the state, open from keep_reexec_restore to
	 * keep_reexec_restored. */
	struct state_in in;
	bool in_open;
	uint64_t restore_ns;
	uint64_t silent_since; /* when the previous kin stopped answering */
	int old_loop;          /* the previous kin's epoll set */
};

int keep_reexec_init(struct keep *k, struct ev_loop *loop, struct child_table *children,
                     const char *kind, char **argv, const struct keep_reexec_ops *ops)
{
	/* Static: a probe killed at the end is reaped later, and its exit
	 * callback must still find this (and its pid, to know it is old).
	 * Zero already (bss): only what is not is written, so an idle kin
	 * never touches the pages of its paths and messages. */
	static struct keep_reexec storage;
	struct keep_reexec *rx = &storage;
	rx->k = k;
	rx->loop = loop;
	rx->children = children;
	rx->ops = *ops;
	rx->argv = argv;
	rx->probe_out = rx->probe_report = rx->fallback = rx->old_loop = -1;
	rx->timer.fd = -1;
	rx->copy.src = rx->copy.memfd = -1;
	str_copy(rx->kind, sizeof(rx->kind), kind);
	k->rx = rx;
	return 0;
}

static void timer_stop(struct keep_reexec *rx)
{
	ev_close(rx->loop, &rx->timer);
}

/* rx->timer: once after ms, then every interval_ms (0: once). */
static int timer_start(struct keep_reexec *rx, ev_handler_fn fn, unsigned interval_ms)
{
	unsigned ms = interval_ms ? interval_ms : PROBE_TIMEOUT_MS;
	struct itimerspec its = {
	    .it_value = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000},
	    .it_interval = {.tv_nsec = (long)interval_ms * 1000000}};
	rx->timer =
	    (struct ev_source){.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
	                       .fn = fn,
	                       .data = rx};
	if (rx->timer.fd < 0)
		return -errno;
	if (timerfd_settime(rx->timer.fd, 0, &its, NULL) < 0 ||
	    ev_add(rx->loop, &rx->timer, EPOLLIN) < 0) {
		int r = -errno;
		close(rx->timer.fd);
		rx->timer.fd = -1;
		return r;
	}
	return 0;
}

/* A restored kin's leftover, the previous binary's copy: let go (a
 * while after the restore, or when the next re-exec begins). */
static void fallback_drop(struct keep_reexec *rx)
{
	timer_stop(rx);
	closep(&rx->fallback);
	rx->fallback = -1;
}

/* The probe's child killed if it still runs (reaped as ever: its exit
 * callback then finds it is not the current one), its pipes and timer gone. */
static void probe_end(struct keep_reexec *rx)
{
	if (rx->probe)
		child_signal(rx->probe, SIGKILL);
	rx->probe = NULL;
	closep(&rx->probe_out);
	closep(&rx->probe_report);
	rx->probe_out = rx->probe_report = -1;
	timer_stop(rx);
	/* The copy is kept if the child made it whole (else made when
	 * needed, in the loop). */
	self_copy_end(&rx->copy);
}

/* The re-exec is over without an exec: the caller hears why. */
static void finish(struct keep_reexec *rx, int result, const struct err *err)
{
	keep_reexec_done_fn done = rx->done;
	void *call_data = rx->call_data;
	probe_end(rx);
	closep(&rx->fallback);
	rx->fallback = -1;
	rx->phase = RX_IDLE;
	rx->done = NULL;
	if (result < 0)
		log_warn("%s", err->msg);
	if (done)
		done(result, err, rx->binary, rx->count, call_data);
}

void keep_reexec_stop(struct keep *k)
{
	struct keep_reexec *rx = k ? k->rx : NULL;
	struct err err;
	if (!rx || rx->phase == RX_IDLE)
		return;
	err_set(&err, -ECANCELED, ERR_UNAVAILABLE, "kin is stopping");
	finish(rx, -ECANCELED, &err);
}

void keep_reexec_count(const struct keep *k, uint64_t *ret_count, const char **ret_error)
{
	*ret_count = k && k->rx ? k->rx->count : 0;
	*ret_error = k && k->rx ? k->rx->error : "";
}

void keep_reexec_cancel(struct keep *k, void *call_data)
{
	if (k && k->rx && k->rx->call_data == call_data)
		k->rx->done = NULL; /* it goes on: the caller just left */
}

/* ---- what cannot be handed over yet ---- */

static int check_carry(struct keep_reexec *rx, struct err *err)
{
	const char *what = keep_uncarried(rx->k);
	if (what)
		return err_set(err, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		               "re-exec: not possible now: %s cannot be handed over yet", what);
	return rx->ops.check ? rx->ops.check(rx->ops.data, err) : 0;
}

static void settle_check(struct keep_reexec *rx);

/* ---- the probe: is the binary a kin that reads this state? ---- */

/* What the probe said, as a verdict: 0, or -ENOEXEC with err. */
static int probe_verdict(struct keep_reexec *rx, const siginfo_t *si, struct err *err)
{
	char out[PROBE_OUT_MAX + 1];
	ssize_t n = read(rx->probe_out, out, PROBE_OUT_MAX);
	out[n > 0 ? n : 0] = '\0';
	int step, run = spawn_report_read(rx->probe_report, &step);
	unsigned format = 0;
	const char *line = strstr(out, "kin-state-format ");
	bool says = line && sscanf(line, "kin-state-format %u", &format) == 1;
	char what[160];
	out[strcspn(out, "\n")] = '\0';
	if (run < 0)
		snprintf(what, sizeof(what), "it does not run: %s", strerror(-run));
	else if (si->si_code != CLD_EXITED)
		snprintf(what, sizeof(what), "it was killed by signal %d", si->si_status);
	else if (si->si_status != 0)
		snprintf(what, sizeof(what), "it exited with status %d: %.80s", si->si_status, out);
	else if (!says)
		snprintf(what, sizeof(what), "it does not say which state format it reads");
	else
		snprintf(what, sizeof(what), "it reads format %u", format);
	if (run < 0 || si->si_code != CLD_EXITED || si->si_status != 0 || !says ||
	    format != STATE_FORMAT)
		return err_set(err, -ENOEXEC, ERR_FAILED_PRECONDITION,
		               "re-exec: %s is not a kin that reads state format %u: %s",
		               rx->binary, STATE_FORMAT, what);
	return 0;
}

static void decide(struct keep_reexec *rx, const siginfo_t *si)
{
	struct err err;
	int r = probe_verdict(rx, si, &err);
	probe_end(rx);
	if (r < 0) {
		finish(rx, r, &err);
		return;
	}
	/* The running binary, kept for a new one that cannot take over: made
	 * by the probe's child (once: the same binary's next kin keeps it), or
	 * now if it could not, never in the window where kin does not answer. */
	int self;
	r = self_copy(&self, &rx->fallback_id);
	if (r == 0 && (rx->fallback = fcntl(self, F_DUPFD_CLOEXEC, 3)) < 0)
		r = -errno;
	if (r < 0) {
		err_set_errno(&err, r, "re-exec: cannot keep the running binary: %s", strerror(-r));
		finish(rx, r, &err);
		return;
	}
	rx->phase = RX_SETTLING;
	rx->deadline_ns = now_monotonic_ns() + SETTLE_TIMEOUT_MS * 1000000ull;
	settle_check(rx);
}

static void probe_exited(const siginfo_t *si, void *data)
{
	struct keep_reexec *rx = data;
	/* An earlier probe killed by finish() ends here too: not this one. */
	if (rx->phase != RX_PROBING || !rx->probe || si->si_pid != rx->probe_pid)
		return;
	rx->probe = NULL;
	decide(rx, si);
}

static void probe_timeout(struct ev_source *src, uint32_t events)
{
	struct keep_reexec *rx = src->data;
	struct err err;
	(void)events;
	err_set(&err, -ETIMEDOUT, ERR_DEADLINE_EXCEEDED,
	        "re-exec: %s did not answer `version --state-format` within %d ms", rx->binary,
	        PROBE_TIMEOUT_MS);
	finish(rx, -ETIMEDOUT, &err);
}

static int probe_start(struct keep_reexec *rx, struct err *err)
{
	int out[2];
	struct spawn_proc p;
	if (pipe2(out, O_CLOEXEC | O_NONBLOCK) < 0)
		return err_set_errno(err, -errno, "re-exec: pipe: %m");
	/* The running binary's copy (the fallback), made by the child first:
	 * 12 MB, not worth the loop's time. */
	if (self_copy_begin(&rx->copy) < 0)
		self_copy_end(&rx->copy);
	int r = spawn_clone(&(struct spawn_opts){.cgroup_fd = -1, .report_nonblock = true}, &p);
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		if (rx->copy.memfd >= 0)
			(void)self_copy_fill(&rx->copy); /* checked by the parent */
		fd_set_nonblock(out[1], false);
		if (dup2(out[1], STDOUT_FILENO) < 0)
			spawn_child_fail(p.report_fd, 0, errno);
		/* argv[0] "kin": a binary named init (a host's /sbin/init) would
		 * take anything else for kernel arguments and boot */
		char self[] = "kin", version[] = "version", flag[] = "--state-format";
		char *argv[] = {self, version, flag, NULL};
		execv(rx->binary, argv);
		spawn_child_fail(p.report_fd, 0, errno);
	}
	close(out[1]);
	if (r < 0) {
		self_copy_end(&rx->copy);
		close(out[0]);
		return err_set_errno(err, r, "re-exec: cannot start the probe: %s", strerror(-r));
	}
	rx->probe_report = p.report_fd; /* why it could not run, if it could not */
	rx->probe_out = out[0];
	rx->probe_pid = p.pid;
	r = child_track(rx->children, p.pid, p.pidfd, probe_exited, rx, &rx->probe);
	if (r == 0)
		r = timer_start(rx, probe_timeout, 0);
	if (r < 0) {
		probe_end(rx);
		return err_set_errno(err, r, "re-exec: cannot watch the probe: %s", strerror(-r));
	}
	rx->phase = RX_PROBING;
	return 0;
}

/* "" means the file kin was started from, as it is on disk now (an
 * upgrade replaced it: /proc/self/exe then ends in " (deleted)"), or for
 * a zone kin the binary it runs. */
static int binary_path(const char *binary, char *buf, size_t size, struct err *err)
{
	if (binary && *binary) {
		if (binary[0] != '/')
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "re-exec: binary \"%.200s\" is not an absolute path",
			               binary);
		if (str_copy(buf, size, binary) < 0)
			return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
			               "re-exec: binary path too long");
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n < 0)
		return err_set_errno(err, -errno, "re-exec: /proc/self/exe: %m");
	buf[n] = '\0';
	/* A zone kin runs from its parent's sealed copy, which has no path:
	 * the same binary again, through the link. */
	if (str_startswith(buf, "/memfd:"))
		return str_copy(buf, size, "/proc/self/exe") < 0 ? -ENAMETOOLONG : 0;
	size_t len = (size_t)n, tail = STRLEN(" (deleted)");
	if (len > tail && strcmp(buf + len - tail, " (deleted)") == 0)
		buf[len - tail] = '\0';
	return 0;
}

int keep_reexec_begin(struct keep *k, const char *binary, keep_reexec_done_fn done, void *call_data,
                      struct err *err)
{
	struct keep_reexec *rx = k ? k->rx : NULL;
	if (!rx)
		return err_set(err, -ENOMEM, ERR_UNAVAILABLE, "re-exec: not available");
	if (rx->phase != RX_IDLE)
		return err_set(err, -EBUSY, ERR_ABORTED,
		               "re-exec: one is already under way (to %s)", rx->binary);
	if (!rx->argv)
		return err_set(err, -EINVAL, ERR_FAILED_PRECONDITION,
		               "re-exec: kin's own command line is not known");
	if (rx->fallback >= 0)
		fallback_drop(rx);
	int r = check_carry(rx, err);
	if (r < 0)
		return r;
	if ((r = binary_path(binary, rx->binary, sizeof(rx->binary), err)) < 0)
		return r;
	if ((r = probe_start(rx, err)) < 0)
		return r;
	rx->done = done;
	rx->call_data = call_data;
	log_info("re-exec: probing %s", rx->binary);
	return 0;
}

/* ---- the handover ---- */

static void save_own(struct keep_reexec *rx, struct state_w *w)
{
	size_t at = state_open(w, S_KEEP);
	state_put_str(w, R_KIND, rx->kind);
	state_put_u64(w, R_REEXECS, rx->count + 1);
	const struct file_id *id = &rx->fallback_id;
	state_put_u64(w, R_EXE_DEV, id->dev);
	state_put_u64(w, R_EXE_INO, id->ino);
	state_put_u64(w, R_EXE_SIZE, id->size);
	state_put_u64(w, R_EXE_MTIME, id->mtime_ns);
	state_put_u64(w, R_EXE_CTIME, id->ctime_ns);
	state_close(w, at);
}

/* The state sealed and kin executed: does not return then. Returns why
 * not (the wire's participants resumed: this kin goes on). */
static int exec_next(struct keep_reexec *rx, struct state_w *w)
{
	int state_fd = -1, fallback = rx->fallback;
	uint64_t t0 = now_monotonic_ns();
	int r = state_w_seal(w, &state_fd);
	char num[32];
	if (r == 0) {
		snprintf(num, sizeof(num), "%d", state_fd);
		setenv(ENV_STATE, num, 1);
		/* The previous binary and the state as written: what a new kin
		 * that cannot read it hands back. */
		snprintf(num, sizeof(num), "%d,%d", fallback, state_fd);
		setenv(ENV_FALLBACK, num, 1);
		unsetenv(ENV_FAILED);
		fd_set_cloexec(fallback, false);
		log_info("re-exec: state of %zu bytes written in %.2f ms", w->len,
		         (double)(now_monotonic_ns() - t0) / 1e6);
		execv(rx->binary, rx->argv);
		r = -errno;
		close(state_fd);
	}
	/* No exec: this kin goes on as it was. */
	unsetenv(ENV_STATE);
	unsetenv(ENV_FALLBACK);
	fd_set_cloexec(fallback, true);
	state_w_unkeep(w);
	keep_parts_resume(rx->k);
	return r;
}

static void do_exec(struct keep_reexec *rx)
{
	struct state_w w;
	struct err err = {0};
	state_w_init(&w);
	save_own(rx, &w);
	int r = keep_parts_save(rx->k, &w, false, &err); /* every participant's record */
	if (r == 0 && w.err)
		err_set_errno(&err, r = w.err, "re-exec: the state: %s", strerror(-w.err));
	if (r < 0) {
		state_w_unkeep(&w);
		state_w_free(&w);
		finish(rx, r, &err);
		return;
	}
	/* Answered first; then the wire's participants end every other call. */
	log_info("re-exec: %s, after %llu re-execs", rx->binary, (unsigned long long)rx->count);
	keep_reexec_done_fn done = rx->done;
	rx->done = NULL;
	if (done)
		done(0, NULL, rx->binary, rx->count, rx->call_data);
	/* From here on nobody is answered: the next kin says for how long. */
	state_put_u64(&w, S_SILENT_SINCE, now_monotonic_ns());
	keep_parts_save(rx->k, &w, true, &err);
	/* Kept open: closed in the exec, it would take the thousands of
	 * registrations of what goes along out at once, in the window. */
	state_put_fd(&w, S_OLD_LOOP, ev_loop_fd(rx->loop));
	r = exec_next(rx, &w);
	state_w_free(&w);
	err_set_errno(&err, r, "re-exec: exec of %s failed: %s; this kin goes on", rx->binary,
	              strerror(-r));
	str_copy(rx->error, sizeof(rx->error), err.msg);
	finish(rx, r, &err);
}

static void settle_fired(struct ev_source *src, uint32_t events)
{
	struct keep_reexec *rx = src->data;
	uint64_t ticks;
	(void)events;
	if (read(src->fd, &ticks, sizeof(ticks)) < 0)
		return;
	settle_check(rx);
}

/* A re-exec waiting for what is in flight to settle: now, or on its timer. */
static void settle_check(struct keep_reexec *rx)
{
	char why[256];
	struct err err;
	if (rx->phase != RX_SETTLING)
		return;
	if (check_carry(rx, &err) < 0) {
		finish(rx, -EOPNOTSUPP, &err);
		return;
	}
	bool settled = keep_settled(rx->k, why, sizeof(why));
	/* Every child is one the state carries: no helper whose end would go
	 * unseen (an image import, a VM's tooling). */
	size_t carried = keep_children(rx->k);
	if (settled && child_count(rx->children) > carried) {
		snprintf(why, sizeof(why), "%zu helper processes still run",
		         child_count(rx->children) - carried);
		settled = false;
	}
	if (settled) {
		do_exec(rx);
		return;
	}
	if (now_monotonic_ns() >= rx->deadline_ns) {
		err_set(&err, -EBUSY, ERR_ABORTED, "re-exec: not settled within %d ms: %s; retry",
		        SETTLE_TIMEOUT_MS, why);
		finish(rx, -EBUSY, &err);
		return;
	}
	/* Starts settle within their own deadlines: look again soon. */
	if (rx->timer.fd < 0 && timer_start(rx, settle_fired, SETTLE_POLL_MS) < 0) {
		err_set(&err, -ENOMEM, ERR_UNAVAILABLE, "re-exec: no timer: %s; retry", why);
		finish(rx, -ENOMEM, &err);
	}
}

/* ---- the new kin's side ---- */

/* An fd named in the environment: NAME=FD, or the index'th of NAME=FD,FD. */
static int env_fd(const char *name, unsigned index)
{
	const char *v = getenv(name);
	char word[16];
	uint32_t fd;
	for (; v && index; index--)
		v = strchr(v, ',') ? strchr(v, ',') + 1 : NULL;
	if (!v || str_copy(word, sizeof(word), v) < 0)
		return -1;
	word[strcspn(word, ",")] = '\0';
	if (str_to_u32(word, &fd) < 0 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0)
		return -1;
	return (int)fd;
}

bool keep_reexec_pending(void)
{
	return getenv(ENV_STATE) != NULL;
}

/* This binary cannot take the state over: the previous one, kept in the
 * memfd, takes it back (unless this is already it: then kin starts
 * afresh, its workloads running on as orphans it reaps). */
static void fall_back(struct keep_reexec *rx, int state_fd, const char *why)
{
	int fallback = env_fd(ENV_FALLBACK, 0), written = env_fd(ENV_FALLBACK, 1);
	if (getenv(ENV_FAILED) || fallback < 0 || written < 0) {
		log_error("%s; and no previous binary to go back to: starting afresh, "
		          "the running workloads are not taken over",
		          why);
		str_copy(rx->error, sizeof(rx->error), why);
		unsetenv(ENV_STATE);
		unsetenv(ENV_FALLBACK);
		unsetenv(ENV_FAILED);
		if (state_fd >= 0)
			close(state_fd);
		if (fallback >= 0)
			close(fallback);
		return;
	}
	log_error("%s; the previous binary takes over again", why);
	char num[16];
	snprintf(num, sizeof(num), "%d", written);
	setenv(ENV_STATE, num, 1);
	setenv(ENV_FAILED, why, 1);
	if (state_fd >= 0 && state_fd != written)
		close(state_fd);
	fexecve(fallback, rx->argv, environ);
	log_error("re-exec: the previous binary does not run either: %m");
	setenv(ENV_FAILED, why, 1);
	fall_back(rx, state_fd, why); /* ENV_FAILED is set: starts afresh */
}

struct own {
	uint64_t reexecs;
	struct file_id exe;
	char kind[32];
};

static int read_own(const struct state_field *f, struct own *out)
{
	static const struct state_num nums[] = {
	    STATE_NUM(R_REEXECS, struct own, reexecs),
	    STATE_NUM(R_EXE_DEV, struct own, exe.dev),
	    STATE_NUM(R_EXE_INO, struct own, exe.ino),
	    STATE_NUM(R_EXE_SIZE, struct own, exe.size),
	    STATE_NUM(R_EXE_MTIME, struct own, exe.mtime_ns),
	    STATE_NUM(R_EXE_CTIME, struct own, exe.ctime_ns),
	};
	struct state_r r;
	struct state_field g;
	int k;
	state_get_record(f, &r);
	while ((k = state_next(&r, &g)) > 0) {
		if (g.tag == R_KIND)
			k = state_get_str(&g, out->kind, sizeof(out->kind));
		else
			k = state_get_num(&g, out, nums, ARRAY_SIZE(nums));
		if (k < 0)
			return k;
	}
	return k;
}

/* The handover's own fields, and whether the state is this kind of kin's. */
static int read_top(struct keep_reexec *rx, struct own *own)
{
	struct state_r top = rx->in.top;
	struct state_field f;
	int r;
	bool seen = false;
	while ((r = state_next(&top, &f)) > 0) {
		if (f.tag == S_KEEP)
			r = read_own(&f, own), seen = true;
		else if (f.tag == S_SILENT_SINCE)
			state_get_u64(&f, &rx->silent_since);
		else if (f.tag == S_OLD_LOOP && state_get_fd(&rx->in, &f, &rx->old_loop) < 0)
			rx->old_loop = -1;
		if (r < 0)
			return r;
	}
	return seen ? 0 : -EBADMSG;
}

int keep_reexec_restore(struct keep *k)
{
	struct keep_reexec *rx = k->rx;
	struct state_in *in = &rx->in;
	uint32_t format = 0;
	char why[ERR_MSG_MAX];
	rx->restore_ns = now_monotonic_ns();
	int state_fd = env_fd(ENV_STATE, 0);
	const char *failed = getenv(ENV_FAILED);
	if (failed) /* we are the previous binary, back: the next one said why */
		snprintf(rx->error, sizeof(rx->error), "%s", failed);
	int r = state_fd < 0 ? -EBADF : state_in_open(state_fd, in, &format);
	if (r < 0) {
		if (r == -EPROTO)
			snprintf(why, sizeof(why),
			         "re-exec: the state handed over is in format %u; this kin (%s) "
			         "reads %u",
			         format, KIN_VERSION, STATE_FORMAT);
		else
			snprintf(why, sizeof(why),
			         "re-exec: the state handed over does not read: %s", strerror(-r));
		fall_back(rx, state_fd, why);
		return r;
	}
	close(state_fd); /* mapped */
	struct own own = {0};
	r = read_top(rx, &own);
	if (r < 0 || strcmp(own.kind, rx->kind) != 0) {
		snprintf(why, sizeof(why), "re-exec: the state handed over %s",
		         r < 0 ? "does not read" : "is another role's");
		state_in_close(in);
		fall_back(rx, -1, why);
		return -EBADMSG;
	}
	rx->in_open = true;
	rx->count = own.reexecs;
	rx->fallback_id = own.exe;
	/* The previous binary's copy is this kin's own if it runs the same
	 * file (then the zones restored may keep it). */
	rx->fallback = env_fd(ENV_FALLBACK, 0);
	if (self_copy_take(rx->fallback, &rx->fallback_id))
		rx->fallback = -1;
	else if (rx->fallback >= 0)
		fd_set_cloexec(rx->fallback, true); /* not for the children */
	/* The participants take the rest over as they start (keep_start). */
	keep_take_from(k, KEEP_REEXEC, in, NULL, 0);
	return 0;
}

static void fallback_late(struct ev_source *src, uint32_t events)
{
	(void)events;
	fallback_drop(src->data);
	self_copy_drop(); /* the zones keep theirs if they took one */
}

void keep_reexec_restored(struct keep *k)
{
	struct keep_reexec *rx = k->rx;
	if (!rx || !rx->in_open)
		return;
	/* What went along may still be in the previous epoll set: taken out
	 * once kin answers (what nobody took is closed now, and out of it). */
	if (rx->old_loop >= 0 && ev_retire(rx->loop, rx->old_loop, rx->in.kept, STATE_FDS_MAX) < 0)
		log_warn("re-exec: the previous epoll set is closed at once");
	rx->old_loop = -1;
	keep_take_from(k, KEEP_FRESH, NULL, NULL, 0);
	state_in_close(&rx->in); /* closes what nobody took */
	rx->in_open = false;
	/* The previous binary's copy is let go later (freeing megabytes of
	 * shmem is not worth a client's wait now); the zones keep it if it is
	 * this binary's and they run any (zones_keep_exe). */
	if ((rx->fallback >= 0 || self_copy_have()) && timer_start(rx, fallback_late, 0) < 0) {
		fallback_drop(rx);
		self_copy_drop();
	}
	unsetenv(ENV_STATE);
	unsetenv(ENV_FALLBACK);
	unsetenv(ENV_FAILED);
	uint64_t now = now_monotonic_ns();
	log_info("re-exec: state taken over in %.2f ms, %.2f ms without answering (re-exec "
	         "%llu%s%s)",
	         (double)(now - rx->restore_ns) / 1e6,
	         rx->silent_since && rx->silent_since < now ? (double)(now - rx->silent_since) / 1e6
	                                                    : 0.0,
	         (unsigned long long)rx->count, rx->error[0] ? "; the last one fell back: " : "",
	         rx->error);
}
