/* env: Environment= values and EnvironmentFile= files (systemd.exec(5)).
 * A file is outside bytes: bounded, a bad line skipped and counted, never
 * a refusal of the unit. */
#include "units/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool env_name_ok(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* Environment=: words as in a command line (quotes), each "K=V". */
int unit_env_assign_parse(const char *value, struct unit_strv *l, struct err *err)
{
	struct unit_cmds words = {0};
	/* The command splitter's word rules, without specifiers: reuse it on
	 * the value as if it were a command (no prefix characters start a
	 * valid "K=V" word anyway). */
	int r = unit_cmd_parse(value, NULL, &words, err);
	if (r < 0)
		return r;
	int good = 0, bad = 0;
	for (size_t c = 0; c < words.n && r >= 0; c++)
		for (size_t i = 0; i < words.v[c].argc && r >= 0; i++) {
			const char *w = words.v[c].argv[i];
			const char *eq = strchr(w, '=');
			if (!eq || !env_name_ok(w, (size_t)(eq - w))) {
				bad++;
				continue;
			}
			if (l->n >= UNIT_ENV_MAX)
				r = -E2BIG;
			else if ((r = unit_strv_push(l, w)) == 0)
				good++;
		}
	unit_cmds_clear(&words);
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "Environment=: %s",
		               r == -E2BIG ? "too many variables" : strerror(-r));
	if (bad && !good)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "Environment=%.64s: no NAME=VALUE in it", value);
	return 0;
}

/* One value: quotes taken off, "\x" kept as x in double quotes, "#" after
 * blanks starts a comment outside quotes. */
static int env_value(const char *s, size_t n, char **ret)
{
	char *out = malloc(n + 1);
	size_t o = 0;
	char quote = 0;
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!quote && (c == '"' || c == '\'')) {
			quote = c;
			continue;
		}
		if (quote && c == quote) {
			quote = 0;
			continue;
		}
		if (c == '\\' && quote != '\'' && i + 1 < n) {
			out[o++] = s[++i];
			continue;
		}
		if (!quote && c == '#' && (o == 0 || out[o - 1] == ' ' || out[o - 1] == '\t'))
			break;
		out[o++] = c;
	}
	while (!quote && o && (out[o - 1] == ' ' || out[o - 1] == '\t'))
		o--;
	out[o] = '\0';
	*ret = out;
	return quote ? -EINVAL : 0;
}

int unit_envfile_parse(const char *text, size_t len, struct unit_strv *l, size_t *ret_bad,
                       struct err *err)
{
	size_t bad = 0;
	if (len > UNIT_ENVFILE_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT, "environment file over %d bytes",
		               UNIT_ENVFILE_MAX);
	if (memchr(text, '\0', len))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "environment file has a NUL byte");
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	/* Backslash-newline joins lines. */
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\\' && i + 1 < len && text[i + 1] == '\n') {
			i++;
			continue;
		}
		copy[n++] = text[i];
	}
	copy[n] = '\0';
	int r = 0;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line && r >= 0;
	     line = strtok_r(NULL, "\n", &save)) {
		line = str_trim(line);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (str_startswith(line, "export ") || str_startswith(line, "export\t"))
			line = str_trim(line + 7);
		char *eq = strchr(line, '=');
		size_t klen = eq ? (size_t)(eq - line) : 0;
		while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t'))
			klen--;
		if (!eq || !env_name_ok(line, klen)) {
			bad++;
			continue;
		}
		char *v = NULL;
		const char *vs = eq + 1;
		while (*vs == ' ' || *vs == '\t')
			vs++;
		if (env_value(vs, strlen(vs), &v) < 0) {
			free(v);
			bad++;
			continue;
		}
		size_t need = klen + strlen(v) + 2;
		char *kv = malloc(need);
		if (!kv) {
			free(v);
			r = -ENOMEM;
			break;
		}
		snprintf(kv, need, "%.*s=%s", (int)klen, line, v);
		free(v);
		r = l->n >= UNIT_ENV_MAX ? -E2BIG : unit_strv_push(l, kv);
		free(kv);
	}
	free(copy);
	if (ret_bad)
		*ret_bad = bad;
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "environment file: %s",
		               r == -E2BIG ? "too many variables" : strerror(-r));
	return 0;
}
