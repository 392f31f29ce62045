/* keep-int: what keep/registry.c and keep/file.c share — the registry
 * and the state file's state, one struct. */
#pragma once

#include "keep/keep.h"

#include <limits.h>

struct keep_entry {
	struct keep_part p;
	bool started;
};

struct keep {
	struct keep_entry parts[KEEP_PARTS_MAX];
	size_t n;
	/* What keep_start hands out: the state taken over. */
	enum keep_how how;
	struct state_in *in;
	int *kept;
	size_t nkept;
	struct keep_file *file; /* the state directory; NULL: none */
	struct keep_reexec *rx; /* keep_reexec_init's; NULL: none */
};

/* The participants' records, the wire's (wire) or the others'. */
int keep_parts_save(struct keep *k, struct state_w *w, bool wire, struct err *err);
/* Each participant's resume: an execve that failed. */
void keep_parts_resume(struct keep *k);
/* Each participant's set_keeper. */
void keep_parts_set_keeper(struct keep *k, const struct keep_keeper *kk, bool fresh);
