/* install: systemctl's enable, disable, mask, unmask and is-enabled on the
 * files — the links an [Install] section asks for, as deb-systemd-helper
 * makes them (/etc/systemd/system/multi-user.target.wants/ssh.service ->
 * /lib/systemd/system/ssh.service, Alias= links beside them). Writes go to
 * the first directory of the search path only, opened beneath the root
 * without following a link on the way. */
#include "units/files-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define INSTALL_ALSO_MAX 32 /* units one enable or disable visits through Also= */

struct install_parse {
	struct unit_install *ins;
	const struct unit_spec_ctx *ctx;
};

static int install_word(struct unit_strv *l, const char *w, const struct unit_spec_ctx *ctx)
{
	_cleanup_free_ char *x = NULL;
	if (unit_specifiers_expand(w, ctx, &x, NULL) < 0 || !unit_name_valid(x))
		return 0; /* systemctl skips a bad name too */
	if (unit_strv_contains(l, x))
		return 0;
	int r = unit_strv_push(l, x);
	return r == -E2BIG ? 0 : r;
}

static int install_assign(const struct unit_assign *a, void *data)
{
	struct install_parse *ip = data;
	struct unit_install *ins = ip->ins;
	struct unit_strv *l = NULL;
	if (strcmp(a->section, "Install") != 0)
		return 0;
	if (strcmp(a->key, "DefaultInstance") == 0) {
		free(ins->default_instance);
		ins->default_instance = NULL;
		if (a->value[0] &&
		    unit_specifiers_expand(a->value, ip->ctx, &ins->default_instance, NULL) < 0)
			ins->default_instance = NULL;
		return 0;
	}
	if (strcmp(a->key, "WantedBy") == 0)
		l = &ins->wanted_by;
	else if (strcmp(a->key, "RequiredBy") == 0)
		l = &ins->required_by;
	else if (strcmp(a->key, "Alias") == 0)
		l = &ins->alias;
	else if (strcmp(a->key, "Also") == 0)
		l = &ins->also;
	else
		return 0;
	if (!a->value[0]) {
		unit_strv_clear(l);
		return 0;
	}
	_cleanup_free_ char *v = strdup(a->value);
	if (!v)
		return -ENOMEM;
	int r = 0;
	for (char *save = NULL, *w = strtok_r(v, " \t", &save); w && r >= 0;
	     w = strtok_r(NULL, " \t", &save))
		r = install_word(l, w, ip->ctx);
	return r;
}

static void install_clear(struct unit_install *ins)
{
	unit_strv_clear(&ins->wanted_by);
	unit_strv_clear(&ins->required_by);
	unit_strv_clear(&ins->alias);
	unit_strv_clear(&ins->also);
	free(ins->default_instance);
	ins->default_instance = NULL;
}

/* The [Install] section of f's fragment (only the fragment: systemctl reads
 * no drop-in for it), specifiers expanded for the unit named as. */
static int install_read(const struct unit_dirs *dirs, const struct unit_found *f, const char *as,
                        struct unit_install *ret, struct err *err)
{
	struct unit_name n;
	int r = unit_name_parse(as, &n, err);
	if (r < 0)
		return r;
	struct unit_spec_ctx ctx = {.name = &n};
	struct install_parse ip = {.ins = ret, .ctx = &ctx};
	if (f->builtin) /* kin's own copy: no file to link to, nothing to enable */
		return 0;
	_cleanup_close_ int fd = unit_dirs_openat(dirs, f->path, O_PATH);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	r = fd;
	if (fd >= 0) {
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		r = file_read_regular(fdpath, UNIT_FILE_MAX, &text, &len);
	}
	if (r < 0)
		return err_set_errno(err, r, "unit \"%s\": %s: %s", as, f->path, strerror(-r));
	return unit_file_parse(text, len, f->path, install_assign, NULL, &ip, err);
}

/* ---- links in the first directory ----------------------------------------------- */

struct installer {
	const struct unit_paths *p;
	struct unit_dirs dirs;
	int etcfd; /* p->dirs[0], opened beneath the root without links */
	unit_change_fn change;
	void *data;
	struct unit_strv visited; /* Also= loops end here */
	int first_error;
	struct err *err;
};

static bool same_target(const struct installer *in, const char *sub, const char *have,
                        const char *want)
{
	if (strcmp(have, want) == 0)
		return true;
	/* /usr/lib/systemd/system/x and /lib/systemd/system/x are one file in
	 * a merged-usr root: the same name in a search-path directory is. */
	char a[PATH_MAX], dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s%s%s", in->p->dirs[0], sub[0] ? "/" : "", sub);
	if (unit_path_join(dir, have, a, sizeof(a)) < 0)
		return false;
	const char *sa = strrchr(a, '/'), *sw = strrchr(want, '/');
	if (!sa || !sw || strcmp(sa, sw) != 0)
		return false;
	a[sa - a ? sa - a : 1] = '\0';
	return unit_dirs_contains(&in->dirs, a);
}

/* sub/name -> target in the first directory ("" sub: at its top). */
static void link_make(struct installer *in, const char *sub, const char *name, const char *target)
{
	char path[PATH_MAX], have[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s%s%s", in->p->dirs[0], sub, sub[0] ? "/" : "", name);
	_cleanup_close_ int fd = -1;
	int r = sub[0] ? dir_open_beneath(in->etcfd, sub, 0755, &fd) : 0;
	int dfd = sub[0] ? fd : in->etcfd;
	if (r >= 0 && symlinkat(target, dfd, name) == 0) {
		if (in->change)
			in->change("created", path, target, in->data);
		return;
	}
	r = r < 0 ? r : -errno;
	if (r == -EEXIST) {
		ssize_t n = readlinkat(dfd, name, have, sizeof(have) - 1);
		if (n >= 0) {
			have[n] = '\0';
			if (same_target(in, sub, have, target))
				return;
		}
		err_set(in->err, -EEXIST, ERR_ALREADY_EXISTS, "unit link %s: exists%s%s", path,
		        n >= 0 ? " and points to " : " and is not a link", n >= 0 ? have : "");
	} else {
		err_set_errno(in->err, r, "unit link %s: %s", path, strerror(-r));
	}
	if (!in->first_error)
		in->first_error = r;
}

static int installer_open(struct installer *in, const struct unit_paths *p, unit_change_fn change,
                          void *data, struct err *err)
{
	*in = (struct installer){.p = p, .change = change, .data = data, .err = err, .etcfd = -1};
	if (p->ndirs == 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit search path: empty");
	int r = unit_dirs_open(p, &in->dirs, err);
	if (r < 0)
		return r;
	r = dir_open_beneath(in->dirs.rootfd, p->dirs[0], 0755, &in->etcfd);
	if (r < 0) {
		unit_dirs_close(&in->dirs);
		return err_set_errno(err, r, "unit directory %s: %s", p->dirs[0], strerror(-r));
	}
	return 0;
}

static void installer_close(struct installer *in)
{
	unit_dirs_close(&in->dirs);
	if (in->etcfd >= 0)
		close(in->etcfd);
	unit_strv_clear(&in->visited);
}

/* Finds name for enable/disable: masked is refused, Also= loops end. */
static int install_find(struct installer *in, const char *name, struct unit_found *f)
{
	if (unit_strv_contains(&in->visited, name))
		return 0;
	if (in->visited.n >= INSTALL_ALSO_MAX)
		return err_set(in->err, -E2BIG, ERR_OUT_OF_RANGE,
		               "unit \"%s\": Also= reaches more than %d units", name,
		               INSTALL_ALSO_MAX);
	int r = unit_strv_push(&in->visited, name);
	if (r < 0)
		return r;
	if ((r = unit_find(&in->dirs, name, f, in->err)) < 0)
		return r;
	if (f->masked) {
		unit_found_clear(f);
		return err_set(in->err, -ERFKILL, ERR_FAILED_PRECONDITION, "unit \"%s\": masked",
		               name);
	}
	return 1;
}

/* What enable links under: the name, a template's default instance. */
static int install_as(const struct unit_found *f, const struct unit_install *ins, char *buf,
                      size_t size)
{
	struct unit_name n;
	int r = unit_name_parse(f->name, &n, NULL);
	if (r < 0)
		return r;
	if (n.instance && !n.instance[0]) {
		if (!ins->default_instance)
			return 0; /* a template without DefaultInstance= links no WantedBy= */
		return unit_name_instantiate(f->name, ins->default_instance, buf, size) < 0 ? 0 : 1;
	}
	return str_copy(buf, size, f->name) < 0 ? -ENAMETOOLONG : 1;
}

static int enable_one(struct installer *in, const char *name, unsigned depth)
{
	struct unit_found f;
	struct unit_install ins = {0};
	char as[UNIT_NAME_MAX + 1], sub[UNIT_NAME_MAX + 16];
	int r = install_find(in, name, &f);
	if (r <= 0)
		return r;
	if (f.builtin) {
		unit_found_clear(&f);
		return 0;
	}
	r = install_read(&in->dirs, &f, f.name, &ins, in->err);
	int has = r < 0 ? r : install_as(&f, &ins, as, sizeof(as));
	if (has > 0 && (ins.default_instance || strchr(f.name, '@'))) {
		/* Specifiers of an instance see the instance's name. */
		install_clear(&ins);
		r = install_read(&in->dirs, &f, as, &ins, in->err);
	}
	struct unit_name an;
	bool inst = has > 0 && unit_name_parse(as, &an, NULL) == 0 && an.instance;
	for (size_t i = 0; r >= 0 && has > 0 && i < ins.wanted_by.n; i++) {
		snprintf(sub, sizeof(sub), "%s.wants", ins.wanted_by.v[i]);
		link_make(in, sub, as, f.path);
	}
	for (size_t i = 0; r >= 0 && has > 0 && i < ins.required_by.n; i++) {
		snprintf(sub, sizeof(sub), "%s.requires", ins.required_by.v[i]);
		link_make(in, sub, as, f.path);
	}
	for (size_t i = 0; r >= 0 && has >= 0 && i < ins.alias.n; i++) {
		char a[UNIT_NAME_MAX + 1];
		const char *alias = ins.alias.v[i];
		if (inst && strstr(alias, "@.") &&
		    unit_name_instantiate(alias, an.instance, a, sizeof(a)) == 0)
			alias = a;
		if (unit_type_from_suffix(alias) == unit_type_from_suffix(f.name))
			link_make(in, "", alias, f.path);
	}
	for (size_t i = 0; r >= 0 && i < ins.also.n && depth < INSTALL_ALSO_MAX; i++)
		if ((r = enable_one(in, ins.also.v[i], depth + 1)) == -ENOENT)
			r = 0; /* systemctl goes on past a missing Also= unit */
	install_clear(&ins);
	unit_found_clear(&f);
	return r < 0 ? r : has < 0 ? has : 0;
}

int unit_enable(const struct unit_paths *p, const char *name, unit_change_fn change, void *data,
                struct err *err)
{
	struct installer in;
	int r = installer_open(&in, p, change, data, err);
	if (r < 0)
		return r;
	r = enable_one(&in, name, 0);
	installer_close(&in);
	return r < 0 ? r : in.first_error;
}

/* ---- links found in a directory ------------------------------------------------- */

/* One link: where (sub "" at the top), its name and target. */
typedef int (*link_visit_fn)(int dfd, const char *sub, const char *name, const char *target,
                             void *data);

static bool sub_is_deps(const char *s)
{
	size_t n = strlen(s);
	return (n > 6 && strcmp(s + n - 6, ".wants") == 0) ||
	       (n > 9 && strcmp(s + n - 9, ".requires") == 0) ||
	       (n > 8 && strcmp(s + n - 8, ".upholds") == 0);
}

/* Every link at the top of dirfd and in its *.wants/ *.requires/ *.upholds/
 * directories (never followed: a link there is not a directory). */
static int links_walk(int dirfd, const char *sub, link_visit_fn fn, void *data)
{
	int fd = sub[0] ? openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
	                : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(dp));) {
		char target[PATH_MAX];
		if (e->d_name[0] == '.')
			continue;
		if (!sub[0] && e->d_type == DT_DIR && sub_is_deps(e->d_name)) {
			r = links_walk(fd, e->d_name, fn, data);
			continue;
		}
		ssize_t n = readlinkat(fd, e->d_name, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		r = fn(fd, sub, e->d_name, target, data);
	}
	closedir(dp);
	return r;
}

/* Whether a link (not a mask) belongs to one of the names: by its own name
 * (an instance's template counts), or by its target's. */
static bool link_matches(const struct unit_strv *names, const char *name, const char *target)
{
	struct unit_name n;
	const char *base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strcmp(target, "/dev/null") == 0)
		return false;
	if (unit_strv_contains(names, name) || unit_strv_contains(names, base))
		return true;
	return unit_name_parse(name, &n, NULL) == 0 && n.instance && n.instance[0] &&
	       unit_strv_contains(names, n.template_name);
}

struct disable {
	struct installer *in;
	struct unit_strv names;
};

static int disable_link(int dfd, const char *sub, const char *name, const char *target, void *data)
{
	struct disable *ds = data;
	char path[PATH_MAX];
	if (!link_matches(&ds->names, name, target))
		return 0;
	snprintf(path, sizeof(path), "%s/%s%s%s", ds->in->p->dirs[0], sub, sub[0] ? "/" : "", name);
	if (unlinkat(dfd, name, 0) < 0) {
		int r =
		    err_set_errno(ds->in->err, -errno, "unit link %s: %s", path, strerror(errno));
		if (!ds->in->first_error)
			ds->in->first_error = r;
		return 0;
	}
	if (ds->in->change)
		ds->in->change("removed", path, target, ds->in->data);
	return 0;
}

/* The names whose links disable removes: the unit's, its Alias=es, and
 * those of its Also= units, in turn. */
static int disable_names(struct installer *in, const char *name, struct unit_strv *names,
                         unsigned depth)
{
	struct unit_found f;
	struct unit_install ins = {0};
	int r = install_find(in, name, &f);
	if (r == -ENOENT || r == -ERFKILL) { /* stray links of a unit gone (or masked) go too */
		err_clear(in->err);
		return unit_strv_contains(names, name) ? 0 : unit_strv_push(names, name);
	}
	if (r <= 0)
		return r;
	r = install_read(&in->dirs, &f, f.name, &ins, in->err);
	if (r >= 0 && !unit_strv_contains(names, f.name))
		r = unit_strv_push(names, f.name);
	for (size_t i = 0; r >= 0 && i < ins.alias.n; i++)
		if (!unit_strv_contains(names, ins.alias.v[i]))
			r = unit_strv_push(names, ins.alias.v[i]);
	for (size_t i = 0; r >= 0 && i < ins.also.n && depth < INSTALL_ALSO_MAX; i++)
		r = disable_names(in, ins.also.v[i], names, depth + 1);
	install_clear(&ins);
	unit_found_clear(&f);
	return r;
}

int unit_disable(const struct unit_paths *p, const char *name, unit_change_fn change, void *data,
                 struct err *err)
{
	struct installer in;
	int r = installer_open(&in, p, change, data, err);
	if (r < 0)
		return r;
	struct disable ds = {.in = &in};
	r = disable_names(&in, name, &ds.names, 0);
	if (r >= 0)
		r = links_walk(in.etcfd, "", disable_link, &ds);
	unit_strv_clear(&ds.names);
	installer_close(&in);
	return r < 0 ? r : in.first_error;
}

int unit_mask(const struct unit_paths *p, const char *name, bool mask, unit_change_fn change,
              void *data, struct err *err)
{
	struct installer in;
	if (!unit_name_valid(name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit \"%s\": not a unit name",
		               name);
	int r = installer_open(&in, p, change, data, err);
	if (r < 0)
		return r;
	if (mask) {
		link_make(&in, "", name, "/dev/null");
	} else {
		char target[16], path[PATH_MAX];
		ssize_t n = readlinkat(in.etcfd, name, target, sizeof(target) - 1);
		snprintf(path, sizeof(path), "%s/%s", p->dirs[0], name);
		if (n == 9 && memcmp(target, "/dev/null", 9) == 0) {
			if (unlinkat(in.etcfd, name, 0) < 0)
				in.first_error = err_set_errno(err, -errno, "unit link %s: %s",
				                               path, strerror(errno));
			else if (change)
				change("removed", path, "/dev/null", data);
		}
	}
	installer_close(&in);
	return in.first_error;
}

/* ---- is-enabled ------------------------------------------------------------------ */

struct state_scan {
	struct unit_strv names;
	const char *own; /* the unit's name: its own entry is not a link to it */
	bool found;
};

static int state_link(int dfd, const char *sub, const char *name, const char *target, void *data)
{
	(void)dfd;
	struct state_scan *s = data;
	if (!sub[0] && strcmp(name, s->own) == 0)
		return 0;
	if (link_matches(&s->names, name, target))
		s->found = true;
	return 0;
}

/* Whether a config directory (the first one, or /run's) links to the unit. */
static bool state_linked(const struct unit_dirs *dirs, const char *dir, struct state_scan *s)
{
	_cleanup_close_ int fd = unit_dirs_openat(dirs, dir, O_RDONLY | O_DIRECTORY);
	s->found = false;
	if (fd >= 0)
		links_walk(fd, "", state_link, s);
	return s->found;
}

static const char *state_of(const struct unit_dirs *dirs, const struct unit_found *f)
{
	struct unit_install ins = {0};
	struct state_scan s = {.own = f->name};
	const char *state = "disabled";
	if (install_read(dirs, f, f->name, &ins, NULL) < 0 || unit_strv_push(&s.names, f->name) < 0)
		goto out;
	if (state_linked(dirs, dirs->p->dirs[0], &s))
		state = "enabled";
	else if (strcmp(dirs->p->dirs[0], "/run/systemd/system") != 0 &&
	         state_linked(dirs, "/run/systemd/system", &s))
		state = "enabled-runtime";
	else if (!ins.wanted_by.n && !ins.required_by.n && !ins.alias.n)
		state = ins.also.n ? "indirect" : "static";
out:
	install_clear(&ins);
	unit_strv_clear(&s.names);
	return state;
}

int unit_file_state(const struct unit_paths *p, const char *name, char *buf, size_t size)
{
	struct unit_dirs dirs;
	struct unit_found f;
	int r = unit_dirs_open(p, &dirs, NULL);
	if (r < 0)
		return r;
	r = unit_find(&dirs, name, &f, NULL);
	if (r >= 0) {
		const char *state = f.masked                                           ? "masked"
		                    : f.alias                                          ? "alias"
		                    : f.linked                                         ? "linked"
		                    : f.builtin                                        ? "static"
		                    : str_startswith(f.path, "/run/systemd/generator") ? "generated"
		                                                                       : NULL;
		r = str_copy(buf, size, state ? state : state_of(&dirs, &f));
		unit_found_clear(&f);
	}
	unit_dirs_close(&dirs);
	return r;
}
