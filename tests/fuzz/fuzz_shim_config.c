/* Fuzz target: a kin-vm shim's config file (shim/config.c), whatever bytes
 * it holds: parsed or refused with the line named, never past its fields. */
#include "shim/shim.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shim_vm_config c;
	struct err e = {0};
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	int r = shim_vm_config_parse("fuzz.conf", s, &c, &e);
	if (r == 0 && (c.spec.kernel[0] != '/' || c.spec.image[0] != '/' || c.spec.cpus < 1 ||
	               c.spec.cpus > VM_CPUS_MAX || c.spec.memory_mb < VM_MEMORY_MIN_MB ||
	               c.spec.memory_mb > VM_MEMORY_MAX_MB || c.spec.accel > VM_ACCEL_TCG))
		__builtin_trap();
	if (r < 0 && (!e.msg[0] || strncmp(e.msg, "fuzz.conf: ", 11) != 0))
		__builtin_trap();
	free(s);
	return 0;
}
