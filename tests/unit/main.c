/* Runs every registered unit test in name order (or those named on the
 * command line) and ends with "N passed, N failed". */
#include "unit.h"

#include <stdlib.h>

int unit_failures;
static struct unit_case *cases;

void unit_register(struct unit_case *c)
{
	struct unit_case **p = &cases;
	while (*p && strcmp((*p)->name, c->name) < 0)
		p = &(*p)->next;
	c->next = *p;
	*p = c;
}

static int selected(const char *name, int argc, char **argv)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (struct unit_case *c = cases; c; c = c->next) {
		if (!selected(c->name, argc, argv))
			continue;
		int before = unit_failures;
		c->fn();
		if (unit_failures == before) {
			printf("PASS unit/%s\n", c->name);
			passed++;
		} else {
			printf("FAIL unit/%s\n", c->name);
			failed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
