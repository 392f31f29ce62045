/* resolve: from a unit name to the file that defines it — the search path
 * opened once below the root, masks (links to /dev/null, empty files),
 * aliases (a link named one unit pointing at another's file in the search
 * path), links to files elsewhere, an instance's fall back to its
 * template, and the built-ins last. The root may be a guest's or a
 * package's tree: every path is resolved beneath it (openat2
 * RESOLVE_IN_ROOT), so neither an absolute link nor ".." leaves it. */
#include "units/files-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

int unit_dirs_openat(const struct unit_dirs *d, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, d->rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int unit_dirs_open(const struct unit_paths *p, struct unit_dirs *ret, struct err *err)
{
	struct unit_dirs d = {.p = p};
	const char *root = p->root[0] ? p->root : "/";
	d.rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d.rootfd < 0)
		return err_set_errno(err, -errno, "unit search path: root \"%s\": %s", root,
		                     strerror(errno));
	for (size_t i = 0; i < p->ndirs && i < UNIT_DIRS_MAX; i++) {
		int fd = unit_dirs_openat(&d, p->dirs[i], O_RDONLY | O_DIRECTORY);
		if (fd == -ENOSYS) {
			unit_dirs_close(&d);
			return err_set(err, -ENOSYS, ERR_UNIMPLEMENTED,
			               "unit search path: openat2 is missing (Linux 5.6 or later "
			               "needed)");
		}
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			continue; /* a directory missing (or unreadable) is none */
		}
		bool seen = false;
		for (size_t j = 0; j < d.n; j++)
			seen |= d.dev[j] == st.st_dev && d.ino[j] == st.st_ino;
		if (seen) {
			close(fd);
			continue;
		}
		d.fd[d.n] = fd;
		d.path[d.n] = p->dirs[i];
		d.dev[d.n] = st.st_dev;
		d.ino[d.n++] = st.st_ino;
	}
	*ret = d;
	return 0;
}

void unit_dirs_close(struct unit_dirs *d)
{
	for (size_t i = 0; i < d->n; i++)
		close(d->fd[i]);
	d->n = 0;
	if (d->rootfd >= 0)
		close(d->rootfd);
	d->rootfd = -1;
}

int unit_path_join(const char *dir, const char *target, char *buf, size_t size)
{
	char tmp[PATH_MAX * 2];
	int n = target[0] == '/' ? snprintf(tmp, sizeof(tmp), "%s", target)
	                         : snprintf(tmp, sizeof(tmp), "%s/%s", dir, target);
	if (n < 0 || (size_t)n >= sizeof(tmp) || size < 2)
		return -ENAMETOOLONG;
	size_t out = 0;
	for (char *save = NULL, *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			while (out > 0 && buf[--out] != '/')
				;
			continue;
		}
		size_t len = strlen(c);
		if (out + 1 + len + 1 > size)
			return -ENAMETOOLONG;
		buf[out++] = '/';
		memcpy(buf + out, c, len);
		out += len;
	}
	if (out == 0)
		buf[out++] = '/';
	buf[out] = '\0';
	return 0;
}

bool unit_dirs_contains(const struct unit_dirs *d, const char *dir)
{
	for (size_t i = 0; i < d->p->ndirs; i++)
		if (strcmp(d->p->dirs[i], dir) == 0)
			return true;
	_cleanup_close_ int fd = unit_dirs_openat(d, dir, O_PATH | O_DIRECTORY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < d->n; i++)
		if (d->dev[i] == st.st_dev && d->ino[i] == st.st_ino)
			return true;
	return false;
}

void unit_found_clear(struct unit_found *f)
{
	unit_strv_clear(&f->aliases);
}

/* A link's target: its text, and its directory and base name once made
 * absolute in the root. */
struct link {
	char abs[PATH_MAX];
	const char *base;
	char dir[PATH_MAX];
};

static int link_read(const struct unit_dirs *d, size_t i, const char *name, struct link *l)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(d->fd[i], name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	int r = unit_path_join(d->path[i], target, l->abs, sizeof(l->abs));
	if (r < 0)
		return r;
	char *slash = strrchr(l->abs, '/');
	l->base = slash + 1;
	size_t dl = (size_t)(slash - l->abs);
	memcpy(l->dir, l->abs, dl ? dl : 1);
	l->dir[dl ? dl : 1] = '\0';
	return 0;
}

/* Whether the link named name is an alias: its target is another unit name
 * of the same type, in the search path, and a template only for a
 * template. */
static bool link_is_alias(const struct unit_dirs *d, const char *name, const struct link *l)
{
	struct unit_name a, b;
	if (strcmp(name, l->base) == 0 || unit_name_parse(name, &a, NULL) < 0 ||
	    unit_name_parse(l->base, &b, NULL) < 0 || a.type != b.type)
		return false;
	if ((a.instance != NULL) != (b.instance != NULL))
		return false;
	if (a.instance && !a.instance[0] != !b.instance[0])
		return false;
	return unit_dirs_contains(d, l->dir);
}

/* The file a link points at (not an alias): masked, a fragment, or an
 * error naming the link. */
static int link_follow(const struct unit_dirs *d, const char *entry, const struct link *l,
                       struct unit_found *f, struct err *err)
{
	if (strcmp(l->abs, "/dev/null") == 0)
		return f->masked = true, 0;
	_cleanup_close_ int fd = unit_dirs_openat(d, l->abs, O_PATH);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = fd < 0 ? fd : -errno;
		return err_set_errno(err, r, "unit \"%s\": link %s -> %s: %s", f->name, entry,
		                     l->abs, strerror(-r));
	}
	if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3)
		return f->masked = true, 0;
	if (S_ISREG(st.st_mode) && st.st_size == 0)
		return f->masked = true, 0;
	f->linked = true;
	return str_copy(f->path, sizeof(f->path), l->abs);
}

static int find_entry(const struct unit_dirs *d, const char *name, struct unit_found *f,
                      unsigned depth, struct err *err);

/* The name's entry in directory i: a file, a mask, a link. */
static int entry_use(const struct unit_dirs *d, size_t i, const char *name, const struct stat *st,
                     struct unit_found *f, unsigned depth, struct err *err)
{
	char entry[PATH_MAX];
	snprintf(entry, sizeof(entry), "%s/%s", d->path[i], name);
	if (!f->entry[0])
		str_copy(f->entry, sizeof(f->entry), entry);
	if (S_ISREG(st->st_mode)) {
		if (st->st_size == 0)
			return f->masked = true, 0;
		return str_copy(f->path, sizeof(f->path), entry);
	}
	if (!S_ISLNK(st->st_mode))
		return err_set(err, -EISDIR, ERR_FAILED_PRECONDITION,
		               "unit \"%s\": %s is not a file", name, entry);
	struct link l;
	int r = link_read(d, i, name, &l);
	if (r < 0)
		return err_set_errno(err, r, "unit \"%s\": link %s: %s", name, entry, strerror(-r));
	if (strcmp(l.abs, "/dev/null") != 0 && link_is_alias(d, name, &l)) {
		if (depth >= UNIT_ALIAS_DEPTH)
			return err_set(err, -ELOOP, ERR_FAILED_PRECONDITION,
			               "unit \"%s\": aliases link in a loop (%s)", f->name, entry);
		if ((r = unit_strv_push(&f->aliases, name)) < 0)
			return r;
		if (depth == 0)
			f->alias = true;
		return find_entry(d, l.base, f, depth + 1, err);
	}
	return link_follow(d, entry, &l, f, err);
}

/* Template fall back: "getty@tty1.service" defined by "getty@.service"
 * (which may itself be an alias of another template). */
static int find_template(const struct unit_dirs *d, const struct unit_name *n, struct unit_found *f,
                         unsigned depth, struct err *err)
{
	struct unit_found t = {0};
	str_copy(t.name, sizeof(t.name), n->template_name);
	int r = find_entry(d, n->template_name, &t, depth + 1, err);
	if (r < 0) {
		unit_found_clear(&t);
		return r;
	}
	char buf[UNIT_NAME_MAX + 1];
	r = unit_name_instantiate(t.name, n->instance, buf, sizeof(buf));
	for (size_t i = 0; r >= 0 && i < t.aliases.n; i++) {
		char a[UNIT_NAME_MAX + 1];
		if (unit_name_instantiate(t.aliases.v[i], n->instance, a, sizeof(a)) == 0 &&
		    !unit_strv_contains(&f->aliases, a) && strcmp(a, buf) != 0)
			r = unit_strv_push(&f->aliases, a);
	}
	if (r >= 0) {
		str_copy(f->name, sizeof(f->name), buf);
		memcpy(f->path, t.path, sizeof(f->path));
		f->builtin = t.builtin;
		f->masked = t.masked;
		f->linked = t.linked;
		f->alias = f->alias || (depth == 0 && t.aliases.n > 0);
		if (!f->entry[0])
			memcpy(f->entry, t.entry, sizeof(f->entry));
	}
	unit_found_clear(&t);
	return r < 0 ? err_set_errno(err, r, "unit \"%s\": %s", n->full, strerror(-r)) : 0;
}

static int find_entry(const struct unit_dirs *d, const char *name, struct unit_found *f,
                      unsigned depth, struct err *err)
{
	struct unit_name n;
	int r = unit_name_parse(name, &n, err);
	if (r < 0)
		return r;
	str_copy(f->name, sizeof(f->name), name);
	for (size_t i = 0; i < d->n; i++) {
		struct stat st;
		if (fstatat(d->fd[i], name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			return err_set_errno(err, -errno, "unit \"%s\": %s/%s: %s", name,
			                     d->path[i], name, strerror(errno));
		}
		return entry_use(d, i, name, &st, f, depth, err);
	}
	if (n.instance && n.instance[0])
		return find_template(d, &n, f, depth, err);
	const char *alias_of = NULL;
	const char *text = unit_builtin_text(name, &alias_of);
	if (alias_of) {
		if ((r = unit_strv_push(&f->aliases, name)) < 0)
			return r;
		f->alias = depth == 0;
		return find_entry(d, alias_of, f, depth + 1, err);
	}
	if (text)
		return f->builtin = text, 0;
	return err_set(err, -ENOENT, ERR_NOT_FOUND, "unit \"%s\": no unit file in the search path",
	               name);
}

int unit_find(const struct unit_dirs *d, const char *name, struct unit_found *ret, struct err *err)
{
	*ret = (struct unit_found){0};
	int r = find_entry(d, name, ret, 0, err);
	if (r < 0)
		unit_found_clear(ret);
	return r;
}

/* The aliases of one directory: links to f->name (or to one of its known
 * aliases). Only the first directory holding a name counts. */
static int aliases_in_dir(const struct unit_dirs *d, size_t i, struct unit_found *f,
                          const char *target)
{
	int fd = fcntl(d->fd[i], F_DUPFD_CLOEXEC, 3);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(dir));) {
		struct link l;
		if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(e->d_name, f->name) == 0 || unit_strv_contains(&f->aliases, e->d_name) ||
		    !unit_name_valid(e->d_name) || link_read(d, i, e->d_name, &l) < 0)
			continue;
		bool hidden = false; /* a higher directory's entry of that name wins */
		for (size_t j = 0; j < i && !hidden; j++)
			hidden = faccessat(d->fd[j], e->d_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
		if (!hidden &&
		    (strcmp(l.base, target) == 0 || unit_strv_contains(&f->aliases, l.base)) &&
		    link_is_alias(d, e->d_name, &l))
			r = unit_strv_push(&f->aliases, e->d_name);
	}
	closedir(dir);
	return r;
}

int unit_find_aliases(const struct unit_dirs *d, struct unit_found *f)
{
	struct unit_name n;
	int r = unit_name_parse(f->name, &n, NULL);
	if (r < 0)
		return r;
	/* An instance's aliases are its template's, instantiated. */
	const char *target = n.instance && n.instance[0] ? n.template_name : f->name;
	struct unit_found t = {0};
	str_copy(t.name, sizeof(t.name), target);
	for (size_t i = 0; r >= 0 && i < d->n; i++)
		r = aliases_in_dir(d, i, &t, target);
	for (size_t i = 0; r >= 0 && i < t.aliases.n; i++) {
		char buf[UNIT_NAME_MAX + 1];
		const char *a = t.aliases.v[i];
		if (target != f->name) {
			if (unit_name_instantiate(a, n.instance, buf, sizeof(buf)) < 0)
				continue;
			a = buf;
		}
		if (!unit_strv_contains(&f->aliases, a))
			r = unit_strv_push(&f->aliases, a);
	}
	unit_found_clear(&t);
	return r;
}
