/* spec: systemd's % specifiers (systemd.unit(5), "Specifiers") as a system
 * manager running as root expands them. Unit files are read at load, so
 * the values come from the unit's name and a small context (host name,
 * machine and boot ids, kernel release) the loader fills once. */
#include "units/words-int.h"

#include <string.h>

/* The output cap: a value read from a unit file is at most a line; the
 * expansions (each at most a name or a host's id) cannot make it huge. */
#define SPEC_OUT_MAX (4 * UNIT_LINE_MAX)

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

/* Unescaped into buf (systemd's unescaping: "\xNN" bytes, '-' for '/');
 * path: the path form with a leading '/'. */
static int unescaped(const char *s, bool path, char *buf, size_t size)
{
	return unit_name_unescape(s, path, buf, size);
}

/* The specifiers that are fixed strings for a system manager as root. */
static const char *spec_fixed(char c)
{
	switch (c) {
	case 't':
		return "/run";
	case 'S':
		return "/var/lib";
	case 'C':
		return "/var/cache";
	case 'L':
		return "/var/log";
	case 'E':
		return "/etc";
	case 'T':
		return "/tmp";
	case 'V':
		return "/var/tmp";
	case 'h':
		return "/root";
	case 's':
		return "/bin/sh";
	case 'u':
		return "root";
	case 'U':
		return "0";
	case 'g':
		return "root";
	case 'G':
		return "0";
	case '%':
		return "%";
	default:
		return NULL;
	}
}

/* The value of %c into b: 0, -EINVAL for an unknown specifier or one whose
 * value cannot be made (an instance that does not unescape). */
static int spec_one(char c, const struct unit_spec_ctx *ctx, struct unit_sb *b)
{
	const struct unit_name *n = ctx ? ctx->name : NULL;
	const char *v = spec_fixed(c), *dash;
	char buf[UNIT_NAME_MAX + 2];
	int r = 0;
	if (v)
		return unit_sb_put(b, v, strlen(v));
	switch (c) {
	case 'n':
		v = n ? n->full : "";
		break;
	case 'N':
		v = n ? n->full : "";
		dash = strrchr(v, '.');
		return unit_sb_put(b, v, dash ? (size_t)(dash - v) : strlen(v));
	case 'p':
		v = n ? n->prefix : "";
		break;
	case 'P':
		r = unescaped(n ? n->prefix : "", false, buf, sizeof(buf)), v = buf;
		break;
	case 'i':
		v = n ? or_empty(n->instance) : "";
		break;
	case 'I':
		r = unescaped(n ? or_empty(n->instance) : "", false, buf, sizeof(buf)), v = buf;
		break;
	case 'j':
		v = n ? n->prefix : "";
		dash = strrchr(v, '-');
		v = dash ? dash + 1 : v;
		break;
	case 'J':
		v = n ? n->prefix : "";
		dash = strrchr(v, '-');
		r = unescaped(dash ? dash + 1 : v, false, buf, sizeof(buf)), v = buf;
		break;
	case 'f':
		/* The instance (or the prefix) unescaped as a path. */
		v = n ? (n->instance && n->instance[0] ? n->instance : n->prefix) : "";
		r = unescaped(v, true, buf, sizeof(buf)), v = buf;
		break;
	case 'H':
		v = ctx ? or_empty(ctx->hostname) : "";
		break;
	case 'l':
		v = ctx ? or_empty(ctx->hostname) : "";
		return unit_sb_put(b, v, strcspn(v, "."));
	case 'm':
		v = ctx ? or_empty(ctx->machine_id) : "";
		break;
	case 'b':
		v = ctx ? or_empty(ctx->boot_id) : "";
		break;
	case 'v':
		v = ctx ? or_empty(ctx->kernel_release) : "";
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? -EINVAL : unit_sb_put(b, v, strlen(v));
}

int unit_specifiers_expand(const char *in, const struct unit_spec_ctx *ctx, char **ret,
                           struct err *err)
{
	struct unit_sb b = {.max = SPEC_OUT_MAX};
	int r = 0;
	for (const char *p = in; *p && r >= 0; p++) {
		const char *pct = strchr(p, '%');
		size_t n = pct ? (size_t)(pct - p) : strlen(p);
		if ((r = unit_sb_put(&b, p, n)) < 0 || !pct)
			break;
		p = pct + 1;
		/* A '%' ending the value stays a '%', as systemd keeps it. */
		if (!*p) {
			r = unit_sb_putc(&b, '%');
			break;
		}
		r = spec_one(*p, ctx, &b);
		if (r == -EINVAL) {
			unit_sb_free(&b);
			return err_set(
			    err, r, ERR_INVALID_ARGUMENT, "\"%.64s%s\": %s specifier %%%c", in,
			    strlen(in) > 64 ? "..." : "",
			    spec_fixed(*p) || strchr("nNpPiIjJfHlmbv", *p) ? "cannot expand the"
			                                                   : "unknown",
			    *p >= ' ' && *p < 127 ? *p : '?');
		}
	}
	if (r < 0) {
		unit_sb_free(&b);
		return err_set(
		    err, r, r == -E2BIG ? ERR_OUT_OF_RANGE : ERR_INTERNAL, "\"%.64s...\": %s", in,
		    r == -E2BIG ? "too long once specifiers are expanded" : strerror(-r));
	}
	*ret = unit_sb_take(&b);
	return *ret ? 0 : -ENOMEM;
}
