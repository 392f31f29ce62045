/* Fuzz target: a policy file (auth/policy.c), whatever bytes it holds:
 * parsed, or refused with its line named; a policy that parses answers
 * auth_check for a few peers, methods and targets (allowed, or denied with
 * a sentence). The same bytes go through auth_request_object as a request
 * payload and through the audit line's escaping. */
#include "auth/auth.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_all(const struct auth_policy *p)
{
	static const char *const targets[] = {NULL,     "",      ".",    "pod1", "pod10",
	                                      "pod1/a", "vm/db", "a//b", "..",   "x/"};
	static const char *const calls[][2] = {{"kin.v1.Health", "Check"},
	                                       {"kin.v1.Cells", "Freeze"},
	                                       {"kin.v1.System", "Poweroff"},
	                                       {"kin.v1.Nope", "Nope"}};
	struct auth_peer peers[3] = {
	    {.transport = "unix",
	     .has_ids = true,
	     .uid = 1000,
	     .gid = 50,
	     .n_groups = 2,
	     .groups = {10, 100}},
	    {.transport = "tls",
	     .n_names = 3,
	     .names = {"cn:ops", "dns:Node1.example", "uri:spiffe://kin/a"}},
	    {.transport = "vsock"},
	};
	for (size_t i = 0; i < 3; i++)
		for (size_t c = 0; c < 4; c++)
			for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
				struct err e = {0};
				int r = auth_check(p, &peers[i], calls[c][0], calls[c][1],
				                   targets[t], &e);
				if (r != 0 &&
				    (r != -EACCES || e.code != ERR_PERMISSION_DENIED || !e.msg[0]))
					__builtin_trap();
			}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct auth_policy *p = NULL;
	struct err e = {0};
	char obj[160], line[AUTH_AUDIT_LINE_MAX];

	int r = auth_policy_parse((const char *)data, size, "fuzz", &p, &e);
	if (r == 0) {
		if (auth_policy_count(p) > AUTH_RULES_MAX)
			__builtin_trap();
		check_all(p);
		auth_policy_free(p);
	} else if (strncmp(e.msg, "fuzz: line ", 11) != 0 || e.code != ERR_INVALID_ARGUMENT) {
		__builtin_trap();
	}

	auth_request_object(data, size, obj, sizeof(obj));
	size_t n = strlen(obj);
	if (n > 128)
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (obj[i] < 0x20 || obj[i] > 0x7e)
			__builtin_trap();

	/* The audit line of peer-chosen bytes: printable, one line, bounded. */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct auth_audit_entry a = {
	    .who = s, .via = "tls", .service = s, .method = obj, .target = s, .object = s};
	n = auth_audit_format(&a, line, sizeof(line));
	if (n != strlen(line) || n >= sizeof(line))
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			__builtin_trap();
	free(s);
	return 0;
}
