/* limits: the cgroup v2 limits a cell may carry — their names, the
 * controller each needs, parsing of what a user types, range checks, and
 * the text cgroupfs takes. Pure: no file is touched here. */
#include "cells/cells-int.h"

#include <stdio.h>
#include <string.h>

#define WEIGHT_MIN         1
#define WEIGHT_MAX         10000
#define CPU_PERIOD_MIN     1000ull
#define CPU_PERIOD_MAX     1000000ull
#define CPU_PERIOD_DEFAULT 100000ull
#define CPU_QUOTA_MIN      1000ull
#define CPU_QUOTA_MAX      (1ull << 40) /* ~12.7 days per period: far past any use */
#define MEMORY_MAX_BYTES   (1ull << 60)
#define PIDS_LIMIT         4194304ull /* PID_MAX_LIMIT on 64-bit */
#define CPUSET_CPU_MAX     8191
#define CPUSET_MEM_MAX     1023

static const struct {
	const char *name, *controller;
} limit_table[CELL_LIMIT_COUNT] = {
    [CELL_CPU_WEIGHT] = {"cpu.weight", "cpu"},
    [CELL_CPU_MAX] = {"cpu.max", "cpu"},
    [CELL_CPUSET_CPUS] = {"cpuset.cpus", "cpuset"},
    [CELL_CPUSET_MEMS] = {"cpuset.mems", "cpuset"},
    [CELL_MEMORY_MIN] = {"memory.min", "memory"},
    [CELL_MEMORY_LOW] = {"memory.low", "memory"},
    [CELL_MEMORY_HIGH] = {"memory.high", "memory"},
    [CELL_MEMORY_MAX] = {"memory.max", "memory"},
    [CELL_MEMORY_SWAP_MAX] = {"memory.swap.max", "memory"},
    [CELL_PIDS_MAX] = {"pids.max", "pids"},
    [CELL_IO_WEIGHT] = {"io.weight", "io"},
};

const char *cell_limit_name(enum cell_limit k)
{
	return (unsigned)k < CELL_LIMIT_COUNT ? limit_table[k].name : "?";
}

const char *cell_limit_controller(enum cell_limit k)
{
	return (unsigned)k < CELL_LIMIT_COUNT ? limit_table[k].controller : "?";
}

static uint64_t *limit_u64(struct cell_limits *l, enum cell_limit k)
{
	switch (k) {
	case CELL_CPU_WEIGHT:
		return &l->cpu_weight;
	case CELL_MEMORY_MIN:
		return &l->memory_min;
	case CELL_MEMORY_LOW:
		return &l->memory_low;
	case CELL_MEMORY_HIGH:
		return &l->memory_high;
	case CELL_MEMORY_MAX:
		return &l->memory_max;
	case CELL_MEMORY_SWAP_MAX:
		return &l->memory_swap_max;
	case CELL_PIDS_MAX:
		return &l->pids_max;
	case CELL_IO_WEIGHT:
		return &l->io_weight;
	default:
		return NULL;
	}
}

/* "512M", "1G", "4096", "max": binary suffixes, as cgroupfs users expect. */
static int parse_bytes(const char *s, uint64_t *ret)
{
	if (strcmp(s, "max") == 0) {
		*ret = CELL_UNLIMITED;
		return 0;
	}
	char num[32];
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	unsigned shift = 0;
	memcpy(num, s, n + 1);
	switch (num[n - 1]) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	}
	if (shift)
		num[n - 1] = '\0';
	uint64_t v;
	int r = str_to_u64(num, MEMORY_MAX_BYTES >> shift, &v);
	if (r < 0)
		return r;
	*ret = v << shift;
	return 0;
}

static int parse_u64_or_max(const char *s, uint64_t max, uint64_t *ret)
{
	if (strcmp(s, "max") == 0) {
		*ret = CELL_UNLIMITED;
		return 0;
	}
	return str_to_u64(s, max, ret);
}

/* "0-3,6,8-9": what cpuset.cpus/mems take; checked here so a typo is an
 * INVALID_ARGUMENT before anything is written. */
static bool cpuset_valid(const char *s, unsigned max)
{
	if (strlen(s) >= CELL_CPUSET_LEN)
		return false;
	if (!*s)
		return true; /* empty: the parent's set */
	for (const char *p = s;;) {
		char *end;
		if (*p < '0' || *p > '9')
			return false;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				return false;
			b = strtoul(p, &end, 10);
		}
		if (a > max || b > max || a > b)
			return false;
		if (*end == '\0')
			return true;
		if (*end != ',')
			return false;
		p = end + 1;
	}
}

static int find_key(const char *key)
{
	for (int k = 0; k < CELL_LIMIT_COUNT; k++)
		if (strcmp(limit_table[k].name, key) == 0)
			return k;
	return -1;
}

int cell_limit_parse(struct cell_limits *l, const char *key, const char *value, struct err *err)
{
	int k = key ? find_key(key) : -1;
	int r = 0;
	if (k < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unknown limit \"%s\" (cpu.weight, cpu.max, cpuset.cpus, "
		               "cpuset.mems, memory.min|low|high|max, memory.swap.max, "
		               "pids.max, io.weight)",
		               key ? key : "");
	if (!value)
		value = "";
	switch ((enum cell_limit)k) {
	case CELL_CPU_WEIGHT:
	case CELL_IO_WEIGHT:
		r = str_to_u64(value, UINT64_MAX, limit_u64(l, k));
		break;
	case CELL_CPU_MAX: {
		char q[32] = "", p[32] = "";
		int n = sscanf(value, "%31s %31s", q, p);
		if (n < 1 || strlen(value) > 64) {
			r = -EINVAL;
			break;
		}
		r = parse_u64_or_max(q, UINT64_MAX - 1, &l->cpu_quota_us);
		l->cpu_period_us = CPU_PERIOD_DEFAULT;
		if (r == 0 && n == 2)
			r = str_to_u64(p, UINT64_MAX, &l->cpu_period_us);
		break;
	}
	case CELL_CPUSET_CPUS:
	case CELL_CPUSET_MEMS:
		r = str_copy(k == CELL_CPUSET_CPUS ? l->cpuset_cpus : l->cpuset_mems,
		             CELL_CPUSET_LEN, value);
		if (r < 0)
			r = -EINVAL;
		break;
	case CELL_MEMORY_MIN:
	case CELL_MEMORY_LOW:
	case CELL_MEMORY_HIGH:
	case CELL_MEMORY_MAX:
	case CELL_MEMORY_SWAP_MAX:
		r = parse_bytes(value, limit_u64(l, k));
		break;
	case CELL_PIDS_MAX:
		r = parse_u64_or_max(value, UINT64_MAX - 1, &l->pids_max);
		break;
	case CELL_LIMIT_COUNT:
		break;
	}
	if (r < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: \"%s\" is not a valid value", key, value);
	struct cell_limits one = *l;
	one.set = 1u << k;
	r = cell_limits_validate(&one, err);
	if (r < 0)
		return r;
	l->set |= 1u << k;
	return 0;
}

static int range_fail(struct err *err, enum cell_limit k, const char *range)
{
	return err_set(err, -ERANGE, ERR_INVALID_ARGUMENT, "%s: out of range (%s)",
	               cell_limit_name(k), range);
}

int cell_limits_validate(const struct cell_limits *l, struct err *err)
{
	if (l->set >> CELL_LIMIT_COUNT)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unknown limit bits set");
	for (int k = 0; k < CELL_LIMIT_COUNT; k++) {
		if (!(l->set & (1u << k)))
			continue;
		switch ((enum cell_limit)k) {
		case CELL_CPU_WEIGHT:
		case CELL_IO_WEIGHT: {
			uint64_t v = k == CELL_CPU_WEIGHT ? l->cpu_weight : l->io_weight;
			if (v < WEIGHT_MIN || v > WEIGHT_MAX)
				return range_fail(err, k, "1 to 10000");
			break;
		}
		case CELL_CPU_MAX:
			if (l->cpu_period_us < CPU_PERIOD_MIN || l->cpu_period_us > CPU_PERIOD_MAX)
				return range_fail(err, k, "period 1000 to 1000000 us");
			if (l->cpu_quota_us != CELL_UNLIMITED &&
			    (l->cpu_quota_us < CPU_QUOTA_MIN || l->cpu_quota_us > CPU_QUOTA_MAX))
				return range_fail(err, k, "quota 1000 us to 2^40 us, or max");
			break;
		case CELL_CPUSET_CPUS:
			if (!cpuset_valid(l->cpuset_cpus, CPUSET_CPU_MAX))
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "cpuset.cpus: \"%s\" is not a list like 0-3,6 "
				               "(CPUs 0 to %d)",
				               l->cpuset_cpus, CPUSET_CPU_MAX);
			break;
		case CELL_CPUSET_MEMS:
			if (!cpuset_valid(l->cpuset_mems, CPUSET_MEM_MAX))
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "cpuset.mems: \"%s\" is not a list like 0-1 "
				               "(nodes 0 to %d)",
				               l->cpuset_mems, CPUSET_MEM_MAX);
			break;
		case CELL_MEMORY_MIN:
		case CELL_MEMORY_LOW:
		case CELL_MEMORY_HIGH:
		case CELL_MEMORY_MAX:
		case CELL_MEMORY_SWAP_MAX: {
			const uint64_t *v = limit_u64((struct cell_limits *)l, k);
			if (v && *v != CELL_UNLIMITED && *v > MEMORY_MAX_BYTES)
				return range_fail(err, k, "0 to 1 EiB, or max");
			break;
		}
		case CELL_PIDS_MAX:
			if (l->pids_max != CELL_UNLIMITED && l->pids_max > PIDS_LIMIT)
				return range_fail(err, k, "0 to 4194304, or max");
			break;
		case CELL_LIMIT_COUNT:
			break;
		}
	}
	return 0;
}

static int fmt_u64_or_max(char *buf, size_t size, uint64_t v)
{
	int n = v == CELL_UNLIMITED ? snprintf(buf, size, "max")
	                            : snprintf(buf, size, "%llu", (unsigned long long)v);
	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

int cell_limit_format(const struct cell_limits *l, enum cell_limit k, char *buf, size_t size)
{
	int n;
	switch (k) {
	case CELL_CPU_MAX:
		if (l->cpu_quota_us == CELL_UNLIMITED)
			n = snprintf(buf, size, "max %llu", (unsigned long long)l->cpu_period_us);
		else
			n = snprintf(buf, size, "%llu %llu", (unsigned long long)l->cpu_quota_us,
			             (unsigned long long)l->cpu_period_us);
		break;
	case CELL_IO_WEIGHT:
		n = snprintf(buf, size, "default %llu", (unsigned long long)l->io_weight);
		break;
	case CELL_CPUSET_CPUS:
		n = snprintf(buf, size, "%s", l->cpuset_cpus);
		break;
	case CELL_CPUSET_MEMS:
		n = snprintf(buf, size, "%s", l->cpuset_mems);
		break;
	case CELL_LIMIT_COUNT:
		return -EINVAL;
	default: {
		const uint64_t *v = limit_u64((struct cell_limits *)l, k);
		return v ? fmt_u64_or_max(buf, size, *v) : -EINVAL;
	}
	}
	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}
