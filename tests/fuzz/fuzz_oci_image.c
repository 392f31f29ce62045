/* Fuzz target: what kin reads of an image's metadata — the config blob
 * (oci_image_config_parse: Entrypoint, Cmd, Env, WorkingDir, User), and
 * the name and digest checks every reference goes through. */
#include "oci/oci.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_image_config *c = NULL;
	struct err e = {0};
	if (oci_image_config_parse((const char *)data, size, &c, &e) == 0) {
		/* Whatever is accepted is whole: vectors end, strings are strings. */
		for (char **v = c->env; v && *v; v++)
			if (strlen(*v) > size)
				__builtin_trap();
		oci_image_config_free(c);
	} else if (!e.msg[0] || strnlen(e.msg, sizeof(e.msg)) == sizeof(e.msg)) {
		__builtin_trap(); /* every refusal says why */
	}
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (oci_name_valid(s) && (strstr(s, "..") || s[0] == '/' || strlen(s) > OCI_NAME_MAX))
		__builtin_trap();
	if (oci_digest_valid(s) && strlen(s) != OCI_DIGEST_LEN)
		__builtin_trap();
	free(s);
	return 0;
}
