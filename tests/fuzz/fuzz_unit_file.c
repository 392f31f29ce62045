/* Fuzz target: a unit file (units/parse.c), whatever bytes it holds:
 * parsed into assignments whose section, key and value are bounded,
 * trimmed and free of newlines, or refused (a NUL, too large) with err
 * naming the file. The same bytes as a unit name go through the name
 * parser and the escaping both ways. */
#include "units/units.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_assign(const struct unit_assign *a, void *data)
{
	size_t *n = data;
	size_t vl = strlen(a->value), kl = strlen(a->key);
	if (!a->section[0] || !kl || vl > UNIT_LINE_MAX || kl > UNIT_LINE_MAX || !a->line)
		__builtin_trap();
	if (strchr(a->value, '\n') || strchr(a->key, '\n') || strchr(a->key, '='))
		__builtin_trap();
	if ((vl && (a->value[0] == ' ' || a->value[vl - 1] == ' ')) || a->key[kl - 1] == ' ')
		__builtin_trap();
	(*n)++;
	return 0;
}

static void diag_check(void *data, const char *file, unsigned line, const char *fmt, ...)
{
	(void)data, (void)line, (void)fmt;
	if (strcmp(file, "fuzz.service") != 0)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = 0;
	struct err e = {0};
	int r = unit_file_parse((const char *)data, size, "fuzz.service", check_assign, diag_check,
	                        &n, &e);
	if (r < 0 && (!strstr(e.msg, "fuzz.service") || (r != -EINVAL && r != -EFBIG)))
		__builtin_trap();
	if (n > size)
		__builtin_trap();

	char s[UNIT_NAME_MAX * 5 + 1], esc[UNIT_NAME_MAX * 4 + 1], back[UNIT_NAME_MAX * 4 + 1];
	size_t k = size < UNIT_NAME_MAX + 8 ? size : UNIT_NAME_MAX + 8;
	memcpy(s, data, k);
	s[k] = '\0';
	struct unit_name un;
	if (unit_name_parse(s, &un, &e) == 0) {
		if (strlen(un.full) > UNIT_NAME_MAX || !un.prefix[0] || un.type < 0)
			__builtin_trap();
		if (un.instance && strcmp(un.template_name, "") == 0)
			__builtin_trap();
	}
	/* Escaping is undone by unescaping (the non-path form). */
	if (unit_name_escape(s, false, esc, sizeof(esc)) == 0 && !strchr(s, '/')) {
		if (unit_name_unescape(esc, false, back, sizeof(back)) != 0 || strcmp(back, s) != 0)
			__builtin_trap();
	}
	return 0;
}
