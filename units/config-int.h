/* config-int.h: the directive tables' shared pieces (config.c,
 * config_exec.c, config_more.c). Not for other files. */
#pragma once

#include "units/units.h"

#include <stddef.h>

/* Parses value into field (a member of d); -errno with err on a bad value
 * (the directive is then reported and ignored), -ENOMEM only on memory. */
typedef int (*cfg_parse_fn)(struct unit_def *d, void *field, const char *value, struct err *err);
struct cfg_directive {
	const char *key;
	cfg_parse_fn parse; /* NULL: known, not acted on */
	size_t offset;      /* of the field in struct unit_def */
};

int cfg_str(struct unit_def *d, void *field, const char *v, struct err *err);
int cfg_bool(struct unit_def *d, void *field, const char *v, struct err *err);
int cfg_secs(struct unit_def *d, void *field, const char *v, struct err *err);
int cfg_words(struct unit_def *d, void *field, const char *v, struct err *err);
int cfg_line(struct unit_def *d, void *field, const char *v, struct err *err);
int cfg_signal(const char *v, int *ret);

extern const struct cfg_directive cfg_exec_table[];   /* [Service]/[Socket] exec settings */
extern const struct cfg_directive cfg_res_table[];    /* resource control */
extern const struct cfg_directive cfg_socket_table[]; /* [Socket] */
extern const struct cfg_directive cfg_timer_table[];  /* [Timer] */
extern const struct cfg_directive cfg_install_table[];

/* Limit*=: a row made in tmp whose offset is the limit's index. */
const struct cfg_directive *cfg_rlimit_find(const char *key, struct cfg_directive *tmp);
int cfg_condition(struct unit_def *d, const struct unit_assign *a, const struct unit_spec_ctx *ctx,
                  unit_diag_fn diag, void *data);
void cfg_exec_free(struct unit_exec *e);
void cfg_more_free(struct unit_def *d);
