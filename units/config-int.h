/* config-int.h: what the directive table of units/ shares inside the
 * module — the table's entry, the state one assignment is applied with,
 * and the small value parsers the config*.c files share. Not part of the
 * contract (units.h). */
#pragma once

#include "units/units.h"

#include <limits.h>
#include <stddef.h>

/* The sections a directive is valid in (bits). */
enum {
	CFG_UNIT = 1u << 0,
	CFG_SERVICE = 1u << 1,
	CFG_SOCKET = 1u << 2,
	CFG_TIMER = 1u << 3,
	CFG_INSTALL = 1u << 4,
	CFG_SLICE = 1u << 5,
	/* exec settings and resources are shared by these (systemd.exec(5),
	 * systemd.resource-control(5)) */
	CFG_EXEC = CFG_SERVICE | CFG_SOCKET,
	CFG_RES = CFG_SERVICE | CFG_SOCKET | CFG_SLICE,
};

/* Flags of a directive. */
enum {
	CFG_SPEC = 1u << 0,  /* specifiers are expanded before the value is parsed */
	CFG_NOTED = 1u << 1, /* known, not acted on: reported once as ignored */
};

struct cfg_directive;

/* One assignment being applied. */
struct cfg {
	struct unit_def *d;
	const struct unit_assign *a;
	const struct unit_spec_ctx *ctx;
	const struct cfg_directive *dir;
	unit_diag_fn diag;
	void *data;
	char why[256]; /* why a value was refused, for the diag */
};

/* A parser: 0 applied, -EINVAL bad value (why set through cfg_bad),
 * -E2BIG past a bound, -ENOMEM. */
typedef int (*cfg_parse_fn)(struct cfg *c, const char *value);

struct cfg_directive {
	const char *key;
	unsigned sections;
	cfg_parse_fn parse; /* NULL with CFG_NOTED */
	size_t offset;      /* of the field in struct unit_def, for the shared parsers */
	int arg;            /* a parser's own argument (a dependency, a resource, ...) */
	unsigned flags;
};

#define CFG_OFF(field)     offsetof(struct unit_def, field)
#define CFG_FIELD(c, type) ((type *)((char *)(c)->d + (c)->dir->offset))

/* The tables, each ended by an entry with a NULL key. */
extern const struct cfg_directive cfg_unit_table[]; /* config.c: [Unit], [Install] */
extern const struct cfg_directive cfg_exec_table[]; /* config_exec.c */
extern const struct cfg_directive
    cfg_service_table[];                             /* config_svc.c: [Service] [Socket] [Timer] */
extern const struct cfg_directive cfg_res_table[];   /* config_res.c */
extern const struct cfg_directive cfg_noted_table[]; /* config_res.c: not acted on */

/* Sets c->why and returns -EINVAL. */
int cfg_bad(struct cfg *c, const char *fmt, ...) _printf_(2, 3);
/* A word of a list refused (the rest of the value is kept): reported once
 * per (unit, directive), counted in d->ignored. */
void cfg_word_bad(struct cfg *c, const char *fmt, ...) _printf_(2, 3);

/* The next whitespace-separated word of *p into buf; 0 at the end,
 * -EINVAL for a word longer than size. */
/* A list of absolute paths (each may start with one of prefixes, kept);
 * an empty value clears it. */
int cfg_path_list(struct cfg *c, const char *v, const char *prefixes);
int cfg_word(const char **p, char *buf, size_t size);

/* The shared parsers, on the field at dir->offset. */
int cfg_bool(struct cfg *c, const char *v);
int cfg_string(struct cfg *c, const char *v);     /* char *; "" frees it */
int cfg_path(struct cfg *c, const char *v);       /* char *, absolute ("" frees it) */
int cfg_words(struct cfg *c, const char *v);      /* unit_strv of words; "" resets */
int cfg_strv_one(struct cfg *c, const char *v);   /* unit_strv, the value one entry */
int cfg_unit_names(struct cfg *c, const char *v); /* unit_strv of valid names; "" resets */
int cfg_timespan(struct cfg *c, const char *v);   /* uint64_t µs, bare numbers seconds */
int cfg_timeout(struct cfg *c, const char *v);    /* uint64_t µs, 0 is infinity */
int cfg_u32(struct cfg *c, const char *v);        /* uint32_t */
int cfg_unsigned(struct cfg *c, const char *v);   /* unsigned */
int cfg_mode(struct cfg *c, const char *v);       /* mode_t, octal ≤ 07777 */
int cfg_signal(struct cfg *c, const char *v);     /* int: "SIGTERM", "TERM", "15" */
int cfg_signal_parse(const char *s);              /* the signal number, or -EINVAL */
