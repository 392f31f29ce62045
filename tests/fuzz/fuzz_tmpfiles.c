/* Fuzz target: a tmpfiles.d line (a package's file on a host's root), the
 * parse only: nothing is made on the fuzzing machine. */
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct units_tmpfiles_entry e;
	unsigned long flags;
	char opts[256];
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	units_fstab_mount_options(s, &flags, opts, sizeof(opts));
	if (strnlen(opts, sizeof(opts)) == sizeof(opts))
		__builtin_trap();
	if (units_tmpfiles_parse(s, &e) == 0 &&
	    (e.path[0] != '/' || !strchr("dDfLzZ", e.type) || e.mode > 07777))
		__builtin_trap();
	free(s);
	return 0;
}
