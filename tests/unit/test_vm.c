/* vm: the vsock CID allocator, the QEMU argv (vhost-vsock only with a CID),
 * and the manager driving a runner (how the host kin starts VMMs in cells)
 * without a real VMM: start, signal, stale and real end reports, release
 * on replace. Real guests run in tests/vm/. */
#include "vm/vm.h"
#include "lib/state.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

TEST(vm_cid_pick)
{
	uint32_t cid = 0;
	CHECK_EQ(vm_cid_pick(NULL, 0, &cid), 0);
	CHECK_EQ(cid, 3);
	uint32_t a[] = {3, 4, 6};
	CHECK_EQ(vm_cid_pick(a, 3, &cid), 0);
	CHECK_EQ(cid, 5); /* the lowest free one, never a live one */
	uint32_t b[] = {5, 3, 4};
	CHECK_EQ(vm_cid_pick(b, 3, &cid), 0);
	CHECK_EQ(cid, 6);
	uint32_t c[] = {7, 9}; /* freed ones below are taken again */
	CHECK_EQ(vm_cid_pick(c, 2, &cid), 0);
	CHECK_EQ(cid, 3);
	uint32_t full[VM_MAX];
	for (size_t i = 0; i < VM_MAX; i++)
		full[i] = VM_CID_FIRST + (uint32_t)(VM_MAX - 1 - i);
	CHECK_EQ(vm_cid_pick(full, VM_MAX, &cid), 0);
	CHECK_EQ(cid, VM_CID_FIRST + VM_MAX);
}

static const char *argv_find(char **argv, const char *prefix)
{
	for (size_t i = 0; argv[i]; i++)
		if (strncmp(argv[i], prefix, strlen(prefix)) == 0)
			return argv[i];
	return NULL;
}

TEST(vm_qemu_argv_vsock_cid)
{
	struct vm_spec spec;
	struct vm_paths paths;
	char **argv = NULL;
	vm_spec_defaults(&spec);
	strcpy(spec.name, "g1");
	strcpy(spec.kernel, "/k/vmlinuz");
	strcpy(spec.image, "/k/img.cpio");
	CHECK_EQ(vm_paths_for("/run/kin/vm", &spec, &paths), 0);
	CHECK_EQ(vm_backend_qemu.build_argv(&spec, VM_ACCEL_TCG, &paths, &argv), 0);
	CHECK(argv && !argv_find(argv, "vhost-vsock-pci"));
	CHECK_STR(argv_find(argv, "q35,"), "q35,accel=tcg");
	free(argv);
	argv = NULL;
	spec.vsock_cid = 17;
	CHECK_EQ(vm_backend_qemu.build_argv(&spec, VM_ACCEL_TCG, &paths, &argv), 0);
	CHECK_STR(argv ? argv_find(argv, "vhost-vsock-pci") : NULL, "vhost-vsock-pci,guest-cid=17");
	free(argv);
}

struct fake_runner {
	int starts, signals, releases, exits, started, failed, resumes, drops;
	char dropped[NAME_MAX_LEN + 1];
	struct err start_err;
	int last_sig, last_status;
	char released[NAME_MAX_LEN + 1];
	char argv0[64];
};

static int fake_start(void *data, const char *name, char *const *argv, const char *netns,
                      pid_t *ret_pid, char *where, size_t where_len, struct err *e)
{
	struct fake_runner *f = data;
	(void)e, (void)netns;
	f->starts++;
	snprintf(f->argv0, sizeof(f->argv0), "%s", argv[0]);
	*ret_pid = 1000 + f->starts;
	snprintf(where, where_len, "vms/%s", name);
	return 0;
}

static int fake_signal(void *data, const char *name, int sig)
{
	struct fake_runner *f = data;
	(void)name;
	f->signals++;
	f->last_sig = sig;
	return 0;
}

static void fake_release(void *data, const char *name)
{
	struct fake_runner *f = data;
	f->releases++;
	snprintf(f->released, sizeof(f->released), "%s", name);
}

/* Only pid 1001's VMM is the runner's own. */
static int fake_resume(void *data, const char *name, pid_t pid, char *where, size_t where_len,
                       struct err *e)
{
	struct fake_runner *f = data;
	snprintf(where, where_len, "vms/%s", name);
	if (!pid)
		return 0;
	if (pid != 1001)
		return err_set(e, -ESRCH, ERR_FAILED_PRECONDITION, "pid %d is not its VMM",
		               (int)pid);
	f->resumes++;
	return 0;
}

static void fake_drop(void *data, const char *name)
{
	struct fake_runner *f = data;
	f->drops++;
	snprintf(f->dropped, sizeof(f->dropped), "%s", name);
}

static void fake_started(void *data, const struct vm_info *info, const struct err *e)
{
	struct fake_runner *f = data;
	(void)info;
	if (e) {
		f->failed++;
		f->start_err = *e;
	} else {
		f->started++;
	}
}

static void fake_exited(void *data, const struct vm_info *info)
{
	struct fake_runner *f = data;
	f->exits++;
	f->last_status = info->exit_status;
}

/* A manager with the fake runner, in a scratch directory with an empty
 * kernel and image: what the manager tests start VMs from. */
struct fixture {
	char dir[32], kernel[64], image[64], state[64];
	struct fake_runner f;
	struct vm_events ev;
	struct vm_runner runner;
	struct ev_loop *loop;
	struct child_table *children;
	struct vm_manager *m;
	enum log_level level;
	struct vm_spec spec;
};

static bool fixture_setup(struct fixture *x, enum log_level level)
{
	*x = (struct fixture){.dir = "/tmp/kin-unit-vm.XXXXXX"};
	if (!mkdtemp(x->dir))
		return false;
	snprintf(x->kernel, sizeof(x->kernel), "%s/k", x->dir);
	snprintf(x->image, sizeof(x->image), "%s/i", x->dir);
	snprintf(x->state, sizeof(x->state), "%s/state", x->dir);
	close(open(x->kernel, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	close(open(x->image, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	x->ev = (struct vm_events){.started = fake_started, .exited = fake_exited, .data = &x->f};
	x->runner = (struct vm_runner){.start = fake_start,
	                               .signal = fake_signal,
	                               .release = fake_release,
	                               .resume = fake_resume,
	                               .drop = fake_drop,
	                               .data = &x->f};
	x->level = log_get_level();
	log_set_level(level);
	if (ev_loop_new(&x->loop) < 0 || child_table_new(x->loop, &x->children) < 0 ||
	    vm_manager_new(x->loop, x->children, x->state, &x->ev, &x->m) < 0)
		return false;
	vm_manager_set_runner(x->m, &x->runner);
	vm_spec_defaults(&x->spec);
	strcpy(x->spec.name, "g1");
	strcpy(x->spec.kernel, x->kernel);
	strcpy(x->spec.image, x->image);
	x->spec.accel = VM_ACCEL_TCG;
	return true;
}

static bool fixture_teardown(struct fixture *x)
{
	char cmd[128];
	vm_manager_free(x->m);
	child_table_free(x->children);
	ev_loop_free(x->loop);
	log_set_level(x->level);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", x->dir);
	return system(cmd) == 0;
}

/* Runs the loop until the files' check of the last start has answered. */
static void checked(struct fixture *x, int starts_before, int failed_before)
{
	for (int i = 0; i < 200 && x->f.starts == starts_before && x->f.failed == failed_before;
	     i++)
		ev_run_once(x->loop, 20);
}

TEST(vm_manager_runner)
{
	struct fixture x;
	CHECK(fixture_setup(&x, LOG_WARN_)); /* the manager's start/exit lines */
	struct vm_manager *m = x.m;
	struct fake_runner *f = &x.f;
	struct err err = {0};
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	struct vm_info info;
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_STARTING); /* its files are being checked */
	CHECK_EQ(f->starts, 0);
	checked(&x, 0, 0);
	CHECK_EQ(f->starts, 1);
	CHECK_STR(f->argv0, "qemu-system-x86_64");
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.pid, 1001);
	CHECK_STR(info.cell, "vms/g1");
	CHECK_EQ(info.state, VM_STATE_STARTING); /* the runner's setup runs */
	vm_vmm_started(m, "g1", 999, NULL);      /* another pid: stale */
	CHECK_EQ(f->started, 0);
	vm_vmm_started(m, "g1", 1001, NULL);
	CHECK_EQ(f->started, 1);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_RUNNING);
	CHECK_EQ(vm_start(m, &x.spec, &err), -EEXIST);
	CHECK_EQ(err.code, ERR_ALREADY_EXISTS);
	CHECK_STR(err.msg, "vm \"g1\" already exists");
	CHECK_EQ(vm_forget(m, "g1"), -EBUSY);

	CHECK_EQ(vm_kill(m, "g1", SIGTERM), 0);
	CHECK_EQ(f->signals, 1);
	CHECK_EQ(f->last_sig, SIGTERM);
	vm_vmm_exited(m, "g1", 999, 0); /* another pid: stale, ignored */
	vm_vmm_exited(m, "nope", 1001, 0);
	CHECK_EQ(f->exits, 0);
	vm_vmm_exited(m, "g1", 1001, 143);
	CHECK_EQ(f->exits, 1);
	CHECK_EQ(f->last_status, 143);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_EXITED);
	vm_vmm_exited(m, "g1", 1001, 0); /* reported once */
	CHECK_EQ(f->exits, 1);
	CHECK_EQ(vm_kill(m, "g1", SIGKILL), -ESRCH);

	/* Starting the name again replaces the exited VM: release first. */
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	CHECK_EQ(f->releases, 1);
	CHECK_STR(f->released, "g1");
	checked(&x, 1, 0);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.pid, 1002);
	vm_vmm_started(m, "g1", 1002, NULL);
	vm_vmm_exited(m, "g1", 1002, 0);
	CHECK_EQ(vm_forget(m, "g1"), 0);
	CHECK_EQ(f->releases, 2);
	CHECK_EQ(vm_get(m, "g1", &info), -ENOENT);

	/* A setup that fails: the VM is forgotten, its name free. */
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	checked(&x, 2, 0);
	struct err bad;
	err_set(&bad, -ENOENT, ERR_NOT_FOUND, "exec: no qemu");
	vm_vmm_started(m, "g1", 1003, &bad);
	CHECK_EQ(f->failed, 1);
	CHECK_STR(f->start_err.msg, "exec: no qemu");
	CHECK_EQ(vm_get(m, "g1", &info), -ENOENT);
	CHECK_EQ(f->releases, 3);
	vm_vmm_exited(m, "g1", 1003, 127); /* its end: stale now */
	CHECK_EQ(f->exits, 2);

	/* A kernel that is not there: named, no VMM started. */
	char kernel[sizeof(x.spec.kernel)];
	strcpy(kernel, x.spec.kernel);
	strcpy(x.spec.kernel, "/nonexistent/kin-vmlinuz");
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	checked(&x, 3, 1);
	CHECK_EQ(f->starts, 3);
	CHECK_EQ(f->failed, 2);
	CHECK_EQ(f->start_err.code, ERR_NOT_FOUND);
	CHECK_STR(f->start_err.msg,
	          "kernel \"/nonexistent/kin-vmlinuz\": No such file or directory");
	CHECK_EQ(vm_get(m, "g1", &info), -ENOENT);
	strcpy(x.spec.kernel, kernel);

	/* Stopped while its files are checked: it never runs. */
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	CHECK_EQ(vm_kill(m, "g1", SIGKILL), 0);
	CHECK_EQ(f->failed, 3);
	CHECK_EQ(f->start_err.code, ERR_CANCELLED);
	CHECK_EQ(vm_get(m, "g1", &info), -ENOENT);
	for (int i = 0; i < 50 && child_count(x.children); i++)
		ev_run_once(x.loop, 20);
	CHECK_EQ(child_count(x.children), 0);
	CHECK_EQ(f->starts, 3);

	CHECK(fixture_teardown(&x));
}

/* A re-exec: a running and an ended VM go over to another manager; records
 * that lie (hostile, or from a kin run otherwise) are refused, naming why,
 * and what the runner made for them dropped only when it is theirs. */
TEST(vm_restore_records)
{
	struct fixture x, y;
	CHECK(fixture_setup(&x, LOG_ERR_));
	struct err err = {0};
	CHECK_EQ(vm_start(x.m, &x.spec, &err), 0);
	checked(&x, 0, 0);
	vm_vmm_started(x.m, "g1", 1001, NULL);
	strcpy(x.spec.name, "g2");
	CHECK_EQ(vm_start(x.m, &x.spec, &err), 0);
	checked(&x, 1, 0);
	vm_vmm_started(x.m, "g2", 1002, NULL);
	vm_vmm_exited(x.m, "g2", 1002, 3);
	char why[256] = "";
	CHECK(vm_settled(x.m, why, sizeof(why)));
	CHECK_EQ(vm_children(x.m), 0u); /* the runner's, not plain children */

	struct state_w w;
	state_w_init(&w);
	size_t at = state_open(&w, 1);
	vm_save(x.m, "g1", &w, 2);
	vm_save(x.m, "g2", &w, 2);
	vm_save(x.m, "g1", &w, 2); /* a second record of g1 */
	/* By tag (vm/manager.c VS_*): name, state, pid, accel, cpus, memory. */
	struct {
		const char *name;
		uint64_t state, pid, cpus, by_runner;
	} bad[] = {
	    {"bad/name", 0, 1001, 1, 1}, {"g3", 9, 1001, 1, 1}, {"g4", 0, 0, 1, 1},
	    {"g5", 0, 1001, 0, 1},       {"g6", 0, 1001, 1, 0}, {"g7", 0, 4242, 1, 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t v = state_open(&w, 2);
		state_put_str(&w, 1, bad[i].name);
		state_put_u64(&w, 2, bad[i].state);
		state_put_u64(&w, 3, bad[i].pid);
		state_put_u64(&w, 5, bad[i].cpus);
		state_put_u64(&w, 6, 512);
		state_put_u64(&w, 12, bad[i].by_runner);
		state_close(&w, v);
	}
	state_put_u64(&w, 3, 1); /* a number where a record belongs */
	state_close(&w, at);
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	state_w_free(&w);
	struct state_in in;
	CHECK_EQ(state_in_open(fd, &in, NULL), 0);
	close(fd);

	CHECK(fixture_setup(&y, LOG_ERR_));
	struct state_r top = in.top, r;
	struct state_field f, g;
	CHECK(state_next(&top, &f) > 0);
	state_get_record(&f, &r);
	const char *want[] = {NULL,
	                      NULL,
	                      "a second VM of that name",
	                      "its record does not read",
	                      "it was neither running nor ended; its VMM is killed",
	                      "no valid pid; its VMM is killed",
	                      "its record holds a bad number; its VMM is killed",
	                      "its VMM ran as a plain child, and this kin runs VMMs in cells",
	                      "pid 4242 is not its VMM; its VMM is killed",
	                      "its record does not read"};
	size_t n = 0;
	while (state_next(&r, &g) > 0 && n < ARRAY_SIZE(want)) {
		struct vm_info info;
		why[0] = '\0';
		int k = vm_restore(y.m, &g, &info, why, sizeof(why));
		if (want[n])
			CHECK_STR(why, want[n]);
		else
			CHECK_EQ(k, 0);
		n++;
	}
	CHECK_EQ(n, ARRAY_SIZE(want));
	state_in_close(&in);
	struct vm_info info;
	CHECK_EQ(vm_get(y.m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_RUNNING);
	CHECK_EQ(info.pid, 1001);
	CHECK_STR(info.cell, "vms/g1");
	CHECK_EQ(y.f.resumes, 1);
	CHECK_EQ(vm_get(y.m, "g2", &info), 0);
	CHECK_EQ(info.state, VM_STATE_EXITED);
	CHECK_EQ(info.exit_status, 3);
	/* Dropped: the bad state's, the bad number's and the stranger pid's
	 * (their names are valid and theirs); not the second g1's (the
	 * first's cell) nor the plain child's (another kind). */
	CHECK_EQ(y.f.drops, 4);
	CHECK_STR(y.f.dropped, "g7");
	/* The VM goes on as any: its end reported, its name reusable. */
	vm_vmm_exited(y.m, "g1", 1001, 0);
	CHECK_EQ(y.f.exits, 1);
	CHECK_EQ(vm_forget(y.m, "g1"), 0);
	CHECK(fixture_teardown(&y));
	for (int i = 0; i < 50 && child_count(x.children); i++) /* the files' checks */
		ev_run_once(x.loop, 20);
	CHECK(fixture_teardown(&x));
}

/* The VMM's QMP monitor, played by the test: listening at the VM's
 * monitor.sock; the manager's talks run in the loop. */
static int monitor_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (str_copy(sa.sun_path, sizeof(sa.sun_path), path) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One QMP talk answered: the greeting, capabilities, then the command
 * (returned as heard, its line's end cut) answered with reply. */
static void qmp_serve(struct ev_loop *loop, int lfd, const char *reply, char *heard, size_t size)
{
	static const char greet[] = "{\"QMP\": {\"version\": {}, \"capabilities\": []}}\r\n";
	int mon = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(mon >= 0);
	const char *says[] = {greet, "{\"return\": {}}\r\n", reply};
	for (size_t k = 0; k < ARRAY_SIZE(says); k++) {
		CHECK_EQ(send(mon, says[k], strlen(says[k]), MSG_NOSIGNAL),
		         (ssize_t)strlen(says[k]));
		if (k == 2)
			break;
		ssize_t n = 0;
		for (int i = 0; i < 25 && n <= 0; i++) {
			ev_run_once(loop, 20);
			n = recv(mon, heard, size - 1, MSG_DONTWAIT);
		}
		heard[n > 0 ? n : 0] = '\0';
		heard[strcspn(heard, "\n")] = '\0';
	}
	for (int i = 0; i < 5; i++)
		ev_run_once(loop, 20);
	char c;
	CHECK_EQ(read(mon, &c, 1), 0); /* done: kin hung up */
	close(mon);
}

struct told {
	int n;
	enum vm_op op;
	struct err e;
	bool failed;
};

static void on_told(void *data, const char *name, enum vm_op op, const struct err *e)
{
	struct told *t = data;
	(void)name;
	t->n++;
	t->op = op;
	t->failed = e != NULL;
	if (e)
		t->e = *e;
}

TEST(vm_monitor_requests)
{
	struct fixture x;
	CHECK(fixture_setup(&x, LOG_ERR_)); /* the hung monitor's warning is expected */
	struct vm_manager *m = x.m;
	struct ev_loop *loop = x.loop;
	struct err err = {0};
	struct told t = {0};
	char heard[256];
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	CHECK_EQ(vm_request(m, "g1", VM_OP_PAUSE, on_told, &t, &err), -EAGAIN); /* starting */
	checked(&x, 0, 0);
	struct vm_info info;
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	vm_vmm_started(m, "g1", info.pid, NULL);

	/* No monitor at all: refused at once, naming why. */
	CHECK(vm_request_shutdown(m, "g1") < 0);
	CHECK_EQ(vm_request(m, "nope", VM_OP_PAUSE, NULL, NULL, &err), -ENOENT);
	/* Room for snapshot and restore: the QEMU backend has none yet. */
	CHECK_EQ(vm_request(m, "g1", VM_OP_SNAPSHOT, NULL, NULL, &err), -EOPNOTSUPP);
	CHECK_EQ(err.code, ERR_UNIMPLEMENTED);
	CHECK_STR(err.msg, "vm \"g1\": the qemu backend cannot snapshot");

	/* A monitor that never greets: the call returns at once, and the
	 * loop gives up on it later. */
	int lfd = monitor_listen(info.paths.monitor);
	CHECK(lfd >= 0);
	uint64_t t0 = now_monotonic_ns();
	CHECK_EQ(vm_request_shutdown(m, "g1"), 0);
	CHECK((now_monotonic_ns() - t0) / 1000000 < 200);
	CHECK_EQ(vm_request_shutdown(m, "g1"), 0); /* under way: no second talk */
	CHECK_EQ(vm_request(m, "g1", VM_OP_PAUSE, NULL, NULL, &err), -EBUSY);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_STOPPING);
	char why[128];
	CHECK(!vm_settled(m, why, sizeof(why)));
	int hung = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(hung >= 0);
	while ((now_monotonic_ns() - t0) / 1000000 < VM_MONITOR_TIMEOUT_MS + 500)
		ev_run_once(loop, 100);
	char c;
	CHECK_EQ(read(hung, &c, 1), 0); /* the manager hung up on it */
	close(hung);

	/* A monitor that answers: Ctrl-Alt-Del through QMP's send-key. */
	CHECK_EQ(vm_request_shutdown(m, "g1"), 0);
	qmp_serve(loop, lfd, "{\"return\": {}}\r\n", heard, sizeof(heard));
	CHECK_STR(heard, "{\"execute\":\"send-key\",\"arguments\":{\"keys\":[{\"type\":\"qcode\","
	                 "\"data\":\"ctrl\"},{\"type\":\"qcode\",\"data\":\"alt\"},{\"type\":"
	                 "\"qcode\",\"data\":\"delete\"}]}}");

	/* Pause and resume: QMP stop and cont, the owner told, info follows. */
	CHECK_EQ(vm_request(m, "g1", VM_OP_PAUSE, on_told, &t, &err), 0);
	qmp_serve(loop, lfd, "{\"return\": {}}\r\n", heard, sizeof(heard));
	CHECK_STR(heard, "{\"execute\":\"stop\"}");
	CHECK(t.n == 1 && t.op == VM_OP_PAUSE && !t.failed);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK(info.paused);
	CHECK_EQ(vm_request(m, "g1", VM_OP_RESUME, on_told, &t, &err), 0);
	qmp_serve(loop, lfd, "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\"}}\r\n",
	          heard, sizeof(heard));
	CHECK_STR(heard, "{\"execute\":\"cont\"}");
	CHECK(t.n == 2 && t.op == VM_OP_RESUME && t.failed);
	CHECK_STR(t.e.msg, "vm \"g1\": resume: the VMM refused it: GenericError: no");
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK(info.paused); /* refused: still paused */
	CHECK(vm_settled(m, why, sizeof(why)) || strstr(why, "stopping"));
	close(lfd);

	vm_vmm_exited(m, "g1", info.pid, 0);
	CHECK_EQ(vm_request(m, "g1", VM_OP_RESUME, NULL, NULL, &err), -ESRCH);
	CHECK(fixture_teardown(&x));
}

/* A connection to the test's monitor within a second, or -1. */
static int accept_soon(struct ev_loop *loop, int lfd)
{
	for (int i = 0; i < 50; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			return fd;
		ev_run_once(loop, 20);
	}
	return -1;
}

/* The owner's power-off hook, as api/vm.c's: asked, or refused (-1). */
struct poweroffs {
	int asked;
	int answer;
};

static int fake_poweroff(void *data, const char *name)
{
	struct poweroffs *p = data;
	(void)name;
	p->asked++;
	return p->answer;
}

/* The stop escalates in vm/: the owner's power off, then (it failed) the
 * monitor's shutdown, then SIGKILL at the deadline; a nearer deadline
 * wins; the VMM's end ends it. */
TEST(vm_stop_escalates)
{
	struct fixture x;
	CHECK(fixture_setup(&x, LOG_ERR_)); /* the kill's warning is expected */
	struct vm_manager *m = x.m;
	struct err err = {0};
	struct poweroffs p = {0};
	struct vm_stop_hooks hooks = {.poweroff = fake_poweroff, .data = &p};
	vm_manager_set_stop_hooks(m, &hooks);
	CHECK_EQ(vm_stop(m, "nope", 0, &err), -ENOENT);
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	checked(&x, 0, 0);
	struct vm_info info;
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	vm_vmm_started(m, "g1", info.pid, NULL);
	int lfd = monitor_listen(info.paths.monitor);
	CHECK(lfd >= 0 && fd_set_nonblock(lfd, true) == 0);

	/* Asked over the link: nothing else until it fails. */
	uint64_t t0 = now_monotonic_ns();
	CHECK_EQ(vm_stop(m, "g1", 5000, &err), 0);
	CHECK_EQ(p.asked, 1);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	CHECK_EQ(info.state, VM_STATE_STOPPING);
	char why[128];
	CHECK(!vm_settled(m, why, sizeof(why)));
	ev_run_once(x.loop, 20);
	int mon = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(mon < 0); /* no monitor talk yet */
	/* It failed: the monitor's shutdown follows. */
	vm_stop_poweroff_failed(m, "g1");
	mon = accept_soon(x.loop, lfd);
	CHECK(mon >= 0);
	/* A nearer deadline wins; at it, SIGKILL (the monitor silent). */
	CHECK_EQ(vm_stop(m, "g1", 300, &err), 0);
	CHECK_EQ(p.asked, 1); /* one stop, not two */
	for (int i = 0; i < 40 && x.f.signals == 0; i++)
		ev_run_once(x.loop, 20);
	CHECK_EQ(x.f.signals, 1);
	CHECK_EQ(x.f.last_sig, SIGKILL);
	uint64_t ms = (now_monotonic_ns() - t0) / 1000000;
	CHECK(ms >= 250 && ms < 1500);
	vm_vmm_exited(m, "g1", info.pid, 137);
	CHECK_EQ(x.f.exits, 1);
	if (mon >= 0)
		close(mon);

	/* No hook to ask (refused at once): straight to the monitor. */
	p.answer = -1;
	CHECK_EQ(vm_start(m, &x.spec, &err), 0);
	checked(&x, 1, 0);
	CHECK_EQ(vm_get(m, "g1", &info), 0);
	vm_vmm_started(m, "g1", info.pid, NULL);
	close(lfd); /* a start removes the old socket */
	lfd = monitor_listen(info.paths.monitor);
	CHECK(lfd >= 0 && fd_set_nonblock(lfd, true) == 0);
	CHECK_EQ(vm_stop(m, "g1", 5000, &err), 0);
	CHECK_EQ(p.asked, 2);
	mon = accept_soon(x.loop, lfd);
	CHECK(mon >= 0);
	/* The VMM ends: the stop's timer goes, no kill at its deadline. */
	vm_vmm_exited(m, "g1", info.pid, 0);
	CHECK_EQ(vm_stop(m, "g1", 0, &err), -ESRCH);
	CHECK(vm_settled(m, why, sizeof(why)) || strstr(why, "monitor"));
	if (mon >= 0)
		close(mon);
	for (int i = 0; i < 5; i++)
		ev_run_once(x.loop, 20);
	CHECK_EQ(x.f.signals, 1);
	close(lfd);
	CHECK(fixture_teardown(&x));
}

/* The codes api/vm.c used to derive from the errno: the same ones. */
TEST(vm_spec_validate_errors)
{
	struct vm_spec spec;
	struct err e = {0};
	vm_spec_defaults(&spec);
	strcpy(spec.name, "../x");
	CHECK_EQ(vm_spec_validate(&spec, &e), -EINVAL);
	CHECK_EQ(e.code, ERR_INVALID_ARGUMENT);
	strcpy(spec.name, "g");
	spec.memory_mb = 32;
	CHECK_EQ(vm_spec_validate(&spec, &e), -EINVAL);
	CHECK_STR(e.msg, "vm \"g\": memory 32 MiB out of range 64-262144");
	spec.memory_mb = 512;
	CHECK_EQ(vm_spec_validate(&spec, &e), -EINVAL);
	CHECK_STR(e.msg, "kernel: no file given");
	strcpy(spec.kernel, "/nonexistent/vmlinuz");
	strcpy(spec.image, "/proc/self/exe");
	CHECK_EQ(vm_spec_validate(&spec, &e), 0); /* the files: vm_spec_check_files */
	CHECK_EQ(vm_spec_check_files(&spec, &e), -ENOENT);
	CHECK_EQ(e.code, ERR_NOT_FOUND);
	CHECK_STR(e.msg, "kernel \"/nonexistent/vmlinuz\": No such file or directory");
	strcpy(spec.kernel, "/");
	CHECK_EQ(vm_spec_check_files(&spec, &e), -EINVAL);
	CHECK_STR(e.msg, "kernel \"/\": not a regular file");
}

TEST(vm_qemu_argv_share_and_tap)
{
	struct vm_spec spec;
	struct vm_paths paths;
	struct err e = {0};
	char **argv = NULL;
	vm_spec_defaults(&spec);
	strcpy(spec.name, "pod");
	strcpy(spec.kernel, "/proc/self/exe");
	strcpy(spec.image, "/proc/self/exe");
	strcpy(spec.share, "/run/kin/shim/k8s.io/p/pod");
	CHECK_EQ(vm_spec_validate(&spec, &e), -EINVAL); /* no guest path */
	CHECK_STR(e.msg, "vm \"pod\": a share needs a host directory and an absolute guest path "
	                 "without spaces");
	strcpy(spec.share_at, "/run/kin/pod");
	strcpy(spec.tap, "tap0");
	CHECK_EQ(vm_spec_validate(&spec, &e), -EINVAL); /* a tap without its netns */
	CHECK_STR(e.msg, "vm \"pod\": a tap NIC needs its network namespace, a MAC and the "
	                 "guest's ip=");
	strcpy(spec.netns, "/var/run/netns/cni-1");
	strcpy(spec.mac, "02:00:00:00:00:01");
	strcpy(spec.guest_ip, "ip=10.1.0.5::10.1.0.1:255.255.255.0::eth0:off");
	CHECK_EQ(vm_spec_validate(&spec, &e), 0);
	CHECK_EQ(vm_paths_for("/run/kin/vm", &spec, &paths), 0);
	CHECK_EQ(vm_backend_qemu.build_argv(&spec, VM_ACCEL_TCG, &paths, &argv), 0);
	CHECK_STR(argv ? argv_find(argv, "local,id=fs0") : NULL,
	          "local,id=fs0,path=/run/kin/shim/k8s.io/p/pod,security_model=passthrough,"
	          "multidevs=remap");
	CHECK_STR(argv ? argv_find(argv, "virtio-9p-pci") : NULL,
	          "virtio-9p-pci,fsdev=fs0,mount_tag=kinshare");
	CHECK_STR(argv ? argv_find(argv, "tap,") : NULL,
	          "tap,id=net0,ifname=tap0,script=no,downscript=no,vnet_hdr=on");
	CHECK_STR(argv ? argv_find(argv, "virtio-net-pci") : NULL,
	          "virtio-net-pci,netdev=net0,mac=02:00:00:00:00:01");
	const char *append = argv ? argv_find(argv, "console=") : NULL;
	CHECK(append && strstr(append, "ip=10.1.0.5::10.1.0.1:255.255.255.0::eth0:off") &&
	      !strstr(append, VM_GUEST_NET) && strstr(append, " kin.share=/run/kin/pod"));
	/* The guest is told the backend's link and share kinds. */
	CHECK(append &&
	      strstr(append, " kin.link=virtio-serial:org.kin.rpc kin.share.dev=9p:kinshare"));
	CHECK_STR(argv ? argv_find(argv, "virtserialport") : NULL,
	          "virtserialport,bus=vser0.0,chardev=kinlink,name=org.kin.rpc");
	free(argv);
	strcpy(spec.share, "/a,b"); /* a comma would be read as more QEMU options */
	argv = NULL;
	CHECK_EQ(vm_backend_qemu.build_argv(&spec, VM_ACCEL_TCG, &paths, &argv), -EINVAL);
}

/* What the guest's kin reads of the link and share kinds: the backend's
 * words back, QEMU's without them, anything else refused. */
TEST(vm_guest_kinds)
{
	struct vm_guest_kinds k = vm_guest_kinds_default, q = VM_GUEST_KINDS_QEMU;
	char words[160];
	CHECK_EQ(vm_guest_words(&q, false, words, sizeof(words)), 0);
	CHECK_STR(words, "kin.link=virtio-serial:org.kin.rpc");
	CHECK_EQ(vm_guest_words(&q, true, words, 20), -E2BIG);
	CHECK_EQ(vm_guest_option(&k, "kin.link", "virtio-serial:org.other"), 0);
	CHECK_STR(k.link_name, "org.other");
	CHECK_EQ(vm_guest_option(&k, "kin.share.dev", "9p:pod_1"), 0);
	CHECK_STR(k.share_tag, "pod_1");
	CHECK_EQ(vm_guest_words(&k, true, words, sizeof(words)), 0);
	CHECK_STR(words, "kin.link=virtio-serial:org.other kin.share.dev=9p:pod_1");
	static const char *const bad[] = {"virtio-serial", "virtio-serial:",    "vsock:x",
	                                  "9p:a b",        "virtio-serial:a/b", ":x"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK_EQ(vm_guest_option(&k, "kin.link", bad[i]), -EINVAL);
	CHECK_EQ(vm_guest_option(&k, "kin.share.dev", "virtio-serial:x"), -EINVAL);
	char longname[80];
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "9p:", 3);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_EQ(vm_guest_option(&k, "kin.share.dev", longname), -EINVAL);
	CHECK_EQ(vm_guest_option(&k, "kin.other", "x"), -ENOENT);
	CHECK_STR(k.link_name, "org.other"); /* refused values change nothing */
	CHECK_STR(k.share_tag, "pod_1");
}

/* The one option table: values checked the same for every door, errors
 * naming the option and what it wants. */
TEST(vm_options_table)
{
	struct vm_spec spec;
	struct err e = {0};
	vm_spec_defaults(&spec);
	CHECK_EQ(vm_option_set(VM_OPT_MEMORY, &spec, "1G", &e), 0);
	CHECK_EQ(spec.memory_mb, 1024);
	CHECK_EQ(vm_option_set(VM_OPT_MEMORY, &spec, "2048", &e), 0); /* bare: MiB, as QEMU's -m */
	CHECK_EQ(spec.memory_mb, 2048);
	CHECK_EQ(vm_option_set(VM_OPT_MEMORY, &spec, "12K", &e), -EINVAL);
	CHECK_STR(e.msg,
	          "memory '12K': expected a size such as 512M, 1G or 2048 (MiB), from 64M to "
	          "256G");
	CHECK_EQ(vm_option_set(VM_OPT_MEMORY, &spec, "32M", &e), -EINVAL);
	CHECK_EQ(spec.memory_mb, 2048); /* refused values change nothing */
	CHECK_EQ(vm_option_set(VM_OPT_CPUS, &spec, "0", &e), -EINVAL);
	CHECK_EQ(vm_option_set(VM_OPT_CPUS, &spec, "65", &e), -EINVAL);
	CHECK_EQ(vm_option_set(VM_OPT_CPUS, &spec, "4", &e), 0);
	CHECK_EQ(spec.cpus, 4);
	CHECK_EQ(vm_option_set(VM_OPT_ACCEL, &spec, "xen", &e), -EINVAL);
	CHECK_STR(e.msg, "accel 'xen': expected auto, kvm or tcg");
	CHECK_EQ(vm_option_set(VM_OPT_APPEND, &spec, "kin.log=debug", &e), 0);
	CHECK_STR(spec.cmdline, "kin.log=debug");
	CHECK_EQ(vm_option_find("disk", VM_OPT_FOR_CTL), VM_OPT_DISK);
	CHECK_EQ(vm_option_find("disk", VM_OPT_FOR_CONF), -ENOENT); /* no disk in shim.conf */
	CHECK_EQ(vm_option_find("kernel", VM_OPT_FOR_ZONE), VM_OPT_KERNEL);
	char help[2048];
	CHECK_EQ(vm_options_help(VM_OPT_FOR_RUN, help, sizeof(help)), 0);
	CHECK(strstr(help, "  --memory SIZE        memory: 512M, 1G, or a bare number") != NULL);
	CHECK_EQ(vm_options_help(VM_OPT_FOR_RUN, help, 40), -E2BIG);
}
