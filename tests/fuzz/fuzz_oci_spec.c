/* Fuzz target: a runtime-spec config.json as a bundle hands it to kin
 * (oci_spec_parse), and the same bytes as the LinuxResources object of a
 * containerd Update (oci_resources_parse): whatever they accept is whole
 * and bounded, whatever they refuse names why. */
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
	e = (struct err){0};
	s = NULL;
	if (oci_resources_parse((const char *)data, size, &s, &e) == 0) {
		if (s->cpus && strlen(s->cpus) > OCI_SPEC_JSON_MAX)
			__builtin_trap();
		oci_spec_free(s);
	} else if (!e.msg[0]) {
		__builtin_trap();
	}
	return 0;
}
