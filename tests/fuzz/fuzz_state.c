/* Fuzz target: the re-exec handover (lib/state.h) as a new kin reads it —
 * the fields of every record, nested to any depth, and an executable's
 * spec (cells/state_spec.c) from any record, which must come out valid or
 * be refused. The bytes are what follows the header. */
#include "lib/lib.h"
#include "lib/state.h"
#include "cells/cells-int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const struct state_r *r0, unsigned depth)
{
	struct state_r r = *r0, sub;
	struct state_field f;
	char buf[64], *dup;
	uint64_t v;
	while (state_next(&r, &f) > 0) {
		state_get_u64(&f, &v);
		state_get_str(&f, buf, sizeof(buf));
		if (state_get_strdup(&f, &dup) == 0) {
			if (strlen(dup) != f.len)
				__builtin_trap();
			free(dup);
		}
		struct exec_spec *s = NULL;
		struct err err;
		if (exec_spec_restore(&f, &s, &err) == 0) {
			if (!s->argv || !s->argv[0] || exec_spec_validate(s, &err) < 0)
				__builtin_trap();
			exec_spec_free(s);
		}
		if (depth < 8) {
			state_get_record(&f, &sub);
			walk(&sub, depth + 1);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state_r r = {.data = data, .len = size};
	walk(&r, 0);
	return 0;
}
