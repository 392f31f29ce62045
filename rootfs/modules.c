/* modules: depmod's text files as an index — modules.dep (path: deps...),
 * modules.alias (glob pattern to module), modules.softdep (pre:/post:
 * modules) and modules.builtin — and the dependency closure that both the
 * image builder and the boot-time loader walk. libkmod has no static
 * archive on Debian, and kin needs only this much of it. */
#include "rootfs/modules-int.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#define DEP_FILE_MAX        (64u << 20)
#define ALIAS_FILE_MAX      (64u << 20)
#define SMALL_FILE_MAX      (4u << 20)
#define LINE_MAX_LEN        (256u << 10)
#define DEPS_PER_MODULE_MAX 4096
#define MODULES_MAX         200000
#define ALIASES_MAX         2000000

int rootfs_modules_name_normalize(const char *in, char *out, size_t size)
{
	size_t n = strlen(in);
	if (n == 0)
		return -EINVAL;
	if (n >= size)
		return -ENAMETOOLONG;
	int depth = 0; /* '-' inside [...] of an alias glob stays a range */
	for (size_t i = 0; i <= n; i++) {
		char c = in[i];
		if (c == '[')
			depth++;
		else if (c == ']' && depth > 0)
			depth--;
		out[i] = (c == '-' && depth == 0) ? '_' : c;
	}
	return 0;
}

/* "kernel/x/virtio-pci.ko.xz" -> "virtio_pci". */
static int name_from_path(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *ko = strstr(base, ".ko");
	if (!ko || ko == base)
		return -EINVAL;
	const char *rest = ko + 3;
	if (*rest && strcmp(rest, ".xz") != 0 && strcmp(rest, ".zst") != 0 &&
	    strcmp(rest, ".gz") != 0)
		return -EINVAL;
	size_t len = (size_t)(ko - base);
	if (len > ROOTFS_MODULES_NAME_MAX || len >= size)
		return -ENAMETOOLONG;
	char tmp[ROOTFS_MODULES_NAME_MAX + 1];
	memcpy(tmp, base, len);
	tmp[len] = '\0';
	return rootfs_modules_name_normalize(tmp, out, size);
}

static int cmp_mod_name(const void *a, const void *b)
{
	return strcmp(((const struct rootfs_modules_mod *)a)->name,
	              ((const struct rootfs_modules_mod *)b)->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_path_idx(const void *a, const void *b, void *arg)
{
	const struct rootfs_modules_mod *m = arg;
	return strcmp(m[*(const uint32_t *)a].path, m[*(const uint32_t *)b].path);
}

/* Splits buf into lines in place; calls fn for each that is not blank or a
 * comment. A line with a NUL byte or longer than LINE_MAX_LEN is damage. */
typedef int (*line_fn)(struct rootfs_modules_index *idx, char *line, size_t lineno);
static int for_each_line(struct rootfs_modules_index *idx, char *buf, size_t len, const char *file,
                         line_fn fn, struct err *d)
{
	size_t lineno = 0;
	char *p = buf, *end = buf + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *stop = nl ? nl : end;
		lineno++;
		if ((size_t)(stop - p) > LINE_MAX_LEN || memchr(p, '\0', (size_t)(stop - p))) {
			return err_set_errno(d, -EBADMSG, "%s line %zu: overlong or binary line",
			                     file, lineno);
		}
		*stop = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != '#') {
			int r = fn(idx, p, lineno);
			if (r < 0) {
				if (d && !d->msg[0])
					err_set_errno(d, r == -ENOMEM || r == -E2BIG ? r : -EBADMSG,
					              "%s line %zu: %s", file, lineno,
					              r == -ENAMETOOLONG ? "name too long"
					              : r == -E2BIG      ? "too many entries"
					                                 : "malformed line");
				return r == -ENOMEM ? r : r == -E2BIG ? r : -EBADMSG;
			}
		}
		p = stop + 1;
	}
	return 0;
}

static char *next_word(char **s)
{
	char *p = *s;
	while (*p == ' ' || *p == '\t' || *p == '\r')
		p++;
	if (!*p)
		return NULL;
	char *w = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\r')
		p++;
	if (*p)
		*p++ = '\0';
	*s = p;
	return w;
}

static int dep_line(struct rootfs_modules_index *idx, char *line, size_t lineno)
{
	(void)lineno;
	char *colon = strchr(line, ':');
	if (!colon || colon == line)
		return -EINVAL;
	*colon = '\0';
	char *rest = colon + 1;
	if (strchr(line, ' ') || strchr(line, '\t'))
		return -EINVAL;
	if (idx->n_mods >= MODULES_MAX)
		return -E2BIG;
	if (idx->n_mods == idx->cap_mods) {
		size_t cap = idx->cap_mods ? idx->cap_mods * 2 : 256;
		struct rootfs_modules_mod *m = realloc(idx->mods, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		idx->mods = m;
		idx->cap_mods = cap;
	}
	struct rootfs_modules_mod *m = &idx->mods[idx->n_mods];
	*m = (struct rootfs_modules_mod){.path = line, .raw_deps = rest};
	int r = name_from_path(line, m->name, sizeof(m->name));
	if (r < 0)
		return r;
	if (strlen(line) >= ROOTFS_PATH_MAX)
		return -ENAMETOOLONG;
	idx->n_mods++;
	return 0;
}

static int alias_line(struct rootfs_modules_index *idx, char *line, size_t lineno)
{
	(void)lineno;
	char *s = line;
	char *kw = next_word(&s), *pat = next_word(&s), *mod = next_word(&s);
	if (!kw || strcmp(kw, "alias") != 0 || !pat || !mod || next_word(&s))
		return -EINVAL;
	if (idx->n_aliases >= ALIASES_MAX)
		return -E2BIG;
	if (strlen(pat) >= ROOTFS_MODULES_ALIAS_MAX || strlen(mod) > ROOTFS_MODULES_NAME_MAX)
		return -ENAMETOOLONG;
	if (idx->n_aliases == idx->cap_aliases) {
		size_t cap = idx->cap_aliases ? idx->cap_aliases * 2 : 1024;
		struct rootfs_modules_alias *a = realloc(idx->aliases, cap * sizeof(*a));
		if (!a)
			return -ENOMEM;
		idx->aliases = a;
		idx->cap_aliases = cap;
	}
	struct rootfs_modules_alias *a = &idx->aliases[idx->n_aliases++];
	a->pattern = pat;
	a->module = mod;
	/* Aliases compare in normalised form, as modprobe does. */
	rootfs_modules_name_normalize(pat, pat, strlen(pat) + 1);
	rootfs_modules_name_normalize(mod, mod, strlen(mod) + 1);
	return 0;
}

static int softdep_line(struct rootfs_modules_index *idx, char *line, size_t lineno)
{
	(void)lineno;
	char *s = line;
	char *kw = next_word(&s), *mod = next_word(&s);
	if (!kw || strcmp(kw, "softdep") != 0 || !mod || !*s)
		return -EINVAL;
	if (strlen(mod) > ROOTFS_MODULES_NAME_MAX)
		return -ENAMETOOLONG;
	if (idx->n_softdeps >= MODULES_MAX)
		return -E2BIG;
	if (idx->n_softdeps == idx->cap_softdeps) {
		size_t cap = idx->cap_softdeps ? idx->cap_softdeps * 2 : 64;
		struct rootfs_modules_softdep *sd = realloc(idx->softdeps, cap * sizeof(*sd));
		if (!sd)
			return -ENOMEM;
		idx->softdeps = sd;
		idx->cap_softdeps = cap;
	}
	struct rootfs_modules_softdep *sd = &idx->softdeps[idx->n_softdeps++];
	rootfs_modules_name_normalize(mod, sd->module, sizeof(sd->module));
	sd->rest = s;
	return 0;
}

static int builtin_line(struct rootfs_modules_index *idx, char *line, size_t lineno)
{
	(void)lineno;
	char name[ROOTFS_MODULES_NAME_MAX + 1];
	int r = name_from_path(line, name, sizeof(name));
	if (r < 0)
		return r;
	if (idx->n_builtins >= MODULES_MAX)
		return -E2BIG;
	if (idx->n_builtins == idx->cap_builtins) {
		size_t cap = idx->cap_builtins ? idx->cap_builtins * 2 : 256;
		char **b = realloc(idx->builtins, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		idx->builtins = b;
		idx->cap_builtins = cap;
	}
	/* The name is never longer than the path it came from. */
	strcpy(line, name);
	idx->builtins[idx->n_builtins++] = line;
	return 0;
}

static int dup_buf(const char *src, size_t len, char **ret)
{
	*ret = NULL;
	if (!src)
		return 0;
	char *b = malloc(len + 1);
	if (!b)
		return -ENOMEM;
	memcpy(b, src, len);
	b[len] = '\0';
	*ret = b;
	return 0;
}

/* Turns each module's raw dependency words into indices. */
static int link_deps(struct rootfs_modules_index *idx, struct err *d)
{
	_cleanup_free_ uint32_t *by_path =
	    malloc((idx->n_mods ? idx->n_mods : 1) * sizeof(uint32_t));
	if (!by_path)
		return -ENOMEM;
	for (size_t i = 0; i < idx->n_mods; i++)
		by_path[i] = (uint32_t)i;
	qsort_r(by_path, idx->n_mods, sizeof(uint32_t), cmp_path_idx, idx->mods);
	for (size_t i = 0; i < idx->n_mods; i++) {
		struct rootfs_modules_mod *m = &idx->mods[i];
		char *s = m->raw_deps, *w;
		size_t n = 0, cap = 0;
		while ((w = next_word(&s))) {
			size_t lo = 0, hi = idx->n_mods;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				int c = strcmp(idx->mods[by_path[mid]].path, w);
				if (c == 0) {
					lo = mid;
					break;
				}
				if (c < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo >= idx->n_mods || strcmp(idx->mods[by_path[lo]].path, w) != 0) {
				err_set_errno(
				    d, -EBADMSG,
				    "modules.dep: %s needs %s, which has no line of its own",
				    m->name, w);
				return -EBADMSG;
			}
			if (n >= DEPS_PER_MODULE_MAX) {
				return err_set_errno(
				    d, -E2BIG, "modules.dep: %s has more than %d dependencies",
				    m->name, DEPS_PER_MODULE_MAX);
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 8;
				uint32_t *nd = realloc(m->deps, cap * sizeof(*nd));
				if (!nd)
					return -ENOMEM;
				m->deps = nd;
			}
			m->deps[n++] = by_path[lo];
		}
		m->n_deps = n;
	}
	return 0;
}

int rootfs_modules_index_parse(const char *dep, size_t dep_len, const char *alias, size_t alias_len,
                               const char *softdep, size_t softdep_len, const char *builtin,
                               size_t builtin_len, struct rootfs_modules_index **ret, struct err *d)
{
	struct rootfs_modules_index *idx = calloc(1, sizeof(*idx));
	int r;
	if (!idx)
		return -ENOMEM;
	err_clear(d);
	if ((r = dup_buf(dep ? dep : "", dep_len, &idx->dep_buf)) < 0 ||
	    (r = dup_buf(alias, alias_len, &idx->alias_buf)) < 0 ||
	    (r = dup_buf(softdep, softdep_len, &idx->softdep_buf)) < 0 ||
	    (r = dup_buf(builtin, builtin_len, &idx->builtin_buf)) < 0)
		goto fail;
	r = for_each_line(idx, idx->dep_buf, dep ? dep_len : 0, "modules.dep", dep_line, d);
	if (r == 0 && idx->alias_buf)
		r = for_each_line(idx, idx->alias_buf, alias_len, "modules.alias", alias_line, d);
	if (r == 0 && idx->softdep_buf)
		r = for_each_line(idx, idx->softdep_buf, softdep_len, "modules.softdep",
		                  softdep_line, d);
	if (r == 0 && idx->builtin_buf)
		r = for_each_line(idx, idx->builtin_buf, builtin_len, "modules.builtin",
		                  builtin_line, d);
	if (r < 0)
		goto fail;
	/* qsort and bsearch want a non-NULL base even for zero elements. */
	if (idx->n_mods)
		qsort(idx->mods, idx->n_mods, sizeof(*idx->mods), cmp_mod_name);
	for (size_t i = 1; i < idx->n_mods; i++)
		if (strcmp(idx->mods[i - 1].name, idx->mods[i].name) == 0) {
			err_set_errno(d, -EBADMSG, "modules.dep: module %s listed twice",
			              idx->mods[i].name);
			r = -EBADMSG;
			goto fail;
		}
	if (idx->n_builtins)
		qsort(idx->builtins, idx->n_builtins, sizeof(char *), cmp_str);
	r = link_deps(idx, d);
	if (r < 0)
		goto fail;
	*ret = idx;
	return 0;
fail:
	rootfs_modules_index_free(idx);
	return r;
}

void rootfs_modules_index_free(struct rootfs_modules_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->n_mods; i++)
		free(idx->mods[i].deps);
	free(idx->mods);
	free(idx->aliases);
	free(idx->softdeps);
	free(idx->builtins);
	free(idx->dep_buf);
	free(idx->alias_buf);
	free(idx->softdep_buf);
	free(idx->builtin_buf);
	free(idx);
}

static int read_optional(const char *dir, const char *file, size_t max, char **ret, size_t *ret_len,
                         struct err *d)
{
	char path[ROOTFS_PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int r = file_read_small(path, max, ret, ret_len);
	if (r == -ENOENT) {
		*ret = NULL;
		*ret_len = 0;
		return 0;
	}
	if (r < 0)
		err_set_errno(d, r, "%s: %s", path, strerror(-r));
	return r;
}

int rootfs_modules_index_load(const char *moddir, struct rootfs_modules_index **ret, struct err *d)
{
	_cleanup_free_ char *dep = NULL, *alias = NULL, *softdep = NULL, *builtin = NULL;
	size_t dl, al, sl, bl;
	char path[ROOTFS_PATH_MAX];
	int r;

	if (snprintf(path, sizeof(path), "%s/modules.dep", moddir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = file_read_small(path, DEP_FILE_MAX, &dep, &dl);
	if (r < 0) {
		return err_set_errno(d, r, "%s: %s", path, strerror(-r));
	}
	if ((r = read_optional(moddir, "modules.alias", ALIAS_FILE_MAX, &alias, &al, d)) < 0 ||
	    (r = read_optional(moddir, "modules.softdep", SMALL_FILE_MAX, &softdep, &sl, d)) < 0 ||
	    (r = read_optional(moddir, "modules.builtin", SMALL_FILE_MAX, &builtin, &bl, d)) < 0)
		return r;
	return rootfs_modules_index_parse(dep, dl, alias, al, softdep, sl, builtin, bl, ret, d);
}

size_t rootfs_modules_index_count(const struct rootfs_modules_index *idx)
{
	return idx->n_mods;
}

const char *rootfs_modules_index_name(const struct rootfs_modules_index *idx, size_t i)
{
	return i < idx->n_mods ? idx->mods[i].name : NULL;
}

const char *rootfs_modules_index_path(const struct rootfs_modules_index *idx, size_t i)
{
	return i < idx->n_mods ? idx->mods[i].path : NULL;
}

int rootfs_modules_find(const struct rootfs_modules_index *idx, const char *norm_name)
{
	size_t lo = 0, hi = idx->n_mods;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(idx->mods[mid].name, norm_name);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

bool rootfs_modules_is_builtin(const struct rootfs_modules_index *idx, const char *name)
{
	char norm[ROOTFS_MODULES_ALIAS_MAX];
	if (rootfs_modules_name_normalize(name, norm, sizeof(norm)) < 0)
		return false;
	const char *key = norm;
	return idx->n_builtins &&
	       bsearch(&key, idx->builtins, idx->n_builtins, sizeof(char *), cmp_str) != NULL;
}

int rootfs_modules_resolve(const struct rootfs_modules_index *idx, const char *name, size_t *ret,
                           size_t max)
{
	char norm[ROOTFS_MODULES_ALIAS_MAX];
	int r = rootfs_modules_name_normalize(name, norm, sizeof(norm));
	if (r < 0)
		return r;
	int i = rootfs_modules_find(idx, norm);
	if (i >= 0) {
		if (max == 0)
			return -ENOBUFS;
		ret[0] = (size_t)i;
		return 1;
	}
	if (rootfs_modules_is_builtin(idx, norm))
		return 0;
	size_t n = 0;
	bool builtin_match = false;
	for (size_t k = 0; k < idx->n_aliases; k++) {
		if (fnmatch(idx->aliases[k].pattern, norm, 0) != 0)
			continue;
		int m = rootfs_modules_find(idx, idx->aliases[k].module);
		if (m < 0) {
			builtin_match |= rootfs_modules_is_builtin(idx, idx->aliases[k].module);
			continue;
		}
		bool dup = false;
		for (size_t j = 0; j < n; j++)
			dup |= ret[j] == (size_t)m;
		if (dup)
			continue;
		if (n == max)
			return -ENOBUFS;
		ret[n++] = (size_t)m;
	}
	return n > 0 || builtin_match ? (int)n : -ENOENT;
}

const struct rootfs_modules_softdep *
rootfs_modules_softdep_of(const struct rootfs_modules_index *idx, const char *name, size_t *iter)
{
	for (; *iter < idx->n_softdeps; (*iter)++)
		if (strcmp(idx->softdeps[*iter].module, name) == 0)
			return &idx->softdeps[(*iter)++];
	return NULL;
}
