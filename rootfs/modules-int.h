/* modules internals: the parsed index, shared by the parser, the closure
 * walk and the loader (not a public header; see rootfs.h). */
#pragma once

#include "rootfs/rootfs-int.h"

#define ROOTFS_MODULES_ALIAS_MAX 256 /* an alias pattern or a name given to resolve */

struct rootfs_modules_mod {
	char name[ROOTFS_MODULES_NAME_MAX + 1]; /* normalised */
	const char *path;                       /* as in modules.dep, relative to moddir */
	char *raw_deps;                         /* the words after ':' until linked */
	uint32_t *deps;
	size_t n_deps;
};

struct rootfs_modules_alias {
	const char *pattern, *module; /* both normalised */
};

struct rootfs_modules_softdep {
	char module[ROOTFS_MODULES_NAME_MAX + 1];
	char *rest; /* "pre: a b post: c" */
};

struct rootfs_modules_index {
	struct rootfs_modules_mod *mods; /* sorted by name */
	size_t n_mods, cap_mods;
	struct rootfs_modules_alias *aliases;
	size_t n_aliases, cap_aliases;
	struct rootfs_modules_softdep *softdeps;
	size_t n_softdeps, cap_softdeps;
	char **builtins; /* sorted */
	size_t n_builtins, cap_builtins;
	char *dep_buf, *alias_buf, *softdep_buf, *builtin_buf;
};

/* Index of a normalised name, or -ENOENT. */
int rootfs_modules_find(const struct rootfs_modules_index *idx, const char *norm_name);
/* The next softdep line for name at or after *iter, or NULL. */
const struct rootfs_modules_softdep *
rootfs_modules_softdep_of(const struct rootfs_modules_index *idx, const char *name, size_t *iter);

/* The walk both the builder and the loader use: each module once,
 * dependencies and softdep "pre:" first, "post:" after. visit returns 0 or
 * -errno; a failed hard dependency fails its users without a visit. */
enum rootfs_modules_state { MOD_NEW, MOD_VISITING, MOD_OK, MOD_FAILED };
struct rootfs_modules_walk {
	const struct rootfs_modules_index *idx;
	uint8_t *state;
	int *err;
	int (*visit)(struct rootfs_modules_walk *w, size_t mod);
	/* a name's failure: module, -errno, a short reason */
	void (*fail)(struct rootfs_modules_walk *w, const char *module, int err, const char *why);
	bool softdeps;
	void *data;
};
int rootfs_modules_walk_init(struct rootfs_modules_walk *w, const struct rootfs_modules_index *idx);
void rootfs_modules_walk_done(struct rootfs_modules_walk *w);
int rootfs_modules_walk_mod(struct rootfs_modules_walk *w, size_t mod, int depth);
/* Resolves name (alias, builtin) and walks its modules; a name that an
 * alias maps to several modules succeeds when one of them does. */
int rootfs_modules_walk_name(struct rootfs_modules_walk *w, const char *name, int depth);
