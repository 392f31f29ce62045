/* tree: the image as a set of entries keyed by normalised path, before it
 * is written as cpio or staged for mke2fs. Paths are kept without a leading
 * slash; the root directory is implicit. Insertion follows the image's own
 * symlinks in intermediate components (the merged-/usr links), so one file
 * never appears under two names. */
#include "rootfs/rootfs-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#define SYMLINK_HOPS_MAX 40
#define HOST_DEPTH_MAX   64

int rootfs_tree_new(struct rootfs_tree **ret)
{
	struct rootfs_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	*ret = t;
	return 0;
}

static void entry_clear(struct rootfs_entry *e)
{
	free(e->host);
	free(e->data);
	e->host = NULL;
	e->data = NULL;
}

void rootfs_tree_free(struct rootfs_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		entry_clear(&t->e[i]);
		free(t->e[i].path);
	}
	free(t->e);
	free(t->slots);
	free(t);
}

size_t rootfs_tree_count(const struct rootfs_tree *t)
{
	return t->n;
}

static uint32_t path_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* Slot holding path, or the empty slot where it would go. */
static size_t slot_find(const struct rootfs_tree *t, const char *path)
{
	size_t mask = t->nslots - 1, i = path_hash(path) & mask;
	while (t->slots[i] && strcmp(t->e[t->slots[i] - 1].path, path) != 0)
		i = (i + 1) & mask;
	return i;
}

struct rootfs_entry *rootfs_tree_lookup(const struct rootfs_tree *t, const char *path)
{
	if (!t->nslots)
		return NULL;
	size_t i = slot_find(t, path);
	return t->slots[i] ? &t->e[t->slots[i] - 1] : NULL;
}

static int slots_grow(struct rootfs_tree *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 256;
	uint32_t *s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	for (size_t k = 0; k < t->n; k++)
		t->slots[slot_find(t, t->e[k].path)] = (uint32_t)(k + 1);
	return 0;
}

static int entry_append(struct rootfs_tree *t, const char *path, struct rootfs_entry **ret)
{
	if (t->n >= ROOTFS_ENTRIES_MAX)
		return -E2BIG;
	if ((t->n + 1) * 2 > t->nslots && slots_grow(t) < 0)
		return -ENOMEM;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct rootfs_entry *e = realloc(t->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		t->e = e;
		t->cap = cap;
	}
	struct rootfs_entry *e = &t->e[t->n];
	*e = (struct rootfs_entry){.path = strdup(path)};
	if (!e->path)
		return -ENOMEM;
	t->slots[slot_find(t, path)] = (uint32_t)(t->n + 1);
	t->n++;
	*ret = e;
	return 0;
}

/* Lexical normalisation: no leading slash, no empty or "." components, ".."
 * pops (never above the root). "" is the root. */
int rootfs_path_normalize(const char *in, char *out, size_t size)
{
	size_t n = 0;
	const char *p = in;

	if (size == 0)
		return -ENAMETOOLONG;
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else {
			if (n + (n ? 1 : 0) + len >= size)
				return -ENAMETOOLONG;
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p = end;
	}
	out[n] = '\0';
	return 0;
}

/* Rewrites path (normalised) through the tree's symlinks in every
 * component but the last, making missing directories on the way. */
static int tree_canonical(struct rootfs_tree *t, const char *path, char *out, size_t size)
{
	char cur[ROOTFS_PATH_MAX], next[ROOTFS_PATH_MAX * 2];
	int r = rootfs_path_normalize(path, cur, sizeof(cur));
	if (r < 0)
		return r;
	if (!cur[0])
		return -EINVAL; /* the root itself is not an entry */
	for (int hops = 0; hops <= SYMLINK_HOPS_MAX;) {
		char *slash = cur;
		bool restarted = false;
		while ((slash = strchr(slash, '/'))) {
			*slash = '\0';
			struct rootfs_entry *e = rootfs_tree_lookup(t, cur);
			if (e && e->kind == ROOTFS_SYMLINK) {
				char base[ROOTFS_PATH_MAX];
				const char *dir = strrchr(cur, '/');
				if (e->data && ((char *)e->data)[0] == '/')
					snprintf(base, sizeof(base), "%s", "");
				else
					snprintf(base, sizeof(base), "%.*s",
					         dir ? (int)(dir - cur) : 0, cur);
				snprintf(next, sizeof(next), "%s/%s/%s", base, (char *)e->data,
				         slash + 1);
				r = rootfs_path_normalize(next, cur, sizeof(cur));
				if (r < 0)
					return r;
				hops++;
				restarted = true;
				break;
			}
			if (e && e->kind != ROOTFS_DIR)
				return -ENOTDIR;
			if (!e) {
				struct rootfs_entry *d;
				r = entry_append(t, cur, &d);
				if (r < 0)
					return r;
				d->kind = ROOTFS_DIR;
				d->perm = 0755;
			}
			*slash++ = '/';
		}
		if (!restarted)
			return str_copy(out, size, cur);
	}
	return -ELOOP;
}

/* The entry to fill at path: a new one, or the old one replaced. */
static int tree_put(struct rootfs_tree *t, const char *path, enum rootfs_kind kind,
                    struct rootfs_entry **ret)
{
	char canon[ROOTFS_PATH_MAX];
	int r = tree_canonical(t, path, canon, sizeof(canon));
	if (r < 0)
		return r;
	struct rootfs_entry *e = rootfs_tree_lookup(t, canon);
	if (e) {
		if ((e->kind == ROOTFS_DIR) != (kind == ROOTFS_DIR))
			return -EEXIST;
		entry_clear(e);
	} else {
		r = entry_append(t, canon, &e);
		if (r < 0)
			return r;
	}
	e->kind = kind;
	e->size = 0;
	e->rdev = 0;
	*ret = e;
	return 0;
}

int rootfs_tree_add_dir(struct rootfs_tree *t, const char *path, mode_t perm)
{
	struct rootfs_entry *e;
	int r = tree_put(t, path, ROOTFS_DIR, &e);
	if (r < 0)
		return r;
	e->perm = perm & 07777;
	return 0;
}

int rootfs_tree_add_file(struct rootfs_tree *t, const char *path, mode_t perm,
                         const char *host_path)
{
	struct stat st;
	if (stat(host_path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	char *host = strdup(host_path);
	if (!host)
		return -ENOMEM;
	struct rootfs_entry *e;
	int r = tree_put(t, path, ROOTFS_FILE, &e);
	if (r < 0) {
		free(host);
		return r;
	}
	e->perm = perm & 07777;
	e->host = host;
	e->size = (uint64_t)st.st_size;
	return 0;
}

int rootfs_tree_add_data(struct rootfs_tree *t, const char *path, mode_t perm, const void *data,
                         size_t len)
{
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	struct rootfs_entry *e;
	int r = tree_put(t, path, ROOTFS_FILE, &e);
	if (r < 0) {
		free(copy);
		return r;
	}
	e->perm = perm & 07777;
	e->data = copy;
	e->size = len;
	return 0;
}

int rootfs_tree_add_symlink(struct rootfs_tree *t, const char *path, const char *target)
{
	size_t len = strlen(target);
	if (len == 0 || len >= ROOTFS_PATH_MAX)
		return -EINVAL;
	char *copy = strdup(target);
	if (!copy)
		return -ENOMEM;
	struct rootfs_entry *e;
	int r = tree_put(t, path, ROOTFS_SYMLINK, &e);
	if (r < 0) {
		free(copy);
		return r;
	}
	e->perm = 0777;
	e->data = copy;
	e->size = len;
	return 0;
}

int rootfs_tree_add_node(struct rootfs_tree *t, const char *path, mode_t mode, dev_t rdev)
{
	enum rootfs_kind kind;
	if (S_ISCHR(mode))
		kind = ROOTFS_CHR;
	else if (S_ISBLK(mode))
		kind = ROOTFS_BLK;
	else
		return -EINVAL;
	struct rootfs_entry *e;
	int r = tree_put(t, path, kind, &e);
	if (r < 0)
		return r;
	e->perm = mode & 07777;
	e->rdev = rdev;
	return 0;
}

bool rootfs_tree_has(const struct rootfs_tree *t, const char *path, mode_t *ret_mode)
{
	char norm[ROOTFS_PATH_MAX];
	if (rootfs_path_normalize(path, norm, sizeof(norm)) < 0)
		return false;
	const struct rootfs_entry *e = rootfs_tree_lookup(t, norm);
	if (e && ret_mode)
		*ret_mode = rootfs_entry_mode(e);
	return e != NULL;
}

mode_t rootfs_entry_mode(const struct rootfs_entry *e)
{
	static const mode_t fmt[] = {
	    [ROOTFS_DIR] = S_IFDIR, [ROOTFS_FILE] = S_IFREG, [ROOTFS_SYMLINK] = S_IFLNK,
	    [ROOTFS_CHR] = S_IFCHR, [ROOTFS_BLK] = S_IFBLK,
	};
	return fmt[e->kind] | e->perm;
}

/* One host object (lstat'ed) at dst; directories recurse. */
static int add_host_rec(struct rootfs_tree *t, const char *src, const char *dst,
                        const struct stat *st, int depth, struct err *d)
{
	int r;
	if (depth > HOST_DEPTH_MAX) {
		return err_set_errno(d, -ELOOP, "%s: directories nested deeper than %d", src,
		                     HOST_DEPTH_MAX);
	}
	if (S_ISREG(st->st_mode)) {
		r = rootfs_tree_add_file(t, dst, st->st_mode, src);
	} else if (S_ISLNK(st->st_mode)) {
		char target[ROOTFS_PATH_MAX];
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0) {
			r = -errno;
		} else if ((size_t)n >= sizeof(target) - 1) {
			r = -ENAMETOOLONG;
		} else {
			target[n] = '\0';
			r = rootfs_tree_add_symlink(t, dst, target);
		}
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		r = rootfs_tree_add_node(t, dst, st->st_mode, st->st_rdev);
	} else if (S_ISDIR(st->st_mode)) {
		char norm[ROOTFS_PATH_MAX];
		r = rootfs_path_normalize(dst, norm, sizeof(norm));
		if (r == 0 && norm[0])
			r = rootfs_tree_add_dir(t, norm, st->st_mode);
		if (r < 0)
			goto fail;
		DIR *dir = opendir(src);
		if (!dir) {
			r = -errno;
			goto fail;
		}
		struct dirent *de;
		r = 0;
		while (r >= 0 && (errno = 0, de = readdir(dir))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			char s[ROOTFS_PATH_MAX], t2[ROOTFS_PATH_MAX];
			struct stat cst;
			if (snprintf(s, sizeof(s), "%s/%s", src, de->d_name) >= (int)sizeof(s) ||
			    snprintf(t2, sizeof(t2), "%s/%s", norm, de->d_name) >=
			        (int)sizeof(t2)) {
				err_set_errno(d, -ENAMETOOLONG, "%s/%s: path too long", src,
				              de->d_name);
				r = -ENAMETOOLONG;
				break;
			}
			if (lstat(s, &cst) < 0) {
				r = -errno;
				err_set_errno(d, r, "%s: %s", s, strerror(-r));
				break;
			}
			r = add_host_rec(t, s, t2, &cst, depth + 1, d);
		}
		if (r >= 0 && errno)
			r = -errno;
		closedir(dir);
		return r;
	} else {
		return 0; /* sockets and fifos belong to a running system */
	}
fail:
	if (r < 0 && d && !d->msg[0])
		err_set_errno(d, r, "%s -> %s: %s", src, dst, strerror(-r));
	return r;
}

int rootfs_tree_add_host(struct rootfs_tree *t, const char *src, const char *dst, struct err *d)
{
	struct stat st;
	/* The top is followed: "--add ./link:/x" means what link points at. */
	if (stat(src, &st) < 0) {
		int r = -errno;
		err_set_errno(d, r, "%s: %s", src, strerror(-r));
		return r;
	}
	err_clear(d);
	return add_host_rec(t, src, dst, &st, 0, d);
}

int rootfs_tree_add_host_path(struct rootfs_tree *t, const char *host_path, char *ret_real,
                              size_t real_size, struct err *d)
{
	char cur[ROOTFS_PATH_MAX], next[ROOTFS_PATH_MAX * 2];
	int r = rootfs_path_normalize(host_path, cur, sizeof(cur));
	if (r < 0 || !cur[0] || host_path[0] != '/') {
		return err_set_errno(d, r < 0 ? r : -EINVAL, "%s: not an absolute file path",
		                     host_path);
	}
	for (int hops = 0; hops <= SYMLINK_HOPS_MAX; hops++) {
		char probe[ROOTFS_PATH_MAX + 1];
		const char *p = cur;
		bool restarted = false;
		for (;;) {
			const char *end = strchrnul(p, '/');
			snprintf(probe, sizeof(probe), "/%.*s", (int)(end - cur), cur);
			struct stat st;
			if (lstat(probe, &st) < 0) {
				r = -errno;
				if (strcmp(probe + 1, cur) == 0)
					err_set_errno(d, r, "%s: %s", host_path, strerror(-r));
				else
					err_set_errno(d, r, "%s: %s (at %s)", host_path,
					              strerror(-r), probe);
				return r;
			}
			if (S_ISLNK(st.st_mode)) {
				char target[ROOTFS_PATH_MAX];
				ssize_t n = readlink(probe, target, sizeof(target) - 1);
				if (n < 0 || (size_t)n >= sizeof(target) - 1) {
					return err_set_errno(d, n < 0 ? -errno : -ENAMETOOLONG,
					                     "%s: cannot read link", probe);
				}
				target[n] = '\0';
				r = rootfs_tree_add_symlink(t, probe, target);
				if (r < 0) {
					return err_set_errno(d, r, "%s: %s", probe, strerror(-r));
				}
				const char *slash = strrchr(probe, '/');
				snprintf(next, sizeof(next), "%.*s/%s/%s",
				         target[0] == '/' ? 0 : (int)(slash - probe), probe, target,
				         *end ? end + 1 : "");
				r = rootfs_path_normalize(next, cur, sizeof(cur));
				if (r < 0)
					return r;
				restarted = true;
				break;
			}
			if (!*end) {
				if (!S_ISREG(st.st_mode)) {
					return err_set_errno(d, -EINVAL, "%s: not a regular file",
					                     probe);
				}
				r = rootfs_tree_add_file(t, probe, st.st_mode, probe);
				if (r < 0) {
					return err_set_errno(d, r, "%s: %s", probe, strerror(-r));
				}
				if (ret_real)
					return str_copy(ret_real, real_size, probe);
				return 0;
			}
			if (!S_ISDIR(st.st_mode)) {
				return err_set_errno(d, -ENOTDIR, "%s: not a directory", probe);
			}
			p = end + 1;
		}
		if (!restarted)
			break;
	}
	err_set_errno(d, -ELOOP, "%s: too many levels of symbolic links", host_path);
	return -ELOOP;
}

/* Sorted by path (bytewise), so parents come before children. */
static int entry_cmp(const void *a, const void *b)
{
	const struct rootfs_entry *x = *(const struct rootfs_entry *const *)a;
	const struct rootfs_entry *y = *(const struct rootfs_entry *const *)b;
	return strcmp(x->path, y->path);
}

int rootfs_tree_sorted(const struct rootfs_tree *t, const struct rootfs_entry ***ret)
{
	const struct rootfs_entry **v = malloc((t->n ? t->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++)
		v[i] = &t->e[i];
	qsort(v, t->n, sizeof(*v), entry_cmp);
	*ret = v;
	return 0;
}
