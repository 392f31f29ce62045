/* env: a service's environment as unit files give it — Environment=
 * values (words quoted as in command lines) and EnvironmentFile= texts
 * (systemd.exec(5): KEY=VALUE lines, comments, shell-like quotes and
 * backslashes; Debian's /etc/default files read as systemd reads them). */
#include "units/words-int.h"

#include <stdio.h>
#include <string.h>

/* Moves every string of add onto l (all or none: l's bound is checked first). */
static int strv_append_all(struct unit_strv *l, struct unit_strv *add, const char *what,
                           struct err *err)
{
	if (l->n + add->n > UNIT_ENV_MAX) {
		unit_strv_clear(add);
		return err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: more than %d assignments", what,
		               UNIT_ENV_MAX);
	}
	for (size_t i = 0; i < add->n; i++) {
		int r = unit_strv_push(l, add->v[i]);
		if (r < 0) {
			unit_strv_clear(add);
			return err_set(err, r, ERR_INTERNAL, "%s: %s", what, strerror(-r));
		}
	}
	unit_strv_clear(add);
	return 0;
}

int unit_env_assign_parse(const char *value, struct unit_strv *l, struct err *err)
{
	char what[96];
	snprintf(what, sizeof(what), "Environment \"%.64s%s\"", value,
	         strnlen(value, 65) > 64 ? "..." : "");
	if (strnlen(value, UNIT_LINE_MAX + 1) > UNIT_LINE_MAX)
		return err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: longer than %d bytes", what,
		               UNIT_LINE_MAX);
	struct unit_strv add = {0};
	const char *p = value;
	for (;;) {
		_cleanup_free_ char *w = NULL;
		int r = unit_word_next(&p, &w, what, err);
		if (r == 0)
			break;
		if (r > 0 && add.n >= UNIT_ENV_MAX)
			r = err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: more than %d assignments",
			            what, UNIT_ENV_MAX);
		if (r < 0) {
			unit_strv_clear(&add);
			return r;
		}
		/* A word that is no assignment is skipped, as systemd skips it. */
		const char *eq = strchr(w, '=');
		if (!eq || !unit_env_name_valid(w, (size_t)(eq - w)))
			continue;
		if ((r = unit_strv_push(&add, w)) < 0) {
			unit_strv_clear(&add);
			return err_set(err, r, ERR_INTERNAL, "%s: %s", what, strerror(-r));
		}
	}
	return strv_append_all(l, &add, what, err);
}

/* ---- environment files ---------------------------------------------------- */

struct envfile {
	const char *s, *end;
	struct unit_sb key, val;
};

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The rest of a line after a quoted value, or an unquoted value: a
 * backslash keeps the next byte (a newline after it joins lines),
 * whitespace at either end goes. keep_from: bytes of val before this
 * part, which trimming never touches. */
static int envfile_unquoted(struct envfile *f, size_t keep_from)
{
	int r = 0;
	while (f->s < f->end && *f->s != '\n' && r >= 0) {
		char c = *f->s++;
		if (c == '\\' && f->s < f->end) {
			c = *f->s++;
			if (c == '\n')
				continue;
		} else if (c == '\\') {
			break; /* a backslash ending the file: nothing follows to keep */
		}
		r = unit_sb_putc(&f->val, c);
	}
	while (f->val.len > keep_from && blank(f->val.s[f->val.len - 1]))
		f->val.s[--f->val.len] = '\0';
	return r;
}

/* A quoted value (the quote at f->s): single quotes keep every byte,
 * double quotes undo a backslash before one of "\`$ and a newline.
 * -EINVAL: the file ends inside. */
static int envfile_quoted(struct envfile *f)
{
	char q = *f->s++;
	int r = unit_sb_put(&f->val, "", 0);
	while (r >= 0) {
		if (f->s >= f->end)
			return -EINVAL;
		char c = *f->s++;
		if (c == q)
			break;
		if (q == '"' && c == '\\' && f->s < f->end) {
			char n = *f->s;
			if (n == '\n') {
				f->s++;
				continue;
			}
			if (strchr("\"\\`$", n)) {
				c = n;
				f->s++;
			}
		}
		r = unit_sb_putc(&f->val, c);
	}
	size_t keep = f->val.len;
	return r < 0 ? r : envfile_unquoted(f, keep);
}

/* Skips to the next line. */
static void envfile_skip_line(struct envfile *f)
{
	const char *nl = memchr(f->s, '\n', (size_t)(f->end - f->s));
	f->s = nl ? nl + 1 : f->end;
}

/* One line (or more, joined) at f->s: 1 an assignment in f->key/f->val,
 * 0 nothing (blank, comment), -EINVAL a bad line (skipped), < 0 else. */
static int envfile_line(struct envfile *f)
{
	unit_sb_free(&f->key);
	unit_sb_free(&f->val);
	while (f->s < f->end && (blank(*f->s) || *f->s == '\n'))
		f->s++;
	if (f->s >= f->end)
		return 0;
	if (*f->s == '#' || *f->s == ';') {
		envfile_skip_line(f);
		return 0;
	}
	while (f->s < f->end && *f->s != '=' && *f->s != '\n') {
		int r = unit_sb_putc(&f->key, *f->s++);
		if (r < 0)
			return r;
	}
	if (f->s >= f->end || *f->s == '\n')
		return -EINVAL; /* no '=' */
	f->s++;
	while (f->key.len && blank(f->key.s[f->key.len - 1]))
		f->key.s[--f->key.len] = '\0';
	while (f->s < f->end && blank(*f->s))
		f->s++;
	int r = f->s < f->end && (*f->s == '\'' || *f->s == '"') ? envfile_quoted(f)
	                                                         : envfile_unquoted(f, 0);
	if (r < 0)
		return r;
	/* The value is read whole even under a bad name, so the next line
	 * starts where a shell would start it. */
	return f->key.s && unit_env_name_valid(f->key.s, f->key.len) ? 1 : -EINVAL;
}

int unit_envfile_parse(const char *text, size_t len, struct unit_strv *l, size_t *ret_bad,
                       struct err *err)
{
	const char *what = "environment file";
	if (len > UNIT_ENVFILE_MAX)
		return err_set(err, -EFBIG, ERR_OUT_OF_RANGE, "%s: larger than %d bytes", what,
		               UNIT_ENVFILE_MAX);
	if (memchr(text, '\0', len))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: holds a NUL byte", what);
	struct envfile f = {.s = text, .end = text + len};
	f.key.max = f.val.max = UNIT_ENVFILE_MAX + 2; /* KEY=VALUE of a whole file */
	struct unit_strv add = {0};
	size_t bad = 0;
	int r;
	while ((r = envfile_line(&f)) != 0 || f.s < f.end) {
		if (r == -EINVAL) {
			bad++;
			continue;
		}
		if (r > 0 && add.n >= UNIT_ENV_MAX)
			r = err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: more than %d assignments",
			            what, UNIT_ENV_MAX);
		if (r > 0) {
			r = unit_sb_putc(&f.key, '=');
			r = r < 0 ? r : unit_sb_put(&f.key, f.val.s ? f.val.s : "", f.val.len);
			r = r < 0 ? r : unit_strv_push(&add, f.key.s);
		}
		if (r < 0) {
			if (r != -E2BIG)
				err_set(err, r, ERR_INTERNAL, "%s: %s", what, strerror(-r));
			break;
		}
	}
	unit_sb_free(&f.key);
	unit_sb_free(&f.val);
	if (r < 0) {
		unit_strv_clear(&add);
		return r;
	}
	if (ret_bad)
		*ret_bad = bad;
	return strv_append_all(l, &add, what, err);
}
