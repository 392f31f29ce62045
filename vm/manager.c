/* manager: the VMs one kin runs. Each VMM is a child tracked by pidfd in the
 * loop, or started by the owner's runner (in a cell) which reports its end;
 * either way the end is recorded and reported, never missed. */
#include "vm/vm.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

struct vm_entry {
	struct list_node node; /* in vm_manager.live while the slot is used */
	struct vm_info info;
	struct child *child; /* plain child; NULL once exited */
	bool by_runner;      /* started through the runner */
	struct vm_manager *m;
};

struct vm_manager {
	struct ev_loop *loop;
	struct child_table *children;
	char state_dir[PATH_MAX];
	struct vm_events events;
	struct vm_runner runner;     /* start NULL: plain children */
	struct vm_entry vms[VM_MAX]; /* the slots */
	struct list_node live;       /* the used ones, in start order */
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

void vm_manager_free(struct vm_manager *m)
{
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

static void entry_drop(struct vm_entry *e)
{
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
	    .state = VM_STATE_RUNNING, .cpus = spec->cpus, .memory_mb = spec->memory_mb};
	str_copy(info.name, sizeof(info.name), spec->name);
	r = vmm_prepare(m, spec, &info, why, sizeof(why), &argv, e);
	if (r < 0)
		return r;
	*slot = (struct vm_entry){.m = m, .info = info};
	list_append(&m->live, &slot->node);
	r = vmm_spawn(m, slot, spec, argv, e);
	if (r < 0) {
		list_remove(&slot->node);
		return r;
	}
	slot->info.started_ns = now_monotonic_ns();
	log_info("vm \"%s\": started (%s, %s), pid %d%s%s", spec->name, vm_backend_qemu.name, why,
	         (int)slot->info.pid, slot->info.cell[0] ? ", in " : "", slot->info.cell);
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

static int monitor_wait_prompt(int fd)
{
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "(qemu) "))
			return 0;
		if (have > sizeof(buf) / 2) { /* keep the tail: the prompt may straddle */
			memmove(buf, buf + have - 16, 16);
			have = 16;
		}
	}
}

int vm_request_shutdown(struct vm_manager *m, const char *name)
{
	static const char cmd[] = "sendkey ctrl-alt-delete\n";
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	if (e->info.state == VM_STATE_EXITED)
		return -ESRCH;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (str_copy(sa.sun_path, sizeof(sa.sun_path), e->info.paths.monitor) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = {.tv_sec = 1};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	/* QEMU drops what arrives before its first prompt, and what is still
	 * unread when the client hangs up: talk in step with the prompts. A
	 * local monitor answers in milliseconds; the timeouts bound the wait. */
	int r = monitor_wait_prompt(fd);
	if (r < 0)
		return r;
	r = write_all(fd, cmd, STRLEN(cmd));
	if (r < 0)
		return r;
	r = monitor_wait_prompt(fd);
	if (r < 0)
		return r;
	e->info.state = VM_STATE_STOPPING;
	return 0;
}

int vm_kill(struct vm_manager *m, const char *name, int sig)
{
	struct vm_entry *e = find(m, name);
	if (!e)
		return -ENOENT;
	if (e->info.state == VM_STATE_EXITED)
		return -ESRCH;
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
