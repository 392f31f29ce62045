/* vm_cells: each VMM the host kin's Vm service starts runs as executable
 * "vmm" of cell vms/NAME, cloned straight into it: limits apply to QEMU and
 * everything it forks, `kin ctl exec logs vms/NAME vmm` shows QEMU's own
 * stdout/stderr, its start and exit are events on `kin ctl events`, and the
 * end is seen through exec_wait and reported to vm/'s manager. The VMM gets
 * what a plain child of kin has (every capability, no seccomp, kin's PATH
 * and working directory): the cell is for accounting, limits and logs.
 * The VMM's setup runs in the loop like any executable's (kin never waits
 * for it); its verdict and its end are reported from the loop's next turn,
 * not from inside the cells library's callback, so that the report's
 * handlers may delete the cell.
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

/* What the loop's next turn tells vm/'s manager: a start's verdict or an
 * end. At most one start and one end per running VMM, and at most VM_MAX run. */
#define VMM_REPORTS_MAX (2 * VM_MAX)
enum vmm_report_kind { VMM_STARTED, VMM_ENDED };
struct vmm_report {
	enum vmm_report_kind kind;
	char name[NAME_MAX_LEN + 1];
	pid_t pid;
	int status;  /* VMM_ENDED */
	bool failed; /* VMM_STARTED: err says why */
	struct err err;
};

struct api_vm_cells {
	struct cells *cells;
	struct vm_manager *m;
	struct ev_loop *loop;
	struct ev_source wake; /* eventfd: reports to tell */
	const struct cell_limits *limits;
	bool closed;
	size_t waits; /* exec_start and exec_wait reports still due */
	/* VMM_REPORTS_MAX of them (77 KiB), taken at the first VMM started or
	 * resumed: a kin that runs no VM (every zone kin) does not pay it. */
	struct vmm_report *reports;
	size_t nreports;
};

struct vmm_wait {
	struct api_vm_cells *vc;
	char name[NAME_MAX_LEN + 1];
	pid_t pid;
};

static void flush(struct api_vm_cells *vc)
{
	/* Reports may start VMs or end others: take them one at a time. */
	while (vc->nreports && !vc->closed) {
		struct vmm_report rep = vc->reports[0];
		memmove(&vc->reports[0], &vc->reports[1], --vc->nreports * sizeof(vc->reports[0]));
		if (rep.kind == VMM_STARTED)
			vm_vmm_started(vc->m, rep.name, rep.pid, rep.failed ? &rep.err : NULL);
		else
			vm_vmm_exited(vc->m, rep.name, rep.pid, rep.status);
	}
}

/* Before a VMM is started or resumed, so that its reports always find room. */
static int reports_reserve(struct api_vm_cells *vc)
{
	if (!vc->reports)
		vc->reports = calloc(VMM_REPORTS_MAX, sizeof(*vc->reports));
	return vc->reports ? 0 : -ENOMEM;
}

static void report(struct api_vm_cells *vc, const struct vmm_report *rep)
{
	/* cannot happen (see above and reports_reserve) */
	if (!vc->reports || vc->nreports == VMM_REPORTS_MAX) {
		log_error("vm \"%s\": too many VMM reports pending; this one is lost", rep->name);
		return;
	}
	vc->reports[vc->nreports++] = *rep;
	uint64_t one = 1;
	(void)!write(vc->wake.fd, &one, sizeof(one));
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
		struct vmm_report rep = {.kind = VMM_ENDED, .pid = w->pid, .status = -1};
		if (result == 0 && st->exited && !st->status_unknown)
			rep.status = st->signal ? 128 + st->signal : st->exit_code;
		else if (result == 0)
			log_info("vm \"%s\": its VMM, adopted after a killed kin, ended; its "
			         "status is unknown",
			         w->name);
		else
			log_warn("vm \"%s\": its cell's executable was deleted; the VMM's end is "
			         "not seen",
			         w->name);
		str_copy(rep.name, sizeof(rep.name), w->name);
		report(vc, &rep);
	}
	free(w);
}

/* The VMM's setup reached execve (then its end is waited for) or failed. */
static void on_vmm_started(int result, const struct err *err, void *data)
{
	struct vmm_wait *w = data;
	struct api_vm_cells *vc = w->vc;
	char cell[CELLS_PATH_MAX];
	struct err e = {0};
	vc->waits--;
	if (vc->closed) {
		free(w);
		return;
	}
	struct vmm_report rep = {.kind = VMM_STARTED, .pid = w->pid};
	str_copy(rep.name, sizeof(rep.name), w->name);
	snprintf(cell, sizeof(cell), API_VM_CELLS_PARENT "/%s", w->name);
	int r = result;
	if (r == 0) {
		r = exec_wait(vc->cells, cell, API_VM_CELLS_EXEC, on_vmm_end, w, NULL, &e);
		if (r == 1) {
			vc->waits++;
			report(vc, &rep);
			return; /* w is on_vmm_end's now */
		}
		/* cannot see its end: do not run it unseen */
		exec_signal(vc->cells, cell, API_VM_CELLS_EXEC, SIGKILL, NULL);
		err_set_errno(&rep.err, r == 0 ? -ECHILD : r,
		              "vm \"%s\": cannot wait for the VMM: %s", w->name,
		              r == 0 ? "it ended at once" : e.msg);
	} else {
		err_set_errno(&rep.err, r, "vm \"%s\": cannot start the VMM: %s", w->name,
		              err && err->msg[0] ? err->msg : strerror(-r));
		if (err && err->code)
			rep.err.code = err->code;
	}
	rep.failed = true;
	report(vc, &rep);
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

/* The VM's cell, with the limits given for this start, made while vm_start
 * runs; the VMM goes into it once its files are checked. */
static int vmm_prepare(void *data, const char *name, struct err *err)
{
	struct api_vm_cells *vc = data;
	const struct cell_limits *limits = vc->limits;
	struct err e = {0};
	char cell[CELLS_PATH_MAX];
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
	return r < 0 ? fail(err, &e, r, name, "cell") : 0;
}

/* Clones the VMM into its cell; its setup's verdict comes later, from
 * the loop (on_vmm_started, then flush). */
static int vmm_start(void *data, const char *name, char *const *argv, const char *netns,
                     pid_t *ret_pid, char *where, size_t where_len, struct err *err)
{
	struct api_vm_cells *vc = data;
	struct err e = {0};
	char cell[CELLS_PATH_MAX], cwd[PATH_MAX], path_env[PATH_MAX + 8];
	int r;

	if ((r = cell_of(name, cell, sizeof(cell))) < 0)
		return err_set_errno(err, r, "vm \"%s\": cell name too long", name);
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
	struct vmm_wait *w = reports_reserve(vc) < 0 ? NULL : calloc(1, sizeof(*w));
	if (!w)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "vm \"%s\": out of memory",
		               name);
	w->vc = vc;
	str_copy(w->name, sizeof(w->name), name);
	r = exec_start(vc->cells, cell, API_VM_CELLS_EXEC, &spec, on_vmm_started, w, &e);
	if (r < 0) {
		free(w);
		return fail(err, &e, r, name, "cannot start the VMM");
	}
	vc->waits++;
	struct exec_status st;
	exec_status(vc->cells, cell, API_VM_CELLS_EXEC, &st, NULL);
	w->pid = st.pid;
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

/* After a re-exec: the VMM of vms/NAME is the cells library's executable
 * again; its end is waited for as after a start. */
static int vmm_resume(void *data, const char *name, pid_t pid, char *where, size_t where_len,
                      struct err *err)
{
	struct api_vm_cells *vc = data;
	char cell[CELLS_PATH_MAX];
	struct exec_status st;
	struct err e = {0};
	if (cell_of(name, cell, sizeof(cell)) < 0)
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "its cell name is too long");
	snprintf(where, where_len, "%s", cell);
	if (!pid)
		return 0;
	if (reports_reserve(vc) < 0)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	int r = exec_status(vc->cells, cell, API_VM_CELLS_EXEC, &st, &e);
	if (r < 0)
		return err_set(err, r, ERR_NOT_FOUND, "no executable %s/%s was taken over", cell,
		               API_VM_CELLS_EXEC);
	if (st.pid != pid)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION,
		               "its VMM was pid %d, %s/%s is pid %d", (int)pid, cell,
		               API_VM_CELLS_EXEC, (int)st.pid);
	struct vmm_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "out of memory");
	*w = (struct vmm_wait){.vc = vc, .pid = pid};
	str_copy(w->name, sizeof(w->name), name);
	r = exec_wait(vc->cells, cell, API_VM_CELLS_EXEC, on_vmm_end, w, &st, &e);
	if (r == 1) {
		vc->waits++;
		return 0;
	}
	free(w);
	if (r < 0)
		return err_set(err, r, ERR_INTERNAL, "cannot wait for its VMM: %s", e.msg);
	/* It ended while no kin listened: told from the loop, as any end. */
	struct vmm_report rep = {.kind = VMM_ENDED,
	                         .pid = pid,
	                         .status = !st.exited || st.status_unknown ? -1
	                                   : st.signal                     ? 128 + st.signal
	                                                                   : st.exit_code};
	str_copy(rep.name, sizeof(rep.name), name);
	report(vc, &rep);
	return 0;
}

/* A VM that is not taken over: its VMM and everything in its cell die,
 * the cell goes once empty. */
static void vmm_drop(void *data, const char *name)
{
	struct api_vm_cells *vc = data;
	char cell[CELLS_PATH_MAX];
	if (cell_of(name, cell, sizeof(cell)) < 0)
		return;
	cell_kill(vc->cells, cell, NULL);
	cell_delete(vc->cells, cell, true, NULL, NULL, NULL);
}

struct sweep {
	char (*names)[NAME_MAX_LEN + 1];
	size_t n, cap;
};

static int sweep_visit(const struct cell_info *info, void *data)
{
	struct sweep *sw = data;
	const char *name = info->path + STRLEN(API_VM_CELLS_PARENT "/");
	if (info->depth != 2 || sw->n == sw->cap)
		return 0;
	str_copy(sw->names[sw->n++], sizeof(sw->names[0]), name);
	return 0;
}

void api_vm_cells_sweep(struct api_vm_cells *vc, const char *how)
{
	/* At most VM_MAX VMs' cells are there, and a few strangers more. */
	char names[2 * VM_MAX][NAME_MAX_LEN + 1];
	struct sweep sw = {.names = names, .cap = ARRAY_SIZE(names)};
	struct vm_info info;
	if (!vc || cell_list(vc->cells, API_VM_CELLS_PARENT, sweep_visit, &sw, NULL) < 0)
		return;
	for (size_t i = 0; i < sw.n; i++) {
		if (vm_get(vc->m, names[i], &info) == 0)
			continue;
		log_warn("%s: cell " API_VM_CELLS_PARENT "/%s, left by the previous kin and "
		         "named by no VM record (one still starting), is killed "
		         "and removed",
		         how, names[i]);
		vmm_drop(vc, names[i]);
	}
}

void api_vm_cells_runner(struct api_vm_cells *vc, struct vm_runner *ret)
{
	*ret = (struct vm_runner){.prepare = vmm_prepare,
	                          .start = vmm_start,
	                          .signal = vmm_signal,
	                          .release = vmm_release,
	                          .resume = vmm_resume,
	                          .drop = vmm_drop,
	                          .data = vc};
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
	if (vc->waits == 0) {
		free(vc->reports);
		free(vc);
	}
}
