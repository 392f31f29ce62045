/* vm_cells: each VMM the host kin's Vm service starts runs as executable
 * "vmm" of cell vms/NAME, cloned straight into it: limits apply to QEMU and
 * everything it forks, `kin ctl exec logs vms/NAME vmm` shows QEMU's own
 * stdout/stderr, its start and exit are events on `kin ctl events`, and the
 * end is seen through exec_wait and reported to vm/'s manager. The VMM gets
 * what a plain child of kin has (every capability, no seccomp, kin's PATH
 * and working directory): the cell is for accounting, limits and logs.
 * Ends are reported from the loop's next turn, not from inside the cells
 * library's callback, so that the report's handlers may delete the cell.
 * Not RPC, yet it lives in api/: it joins vm/ and cells/, which know
 * nothing of each other, and api/ is the lowest layer that sees both (vm/
 * asks for a vm_runner, an interface it owns; this is one). */
#include "api/vm_cells-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#define VMM_LOG_BYTES (256 * 1024)

struct vmm_end {
	char name[NAME_MAX_LEN + 1];
	pid_t pid;
	int status;
};

struct api_vm_cells {
	struct cells *cells;
	struct vm_manager *m;
	struct ev_loop *loop;
	struct ev_source wake; /* eventfd: ends to report */
	const struct cell_limits *limits;
	bool closed;
	size_t waits; /* exec_wait reports still due */
	/* One end per running VMM at most, and at most VM_MAX run. */
	struct vmm_end ends[VM_MAX];
	size_t nends;
};

struct vmm_wait {
	struct api_vm_cells *vc;
	char name[NAME_MAX_LEN + 1];
	pid_t pid;
};

static void flush(struct api_vm_cells *vc)
{
	/* Reports may start VMs or end others: take them one at a time. */
	while (vc->nends && !vc->closed) {
		struct vmm_end end = vc->ends[0];
		memmove(&vc->ends[0], &vc->ends[1], --vc->nends * sizeof(vc->ends[0]));
		vm_vmm_exited(vc->m, end.name, end.pid, end.status);
	}
}

static void on_wake(struct ev_source *src, uint32_t events)
{
	uint64_t n;
	(void)events;
	if (read(src->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	flush(src->data);
}

int api_vm_cells_new(struct ev_loop *loop, struct cells *cells, struct vm_manager *m,
                     struct api_vm_cells **ret)
{
	struct api_vm_cells *vc = calloc(1, sizeof(*vc));
	if (!vc)
		return -ENOMEM;
	vc->cells = cells;
	vc->m = m;
	vc->loop = loop;
	vc->wake = (struct ev_source){
	    .fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), .fn = on_wake, .data = vc};
	if (vc->wake.fd < 0 || ev_add(loop, &vc->wake, EPOLLIN) < 0) {
		int r = -errno;
		if (vc->wake.fd >= 0)
			close(vc->wake.fd);
		free(vc);
		return r;
	}
	*ret = vc;
	return 0;
}

static int cell_of(const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, API_VM_CELLS_PARENT "/%s", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void on_vmm_end(int result, const struct exec_status *st, void *data)
{
	struct vmm_wait *w = data;
	struct api_vm_cells *vc = w->vc;
	vc->waits--;
	if (!vc->closed) {
		int status = -1;
		if (result == 0 && st->exited)
			status = st->signal ? 128 + st->signal : st->exit_code;
		else
			log_warn("vm \"%s\": its cell's executable was deleted; the VMM's end is "
			         "not seen",
			         w->name);
		if (vc->nends < VM_MAX) {
			struct vmm_end *end = &vc->ends[vc->nends++];
			*end = (struct vmm_end){.pid = w->pid, .status = status};
			str_copy(end->name, sizeof(end->name), w->name);
			uint64_t one = 1;
			(void)!write(vc->wake.fd, &one, sizeof(one));
		} else { /* cannot happen (one end per running VMM) */
			log_error("vm \"%s\": too many VMM ends pending; this one is lost",
			          w->name);
		}
	}
	free(w);
}

/* kin's own permitted capabilities: what a plain child would have (this
 * may be less than "all", e.g. in a container). */
static uint64_t own_caps(void)
{
	_cleanup_free_ char *st = NULL;
	unsigned long long caps = 0;
	if (file_read_small("/proc/self/status", 64 * 1024, &st, NULL) < 0)
		return EXEC_CAPS_DEFAULT;
	const char *p = strstr(st, "\nCapPrm:");
	if (!p || sscanf(p + 8, "%llx", &caps) != 1)
		return EXEC_CAPS_DEFAULT;
	return caps;
}

static int fail(struct err *err, const struct err *e, int r, const char *name, const char *what)
{
	return err_set_errno(err, r, "vm \"%s\": %s: %s", name, what,
	                     e->msg[0] ? e->msg : strerror(-r));
}

static int vmm_start(void *data, const char *name, char *const *argv, const char *netns,
                     pid_t *ret_pid, char *where, size_t where_len, struct err *err)
{
	struct api_vm_cells *vc = data;
	const struct cell_limits *limits = vc->limits;
	struct err e = {0};
	char cell[CELLS_PATH_MAX], cwd[PATH_MAX], path_env[PATH_MAX + 8];
	int r;

	vc->limits = NULL;
	if ((r = cell_of(name, cell, sizeof(cell))) < 0)
		return err_set_errno(err, r, "vm \"%s\": cell name too long", name);
	r = cell_create(vc->cells, API_VM_CELLS_PARENT, NULL, &e);
	if (r < 0 && r != -EEXIST)
		return fail(err, &e, r, name, "cell " API_VM_CELLS_PARENT);
	/* A cell left by an earlier VMM of this name (it died on its own and
	 * was kept for its logs) gives way to a fresh one. */
	e = (struct err){0};
	r = cell_delete(vc->cells, cell, false, NULL, NULL, &e);
	if (r < 0 && r != -ENOENT)
		return fail(err, &e, r, name, "the old cell");
	e = (struct err){0};
	r = cell_create(vc->cells, cell, limits, &e);
	if (r < 0)
		return fail(err, &e, r, name, "cell");

	struct exec_spec spec;
	exec_spec_init(&spec);
	spec.argv = argv;
	const char *path = getenv("PATH");
	snprintf(path_env, sizeof(path_env), "PATH=%s",
	         path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	char *env[] = {path_env, NULL};
	spec.env = env;
	spec.cwd = getcwd(cwd, sizeof(cwd)) ? cwd : "/"; /* relative --vm-dir paths */
	spec.caps = own_caps();
	spec.seccomp = EXEC_SECCOMP_NONE;
	spec.log_bytes = VMM_LOG_BYTES;
	if (netns) /* a pod's network: QEMU opens its tap there */
		spec.joins[spec.njoins++] = (struct exec_ns_join){EXEC_NS_NET, netns};
	e = (struct err){0};
	/* Synchronous: vm/'s backend answers with the pid. The VMM's setup is
	 * a plain child's (no namespaces, no root), so the wait is short. */
	r = exec_start_sync(vc->cells, cell, API_VM_CELLS_EXEC, &spec, &e);
	if (r < 0) {
		cell_delete(vc->cells, cell, true, NULL, NULL, NULL);
		return fail(err, &e, r, name, "cannot start the VMM");
	}
	struct exec_status st;
	exec_status(vc->cells, cell, API_VM_CELLS_EXEC, &st, NULL);
	struct vmm_wait *w = calloc(1, sizeof(*w));
	if (w) {
		*w = (struct vmm_wait){.vc = vc, .pid = st.pid};
		str_copy(w->name, sizeof(w->name), name);
		r = exec_wait(vc->cells, cell, API_VM_CELLS_EXEC, on_vmm_end, w, NULL, &e);
	}
	if (!w || r != 1) { /* cannot see its end: do not run it unseen */
		free(w);
		exec_signal(vc->cells, cell, API_VM_CELLS_EXEC, SIGKILL, NULL);
		return err_set_errno(err,
		                     !w       ? -ENOMEM
		                     : r == 0 ? -ECHILD
		                              : r,
		                     "vm \"%s\": cannot wait for the VMM: %s", name,
		                     !w       ? strerror(ENOMEM)
		                     : r == 0 ? "it ended at once"
		                              : e.msg);
	}
	vc->waits++;
	*ret_pid = st.pid;
	snprintf(where, where_len, "%s", cell);
	return 0;
}

static int vmm_signal(void *data, const char *name, int sig)
{
	struct api_vm_cells *vc = data;
	char cell[CELLS_PATH_MAX];
	if (cell_of(name, cell, sizeof(cell)) < 0)
		return -ENAMETOOLONG;
	return exec_signal(vc->cells, cell, API_VM_CELLS_EXEC, sig, NULL);
}

void api_vm_cells_release(struct api_vm_cells *vc, const char *name)
{
	char cell[CELLS_PATH_MAX];
	struct err e = {0};
	if (!vc || vc->closed || cell_of(name, cell, sizeof(cell)) < 0)
		return;
	int r = cell_delete(vc->cells, cell, false, NULL, NULL, &e);
	if (r < 0 && r != -ENOENT)
		log_warn("vm \"%s\": cannot delete its cell: %s", name,
		         e.msg[0] ? e.msg : strerror(-r));
}

static void vmm_release(void *data, const char *name)
{
	api_vm_cells_release(data, name);
}

void api_vm_cells_runner(struct api_vm_cells *vc, struct vm_runner *ret)
{
	*ret = (struct vm_runner){
	    .start = vmm_start, .signal = vmm_signal, .release = vmm_release, .data = vc};
}

void api_vm_cells_set_limits(struct api_vm_cells *vc, const struct cell_limits *l)
{
	if (vc)
		vc->limits = l;
}

void api_vm_cells_close(struct api_vm_cells *vc)
{
	if (!vc)
		return;
	flush(vc); /* ends seen in the loop's last turn */
	vc->closed = true;
}

void api_vm_cells_free(struct api_vm_cells *vc)
{
	if (!vc)
		return;
	if (vc->wake.fd >= 0) {
		ev_del(vc->loop, &vc->wake);
		close(vc->wake.fd);
		vc->wake.fd = -1;
	}
	/* Reports still due would point here: keep it (once per kin, at exit). */
	if (vc->waits == 0)
		free(vc);
}
