/* manager: the VMs one kin runs. A start is a few steps in the loop, none
 * of which waits: the VM's files are checked in a child (a hung mount
 * stalls that child, not kin), then the VMM is started, as a child
 * tracked by pidfd or by the owner's runner (in a cell), which reports its
 * setup's verdict and its end; either way the end is recorded and
 * reported, never missed. */
#include "vm/vm.h"
#include "lib/state.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

/* A talk with the VMM's monitor (Ctrl-Alt-Del), in the loop: QEMU drops
 * what arrives before its first prompt, so each step waits for one. */
enum talk_step { TALK_NONE, TALK_PROMPT, TALK_SENT };
struct vm_talk {
	enum talk_step step;
	struct ev_source io, timer;
	char tail[32]; /* what was read last: a prompt may straddle two reads */
	size_t have;
};

/* What a start needs between vm_start and the VMM's spawn. */
struct vm_start_job {
	struct vm_spec spec;
	char **argv;              /* one allocation */
	struct child_call *check; /* the files' check, until it answers */
};

struct vm_entry {
	struct list_node node; /* in vm_manager.live while the slot is used */
	struct vm_info info;
	struct child *child;      /* plain child; NULL once exited */
	bool by_runner;           /* started through the runner */
	bool starting;            /* vm_start began; events.started not told yet */
	struct vm_start_job *job; /* while its files are checked */
	struct vm_manager *m;
	struct vm_talk talk;
};

/* What a kin running no VM writes first, on one page: the manager is
 * 1 MiB (mmap'd, its slots never touched until used). */
struct vm_manager {
	struct ev_loop *loop;
	struct child_table *children;
	struct vm_events events;
	struct vm_runner runner; /* start NULL: plain children */
	struct list_node live;   /* the used slots, in start order */
	char state_dir[PATH_MAX];
	struct vm_entry vms[VM_MAX]; /* the slots */
};

int vm_manager_new(struct ev_loop *loop, struct child_table *children, const char *state_dir,
                   const struct vm_events *events, struct vm_manager **ret)
{
	struct vm_manager *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->children = children;
	list_init(&m->live);
	if (str_copy(m->state_dir, sizeof(m->state_dir),
	             state_dir ? state_dir : VM_STATE_DIR_DEFAULT) < 0) {
		free(m);
		return -ENAMETOOLONG;
	}
	if (events)
		m->events = *events;
	*ret = m;
	return 0;
}

void vm_manager_set_runner(struct vm_manager *m, const struct vm_runner *r)
{
	m->runner = r ? *r : (struct vm_runner){0};
}

static void talk_end(struct vm_entry *e);
static void job_free(struct vm_entry *e);

void vm_manager_free(struct vm_manager *m)
{
	if (!m)
		return;
	struct vm_entry *e;
	list_for_each(e, &m->live, node) {
		job_free(e);
		talk_end(e);
	}
	free(m);
}

int vm_cid_pick(const uint32_t *live, size_t n, uint32_t *ret)
{
	/* n live CIDs leave a free one among the first n + 1. */
	for (uint64_t cid = VM_CID_FIRST; cid <= (uint64_t)VM_CID_FIRST + n && cid < UINT32_MAX;
	     cid++) {
		bool used = false;
		for (size_t i = 0; i < n && !used; i++)
			used = live[i] == cid;
		if (!used) {
			*ret = (uint32_t)cid;
			return 0;
		}
	}
	return -ENOSPC;
}

static struct vm_entry *find(struct vm_manager *m, const char *name)
{
	struct vm_entry *e;
	list_for_each(e, &m->live, node)
		if (strcmp(e->info.name, name) == 0)
			return e;
	return NULL;
}

static void vmm_ended(struct vm_entry *e, int status)
{
	e->child = NULL;
	e->info.state = VM_STATE_EXITED;
	e->info.exit_status = status;
	log_info("vm \"%s\": VMM exited with status %d", e->info.name, e->info.exit_status);
	if (e->m->events.exited)
		e->m->events.exited(e->m->events.data, &e->info);
}

static void on_vmm_exit(const siginfo_t *si, void *data)
{
	vmm_ended(data, child_status_code(si));
}

void vm_vmm_exited(struct vm_manager *m, const char *name, pid_t pid, int status)
{
	struct vm_entry *e = find(m, name);
	if (e && e->by_runner && e->info.pid == pid && e->info.state != VM_STATE_EXITED)
		vmm_ended(e, status);
}

static void job_free(struct vm_entry *e)
{
	if (!e->job)
		return;
	child_call_cancel(e->job->check);
	free(e->job->argv);
	free(e->job);
	e->job = NULL;
}

static void entry_drop(struct vm_entry *e)
{
	job_free(e);
	talk_end(e);
	if (e->by_runner && e->m->runner.release)
		e->m->runner.release(e->m->runner.data, e->info.name);
	list_remove(&e->node);
}

/* Where the host has vhost-vsock: the lowest CID no live VM of ours holds. */
static uint32_t cid_for_new(struct vm_manager *m)
{
	uint32_t live[VM_MAX], cid = 0;
	size_t n = 0;
	struct vm_entry *e;
	if (access(VM_VHOST_VSOCK, R_OK | W_OK) < 0)
		return 0;
	list_for_each(e, &m->live, node)
		if (e->info.state != VM_STATE_EXITED && e->info.vsock_cid && n < VM_MAX)
			live[n++] = e->info.vsock_cid;
	return vm_cid_pick(live, n, &cid) < 0 ? 0 : cid;
}

/* The slot a new VM takes; an exited VM of the same name gives way. */
static int slot_take(struct vm_manager *m, const char *name, struct vm_entry **ret, struct err *e)
{
	struct vm_entry *old = find(m, name);
	if (old && old->info.state != VM_STATE_EXITED)
		return err_set(e, -EEXIST, ERR_ALREADY_EXISTS, "vm \"%s\" already exists", name);
	if (old)
		entry_drop(old);
	for (size_t i = 0; i < VM_MAX; i++)
		if (!list_is_linked(&m->vms[i].node)) {
			*ret = &m->vms[i];
			return 0;
		}
	return err_set(e, -ENOSPC, ERR_RESOURCE_EXHAUSTED,
	               "vm \"%s\": already running %d VMs, the limit", name, VM_MAX);
}

/* Everything before the VMM runs: the accelerator (why says how it was
 * chosen), the state dir, a vsock CID, the VMM's argv. */
static int vmm_prepare(struct vm_manager *m, const struct vm_spec *spec, struct vm_info *info,
                       char *why, size_t why_len, char ***ret_argv, struct err *e)
{
	struct vm_spec sp = *spec;
	int r = vm_accel_resolve(spec->accel, &info->accel, why, why_len);
	if (r < 0)
		return err_set_errno(e, r, "vm \"%s\": %s", spec->name, why);
	r = vm_paths_for(m->state_dir, spec, &info->paths);
	if (r < 0)
		return err_set_errno(e, r, "vm \"%s\": state paths under %s are too long",
		                     spec->name, m->state_dir);
	r = mkdir_p(info->paths.dir, 0700);
	if (r < 0)
		return err_set_errno(e, r, "vm \"%s\": %s: %s", spec->name, info->paths.dir,
		                     strerror(-r));
	unlink(info->paths.link);
	unlink(info->paths.monitor);
	sp.vsock_cid = info->vsock_cid = cid_for_new(m);
	r = vm_backend_qemu.build_argv(&sp, info->accel, &info->paths, ret_argv);
	if (r < 0)
		return err_set_errno(e, r, "vm \"%s\": cannot build the %s command: %s%s",
		                     spec->name, vm_backend_qemu.name, strerror(-r),
		                     r == -EINVAL ? " (a path contains ',')" : "");
	return 0;
}

/* Starts the VMM of slot: through the runner, or as a plain child. */
static int vmm_spawn(struct vm_manager *m, struct vm_entry *slot, const struct vm_spec *spec,
                     char *const *argv, struct err *e)
{
	const char *name = slot->info.name;
	if (m->runner.start) {
		slot->by_runner = true;
		return m->runner.start(m->runner.data, name, argv,
		                       spec->netns[0] ? spec->netns : NULL, &slot->info.pid,
		                       slot->info.cell, sizeof(slot->info.cell), e);
	}
	if (spec->netns[0])
		return err_set(e, -EOPNOTSUPP, ERR_FAILED_PRECONDITION,
		               "vm \"%s\": a network namespace needs a runner (a kin daemon)",
		               name);
	int r = child_spawn(m->children, argv, on_vmm_exit, slot, &slot->child);
	if (r < 0)
		return err_set_errno(e, r, "vm \"%s\": cannot run %s: %s", name, argv[0],
		                     strerror(-r));
	slot->info.pid = child_pid(slot->child);
	return 0;
}

/* The start is over: the VM runs (err NULL), or it did not start and is
 * forgotten before its owner hears why. */
static void start_told(struct vm_entry *e, const struct err *err)
{
	struct vm_manager *m = e->m;
	struct vm_info info = e->info;
	e->starting = false;
	if (err) {
		log_warn("vm \"%s\": did not start: %s", info.name, err->msg);
		info.state = VM_STATE_EXITED;
		info.exit_status = -1;
		entry_drop(e);
	} else if (e->info.state == VM_STATE_STARTING) {
		e->info.state = info.state = VM_STATE_RUNNING;
	}
	if (m->events.started)
		m->events.started(m->events.data, &info, err);
}

static int check_files(void *arg, struct err *err)
{
	return vm_spec_check_files(arg, err);
}

/* The files are there: the VMM starts. */
static void on_checked(int result, const struct err *err, void *data)
{
	struct vm_entry *e = data;
	struct vm_start_job *job = e->job;
	struct err se = {0};
	job->check = NULL;
	if (result < 0) {
		start_told(e, err);
		return;
	}
	int r = vmm_spawn(e->m, e, &job->spec, job->argv, &se);
	job_free(e);
	if (r < 0) {
		start_told(e, &se);
		return;
	}
	e->info.started_ns = now_monotonic_ns();
	log_info("vm \"%s\": started (%s, %s), pid %d%s%s", e->info.name, vm_backend_qemu.name,
	         vm_accel_name(e->info.accel), (int)e->info.pid, e->info.cell[0] ? ", in " : "",
	         e->info.cell);
	if (!e->by_runner) /* a plain child exec'd already */
		start_told(e, NULL);
}

void vm_vmm_started(struct vm_manager *m, const char *name, pid_t pid, const struct err *err)
{
	struct vm_entry *e = find(m, name);
	if (e && e->by_runner && e->starting && !e->job && e->info.pid == pid)
		start_told(e, err);
}

int vm_start(struct vm_manager *m, const struct vm_spec *spec, struct err *e)
{
	struct vm_entry *slot = NULL;
	_cleanup_free_ char **argv = NULL;
	char why[256];

	int r = vm_spec_validate(spec, e);
	if (r < 0)
		return r;
	r = slot_take(m, spec->name, &slot, e);
	if (r < 0)
		return r;
	struct vm_info info = {
	    .state = VM_STATE_STARTING, .cpus = spec->cpus, .memory_mb = spec->memory_mb};
	str_copy(info.name, sizeof(info.name), spec->name);
	r = vmm_prepare(m, spec, &info, why, sizeof(why), &argv, e);
	if (r < 0)
		return r;
	struct vm_start_job *job = calloc(1, sizeof(*job));
	if (!job)
		return err_set(e, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "vm \"%s\": out of memory",
		               spec->name);
	job->spec = *spec;
	job->argv = TAKE_PTR(argv);
	/* by_runner from here: what prepare makes goes with the entry. */
	*slot = (struct vm_entry){.m = m,
	                          .info = info,
	                          .starting = true,
	                          .job = job,
	                          .by_runner = m->runner.start != NULL};
	list_append(&m->live, &slot->node);
	log_debug("vm \"%s\": %s; checking its files", spec->name, why);
	if (m->runner.prepare && (r = m->runner.prepare(m->runner.data, spec->name, e)) < 0) {
		entry_drop(slot);
		return r;
	}
	char what[NAME_MAX_LEN + 32];
	snprintf(what, sizeof(what), "vm \"%s\": checking its files", spec->name);
	r = child_call(m->children, check_files, &job->spec, VM_CHECK_TIMEOUT_MS, what, on_checked,
	               slot, &job->check);
	if (r < 0) {
		entry_drop(slot);
		return err_set_errno(e, r, "vm \"%s\": cannot check its files: %s", spec->name,
		                     strerror(-r));
	}
	return 0;
}

int vm_get(struct vm_manager *m, const char *name, struct vm_info *ret)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	*ret = e->info;
	return 0;
}

void vm_foreach(struct vm_manager *m, void (*fn)(const struct vm_info *info, void *data),
                void *data)
{
	struct vm_entry *e, *tmp;
	list_for_each_safe(e, tmp, &m->live, node) /* fn may forget e */
		fn(&e->info, data);
}

static void talk_end(struct vm_entry *e)
{
	struct vm_talk *t = &e->talk;
	if (t->step == TALK_NONE)
		return;
	ev_close(e->m->loop, &t->io);
	ev_close(e->m->loop, &t->timer);
	t->step = TALK_NONE;
}

/* A prompt read: the command goes after the first, the second confirms
 * QEMU took it. */
static void on_talk_io(struct ev_source *src, uint32_t events)
{
	static const char cmd[] = "sendkey ctrl-alt-delete\n";
	struct vm_entry *e = src->data;
	struct vm_talk *t = &e->talk;
	char buf[4096];
	(void)events;
	ssize_t n = read(t->io.fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) { /* after the key: the guest went down at once */
		log_msg(t->step == TALK_SENT ? LOG_DEBUG_ : LOG_WARN_,
		        "vm \"%s\": the VMM's monitor hung up%s", e->info.name,
		        t->step == TALK_SENT ? " after Ctrl-Alt-Del" : "; Ctrl-Alt-Del not sent");
		talk_end(e);
		return;
	}
	/* The prompt within the tail of the last read and this one. */
	char look[sizeof(t->tail) + sizeof(buf) + 1];
	memcpy(look, t->tail, t->have);
	memcpy(look + t->have, buf, (size_t)n);
	size_t len = t->have + (size_t)n;
	look[len] = '\0';
	bool prompt = memmem(look, len, "(qemu) ", 7) != NULL;
	t->have = len < sizeof(t->tail) ? len : sizeof(t->tail) - 1;
	memcpy(t->tail, look + len - t->have, t->have);
	if (!prompt)
		return;
	t->have = 0;
	if (t->step == TALK_PROMPT) {
		if (write(t->io.fd, cmd, STRLEN(cmd)) != (ssize_t)STRLEN(cmd)) {
			log_warn("vm \"%s\": cannot write to the VMM's monitor: %m", e->info.name);
			talk_end(e);
			return;
		}
		t->step = TALK_SENT;
		if (e->info.state != VM_STATE_EXITED)
			e->info.state = VM_STATE_STOPPING;
		return;
	}
	log_debug("vm \"%s\": the VMM took Ctrl-Alt-Del", e->info.name);
	talk_end(e);
}

static void on_talk_timeout(struct ev_source *src, uint32_t events)
{
	struct vm_entry *e = src->data;
	(void)events;
	log_warn("vm \"%s\": the VMM's monitor did not answer in %d ms; Ctrl-Alt-Del %s",
	         e->info.name, VM_MONITOR_TIMEOUT_MS,
	         e->talk.step == TALK_SENT ? "sent, not confirmed" : "not sent");
	talk_end(e);
}

int vm_request_shutdown(struct vm_manager *m, const char *name)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	if (e->info.state == VM_STATE_EXITED)
		return -ESRCH;
	struct vm_talk *t = &e->talk;
	if (t->step != TALK_NONE)
		return 0; /* under way */
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (str_copy(sa.sun_path, sizeof(sa.sun_path), e->info.paths.monitor) < 0)
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A unix connect completes at once or fails (EAGAIN: the VMM's backlog
	 * is full, it does not accept). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = {.it_value = {.tv_sec = VM_MONITOR_TIMEOUT_MS / 1000,
	                                      .tv_nsec = VM_MONITOR_TIMEOUT_MS % 1000 * 1000000L}};
	*t = (struct vm_talk){.step = TALK_PROMPT,
	                      .io = {.fd = fd, .fn = on_talk_io, .data = e},
	                      .timer = {.fd = tfd, .fn = on_talk_timeout, .data = e}};
	int r = tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0 ? -errno : 0;
	if (r == 0)
		r = ev_add(m->loop, &t->io, EPOLLIN);
	if (r < 0) {
		if (tfd >= 0)
			close(tfd);
		close(fd);
		*t = (struct vm_talk){.step = TALK_NONE, .io = {.fd = -1}, .timer = {.fd = -1}};
		return r;
	}
	if ((r = ev_add(m->loop, &t->timer, EPOLLIN)) < 0) {
		talk_end(e);
		return r;
	}
	return 0;
}

int vm_kill(struct vm_manager *m, const char *name, int sig)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	if (e->info.state == VM_STATE_EXITED)
		return -ESRCH;
	if (e->job) { /* no VMM yet: the start ends here */
		struct err err;
		err_set(&err, -ECANCELED, ERR_CANCELLED, "vm \"%s\": stopped before it started",
		        name);
		start_told(e, &err);
		return 0;
	}
	e->info.state = VM_STATE_STOPPING;
	if (e->by_runner)
		return e->m->runner.signal ? e->m->runner.signal(e->m->runner.data, name, sig)
		                           : -EOPNOTSUPP;
	return child_signal(e->child, sig);
}

int vm_forget(struct vm_manager *m, const char *name)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	if (e->info.state != VM_STATE_EXITED)
		return -EBUSY;
	entry_drop(e);
	return 0;
}

/* ---- re-exec ---- */

bool vm_settled(const struct vm_manager *m, char *why, size_t size)
{
	const struct vm_entry *e;
	list_for_each(e, &m->live, node) {
		const char *what = e->starting || e->job       ? "starting"
		                   : e->talk.step != TALK_NONE ? "talking to its VMM's monitor"
		                   : e->info.state == VM_STATE_STOPPING ? "stopping"
		                                                        : NULL;
		if (what) {
			snprintf(why, size, "vm \"%s\" is %s", e->info.name, what);
			return false;
		}
	}
	return true;
}

size_t vm_children(const struct vm_manager *m)
{
	size_t n = 0;
	const struct vm_entry *e;
	list_for_each(e, &m->live, node)
		n += e->child != NULL;
	return n;
}

enum {
	VS_NAME = 1,
	VS_STATE,
	VS_PID,
	VS_ACCEL,
	VS_CPUS,
	VS_MEMORY,
	VS_EXIT,
	VS_STARTED,
	VS_CID,
	VS_CELL_UNUSED,    /* tags are never reused: the cell and console are */
	VS_CONSOLE_UNUSED, /* this kin's own making (its runner, its state dir) */
	VS_BY_RUNNER,
};
struct vm_nums {
	uint64_t state, pid, accel, cpus, memory, started, cid, by_runner;
	int64_t exit;
};
static const struct state_num vm_nums[] = {
    STATE_NUM(VS_STATE, struct vm_nums, state),
    STATE_NUM(VS_PID, struct vm_nums, pid),
    STATE_NUM(VS_ACCEL, struct vm_nums, accel),
    STATE_NUM(VS_CPUS, struct vm_nums, cpus),
    STATE_NUM(VS_MEMORY, struct vm_nums, memory),
    STATE_NUM(VS_STARTED, struct vm_nums, started),
    STATE_NUM(VS_CID, struct vm_nums, cid),
    STATE_NUM(VS_BY_RUNNER, struct vm_nums, by_runner),
    STATE_NUM(VS_EXIT, struct vm_nums, exit),
};

void vm_save(struct vm_manager *m, const char *name, struct state_w *w, uint16_t tag)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return;
	const struct vm_info *i = &e->info;
	struct vm_nums n = {.state = i->state,
	                    .pid = (uint64_t)i->pid,
	                    .accel = i->accel,
	                    .cpus = i->cpus,
	                    .memory = i->memory_mb,
	                    .started = i->started_ns,
	                    .cid = i->vsock_cid,
	                    .by_runner = e->by_runner,
	                    .exit = i->exit_status};
	size_t at = state_open(w, tag);
	state_put_str(w, VS_NAME, i->name);
	state_put_nums(w, &n, vm_nums, ARRAY_SIZE(vm_nums));
	state_close(w, at);
}

/* Whether pid runs VM name's VMM: its command line says "-name NAME"
 * (vm/qemu.c), so a record cannot make kin take another child for it. */
static bool vmm_is(pid_t pid, const char *name)
{
	char path[64];
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (file_read_small(path, 64 * 1024, &buf, &len) < 0)
		return false;
	for (size_t at = 0; at < len;) {
		const char *arg = buf + at;
		size_t n = strnlen(arg, len - at);
		if (strcmp(arg, "-name") == 0 && at + n + 1 < len)
			return strcmp(arg + n + 1, name) == 0;
		at += n + 1;
	}
	return false;
}

/* What a record names that cannot be taken: its VMM killed when it is
 * surely the VM's (ours: the runner's own name; a plain child of ours
 * running that VM). why gets what and what was done. */
static int give_up(struct vm_manager *m, const struct vm_info *i, bool by_runner, bool ours,
                   char *why, size_t size, const char *what)
{
	bool killed = false;
	if (ours && by_runner && m->runner.drop) {
		m->runner.drop(m->runner.data, i->name);
		killed = true;
	} else if (ours && !by_runner && i->pid > 0 && i->state != VM_STATE_EXITED &&
	           vmm_is(i->pid, i->name)) {
		struct child *c = NULL;
		if (child_adopt(m->children, i->pid, NULL, NULL, &c) == 0)
			killed = child_signal(c, SIGKILL) == 0;
	}
	snprintf(why, size, "%s%s", what, killed ? "; its VMM is killed" : "");
	return -EBADMSG;
}

int vm_restore(struct vm_manager *m, const struct state_field *f, struct vm_info *ret, char *why,
               size_t size)
{
	struct vm_nums n = {.exit = -1};
	struct vm_info i = {0};
	struct state_r r;
	struct state_field g;
	int e = 0;
	state_get_record(f, &r);
	while (e == 0 && (e = state_next(&r, &g)) > 0) {
		if ((e = state_get_num(&g, &n, vm_nums, ARRAY_SIZE(vm_nums))) != 0)
			e = e < 0 ? e : 0;
		else if (g.tag == VS_NAME)
			e = state_get_str(&g, i.name, sizeof(i.name));
	}
	bool valid_name = e == 0 && name_is_valid(i.name);
	str_copy(ret->name, sizeof(ret->name), valid_name ? i.name : "");
	bool by_runner = n.by_runner != 0;
	/* The runner's own names only: a record cannot make it drop another. */
	bool ours = valid_name && !find(m, i.name) && (m->runner.start != NULL) == by_runner;
	i.state = n.state == VM_STATE_EXITED ? VM_STATE_EXITED : VM_STATE_RUNNING;
	i.pid = n.pid && n.pid <= INT32_MAX && n.pid != (uint64_t)getpid() ? (pid_t)n.pid : 0;
	if (e < 0 || !valid_name)
		return give_up(m, &i, by_runner, false, why, size, "its record does not read");
	if (find(m, i.name))
		return give_up(m, &i, by_runner, false, why, size, "a second VM of that name");
	if ((m->runner.start != NULL) != by_runner)
		return give_up(m, &i, by_runner, false, why, size,
		               by_runner ? "its VMM ran in a cell, and this kin has none"
		                         : "its VMM ran as a plain child, and this kin runs VMMs "
		                           "in cells");
	/* A stop a killed kin had begun is not carried: the VM runs on. */
	if (n.state == VM_STATE_STOPPING)
		n.state = VM_STATE_RUNNING;
	if (n.state != VM_STATE_RUNNING && n.state != VM_STATE_EXITED)
		return give_up(m, &i, by_runner, ours, why, size,
		               "it was neither running nor ended");
	if (n.accel > VM_ACCEL_TCG || n.cpus < 1 || n.cpus > VM_CPUS_MAX ||
	    n.memory < VM_MEMORY_MIN_MB || n.memory > VM_MEMORY_MAX_MB ||
	    (n.cid && (n.cid < VM_CID_FIRST || n.cid >= UINT32_MAX)) || n.exit < -1 ||
	    n.exit > 255 + 128)
		return give_up(m, &i, by_runner, ours, why, size, "its record holds a bad number");
	if (i.state == VM_STATE_RUNNING && !i.pid)
		return give_up(m, &i, by_runner, ours, why, size, "no valid pid");
	i.accel = (enum vm_accel)n.accel;
	i.cpus = (unsigned)n.cpus;
	i.memory_mb = (unsigned)n.memory;
	i.started_ns = n.started;
	i.vsock_cid = (uint32_t)n.cid;
	i.exit_status = i.state == VM_STATE_EXITED ? (int)n.exit : 0;
	/* Paths and the cell as this kin makes them, never as the record says. */
	struct vm_spec spec = {0};
	str_copy(spec.name, sizeof(spec.name), i.name);
	if (vm_paths_for(m->state_dir, &spec, &i.paths) < 0)
		return give_up(m, &i, by_runner, ours, why, size, "its paths are too long");
	struct vm_entry *slot = NULL;
	for (size_t k = 0; k < VM_MAX && !slot; k++)
		if (!list_is_linked(&m->vms[k].node))
			slot = &m->vms[k];
	if (!slot)
		return give_up(m, &i, by_runner, ours, why, size, "one VM too many");
	if (i.state == VM_STATE_RUNNING) {
		const struct vm_entry *o;
		list_for_each(o, &m->live, node)
			if (i.vsock_cid && o->info.state != VM_STATE_EXITED &&
			    o->info.vsock_cid == i.vsock_cid)
				return give_up(m, &i, by_runner, ours, why, size,
				               "a vsock CID another VM holds");
	}
	*slot = (struct vm_entry){.m = m, .info = i, .by_runner = by_runner};
	if (i.state == VM_STATE_RUNNING) {
		struct err err = {0};
		int k = by_runner ? -EOPNOTSUPP
		        : !vmm_is(i.pid, i.name)
		            ? -ESRCH
		            : child_adopt(m->children, i.pid, on_vmm_exit, slot, &slot->child);
		if (by_runner && m->runner.resume)
			k = m->runner.resume(m->runner.data, i.name, i.pid, slot->info.cell,
			                     sizeof(slot->info.cell), &err);
		if (k < 0) {
			if (by_runner && !err.msg[0])
				snprintf(err.msg, sizeof(err.msg), "%s", strerror(-k));
			return give_up(m, &i, by_runner, ours, why, size,
			               by_runner      ? err.msg
			               : k == -ESRCH  ? "its pid runs no VMM of that name"
			               : k == -ECHILD ? "its VMM is not this kin's child"
			                              : strerror(-k));
		}
	} else if (by_runner && m->runner.resume) { /* ended: where its cell is */
		m->runner.resume(m->runner.data, i.name, 0, slot->info.cell,
		                 sizeof(slot->info.cell), NULL);
	}
	list_append(&m->live, &slot->node);
	*ret = slot->info;
	return 0;
}
