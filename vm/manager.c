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
	bool used;
	struct vm_info info;
	struct child *child; /* plain child; NULL once exited */
	bool by_runner;      /* started through the runner */
	struct vm_manager *m;
	uint64_t seq; /* start order */
};

struct vm_manager {
	struct ev_loop *loop;
	struct child_table *children;
	char state_dir[PATH_MAX];
	struct vm_events events;
	struct vm_runner runner; /* start NULL: plain children */
	struct vm_entry vms[VM_MAX];
	uint64_t next_seq;
};

int vm_manager_new(struct ev_loop *loop, struct child_table *children, const char *state_dir,
                   const struct vm_events *events, struct vm_manager **ret)
{
	struct vm_manager *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->children = children;
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
	for (size_t i = 0; i < VM_MAX; i++)
		if (m->vms[i].used && strcmp(m->vms[i].info.name, name) == 0)
			return &m->vms[i];
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
	e->used = false;
}

/* Where the host has vhost-vsock: the lowest CID no live VM of ours holds. */
static uint32_t cid_for_new(struct vm_manager *m)
{
	uint32_t live[VM_MAX], cid = 0;
	size_t n = 0;
	if (access(VM_VHOST_VSOCK, R_OK | W_OK) < 0)
		return 0;
	for (size_t i = 0; i < VM_MAX; i++)
		if (m->vms[i].used && m->vms[i].info.state != VM_STATE_EXITED &&
		    m->vms[i].info.vsock_cid)
			live[n++] = m->vms[i].info.vsock_cid;
	return vm_cid_pick(live, n, &cid) < 0 ? 0 : cid;
}

int vm_start(struct vm_manager *m, const struct vm_spec *spec, char *err, size_t err_len)
{
	struct vm_entry *slot = NULL;
	struct vm_paths paths;
	enum vm_accel accel;
	char why[256];
	int r;

	r = vm_spec_validate(spec, err, err_len);
	if (r < 0)
		return r;
	struct vm_entry *old = find(m, spec->name);
	if (old && old->info.state != VM_STATE_EXITED) {
		snprintf(err, err_len, "vm \"%s\" already exists", spec->name);
		return -EEXIST;
	}
	if (old) /* an exited VM of the same name is replaced */
		entry_drop(old);
	for (size_t i = 0; i < VM_MAX && !slot; i++)
		if (!m->vms[i].used)
			slot = &m->vms[i];
	if (!slot) {
		snprintf(err, err_len, "vm \"%s\": already running %d VMs, the limit", spec->name,
		         VM_MAX);
		return -ENOSPC;
	}
	r = vm_accel_resolve(spec->accel, &accel, why, sizeof(why));
	if (r < 0) {
		snprintf(err, err_len, "vm \"%s\": %s", spec->name, why);
		return r;
	}
	r = vm_paths_for(m->state_dir, spec, &paths);
	if (r < 0) {
		snprintf(err, err_len, "vm \"%s\": state paths under %s are too long", spec->name,
		         m->state_dir);
		return r;
	}
	r = mkdir_p(paths.dir, 0700);
	if (r < 0) {
		snprintf(err, err_len, "vm \"%s\": %s: %s", spec->name, paths.dir, strerror(-r));
		return r;
	}
	unlink(paths.link);
	unlink(paths.monitor);
	struct vm_spec sp = *spec;
	sp.vsock_cid = cid_for_new(m);
	_cleanup_free_ char **argv = NULL;
	r = vm_backend_qemu.build_argv(&sp, accel, &paths, &argv);
	if (r < 0) {
		snprintf(err, err_len, "vm \"%s\": cannot build the %s command: %s%s", spec->name,
		         vm_backend_qemu.name, strerror(-r),
		         r == -EINVAL ? " (a path contains ',')" : "");
		return r;
	}
	struct vm_info info = {.state = VM_STATE_RUNNING,
	                       .accel = accel,
	                       .cpus = spec->cpus,
	                       .memory_mb = spec->memory_mb,
	                       .vsock_cid = sp.vsock_cid,
	                       .paths = paths};
	str_copy(info.name, sizeof(info.name), spec->name);
	*slot = (struct vm_entry){.used = true, .m = m, .seq = m->next_seq++, .info = info};
	if (m->runner.start) {
		slot->by_runner = true;
		r = m->runner.start(m->runner.data, spec->name, argv, &slot->info.pid,
		                    slot->info.cell, sizeof(slot->info.cell), err, err_len);
	} else {
		r = child_spawn(m->children, argv, on_vmm_exit, slot, &slot->child);
		if (r < 0)
			snprintf(err, err_len, "vm \"%s\": cannot run %s: %s", spec->name, argv[0],
			         strerror(-r));
		else
			slot->info.pid = child_pid(slot->child);
	}
	if (r < 0) {
		slot->used = false;
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
	uint64_t last = 0;
	bool first = true;
	/* Start order without sorting: few VMs, pick the next seq each pass. */
	for (;;) {
		struct vm_entry *next = NULL;
		for (size_t i = 0; i < VM_MAX; i++) {
			struct vm_entry *e = &m->vms[i];
			if (e->used && (first || e->seq > last) && (!next || e->seq < next->seq))
				next = e;
		}
		if (!next)
			return;
		first = false;
		last = next->seq;
		fn(&next->info, data);
	}
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
