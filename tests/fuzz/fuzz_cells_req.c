/* Fuzz target: the cells services' request checks (api/cells_req.c) alone.
 * The first byte picks a method of Cells, Exec or Events; the rest is its
 * input message, decoded with the generated descriptor and run through the
 * checks its handler makes before the cells library (and, for Start, what
 * exec_start checks before it needs the system). No cells library, no
 * process. A check must end in 0 or an INVALID_ARGUMENT sentence that fits. */
#include "api/cells-int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const struct api_cells_req_method *methods;
	size_t n = api_cells_req_methods(&methods);
	const struct api_cells_req_method *m = &methods[data[0] % n];
	ProtobufCMessage *in = protobuf_c_message_unpack(m->input, NULL, size - 1, data + 1);
	if (!in)
		return 0;
	struct err err = {0};
	int r = m->check ? m->check(in, &err) : 0;
	if (r > 0 || (r < 0 && r != -ENOMEM && (!err.msg[0] || err.code == ERR_OK)))
		__builtin_trap(); /* a refusal must say why, with a code */
	if (strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg))
		__builtin_trap();
	protobuf_c_message_free_unpacked(in, NULL);
	return 0;
}
