/* store: kin's image store on disk — names, records, blobs and unpacked
 * layers (layout in oci.h). A record (refs/NAME) is written whole to tmp/
 * and renamed into place, so a reader never sees half of one; writers
 * (import, remove) hold the store's flock. Records are read back as
 * hostile as any JSON: a store directory may be edited by hand. */
#include "oci/oci-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

struct oci_store {
	char *dir;
	int dirfd;
};

bool oci_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > OCI_NAME_MAX || name[0] == '/' || name[0] == '.' || strstr(name, ".."))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:@/+-", *p)))
			return false;
	return true;
}

static bool hex_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == 0;
}

bool oci_digest_valid(const char *digest)
{
	return str_startswith(digest, "sha256:") && strlen(digest) == OCI_DIGEST_LEN &&
	       hex_valid(digest + 7, SHA256_HEX_LEN);
}

/* refs/ file name of a name: every byte outside [A-Za-z0-9._-] as %XX. */
static int ref_file(const char *name, char *buf, size_t size)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if (o + 4 > size)
			return -ENAMETOOLONG;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("._-", *p))
			buf[o++] = (char)*p;
		else
			o += (size_t)snprintf(buf + o, size - o, "%%%02X", *p);
	}
	buf[o] = 0;
	return 0;
}

int oci_store_open(const char *dir, struct oci_store **ret, struct err *err)
{
	static const char *const subdirs[] = {"refs", "blobs", "blobs/sha256", "layers", "tmp"};
	if (!dir || dir[0] != '/')
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image store \"%s\": not an absolute path", dir ? dir : "");
	int r = mkdir_p(dir, 0700);
	if (r < 0)
		return err_set_errno(err, r, "image store \"%s\": mkdir: %s", dir, strerror(-r));
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(err, -errno, "image store \"%s\": open: %m", dir);
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++)
		if (mkdirat(fd, subdirs[i], 0700) < 0 && errno != EEXIST)
			return err_set_errno(err, -errno, "image store \"%s\": mkdir %s: %m", dir,
			                     subdirs[i]);
	struct oci_store *s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		return err_set_errno(err, -ENOMEM, "image store \"%s\": out of memory", dir);
	}
	s->dirfd = TAKE_FD(fd);
	*ret = s;
	return 0;
}

void oci_store_free(struct oci_store *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->dir);
	free(s);
}

const char *oci_store_dir(const struct oci_store *s)
{
	return s->dir;
}

int oci_store_fd(const struct oci_store *s)
{
	return s->dirfd;
}

int oci_store_lock(struct oci_store *s, struct err *err)
{
	int fd = openat(s->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EROFS)
		return err_set(err, -EROFS, ERR_FAILED_PRECONDITION,
		               "image store \"%s\" is read-only here (a zone sees its parent's "
		               "store): import and remove images at the kin that owns it",
		               s->dir);
	if (fd < 0)
		return err_set_errno(err, -errno, "image store \"%s\": lock: %m", s->dir);
	if (flock(fd, LOCK_EX) < 0) {
		int r = -errno;
		close(fd);
		return err_set_errno(err, r, "image store \"%s\": flock: %s", s->dir, strerror(-r));
	}
	return fd;
}

/* ---- records ------------------------------------------------------------------ */

static json_t *record_json(const struct oci_image *img)
{
	json_t *layers = json_array();
	for (size_t i = 0; layers && i < img->nlayers; i++)
		json_array_append_new(layers, json_string(img->layers[i]));
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o}", "name", img->name, "digest", img->digest,
	                 "config", img->config, "size", (json_int_t)img->size, "created",
	                 (json_int_t)img->created, "layers", layers);
}

int oci_store_record_write(struct oci_store *s, const struct oci_image *img, struct err *err)
{
	char file[3 * OCI_NAME_MAX + 1], tmp[64], path[sizeof(file) + 8];
	if (ref_file(img->name, file, sizeof(file)) < 0)
		return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
		               "image \"%s\": name too long", img->name);
	json_t *j = record_json(img);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!text)
		return err_set_errno(err, -ENOMEM, "image \"%s\": record: out of memory",
		                     img->name);
	snprintf(tmp, sizeof(tmp), "tmp/ref-%d", (int)getpid());
	snprintf(path, sizeof(path), "refs/%s", file);
	_cleanup_close_ int fd =
	    openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
	    renameat(s->dirfd, tmp, s->dirfd, path) < 0) {
		int r = -errno;
		unlinkat(s->dirfd, tmp, 0);
		return err_set_errno(err, r, "image \"%s\": writing its record: %s", img->name,
		                     strerror(-r));
	}
	return 0;
}

static int str_field(json_t *j, const char *key, char *buf, size_t size,
                     bool (*valid)(const char *))
{
	const char *v = json_string_value(json_object_get(j, key));
	if (!v || str_copy(buf, size, v) < 0 || (valid && !valid(v)))
		return -EBADMSG;
	return 0;
}

/* Parses a record; -EBADMSG when anything in it is not as kin writes it. */
static int record_parse(const char *text, size_t len, struct oci_image *img)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *layers = json_object_get(j, "layers");
	json_t *size = json_object_get(j, "size"), *created = json_object_get(j, "created");
	int r = -EBADMSG;
	memset(img, 0, sizeof(*img));
	if (!json_is_object(j) || !json_is_array(layers) ||
	    json_array_size(layers) > OCI_LAYERS_MAX || !json_is_integer(size) ||
	    json_integer_value(size) < 0 || !json_is_integer(created) ||
	    str_field(j, "name", img->name, sizeof(img->name), oci_name_valid) < 0 ||
	    str_field(j, "digest", img->digest, sizeof(img->digest), oci_digest_valid) < 0 ||
	    str_field(j, "config", img->config, sizeof(img->config), oci_digest_valid) < 0)
		goto out;
	img->size = (uint64_t)json_integer_value(size);
	img->created = (int64_t)json_integer_value(created);
	img->nlayers = json_array_size(layers);
	for (size_t i = 0; i < img->nlayers; i++) {
		const char *d = json_string_value(json_array_get(layers, i));
		if (!d || !oci_digest_valid(d))
			goto out;
		memcpy(img->layers[i], d, OCI_DIGEST_LEN + 1);
	}
	r = 0;
out:
	json_decref(j);
	return r;
}

static int record_read(struct oci_store *s, const char *file, struct oci_image *img,
                       struct err *err)
{
	char path[3 * OCI_NAME_MAX + 16];
	_cleanup_free_ char *text = NULL;
	size_t len;
	snprintf(path, sizeof(path), "%s/refs/%s", s->dir, file);
	int r = file_read_small(path, 64 * 1024, &text, &len);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		return err_set_errno(err, r, "image store: %s: %s", path, strerror(-r));
	if (record_parse(text, len, img) < 0)
		return err_set(err, -EBADMSG, ERR_DATA_LOSS,
		               "image store: %s: not a kin image record", path);
	return 0;
}

/* ---- queries ------------------------------------------------------------------ */

static int by_name(struct oci_store *s, const char *name, struct oci_image *ret, struct err *err)
{
	char file[3 * OCI_NAME_MAX + 1];
	if (!oci_name_valid(name))
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "image \"%.*s\": not a valid name ([A-Za-z0-9._:@/+-], at most %d bytes)", 64,
		    name, OCI_NAME_MAX);
	ref_file(name, file, sizeof(file));
	int r = record_read(s, file, ret, err);
	if (r == -ENOENT)
		return err_set(err, r, ERR_NOT_FOUND, "image \"%s\" not found", name);
	return r;
}

struct find_digest {
	const char *prefix;
	size_t matches;
	struct oci_image *ret;
};

static int match_digest(const struct oci_image *img, void *data)
{
	struct find_digest *f = data;
	if (strncmp(img->digest, f->prefix, strlen(f->prefix)) == 0 ||
	    strncmp(img->digest + 7, f->prefix, strlen(f->prefix)) == 0) {
		if (f->matches++ == 0)
			*f->ret = *img;
	}
	return 0;
}

int oci_image_get(struct oci_store *s, const char *name_or_digest, struct oci_image *ret,
                  struct err *err)
{
	const char *hex = str_startswith(name_or_digest, "sha256:") ? name_or_digest + 7 : NULL;
	size_t n = strlen(hex ? hex : name_or_digest);
	if (!hex && (n < 12 || n > SHA256_HEX_LEN || !hex_valid(name_or_digest, n)))
		return by_name(s, name_or_digest, ret, err);
	if (hex && (n < 12 || n > SHA256_HEX_LEN || !hex_valid(hex, n)))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image \"%.80s\": a digest is sha256: and 12 to 64 hex digits",
		               name_or_digest);
	/* A bare hex string may also be a name: the name wins. */
	if (!hex && by_name(s, name_or_digest, ret, NULL) == 0)
		return 0;
	struct find_digest f = {name_or_digest, 0, ret};
	int r = oci_image_list(s, match_digest, &f, err);
	if (r < 0)
		return r;
	if (f.matches == 0)
		return err_set(err, -ENOENT, ERR_NOT_FOUND, "image \"%s\" not found",
		               name_or_digest);
	if (f.matches > 1)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image \"%s\": the digest prefix matches %zu images", name_or_digest,
		               f.matches);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in refs/, sorted (at most max). */
static int ref_files(struct oci_store *s, char ***ret, size_t *ret_n, struct err *err)
{
	enum { REFS_MAX = 65536 };
	int fd = openat(s->dirfd, "refs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char **v = NULL;
	size_t n = 0, cap = 0;
	if (!d) {
		int r = -errno;
		if (fd >= 0)
			close(fd);
		return err_set_errno(err, r, "image store \"%s\": refs: %s", s->dir, strerror(-r));
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.' || n >= REFS_MAX)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*ret = v;
	*ret_n = n;
	return 0;
}

int oci_image_list(struct oci_store *s, oci_image_visit_fn fn, void *data, struct err *err)
{
	char **files = NULL;
	size_t n = 0;
	int r = ref_files(s, &files, &n, err);
	_cleanup_free_ struct oci_image *img = malloc(sizeof(*img));
	if (r >= 0 && !img)
		r = err_set_errno(err, -ENOMEM, "image store: out of memory");
	for (size_t i = 0; r >= 0 && i < n; i++) {
		/* A record that went away meanwhile, or one that does not parse,
		 * is skipped: one bad file must not hide every image. */
		if (record_read(s, files[i], img, NULL) == 0)
			r = fn(img, data);
	}
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return r < 0 ? r : 0;
}

int oci_image_config_json(struct oci_store *s, const struct oci_image *img, char **ret,
                          size_t *ret_len, struct err *err)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", s->dir, img->config + 7);
	int r = file_read_small(path, OCI_JSON_MAX, ret, ret_len);
	if (r < 0)
		return err_set_errno(err, r, "image \"%s\": config %s: %s", img->name, img->config,
		                     strerror(-r));
	return 0;
}

int oci_image_lowerdirs(struct oci_store *s, const struct oci_image *img, char *buf, size_t size,
                        struct err *err)
{
	size_t o = 0;
	if (size)
		buf[0] = 0;
	for (size_t i = img->nlayers; i-- > 0;) {
		int n = snprintf(buf + o, size - o, "%s%s/layers/%s", o ? ":" : "", s->dir,
		                 img->layers[i] + 7);
		if (n < 0 || (size_t)n >= size - o)
			return err_set(err, -ENAMETOOLONG, ERR_INVALID_ARGUMENT,
			               "image \"%s\": its %zu layers' paths pass %zu bytes",
			               img->name, img->nlayers, size);
		o += (size_t)n;
	}
	return 0;
}

/* ---- removal ----------------------------------------------------------------- */

struct in_use {
	char (*digests)[OCI_DIGEST_LEN + 1];
	size_t n, cap;
};

static int add_digest(struct in_use *u, const char *d)
{
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		void *p = realloc(u->digests, cap * sizeof(*u->digests));
		if (!p)
			return -ENOMEM;
		u->digests = p;
		u->cap = cap;
	}
	memcpy(u->digests[u->n++], d, OCI_DIGEST_LEN + 1);
	return 0;
}

static int collect_use(const struct oci_image *img, void *data)
{
	struct in_use *u = data;
	int r = add_digest(u, img->digest);
	if (r == 0)
		r = add_digest(u, img->config);
	for (size_t i = 0; r == 0 && i < img->nlayers; i++)
		r = add_digest(u, img->layers[i]);
	return r;
}

static bool used(const struct in_use *u, const char *hex)
{
	for (size_t i = 0; i < u->n; i++)
		if (strcmp(u->digests[i] + 7, hex) == 0)
			return true;
	return false;
}

/* Removes what no record names: blobs, layers, and all of tmp/ (the
 * caller holds the lock, so nothing there is in progress). */
static int store_gc(struct oci_store *s, struct err *err)
{
	static const char *const dirs[] = {"blobs/sha256", "layers", "tmp"};
	struct in_use u = {0};
	int r = oci_image_list(s, collect_use, &u, err);
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(dirs); i++) {
		int fd = openat(s->dirfd, dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		for (struct dirent *e; (e = readdir(d));)
			if (e->d_name[0] != '.' && (i == 2 || !used(&u, e->d_name)))
				dir_remove_tree(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	free(u.digests);
	return r;
}

int oci_image_remove(struct oci_store *s, const char *name, struct err *err)
{
	char file[3 * OCI_NAME_MAX + 1], path[sizeof(file) + 8];
	struct oci_image img;
	int r = by_name(s, name, &img, err);
	if (r < 0)
		return r;
	_cleanup_close_ int lock = oci_store_lock(s, err);
	if (lock < 0)
		return lock;
	ref_file(name, file, sizeof(file));
	snprintf(path, sizeof(path), "refs/%s", file);
	if (unlinkat(s->dirfd, path, 0) < 0 && errno != ENOENT)
		return err_set_errno(err, -errno, "image \"%s\": unlink its record: %m", name);
	return store_gc(s, err);
}

int oci_store_sweep(struct oci_store *s)
{
	int fd = openat(s->dirfd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.')
			dir_remove_tree(dirfd(d), e->d_name, 0);
	closedir(d);
	return 0;
}
