/* config: the directive table's front — a unit_def with systemd's
 * defaults, one assignment dispatched to its directive (config_exec.c,
 * config_svc.c, config_res.c hold the rest of the table), the diag that
 * reports a problem once per (unit, directive), the parsers the tables
 * share, and the [Unit] and [Install] directives. A unit is never refused
 * for a directive: what kin cannot use is reported and ignored, as
 * systemd does. */
#include "units/config-int.h"
#include "units/files-int.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The definition and what only this file sees: the directives reported
 * already, so a drop-in repeating a bad line is not reported twice. */
struct cfg_box {
	struct unit_def def; /* first: a unit_def pointer is the box's */
	struct unit_strv reported;
};

void cfg_exec_free(struct unit_exec *e);
void cfg_service_free(struct unit_def *d);

int unit_def_new(const struct unit_name *name, struct unit_def **ret)
{
	struct cfg_box *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	struct unit_def *d = &b->def;
	d->name = *name;
	/* The copy's instance must point at its own bytes. */
	d->name.instance = name->instance ? d->name.instance_buf : NULL;
	d->default_dependencies = true;
	d->start_limit_interval_us = 10 * 1000000ull;
	d->start_limit_burst = 5;
	for (int k = 0; k < UNIT_DIR_KIND_COUNT; k++)
		d->exec.dir_modes[k] = 0755;
	d->service.type = UNIT_SVC_SIMPLE;
	d->service.guess_main_pid = true;
	d->service.restart_us = 100000;
	d->service.timeout_start_us = 90 * 1000000ull;
	d->service.timeout_stop_us = 90 * 1000000ull;
	d->service.kill_mode = UNIT_KILL_CONTROL_GROUP;
	d->service.kill_signal = SIGTERM;
	d->service.final_kill_signal = SIGKILL;
	d->service.send_sigkill = true;
	d->service.notify_access = UNIT_NOTIFY_NONE;
	d->socket.socket_mode = 0666;
	d->socket.directory_mode = 0755;
	d->socket.backlog = SOMAXCONN;
	d->socket.bind_ipv6_only = -1;
	*ret = d;
	return 0;
}

void unit_def_free(struct unit_def *d)
{
	if (!d)
		return;
	struct cfg_box *b = (struct cfg_box *)d;
	free(d->source.fragment);
	unit_strv_clear(&d->source.dropins);
	unit_strv_clear(&d->source.aliases);
	free(d->description);
	unit_strv_clear(&d->documentation);
	for (int k = 0; k < UNIT_DEP_COUNT; k++)
		unit_strv_clear(&d->deps[k]);
	unit_strv_clear(&d->requires_mounts_for);
	for (size_t i = 0; i < d->nconds; i++)
		free(d->conds[i].arg);
	cfg_exec_free(&d->exec);
	cfg_service_free(d);
	unit_strv_clear(&d->install.wanted_by);
	unit_strv_clear(&d->install.required_by);
	unit_strv_clear(&d->install.alias);
	unit_strv_clear(&d->install.also);
	free(d->install.default_instance);
	unit_strv_clear(&d->wants_dir);
	unit_strv_clear(&d->requires_dir);
	unit_strv_clear(&b->reported);
	free(b);
}

/* ---- reporting ------------------------------------------------------------- */

/* Whether what (a "Section/Key") is reported for the first time; past
 * UNIT_LIST_MAX distinct ones a hostile file gets no more lines. */
static bool first_report(struct unit_def *d, const char *what)
{
	struct cfg_box *b = (struct cfg_box *)d;
	if (unit_strv_contains(&b->reported, what))
		return false;
	return unit_strv_push(&b->reported, what) == 0;
}

_printf_(5, 0) static void report_v(struct unit_def *d, const struct unit_assign *a,
                                    unit_diag_fn diag, void *data, const char *fmt, va_list ap)
{
	char what[256], msg[384];
	d->ignored++;
	snprintf(what, sizeof(what), "%s/%s", a->section, a->key);
	if (!diag || !first_report(d, what))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	diag(data, a->file, a->line, "%s:%u: unit \"%s\": [%.64s] %.64s=: %s, ignored",
	     a->file ? a->file : "", a->line, d->name.full, a->section, a->key, msg);
}

_printf_(5, 6) static void report(struct unit_def *d, const struct unit_assign *a,
                                  unit_diag_fn diag, void *data, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_v(d, a, diag, data, fmt, ap);
	va_end(ap);
}

int cfg_bad(struct cfg *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void cfg_word_bad(struct cfg *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report_v(c->d, c->a, c->diag, c->data, fmt, ap);
	va_end(ap);
}

/* ---- shared parsers ----------------------------------------------------------- */

int cfg_word(const char **p, char *buf, size_t size)
{
	const char *s = *p;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = 0;
	while (s[n] && s[n] != ' ' && s[n] != '\t')
		n++;
	*p = s + n;
	if (n == 0)
		return 0;
	if (n >= size)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 1;
}

int cfg_bool(struct cfg *c, const char *v)
{
	if (unit_bool_parse(v, CFG_FIELD(c, bool)) < 0)
		return cfg_bad(c, "\"%.60s\" is not a boolean", v);
	return 0;
}

int cfg_string(struct cfg *c, const char *v)
{
	char **f = CFG_FIELD(c, char *);
	char *s = NULL;
	if (*v && !(s = strdup(v)))
		return -ENOMEM;
	free(*f);
	*f = s;
	return 0;
}

int cfg_path(struct cfg *c, const char *v)
{
	if (*v && *v != '/')
		return cfg_bad(c, "\"%.60s\" is not an absolute path", v);
	return cfg_string(c, v);
}

int cfg_words(struct cfg *c, const char *v)
{
	struct unit_strv *l = CFG_FIELD(c, struct unit_strv);
	char w[PATH_MAX];
	int r;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	while ((r = cfg_word(&v, w, sizeof(w))) > 0)
		if ((r = unit_strv_push(l, w)) < 0)
			return r;
	return r < 0 ? cfg_bad(c, "a word longer than %zu bytes", sizeof(w) - 1) : 0;
}

int cfg_strv_one(struct cfg *c, const char *v)
{
	struct unit_strv *l = CFG_FIELD(c, struct unit_strv);
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	return unit_strv_push(l, v);
}

/* Names of units; arg 1: an empty value resets the list (the [Install]
 * lists, Sockets=), 0: it does nothing (dependencies cannot be reset in
 * systemd either). A bad name is reported, the others kept. */
int cfg_unit_names(struct cfg *c, const char *v)
{
	struct unit_strv *l = CFG_FIELD(c, struct unit_strv);
	char w[UNIT_NAME_MAX + 2];
	int r;
	if (!*v) {
		if (c->dir->arg)
			unit_strv_clear(l);
		return 0;
	}
	while ((r = cfg_word(&v, w, sizeof(w))) != 0) {
		if (r < 0 || !unit_name_valid(w)) {
			cfg_word_bad(c, "\"%.60s\" is not a unit name", r < 0 ? "(too long)" : w);
			continue;
		}
		if (unit_strv_contains(l, w))
			continue;
		if ((r = unit_strv_push(l, w)) < 0)
			return r;
	}
	return 0;
}

int cfg_timespan(struct cfg *c, const char *v)
{
	if (unit_timespan_parse(v, 1000000, CFG_FIELD(c, uint64_t)) < 0)
		return cfg_bad(c, "\"%.60s\" is not a time span", v);
	return 0;
}

int cfg_timeout(struct cfg *c, const char *v)
{
	uint64_t us;
	if (unit_timespan_parse(v, 1000000, &us) < 0)
		return cfg_bad(c, "\"%.60s\" is not a time span", v);
	*CFG_FIELD(c, uint64_t) = us ? us : UNIT_INFINITY;
	return 0;
}

int cfg_u32(struct cfg *c, const char *v)
{
	if (str_to_u32(v, CFG_FIELD(c, uint32_t)) < 0)
		return cfg_bad(c, "\"%.60s\" is not a number", v);
	return 0;
}

int cfg_unsigned(struct cfg *c, const char *v)
{
	uint32_t n;
	if (str_to_u32(v, &n) < 0)
		return cfg_bad(c, "\"%.60s\" is not a number", v);
	*CFG_FIELD(c, unsigned) = n;
	return 0;
}

int cfg_mode(struct cfg *c, const char *v)
{
	char *end = NULL;
	unsigned long m = *v >= '0' && *v <= '7' ? strtoul(v, &end, 8) : 010000;
	if (!end || *end || m > 07777)
		return cfg_bad(c, "\"%.60s\" is not an octal mode", v);
	*CFG_FIELD(c, mode_t) = (mode_t)m;
	return 0;
}

int cfg_signal_parse(const char *s)
{
	uint32_t n;
	if (str_to_u32(s, &n) == 0)
		return n >= 1 && n < (uint32_t)NSIG ? (int)n : -EINVAL;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);
		if (abbrev && strcmp(abbrev, s) == 0)
			return sig;
	}
	if (strncmp(s, "RTMIN+", 6) == 0 && str_to_u32(s + 6, &n) == 0 &&
	    n <= (uint32_t)(SIGRTMAX - SIGRTMIN))
		return SIGRTMIN + (int)n;
	return -EINVAL;
}

int cfg_signal(struct cfg *c, const char *v)
{
	int sig = cfg_signal_parse(v);
	if (sig < 0)
		return cfg_bad(c, "\"%.60s\" is not a signal", v);
	*CFG_FIELD(c, int) = sig;
	return 0;
}

/* ---- [Unit] ------------------------------------------------------------------- */

static int cfg_dep(struct cfg *c, const char *v)
{
	return cfg_unit_names(c, v);
}

int cfg_path_list(struct cfg *c, const char *v, const char *prefixes)
{
	struct unit_strv *l = CFG_FIELD(c, struct unit_strv);
	char w[PATH_MAX];
	int r;
	if (!*v) {
		unit_strv_clear(l);
		return 0;
	}
	while ((r = cfg_word(&v, w, sizeof(w))) != 0) {
		const char *p = w + (r > 0 ? strspn(w, prefixes) : 0);
		if (r < 0 || *p != '/') {
			cfg_word_bad(c, "\"%.60s\" is not an absolute path",
			             r < 0 ? "(too long)" : w);
			continue;
		}
		if ((r = unit_strv_push(l, w)) < 0)
			return r;
	}
	return 0;
}

static int cfg_abs_paths(struct cfg *c, const char *v)
{
	return cfg_path_list(c, v, "");
}

/* Condition*= and Assert*= ('|' then '!' prefixes); an empty value drops
 * every earlier one of its kind (conditions or asserts), as in systemd. */
static int cfg_condition(struct cfg *c, const char *v)
{
	struct unit_def *d = c->d;
	bool assert = c->dir->arg;
	const char *name = c->a->key + (assert ? STRLEN("Assert") : STRLEN("Condition"));
	int type = unit_cond_type_from_name(name);
	if (type < 0)
		return cfg_bad(c, "kin does not know this condition");
	if (!*v) {
		size_t k = 0;
		for (size_t i = 0; i < d->nconds; i++) {
			if (d->conds[i].assert == assert)
				free(d->conds[i].arg);
			else
				d->conds[k++] = d->conds[i];
		}
		d->nconds = k;
		return 0;
	}
	struct unit_condition cond = {.type = (enum unit_cond_type)type, .assert = assert};
	if (*v == '|')
		for (cond.trigger = true, v++; *v == ' ' || *v == '\t'; v++)
			;
	if (*v == '!')
		for (cond.negate = true, v++; *v == ' ' || *v == '\t'; v++)
			;
	if (!*v)
		return cfg_bad(c, "nothing after the prefixes");
	if (d->nconds >= UNIT_CONDS_MAX)
		return -E2BIG;
	if (!(cond.arg = strdup(v)))
		return -ENOMEM;
	d->conds[d->nconds++] = cond;
	return 0;
}

static const struct cfg_directive cond_directive = {"Condition", CFG_UNIT, cfg_condition,
                                                    0,           0,        CFG_SPEC};
static const struct cfg_directive assert_directive = {"Assert", CFG_UNIT, cfg_condition,
                                                      0,        1,        CFG_SPEC};

#define DEP(key, dep)                                                                              \
	{                                                                                          \
		key, CFG_UNIT, cfg_dep, CFG_OFF(deps[dep]), 0, CFG_SPEC                            \
	}

const struct cfg_directive cfg_unit_table[] = {
    {"Description", CFG_UNIT, cfg_string, CFG_OFF(description), 0, CFG_SPEC},
    {"Documentation", CFG_UNIT, cfg_words, CFG_OFF(documentation), 0, CFG_SPEC},
    DEP("Wants", UNIT_DEP_WANTS),
    DEP("Requires", UNIT_DEP_REQUIRES),
    DEP("Requisite", UNIT_DEP_REQUISITE),
    DEP("BindsTo", UNIT_DEP_BINDS_TO),
    DEP("PartOf", UNIT_DEP_PART_OF),
    DEP("Conflicts", UNIT_DEP_CONFLICTS),
    DEP("Before", UNIT_DEP_BEFORE),
    DEP("After", UNIT_DEP_AFTER),
    DEP("OnFailure", UNIT_DEP_ON_FAILURE),
    DEP("Upholds", UNIT_DEP_UPHOLDS),
    {"RequiresMountsFor", CFG_UNIT, cfg_abs_paths, CFG_OFF(requires_mounts_for), 0, CFG_SPEC},
    {"DefaultDependencies", CFG_UNIT, cfg_bool, CFG_OFF(default_dependencies), 0, 0},
    {"RefuseManualStart", CFG_UNIT, cfg_bool, CFG_OFF(refuse_manual_start), 0, 0},
    {"RefuseManualStop", CFG_UNIT, cfg_bool, CFG_OFF(refuse_manual_stop), 0, 0},
    {"StopWhenUnneeded", CFG_UNIT, cfg_bool, CFG_OFF(stop_when_unneeded), 0, 0},
    {"AllowIsolate", CFG_UNIT, cfg_bool, CFG_OFF(allow_isolate), 0, 0},
    {"IgnoreOnIsolate", CFG_UNIT, cfg_bool, CFG_OFF(ignore_on_isolate), 0, 0},
    {"JobTimeoutSec", CFG_UNIT, cfg_timespan, CFG_OFF(job_timeout_us), 0, 0},
    {"StartLimitIntervalSec", CFG_UNIT, cfg_timespan, CFG_OFF(start_limit_interval_us), 0, 0},
    /* the old [Service] spellings */
    {"StartLimitInterval", CFG_SERVICE, cfg_timespan, CFG_OFF(start_limit_interval_us), 0, 0},
    {"StartLimitBurst", CFG_UNIT | CFG_SERVICE, cfg_unsigned, CFG_OFF(start_limit_burst), 0, 0},
    /* [Install] */
    {"WantedBy", CFG_INSTALL, cfg_unit_names, CFG_OFF(install.wanted_by), 1, CFG_SPEC},
    {"RequiredBy", CFG_INSTALL, cfg_unit_names, CFG_OFF(install.required_by), 1, CFG_SPEC},
    {"Alias", CFG_INSTALL, cfg_unit_names, CFG_OFF(install.alias), 1, CFG_SPEC},
    {"Also", CFG_INSTALL, cfg_unit_names, CFG_OFF(install.also), 1, CFG_SPEC},
    {"DefaultInstance", CFG_INSTALL, cfg_string, CFG_OFF(install.default_instance), 0, CFG_SPEC},
    {NULL, 0, NULL, 0, 0, 0},
};

/* ---- dispatch ------------------------------------------------------------------ */

static const struct {
	const char *name;
	unsigned bit;
	enum unit_type type; /* the unit type it belongs to; INVALID: any */
} sections[] = {
    {"Unit", CFG_UNIT, UNIT_TYPE_INVALID},  {"Install", CFG_INSTALL, UNIT_TYPE_INVALID},
    {"Service", CFG_SERVICE, UNIT_SERVICE}, {"Socket", CFG_SOCKET, UNIT_SOCKET},
    {"Timer", CFG_TIMER, UNIT_TIMER},       {"Slice", CFG_SLICE, UNIT_SLICE},
};

static const struct cfg_directive *const tables[] = {
    cfg_unit_table, cfg_exec_table, cfg_service_table, cfg_res_table, cfg_noted_table};

/* The directive for key in section bit; *ret_known: the key exists in
 * another section. */
static const struct cfg_directive *lookup(const char *key, unsigned bit, bool *ret_known)
{
	*ret_known = false;
	if (bit == CFG_UNIT && str_startswith(key, "Condition"))
		return &cond_directive;
	if (bit == CFG_UNIT && str_startswith(key, "Assert"))
		return &assert_directive;
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
		for (const struct cfg_directive *e = tables[t]; e->key; e++)
			if (strcmp(e->key, key) == 0) {
				if (e->sections & bit)
					return e;
				*ret_known = true;
			}
	return NULL;
}

/* The section's bit, 0 with a reason in why when kin does not read it. */
static unsigned section_bit(const struct unit_def *d, const char *section, char *why, size_t size)
{
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++) {
		if (strcmp(sections[i].name, section) != 0)
			continue;
		if (sections[i].type == UNIT_TYPE_INVALID || sections[i].type == d->name.type)
			return sections[i].bit;
		snprintf(why, size, "a [%s] section does not belong in a .%s unit", section,
		         unit_type_name(d->name.type));
		return 0;
	}
	for (int t = 0; t < UNIT_TYPE_COUNT; t++) {
		char up[32];
		snprintf(up, sizeof(up), "%s", unit_type_name(t));
		up[0] = (char)(up[0] - 'a' + 'A');
		if (strcmp(up, section) == 0) {
			snprintf(why, size, "kin does not run .%s units", unit_type_name(t));
			return 0;
		}
	}
	snprintf(why, size, "unknown section");
	return 0;
}

/* Applies the directive: specifiers, then its parser. */
static int apply_directive(struct cfg *c)
{
	const struct unit_assign *a = c->a;
	_cleanup_free_ char *expanded = NULL;
	const char *v = a->value ? a->value : "";
	if (c->dir->flags & CFG_SPEC) {
		struct err e = {0};
		if (unit_specifiers_expand(v, c->ctx, &expanded, &e) < 0) {
			if (e.errnum == -ENOMEM)
				return -ENOMEM;
			report(c->d, a, c->diag, c->data, "%s", e.msg[0] ? e.msg : "bad specifier");
			return 0;
		}
		v = expanded;
	}
	int r = c->dir->parse(c, v);
	if (r == -ENOMEM)
		return r;
	if (r == -E2BIG)
		report(c->d, a, c->diag, c->data, "more entries than kin keeps");
	else if (r < 0)
		report(c->d, a, c->diag, c->data, "%s", c->why[0] ? c->why : "bad value");
	return 0;
}

int unit_def_apply(struct unit_def *d, const struct unit_assign *a, const struct unit_spec_ctx *ctx,
                   unit_diag_fn diag, void *data)
{
	char why[128];
	/* X- sections and keys are the user's own: systemd ignores them silently. */
	if (str_startswith(a->section, "X-") || str_startswith(a->key, "X-"))
		return 0;
	unsigned bit = section_bit(d, a->section, why, sizeof(why));
	if (!bit) {
		char what[256];
		d->ignored++;
		/* once per section, not per line of it */
		snprintf(what, sizeof(what), "[%s]", a->section);
		if (diag && first_report(d, what))
			diag(data, a->file, a->line, "%s:%u: unit \"%s\": [%.64s]: %s, ignored",
			     a->file ? a->file : "", a->line, d->name.full, a->section, why);
		return 0;
	}
	bool known;
	const struct cfg_directive *dir = lookup(a->key, bit, &known);
	if (!dir) {
		report(d, a, diag, data, "%s",
		       known ? "not valid in this section" : "unknown directive");
		return 0;
	}
	if (dir->flags & CFG_NOTED) {
		report(d, a, diag, data, "kin does not act on it");
		return 0;
	}
	struct cfg c = {.d = d, .a = a, .ctx = ctx, .dir = dir, .diag = diag, .data = data};
	return apply_directive(&c);
}
