/* Fuzz target: what a VMM's QMP monitor sends (vm/qmp.c), whatever bytes:
 * each line read as one message or refused with a sentence naming the VM,
 * and what is kept of it (an error's class and text, an event's name) is
 * printable and within its field. */
#include "vm/qmp-int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_one(const char *line, size_t len)
{
	struct vm_qmp_msg m;
	struct err e = {0};
	int r = vm_qmp_parse("fuzz", line, len, &m, &e);
	if (r < 0 && (r != -EBADMSG || strncmp(e.msg, "vm \"fuzz\": ", 11) != 0))
		__builtin_trap();
	if (r == 0) {
		if (m.kind > VM_QMP_EVENT || strnlen(m.what, sizeof(m.what)) >= sizeof(m.what))
			__builtin_trap();
		for (const char *p = m.what; *p; p++)
			if (*p < 0x20 || *p >= 0x7f)
				__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	while (p < end) { /* the talk cuts lines at '\n' */
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		check_one(p, len);
		p += len;
	}
	return 0;
}
