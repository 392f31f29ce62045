/* exec_image: Exec/Start of a container from an image of the store.
 *
 * The image's config gives the defaults (Entrypoint + Cmd, Env,
 * WorkingDir, User), the request what differs: an argv replaces Cmd (as
 * `docker run IMAGE ARGS` does), env adds to the image's (a key given
 * again wins), cwd and user replace. The root is an overlay of the
 * image's layers (read-only, shared by every container of the image) with
 * a private writable layer under the containers directory, mounted by the
 * child in its own mount namespace, entered with pivot_root; the usual
 * /proc paths are masked. Without --ns a container gets its own pid and
 * mount namespaces and shares the rest with its kin — inside a zone, the
 * pod's network, IPC and UTS, as Kubernetes' pod model has it.
 *
 * The executable's record owns its container (api_container, of the Images
 * service): when cells lets the record go, the image's use is given back
 * and the writable layer removed. The service lists them too, so that a
 * re-exec carries each to the next kin with its executable. */
#include "api/cells-int.h"
#include "lib/state.h"
#include "oci/oci.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* An executable's container, listed in svc->containers. */
struct exec_container {
	struct list_node node;
	char cell[CELLS_PATH_MAX], name[CELLS_NAME_MAX + 1];
	struct api_container *k;
};

static void container_release(void *data)
{
	struct exec_container *x = data;
	list_remove(&x->node);
	api_container_release(x->k);
	free(x);
}

static struct exec_container *container_listed(struct api_cells *svc, const char *cell,
                                               const char *name, struct api_container *k)
{
	struct exec_container *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	(void)str_copy(x->cell, sizeof(x->cell), cell);
	(void)str_copy(x->name, sizeof(x->name), name);
	x->k = k;
	list_push(&svc->containers, &x->node);
	return x;
}

enum { XC_EXEC = 1, XC_CELL, XC_NAME, XC_CONTAINER };

void api_exec_images_save(struct api_cells *svc, struct state_w *w, uint16_t tag)
{
	const struct exec_container *x;
	size_t at = state_open(w, tag);
	list_for_each(x, &svc->containers, node) {
		size_t one = state_open(w, XC_EXEC);
		state_put_str(w, XC_CELL, x->cell);
		state_put_str(w, XC_NAME, x->name);
		api_container_save(x->k, w, XC_CONTAINER);
		state_close(w, one);
	}
	state_close(w, at);
}

/* One executable's container again: listed and its hook given back, or
 * released (its executable is gone) — never left holding a layer. */
static int container_back(struct api_cells *svc, const struct state_field *f, const char *how)
{
	struct state_r r;
	struct state_field g, kf = {0};
	char cell[CELLS_PATH_MAX] = "", name[CELLS_NAME_MAX + 1] = "";
	struct api_container *k = NULL;
	struct err err = {0};
	int n;
	state_get_record(f, &r);
	while ((n = state_next(&r, &g)) > 0) {
		if (g.tag == XC_CELL)
			n = state_get_str(&g, cell, sizeof(cell));
		else if (g.tag == XC_NAME)
			n = state_get_str(&g, name, sizeof(name));
		else if (g.tag == XC_CONTAINER)
			kf = g;
		if (n < 0)
			break;
	}
	if (n < 0 || !kf.tag)
		n = err_set(&err, -EBADMSG, ERR_INTERNAL, "a record does not read");
	else
		n = api_container_restore(svc->images, &kf, &k, &err);
	struct exec_container *x = n < 0 ? NULL : container_listed(svc, cell, name, k);
	if (n == 0 && !x)
		n = err_set_errno(&err, -ENOMEM, "out of memory");
	if (n == 0)
		n = exec_release_set(svc->cells, cell, name, container_release, x, &err);
	if (n < 0) {
		log_error("%s: exec \"%s/%s\": its container is not taken over: %s", how, cell,
		          name, err.msg);
		if (x)
			container_release(x);
		else
			api_container_release(k);
	}
	return n;
}

int api_exec_images_restore(struct api_cells *svc, const struct state_field *f, const char *how)
{
	struct state_r r;
	struct state_field g;
	int n = 0, e;
	if (!svc->cells)
		return -ENODEV;
	state_get_record(f, &r);
	while ((e = state_next(&r, &g)) > 0)
		if (g.tag == XC_EXEC && container_back(svc, &g, how) == 0)
			n++;
	return e < 0 ? e : n;
}

/* The executables' containers as a participant of the handover: after
 * the cells (their executables are there again). */
static int exec_images_keep_start(void *data, const struct keep_from *from)
{
	if (from->how == KEEP_FRESH || !from->record)
		return 0;
	int n = api_exec_images_restore(data, from->record, from->how_name);
	if (n > 0)
		log_info("%s: %d executables' containers %s", from->how_name, n,
		         from->how == KEEP_ADOPT ? "adopted" : "taken over");
	return n < 0 ? n : 0;
}

static int exec_images_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	(void)err;
	api_exec_images_save(data, w, tag);
	return 0;
}

const struct keep_part api_exec_images_part = {.name = "the executables' containers",
                                               .tag = KEEP_TAG_EXEC_IMAGES,
                                               .level = KEEP_LEVEL_EXEC_IMAGES,
                                               .start = exec_images_keep_start,
                                               .save = exec_images_keep_save};

/* ---- the spec from the image --------------------------------------------------------- */

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Entrypoint + (argv given ? argv : Cmd), into a new vector of pointers
 * into its sources. */
static int image_argv(const struct oci_image_config *cfg, const Kin__V1__ExecSpec *in, char ***ret,
                      struct err *err)
{
	size_t ne = strv_len(cfg->entrypoint), nc = in->n_argv ? in->n_argv : strv_len(cfg->cmd);
	if (ne + nc == 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image \"%s\" has no Entrypoint or Cmd: give the command after --",
		               in->image);
	if (ne + nc > EXEC_ARGS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "image \"%s\": more than %d arguments", in->image, EXEC_ARGS_MAX);
	char **v = calloc(ne + nc + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ne; i++)
		v[i] = cfg->entrypoint[i];
	for (size_t i = 0; i < nc; i++)
		v[ne + i] = in->n_argv ? in->argv[i] : cfg->cmd[i];
	*ret = v;
	return 0;
}

static bool same_key(const char *a, const char *b)
{
	size_t n = strcspn(a, "=");
	return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* The image's Env, then the request's: a key given again replaces. */
static int image_env(const struct oci_image_config *cfg, const Kin__V1__ExecSpec *in, char ***ret,
                     struct err *err)
{
	size_t ni = strv_len(cfg->env), n = 0;
	char **v = calloc(ni + in->n_env + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ni; i++) {
		bool replaced = !strchr(cfg->env[i], '=');
		for (size_t k = 0; k < in->n_env && !replaced; k++)
			replaced = same_key(cfg->env[i], in->env[k]);
		if (!replaced)
			v[n++] = cfg->env[i];
	}
	for (size_t k = 0; k < in->n_env; k++)
		v[n++] = in->env[k];
	if (n > EXEC_ENV_MAX) {
		free(v);
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "image \"%s\": more than %d environment variables", in->image,
		               EXEC_ENV_MAX);
	}
	*ret = v;
	return 0;
}

struct image_parts {
	struct oci_image img;
	struct oci_image_config *cfg;
	struct oci_user user;
};

static int fill_spec(struct api_cells *svc, const Kin__V1__StartRequest *req,
                     struct image_parts *ip, struct api_cells_spec_buf *b, struct exec_container *x,
                     struct err *err)
{
	const struct api_container *k = x->k;
	const Kin__V1__ExecSpec *in = req->spec;
	struct exec_spec *s = &b->s;
	struct oci_store *store = NULL;
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r = api_images_store(svc->images, &store, err);
	if (r >= 0)
		r = oci_image_config_json(store, &ip->img, &json, &len, err);
	if (r >= 0)
		r = oci_image_config_parse(json, len, &ip->cfg, err);
	if (r >= 0)
		r = oci_image_user(store, &ip->img, in->user[0] ? in->user : ip->cfg->user,
		                   &ip->user, err);
	free(b->argv), free(b->env);
	b->argv = b->env = NULL;
	if (r >= 0)
		r = image_argv(ip->cfg, in, &b->argv, err);
	if (r >= 0)
		r = image_env(ip->cfg, in, &b->env, err);
	if (r < 0)
		return r;
	s->argv = b->argv;
	s->env = b->env;
	if (!in->cwd[0] && ip->cfg->working_dir)
		s->cwd = ip->cfg->working_dir;
	s->uid = ip->user.uid;
	s->gid = ip->user.gid;
	memcpy(s->groups, ip->user.groups, ip->user.ngroups * sizeof(uint32_t));
	s->ngroups = ip->user.ngroups;
	if (!in->namespaces[0])
		s->namespaces = EXEC_NS_PID | EXEC_NS_MNT;
	s->namespaces |= EXEC_NS_MNT;
	s->root = k->root;
	s->root_lowerdirs = k->lower;
	s->root_upperdir = k->upper;
	s->root_workdir = k->work;
	/* kin's minimal /dev and nothing more: a root user in the container
	 * keeps CAP_MKNOD, but a node it makes opens nothing. */
	s->devices_set = true;
	s->masked_paths = exec_masked_default;
	s->readonly_paths = exec_readonly_default;
	s->release = container_release;
	s->release_data = x;
	s->release_carried = true;
	return 0;
}

static int check_request(const Kin__V1__StartRequest *req, struct err *err)
{
	const Kin__V1__ExecSpec *in = req->spec;
	if (in->uid || in->gid || in->n_groups)
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "exec \"%s/%s\": with an image, ids come from --user (resolved in the "
		    "image), not uid, gid or groups",
		    req->cell, req->name);
	if (in->root[0])
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "exec \"%s/%s\": an image brings its own root: no --root with --image",
		    req->cell, req->name);
	return 0;
}

int api_exec_image_start(struct api_cells *svc, struct rpc_call *call,
                         const Kin__V1__StartRequest *req, exec_start_fn done)
{
	_cleanup_(api_cells_spec_buf_free) struct api_cells_spec_buf b = {0};
	_cleanup_free_ struct image_parts *ip = calloc(1, sizeof(*ip));
	struct api_container *k = NULL;
	struct exec_container *x = NULL;
	struct api_cells_pending *p = NULL;
	struct err err = {0};
	char id[CELLS_PATH_MAX + CELLS_NAME_MAX + 2];
	int r = ip ? 0 : -ENOMEM;
	if (r == 0)
		r = api_cells_req_start(req, &b, &err);
	if (r == 0)
		r = check_request(req, &err);
	if (r == 0) {
		snprintf(id, sizeof(id), "%s.%s", req->cell, req->name);
		r = api_container_new(svc->images, req->spec->image, id, &k, &ip->img, &err);
	}
	if (r == 0 && !(x = container_listed(svc, req->cell, req->name, k))) {
		api_container_release(k);
		r = -ENOMEM;
	}
	if (r == 0)
		r = fill_spec(svc, req, ip, &b, x, &err);
	if (r == 0 && !(p = api_cells_pending_new(svc, call)))
		r = -ENOMEM;
	if (r < 0) {
		if (x)
			container_release(x);
		if (ip)
			oci_image_config_free(ip->cfg);
		return api_cells_failed(call, r, &err);
	}
	(void)str_copy(p->path, sizeof(p->path), req->cell);
	(void)str_copy(p->name, sizeof(p->name), req->name);
	/* From here the record owns x: exec_start releases it on failure too. */
	r = api_cells_pending_settle(
	    p, exec_start(svc->cells, req->cell, req->name, &b.s, done, p, &err));
	oci_image_config_free(ip->cfg);
	return r < 0 ? api_cells_failed(call, r, &err) : 0;
}
