/* cmd: Exec* command lines (systemd.service(5), "Command lines") — the
 * prefixes, the words, ';' between commands — split at load, and their
 * $VAR expansion at run, when the environment is known. */
#include "units/words-int.h"

#include <stdio.h>
#include <string.h>

/* What an expanded command may hold at most: the kernel's own limit on
 * argv plus environment is about this, so more could never be exec'd. */
#define CMD_ARGV_BYTES_MAX (2u * 1024 * 1024)

static void words_free(char **w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(w[i]);
	free(w);
}

/* Appends w (taken, freed on failure) to the NULL-terminated *v of *n. */
static int words_push(char ***v, size_t *n, char *w)
{
	if (*n >= UNIT_ARGS_MAX) {
		free(w);
		return -E2BIG;
	}
	char **t = realloc(*v, (*n + 2) * sizeof(*t));
	if (!t) {
		free(w);
		return -ENOMEM;
	}
	t[(*n)++] = w;
	t[*n] = NULL;
	*v = t;
	return 0;
}

/* The prefixes before the executable, in any order: each at most once,
 * and only one of '+', '!', '!!' (they say contradicting things). */
static int cmd_prefixes(const char **p, unsigned *ret, const char *what, struct err *err)
{
	unsigned f = 0, bit;
	const char *s = *p;
	for (;; s++) {
		switch (*s) {
		case '-':
			bit = UNIT_CMD_IGNORE_FAILURE;
			break;
		case '@':
			bit = UNIT_CMD_ARGV0;
			break;
		case ':':
			bit = UNIT_CMD_NO_ENV_EXPAND;
			break;
		case '+':
			bit = UNIT_CMD_FULL_PRIVILEGES;
			break;
		case '!':
			bit = s[1] == '!' ? UNIT_CMD_AMBIENT : UNIT_CMD_NO_SETUID;
			s += s[1] == '!';
			break;
		default:
			*p = s;
			*ret = f;
			return 0;
		}
		unsigned priv = UNIT_CMD_FULL_PRIVILEGES | UNIT_CMD_NO_SETUID | UNIT_CMD_AMBIENT;
		if ((f & bit) || ((bit & priv) && (f & priv)))
			return err_set(
			    err, -EINVAL, ERR_INVALID_ARGUMENT,
			    "%s: prefix '%c' repeated or combined with a conflicting one", what,
			    *s);
		f |= bit;
	}
}

/* An absolute, normalized path ("/usr/sbin/sshd") or a plain file name
 * ("sshd", searched in PATH at run): nothing relative with a '/'. */
static bool cmd_path_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 4096)
		return false;
	if (s[0] != '/')
		return !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
	if (s[n - 1] == '/' || strstr(s, "//") || strstr(s, "/./") || strstr(s, "/../"))
		return false;
	return !(n >= 2 && strcmp(s + n - 2, "/.") == 0) &&
	       !(n >= 3 && strcmp(s + n - 3, "/..") == 0);
}

/* Whether the text at s is a lone ";" word (a command separator) or
 * "\;" (a literal ';' word). */
static bool is_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	return strncmp(s, w, n) == 0 && (!s[n] || unit_is_space(s[n]));
}

/* The words of one command into *ret_words up to a ';' or the end, each
 * with its specifiers expanded once split (as systemd does: a value a
 * specifier brings is one word, its quotes and backslashes plain bytes). */
static int cmd_words(const char **p, const struct unit_spec_ctx *ctx, char ***ret_words,
                     size_t *ret_n, const char *what, struct err *err)
{
	char **v = NULL;
	size_t n = 0, bytes = 0;
	int r = 0;
	const char *s = *p;
	for (;;) {
		_cleanup_free_ char *w = NULL;
		char *x = NULL;
		while (unit_is_space(*s))
			s++;
		if (!*s)
			break;
		if (is_word(s, ";")) {
			s++;
			break;
		}
		if (is_word(s, "\\;")) {
			s += 2;
			w = strdup(";");
			r = w ? 1 : -ENOMEM;
		} else {
			r = unit_word_next(&s, &w, what, err);
		}
		if (r >= 0 && (r = unit_specifiers_expand(w, ctx, &x, err)) >= 0 &&
		    (bytes += strlen(x) + 1) > CMD_ARGV_BYTES_MAX) {
			free(x);
			r = -E2BIG;
		}
		if (r < 0 || (r = words_push(&v, &n, x)) < 0)
			break;
	}
	if (r == -E2BIG)
		err_set(err, r, ERR_OUT_OF_RANGE, "%s: more than %d words or %u bytes", what,
		        UNIT_ARGS_MAX, CMD_ARGV_BYTES_MAX);
	if (r < 0) {
		words_free(v, n);
		return r;
	}
	*p = s;
	*ret_words = v;
	*ret_n = n;
	return 0;
}

/* One command at *p: prefixes, words, checks; into *c. */
static int cmd_parse_one(const char **p, const struct unit_spec_ctx *ctx, struct unit_cmd *c,
                         const char *what, struct err *err)
{
	char **v = NULL;
	size_t n = 0;
	unsigned flags = 0;
	int r = cmd_prefixes(p, &flags, what, err);
	if (r < 0)
		return r;
	if (unit_is_space(**p) || !**p)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: no executable%s", what,
		               flags ? " after the prefixes" : "");
	if ((r = cmd_words(p, ctx, &v, &n, what, err)) < 0)
		return r;
	const char *bad = n == 0                              ? "an empty command"
	                  : !cmd_path_ok(v[0])                ? "the executable is not an "
	                                                        "absolute path or a plain name"
	                  : (flags & UNIT_CMD_ARGV0) && n < 2 ? "'@' without an argv[0] word"
	                                                      : NULL;
	if (bad) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: %s%s%.64s%s", what, bad,
		        n ? " (\"" : "", n ? v[0] : "", n ? "\")" : "");
		words_free(v, n);
		return -EINVAL;
	}
	c->flags = flags;
	c->path = strdup(v[0]);
	if (!c->path) {
		words_free(v, n);
		return -ENOMEM;
	}
	if (flags & UNIT_CMD_ARGV0) {
		/* The path stays in c->path only: argv starts at the '@' word. */
		free(v[0]);
		memmove(v, v + 1, n * sizeof(*v));
		n--;
	}
	c->argv = v;
	c->argc = n;
	return 0;
}

int unit_cmd_parse(const char *value, const struct unit_spec_ctx *ctx, struct unit_cmds *l,
                   struct err *err)
{
	char what[96];
	snprintf(what, sizeof(what), "command \"%.64s%s\"", value,
	         strnlen(value, 65) > 64 ? "..." : "");
	if (strnlen(value, UNIT_LINE_MAX + 1) > UNIT_LINE_MAX)
		return err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: longer than %d bytes", what,
		               UNIT_LINE_MAX);
	int r = 0;
	struct unit_cmds add = {0};
	const char *p = value;
	for (;;) {
		while (unit_is_space(*p))
			p++;
		if (!*p && add.n > 0)
			break;
		if (l->n + add.n >= UNIT_CMDS_MAX) {
			r = err_set(err, -E2BIG, ERR_OUT_OF_RANGE, "%s: more than %d commands",
			            what, UNIT_CMDS_MAX);
			break;
		}
		struct unit_cmd c = {0};
		if ((r = cmd_parse_one(&p, ctx, &c, what, err)) < 0)
			break;
		struct unit_cmd *t = realloc(add.v, (add.n + 1) * sizeof(*t));
		if (!t) {
			free(c.path);
			unit_argv_free(c.argv);
			r = -ENOMEM;
			break;
		}
		add.v = t;
		add.v[add.n++] = c;
	}
	if (r < 0) {
		unit_cmds_clear(&add);
		return r;
	}
	/* All of the value's commands or none of them. */
	struct unit_cmd *t = realloc(l->v, (l->n + add.n) * sizeof(*t));
	if (!t) {
		unit_cmds_clear(&add);
		return -ENOMEM;
	}
	memcpy(t + l->n, add.v, add.n * sizeof(*t));
	l->v = t;
	l->n += add.n;
	free(add.v);
	return 0;
}

/* The value of name (n bytes) in env, the last assignment winning; NULL: unset. */
static const char *env_lookup(char *const *env, size_t nenv, const char *name, size_t n)
{
	for (size_t i = nenv; i-- > 0;)
		if (env[i] && strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

static size_t env_name_len(const char *s)
{
	size_t n = 0;
	while (unit_env_name_valid(s, n + 1))
		n++;
	return n;
}

/* One word with ${VAR}, $VAR and $$ replaced, unsplit, into b. A '$'
 * that starts none of them stays a '$' (so does "${" without its '}'). */
static int expand_inline(const char *w, char *const *env, size_t nenv, struct unit_sb *b)
{
	int r = 0;
	for (const char *s = w; *s && r >= 0;) {
		const char *d = strchr(s, '$'), *v = NULL, *close;
		size_t n = d ? (size_t)(d - s) : strlen(s), name;
		if ((r = unit_sb_put(b, s, n)) < 0 || !d)
			break;
		s = d + 1;
		if (*s == '$') {
			r = unit_sb_putc(b, '$'), s++;
		} else if (*s == '{' && (close = strchr(s, '}'))) {
			v = env_lookup(env, nenv, s + 1, (size_t)(close - s - 1));
			s = close + 1;
		} else if ((name = env_name_len(s)) > 0) {
			v = env_lookup(env, nenv, s, name);
			s += name;
		} else {
			r = unit_sb_putc(b, '$');
		}
		if (v && r >= 0)
			r = unit_sb_put(b, v, strlen(v));
	}
	return r;
}

/* "$VAR" alone: the value's words split at whitespace (none when unset
 * or blank), each pushed. */
static int expand_split(const char *value, char ***v, size_t *n, size_t *bytes)
{
	for (const char *s = value; s && *s;) {
		while (unit_is_space(*s))
			s++;
		size_t k = 0;
		while (s[k] && !unit_is_space(s[k]))
			k++;
		if (k == 0)
			break;
		if ((*bytes += k + 1) > CMD_ARGV_BYTES_MAX)
			return -E2BIG;
		char *w = strndup(s, k);
		int r = w ? words_push(v, n, w) : -ENOMEM;
		if (r < 0)
			return r;
		s += k;
	}
	return 0;
}

int unit_cmd_expand(const struct unit_cmd *cmd, char *const *env, size_t nenv, char ***ret_argv,
                    struct err *err)
{
	char **v = NULL;
	size_t n = 0, bytes = 0;
	int r = 0;
	for (size_t i = 0; i < cmd->argc && r >= 0; i++) {
		const char *w = cmd->argv[i];
		size_t name = w[0] == '$' ? env_name_len(w + 1) : 0;
		/* argv[0] is a name, not an argument: it is never expanded. */
		bool plain = i == 0 || (cmd->flags & UNIT_CMD_NO_ENV_EXPAND) || !strchr(w, '$');
		if (!plain && name > 0 && w[name + 1] == '\0') {
			r = expand_split(env_lookup(env, nenv, w + 1, name), &v, &n, &bytes);
			continue;
		}
		struct unit_sb b = {.max = CMD_ARGV_BYTES_MAX};
		r = plain ? unit_sb_put(&b, w, strlen(w)) : expand_inline(w, env, nenv, &b);
		if (r >= 0 && (bytes += b.len + 1) > CMD_ARGV_BYTES_MAX)
			r = -E2BIG;
		if (r < 0) {
			unit_sb_free(&b);
			break;
		}
		char *x = unit_sb_take(&b);
		r = x ? words_push(&v, &n, x) : -ENOMEM;
	}
	if (r < 0) {
		words_free(v, n);
		if (r == -E2BIG)
			return err_set(err, r, ERR_OUT_OF_RANGE,
			               "command \"%.64s\": more than %d words or %u bytes once "
			               "expanded",
			               cmd->path, UNIT_ARGS_MAX, CMD_ARGV_BYTES_MAX);
		return err_set(err, r, ERR_INTERNAL, "command \"%.64s\": %s", cmd->path,
		               strerror(-r));
	}
	if (!v && !(v = calloc(1, sizeof(*v))))
		return -ENOMEM;
	*ret_argv = v;
	return 0;
}
