/* exec_bundle: Exec/Start of a runtime-spec bundle (config.json and its
 * root) — what runc and crun run, as kin runs it: the process, root,
 * hostname, mounts, namespaces (new, or net/ipc/uts/cgroup joined by
 * path), id maps, sysctls, masked and read-only paths (the usual set when
 * the bundle names none), capabilities set by set, rlimits, oom_score_adj;
 * resources become the cell's limits. An argv given replaces the bundle's
 * args. The bundle is read in PID 1: a small file (4 MiB at most) on kin's
 * machine.
 *
 * Device rules (linux.resources.devices) become the cell's device program
 * (cells/devices.c), kin's minimal /dev always allowed; a bundle with no
 * rules gets that program too, so a CAP_MKNOD it grants makes no usable
 * node beyond those. */
#include "api/cells-int.h"
#include "oci/oci.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mount.h>

struct bundle_buf {
	struct oci_spec *o;
	struct exec_mount mounts[OCI_SPEC_LIST_MAX];
	struct exec_device_rule *devices; /* the bundle's rules, then its nodes' */
	struct exec_device_node *nodes;
	char join_paths[EXEC_JOINS_MAX][64];
};

static void bundle_buf_free(struct bundle_buf **bb)
{
	if (!*bb)
		return;
	oci_spec_free((*bb)->o);
	free((*bb)->devices);
	free((*bb)->nodes);
	free(*bb);
}

/* Whether the bundle's rules already allow the node whole (rwm): the last
 * rule that matches decides. A privileged container's single allow-all
 * rule covers every node of the host's /dev, so the device program does
 * not grow with the host. */
static bool rules_allow(const struct oci_spec *o, const struct oci_device_node *n)
{
	for (size_t i = o->ndevices; i-- > 0;) {
		const struct oci_device_rule *d = &o->devices[i];
		if ((d->type != 'a' && d->type != n->type) ||
		    (d->major != -1 && d->major != n->major) ||
		    (d->minor != -1 && d->minor != n->minor))
			continue;
		return d->allow && d->access == 7;
	}
	return false;
}

/* linux.devices: the nodes made, and allowed above the bundle's rules (runc
 * does the same) where those do not allow them already. */
static int device_nodes(struct bundle_buf *bb, struct exec_spec *s)
{
	const struct oci_spec *o = bb->o;
	bb->devices = calloc(o->ndevices + o->nnodes + 1, sizeof(*bb->devices));
	bb->nodes = calloc(o->nnodes + 1, sizeof(*bb->nodes));
	if (!bb->devices || !bb->nodes)
		return -ENOMEM;
	for (size_t i = 0; i < o->ndevices; i++)
		bb->devices[i] = (struct exec_device_rule){o->devices[i].allow, o->devices[i].type,
		                                           o->devices[i].major, o->devices[i].minor,
		                                           o->devices[i].access};
	size_t nd = o->ndevices;
	for (size_t i = 0; i < o->nnodes; i++) {
		const struct oci_device_node *n = &o->nodes[i];
		bb->nodes[i] = (struct exec_device_node){
		    n->path, n->type, (uint32_t)n->major, (uint32_t)n->minor, n->mode,
		    n->uid,  n->gid};
		if (n->type != 'p' && !rules_allow(o, n))
			bb->devices[nd++] =
			    (struct exec_device_rule){true, n->type, n->major, n->minor, 7};
	}
	s->device_nodes = bb->nodes;
	s->ndevice_nodes = o->nnodes;
	/* Confined either way: a bundle without rules gets kin's /dev only. */
	s->devices_set = true;
	s->devices = bb->devices;
	s->ndevices = nd;
	return 0;
}

static int ns_bits(const struct oci_spec *o, struct exec_spec *s, struct err *err)
{
	static const uint32_t bit[OCI_NS_COUNT] = {
	    [OCI_NS_PID] = EXEC_NS_PID,      [OCI_NS_NET] = EXEC_NS_NET,
	    [OCI_NS_MNT] = EXEC_NS_MNT,      [OCI_NS_IPC] = EXEC_NS_IPC,
	    [OCI_NS_UTS] = EXEC_NS_UTS,      [OCI_NS_USER] = EXEC_NS_USER,
	    [OCI_NS_CGROUP] = EXEC_NS_CGROUP};
	s->namespaces = 0;
	for (int k = 0; k < OCI_NS_COUNT; k++) {
		if (!o->ns[k])
			continue;
		if (!o->ns_path[k]) {
			s->namespaces |= bit[k];
			continue;
		}
		if (k == OCI_NS_MNT || k == OCI_NS_USER)
			return err_set(
			    err, -ENOTSUP, ERR_UNIMPLEMENTED,
			    "config.json: linux.namespaces: joining a %s namespace by path "
			    "is not supported",
			    k == OCI_NS_MNT ? "mount" : "user");
		s->joins[s->njoins++] = (struct exec_ns_join){bit[k], o->ns_path[k]};
	}
	if (!(s->namespaces & EXEC_NS_MNT))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "config.json: linux.namespaces: kin needs a mount namespace to "
		               "pivot_root into root.path");
	return 0;
}

/* A runtime spec's resources as the cell's limits (cgroup v2 keys). */
static int limit_set(void *limits, const char *file, const char *value, struct err *err)
{
	return cell_limit_parse(limits, file, value, err);
}

static int spec_limits(const struct oci_spec *o, struct cell_limits *l, struct err *err)
{
	memset(l, 0, sizeof(*l));
	return oci_cgroup_limits(o, limit_set, l, err);
}

static int fill(const Kin__V1__StartRequest *req, struct bundle_buf *bb,
                struct api_cells_spec_buf *b, struct err *err)
{
	const struct oci_spec *o = bb->o;
	struct exec_spec *s = &b->s;
	if (!req->spec->n_argv)
		s->argv = o->args;
	if (!req->spec->n_env)
		s->env = o->env;
	s->cwd = o->cwd;
	s->uid = o->uid;
	s->gid = o->gid;
	memcpy(s->groups, o->groups, o->ngroups * sizeof(uint32_t));
	s->ngroups = o->ngroups;
	if (o->umask >= 0)
		s->umask = (mode_t)o->umask;
	for (size_t i = 0; i < o->nrlimits && s->nrlimits < EXEC_RLIMITS_MAX; i++)
		s->rlimits[s->nrlimits++] = (struct exec_rlimit){
		    o->rlimits[i].type, o->rlimits[i].soft, o->rlimits[i].hard};
	if (o->caps_given) {
		s->caps = o->cap_bounding;
		s->caps_split = true;
		s->caps_effective = o->cap_effective & o->cap_bounding;
		s->caps_permitted = o->cap_permitted & o->cap_bounding;
		s->caps_inheritable = o->cap_inheritable & o->cap_bounding;
		/* As runc: an ambient capability the process cannot hold is dropped. */
		s->ambient = o->cap_ambient & s->caps_permitted & s->caps_inheritable;
	}
	s->no_new_privs = o->no_new_privileges;
	s->terminal = s->terminal || o->terminal;
	if (!s->rows && o->console_rows && o->console_cols) {
		s->rows = (uint16_t)o->console_rows;
		s->cols = (uint16_t)o->console_cols;
	}
	if (o->seccomp_text) {
		s->seccomp = EXEC_SECCOMP_TEXT;
		s->seccomp_file = o->seccomp_text;
	} else {
		s->seccomp = EXEC_SECCOMP_NONE; /* a bundle without linux.seccomp has none */
	}
	int r = ns_bits(o, s, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < o->nuid_map; i++)
		s->uid_map[s->nuid_map++] = (struct exec_idmap){
		    o->uid_map[i].container, o->uid_map[i].host, o->uid_map[i].size};
	for (size_t i = 0; i < o->ngid_map; i++)
		s->gid_map[s->ngid_map++] = (struct exec_idmap){
		    o->gid_map[i].container, o->gid_map[i].host, o->gid_map[i].size};
	s->hostname = o->hostname;
	s->root = o->root;
	s->root_readonly = o->root_readonly;
	s->root_propagation = o->root_propagation;
	for (size_t i = 0; i < o->nmounts; i++) {
		const struct oci_mount *m = &o->mounts[i];
		bool bind = m->flags & MS_BIND;
		bb->mounts[i] = (struct exec_mount){.source = m->source,
		                                    .target = m->destination,
		                                    .type = bind ? NULL : m->type,
		                                    .data = m->data,
		                                    .flags = m->flags,
		                                    .propagation = m->propagation};
	}
	s->mounts = bb->mounts;
	s->nmounts = o->nmounts;
	s->sysctls = o->sysctl;
	/* As the runtime-spec says: none when the bundle names none (runc,
	 * crun and ctr write the usual set; containerd's privileged
	 * containers have none). */
	s->masked_paths = (const char *const *)o->masked;
	s->readonly_paths = (const char *const *)o->readonly;
	s->oom_score_adj_set = o->oom_score_adj_given;
	s->oom_score_adj = o->oom_score_adj;
	r = device_nodes(bb, s);
	if (r < 0)
		return err_set(err, r, ERR_RESOURCE_EXHAUSTED, "config.json: out of memory");
	if (!s->argv || !s->argv[0])
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "config.json: process.args: required (or give ARGV after --)");
	return 0;
}

/* Resources whose controller this cell does not offer (a host with hybrid
 * cgroups has none) are not enforced: each is dropped, and said so, rather
 * than refuse a bundle that asks for runtimes' defaults (ctr's cpu.shares). */
static void drop_unavailable(struct cells *cells, const char *cell, struct cell_limits *l)
{
	uint32_t missing;
	if (cell_limits_unavailable(cells, cell, l, &missing, NULL) < 0)
		return;
	for (int k = 0; k < CELL_LIMIT_COUNT; k++)
		if (missing & (1u << k))
			log_warn(
			    "cell \"%s\": %s from the bundle not enforced: no %s controller here",
			    cell, cell_limit_name((enum cell_limit)k),
			    cell_limit_controller((enum cell_limit)k));
	l->set &= ~missing;
}

/* exec into a running executable: its namespaces joined where they are
 * not kin's own, the bundle's root, mounts and namespaces left aside. */
static int join_of(struct api_cells *svc, const Kin__V1__StartRequest *req, struct bundle_buf *bb,
                   struct exec_spec *s, struct err *err)
{
	static const struct {
		const char *name;
		uint32_t bit;
	} kinds[] = {{"pid", EXEC_NS_PID},  {"mnt", EXEC_NS_MNT}, {"net", EXEC_NS_NET},
	             {"ipc", EXEC_NS_IPC},  {"uts", EXEC_NS_UTS}, {"cgroup", EXEC_NS_CGROUP},
	             {"user", EXEC_NS_USER}};
	struct exec_status st;
	int r = exec_status(svc->cells, req->cell, req->spec->join, &st, err);
	if (r < 0)
		return r;
	if (st.state != EXEC_RUNNING && st.state != EXEC_STOPPING)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION,
		               "exec \"%s/%s\": %s is not running", req->cell, req->name,
		               req->spec->join);
	s->namespaces = 0;
	s->root = NULL;
	s->root_readonly = false;
	s->nmounts = 0;
	s->sysctls = NULL;
	s->hostname = NULL;
	s->masked_paths = s->readonly_paths = NULL;
	s->ndevice_nodes = 0;
	s->devices_set = false; /* the cell's program, attached at its start, holds */
	s->nuid_map = s->ngid_map = 0;
	s->njoins = 0;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		char theirs[64], ours[64];
		struct stat a, b;
		snprintf(theirs, sizeof(theirs), "/proc/%d/ns/%s", (int)st.pid, kinds[i].name);
		snprintf(ours, sizeof(ours), "/proc/self/ns/%s", kinds[i].name);
		if (stat(theirs, &a) < 0)
			return err_set_errno(err, -errno, "exec \"%s/%s\": %s: %m", req->cell,
			                     req->name, theirs);
		if (stat(ours, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			continue;
		if (kinds[i].bit == EXEC_NS_USER)
			return err_set(err, -EOPNOTSUPP, ERR_UNIMPLEMENTED,
			               "exec \"%s/%s\": joining a user namespace is not supported",
			               req->cell, req->name);
		str_copy(bb->join_paths[s->njoins], sizeof(bb->join_paths[0]), theirs);
		s->joins[s->njoins].ns = kinds[i].bit;
		s->joins[s->njoins].path = bb->join_paths[s->njoins];
		s->njoins++;
	}
	return 0;
}

int api_exec_bundle_start(struct api_cells *svc, struct rpc_call *call,
                          const Kin__V1__StartRequest *req, exec_start_fn done)
{
	_cleanup_(api_cells_spec_buf_free) struct api_cells_spec_buf b = {0};
	_cleanup_(bundle_buf_free) struct bundle_buf *bb = calloc(1, sizeof(*bb));
	struct api_cells_pending *p = NULL;
	struct err err = {0};
	struct cell_limits limits;
	int r = bb ? api_cells_req_start(req, &b, &err) : -ENOMEM;
	if (r == 0 &&
	    (req->spec->uid || req->spec->gid || req->spec->root[0] || req->spec->namespaces[0]))
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT,
		            "exec \"%s/%s\": a bundle brings its own ids, root and namespaces",
		            req->cell, req->name);
	if (r == 0 && req->spec->bundle[0] != '/')
		r = err_set(&err, -EINVAL, ERR_INVALID_ARGUMENT,
		            "exec \"%s/%s\": bundle \"%.100s\" is not an absolute path", req->cell,
		            req->name, req->spec->bundle);
	if (r == 0)
		r = oci_spec_load(req->spec->bundle, &bb->o, &err);
	if (r == 0)
		r = fill(req, bb, &b, &err);
	if (r == 0 && req->spec->join[0])
		r = join_of(svc, req, bb, &b.s, &err);
	if (r == 0 && bb->o->note[0])
		log_info("exec \"%s/%s\": bundle %s: %s", req->cell, req->name, req->spec->bundle,
		         bb->o->note);
	if (r == 0 && !req->spec->join[0]) /* an exec's are its container's */
		r = spec_limits(bb->o, &limits, &err);
	else
		limits.set = 0;
	if (r == 0 && limits.set)
		drop_unavailable(svc->cells, req->cell, &limits);
	if (r == 0 && limits.set)
		r = cell_update(svc->cells, req->cell, &limits, &err);
	if (r == 0 && !(p = api_cells_pending_new(svc, call)))
		r = -ENOMEM;
	if (r == 0) {
		(void)str_copy(p->path, sizeof(p->path), req->cell);
		(void)str_copy(p->name, sizeof(p->name), req->name);
		r = api_cells_pending_settle(
		    p, exec_start(svc->cells, req->cell, req->name, &b.s, done, p, &err));
	}
	return r < 0 ? api_cells_failed(call, r, &err) : 0;
}
