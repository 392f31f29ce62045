/* Fuzz target: a runtime-spec config.json as a bundle hands it to kin
 * (oci_spec_parse): whatever it accepts is whole and bounded, whatever it
 * refuses names why. */
#include "oci/oci.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_spec *s = NULL;
	struct err e = {0};
	if (oci_spec_parse((const char *)data, size, "/bundle", &s, &e) == 0) {
		if (!s->root || s->root[0] != '/' || (s->cwd && s->cwd[0] != '/') ||
		    s->nmounts > OCI_SPEC_LIST_MAX || s->ndevices > OCI_SPEC_LIST_MAX ||
		    s->nrlimits > 16 || s->ngroups > 32 || s->nuid_map > 8 || s->ngid_map > 8)
			__builtin_trap();
		for (size_t i = 0; i < s->nmounts; i++)
			if (!s->mounts[i].destination || s->mounts[i].destination[0] != '/')
				__builtin_trap();
		oci_spec_free(s);
	} else if (!e.msg[0]) {
		__builtin_trap();
	}
	return 0;
}
