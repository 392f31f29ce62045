/* audit: the trail of what peers changed and of what they were refused,
 * one log line each. Lines carry values a peer chose (certificate names,
 * targets, object names), so every value is escaped: a line can never be
 * split or forged by what it quotes. Denials are rate-limited, as a peer
 * can make them as fast as it can send; changes are not, as each one is
 * work kin did. */
#include "auth/auth-int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define WINDOW_NS 1000000000ull

/* The bytes auth_escape writes for c, into piece (at least 5 bytes). */
static size_t escape_byte(unsigned char c, char *piece)
{
	if (c == '"' || c == '\\') {
		piece[0] = '\\';
		piece[1] = (char)c;
		return 2;
	}
	if (c < 0x20 || c >= 0x7f) {
		snprintf(piece, 5, "\\x%02x", c);
		return 4;
	}
	piece[0] = (char)c;
	return 1;
}

size_t auth_escape(char *buf, size_t size, const char *s, size_t len, size_t max)
{
	char piece[5];
	size_t o = 0, need = 0;
	bool cut = len > max;
	if (size == 0)
		return 0;
	if (cut)
		len = max;
	for (size_t i = 0; i < len; i++)
		need += escape_byte((unsigned char)s[i], piece);
	/* Room for a "..." that says it was cut, unless it all fits. */
	size_t room = !cut && need < size ? size - 1 : (size > 4 ? size - 4 : 0);
	for (size_t i = 0; i < len; i++) {
		size_t n = escape_byte((unsigned char)s[i], piece);
		if (o + n > room) {
			cut = true;
			break;
		}
		memcpy(buf + o, piece, n);
		o += n;
	}
	if (cut)
		for (int i = 0; i < 3 && o + 1 < size; i++)
			buf[o++] = '.';
	buf[o] = '\0';
	return o;
}

/* Appends " key=value" to buf (used bytes at *o), quoting a value that is
 * empty or holds anything but printable ASCII other than '"' and '\\'. */
static void put_value(char *buf, size_t size, size_t *o, const char *key, const char *v)
{
	char esc[AUTH_AUDIT_VALUE_MAX + 1];
	size_t len = v ? strlen(v) : 0;
	bool plain = len > 0;
	for (size_t i = 0; i < len && plain; i++)
		plain = v[i] > ' ' && v[i] <= '~' && v[i] != '"' && v[i] != '\\';
	auth_escape(esc, sizeof(esc), v ? v : "", len, AUTH_AUDIT_VALUE_MAX);
	if (*o >= size)
		return;
	int n = snprintf(buf + *o, size - *o, plain ? "%s%s=%s" : "%s%s=\"%s\"", *o ? " " : "", key,
	                 esc);
	if (n > 0)
		*o = (size_t)n >= size - *o ? size - 1 : *o + (size_t)n;
}

size_t auth_audit_format(const struct auth_audit_entry *e, char *buf, size_t size)
{
	char call[2 * AUTH_AUDIT_VALUE_MAX + 2];
	size_t o = 0;
	if (size == 0)
		return 0;
	buf[0] = '\0';
	int n = snprintf(buf, size, "audit:");
	if (n < 0 || (size_t)n >= size)
		return 0;
	o = (size_t)n;
	snprintf(call, sizeof(call), "%.*s/%.*s", AUTH_AUDIT_VALUE_MAX,
	         e->service ? e->service : "", AUTH_AUDIT_VALUE_MAX, e->method ? e->method : "");
	put_value(buf, size, &o, "who", e->who);
	put_value(buf, size, &o, "via", e->via);
	put_value(buf, size, &o, "call", call);
	put_value(buf, size, &o, "target", e->target && e->target[0] ? e->target : ".");
	put_value(buf, size, &o, "object", e->object);
	put_value(buf, size, &o, "result", err_code_name(e->code));
	return o;
}

static void report_dropped(struct auth_audit *a, uint64_t now_ns)
{
	if (!a->dropped)
		return;
	uint64_t span = now_ns > a->dropped_since_ns ? now_ns - a->dropped_since_ns : 0;
	log_info("audit: %" PRIu64 " denial%s not logged in the last %.1f s (rate limit)",
	         a->dropped, a->dropped == 1 ? "" : "s", (double)span / 1e9);
	a->dropped = 0;
}

void auth_audit_log(struct auth_audit *a, const struct auth_audit_entry *e, uint64_t now_ns)
{
	char line[AUTH_AUDIT_LINE_MAX];
	if (a && e->denial) {
		if (now_ns < a->window_ns || now_ns - a->window_ns >= WINDOW_NS) {
			a->window_ns = now_ns;
			a->logged = 0;
		}
		if (a->logged >= AUTH_AUDIT_DENIALS_PER_S) {
			if (!a->dropped)
				a->dropped_since_ns = a->window_ns;
			a->dropped++;
			return;
		}
		a->logged++;
	}
	if (a)
		report_dropped(a, now_ns);
	auth_audit_format(e, line, sizeof(line));
	log_info("%s", line);
}

void auth_audit_tick(struct auth_audit *a, uint64_t now_ns)
{
	if (a->dropped && (now_ns < a->window_ns || now_ns - a->window_ns >= WINDOW_NS))
		report_dropped(a, now_ns);
}

/* ---- the object of a request ---------------------------------------------- */

/* A base-128 varint at *pos (at most 10 bytes); -1 when malformed. */
static int read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos >= len)
			return -1;
		uint8_t b = p[(*pos)++];
		if (i == 9 && b > 1)
			return -1; /* past 64 bits */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

void auth_request_object(const uint8_t *payload, size_t len, char *buf, size_t size)
{
	size_t pos = 0;
	if (size == 0)
		return;
	buf[0] = '\0';
	while (pos < len) {
		uint64_t key, v;
		if (read_varint(payload, len, &pos, &key) < 0 || key > UINT32_MAX || key >> 3 == 0)
			return;
		unsigned wire = (unsigned)(key & 7);
		bool first = key >> 3 == 1;
		if (first && wire != 2)
			return;
		switch (wire) {
		case 0:
			if (read_varint(payload, len, &pos, &v) < 0)
				return;
			break;
		case 1:
		case 5: {
			size_t n = wire == 1 ? 8 : 4;
			if (len - pos < n)
				return;
			pos += n;
			break;
		}
		case 2:
			if (read_varint(payload, len, &pos, &v) < 0 || v > len - pos)
				return;
			if (first) {
				if (v == 0 || v > 128)
					return;
				for (size_t i = 0; i < v; i++)
					if (payload[pos + i] < 0x20 || payload[pos + i] > 0x7e)
						return;
				size_t n = v < size ? (size_t)v : size - 1;
				memcpy(buf, payload + pos, n);
				buf[n] = '\0';
				return;
			}
			pos += (size_t)v;
			break;
		default: /* groups (3, 4) are not in proto3; 6, 7 do not exist */
			return;
		}
	}
}
