/* stats: what `show` reports for a cell — cpu.stat, memory.current/peak,
 * memory.events, pids.current, the PSI files — each group present only when
 * the kernel gives its files (a controller not enabled has none). */
#include "cells/cells-int.h"

#include <stdio.h>
#include <string.h>

/* Reads "key value" lines of a flat-keyed file; false if it is missing. */
static bool read_keyed(const char *dir, const char *file, const char *const keys[],
                       uint64_t *const vals[], size_t n)
{
	char path[PATH_MAX + 64];
	_cleanup_free_ char *buf = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_small(path, 64 * 1024, &buf, NULL) < 0)
		return false;
	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char key[64];
		unsigned long long v;
		if (sscanf(line, "%63s %llu", key, &v) != 2)
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(key, keys[i]) == 0)
				*vals[i] = v;
	}
	return true;
}

static bool read_u64(const char *dir, const char *file, uint64_t *ret)
{
	char path[PATH_MAX + 64];
	_cleanup_free_ char *buf = NULL;
	unsigned long long v;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_small(path, 4096, &buf, NULL) < 0 || sscanf(buf, "%llu", &v) != 1)
		return false;
	*ret = v;
	return true;
}

static void psi_line(const char *line, struct cell_psi_line *l)
{
	unsigned long long total = 0;
	sscanf(line, "%*s avg10=%lf avg60=%lf avg300=%lf total=%llu", &l->avg10, &l->avg60,
	       &l->avg300, &total);
	l->total_us = total;
}

static void read_psi(const char *dir, const char *file, struct cell_psi *psi)
{
	char path[PATH_MAX + 64];
	_cleanup_free_ char *buf = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	/* Kernels without CONFIG_PSI (or psi=0) have no file, or one that
	 * fails to read with EOPNOTSUPP. */
	if (file_read_small(path, 4096, &buf, NULL) < 0)
		return;
	psi->present = true;
	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (str_startswith(line, "some "))
			psi_line(line, &psi->some);
		else if (str_startswith(line, "full "))
			psi_line(line, &psi->full);
	}
}

static uint64_t count_lines(const char *dir, const char *file)
{
	char path[PATH_MAX + 64];
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	uint64_t n = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (file_read_small(path, 1 << 20, &buf, &len) < 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\n';
	return n;
}

int cell_show(struct cells *c, const char *path, struct cell_info *info, struct cell_stats *st,
              struct err *err)
{
	char dir[PATH_MAX];
	struct cell *cell;
	int r = cells_get(c, path, &cell, err);
	if (r < 0)
		return r;
	if (info)
		cells_fill_info(c, cell, info);
	if (!st)
		return 0;
	memset(st, 0, sizeof(*st));
	cells_cell_dir(c, cell, dir, sizeof(dir));
	/* cpu.stat's usage lines exist without the cpu controller too (core
	 * cgroup2 accounting); throttling lines only with it. */
	static const char *const cpu_keys[] = {"usage_usec", "user_usec",    "system_usec",
	                                       "nr_periods", "nr_throttled", "throttled_usec"};
	uint64_t *const cpu_vals[] = {&st->cpu_usage_us,     &st->cpu_user_us,
	                              &st->cpu_system_us,    &st->cpu_nr_periods,
	                              &st->cpu_nr_throttled, &st->cpu_throttled_us};
	st->has_cpu = read_keyed(dir, "cpu.stat", cpu_keys, cpu_vals, ARRAY_SIZE(cpu_keys));
	st->has_memory = read_u64(dir, "memory.current", &st->memory_current);
	if (st->has_memory) {
		read_u64(dir, "memory.peak", &st->memory_peak);
		static const char *const mem_keys[] = {"low", "high", "max", "oom", "oom_kill"};
		uint64_t *const mem_vals[] = {&st->mem_ev_low, &st->mem_ev_high, &st->mem_ev_max,
		                              &st->mem_ev_oom, &st->mem_ev_oom_kill};
		read_keyed(dir, "memory.events", mem_keys, mem_vals, ARRAY_SIZE(mem_keys));
	}
	st->has_pids = read_u64(dir, "pids.current", &st->pids_current);
	st->procs = count_lines(dir, "cgroup.procs");
	read_psi(dir, "cpu.pressure", &st->psi_cpu);
	read_psi(dir, "memory.pressure", &st->psi_memory);
	read_psi(dir, "io.pressure", &st->psi_io);
	return 0;
}
