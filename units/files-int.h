/* files-int.h: what the file layer of units/ shares inside the module —
 * the search path opened below the root (resolve.c), a name resolved to
 * its fragment through masks, aliases, templates and built-ins, used by
 * load.c and install.c. Not part of the contract (units.h). */
#pragma once

#include "units/units.h"

#include <limits.h>
#include <sys/stat.h>

#define UNIT_ALIAS_DEPTH 8 /* alias links followed for one name (a loop: -ELOOP) */

/* The search path opened: the root and every directory of p that exists,
 * a directory seen before under another name (/lib/systemd/system and
 * /usr/lib/systemd/system in a merged-usr root) kept once, under its
 * first name. Every later open is beneath rootfd (RESOLVE_IN_ROOT): an
 * absolute link target is read as the root's own, never the host's. */
struct unit_dirs {
	const struct unit_paths *p;
	int rootfd;
	size_t n;
	int fd[UNIT_DIRS_MAX];
	const char *path[UNIT_DIRS_MAX]; /* into p->dirs */
	dev_t dev[UNIT_DIRS_MAX];
	ino_t ino[UNIT_DIRS_MAX];
};
int unit_dirs_open(const struct unit_paths *p, struct unit_dirs *ret, struct err *err);
void unit_dirs_close(struct unit_dirs *d);
/* path (absolute, as the root sees it) opened beneath d's root: flags of
 * open(2) plus O_CLOEXEC; -ELOOP for a link loop, never an escape. */
int unit_dirs_openat(const struct unit_dirs *d, const char *path, int flags);
/* Whether a directory, as the root sees it, is one of the search path's
 * (by name, or by its real identity). */
bool unit_dirs_contains(const struct unit_dirs *d, const char *dir);
/* target read from a link in dir, made absolute and lexically normalized
 * ("." and ".." folded, never above "/"). */
int unit_path_join(const char *dir, const char *target, char *buf, size_t size);

/* What a name resolves to. */
struct unit_found {
	char name[UNIT_NAME_MAX + 1]; /* the unit's own name (aliases followed) */
	char path[PATH_MAX];          /* the fragment as the root sees it; "" masked or built-in */
	char entry[PATH_MAX];         /* the name's first entry in the search path ("" none) */
	const char *builtin;          /* the built-in's text when no file has the name */
	bool masked;
	bool alias;               /* the name asked for is an alias (a link to another name) */
	bool linked;              /* the entry is a link to a file outside the search path */
	struct unit_strv aliases; /* names that led here, the asked one first */
};
/* Resolves name as unit_load documents it; aliases of the unit made by
 * other links are not looked for (unit_find_aliases). -ENOENT with err
 * naming the unit when nothing has it; -ELOOP for an alias loop. */
int unit_find(const struct unit_dirs *d, const char *name, struct unit_found *ret, struct err *err);
void unit_found_clear(struct unit_found *f);
/* Adds the names of every link in the search path that is an alias of
 * f->name (sshd.service -> ssh.service) to f->aliases. */
int unit_find_aliases(const struct unit_dirs *d, struct unit_found *f);

/* builtin.c: the standard units kin carries for a root without systemd's
 * own (targets, slices, syslog.socket). NULL when name is not one;
 * *ret_alias_of is set when the built-in is only another name
 * (default.target of multi-user.target). */
const char *unit_builtin_text(const char *name, const char **ret_alias_of);
/* Every built-in's name in turn (i from 0), NULL past the last. */
const char *unit_builtin_name(size_t i);

/* cond.c: "PathExists" (the part after Condition/Assert) into its enum
 * unit_cond_type; -EINVAL for a type kin does not know. */
int unit_cond_type_from_name(const char *name);
