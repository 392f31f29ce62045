/* passwd: /etc/passwd and /etc/group lines, read the way kin reads users
 * everywhere (kin links no NSS: lib/nonss.c) — an image's files (oci/),
 * a host root's (units/, init/). The caller reads the file; these parse
 * its text. */
#include "lib/lib.h"

#include <string.h>

/* Field f (0-based) of a colon-separated line, into buf. */
bool passwd_field(const char *line, unsigned f, char *buf, size_t size)
{
	for (; f; f--) {
		line = strchr(line, ':');
		if (!line)
			return false;
		line++;
	}
	size_t n = strcspn(line, ":\n");
	if (n >= size)
		return false;
	memcpy(buf, line, n);
	buf[n] = 0;
	return true;
}

static bool is_number(const char *s, uint32_t *ret)
{
	return str_to_u32(s, ret) == 0;
}

/* The line of passwd/group whose name (field 0) or, with by_id, id
 * (field 2) is key: its id in *ret_id, field 3 (passwd: the gid) too. */
bool passwd_lookup(const char *text, const char *key, bool by_id, uint32_t *ret_id,
                   uint32_t *ret_f3, char *ret_name, size_t name_size)
{
	char name[256], id[16], f3[16];
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!passwd_field(l, 0, name, sizeof(name)) || !passwd_field(l, 2, id, sizeof(id)))
			continue;
		if (strcmp(by_id ? id : name, key) != 0 || !is_number(id, ret_id))
			continue;
		if (ret_f3 && (!passwd_field(l, 3, f3, sizeof(f3)) || !is_number(f3, ret_f3)))
			continue;
		if (ret_name)
			str_copy(ret_name, name_size, name);
		return true;
	}
	return false;
}

/* Groups of /etc/group whose member list names user. */
void passwd_supplementary(const char *group, const char *user, uint32_t gid, uint32_t *groups,
                          size_t max, size_t *ret_n)
{
	char members[4096], id[16];
	uint32_t g;
	for (const char *l = group; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!passwd_field(l, 3, members, sizeof(members)) ||
		    !passwd_field(l, 2, id, sizeof(id)) || !is_number(id, &g) || g == gid)
			continue;
		for (char *save, *m = strtok_r(members, ",", &save); m;
		     m = strtok_r(NULL, ",", &save))
			if (strcmp(m, user) == 0 && *ret_n < max)
				groups[(*ret_n)++] = g;
	}
}
