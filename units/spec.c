/* spec: unit file specifiers (systemd.unit(5), "Specifiers") as the
 * system manager expands them: the unit's name parts, the system's
 * directories and identity. */
#include "units/units.h"

#include <stdlib.h>
#include <string.h>

#define SPEC_OUT_MAX (64 * 1024)

static int put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > SPEC_OUT_MAX)
		return -E2BIG;
	if (*len + n + 1 > *cap) {
		size_t c = (*len + n + 1) * 2;
		char *b = realloc(*buf, c);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* The name without its type suffix ("getty@tty1"). */
static void stem(const struct unit_name *n, char *buf, size_t size)
{
	const char *dot = strrchr(n->full, '.');
	size_t len = dot ? (size_t)(dot - n->full) : strlen(n->full);
	if (len >= size)
		len = size - 1;
	memcpy(buf, n->full, len);
	buf[len] = '\0';
}

static int value_of(char c, const struct unit_spec_ctx *ctx, char *tmp, size_t size,
                    const char **ret)
{
	const struct unit_name *n = ctx->name;
	const char *inst = n && n->instance ? n->instance : "";
	const char *dash;
	switch (c) {
	case 'n':
		*ret = n ? n->full : "";
		return 0;
	case 'N':
		stem(n, tmp, size);
		*ret = n ? tmp : "";
		return 0;
	case 'p':
		*ret = n ? n->prefix : "";
		return 0;
	case 'P':
		if (n && unit_name_unescape(n->prefix, false, tmp, size) == 0)
			return *ret = tmp, 0;
		return -EINVAL;
	case 'i':
		*ret = inst;
		return 0;
	case 'I':
		return unit_name_unescape(inst, false, tmp, size) == 0 ? (*ret = tmp, 0) : -EINVAL;
	case 'f':
		tmp[0] = '/';
		if (unit_name_unescape(*inst ? inst : (n ? n->prefix : ""), true, tmp + 1,
		                       size - 1) < 0)
			return -EINVAL;
		*ret = tmp[1] == '/' ? tmp + 1 : tmp;
		return 0;
	case 'j':
	case 'J':
		dash = n ? strrchr(n->prefix, '-') : NULL;
		*ret = dash ? dash + 1 : (n ? n->prefix : "");
		return 0;
	case 't':
		*ret = "/run";
		return 0;
	case 'S':
		*ret = "/var/lib";
		return 0;
	case 'C':
		*ret = "/var/cache";
		return 0;
	case 'L':
		*ret = "/var/log";
		return 0;
	case 'E':
		*ret = "/etc";
		return 0;
	case 'T':
		*ret = "/tmp";
		return 0;
	case 'V':
		*ret = "/var/tmp";
		return 0;
	case 'h':
		*ret = "/root";
		return 0;
	case 's':
		*ret = "/bin/sh";
		return 0;
	case 'u':
	case 'g':
		*ret = "root";
		return 0;
	case 'U':
	case 'G':
		*ret = "0";
		return 0;
	case 'H':
		*ret = ctx->hostname ? ctx->hostname : "";
		return 0;
	case 'l':
		*ret = ctx->hostname ? ctx->hostname : "";
		return 0;
	case 'm':
		*ret = ctx->machine_id ? ctx->machine_id : "";
		return 0;
	case 'b':
		*ret = ctx->boot_id ? ctx->boot_id : "";
		return 0;
	case 'v':
		*ret = ctx->kernel_release ? ctx->kernel_release : "";
		return 0;
	case 'a':
		*ret = "x86-64";
		return 0;
	case '%':
		*ret = "%";
		return 0;
	default:
		return -EINVAL;
	}
}

int unit_specifiers_expand(const char *in, const struct unit_spec_ctx *ctx, char **ret,
                           struct err *err)
{
	char *buf = NULL, tmp[UNIT_NAME_MAX * 4 + 2];
	size_t len = 0, cap = 0;
	int r = put(&buf, &len, &cap, "", 0);
	for (const char *s = in; r >= 0 && *s;) {
		const char *pct = strchr(s, '%');
		size_t plain = pct ? (size_t)(pct - s) : strlen(s);
		if ((r = put(&buf, &len, &cap, s, plain)) < 0 || !pct)
			break;
		const char *v;
		if (!pct[1] || value_of(pct[1], ctx, tmp, sizeof(tmp), &v) < 0) {
			r = err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			            "unknown specifier \"%%%.1s\" in \"%.64s\"",
			            pct[1] ? pct + 1 : "", in);
			break;
		}
		r = put(&buf, &len, &cap, v, strlen(v));
		s = pct + 2;
	}
	if (r < 0) {
		free(buf);
		if (r == -E2BIG)
			err_set(err, r, ERR_INVALID_ARGUMENT, "\"%.64s\" expands past %d bytes", in,
			        SPEC_OUT_MAX);
		return r;
	}
	*ret = buf;
	return 0;
}
