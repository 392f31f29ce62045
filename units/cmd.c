/* cmd: Exec*= command lines as systemd splits them (systemd.service(5),
 * "Command lines"): prefixes, words with quotes and C escapes, ';' between
 * commands; and at run time, $VAR and ${VAR} from the environment. */
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

#define CMD_VALUE_MAX (64 * 1024)

struct word_buf {
	char *s;
	size_t len, cap;
};

static int wb_put(struct word_buf *w, char c)
{
	if (w->len + 2 > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char *s = realloc(w->s, cap);
		if (!s)
			return -ENOMEM;
		w->s = s;
		w->cap = cap;
	}
	w->s[w->len++] = c;
	w->s[w->len] = '\0';
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* A C escape after '\' at *p; the byte in *ret, *p past it. */
static int unescape(const char **p, char *ret)
{
	const char *s = *p;
	int a, b;
	switch (*s) {
	case 'n':
		*ret = '\n';
		break;
	case 't':
		*ret = '\t';
		break;
	case 'r':
		*ret = '\r';
		break;
	case 'a':
		*ret = '\a';
		break;
	case 'b':
		*ret = '\b';
		break;
	case 'f':
		*ret = '\f';
		break;
	case 'v':
		*ret = '\v';
		break;
	case 's':
		*ret = ' ';
		break;
	case '\\':
	case '"':
	case '\'':
	case ';':
	case ' ':
	case '$':
		*ret = *s;
		break;
	case 'x':
		if ((a = hexval(s[1])) < 0 || (b = hexval(s[2])) < 0 || (a == 0 && b == 0))
			return -EINVAL;
		*ret = (char)(a * 16 + b);
		*p = s + 3;
		return 0;
	case '0':
	case '1':
	case '2':
	case '3':
		if (s[1] < '0' || s[1] > '7' || s[2] < '0' || s[2] > '7')
			return -EINVAL;
		*ret = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
		if (!*ret)
			return -EINVAL;
		*p = s + 3;
		return 0;
	default:
		return -EINVAL;
	}
	*p = s + 1;
	return 0;
}

/* The next word of *p (NULL at the end); *ret_sep: it was a lone ';'. */
static int next_word(const char **p, char **ret, bool *ret_sep)
{
	const char *s = *p;
	struct word_buf w = {0};
	*ret = NULL;
	*ret_sep = false;
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!*s) {
		*p = s;
		return 0;
	}
	if (s[0] == ';' && (!s[1] || s[1] == ' ' || s[1] == '\t')) {
		*p = s + 1;
		*ret_sep = true;
		return 0;
	}
	char quote = 0;
	int r = 0;
	if (wb_put(&w, 0) < 0) /* an empty quoted word is a word */
		return -ENOMEM;
	w.len = 0;
	for (; *s && r >= 0; s++) {
		char c = *s;
		if (!quote && (c == ' ' || c == '\t' || c == '\n'))
			break;
		if (!quote && (c == '"' || c == '\'')) {
			quote = c;
			continue;
		}
		if (quote && c == quote) {
			quote = 0;
			continue;
		}
		if (c == '\\' && quote != '\'') {
			s++;
			if (!*s) {
				r = -EINVAL;
				break;
			}
			r = unescape(&s, &c);
			s--;
		} else if (c == '\\' && quote == '\'' && s[1] == '\'') {
			c = '\'';
			s++;
		}
		if (r >= 0)
			r = wb_put(&w, c);
	}
	if (quote)
		r = -EINVAL;
	if (r < 0) {
		free(w.s);
		return r;
	}
	*p = s;
	*ret = w.s;
	return 0;
}

static int cmd_finish(struct unit_cmds *l, struct unit_cmd *c, const char *value, struct err *err)
{
	if (!c->argc)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "command \"%.64s\" is empty",
		               value);
	if (l->n >= UNIT_CMDS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "more than %d commands",
		               UNIT_CMDS_MAX);
	const char *path = c->path;
	if (!*path || (path[0] != '/' && strchr(path, '/')))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "command \"%.64s\": \"%.64s\" is neither absolute nor a plain name",
		               value, path);
	if (c->flags & UNIT_CMD_ARGV0) { /* '@': the second word is argv[0] */
		if (c->argc < 2)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "command \"%.64s\": '@' needs argv[0] after the path",
			               value);
		free(c->argv[0]);
		memmove(c->argv, c->argv + 1, c->argc * sizeof(char *));
		c->argc--;
	}
	struct unit_cmd *v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v[l->n++] = *c;
	memset(c, 0, sizeof(*c));
	return 0;
}

static void cmd_drop(struct unit_cmd *c)
{
	free(c->path);
	unit_argv_free(c->argv);
	memset(c, 0, sizeof(*c));
}

static const char *prefixes(const char *s, unsigned *flags)
{
	for (;; s++) {
		if (*s == '-')
			*flags |= UNIT_CMD_IGNORE_FAILURE;
		else if (*s == '@')
			*flags |= UNIT_CMD_ARGV0;
		else if (*s == '+')
			*flags |= UNIT_CMD_FULL_PRIVILEGES;
		else if (*s == ':')
			*flags |= UNIT_CMD_NO_ENV_EXPAND;
		else if (*s == '!' && s[1] == '!')
			*flags |= UNIT_CMD_AMBIENT | UNIT_CMD_NO_SETUID, s++;
		else if (*s == '!')
			*flags |= UNIT_CMD_NO_SETUID;
		else
			return s;
	}
}

int unit_cmd_parse(const char *value, const struct unit_spec_ctx *ctx, struct unit_cmds *l,
                   struct err *err)
{
	char *text = NULL;
	if (strlen(value) > CMD_VALUE_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "command longer than %d bytes",
		               CMD_VALUE_MAX);
	int r = ctx ? unit_specifiers_expand(value, ctx, &text, err) : 0;
	if (r < 0)
		return r;
	const char *p = text ? text : value;
	struct unit_cmd c = {0};
	bool first = true;
	while (r >= 0) {
		char *w;
		bool sep;
		while (*p == ' ' || *p == '\t')
			p++;
		if (first) {
			p = prefixes(p, &c.flags);
			first = false;
		}
		if ((r = next_word(&p, &w, &sep)) < 0) {
			err_set(err, r, ERR_INVALID_ARGUMENT,
			        "command \"%.64s\": unterminated quote or bad escape", value);
			break;
		}
		if (sep || !w) {
			if (c.argc || w || sep)
				r = cmd_finish(l, &c, value, err);
			if (!w && !sep)
				break;
			first = true;
			continue;
		}
		if (c.argc >= UNIT_ARGS_MAX) {
			free(w);
			r = err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			            "command \"%.64s\": more than %d words", value, UNIT_ARGS_MAX);
			break;
		}
		char **argv = realloc(c.argv, (c.argc + 2) * sizeof(char *));
		if (!argv) {
			free(w);
			r = -ENOMEM;
			break;
		}
		c.argv = argv;
		argv[c.argc++] = w;
		argv[c.argc] = NULL;
		if (!c.path && !(c.path = strdup(w)))
			r = -ENOMEM;
	}
	cmd_drop(&c);
	free(text);
	return r < 0 ? r : 0;
}

/* ---- run-time expansion -------------------------------------------------------- */

static const char *env_get(char *const *env, size_t nenv, const char *name, size_t len)
{
	for (size_t i = nenv; i > 0; i--) { /* later ones win */
		const char *e = env[i - 1];
		if (strncmp(e, name, len) == 0 && e[len] == '=')
			return e + len + 1;
	}
	return NULL;
}

static bool var_char(char c, bool first)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (!first && c >= '0' && c <= '9');
}

static int argv_push(char ***v, size_t *n, char *s)
{
	if (!s)
		return -ENOMEM;
	if (*n >= UNIT_ARGS_MAX * 4) {
		free(s);
		return -E2BIG;
	}
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = s;
	nv[*n] = NULL;
	return 0;
}

/* One word with ${VAR} and $VAR inside it replaced, unsplit. */
static char *expand_in_word(const char *w, char *const *env, size_t nenv)
{
	struct word_buf b = {0};
	if (wb_put(&b, 0) < 0)
		return NULL;
	b.len = 0;
	b.s[0] = '\0';
	for (const char *s = w; *s;) {
		if (s[0] == '$' && s[1] == '$') {
			if (wb_put(&b, '$') < 0)
				goto fail;
			s += 2;
			continue;
		}
		const char *name = NULL, *end = NULL;
		if (s[0] == '$' && s[1] == '{') {
			name = s + 2;
			end = strchr(name, '}');
		} else if (s[0] == '$' && var_char(s[1], true)) {
			name = end = s + 1;
			while (var_char(*end, false))
				end++;
		}
		if (!name || !end) {
			if (wb_put(&b, *s++) < 0)
				goto fail;
			continue;
		}
		const char *v = env_get(env, nenv, name, (size_t)(end - name));
		for (; v && *v; v++)
			if (wb_put(&b, *v) < 0)
				goto fail;
		s = end + (s[1] == '{');
	}
	return b.s;
fail:
	free(b.s);
	return NULL;
}

int unit_cmd_expand(const struct unit_cmd *cmd, char *const *env, size_t nenv, char ***ret_argv,
                    struct err *err)
{
	char **v = NULL;
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; i < cmd->argc && r >= 0; i++) {
		const char *w = cmd->argv[i];
		if (cmd->flags & UNIT_CMD_NO_ENV_EXPAND) {
			r = argv_push(&v, &n, strdup(w));
			continue;
		}
		size_t len = strlen(w);
		if (w[0] == '$' && len > 1 && var_char(w[1], true)) {
			size_t k = 1;
			while (var_char(w[k], false))
				k++;
			if (k == len) { /* "$VAR" alone: split at whitespace */
				const char *val = env_get(env, nenv, w + 1, len - 1);
				char *copy = val ? strdup(val) : NULL, *save = NULL;
				if (val && !copy)
					r = -ENOMEM;
				for (char *t = copy ? strtok_r(copy, " \t\n", &save) : NULL;
				     t && r >= 0; t = strtok_r(NULL, " \t\n", &save))
					r = argv_push(&v, &n, strdup(t));
				free(copy);
				continue;
			}
		}
		r = argv_push(&v, &n, expand_in_word(w, env, nenv));
	}
	if (r >= 0 && !n)
		r = -EINVAL;
	if (r < 0) {
		unit_argv_free(v);
		return err_set(err, r, ERR_INVALID_ARGUMENT, "command \"%s\": %s", cmd->path,
		               r == -EINVAL ? "no words left after expansion" : strerror(-r));
	}
	*ret_argv = v;
	return 0;
}
