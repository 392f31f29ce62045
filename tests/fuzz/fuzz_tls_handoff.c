/* Fuzz target: a handoff message's bytes (tls/handoff.c), as kin reads
 * them from its gateway: parsed into an identity whose every field is
 * what the contract promises, or refused with -EBADMSG. */
#include "tls/tls.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_printable(const char *s)
{
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_identity id;
	int r = tls_handoff_parse(data, size, &id);
	if (r != 0 && r != -EBADMSG)
		__builtin_trap();
	if (r < 0)
		return 0;
	if (!id.peer[0] || strlen(id.peer) >= sizeof(id.peer) || !fuzz_printable(id.peer) ||
	    id.n_names > TLS_NAMES_MAX)
		__builtin_trap();
	for (size_t i = 0; i < id.n_names; i++) {
		const char *n = id.names[i];
		size_t skip = strncmp(n, "cn:", 3) == 0                                  ? 3
		              : strncmp(n, "uri:", 4) == 0 || strncmp(n, "dns:", 4) == 0 ? 4
		                                                                         : 0;
		if (!skip || strlen(n) <= skip || strlen(n) - skip > TLS_NAME_MAX ||
		    !fuzz_printable(n))
			__builtin_trap();
	}
	return 0;
}
