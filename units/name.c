/* name: unit names as systemd spells them — checking and splitting
 * ("getty@tty1.service" into prefix, instance, template), instantiating a
 * template, and the escaping that turns a path or a string into a name and
 * back (systemd.unit(5), "String Escaping"). */
#include "units/units.h"

#include <stdio.h>
#include <string.h>

/* The bytes a name's prefix and instance may hold ('@' is the separator). */
static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '-' || c == '_' || c == '.' || c == '\\';
}

/* The bytes escaping keeps as they are (everything else becomes \xNN). */
static bool escape_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '_' || c == '.';
}

static bool span_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!name_char_ok(s[i]))
			return false;
	return true;
}

int unit_name_parse(const char *name, struct unit_name *ret, struct err *err)
{
	struct unit_name n = {.type = UNIT_TYPE_INVALID};
	size_t len = name ? strnlen(name, UNIT_NAME_MAX + 1) : 0;
	if (len == 0 || len > UNIT_NAME_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "unit name \"%.64s\": %s",
		               name ? name : "", len ? "longer than 255 bytes" : "empty");
	const char *dot = strrchr(name, '.');
	enum unit_type t = unit_type_from_suffix(name);
	if (!dot || t == UNIT_TYPE_INVALID)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit name \"%s\": no known type suffix (.service, .target, ...)",
		               name);
	const char *at = memchr(name, '@', (size_t)(dot - name));
	const char *prefix_end = at ? at : dot;
	if (prefix_end == name || !span_ok(name, (size_t)(prefix_end - name)))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit name \"%s\": the prefix is empty or has a byte outside "
		               "[A-Za-z0-9:_.\\-\\\\]",
		               name);
	if (at && !span_ok(at + 1, (size_t)(dot - at - 1)))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit name \"%s\": the instance has a byte outside "
		               "[A-Za-z0-9:_.\\-\\\\] or a second '@'",
		               name);
	memcpy(n.full, name, len + 1);
	memcpy(n.prefix, name, (size_t)(prefix_end - name));
	n.type = t;
	if (at) {
		memcpy(n.instance_buf, at + 1, (size_t)(dot - at - 1));
		/* prefix@ + the suffix: shorter than the name. */
		if (snprintf(n.template_name, sizeof(n.template_name), "%s@%s", n.prefix, dot) >=
		    (int)sizeof(n.template_name))
			return -ENAMETOOLONG;
	}
	*ret = n;
	/* The instance points into ret's own buffer, not the local copy's. */
	if (at)
		ret->instance = ret->instance_buf;
	return 0;
}

bool unit_name_valid(const char *name)
{
	struct unit_name n;
	return unit_name_parse(name, &n, NULL) == 0;
}

int unit_name_instantiate(const char *template_name, const char *instance, char *buf, size_t size)
{
	struct unit_name t;
	if (unit_name_parse(template_name, &t, NULL) < 0 || !t.instance || t.instance[0])
		return -EINVAL;
	size_t ilen = strlen(instance);
	if (ilen == 0 || !span_ok(instance, ilen))
		return -EINVAL;
	const char *dot = strrchr(t.full, '.');
	int n = snprintf(buf, size, "%s@%s%s", t.prefix, instance, dot);
	if (n < 0 || (size_t)n >= size || (size_t)n > UNIT_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Appends c to buf at *pos; -ENAMETOOLONG when it does not fit with a NUL. */
static int put(char *buf, size_t size, size_t *pos, char c)
{
	if (*pos + 1 >= size)
		return -ENAMETOOLONG;
	buf[(*pos)++] = c;
	buf[*pos] = '\0';
	return 0;
}

static int put_hex(char *buf, size_t size, size_t *pos, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	int r = put(buf, size, pos, '\\');
	r = r < 0 ? r : put(buf, size, pos, 'x');
	r = r < 0 ? r : put(buf, size, pos, hex[c >> 4]);
	return r < 0 ? r : put(buf, size, pos, hex[c & 15]);
}

/* Path form: no empty, "." or ".." components (systemd refuses to escape a
 * path that is not normalized); the slashes at either end go. */
static int path_check(const char *in)
{
	for (const char *p = in; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p += n;
	}
	return 0;
}

int unit_name_escape(const char *in, bool path, char *buf, size_t size)
{
	size_t pos = 0;
	int r;
	if (size == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	if (path) {
		if (path_check(in) < 0)
			return -EINVAL;
		while (*in == '/')
			in++;
		if (!*in) /* the root directory */
			return put(buf, size, &pos, '-');
	}
	for (const char *p = in; *p; p++) {
		if (*p == '/') {
			if (path && (p[1] == '/' || p[1] == '\0'))
				continue; /* repeated or trailing slashes collapse */
			r = put(buf, size, &pos, '-');
		} else if (escape_char_ok(*p) && !(p == in && *p == '.')) {
			r = put(buf, size, &pos, *p);
		} else {
			r = put_hex(buf, size, &pos, (unsigned char)*p);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int unit_name_unescape(const char *in, bool path, char *buf, size_t size)
{
	size_t pos = 0;
	int r;
	if (size == 0)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	if (path) {
		if (strcmp(in, "-") == 0)
			return put(buf, size, &pos, '/');
		if ((r = put(buf, size, &pos, '/')) < 0)
			return r;
	}
	for (const char *p = in; *p; p++) {
		char c = *p;
		if (c == '-') {
			c = '/';
		} else if (c == '\\') {
			int hi, lo;
			if (p[1] != 'x' || (hi = hex_digit(p[2])) < 0 || (lo = hex_digit(p[3])) < 0)
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			if (c == '\0')
				return -EINVAL;
			p += 3;
		}
		if ((r = put(buf, size, &pos, c)) < 0)
			return r;
	}
	if (path && path_check(buf) < 0)
		return -EINVAL;
	return 0;
}
