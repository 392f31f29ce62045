/* task_create: a task's Create. The pod's zone comes first (made by the
 * sandbox, or by the first container when containerd runs a container
 * without a pod); then a container's rootfs is mounted where containerd
 * expects it, bound into the pod directory with its FIFOs and the sources
 * of its bind mounts, its config.json rewritten for the zone (paths as the
 * zone sees them, the sandbox's namespaces as the zone's own) and checked,
 * and its cell made in the zone kin. Anything that fails undoes the rest. */
#include "shim/task-int.h"
#include "oci/oci.h"
#include "proto/cells.pb-c.h"
#include "zone/zone.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the pod's zone ---------------------------------------------------------------- */

static void create_container(struct task *t, const Kin__Shim__CreateTaskRequest *m);

void task_zone_ready(int result, const struct err *err, void *data)
{
	struct shim_task *svc = data;
	struct task *t, *next;
	if (result < 0) {
		svc->zone = ZN_GONE;
		log_warn("shim: the pod's zone did not start: %s",
		         err && err->msg[0] ? err->msg : strerror(-result));
		list_for_each_safe(t, next, &svc->tasks, node) {
			if (!t->create_call)
				continue;
			struct rpc_call *call = t->create_call;
			t->create_call = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			rpc_call_fail(call, ERR_UNAVAILABLE, "task %s: the pod's zone: %s", t->id,
			              err && err->msg[0] ? err->msg : strerror(-result));
			task_free(t);
		}
		sandbox_zone_ready(svc, result, err);
		return;
	}
	struct zone_info info;
	svc->zone = ZN_READY;
	if (svc->pods.info(svc->pods.impl, SHIM_ZONE_NAME, &info) == 0) {
		svc->zone_pid = info.pid;
		if (!svc->vm) /* a VM's cells are the guest's, not below its VMM's */
			cells_cgroup_dir(svc->cells, info.cell, svc->zone_cgroup,
			                 sizeof(svc->zone_cgroup));
	}
	log_info("shim: pod zone ready, pid %d", (int)svc->zone_pid);
	list_for_each_safe(t, next, &svc->tasks, node) {
		if (!t->create_call)
			continue;
		if (!t->sandbox) {
			Kin__Shim__CreateTaskRequest *req = t->create;
			t->create = NULL;
			create_container(t, req);
			kin__shim__create_task_request__free_unpacked(req, NULL);
			continue;
		}
		t->init.pid = (uint32_t)svc->zone_pid;
		Kin__Shim__CreateTaskResponse out = KIN__SHIM__CREATE_TASK_RESPONSE__INIT;
		out.pid = t->init.pid;
		struct rpc_call *call = t->create_call;
		t->create_call = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		rpc_call_reply(call, &out.base);
		Kin__Shim__TaskCreate ev = KIN__SHIM__TASK_CREATE__INIT;
		ev.container_id = t->id;
		ev.bundle = t->bundle;
		ev.pid = t->init.pid;
		task_publish(svc, "/tasks/create", "containerd.events.TaskCreate", &ev.base);
	}
	sandbox_zone_ready(svc, 0, NULL);
}

/* The zone ended: the sandbox with the zone kin's status, every container
 * process still running killed with it. */
void task_zone_gone(int status, void *data)
{
	struct shim_task *svc = data;
	struct task *t;
	svc->zone = ZN_GONE;
	log_info("shim: pod zone gone, status %d", status);
	list_for_each(t, &svc->tasks, node) {
		struct tproc *p;
		list_for_each(p, &t->execs, node)
			if (p->state != T_STOPPED)
				proc_exited(p, 128 + SIGKILL);
		if (t->init.state != T_STOPPED)
			proc_exited(&t->init, t->sandbox ? (uint32_t)status : 128 + SIGKILL);
	}
	sandbox_zone_gone(svc, status);
}

/* The zone for the pod, from the sandbox's spec (CRI) or the first
 * container's (ctr run): its network namespace if the spec names one, its
 * hostname, its PID and IPC namespaces or the host's, its sysctls, the
 * pod directory shared into it. */
int task_zone_start(struct shim_task *svc, const struct oci_spec *o, struct err *err)
{
	if (svc->zone != ZN_NONE)
		return svc->zone == ZN_GONE ? err_set(err, -EHOSTDOWN, ERR_FAILED_PRECONDITION,
		                                      "the pod's zone has ended")
		                            : 0;
	int r = shim_pod_dir_setup(svc->cfg->pod_dir, err);
	if (r < 0)
		return r;
	if (svc->vm) { /* the Sandbox API's sandboxes are checked here too */
		r = o ? task_vm_spec_check(o, true, "(the pod's sandbox)", err) : 0;
		if (r == 0)
			r = task_vm_zone_start(svc, o, err);
		if (r == 0)
			svc->zone = ZN_STARTING;
		return r;
	}
	struct zone_spec spec = {
	    .share_src = svc->cfg->pod_dir, .share_dst = SHIM_POD_IN_ZONE, .share_peer = true};
	str_copy(spec.name, sizeof(spec.name), SHIM_ZONE_NAME);
	if (o && o->ns[OCI_NS_NET] && o->ns_path[OCI_NS_NET])
		spec.netns = o->ns_path[OCI_NS_NET];
	if (o && o->hostname && str_is_hostname(o->hostname))
		spec.hostname = o->hostname;
	/* hostIPC: the spec has no IPC namespace; the pod's sysctls are the
	 * zone's (its containers stay in its namespaces). */
	spec.host_ipc = o && !o->ns[OCI_NS_IPC];
	spec.host_pid = o && !o->ns[OCI_NS_PID];
	spec.sysctls = o ? o->sysctl : NULL;
	r = svc->pods.create(svc->pods.impl, &spec, task_zone_ready, task_zone_gone, svc, err);
	if (r < 0)
		return r;
	svc->zone = ZN_STARTING;
	return 0;
}

/* ---- Create --------------------------------------------------------------------------- */

static void create_cancelled(struct rpc_call *call, void *data)
{
	struct task *t = data;
	(void)call;
	t->create_call = NULL;
}

/* Binds a bind mount's source (CRI's /etc/hosts, resolv.conf, the pod's
 * /dev/shm, volumes) into the container's directory as mN, the spec then
 * naming it where the zone sees it. */
static int bind_for_zone(size_t i, const char *source, char *buf, size_t size, void *data,
                         struct err *err)
{
	struct task *t = data;
	char zdir[PATH_MAX], dst[PATH_MAX + 32];
	snprintf(dst, sizeof(dst), "%s/m%zu", t->dir, i);
	int r = shim_bind(source, dst, err);
	if (r < 0)
		return r;
	proc_dir(&t->init, true, zdir, sizeof(zdir));
	snprintf(buf, size, "%s/m%zu", zdir, i);
	return 0;
}

/* The container's config.json for the zone: namespaces that name the
 * sandbox's (/proc/SANDBOXPID/ns/X, which CRI writes) are the zone's own,
 * so the container stays in them rather than join by a path the zone
 * cannot see; bind mounts' sources are where the zone sees them. */
static int config_for_zone(struct task *t, const char *bundle, const char *dir, struct err *err)
{
	char path[PATH_MAX + 16], own[64];
	struct oci_json *j = NULL;
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	int r = oci_json_load(path, &j, err);
	if (r < 0)
		return r;
	snprintf(own, sizeof(own), "/proc/%d/ns/", (int)t->svc->zone_pid);
	oci_json_drop_namespaces(j, own);
	r = oci_json_move_binds(j, path, bind_for_zone, t, err);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/config.json", dir);
		r = oci_json_save(j, path, err);
	}
	oci_json_free(j);
	return r;
}

int proc_dir(const struct tproc *p, bool in_zone, char *buf, size_t size)
{
	const char *base = in_zone ? SHIM_POD_IN_ZONE : p->t->svc->cfg->pod_dir;
	int n = p->exec_id[0] ? snprintf(buf, size, "%s/%s/x-%s", base, p->t->cell, p->exec_id)
	                      : snprintf(buf, size, "%s/%s", base, p->t->cell);
	return n < (int)size ? 0 : -ENAMETOOLONG;
}

void proc_unmount(struct tproc *p)
{
	char dir[PATH_MAX];
	if (proc_dir(p, false, dir, sizeof(dir)) == 0)
		shim_unmount_entries(dir);
}

/* Binds containerd's stdio paths of p into its directory (made). */
int proc_bind_stdio(struct tproc *p, struct err *err)
{
	static const char *const names[] = {"stdin", "stdout", "stderr"};
	char dir[PATH_MAX], path[PATH_MAX + 16];
	int r = proc_dir(p, false, dir, sizeof(dir));
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "task %s: path too long", p->t->id);
	if (mkdir(dir, 0711) < 0 && errno != EEXIST)
		return err_set_errno(err, -errno, "%s: %m", dir);
	for (int i = 0; r == 0 && i < 3; i++) {
		if (!p->stdio[i][0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		r = shim_bind(p->stdio[i], path, err);
	}
	return r;
}

/* Undoes create_prepare: the execs' and the container's binds, the pod
 * directory entries, the rootfs. */
void container_unmount(struct task *t)
{
	struct tproc *p;
	list_for_each(p, &t->execs, node)
		proc_unmount(p);
	proc_unmount(&t->init);
	if (t->rootfs_mounted) {
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/rootfs", t->bundle);
		shim_unmount_all(path);
		t->rootfs_mounted = false;
	}
}

static int create_prepare(struct task *t, const Kin__Shim__CreateTaskRequest *m, struct err *err)
{
	char rootfs[PATH_MAX + 8], path[PATH_MAX + 16];
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", t->bundle);
	if (m->n_rootfs) {
		struct shim_mount mounts[SHIM_MOUNTS_MAX];
		for (size_t i = 0; i < m->n_rootfs && i < SHIM_MOUNTS_MAX; i++)
			mounts[i] = (struct shim_mount){m->rootfs[i]->type, m->rootfs[i]->source,
			                                (const char *const *)m->rootfs[i]->options,
			                                m->rootfs[i]->n_options};
		int r = shim_rootfs_mount(mounts, m->n_rootfs, rootfs, err);
		if (r < 0)
			return r;
		t->rootfs_mounted = true;
	}
	/* kin-vm: the FIFOs stay here, relayed (a FIFO over 9p is the guest's own) */
	int r = t->svc->vm ? mkdir(t->dir, 0711) < 0 && errno != EEXIST
	                         ? err_set_errno(err, -errno, "%s: %m", t->dir)
	                         : 0
	                   : proc_bind_stdio(&t->init, err);
	if (r == 0) {
		snprintf(path, sizeof(path), "%s/rootfs", t->dir);
		r = shim_bind(rootfs, path, err);
	}
	/* The spec was checked whole at Create (serve_create); the zone
	 * reads this rewrite of it at Start. */
	if (r == 0)
		r = config_for_zone(t, t->bundle, t->dir, err);
	return r;
}

static void cell_created(const struct err *st, const uint8_t *payload, size_t len, void *data)
{
	struct zref *z = data;
	struct task *t = task_find(z->svc, z->id);
	(void)payload, (void)len;
	free(z);
	if (!t || !t->create_call)
		return;
	struct rpc_call *call = t->create_call;
	t->create_call = NULL;
	rpc_call_on_cancel(call, NULL, NULL);
	if (st->code != ERR_OK) {
		rpc_call_fail(call, st->code, "task %s: cell in the pod's zone: %s", t->id,
		              st->msg);
		container_unmount(t);
		task_free(t);
		return;
	}
	if (!t->svc->vm)
		proc_hold(&t->init);
	Kin__Shim__CreateTaskResponse out = KIN__SHIM__CREATE_TASK_RESPONSE__INIT;
	rpc_call_reply(call, &out.base);
	Kin__Shim__TaskIO io = KIN__SHIM__TASK_IO__INIT;
	io.stdin = t->init.stdio[0];
	io.stdout = t->init.stdio[1];
	io.stderr = t->init.stdio[2];
	Kin__Shim__TaskCreate ev = KIN__SHIM__TASK_CREATE__INIT;
	ev.container_id = t->id;
	ev.bundle = t->bundle;
	ev.io = &io;
	task_publish(t->svc, "/tasks/create", "containerd.events.TaskCreate", &ev.base);
}

/* With the zone ready: mounts and config, then the cell in the zone. */
static void create_container(struct task *t, const Kin__Shim__CreateTaskRequest *m)
{
	struct err err = {0};
	struct rpc_call *call = t->create_call;
	int r = m ? create_prepare(t, m, &err)
	          : err_set(&err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "task %s: out of memory", t->id);
	if (r == 0) {
		Kin__V1__CreateCellRequest in = KIN__V1__CREATE_CELL_REQUEST__INIT;
		in.path = t->cell;
		r = zone_call(t->svc, "kin.v1.Cells", "Create", &in.base, cell_created,
		              zref_new(t->svc, t->id, NULL), NULL);
		if (r < 0)
			err_set(&err, r, ERR_UNAVAILABLE, "task %s: the pod's zone: %s", t->id,
			        strerror(-r));
	}
	if (r < 0) {
		t->create_call = NULL;
		rpc_call_on_cancel(call, NULL, NULL);
		rpc_call_fail_err(call, &err, r);
		container_unmount(t);
		task_free(t);
	}
}

static int create_check(struct shim_task *svc, struct rpc_call *call,
                        const Kin__Shim__CreateTaskRequest *m)
{
	if (!cell_name_valid(m->id))
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "task \"%.80s\": an id is 1-%d of [A-Za-z0-9_.-]", m->id,
		                     NAME_MAX_LEN);
	if (task_find(svc, m->id))
		return rpc_call_fail(call, ERR_ALREADY_EXISTS, "task %s already exists", m->id);
	if (svc->ntasks >= TASKS_MAX)
		return rpc_call_fail(call, ERR_RESOURCE_EXHAUSTED, "task %s: this pod has %d tasks",
		                     m->id, TASKS_MAX);
	if (m->bundle[0] != '/' || strlen(m->bundle) > PATH_MAX - 64)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "task %s: bundle \"%.200s\" is not an absolute path", m->id,
		                     m->bundle);
	if (m->terminal)
		return rpc_call_fail(call, ERR_UNIMPLEMENTED,
		                     "task %s: terminals are not supported by kin's shim", m->id);
	if (m->checkpoint[0] || m->parent_checkpoint[0])
		return rpc_call_fail(call, ERR_UNIMPLEMENTED,
		                     "task %s: checkpoint/restore is not supported by kin's shim",
		                     m->id);
	if (m->n_rootfs > SHIM_MOUNTS_MAX)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "task %s: %zu rootfs mounts, at most %d", m->id, m->n_rootfs,
		                     SHIM_MOUNTS_MAX);
	const char *io[3] = {m->stdin, m->stdout, m->stderr};
	for (int i = 0; i < 3; i++)
		if (io[i][0] && (io[i][0] != '/' || strlen(io[i]) >= PATH_MAX))
			return rpc_call_fail(
			    call, ERR_INVALID_ARGUMENT,
			    "task %s: stdio \"%.200s\": kin's shim takes FIFO or file "
			    "paths only",
			    m->id, io[i]);
	return 1;
}

static bool annotation_is(const struct oci_spec *o, const char *key, const char *value)
{
	size_t n = strlen(key);
	for (char **a = o->annotations; a && *a; a++)
		if (strncmp(*a, key, n) == 0 && (*a)[n] == '=')
			return strcmp(*a + n + 1, value) == 0;
	return false;
}

int task_serve_create(struct rpc_call *call, const ProtobufCMessage *in, void *data)
{
	struct shim_task *svc = data;
	const Kin__Shim__CreateTaskRequest *m = (const Kin__Shim__CreateTaskRequest *)in;
	int r = create_check(svc, call, m);
	if (r <= 0)
		return r;
	struct err err = {0};
	struct oci_spec *o = NULL;
	r = oci_spec_load(m->bundle, &o, &err);
	if (r < 0)
		return rpc_call_fail_err(call, &err, r);
	bool sandbox = annotation_is(o, "io.kubernetes.cri.container-type", "sandbox");
	bool cri_container = annotation_is(o, "io.kubernetes.cri.container-type", "container");
	if (svc->vm && (r = task_vm_spec_check(o, sandbox, m->id, &err)) < 0) {
		oci_spec_free(o);
		return rpc_call_fail_err(call, &err, r);
	}
	if (cri_container && svc->zone == ZN_NONE) {
		oci_spec_free(o);
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "task %s: a container of a pod whose sandbox is not here",
		                     m->id);
	}
	if (sandbox && svc->zone != ZN_NONE) {
		oci_spec_free(o);
		return rpc_call_fail(call, ERR_ALREADY_EXISTS, "task %s: this pod has its sandbox",
		                     m->id);
	}
	struct task *t = calloc(1, sizeof(*t));
	if (!t) {
		oci_spec_free(o);
		return -ENOMEM;
	}
	t->svc = svc;
	t->oom_wd = -1;
	str_copy(t->id, sizeof(t->id), m->id);
	str_copy(t->bundle, sizeof(t->bundle), m->bundle);
	t->sandbox = sandbox;
	proc_init(&t->init, t, NULL);
	str_copy(t->init.kname, sizeof(t->init.kname), "init");
	const char *io[3] = {m->stdin, m->stdout, m->stderr};
	for (int i = 0; i < 3; i++)
		str_copy(t->init.stdio[i], sizeof(t->init.stdio[i]), io[i]);
	list_init(&t->execs);
	/* A cell per container, named by its id (create_check: a cell name). */
	str_copy(t->cell, sizeof(t->cell), m->id);
	r = str_copy(t->dir, sizeof(t->dir), svc->cfg->pod_dir);
	if (r == 0 && strlen(t->dir) + strlen(t->cell) + 2 < sizeof(t->dir))
		strcat(strcat(t->dir, "/"), t->cell);
	else
		r = err_set(&err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT, "task %s: path too long",
		            m->id);
	if (r == 0)
		r = task_zone_start(svc, o, &err);
	oci_spec_free(o);
	if (r < 0) {
		free(t);
		return rpc_call_fail_err(call, &err, r);
	}
	list_append(&svc->tasks, &t->node);
	svc->ntasks++;
	t->create_call = call;
	rpc_call_on_cancel(call, create_cancelled, t);
	if (svc->zone == ZN_READY) { /* never a sandbox: it makes the zone */
		create_container(t, m);
		return 0;
	}
	/* The zone is on its way: zone_ready goes on. */
	if (!sandbox) { /* a copy of the request, kept until then */
		uint8_t *buf = malloc(protobuf_c_message_get_packed_size(in));
		if (buf) {
			size_t n = protobuf_c_message_pack(in, buf);
			t->create = kin__shim__create_task_request__unpack(NULL, n, buf);
			free(buf);
		}
		if (!t->create) {
			t->create_call = NULL;
			rpc_call_on_cancel(call, NULL, NULL);
			task_free(t);
			return -ENOMEM;
		}
	}
	return 0;
}
