/* exec_login: ExecSpec.login, a login session as `machinectl shell` or
 * login(1) gives one (`kin ctl shell`): the user looked up in kin's own
 * /etc/passwd and /etc/group (its root's; kin links no NSS), its ids and
 * groups, its home as cwd, HOME, USER, LOGNAME and SHELL in env, and its
 * shell as a login shell when no argv is given. Root needs no line: a root
 * (a zone's busybox one) without /etc/passwd gets home / and /bin/sh. */
#include "api/cells-int.h"

#include <stdio.h>
#include <string.h>

#define LOGIN_FILE_MAX (4 << 20)

/* The passwd line of user (a name, or an id when it is a number). */
static bool login_find(const char *text, const char *user, struct api_exec_login *l)
{
	uint32_t want, id, gid;
	bool by_id = str_to_u32(user, &want) == 0;
	char name[sizeof(l->user)], f[16];
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!passwd_field(p, 0, name, sizeof(name)) || !passwd_field(p, 2, f, sizeof(f)) ||
		    str_to_u32(f, &id) < 0 || !passwd_field(p, 3, f, sizeof(f)) ||
		    str_to_u32(f, &gid) < 0)
			continue;
		if (by_id ? id != want : strcmp(name, user) != 0)
			continue;
		if (!passwd_field(p, 5, l->home, sizeof(l->home)) || !l->home[0])
			str_copy(l->home, sizeof(l->home), "/");
		if (!passwd_field(p, 6, l->shell, sizeof(l->shell)) || l->shell[0] != '/')
			str_copy(l->shell, sizeof(l->shell), "/bin/sh");
		str_copy(l->user, sizeof(l->user), name);
		l->uid = id;
		l->gid = gid;
		return true;
	}
	return false;
}

static int login_user(const Kin__V1__StartRequest *req, struct api_exec_login *l, struct err *err)
{
	const char *user = req->spec->user[0] ? req->spec->user : "root";
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	(void)file_read_small("/etc/passwd", LOGIN_FILE_MAX, &passwd, NULL);
	if (!passwd || !login_find(passwd, user, l)) {
		if (strcmp(user, "root") && strcmp(user, "0"))
			return err_set(
			    err, -EINVAL, ERR_INVALID_ARGUMENT,
			    "exec \"%s/%s\": login: user \"%.64s\" is not in /etc/passwd",
			    req->cell, req->name, user);
		*l = (struct api_exec_login){.user = "root", .home = "/", .shell = "/bin/sh"};
	}
	(void)file_read_small("/etc/group", LOGIN_FILE_MAX, &group, NULL);
	if (group)
		passwd_supplementary(group, l->user, l->gid, l->groups, EXEC_GROUPS_MAX,
		                     &l->ngroups);
	return 0;
}

int api_exec_login_fill(const Kin__V1__StartRequest *req, struct api_cells_spec_buf *b,
                        struct api_exec_login *l, struct err *err)
{
	struct exec_spec *s = &b->s;
	int r = login_user(req, l, err);
	if (r < 0)
		return r;
	size_t n = 0;
	while (s->env && s->env[n])
		n++;
	if (n + 5 > EXEC_ENV_MAX)
		return err_set(
		    err, -E2BIG, ERR_INVALID_ARGUMENT,
		    "exec \"%s/%s\": login: env has no room for HOME, USER, LOGNAME, SHELL",
		    req->cell, req->name);
	snprintf(l->vars[0], sizeof(l->vars[0]), "HOME=%s", l->home);
	snprintf(l->vars[1], sizeof(l->vars[1]), "USER=%s", l->user);
	snprintf(l->vars[2], sizeof(l->vars[2]), "LOGNAME=%s", l->user);
	snprintf(l->vars[3], sizeof(l->vars[3]), "SHELL=%s", l->shell);
	l->env = calloc(n + 5, sizeof(char *));
	if (!l->env)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) /* the caller's first: theirs win (getenv) */
		l->env[i] = s->env[i];
	for (size_t i = 0; i < 4; i++)
		l->env[n + i] = l->vars[i];
	s->env = l->env;
	if (!s->argv || !s->argv[0]) { /* the shell, as a login shell: "-sh" */
		const char *base = strrchr(l->shell, '/');
		snprintf(l->argv0, sizeof(l->argv0), "-%s", base ? base + 1 : l->shell);
		l->argv[0] = l->argv0;
		l->argv[1] = NULL;
		s->argv = l->argv;
		s->path = l->shell;
	}
	if (!s->cwd)
		s->cwd = l->home;
	s->uid = l->uid;
	s->gid = l->gid;
	memcpy(s->groups, l->groups, l->ngroups * sizeof(uint32_t));
	s->ngroups = l->ngroups;
	return 0;
}

void api_exec_login_free(struct api_exec_login *l)
{
	free(l->env);
	l->env = NULL;
}
