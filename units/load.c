/* load: a unit's definition from the search path — the fragment (or the
 * built-in) resolve.c finds, the drop-ins of the unit, its aliases, its
 * template and its type merged in file-name order, and the enablement
 * links of NAME.wants/ and NAME.requires/ — fed through unit_file_parse
 * into unit_def_apply. Also the search path itself and the listing of the
 * unit files present. */
#include "units/files-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const system_dirs[] = {
    "/etc/systemd/system",
    "/run/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
};

int unit_paths_init(struct unit_paths *p, const char *root)
{
	*p = (struct unit_paths){0};
	if (root && strcmp(root, "/") != 0) {
		int r = str_copy(p->root, sizeof(p->root), root);
		if (r < 0)
			return r;
		size_t n = strlen(p->root);
		while (n > 1 && p->root[n - 1] == '/')
			p->root[--n] = '\0';
	}
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		str_copy(p->dirs[p->ndirs++], sizeof(p->dirs[0]), system_dirs[i]);
	return 0;
}

int unit_paths_prepend(struct unit_paths *p, const char *dir)
{
	if (!dir || dir[0] != '/')
		return -EINVAL;
	if (p->ndirs >= UNIT_DIRS_MAX)
		return -E2BIG;
	if (strlen(dir) >= sizeof(p->dirs[0]))
		return -ENAMETOOLONG;
	memmove(p->dirs[1], p->dirs[0], p->ndirs * sizeof(p->dirs[0]));
	str_copy(p->dirs[0], sizeof(p->dirs[0]), dir);
	p->ndirs++;
	return 0;
}

/* What every assignment of one load goes through. */
struct apply {
	struct unit_def *d;
	const struct unit_spec_ctx *ctx;
	unit_diag_fn diag;
	void *data;
};

/* The parser's diag goes to the caller's with the caller's data (the
 * parser has one data pointer for both callbacks: ours). */
_printf_(4, 5) static void apply_diag(void *data, const char *file, unsigned line, const char *fmt,
                                      ...)
{
	struct apply *ap = data;
	char msg[512];
	va_list va;
	if (!ap->diag)
		return;
	va_start(va, fmt);
	vsnprintf(msg, sizeof(msg), fmt, va);
	va_end(va);
	ap->diag(ap->data, file, line, "%s", msg);
}

static int apply_one(const struct unit_assign *a, void *data)
{
	struct apply *ap = data;
	int r = unit_def_apply(ap->d, a, ap->ctx, ap->diag, ap->data);
	return r == -ENOMEM ? r : 0;
}

/* Reads and applies one file (fragment or drop-in) below the root. */
static int apply_file(const struct unit_dirs *dirs, const char *path, struct apply *ap,
                      struct err *err)
{
	_cleanup_close_ int fd = unit_dirs_openat(dirs, path, O_PATH);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = fd;
	if (fd >= 0) {
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		r = file_read_regular(fdpath, UNIT_FILE_MAX, &text, &len);
	}
	if (r < 0)
		return err_set_errno(err, r, "unit \"%s\": %s: %s", ap->d->name.full, path,
		                     r == -EINVAL  ? "not a regular file"
		                     : r == -EFBIG ? "larger than 256 KiB"
		                                   : strerror(-r));
	return unit_file_parse(text, len, path, apply_one, apply_diag, ap, err);
}

/* One drop-in, by its file name: the first directory's wins. */
struct dropin {
	char name[NAME_MAX + 1];
	char path[PATH_MAX];
	bool masked;
};

static int dropin_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

/* The *.conf files of one NAME.d directory, added unless a name is known. */
static void dropins_dir(const struct unit_dirs *dirs, const char *dir, struct dropin *v, size_t *n,
                        struct apply *ap)
{
	int fd = unit_dirs_openat(dirs, dir, O_RDONLY | O_DIRECTORY);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(dp));) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".conf") != 0)
			continue;
		bool known = false;
		for (size_t i = 0; i < *n && !known; i++)
			known = strcmp(v[i].name, e->d_name) == 0;
		if (known)
			continue;
		if (*n >= UNIT_DROPINS_MAX) {
			if (ap->diag)
				ap->diag(ap->data, dir, 0, "%s: more than %d drop-ins, %s ignored",
				         dir, UNIT_DROPINS_MAX, e->d_name);
			continue;
		}
		struct dropin *x = &v[(*n)++];
		str_copy(x->name, sizeof(x->name), e->d_name);
		snprintf(x->path, sizeof(x->path), "%s/%s", dir, e->d_name);
		/* A link to /dev/null hides a same-named drop-in below. */
		char target[16];
		ssize_t t = readlinkat(fd, e->d_name, target, sizeof(target) - 1);
		x->masked = t == 9 && memcmp(target, "/dev/null", 9) == 0;
	}
	closedir(dp);
}

/* The names whose NAME.d/ and NAME.wants/ apply: the unit's, its aliases',
 * its template's (and the template's aliases). */
static int names_of(const struct unit_def *d, const struct unit_name *n, struct unit_strv *names)
{
	int r = unit_strv_push(names, n->full);
	for (size_t i = 0; r >= 0 && i < d->source.aliases.n; i++) {
		struct unit_name a;
		const char *s = d->source.aliases.v[i];
		if (!unit_strv_contains(names, s))
			r = unit_strv_push(names, s);
		if (r >= 0 && unit_name_parse(s, &a, NULL) == 0 && a.instance && a.instance[0] &&
		    !unit_strv_contains(names, a.template_name))
			r = unit_strv_push(names, a.template_name);
	}
	if (r >= 0 && n->instance && n->instance[0] && !unit_strv_contains(names, n->template_name))
		r = unit_strv_push(names, n->template_name);
	return r;
}

static int load_dropins(const struct unit_dirs *dirs, const struct unit_strv *names,
                        struct apply *ap, struct err *err)
{
	_cleanup_free_ struct dropin *v = calloc(UNIT_DROPINS_MAX, sizeof(*v));
	size_t n = 0;
	if (!v)
		return -ENOMEM;
	char dir[PATH_MAX];
	for (size_t i = 0; i < dirs->n; i++) {
		for (size_t k = 0; k < names->n; k++) {
			snprintf(dir, sizeof(dir), "%s/%s.d", dirs->path[i], names->v[k]);
			dropins_dir(dirs, dir, v, &n, ap);
		}
		snprintf(dir, sizeof(dir), "%s/%s.d", dirs->path[i],
		         unit_type_name(ap->d->name.type));
		dropins_dir(dirs, dir, v, &n, ap);
	}
	qsort(v, n, sizeof(*v), dropin_cmp);
	for (size_t i = 0; i < n; i++) {
		if (v[i].masked)
			continue;
		int r = apply_file(dirs, v[i].path, ap, err);
		if (r == -ENOMEM)
			return r;
		if (r < 0) { /* a bad drop-in is reported, the unit still loads */
			if (ap->diag)
				ap->diag(ap->data, v[i].path, 0, "%s: %s", v[i].path,
				         err ? err->msg : "unreadable");
			err_clear(err);
			continue;
		}
		if ((r = unit_strv_push(&ap->d->source.dropins, v[i].path)) < 0)
			return r;
	}
	return 0;
}

static int strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of one NAME.wants/ (or .requires/) directory: names of
 * units to pull in; a template's gets the unit's instance. */
static int links_dir(const struct unit_dirs *dirs, const char *dir, const struct unit_name *n,
                     struct unit_strv *l, struct apply *ap)
{
	int fd = unit_dirs_openat(dirs, dir, O_RDONLY | O_DIRECTORY);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(dp));) {
		struct unit_name w;
		char buf[UNIT_NAME_MAX + 1];
		const char *name = e->d_name;
		if (name[0] == '.')
			continue;
		if (unit_name_parse(name, &w, NULL) < 0) {
			if (ap->diag)
				ap->diag(ap->data, dir, 0, "%s: \"%s\" is not a unit name, ignored",
				         dir, name);
			continue;
		}
		if (w.instance && !w.instance[0]) {
			if (!n->instance || !n->instance[0] ||
			    unit_name_instantiate(name, n->instance, buf, sizeof(buf)) < 0)
				continue; /* a template needs an instance to mean a unit */
			name = buf;
		}
		if (!unit_strv_contains(l, name))
			r = unit_strv_push(l, name);
	}
	closedir(dp);
	return r;
}

static int load_links(const struct unit_dirs *dirs, const struct unit_strv *names,
                      const struct unit_name *n, struct apply *ap)
{
	char dir[PATH_MAX];
	int r = 0;
	for (size_t i = 0; r >= 0 && i < dirs->n; i++)
		for (size_t k = 0; r >= 0 && k < names->n; k++) {
			snprintf(dir, sizeof(dir), "%s/%s.wants", dirs->path[i], names->v[k]);
			r = links_dir(dirs, dir, n, &ap->d->wants_dir, ap);
			snprintf(dir, sizeof(dir), "%s/%s.requires", dirs->path[i], names->v[k]);
			if (r >= 0)
				r = links_dir(dirs, dir, n, &ap->d->requires_dir, ap);
		}
	struct unit_strv *ls[] = {&ap->d->wants_dir, &ap->d->requires_dir};
	for (size_t i = 0; i < ARRAY_SIZE(ls); i++)
		if (ls[i]->n > 1)
			qsort(ls[i]->v, ls[i]->n, sizeof(char *), strv_cmp);
	return r == -E2BIG ? 0 : r;
}

/* The fragment, drop-ins and links of a unit found (not masked). */
static int load_body(const struct unit_dirs *dirs, const struct unit_found *f,
                     const struct unit_name *n, struct apply *ap, struct err *err)
{
	int r;
	if (f->builtin)
		r = unit_file_parse(f->builtin, strlen(f->builtin), f->name, apply_one, apply_diag,
		                    ap, err);
	else
		r = apply_file(dirs, f->path, ap, err);
	if (r < 0)
		return r;
	struct unit_strv names = {0};
	r = names_of(ap->d, n, &names);
	if (r >= 0)
		r = load_dropins(dirs, &names, ap, err);
	if (r >= 0)
		r = load_links(dirs, &names, n, ap);
	unit_strv_clear(&names);
	if (r == -ENOMEM)
		err_set(err, r, ERR_RESOURCE_EXHAUSTED, "unit \"%s\": out of memory", n->full);
	return r;
}

static int load_found(const struct unit_dirs *dirs, const struct unit_found *f,
                      const struct unit_spec_ctx *base, unit_diag_fn diag, void *data,
                      struct unit_def **ret, struct err *err)
{
	struct unit_name n;
	int r = unit_name_parse(f->name, &n, err);
	if (r < 0)
		return r;
	struct unit_def *d = NULL;
	if ((r = unit_def_new(&n, &d)) < 0)
		return err_set_errno(err, r, "unit \"%s\": %s", n.full, strerror(-r));
	d->source.masked = f->masked;
	d->source.fragment = strdup(f->path);
	r = d->source.fragment ? 0 : -ENOMEM;
	for (size_t i = 0; r >= 0 && i < f->aliases.n; i++)
		if (strcmp(f->aliases.v[i], n.full) != 0)
			r = unit_strv_push(&d->source.aliases, f->aliases.v[i]);
	if (r >= 0 && !f->masked) {
		/* The name given to specifiers is this local one: its instance
		 * points into its own full name. */
		struct unit_spec_ctx ctx = base ? *base : (struct unit_spec_ctx){0};
		ctx.name = &n;
		struct apply ap = {.d = d, .ctx = &ctx, .diag = diag, .data = data};
		r = load_body(dirs, f, &n, &ap, err);
	} else if (r < 0) {
		err_set(err, r, ERR_RESOURCE_EXHAUSTED, "unit \"%s\": out of memory", n.full);
	}
	if (r < 0) {
		unit_def_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

int unit_load(const struct unit_paths *p, const char *name, const struct unit_spec_ctx *base,
              unit_diag_fn diag, void *data, struct unit_def **ret, struct err *err)
{
	struct unit_dirs dirs;
	struct unit_found f;
	int r = unit_dirs_open(p, &dirs, err);
	if (r < 0)
		return r;
	r = unit_find(&dirs, name, &f, err);
	if (r >= 0) {
		r = f.masked ? 0 : unit_find_aliases(&dirs, &f);
		if (r < 0)
			err_set(err, r, ERR_RESOURCE_EXHAUSTED, "unit \"%s\": %s", name,
			        strerror(-r));
		else
			r = load_found(&dirs, &f, base, diag, data, ret, err);
		unit_found_clear(&f);
	}
	unit_dirs_close(&dirs);
	return r;
}

/* ---- listing ----------------------------------------------------------------- */

#define UNIT_FILES_LIST_MAX (UNITS_MAX * 4)

struct listed {
	char name[UNIT_NAME_MAX + 1];
	const char *dir; /* into the paths' dirs */
};
struct listing {
	struct listed *v;
	size_t n, cap;
};

static int listed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

/* Whether a name is listed already (a higher directory had it). */
static bool listing_has(const struct listing *l, size_t upto, const char *name)
{
	for (size_t i = 0; i < upto; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return true;
	return false;
}

static int list_dir(const struct unit_dirs *dirs, size_t i, struct listing *l)
{
	int fd = fcntl(dirs->fd[i], F_DUPFD_CLOEXEC, 3);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	size_t before = l->n; /* names of higher directories */
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(dp));) {
		struct unit_name n;
		if (unit_name_parse(e->d_name, &n, NULL) < 0 || (n.instance && !n.instance[0]) ||
		    listing_has(l, before, e->d_name))
			continue;
		if (l->n >= UNIT_FILES_LIST_MAX)
			break;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 64;
			struct listed *v = realloc(l->v, cap * sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			l->v = v;
			l->cap = cap;
		}
		str_copy(l->v[l->n].name, sizeof(l->v[0].name), e->d_name);
		l->v[l->n].dir = dirs->path[i];
		l->n++;
	}
	closedir(dp);
	return r;
}

int unit_files_list(const struct unit_paths *p, unit_file_visit_fn fn, void *data)
{
	struct unit_dirs dirs;
	struct listing l = {0};
	int r = unit_dirs_open(p, &dirs, NULL);
	if (r < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < dirs.n; i++)
		r = list_dir(&dirs, i, &l);
	unit_dirs_close(&dirs);
	/* In name order, as systemctl list-unit-files shows them. */
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), listed_cmp);
	for (size_t i = 0; r >= 0 && i < l.n; i++) {
		char state[32], path[PATH_MAX];
		if (unit_file_state(p, l.v[i].name, state, sizeof(state)) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", l.v[i].dir, l.v[i].name);
		r = fn(l.v[i].name, state, path, data);
	}
	free(l.v);
	return r < 0 ? r : 0;
}
