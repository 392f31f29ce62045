/* util: the small pieces every part of units/ shares — string lists,
 * booleans and time spans as systemd writes them, type and dependency
 * names, exit-status sets. */
#include "units/units.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const type_names[UNIT_TYPE_COUNT] = {
    [UNIT_SERVICE] = "service",     [UNIT_SOCKET] = "socket", [UNIT_TARGET] = "target",
    [UNIT_TIMER] = "timer",         [UNIT_PATH] = "path",     [UNIT_MOUNT] = "mount",
    [UNIT_AUTOMOUNT] = "automount", [UNIT_SWAP] = "swap",     [UNIT_DEVICE] = "device",
    [UNIT_SLICE] = "slice",         [UNIT_SCOPE] = "scope",
};

const char *unit_type_name(enum unit_type t)
{
	return t >= 0 && t < UNIT_TYPE_COUNT ? type_names[t] : "invalid";
}

enum unit_type unit_type_from_suffix(const char *name)
{
	const char *dot = name ? strrchr(name, '.') : NULL;
	if (!dot)
		return UNIT_TYPE_INVALID;
	for (int t = 0; t < UNIT_TYPE_COUNT; t++)
		if (strcmp(dot + 1, type_names[t]) == 0)
			return (enum unit_type)t;
	return UNIT_TYPE_INVALID;
}

static const char *const dep_names[UNIT_DEP_COUNT] = {
    [UNIT_DEP_WANTS] = "Wants",          [UNIT_DEP_REQUIRES] = "Requires",
    [UNIT_DEP_REQUISITE] = "Requisite",  [UNIT_DEP_BINDS_TO] = "BindsTo",
    [UNIT_DEP_PART_OF] = "PartOf",       [UNIT_DEP_CONFLICTS] = "Conflicts",
    [UNIT_DEP_BEFORE] = "Before",        [UNIT_DEP_AFTER] = "After",
    [UNIT_DEP_ON_FAILURE] = "OnFailure", [UNIT_DEP_UPHOLDS] = "Upholds",
};

const char *unit_dep_name(enum unit_dep d)
{
	return d < UNIT_DEP_COUNT ? dep_names[d] : "invalid";
}

int unit_strv_push(struct unit_strv *l, const char *s)
{
	if (l->n >= UNIT_LIST_MAX)
		return -E2BIG;
	char **v = realloc(l->v, (l->n + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v[l->n] = strdup(s);
	if (!v[l->n])
		return -ENOMEM;
	v[++l->n] = NULL;
	return 0;
}

void unit_strv_clear(struct unit_strv *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

bool unit_strv_contains(const struct unit_strv *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

void unit_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

void unit_cmds_clear(struct unit_cmds *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		unit_argv_free(l->v[i].argv);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int unit_bool_parse(const char *s, bool *ret)
{
	static const char *const yes[] = {"1", "yes", "y", "true", "t", "on"};
	static const char *const no[] = {"0", "no", "n", "false", "f", "off"};
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *ret = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *ret = false, 0;
	}
	return -EINVAL;
}

/* systemd's span units, longest names first where one is a prefix. */
static const struct {
	const char *name;
	uint64_t us;
} span_units[] = {
    {"usec", 1},
    {"us", 1},
    {"µs", 1},
    {"msec", 1000},
    {"ms", 1000},
    {"seconds", 1000000},
    {"second", 1000000},
    {"sec", 1000000},
    {"s", 1000000},
    {"minutes", 60000000ull},
    {"minute", 60000000ull},
    {"min", 60000000ull},
    {"m", 60000000ull},
    {"hours", 3600000000ull},
    {"hour", 3600000000ull},
    {"hr", 3600000000ull},
    {"h", 3600000000ull},
    {"days", 86400000000ull},
    {"day", 86400000000ull},
    {"d", 86400000000ull},
    {"weeks", 604800000000ull},
    {"week", 604800000000ull},
    {"w", 604800000000ull},
    {"months", 2629800000000ull},
    {"month", 2629800000000ull},
    {"M", 2629800000000ull},
    {"years", 31557600000000ull},
    {"year", 31557600000000ull},
    {"y", 31557600000000ull},
};

/* The unit word at *p (letters or µ), its factor into *ret; advances *p. */
static int span_unit(const char **p, uint64_t default_unit_us, uint64_t *ret)
{
	const char *s = *p;
	size_t n = 0;
	while (s[n] && (s[n] == '\xc2' || s[n] == '\xb5' || (s[n] >= 'a' && s[n] <= 'z') ||
	                (s[n] >= 'A' && s[n] <= 'Z')))
		n++;
	if (n == 0)
		return *ret = default_unit_us, 0;
	for (size_t i = 0; i < ARRAY_SIZE(span_units); i++)
		if (strlen(span_units[i].name) == n && strncmp(s, span_units[i].name, n) == 0) {
			*p = s + n;
			*ret = span_units[i].us;
			return 0;
		}
	return -EINVAL;
}

int unit_timespan_parse(const char *s, uint64_t default_unit_us, uint64_t *ret_us)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (strcmp(s, "infinity") == 0)
		return *ret_us = UNIT_INFINITY, 0;
	uint64_t total = 0;
	bool any = false;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		uint64_t whole = 0, frac = 0, frac_div = 1;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (whole > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (uint64_t)(*s - '0');
		}
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9'; s++)
				if (frac_div < 1000000000ull)
					frac = frac * 10 + (uint64_t)(*s - '0'), frac_div *= 10;
		while (*s == ' ' || *s == '\t')
			s++;
		uint64_t unit;
		if (span_unit(&s, default_unit_us, &unit) < 0)
			return -EINVAL;
		if (whole && unit > UINT64_MAX / whole)
			return -ERANGE;
		uint64_t add = whole * unit + frac * unit / frac_div;
		if (add > UINT64_MAX - 1 - total)
			return -ERANGE;
		total += add;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret_us = total;
	return 0;
}

bool unit_exit_set_has(const struct unit_exit_set *s, int code, int signal)
{
	if (signal) {
		for (size_t i = 0; i < s->nsignals; i++)
			if (s->signals[i] == signal)
				return true;
		return false;
	}
	for (size_t i = 0; i < s->ncodes; i++)
		if (s->codes[i] == code)
			return true;
	return false;
}
