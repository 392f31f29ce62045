/* tmpfiles: kin's subset of tmpfiles.d(5), for roots without
 * systemd-tmpfiles (Debian's minimal roots; postgresql and memcached ship
 * tmpfiles.d lines for their /run directories). Types d and D (a
 * directory, mode and owner set; D's contents are not cleaned), f (a file
 * made when missing, with the argument as its content), L (a symlink made
 * when missing), z and Z (mode and owner of what exists; Z not recursive
 * here). Ages, globs and the other types are skipped with a note. A line
 * is hostile input: bounded fields, absolute paths without "..", users
 * and groups read from the root's own /etc/passwd and /etc/group. Where
 * systemd-tmpfiles is installed, it runs instead. */
#include "units/sysinit-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMPFILES_MS 60000

/* A user or group name (or number) from /etc/passwd or /etc/group. */
static int id_lookup(const char *file, const char *name, uint32_t *ret)
{
	_cleanup_free_ char *text = NULL;
	if (str_to_u32(name, ret) == 0)
		return 0;
	if (file_read_regular(file, 1 << 20, &text, NULL) < 0)
		return -ENOENT;
	return passwd_lookup(text, name, false, ret, NULL, NULL, 0) ? 0 : -ENOENT;
}

static int parse_mode(const char *s, mode_t def, mode_t *ret)
{
	if (!strcmp(s, "-")) {
		*ret = def;
		return 0;
	}
	if (*s == '~' || *s == ':')
		s++; /* masked/keep modes: the plain mode is close enough */
	char *end;
	unsigned long m = strtoul(s, &end, 8);
	if (*end || end == s || m > 07777)
		return -EINVAL;
	*ret = (mode_t)m;
	return 0;
}

static int owner(const char *user, const char *group, uid_t *uid, gid_t *gid)
{
	uint32_t u = 0, g = 0;
	if (strcmp(user, "-") && id_lookup("/etc/passwd", user, &u) < 0)
		return -ENOENT;
	if (strcmp(group, "-") && id_lookup("/etc/group", group, &g) < 0)
		return -ENOENT;
	*uid = strcmp(user, "-") ? u : 0;
	*gid = strcmp(group, "-") ? g : 0;
	return 0;
}

int units_tmpfiles_parse(char *line, struct units_tmpfiles_entry *e)
{
	char *f[7] = {0};
	size_t nf = 0;
	char *save = NULL;
	memset(e, 0, sizeof(*e));
	for (char *w = strtok_r(line, " \t", &save); w && nf < 7;
	     w = nf == 6 ? strtok_r(NULL, "", &save) : strtok_r(NULL, " \t", &save))
		f[nf++] = w;
	if (nf < 2)
		return -EINVAL;
	e->type = f[0][0];
	e->path = f[1];
	e->user = nf > 3 ? f[3] : "-";
	e->group = nf > 4 ? f[4] : "-";
	e->arg = nf > 6 ? str_trim(f[6]) : NULL;
	const char *mode_s = nf > 2 ? f[2] : "-";
	if (e->path[0] != '/' || strstr(e->path, "/..") || strlen(e->path) > 1024 ||
	    strpbrk(e->path, "*?[%"))
		return -EINVAL;
	if (!e->type || !strchr("dDfLzZ", e->type) || (f[0][1] && !strchr("!-+", f[0][1])) ||
	    (f[0][1] && f[0][2]))
		return -EOPNOTSUPP;
	e->mode_set = strcmp(mode_s, "-") != 0;
	return parse_mode(mode_s, e->type == 'f' ? 0644 : 0755, &e->mode);
}

int units_tmpfiles_line(char *line, const char *file, unsigned n)
{
	struct units_tmpfiles_entry e;
	int r = units_tmpfiles_parse(line, &e);
	if (r == -EOPNOTSUPP) {
		log_info("tmpfiles: %s:%u: a type not in kin's subset; skipped", file, n);
		return 0;
	}
	if (r < 0)
		return log_info("tmpfiles: %s:%u: not a line kin takes (a plain absolute path, an "
		                "octal mode)",
		                file, n),
		       r;
	uid_t uid;
	gid_t gid;
	if (owner(e.user, e.group, &uid, &gid) < 0)
		return log_info("tmpfiles: %s:%u: unknown user or group", file, n), -ENOENT;
	switch (e.type) {
	case 'd':
	case 'D':
		r = mkdir_p(e.path, e.mode);
		break;
	case 'f': {
		int fd = open(e.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, e.mode);
		if (fd >= 0) {
			if (e.arg && strcmp(e.arg, "-"))
				r = write_all(fd, e.arg, strlen(e.arg));
			close(fd);
		} else if (errno != EEXIST) {
			r = -errno;
		}
		break;
	}
	case 'L':
		if (e.arg && symlink(e.arg, e.path) < 0 && errno != EEXIST)
			r = -errno;
		if (r < 0)
			log_info("tmpfiles: %s:%u: %s: %s", file, n, e.path, strerror(-r));
		return r;
	default: /* z, Z: what exists */
		break;
	}
	bool chown_ = strcmp(e.user, "-") || strcmp(e.group, "-");
	struct stat st;
	if (r == 0 && lstat(e.path, &st) == 0 && !S_ISLNK(st.st_mode)) {
		if ((e.mode_set && chmod(e.path, e.mode) < 0) ||
		    (chown_ && lchown(e.path, strcmp(e.user, "-") ? uid : (uid_t)-1,
		                      strcmp(e.group, "-") ? gid : (gid_t)-1) < 0))
			r = -errno;
	} else if (r == 0 && e.type != 'z' && e.type != 'Z') {
		r = -errno;
	}
	if (r < 0)
		log_info("tmpfiles: %s:%u: %s: %s", file, n, e.path, strerror(-r));
	return r;
}

int sysinit_tmpfiles(void)
{
	struct stat st;
	if (stat("/usr/bin/systemd-tmpfiles", &st) == 0 ||
	    stat("/bin/systemd-tmpfiles", &st) == 0) {
		char *argv[] = {(char *)(stat("/usr/bin/systemd-tmpfiles", &st) == 0
		                             ? "/usr/bin/systemd-tmpfiles"
		                             : "/bin/systemd-tmpfiles"),
		                (char *)"--create", (char *)"--remove", (char *)"--boot", NULL};
		int r = sysinit_run_wait(argv, TMPFILES_MS);
		if (r != 0)
			log_warn("host: systemd-tmpfiles exited with %d", r);
		return r != 0;
	}
	static const char *const dirs[] = {"/etc/tmpfiles.d", "/run/tmpfiles.d",
	                                   "/usr/local/lib/tmpfiles.d", "/usr/lib/tmpfiles.d",
	                                   NULL};
	return sysinit_conf_dirs(dirs, NULL, units_tmpfiles_line);
}
