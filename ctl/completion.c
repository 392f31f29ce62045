/* completion: `kin ctl completion bash` prints a bash completion script
 * for kin, made from the command tables that dispatch (ctl_cmds and each
 * group's): kin's own words, kin ctl's options and commands, each group's
 * subcommands, and each (sub)command's option names. `make install` puts
 * it in bash-completion's directory. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>

/* kin's first words (init/main.c). */
static const char kin_words[] = "init version ctl image vm help";

static void print_opts(const struct option *opts)
{
	for (const struct option *o = opts; o && o->name; o++)
		printf(" --%s", o->name);
}

/* Options that take a value: the word after them is not a command. Each
 * name once (seen: the names printed so far, bounded). */
struct seen {
	const char *names[128];
	size_t n;
};

static void print_valued(const struct option *opts, struct seen *seen)
{
	for (const struct option *o = opts; o && o->name; o++) {
		bool dup = false;
		for (size_t i = 0; i < seen->n && !dup; i++)
			dup = !strcmp(seen->names[i], o->name);
		if (dup || o->has_arg != required_argument)
			continue;
		if (seen->n < ARRAY_SIZE(seen->names))
			seen->names[seen->n++] = o->name;
		printf("|--%s", o->name);
	}
}

static void print_names(const struct ctl_cmd *table)
{
	for (const struct ctl_cmd *c = table; c->name; c++)
		printf("%s%s", c == table ? "" : " ", c->name);
}

/* The case arm that offers a group's subcommands, or its sub's options. */
static void print_group(const struct ctl_cmd *g)
{
	printf("\t%s)\n", g->name);
	if (!g->subs) {
		printf("\t\twords=\"");
		print_opts(g->opts);
		printf("\";;\n");
		return;
	}
	printf("\t\tif [ -z \"$sub\" ]; then words=\"");
	print_names(g->subs);
	printf("\"; else case $sub in\n");
	for (const struct ctl_cmd *s = g->subs; s->name; s++) {
		printf("\t\t\t%s) words=\"", s->name);
		print_opts(s->opts);
		printf("\";;\n");
	}
	printf("\t\tesac; fi;;\n");
}

static const char script_head[] = "# bash completion for kin, made by `kin ctl completion bash`\n"
                                  "_kin() {\n"
                                  "\tlocal cur=${COMP_WORDS[COMP_CWORD]} words= cmd= sub= i w\n"
                                  "\tCOMPREPLY=()\n"
                                  "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
                                  "\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
                                  "\t\treturn 0\n"
                                  "\tfi\n"
                                  "\t[ \"${COMP_WORDS[1]}\" = ctl ] || return 0\n"
                                  "\ti=2\n"
                                  "\twhile [ \"$i\" -lt \"$COMP_CWORD\" ]; do\n"
                                  "\t\tw=${COMP_WORDS[i]}\n"
                                  "\t\tcase $w in\n"
                                  "\t\t-o";

static const char script_mid[] =
    ") i=$((i + 2)); continue;;\n"
    "\t\t-*) i=$((i + 1)); continue;;\n"
    "\t\tesac\n"
    "\t\tif [ -z \"$cmd\" ]; then cmd=$w; elif [ -z \"$sub\" ]; then sub=$w; fi\n"
    "\t\ti=$((i + 1))\n"
    "\tdone\n"
    "\tcase $cmd in\n"
    "\t'')\n"
    "\t\tcase $cur in\n"
    "\t\t-*) words=\"";

static const char script_tail[] = "\tesac\n"
                                  "\tcase $cur in\n"
                                  "\t-*) ;;\n"
                                  "\t*) [ -z \"$cmd\" ] || [ -z \"$sub\" ] || return 0;;\n"
                                  "\tesac\n"
                                  "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
                                  "}\n"
                                  "complete -o default -F _kin kin\n";

static void print_bash(void)
{
	struct seen seen = {.n = 0};
	printf(script_head, kin_words);
	print_valued(ctl_main_opts, &seen);
	for (const struct ctl_cmd *g = ctl_cmds; g->name; g++) {
		print_valued(g->opts, &seen);
		for (const struct ctl_cmd *s = g->subs; s && s->name; s++)
			print_valued(s->opts, &seen);
	}
	fputs(script_mid, stdout);
	print_opts(ctl_main_opts);
	printf("\";;\n\t\t*) words=\"");
	print_names(ctl_cmds);
	printf("\";;\n\t\tesac;;\n");
	for (const struct ctl_cmd *g = ctl_cmds; g->name; g++)
		if (g->opts || g->subs)
			print_group(g);
	fputs(script_tail, stdout);
}

int ctl_completion_main(struct ctl *ctl, int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "bash"))
		return ctl_usage(ctl, "expected 'completion bash'");
	print_bash();
	return CTL_OK;
}
