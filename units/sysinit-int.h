/* sysinit-int.h: what sysinit.c, fstab.c and tmpfiles.c share — a program
 * run with a deadline and the *.d directories of host configuration files
 * read line by line. Not for other modules. */
#pragma once

#include "units/units.h"

/* Runs argv, waits at most ms; its exit status, or -errno / -ETIMEDOUT. */
int sysinit_run_wait(char *const argv[], int ms);

/* One line of a configuration file (trimmed, not a comment); < 0 counts it
 * as a problem. */
typedef int (*sysinit_line_fn)(char *line, const char *file, unsigned n);
/* Every *.conf of dirs (NULL-terminated; the first dir wins a name), in
 * the order of their file names, then extra (NULL: none), line by line:
 * the count of lines fn refused. */
int sysinit_conf_dirs(const char *const *dirs, const char *extra, sysinit_line_fn fn);

/* The steps of units_sysinit: each returns the count of its problems (logged). */
int sysinit_fstab(const struct units_sysinit_ops *ops);
int sysinit_tmpfiles(void);
