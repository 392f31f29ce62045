/* images: the kin.v1.Images service over oci/'s store — Import, List,
 * Inspect, Remove — and the count of executables using each image, so
 * Remove is refused while one is in use.
 *
 * Import and Remove do long, blocking disk work (reading archives,
 * hashing, unpacking layers, removing trees), so each runs in a child of
 * kin, never in its loop: the child gets only its result pipe (every other
 * fd closed), opens the store itself and writes one result record; the
 * call is answered when the child's pidfd says it exited. A cancelled call
 * kills its child; what it left in the store's tmp/ is swept by the next
 * import. The store is opened at first use, so a zone kin with a root of
 * its own makes no directories there until it is asked to. */
#include "api/api-int.h"
#include "api/cells-int.h"
#include "oci/oci.h"
#include "lib/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#define IMAGES_JOBS_MAX  4    /* imports and removals running at once */
#define IMAGES_USERS_MAX 4096 /* distinct images in use */
#define IMAGES_REF_MAX   4096

enum job_kind { JOB_IMPORT, JOB_REMOVE };

/* What a child writes back: one record, well under PIPE_BUF. */
struct job_result {
	int32_t r;
	struct err err;
	char name[OCI_NAME_MAX + 1];
};

struct job {
	struct list_node node;
	struct api_images *svc;
	struct rpc_call *call; /* NULL once the caller left */
	struct child *child;
	int result_fd;
	enum job_kind kind;
	char name[OCI_NAME_MAX + 1], digest[OCI_DIGEST_LEN + 1];
};

struct image_use {
	char digest[OCI_DIGEST_LEN + 1];
	uint32_t users;
};

struct api_images {
	struct child_table *children;
	char dir[PATH_MAX];
	struct oci_store *store;
	struct list_node jobs;
	size_t njobs;
	struct image_use *uses;
	size_t nuses;
	struct api_binding binding;
	struct list_node containers; /* struct api_container, live */
	/* In each layer's name: unique across restarts of kin (the realtime
	 * clock at start, and kin's pid: two kins sharing the directory never
	 * share one, api_containers_sweep's test), so a layer a dead kin left
	 * is never reused here; written into the state file as it is. */
	char epoch[32];
};

/* ---- the store and its users ----------------------------------------------------- */

int api_images_store(struct api_images *svc, struct oci_store **ret, struct err *e)
{
	if (!svc)
		return err_set(e, -ENOTSUP, ERR_FAILED_PRECONDITION,
		               "images are not available: the Images service did not start");
	if (!svc->store) {
		int r = oci_store_open(svc->dir, &svc->store, e);
		if (r < 0) {
			e->code = ERR_FAILED_PRECONDITION;
			return r;
		}
	}
	*ret = svc->store;
	return 0;
}

static struct image_use *use_find(struct api_images *svc, const char *digest)
{
	for (size_t i = 0; i < svc->nuses; i++)
		if (strcmp(svc->uses[i].digest, digest) == 0)
			return &svc->uses[i];
	return NULL;
}

int api_images_acquire(struct api_images *svc, const char *name_or_digest, struct oci_image *ret,
                       struct err *e)
{
	struct oci_store *store = NULL;
	int r = api_images_store(svc, &store, e);
	if (r < 0)
		return r;
	r = oci_image_get(store, name_or_digest, ret, e);
	if (r < 0)
		return r;
	struct image_use *u = use_find(svc, ret->digest);
	if (!u) {
		if (svc->nuses >= IMAGES_USERS_MAX)
			return err_set(e, -E2BIG, ERR_RESOURCE_EXHAUSTED,
			               "image \"%s\": %d images are in use already", ret->name,
			               IMAGES_USERS_MAX);
		void *p = reallocarray(svc->uses, svc->nuses + 1, sizeof(*svc->uses));
		if (!p)
			return err_set_errno(e, -ENOMEM, "image \"%s\": out of memory", ret->name);
		svc->uses = p;
		u = &svc->uses[svc->nuses++];
		*u = (struct image_use){0};
		memcpy(u->digest, ret->digest, sizeof(u->digest));
	}
	u->users++;
	return 0;
}

void api_images_release(struct api_images *svc, const char *digest)
{
	struct image_use *u = svc ? use_find(svc, digest) : NULL;
	if (!u || --u->users)
		return;
	*u = svc->uses[--svc->nuses];
}

static uint32_t users_of(struct api_images *svc, const char *digest)
{
	struct image_use *u = use_find(svc, digest);
	return u ? u->users : 0;
}

/* ---- containers' writable layers ---------------------------------------------------- */

#define CONTAINERS_DIR "/run/kin/containers"

/* k's root, upper and work under k->dir, and its lower from the store. */
static int container_paths(struct api_container *k, const struct oci_image *img, struct err *e)
{
	struct oci_store *store = NULL;
	snprintf(k->root, sizeof(k->root), "%s/root", k->dir);
	snprintf(k->upper, sizeof(k->upper), "%s/upper", k->dir);
	snprintf(k->work, sizeof(k->work), "%s/work", k->dir);
	int r = api_images_store(k->svc, &store, e);
	return r < 0 ? r : oci_image_lowerdirs(store, img, k->lower, sizeof(k->lower), e);
}

int api_container_new(struct api_images *svc, const char *image, const char *id,
                      struct api_container **ret, struct oci_image *ret_img, struct err *e)
{
	static unsigned long serial;
	struct api_container *k = calloc(1, sizeof(*k));
	if (!k)
		return err_set_errno(e, -ENOMEM, "container %s: out of memory", id);
	int r = api_images_acquire(svc, image, ret_img, e);
	if (r < 0) {
		free(k);
		return r;
	}
	k->svc = svc;
	memcpy(k->digest, ret_img->digest, sizeof(k->digest));
	if (snprintf(k->dir, sizeof(k->dir), "%s/%s.%s.%lu", CONTAINERS_DIR, id, svc->epoch,
	             ++serial) >= (int)sizeof(k->dir)) {
		api_images_release(svc, k->digest);
		free(k);
		return err_set(e, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "container %s: path too long", id);
	}
	for (char *p = k->dir + strlen(CONTAINERS_DIR) + 1; *p; p++)
		if (*p == '/')
			*p = '+';
	r = container_paths(k, ret_img, e);
	if (r == 0) {
		r = mkdir_p(CONTAINERS_DIR, 0700);
		if (r == 0 && (mkdir(k->dir, 0700) < 0 || mkdir(k->root, 0755) < 0 ||
		               mkdir(k->upper, 0755) < 0 || mkdir(k->work, 0700) < 0))
			r = -errno;
		if (r < 0)
			err_set_errno(e, r, "container %s: writable layer %s: %s", id, k->dir,
			              strerror(-r));
	}
	if (r < 0) {
		dir_remove_tree(AT_FDCWD, k->dir, 0);
		api_images_release(svc, k->digest);
		free(k);
		return r;
	}
	list_append(&svc->containers, &k->node);
	*ret = k;
	return 0;
}

/* A layer's tree removed by a child of kin (a tree can be large). */
static void layer_remove(struct api_images *svc, const char *dir)
{
	struct spawn_proc p;
	const struct spawn_opts o = {.cgroup_fd = -1};
	int r = spawn_clone(&o, &p);
	if (r == 0) {
		spawn_signals_reset(SPAWN_MASK_EMPTY);
		syscall(SYS_close_range, 3, ~0u, 0);
		_exit(dir_remove_tree(AT_FDCWD, dir, 0) < 0 ? 1 : 0);
	}
	if (r < 0) {
		log_warn("container %s: cannot remove its writable layer: clone: %s", dir,
		         strerror(-r));
	} else {
		close(p.report_fd);
		if (!svc || child_track(svc->children, p.pid, p.pidfd, NULL, NULL, NULL) < 0) {
			spawn_kill_and_reap(p.pidfd);
			close(p.pidfd);
		}
	}
}

void api_container_release(struct api_container *k)
{
	if (!k)
		return;
	list_remove(&k->node);
	api_images_release(k->svc, k->digest);
	layer_remove(k->svc, k->dir);
	free(k);
}

/* NAME's epoch: NAME is ID.EPOCH.SERIAL (ID may hold dots). */
static bool layer_epoch(const char *name, char *buf, size_t size)
{
	const char *last = strrchr(name, '.');
	if (!last || last == name)
		return false;
	const char *p = last - 1;
	while (p > name && *p != '.')
		p--;
	if (*p != '.' || (size_t)(last - p - 1) >= size || last == p + 1)
		return false;
	memcpy(buf, p + 1, (size_t)(last - p - 1));
	buf[last - p - 1] = '\0';
	return true;
}

static bool layer_dir_ok(const char *dir);

void api_containers_sweep(struct api_images *svc, const char *dead_epoch)
{
	char epoch[32], theirs[32];
	struct api_container *k;
	if (!svc || (list_is_empty(&svc->containers) && !(dead_epoch && dead_epoch[0])))
		return; /* no epoch known: nothing is surely the killed kin's */
	DIR *d = opendir(CONTAINERS_DIR);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char dir[PATH_MAX];
		bool named = false, same = false;
		if (de->d_name[0] == '.' || !layer_epoch(de->d_name, epoch, sizeof(epoch)) ||
		    snprintf(dir, sizeof(dir), "%s/%s", CONTAINERS_DIR, de->d_name) >=
		        (int)sizeof(dir))
			continue;
		same = dead_epoch && strcmp(dead_epoch, epoch) == 0;
		list_for_each(k, &svc->containers, node) {
			named = named || strcmp(k->dir, dir) == 0;
			same = same || (layer_epoch(k->dir + STRLEN(CONTAINERS_DIR "/"), theirs,
			                            sizeof(theirs)) &&
			                strcmp(theirs, epoch) == 0);
		}
		if (named || !same || !layer_dir_ok(dir))
			continue;
		log_warn("adopt: the writable layer %s is removed: the killed kin made it but "
		         "its state did not name it yet",
		         dir);
		layer_remove(svc, dir);
	}
	if (d)
		closedir(d);
}

enum { K_DIGEST = 1, K_DIR };

void api_container_save(const struct api_container *k, struct state_w *w, uint16_t tag)
{
	size_t at = state_open(w, tag);
	state_put_str(w, K_DIGEST, k->digest);
	state_put_str(w, K_DIR, k->dir);
	state_close(w, at);
}

/* A layer this kin could have made: CONTAINERS_DIR/NAME, a directory. */
static bool layer_dir_ok(const char *dir)
{
	struct stat st;
	const char *name = dir + STRLEN(CONTAINERS_DIR "/");
	return str_startswith(dir, CONTAINERS_DIR "/") && *name && !strchr(name, '/') &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && lstat(dir, &st) == 0 &&
	       S_ISDIR(st.st_mode);
}

int api_container_restore(struct api_images *svc, const struct state_field *f,
                          struct api_container **ret, struct err *e)
{
	struct state_r r;
	struct state_field g;
	struct oci_image img;
	char digest[sizeof(((struct api_container *)0)->digest)] = "";
	_cleanup_free_ struct api_container *k = calloc(1, sizeof(*k));
	int n;
	if (!k)
		return err_set_errno(e, -ENOMEM, "container: out of memory");
	state_get_record(f, &r);
	while ((n = state_next(&r, &g)) > 0) {
		if (g.tag == K_DIGEST)
			n = state_get_str(&g, digest, sizeof(digest));
		else if (g.tag == K_DIR)
			n = state_get_str(&g, k->dir, sizeof(k->dir));
		if (n < 0)
			break;
	}
	if (n < 0 || !digest[0] || !layer_dir_ok(k->dir))
		return err_set(e, n < 0 ? n : -EINVAL, ERR_INTERNAL,
		               "container %.200s: its record does not name a writable layer of "
		               "%s",
		               k->dir[0] ? k->dir : "(none)", CONTAINERS_DIR);
	k->svc = svc;
	n = api_images_acquire(svc, digest, &img, e);
	if (n < 0)
		return n;
	memcpy(k->digest, img.digest, sizeof(k->digest));
	n = container_paths(k, &img, e);
	if (n < 0) {
		api_images_release(svc, k->digest);
		return n;
	}
	list_append(&svc->containers, &k->node);
	*ret = TAKE_PTR(k);
	return 0;
}

/* ---- answers --------------------------------------------------------------------- */

struct info_buf {
	Kin__V1__ImageInfo msg;
	char *layers[OCI_LAYERS_MAX];
};

static void info_fill(struct api_images *svc, struct info_buf *b, struct oci_image *img)
{
	b->msg = (Kin__V1__ImageInfo)KIN__V1__IMAGE_INFO__INIT;
	b->msg.name = img->name;
	b->msg.digest = img->digest;
	b->msg.config = img->config;
	b->msg.size = img->size;
	b->msg.created = img->created;
	for (size_t i = 0; i < img->nlayers; i++)
		b->layers[i] = img->layers[i];
	b->msg.layers = b->layers;
	b->msg.n_layers = img->nlayers;
	b->msg.users = users_of(svc, img->digest);
}

static int fail(struct rpc_call *call, const struct err *e)
{
	return rpc_call_fail(call, e->code ? (int)e->code : ERR_INTERNAL, "%s",
	                     e->msg[0] ? e->msg : "image store: failed");
}

/* ---- jobs in children ------------------------------------------------------------------ */

static void job_free(struct job *j)
{
	if (j->svc) {
		list_remove(&j->node);
		j->svc->njobs--;
	}
	if (j->result_fd >= 0)
		close(j->result_fd);
	free(j);
}

static void job_answer(struct job *j, const siginfo_t *si)
{
	struct api_images *svc = j->svc;
	struct job_result res;
	struct err e = {0};
	ssize_t n = read(j->result_fd, &res, sizeof(res));
	if (n != (ssize_t)sizeof(res)) {
		err_set(&e, -EIO, ERR_INTERNAL,
		        "image %s: the worker ended without a result (%s %d)",
		        j->kind == JOB_IMPORT ? "import" : "remove",
		        si->si_code == CLD_EXITED ? "exit status" : "signal", si->si_status);
		fail(j->call, &e);
		return;
	}
	res.err.msg[sizeof(res.err.msg) - 1] = 0;
	res.name[sizeof(res.name) - 1] = 0;
	if (res.r < 0) {
		fail(j->call, &res.err);
		return;
	}
	if (j->kind == JOB_REMOVE) {
		Kin__V1__ImageRemoveResponse out = KIN__V1__IMAGE_REMOVE_RESPONSE__INIT;
		out.name = j->name;
		out.digest = j->digest;
		rpc_call_reply(j->call, &out.base);
		return;
	}
	struct oci_store *store = NULL;
	_cleanup_free_ struct oci_image *img = malloc(sizeof(*img));
	_cleanup_free_ struct info_buf *b = malloc(sizeof(*b));
	if (!img || !b) {
		rpc_call_fail(j->call, ERR_RESOURCE_EXHAUSTED, "image import: out of memory");
		return;
	}
	if (api_images_store(svc, &store, &e) < 0 || oci_image_get(store, res.name, img, &e) < 0) {
		fail(j->call, &e);
		return;
	}
	info_fill(svc, b, img);
	rpc_call_reply(j->call, &b->msg.base);
}

static void job_exited(const siginfo_t *si, void *data)
{
	struct job *j = data;
	if (j->call && j->svc)
		job_answer(j, si);
	job_free(j);
}

static void job_cancelled(struct rpc_call *call, void *data)
{
	struct job *j = data;
	(void)call;
	j->call = NULL;
	child_signal(j->child, SIGKILL); /* answered by nobody; freed at its exit */
}

/* The child: only the result pipe (as fd 3) and stdio stay open. */
static _noreturn_ void job_child(struct api_images *svc, const struct job *j, const char *ref,
                                 int wfd)
{
	struct job_result res = {0};
	struct oci_store *store = NULL;
	_cleanup_free_ struct oci_image *img = malloc(sizeof(*img));
	spawn_signals_reset(SPAWN_MASK_EMPTY);
	if (dup2(wfd, 3) < 0)
		_exit(127);
	syscall(SYS_close_range, 4, ~0u, 0);
	res.r = img ? oci_store_open(svc->dir, &store, &res.err) : -ENOMEM;
	if (res.r >= 0 && j->kind == JOB_IMPORT)
		res.r = oci_import(store, ref, j->name[0] ? j->name : NULL, img, &res.err);
	else if (res.r >= 0)
		res.r = oci_image_remove(store, j->name, &res.err);
	if (res.r >= 0 && j->kind == JOB_IMPORT)
		memcpy(res.name, img->name, sizeof(res.name));
	_exit(write(3, &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 1);
}

static int job_start(struct api_images *svc, struct rpc_call *call, enum job_kind kind,
                     const char *name, const char *digest, const char *ref)
{
	int p[2];
	struct spawn_proc proc;
	if (svc->njobs >= IMAGES_JOBS_MAX)
		return rpc_call_fail(
		    call, ERR_RESOURCE_EXHAUSTED,
		    "image %s: %d imports and removals run already; try again later",
		    kind == JOB_IMPORT ? "import" : "remove", IMAGES_JOBS_MAX);
	struct job *j = calloc(1, sizeof(*j));
	if (!j || pipe2(p, O_CLOEXEC) < 0) {
		free(j);
		return -ENOMEM;
	}
	*j = (struct job){.svc = svc, .call = call, .result_fd = p[0], .kind = kind};
	str_copy(j->name, sizeof(j->name), name ? name : "");
	str_copy(j->digest, sizeof(j->digest), digest ? digest : "");
	const struct spawn_opts o = {.cgroup_fd = -1};
	int r = spawn_clone(&o, &proc);
	if (r == 0) {
		close(proc.report_fd);
		job_child(svc, j, ref, p[1]);
	}
	close(p[1]);
	if (r < 0) {
		close(p[0]);
		free(j);
		return rpc_call_fail(call, ERR_INTERNAL, "image %s: clone: %s",
		                     kind == JOB_IMPORT ? "import" : "remove", strerror(-r));
	}
	close(proc.report_fd);
	list_push(&svc->jobs, &j->node);
	svc->njobs++;
	r = child_track(svc->children, proc.pid, proc.pidfd, job_exited, j, &j->child);
	if (r < 0) {
		spawn_kill_and_reap(proc.pidfd);
		close(proc.pidfd);
		job_free(j);
		return rpc_call_fail(call, ERR_INTERNAL, "image job: tracking the child: %s",
		                     strerror(-r));
	}
	rpc_call_on_cancel(call, job_cancelled, j);
	return 0;
}

/* ---- handlers -------------------------------------------------------------------------- */

static int serve_images_import(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__ImageImportRequest *q = (const Kin__V1__ImageImportRequest *)in;
	struct api_images *svc = userdata;
	struct oci_store *store = NULL;
	struct err e = {0};
	if (!q->ref[0] || strlen(q->ref) > IMAGES_REF_MAX)
		return rpc_call_fail(call, ERR_INVALID_ARGUMENT,
		                     "image import: ref must be 1 to %d bytes (oci:DIR[:TAG], "
		                     "oci-archive:FILE[:TAG], docker-archive:FILE)",
		                     IMAGES_REF_MAX);
	if (q->name[0] && !oci_name_valid(q->name))
		return rpc_call_fail(
		    call, ERR_INVALID_ARGUMENT,
		    "image import: name \"%.100s\" is not valid ([A-Za-z0-9._:@/+-], "
		    "at most %d bytes)",
		    q->name, OCI_NAME_MAX);
	if (api_images_store(svc, &store, &e) < 0)
		return fail(call, &e);
	return job_start(svc, call, JOB_IMPORT, q->name, NULL, q->ref);
}

static int list_visit(const struct oci_image *img, void *data)
{
	struct api_cells_vec *v = data;
	return api_cells_vec_push(v, img);
}

static int serve_images_list(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	struct api_images *svc = userdata;
	struct api_cells_vec v = {.size = sizeof(struct oci_image)};
	struct oci_store *store = NULL;
	struct err e = {0};
	(void)in;
	if (api_images_store(svc, &store, &e) < 0)
		return fail(call, &e);
	int r = oci_image_list(store, list_visit, &v, &e);
	if (r < 0) {
		free(v.items);
		return fail(call, &e);
	}
	Kin__V1__ImageListResponse out = KIN__V1__IMAGE_LIST_RESPONSE__INIT;
	struct info_buf *bufs = calloc(v.n ? v.n : 1, sizeof(*bufs));
	Kin__V1__ImageInfo **ptrs = calloc(v.n ? v.n : 1, sizeof(*ptrs));
	if (!bufs || !ptrs) {
		free(bufs), free(ptrs), free(v.items);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v.n; i++) {
		info_fill(svc, &bufs[i], (struct oci_image *)v.items + i);
		ptrs[i] = &bufs[i].msg;
	}
	out.images = ptrs;
	out.n_images = v.n;
	r = rpc_call_reply(call, &out.base);
	free(bufs), free(ptrs), free(v.items);
	return r;
}

static int serve_images_inspect(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__ImageRequest *q = (const Kin__V1__ImageRequest *)in;
	struct api_images *svc = userdata;
	struct oci_store *store = NULL;
	struct err e = {0};
	_cleanup_free_ struct oci_image *img = malloc(sizeof(*img));
	_cleanup_free_ struct info_buf *b = malloc(sizeof(*b));
	_cleanup_free_ char *json = NULL;
	size_t len;
	if (!img || !b)
		return -ENOMEM;
	if (api_images_store(svc, &store, &e) < 0 || oci_image_get(store, q->name, img, &e) < 0 ||
	    oci_image_config_json(store, img, &json, &len, &e) < 0)
		return fail(call, &e);
	Kin__V1__ImageInspectResponse out = KIN__V1__IMAGE_INSPECT_RESPONSE__INIT;
	info_fill(svc, b, img);
	out.image = &b->msg;
	out.config_json = json;
	return rpc_call_reply(call, &out.base);
}

static int serve_images_remove(struct rpc_call *call, const ProtobufCMessage *in, void *userdata)
{
	const Kin__V1__ImageRequest *q = (const Kin__V1__ImageRequest *)in;
	struct api_images *svc = userdata;
	struct oci_store *store = NULL;
	struct err e = {0};
	_cleanup_free_ struct oci_image *img = malloc(sizeof(*img));
	if (!img)
		return -ENOMEM;
	if (api_images_store(svc, &store, &e) < 0 || oci_image_get(store, q->name, img, &e) < 0)
		return fail(call, &e);
	uint32_t users = users_of(svc, img->digest);
	if (users)
		return rpc_call_fail(call, ERR_FAILED_PRECONDITION,
		                     "image \"%s\" is in use by %u executable%s of this kin",
		                     img->name, users, users == 1 ? "" : "s");
	return job_start(svc, call, JOB_REMOVE, img->name, img->digest, NULL);
}

static const struct api_method images_methods[] = {
    {serve_images_import, 0},
    {serve_images_list, 0},
    {serve_images_inspect, 0},
    {serve_images_remove, 0},
};
static const struct api_handlers images_handlers = {&kin__v1__images__descriptor, images_methods,
                                                    ARRAY_SIZE(images_methods), NULL};

/* The images as a participant of the handover, for a successor only: a
 * killed kin's epoch, so that a layer it made in its last moments (no
 * container of its state names it) is removed once every container's
 * owner took its own back. */
static int images_keep_start(void *data, const struct keep_from *from)
{
	char epoch[32] = "";
	if (from->how != KEEP_ADOPT)
		return 0;
	if (from->record && state_get_str(from->record, epoch, sizeof(epoch)) < 0)
		epoch[0] = '\0';
	api_containers_sweep(data, epoch);
	return 0;
}

static int images_keep_save(void *data, struct state_w *w, uint16_t tag, struct err *err)
{
	const struct api_images *svc = data;
	(void)err;
	if (w->file && svc->epoch[0])
		state_put_str(w, tag, svc->epoch);
	return 0;
}

static const struct keep_part images_part = {.name = "the images' layers",
                                             .tag = KEEP_TAG_IMAGES,
                                             .level = KEEP_LEVEL_IMAGES,
                                             .start = images_keep_start,
                                             .save = images_keep_save};

static int images_start(struct api *api, const struct api_config *cfg)
{
	_cleanup_free_ struct api_images *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->children = cfg->children;
	str_copy(svc->dir, sizeof(svc->dir),
	         cfg->image_store ? cfg->image_store : OCI_STORE_DEFAULT);
	list_init(&svc->jobs);
	list_init(&svc->containers);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(svc->epoch, sizeof(svc->epoch), "%llx-%x",
	         (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000,
	         (unsigned)getpid());
	int r = api_bind(cfg->rpc, &svc->binding, &images_handlers, svc);
	if (r < 0)
		return r;
	api->images = TAKE_PTR(svc);
	api_keep_add(api, &images_part, api->images);
	return 0;
}

/* Running jobs are killed: their calls end with the server. */
static void images_shutdown(struct api *api)
{
	struct api_images *svc = api->images;
	struct job *j;
	if (!svc)
		return;
	list_for_each(j, &svc->jobs, node) {
		j->call = NULL;
		child_signal(j->child, SIGKILL);
	}
}

static void images_free(struct api *api)
{
	struct api_images *svc = api->images;
	if (!svc)
		return;
	api_keep_remove(api, svc);
	api_binding_release(&svc->binding);
	oci_store_free(svc->store);
	free(svc->uses);
	struct api_container *k, *ktmp;
	list_for_each_safe(k, ktmp, &svc->containers, node)
		list_remove(&k->node);
	/* A job still running is freed by its exit callback (the child table
	 * outlives the services): it must not reach back into this memory. */
	struct job *j, *tmp;
	list_for_each_safe(j, tmp, &svc->jobs, node) {
		list_remove(&j->node);
		j->svc = NULL;
	}
	free(svc);
	api->images = NULL;
}

const struct api_service api_service_images = {.name = "the Images service",
                                               .start = images_start,
                                               .shutdown = images_shutdown,
                                               .free = images_free};
