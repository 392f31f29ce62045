/* closure: the depth-first walk over modules.dep (and softdeps) shared by
 * the image builder, which collects modules, and the loader, which loads
 * them; plus the index subset an image ships, and kin.modules= lists. */
#include "rootfs/modules-int.h"

#include <stdio.h>
#include <string.h>

#define WALK_DEPTH_MAX    64
#define ALIAS_MATCHES_MAX 64

int rootfs_modules_walk_init(struct rootfs_modules_walk *w, const struct rootfs_modules_index *idx)
{
	size_t n = idx->n_mods ? idx->n_mods : 1;
	*w = (struct rootfs_modules_walk){.idx = idx, .softdeps = true};
	w->state = calloc(n, sizeof(*w->state));
	w->err = calloc(n, sizeof(*w->err));
	if (!w->state || !w->err) {
		rootfs_modules_walk_done(w);
		return -ENOMEM;
	}
	return 0;
}

void rootfs_modules_walk_done(struct rootfs_modules_walk *w)
{
	free(w->state);
	free(w->err);
	w->state = NULL;
	w->err = NULL;
}

/* Softdeps are wishes: a missing or failing one never fails its user. */
static void walk_softdeps(struct rootfs_modules_walk *w, const char *name, bool pre, int depth)
{
	size_t iter = 0;
	const struct rootfs_modules_softdep *sd;
	while ((sd = rootfs_modules_softdep_of(w->idx, name, &iter))) {
		char words[1024];
		if (str_copy(words, sizeof(words), sd->rest) < 0)
			continue;
		/* Words before any "pre:"/"post:" count as pre (depmod writes
		 * "softdep cifs gcm" for modinfo softdeps with no section). */
		bool in_pre = true;
		char *save = NULL;
		for (char *t = strtok_r(words, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
			if (strcmp(t, "pre:") == 0) {
				in_pre = true;
				continue;
			}
			if (strcmp(t, "post:") == 0) {
				in_pre = false;
				continue;
			}
			if (in_pre != pre)
				continue;
			size_t m[ALIAS_MATCHES_MAX];
			int n = rootfs_modules_resolve(w->idx, t, m, ARRAY_SIZE(m));
			/* crc32c_intel refuses CPUs without SSE4.2: not news. */
			void (*fail)(struct rootfs_modules_walk *, const char *, int,
			             const char *) = w->fail;
			w->fail = NULL;
			for (int k = 0; k < n; k++)
				if (w->state[m[k]] != MOD_VISITING)
					(void)rootfs_modules_walk_mod(w, m[k], depth + 1);
			w->fail = fail;
		}
	}
}

int rootfs_modules_walk_mod(struct rootfs_modules_walk *w, size_t mod, int depth)
{
	const struct rootfs_modules_mod *m = &w->idx->mods[mod];
	int r;

	switch (w->state[mod]) {
	case MOD_OK:
		return 0;
	case MOD_FAILED:
		return w->err[mod];
	case MOD_VISITING:
		if (w->fail)
			w->fail(w, m->name, -ELOOP, "dependency cycle");
		return -ELOOP;
	default:
		break;
	}
	if (depth > WALK_DEPTH_MAX) {
		if (w->fail)
			w->fail(w, m->name, -ELOOP, "dependencies nested too deep");
		return -ELOOP;
	}
	w->state[mod] = MOD_VISITING;
	if (w->softdeps)
		walk_softdeps(w, m->name, true, depth);
	/* modules.dep lists the whole closure; the walk only needs order. */
	for (size_t i = 0; i < m->n_deps; i++) {
		r = rootfs_modules_walk_mod(w, m->deps[i], depth + 1);
		if (r < 0) {
			if (r != -ELOOP && w->fail) {
				char why[96];
				snprintf(why, sizeof(why), "needs %s, which failed",
				         w->idx->mods[m->deps[i]].name);
				w->fail(w, m->name, r, why);
			}
			w->state[mod] = MOD_FAILED;
			w->err[mod] = r;
			return r;
		}
	}
	r = w->visit ? w->visit(w, mod) : 0;
	w->state[mod] = r < 0 ? MOD_FAILED : MOD_OK;
	w->err[mod] = r;
	if (r < 0)
		return r;
	if (w->softdeps)
		walk_softdeps(w, m->name, false, depth);
	return 0;
}

int rootfs_modules_walk_name(struct rootfs_modules_walk *w, const char *name, int depth)
{
	size_t m[ALIAS_MATCHES_MAX];
	int n = rootfs_modules_resolve(w->idx, name, m, ARRAY_SIZE(m));
	if (n < 0) {
		if (w->fail)
			w->fail(w, name, n,
			        n == -ENOENT ? "no such module, alias or builtin"
			                     : "cannot resolve");
		return n;
	}
	if (n == 1)
		return rootfs_modules_walk_mod(w, m[0], depth);
	/* An alias matching several modules (crypto-crc32c: the generic and
	 * the intel one) is satisfied by any that works. */
	int first_err = 0;
	bool any = n == 0;
	void (*fail)(struct rootfs_modules_walk *, const char *, int, const char *) = w->fail;
	w->fail = NULL;
	for (int k = 0; k < n; k++) {
		int r = rootfs_modules_walk_mod(w, m[k], depth);
		if (r == 0)
			any = true;
		else if (!first_err)
			first_err = r;
	}
	w->fail = fail;
	if (!any && w->fail)
		w->fail(w, name, first_err, "no module for this alias could be loaded");
	return any ? 0 : first_err;
}

struct closure_ctx {
	size_t *order, n;
	struct err *d;
};

static int closure_visit(struct rootfs_modules_walk *w, size_t mod)
{
	struct closure_ctx *c = w->data;
	c->order[c->n++] = mod;
	return 0;
}

static void closure_fail(struct rootfs_modules_walk *w, const char *module, int err,
                         const char *why)
{
	struct closure_ctx *c = w->data;
	if (!c->d || !c->d->msg[0])
		err_set_errno(c->d, err, "module %s: %s (%s)", module, why, strerror(-err));
}

int rootfs_modules_closure(const struct rootfs_modules_index *idx, const char *const *names,
                           size_t n, size_t **ret_order, size_t *ret_n, struct err *d)
{
	struct rootfs_modules_walk w;
	struct closure_ctx c = {.d = d};
	int r = rootfs_modules_walk_init(&w, idx);
	if (r < 0)
		return r;
	err_clear(d);
	c.order = malloc((idx->n_mods ? idx->n_mods : 1) * sizeof(size_t));
	if (!c.order) {
		rootfs_modules_walk_done(&w);
		return -ENOMEM;
	}
	w.visit = closure_visit;
	w.fail = closure_fail;
	w.data = &c;
	for (size_t i = 0; i < n && r >= 0; i++) {
		/* The builder takes every match of an alias, like modprobe. */
		size_t m[ALIAS_MATCHES_MAX];
		int k = rootfs_modules_resolve(idx, names[i], m, ARRAY_SIZE(m));
		if (k < 0) {
			closure_fail(&w, names[i], k, "no such module, alias or builtin");
			r = k;
		}
		for (int j = 0; j < k && r >= 0; j++)
			r = rootfs_modules_walk_mod(&w, m[j], 0);
	}
	rootfs_modules_walk_done(&w);
	if (r < 0) {
		free(c.order);
		return r;
	}
	*ret_order = c.order;
	*ret_n = c.n;
	return 0;
}

static bool in_set(const bool *set, const struct rootfs_modules_index *idx, const char *name)
{
	int i = rootfs_modules_find(idx, name);
	return i >= 0 && set[i];
}

int rootfs_modules_write_subset(const struct rootfs_modules_index *idx, const size_t *order,
                                size_t n, FILE *dep, FILE *alias, FILE *softdep)
{
	_cleanup_free_ bool *set = calloc(idx->n_mods ? idx->n_mods : 1, sizeof(bool));
	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		set[order[i]] = true;
	/* modules.dep order: index order (by name), so the file is stable. */
	for (size_t i = 0; i < idx->n_mods; i++) {
		if (!set[i])
			continue;
		const struct rootfs_modules_mod *m = &idx->mods[i];
		fprintf(dep, "%s:", m->path);
		for (size_t k = 0; k < m->n_deps; k++)
			fprintf(dep, " %s", idx->mods[m->deps[k]].path);
		fputc('\n', dep);
	}
	for (size_t i = 0; alias && i < idx->n_aliases; i++)
		if (in_set(set, idx, idx->aliases[i].module))
			fprintf(alias, "alias %s %s\n", idx->aliases[i].pattern,
			        idx->aliases[i].module);
	for (size_t i = 0; softdep && i < idx->n_softdeps; i++)
		if (in_set(set, idx, idx->softdeps[i].module))
			fprintf(softdep, "softdep %s %s\n", idx->softdeps[i].module,
			        idx->softdeps[i].rest);
	if (ferror(dep) || (alias && ferror(alias)) || (softdep && ferror(softdep)))
		return -EIO;
	return 0;
}

/* A module name or alias word: printable, no blanks, no separators. */
static bool csv_word_ok(const char *w)
{
	size_t len = strlen(w);
	if (len == 0 || len >= ROOTFS_MODULES_ALIAS_MAX)
		return false;
	for (const char *p = w; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '/' ||
		    *p == '=' || *p == '"')
			return false;
	return true;
}

int rootfs_modules_csv_split(char *buf, const char **names, size_t max)
{
	size_t n = 0;
	if (strlen(buf) > ROOTFS_MODULES_CSV_MAX)
		return -E2BIG;
	char *save = NULL;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!csv_word_ok(w))
			return -EINVAL;
		if (n == max || n == ROOTFS_MODULES_LIST_MAX)
			return -E2BIG;
		names[n++] = w;
	}
	return (int)n;
}

bool rootfs_modules_csv_valid(const char *csv)
{
	char buf[ROOTFS_MODULES_CSV_MAX + 1];
	const char *names[ROOTFS_MODULES_LIST_MAX];
	if (!csv || str_copy(buf, sizeof(buf), csv) < 0)
		return false;
	/* "a,,b" and a trailing comma are typos worth reporting. */
	if (csv[0] == ',' || (csv[0] && csv[strlen(csv) - 1] == ',') || strstr(csv, ",,"))
		return false;
	return rootfs_modules_csv_split(buf, names, ARRAY_SIZE(names)) > 0;
}
