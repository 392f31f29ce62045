/* calendar: OnCalendar= specs (systemd.time(7), "Calendar Events") — the
 * common forms parsed into one bitmask per field, and the next time that
 * matches. What is not supported (timezones but UTC, "~" last days,
 * fractional seconds, two-digit years) is refused with the spec named:
 * a timer that never runs is found at load, a wrong match never is. */
#include "units/units.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CAL_TEXT_MAX   512
#define CAL_YEAR_FIRST 1970
#define CAL_YEAR_LAST  2225
#define DAY_S          86400

/* A field's allowed values as bits (value - base), 256 at most (years). */
struct cal_bits {
	uint64_t w[4];
};

static void bits_set(struct cal_bits *b, unsigned i)
{
	b->w[i / 64] |= 1ull << (i % 64);
}

static bool bits_has(const uint64_t *w, unsigned i)
{
	return w[i / 64] >> (i % 64) & 1;
}

/* A decimal of 1 to 4 digits, s[0..n). */
static int cal_number(const char *s, size_t n, int *ret)
{
	int v = 0;
	if (n == 0 || n > 4)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* One item of a list: "*", "A", "A..B", "A/R", "A..B/R". */
static int cal_item(const char *s, size_t n, int min, int max, struct cal_bits *b)
{
	int from, to, rep = 1;
	if (n == 1 && s[0] == '*') {
		for (int v = min; v <= max; v++)
			bits_set(b, (unsigned)(v - min));
		return 0;
	}
	const char *slash = memchr(s, '/', n);
	size_t body = slash ? (size_t)(slash - s) : n;
	if (slash && (cal_number(slash + 1, n - body - 1, &rep) < 0 || rep == 0))
		return -EINVAL;
	const char *dots = body >= 2 ? memmem(s, body, "..", 2) : NULL;
	if (dots) {
		if (cal_number(s, (size_t)(dots - s), &from) < 0 ||
		    cal_number(dots + 2, body - (size_t)(dots - s) - 2, &to) < 0)
			return -EINVAL;
	} else if (cal_number(s, body, &from) < 0) {
		return -EINVAL;
	} else {
		to = slash ? max : from;
	}
	if (from < min || to > max || from > to)
		return -EINVAL;
	for (int v = from; v <= to; v += rep)
		bits_set(b, (unsigned)(v - min));
	return 0;
}

/* A comma list of items, s[0..n), into b (bits from min). */
static int cal_field(const char *s, size_t n, int min, int max, struct cal_bits *b)
{
	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i <= n;) {
		const char *comma = memchr(s + i, ',', n - i);
		size_t k = comma ? (size_t)(comma - s) - i : n - i;
		if (cal_item(s + i, k, min, max, b) < 0)
			return -EINVAL;
		i += k + 1;
	}
	return 0;
}

static int cal_weekday(const char *s, size_t n)
{
	static const char *const names[] = {"monday", "tuesday",  "wednesday", "thursday",
	                                    "friday", "saturday", "sunday"};
	for (int i = 0; i < 7; i++)
		if ((n == 3 || n == strlen(names[i])) && strncasecmp(s, names[i], n) == 0)
			return i;
	return -1;
}

/* "Mon..Fri,Sun": names (three letters or whole) and ranges. */
static int cal_weekdays(const char *s, size_t n, uint8_t *ret)
{
	uint8_t w = 0;
	for (size_t i = 0; i <= n;) {
		const char *comma = memchr(s + i, ',', n - i);
		size_t k = comma ? (size_t)(comma - s) - i : n - i;
		const char *dots = k >= 2 ? memmem(s + i, k, "..", 2) : NULL;
		size_t first = dots ? (size_t)(dots - s) - i : k;
		int from = cal_weekday(s + i, first);
		int to = dots ? cal_weekday(dots + 2, k - first - 2) : from;
		if (from < 0 || to < 0 || from > to)
			return -EINVAL;
		for (int d = from; d <= to; d++)
			w |= (uint8_t)(1u << d);
		i += k + 1;
	}
	*ret = w;
	return 0;
}

/* Splits s[0..n) at sep into at most max parts; the count, -EINVAL past max. */
static int cal_split(const char *s, size_t n, char sep, const char **part, size_t *len, int max)
{
	int k = 0;
	for (size_t i = 0; i <= n; k++) {
		if (k == max)
			return -EINVAL;
		const char *e = memchr(s + i, sep, n - i);
		part[k] = s + i;
		len[k] = e ? (size_t)(e - s) - i : n - i;
		i += len[k] + 1;
	}
	return k;
}

/* "YYYY-MM-DD" or "MM-DD" (any year). */
static int cal_date(const char *s, size_t n, struct cal_bits *y, struct cal_bits *m,
                    struct cal_bits *d)
{
	const char *p[3];
	size_t l[3];
	int k = cal_split(s, n, '-', p, l, 3), i = 0;
	if (k < 2)
		return -EINVAL;
	if (k == 3 && cal_field(p[i++], l[0], CAL_YEAR_FIRST, CAL_YEAR_LAST, y) < 0)
		return -EINVAL;
	if (k == 2 && cal_field("*", 1, CAL_YEAR_FIRST, CAL_YEAR_LAST, y) < 0)
		return -EINVAL;
	if (cal_field(p[i], l[i], 1, 12, m) < 0 || cal_field(p[i + 1], l[i + 1], 1, 31, d) < 0)
		return -EINVAL;
	return 0;
}

/* "HH:MM:SS" or "HH:MM" (second 0). */
static int cal_time(const char *s, size_t n, struct cal_bits *h, struct cal_bits *m,
                    struct cal_bits *sec)
{
	const char *p[3];
	size_t l[3];
	int k = cal_split(s, n, ':', p, l, 3);
	if (k < 2 || cal_field(p[0], l[0], 0, 23, h) < 0 || cal_field(p[1], l[1], 0, 59, m) < 0)
		return -EINVAL;
	return cal_field(k == 3 ? p[2] : "0", k == 3 ? l[2] : 1, 0, 59, sec);
}

static const struct {
	const char *name, *spec;
} cal_shorthands[] = {
    {"minutely", "*-*-* *:*:00"},
    {"hourly", "*-*-* *:00:00"},
    {"daily", "*-*-* 00:00:00"},
    {"monthly", "*-*-01 00:00:00"},
    {"weekly", "Mon *-*-* 00:00:00"},
    {"yearly", "*-01-01 00:00:00"},
    {"annually", "*-01-01 00:00:00"},
    {"quarterly", "*-01,04,07,10-01 00:00:00"},
    {"semiannually", "*-01,07-01 00:00:00"},
};

/* The fields of spec (no shorthand, no timezone): [weekdays] [date] [time]. */
static int cal_fields(const char *s, struct unit_calendar *c)
{
	struct cal_bits y = {0}, mo = {0}, d = {0}, h = {0}, mi = {0}, sec = {0};
	bool have_date = false, have_time = false, have_wd = false;
	c->weekdays = 0x7f;
	while (*s) {
		size_t n = strcspn(s, " \t");
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) {
			if (have_wd || have_date || have_time ||
			    cal_weekdays(s, n, &c->weekdays) < 0)
				return -EINVAL;
			have_wd = true;
		} else if (memchr(s, ':', n)) {
			if (have_time || cal_time(s, n, &h, &mi, &sec) < 0)
				return -EINVAL;
			have_time = true;
		} else {
			if (have_date || have_time || cal_date(s, n, &y, &mo, &d) < 0)
				return -EINVAL;
			have_date = true;
		}
		s += n;
		s += strspn(s, " \t");
	}
	if (!have_date && cal_date("*-*-*", 5, &y, &mo, &d) < 0)
		return -EINVAL;
	if (!have_time && cal_time("00:00:00", 8, &h, &mi, &sec) < 0)
		return -EINVAL;
	memcpy(c->years, y.w, sizeof(c->years));
	c->months = (uint16_t)(mo.w[0] << 1);
	c->days = (uint32_t)(d.w[0] << 1);
	c->hours = (uint32_t)h.w[0];
	c->minutes = mi.w[0];
	c->seconds = sec.w[0];
	return 0;
}

int unit_calendar_parse(const char *s, struct unit_calendar *ret, struct err *err)
{
	char buf[CAL_TEXT_MAX + 1];
	struct unit_calendar c = {0};
	size_t n = strnlen(s, CAL_TEXT_MAX + 1);
	if (n > CAL_TEXT_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "calendar \"%.64s...\": longer than %d bytes", s, CAL_TEXT_MAX);
	/* Trimmed, and a trailing " UTC" taken off. */
	while (*s == ' ' || *s == '\t')
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (n >= 4 && strcasecmp(buf + n - 3, "UTC") == 0 &&
	    (buf[n - 4] == ' ' || buf[n - 4] == '\t')) {
		c.utc = true;
		for (n -= 3; n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'); n--)
			;
		buf[n] = '\0';
	}
	const char *spec = buf;
	for (size_t i = 0; i < ARRAY_SIZE(cal_shorthands); i++)
		if (strcasecmp(buf, cal_shorthands[i].name) == 0)
			spec = cal_shorthands[i].spec;
	if (!*spec || cal_fields(spec, &c) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "calendar \"%.128s\": not a spec kin reads (weekdays, "
		               "YYYY-MM-DD, HH:MM[:SS] with *, lists, a..b, a/r; UTC)",
		               s);
	*ret = c;
	return 0;
}

/* ---- the next match --------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (eras of 400 years). */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

static int days_in_month(int y, int m)
{
	static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dim[m - 1];
}

/* The first bit of mask at or after from (below 64), -1: none. */
static int next_bit(uint64_t mask, int from)
{
	if (from >= 64)
		return -1;
	mask &= ~0ull << from;
	return mask ? __builtin_ctzll(mask) : -1;
}

/* The first second of a matching day at or after sod, -1: none left. */
static int cal_time_of_day(const struct unit_calendar *c, int sod)
{
	int h0 = sod / 3600, m0 = sod / 60 % 60, s0 = sod % 60;
	for (int h = next_bit(c->hours, h0); h >= 0 && h < 24; h = next_bit(c->hours, h + 1)) {
		int mfrom = h == h0 ? m0 : 0;
		for (int mi = next_bit(c->minutes, mfrom); mi >= 0 && mi < 60;
		     mi = next_bit(c->minutes, mi + 1)) {
			int s = next_bit(c->seconds, h == h0 && mi == m0 ? s0 : 0);
			if (s >= 0 && s < 60)
				return h * 3600 + mi * 60 + s;
		}
		if (h >= 23)
			break;
	}
	return -1;
}

int unit_calendar_next(const struct unit_calendar *c, int64_t after, long tz_offset_s, int64_t *ret)
{
	const int64_t first = days_from_civil(CAL_YEAR_FIRST, 1, 1) * DAY_S;
	const int64_t end = days_from_civil(CAL_YEAR_LAST + 1, 1, 1) * DAY_S;
	int64_t off = c->utc ? 0 : tz_offset_s;
	if (off < -26 * 3600 || off > 26 * 3600)
		return -EINVAL;
	if (after >= end)
		return -ENOENT;
	/* Local time of the first second that may match (not before 1970). */
	int64_t local = (after < first - 2 * DAY_S ? first - 2 * DAY_S : after) + 1 + off;
	if (local < first)
		local = first;
	int64_t day = local / DAY_S;
	int sod = (int)(local % DAY_S), y, m, d;
	civil_from_days(day, &y, &m, &d);
	while (y <= CAL_YEAR_LAST) {
		if (!bits_has(c->years, (unsigned)(y - CAL_YEAR_FIRST))) {
			y++, m = 1, d = 1, sod = 0;
			continue;
		}
		if (!(c->months >> m & 1)) {
			if (++m > 12)
				y++, m = 1;
			d = 1, sod = 0;
			continue;
		}
		int64_t z = days_from_civil(y, m, d);
		int t = (c->days >> d & 1) && (c->weekdays >> ((z + 3) % 7) & 1)
		            ? cal_time_of_day(c, sod)
		            : -1;
		if (t >= 0) {
			*ret = z * DAY_S + t - off;
			return 0;
		}
		sod = 0;
		if (++d > days_in_month(y, m)) {
			d = 1;
			if (++m > 12)
				y++, m = 1;
		}
	}
	return -ENOENT;
}
