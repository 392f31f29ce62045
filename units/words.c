/* words: the small text machinery the command line, Environment= and
 * specifier parsers share — a capped growable string, systemd's C escapes
 * and its word splitting (systemd.service(5), "Command lines"). */
#include "units/words-int.h"

#include <string.h>

int unit_sb_put(struct unit_sb *b, const char *s, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return -E2BIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *t = realloc(b->s, cap);
		if (!t)
			return -ENOMEM;
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int unit_sb_putc(struct unit_sb *b, char c)
{
	return unit_sb_put(b, &c, 1);
}

char *unit_sb_take(struct unit_sb *b)
{
	char *s = b->s ? b->s : strdup("");
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void unit_sb_free(struct unit_sb *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

/* n hex digits at p into *ret; -EINVAL when one is missing. */
static int hex_n(const char *p, int n, uint32_t *ret)
{
	uint32_t v = 0;
	for (int i = 0; i < n; i++) {
		int d = hex_digit(p[i]);
		if (d < 0)
			return -EINVAL;
		v = v << 4 | (uint32_t)d;
	}
	*ret = v;
	return 0;
}

/* A code point as UTF-8; surrogates and values past U+10FFFF are not
 * characters, and NUL cannot be carried. */
static int put_utf8(struct unit_sb *b, uint32_t c)
{
	char u[4];
	size_t n;
	if (c == 0 || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return -EINVAL;
	if (c < 0x80) {
		u[0] = (char)c, n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3f)), n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f)), n = 3;
	} else {
		u[0] = (char)(0xf0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f)), u[3] = (char)(0x80 | (c & 0x3f)), n = 4;
	}
	return unit_sb_put(b, u, n);
}

int unit_cunescape_one(const char *p, struct unit_sb *b)
{
	static const char plain[] = "abfnrtvs\\\"'";
	static const char value[] = "\a\b\f\n\r\t\v \\\"'";
	const char *k = p[0] ? strchr(plain, p[0]) : NULL;
	uint32_t v;
	int r;
	if (k)
		return (r = unit_sb_putc(b, value[k - plain])) < 0 ? r : 1;
	switch (p[0]) {
	case 'x':
		if (hex_n(p + 1, 2, &v) < 0 || v == 0)
			return -EINVAL;
		return (r = unit_sb_putc(b, (char)v)) < 0 ? r : 3;
	case 'u':
		if (hex_n(p + 1, 4, &v) < 0)
			return -EINVAL;
		return (r = put_utf8(b, v)) < 0 ? r : 5;
	case 'U':
		if (hex_n(p + 1, 8, &v) < 0)
			return -EINVAL;
		return (r = put_utf8(b, v)) < 0 ? r : 9;
	case '0' ... '7':
		/* Exactly three octal digits, as systemd reads them. */
		if (p[1] < '0' || p[1] > '7' || p[2] < '0' || p[2] > '7')
			return -EINVAL;
		v = (uint32_t)(p[0] - '0') << 6 | (uint32_t)(p[1] - '0') << 3 |
		    (uint32_t)(p[2] - '0');
		if (v == 0 || v > 0xff)
			return -EINVAL;
		return (r = unit_sb_putc(b, (char)v)) < 0 ? r : 3;
	default:
		return -EINVAL;
	}
}

int unit_word_next(const char **p, char **ret, const char *what, struct err *err)
{
	const char *s = *p;
	char quote = 0;
	struct unit_sb b = {.max = UNIT_LINE_MAX};
	int r;
	while (unit_is_space(*s))
		s++;
	if (!*s) {
		*p = s;
		return 0;
	}
	for (; *s && (quote || !unit_is_space(*s)); s++) {
		if (*s == '\\') {
			if (!s[1]) {
				unit_sb_free(&b);
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "%s: a backslash at the end", what);
			}
			r = unit_cunescape_one(s + 1, &b);
			if (r < 0) {
				unit_sb_free(&b);
				return err_set(err, r, ERR_INVALID_ARGUMENT,
				               "%s: bad escape \"\\%.4s\"%s", what, s + 1,
				               r == -E2BIG ? " (word too long)" : "");
			}
			s += r;
		} else if (quote ? *s == quote : (*s == '\'' || *s == '"')) {
			quote = quote ? 0 : *s;
			if (quote && !b.s && (r = unit_sb_put(&b, "", 0)) < 0)
				return unit_sb_free(&b), r; /* '' is a word: make it exist */
		} else if ((r = unit_sb_putc(&b, *s)) < 0) {
			unit_sb_free(&b);
			return err_set(err, r, ERR_INVALID_ARGUMENT, "%s: a word too long", what);
		}
	}
	if (quote) {
		unit_sb_free(&b);
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: unterminated %s quote",
		               what, quote == '"' ? "double" : "single");
	}
	*ret = unit_sb_take(&b);
	if (!*ret)
		return -ENOMEM;
	*p = s;
	return 1;
}

bool unit_env_name_valid(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}
