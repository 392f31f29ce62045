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
	if (r == 0 && (c.kernel[0] != '/' || c.image[0] != '/' || c.cpus > 64 ||
	               strlen(c.accel) >= sizeof(c.accel)))
		__builtin_trap();
	if (r < 0 && (!e.msg[0] || strncmp(e.msg, "fuzz.conf: ", 11) != 0))
		__builtin_trap();
	free(s);
	return 0;
}
