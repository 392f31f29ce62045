/* config: kin ctl's client configuration, the kubeconfig habit. A file
 * (~/.config/kin/config, or $KIN_CONFIG) of named contexts, each an
 * address with its credentials and a default target:
 *
 *     current-context = prod
 *
 *     [context prod]
 *     address = tls:node1.example.org:7443
 *     cert = /home/me/.config/kin/me.crt
 *     key = /home/me/.config/kin/me.key
 *     ca = /home/me/.config/kin/fleet-ca.crt
 *     server-name = node1.example.org
 *     target = pod1
 *
 * `kin ctl --context NAME` uses one, `kin ctl config use NAME` makes one
 * the current; flags given on the command line win over the context. */
#include "ctl/ctl-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_FILE_MAX (256 * 1024)

static int config_path(char *buf, size_t size)
{
	const char *env = getenv("KIN_CONFIG");
	if (env && *env)
		return str_copy(buf, size, env);
	const char *home = getenv("HOME");
	if (!home || home[0] != '/')
		return -ENOENT;
	int n = snprintf(buf, size, "%s/.config/kin/config", home);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int context_set(struct ctl_context *c, const char *key, const char *value)
{
	struct {
		const char *key;
		char *field;
		size_t size;
	} fields[] = {
	    {"address", c->address, sizeof(c->address)},
	    {"cert", c->cert, sizeof(c->cert)},
	    {"key", c->key, sizeof(c->key)},
	    {"ca", c->ca, sizeof(c->ca)},
	    {"server-name", c->server_name, sizeof(c->server_name)},
	    {"target", c->target, sizeof(c->target)},
	};
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (strcmp(key, fields[i].key) == 0)
			return str_copy(fields[i].field, fields[i].size, value) < 0 ? -E2BIG : 0;
	return -ENOENT;
}

/* One line; "line N: ..." into err when it is wrong. */
static int config_line(struct ctl_config *cfg, char *line, unsigned no, struct err *err)
{
	line = str_trim(line);
	if (!*line || *line == '#')
		return 0;
	if (*line == '[') {
		char *end = strchr(line, ']');
		char *name = str_trim(line + 1);
		if (!end || end[1] || strncmp(name, "context", 7) != 0)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: expected [context NAME]", cfg->path, no);
		*end = '\0';
		name = str_trim(name + 7);
		if (!name_is_valid(name))
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: \"%.64s\" is not a context name (letters, "
			               "digits, '.', '_', '-')",
			               cfg->path, no, name);
		for (size_t i = 0; i < cfg->n; i++)
			if (strcmp(cfg->ctx[i].name, name) == 0)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "%s: line %u: context %s given twice", cfg->path, no,
				               name);
		if (cfg->n == CTL_CONTEXTS_MAX)
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "%s: line %u: more than %d contexts", cfg->path, no,
			               CTL_CONTEXTS_MAX);
		struct ctl_context *c = &cfg->ctx[cfg->n++];
		*c = (struct ctl_context){0};
		str_copy(c->name, sizeof(c->name), name);
		return 0;
	}
	char *eq = strchr(line, '=');
	if (!eq)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: line %u: expected KEY = VALUE or [context NAME]", cfg->path,
		               no);
	*eq = '\0';
	char *key = str_trim(line), *value = str_trim(eq + 1);
	int r;
	if (!cfg->n) {
		if (strcmp(key, "current-context") != 0)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: \"%.64s\" before any [context NAME] (only "
			               "current-context goes there)",
			               cfg->path, no, key);
		r = str_copy(cfg->current, sizeof(cfg->current), value);
		cfg->has_current = true;
	} else {
		r = context_set(&cfg->ctx[cfg->n - 1], key, value);
	}
	if (r == -ENOENT)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: line %u: unknown key \"%.64s\" (address, cert, key, ca, "
		               "server-name, target)",
		               cfg->path, no, key);
	if (r < 0)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "%s: line %u: %s is too long",
		               cfg->path, no, key);
	return 0;
}

int ctl_config_parse(struct ctl_config *cfg, char *text, size_t len, struct err *err)
{
	unsigned no = 0;
	if (memchr(text, '\0', len))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: a NUL byte in the file",
		               cfg->path);
	for (char *p = text, *end = text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *stop = nl ? nl : end;
		char line[1024];
		no++;
		if ((size_t)(stop - p) >= sizeof(line))
			return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
			               "%s: line %u: longer than %zu bytes", cfg->path, no,
			               sizeof(line) - 1);
		memcpy(line, p, (size_t)(stop - p));
		line[stop - p] = '\0';
		int r = config_line(cfg, line, no, err);
		if (r < 0)
			return r;
		p = stop + 1;
	}
	return 0; /* a current-context naming no [context] is said where it is used */
}

int ctl_config_load(struct ctl_config *cfg, struct err *err)
{
	*cfg = (struct ctl_config){0};
	int r = config_path(cfg->path, sizeof(cfg->path));
	if (r < 0)
		return 0; /* no HOME: no config */
	_cleanup_free_ char *text = NULL;
	size_t len;
	r = file_read_small(cfg->path, CONFIG_FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return err_set(err, r, ERR_INVALID_ARGUMENT, "%s: %s", cfg->path, strerror(-r));
	return ctl_config_parse(cfg, text, len, err);
}

const struct ctl_context *ctl_config_find(const struct ctl_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n; i++)
		if (strcmp(cfg->ctx[i].name, name) == 0)
			return &cfg->ctx[i];
	return NULL;
}

/* current-context rewritten, every other line kept as it was; the file
 * replaced at once (a rename), so a reader never sees half of it. */
static int config_write_current(const struct ctl_config *cfg, const char *name, struct err *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = file_read_small(cfg->path, CONFIG_FILE_MAX, &text, &len);
	if (r < 0)
		return err_set(err, r, ERR_UNKNOWN, "%s: %s", cfg->path, strerror(-r));
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.new", cfg->path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return err_set(err, -errno, ERR_UNKNOWN, "%s: %m", tmp);
	fchmod(fileno(f), 0600);
	/* No such line yet: it goes first (it must precede any [context]). */
	bool done = !cfg->has_current;
	if (done)
		fprintf(f, "current-context = %s\n", name);
	for (char *p = text, *end = text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *s = p;
		while (s < p + n && (*s == ' ' || *s == '\t'))
			s++;
		if (!done && strncmp(s, "current-context", 15) == 0) {
			fprintf(f, "current-context = %s\n", name);
			done = true;
		} else {
			fprintf(f, "%.*s\n", (int)n, p);
		}
		p += n + 1;
	}
	if (fclose(f) != 0 || rename(tmp, cfg->path) < 0) {
		r = -errno;
		unlink(tmp);
		return err_set(err, r, ERR_UNKNOWN, "%s: %s", cfg->path, strerror(-r));
	}
	return 0;
}

int ctl_config_main(struct ctl *ctl, int argc, char **argv)
{
	static struct ctl_config cfg; /* large: not on the stack */
	struct err err = {0};
	ctl->what = "config";
	if (argc < 2 || (strcmp(argv[1], "list") != 0 && strcmp(argv[1], "use") != 0))
		return ctl_usage(ctl, "expected list or use NAME");
	if (ctl_config_load(&cfg, &err) < 0) {
		fprintf(stderr, "kin ctl config: %s\n", err.msg);
		return CTL_USAGE;
	}
	if (strcmp(argv[1], "list") == 0) {
		if (argc > 2)
			return ctl_usage(ctl, "list takes no argument");
		if (!cfg.path[0] || (!cfg.n && !ctl->json)) {
			fprintf(stderr, "kin ctl config: no contexts in %s\n",
			        cfg.path[0] ? cfg.path : "(no HOME, no KIN_CONFIG)");
			return CTL_OK;
		}
		for (size_t i = 0; i < cfg.n; i++) {
			const struct ctl_context *c = &cfg.ctx[i];
			bool cur = strcmp(c->name, cfg.current) == 0;
			if (ctl->json) {
				printf("{\"name\":");
				ctl_json_str(c->name, strlen(c->name));
				printf(",\"current\":%s,\"address\":", cur ? "true" : "false");
				ctl_json_str(c->address, strlen(c->address));
				printf(",\"target\":");
				ctl_json_str(c->target, strlen(c->target));
				printf("}\n");
			} else {
				printf("%s %-20s %s%s%s\n", cur ? "*" : " ", c->name,
				       c->address[0] ? c->address : RPC_SOCKET_DEFAULT,
				       c->target[0] ? " target " : "", c->target);
			}
		}
		return CTL_OK;
	}
	if (argc != 3)
		return ctl_usage(ctl, "use takes one context name");
	if (!ctl_config_find(&cfg, argv[2])) {
		fprintf(stderr, "kin ctl config: no context %s in %s\n", argv[2],
		        cfg.path[0] ? cfg.path : "(no config)");
		return CTL_USAGE;
	}
	if (config_write_current(&cfg, argv[2], &err) < 0) {
		fprintf(stderr, "kin ctl config: %s\n", err.msg);
		return CTL_RPC_ERROR;
	}
	printf("current context: %s\n", argv[2]);
	return CTL_OK;
}
