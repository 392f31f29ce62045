/* Fuzz target: Exec* command lines (units/cmd.c) and what shares their
 * words — Environment= values, environment files, specifiers. A command
 * parsed has an executable that is absolute or a plain name, 1 to
 * UNIT_ARGS_MAX words, a NULL at argv[argc]; a refusal leaves the list as
 * it was and says why. The expansion stays within its bounds. */
#include "units/units.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_cmds(const struct unit_cmds *l)
{
	char *env[] = {"A=one two  three", "B=", "MAINPID=42", "EMPTY= \t ", "A=last"};
	if (l->n > UNIT_CMDS_MAX)
		__builtin_trap();
	for (size_t i = 0; i < l->n; i++) {
		const struct unit_cmd *c = &l->v[i];
		if (!c->path || !c->path[0] || (c->path[0] != '/' && strchr(c->path, '/')))
			__builtin_trap();
		if (c->argc == 0 || c->argc > UNIT_ARGS_MAX || c->argv[c->argc] || !c->argv[0])
			__builtin_trap();
		char **argv = NULL;
		struct err e = {0};
		if (unit_cmd_expand(c, env, 5, &argv, &e) == 0) {
			size_t n = 0;
			while (argv[n])
				n++;
			if (n > UNIT_ARGS_MAX || n == 0 || strcmp(argv[0], c->argv[0]) != 0)
				__builtin_trap();
			unit_argv_free(argv);
		} else if (!e.msg[0] || argv) {
			__builtin_trap();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > UNIT_LINE_MAX + 16)
		return 0;
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct unit_name n;
	if (unit_name_parse("fuzz@a-b\\x20c.service", &n, NULL) < 0)
		__builtin_trap();
	struct unit_spec_ctx ctx = {.name = &n, .hostname = "h.example", .machine_id = "m"};

	struct unit_cmds l = {0};
	struct err e = {0};
	if (unit_cmd_parse(s, &ctx, &l, &e) < 0) {
		if (l.n || !e.msg[0])
			__builtin_trap();
	}
	check_cmds(&l);
	unit_cmds_clear(&l);

	struct unit_strv env = {0};
	e.msg[0] = '\0';
	if (unit_env_assign_parse(s, &env, &e) < 0 && (env.n || !e.msg[0]))
		__builtin_trap();
	for (size_t i = 0; i < env.n; i++)
		if (!strchr(env.v[i], '=') || env.v[i][0] == '=')
			__builtin_trap();
	unit_strv_clear(&env);

	size_t bad = 0;
	if (unit_envfile_parse((const char *)data, size, &env, &bad, &e) == 0) {
		if (env.n > UNIT_ENV_MAX || bad > size)
			__builtin_trap();
		for (size_t i = 0; i < env.n; i++)
			if (!strchr(env.v[i], '=') || env.v[i][0] == '=')
				__builtin_trap();
	} else if (env.n) {
		__builtin_trap();
	}
	unit_strv_clear(&env);

	char *x = NULL;
	if (unit_specifiers_expand(s, &ctx, &x, &e) == 0)
		free(x);
	free(s);
	return 0;
}
