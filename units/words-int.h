/* words-int.h: what the command, environment and specifier parsers of
 * units/ share inside the module — a capped growable string and the word
 * splitter of command lines and Environment= (systemd's quoting and C
 * escapes). Not part of the contract (units.h). */
#pragma once

#include "units/units.h"

/* A string that grows up to max bytes (then -E2BIG); s is NUL-terminated
 * once anything was put. */
struct unit_sb {
	char *s;
	size_t len, cap, max;
};
int unit_sb_put(struct unit_sb *b, const char *s, size_t n);
int unit_sb_putc(struct unit_sb *b, char c);
/* The string (an empty one when nothing was put), b left empty; NULL: -ENOMEM. */
char *unit_sb_take(struct unit_sb *b);
void unit_sb_free(struct unit_sb *b);

static inline bool unit_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One C escape after a backslash (p points past it): \a \b \f \n \r \t \v
 * \s \\ \" \' \xNN \NNN \uXXXX \UXXXXXXXX into b. Returns the bytes of p
 * used, -EINVAL for an unknown or malformed escape or one that makes a NUL
 * (a C string cannot carry it). */
int unit_cunescape_one(const char *p, struct unit_sb *b);

/* The next word at *p: whitespace skipped, single and double quotes taken
 * off (anywhere in the word), C escapes undone inside and outside quotes.
 * 1 and *ret (an empty word is possible: ''), 0 at the end, -EINVAL for
 * an unterminated quote, a trailing backslash or a bad escape (err names
 * what, prefixed by what: `ExecStart "..."`). Advances *p. */
int unit_word_next(const char **p, char **ret, const char *what, struct err *err);

/* [A-Za-z_][A-Za-z0-9_]*: an environment variable's name, n bytes of s. */
bool unit_env_name_valid(const char *s, size_t n);
