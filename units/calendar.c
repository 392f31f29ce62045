/* calendar: OnCalendar= (systemd.time(5), "Calendar Events") — the
 * shorthands and "[WEEKDAYS] [[YEAR-]MONTH-DAY] [HOUR:MINUTE[:SECOND]]
 * [UTC]" with '*', lists (a,b), ranges (a..b) and repeats (a/n, *\/n) in
 * each field. What kin does not take is refused naming the spec, never
 * matched wrongly. The next elapse is found day by day over at most eight
 * years (a spec that never matches, Feb 30, is -ENOENT), in UTC or at a
 * fixed offset (a DST change inside the search is not followed). */
#include "units/units.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAL_TEXT_MAX   256
#define CAL_SEARCH_DAY (8 * 366)

static const char *const shorthands[][2] = {
    {"minutely", "*-*-* *:*:00"},
    {"hourly", "*-*-* *:00:00"},
    {"daily", "*-*-* 00:00:00"},
    {"weekly", "Mon *-*-* 00:00:00"},
    {"monthly", "*-*-01 00:00:00"},
    {"yearly", "*-01-01 00:00:00"},
    {"annually", "*-01-01 00:00:00"},
    {"quarterly", "*-01,04,07,10-01 00:00:00"},
    {"semiannually", "*-01,07-01 00:00:00"},
};

static const char *const days[7][2] = {
    {"Mon", "Monday"}, {"Tue", "Tuesday"},  {"Wed", "Wednesday"}, {"Thu", "Thursday"},
    {"Fri", "Friday"}, {"Sat", "Saturday"}, {"Sun", "Sunday"}};

static int weekday(const char *s, size_t n)
{
	for (int i = 0; i < 7; i++)
		for (int k = 0; k < 2; k++)
			if (strlen(days[i][k]) == n && !strncasecmp(s, days[i][k], n))
				return i;
	return -1;
}

static int weekdays_parse(char *s, uint8_t *ret)
{
	*ret = 0;
	char *save = NULL;
	for (char *item = strtok_r(s, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *dots = strstr(item, "..");
		int a = weekday(item, dots ? (size_t)(dots - item) : strlen(item));
		int b = dots ? weekday(dots + 2, strlen(dots + 2)) : a;
		if (a < 0 || b < 0)
			return -EINVAL;
		for (int i = a;; i = (i + 1) % 7) { /* Sat..Mon wraps */
			*ret |= (uint8_t)(1u << i);
			if (i == b)
				break;
		}
	}
	return *ret ? 0 : -EINVAL;
}

static int num(const char *s, size_t n, uint32_t *ret)
{
	char buf[16];
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return str_to_u32(buf, ret);
}

/* One field ("*", "5", "1..5", "1,15", "0/15", "*\/5") into bits lo..hi of
 * mask[] (64-bit words). */
static int field_parse(const char *s, unsigned lo, unsigned hi, uint64_t *mask)
{
	char buf[CAL_TEXT_MAX], *save = NULL;
	if (str_copy(buf, sizeof(buf), s) < 0)
		return -EINVAL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		uint32_t a = lo, b = hi, step = 1;
		char *slash = strchr(item, '/');
		if (slash) {
			if (num(slash + 1, strlen(slash + 1), &step) < 0 || !step)
				return -EINVAL;
			*slash = '\0';
		}
		char *dots = strstr(item, "..");
		if (!strcmp(item, "*")) {
			/* every value */
		} else if (dots) {
			if (num(item, (size_t)(dots - item), &a) < 0 ||
			    num(dots + 2, strlen(dots + 2), &b) < 0)
				return -EINVAL;
		} else {
			if (num(item, strlen(item), &a) < 0)
				return -EINVAL;
			b = slash ? hi : a;
		}
		if (a < lo || b > hi || a > b)
			return -EINVAL;
		for (uint32_t v = a; v <= b; v += step)
			mask[(v - lo) / 64] |= 1ull << ((v - lo) % 64);
	}
	return 0;
}

static int date_parse(const char *s, struct unit_calendar *c)
{
	char buf[CAL_TEXT_MAX];
	char *parts[3];
	size_t n = 0;
	if (str_copy(buf, sizeof(buf), s) < 0)
		return -EINVAL;
	for (char *p = buf, *dash; n < 3; p = dash + 1) {
		dash = strchr(p, '-');
		parts[n++] = p;
		if (!dash)
			break;
		*dash = '\0';
	}
	if (n < 2 || strchr(parts[n - 1], '-'))
		return -EINVAL;
	uint64_t m[1] = {0}, d[1] = {0};
	memset(c->years, 0, sizeof(c->years));
	if (n == 3) {
		if (field_parse(parts[0], 1970, 2225, c->years) < 0)
			return -EINVAL;
	} else {
		memset(c->years, 0xff, sizeof(c->years));
	}
	if (field_parse(parts[n - 2], 1, 12, m) < 0 || field_parse(parts[n - 1], 1, 31, d) < 0)
		return -EINVAL;
	c->months = (uint16_t)(m[0] << 1);
	c->days = (uint32_t)(d[0] << 1);
	return 0;
}

static int time_parse(const char *s, struct unit_calendar *c)
{
	char buf[CAL_TEXT_MAX];
	char *parts[3];
	size_t n = 0;
	if (str_copy(buf, sizeof(buf), s) < 0)
		return -EINVAL;
	for (char *p = buf, *colon; n < 3; p = colon + 1) {
		colon = strchr(p, ':');
		parts[n++] = p;
		if (!colon)
			break;
		*colon = '\0';
	}
	if (n < 2 || strchr(parts[n - 1], ':'))
		return -EINVAL;
	uint64_t h[1] = {0};
	c->minutes = c->seconds = 0;
	if (field_parse(parts[0], 0, 23, h) < 0 || field_parse(parts[1], 0, 59, &c->minutes) < 0)
		return -EINVAL;
	if (n == 3) {
		if (strchr(parts[2], '.')) /* fractions of a second: not kin's */
			return -EINVAL;
		if (field_parse(parts[2], 0, 59, &c->seconds) < 0)
			return -EINVAL;
	} else {
		c->seconds = 1; /* :00 */
	}
	c->hours = (uint32_t)h[0];
	return 0;
}

int unit_calendar_parse(const char *s, struct unit_calendar *ret, struct err *err)
{
	char buf[CAL_TEXT_MAX], *save = NULL;
	struct unit_calendar c = {.weekdays = 0x7f};
	const char *text = s;
	for (size_t i = 0; i < ARRAY_SIZE(shorthands); i++)
		if (!strcmp(s, shorthands[i][0]))
			text = shorthands[i][1];
	if (str_copy(buf, sizeof(buf), text) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "OnCalendar=%.64s: too long", s);
	bool have_date = false, have_time = false, have_days = false;
	int r = 0;
	for (char *t = strtok_r(buf, " \t", &save); t && r >= 0; t = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(t, "UTC") && !c.utc)
			c.utc = true;
		else if (!have_days && !have_date && !have_time &&
		         ((t[0] >= 'A' && t[0] <= 'Z') || (t[0] >= 'a' && t[0] <= 'z')))
			r = weekdays_parse(t, &c.weekdays), have_days = true;
		else if (!have_date && !have_time && strchr(t, '-') && !strchr(t, ':'))
			r = date_parse(t, &c), have_date = true;
		else if (!have_time && strchr(t, ':'))
			r = time_parse(t, &c), have_time = true;
		else
			r = -EINVAL;
	}
	if (r >= 0 && !have_date) {
		memset(c.years, 0xff, sizeof(c.years));
		c.months = 0x1ffe;
		c.days = 0xfffffffe;
	}
	if (r >= 0 && !have_time) {
		c.hours = 1;
		c.minutes = 1;
		c.seconds = 1;
	}
	if (r < 0 || (!have_days && !have_date && !have_time))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "OnCalendar=%.64s is not a calendar spec kin takes (README: Timers)",
		               s);
	*ret = c;
	return 0;
}

static int first_bit(uint64_t mask, int from, int max)
{
	for (int i = from; i <= max; i++)
		if (mask & (1ull << i))
			return i;
	return -1;
}

int unit_calendar_next(const struct unit_calendar *c, int64_t after, long tz_offset_s, int64_t *ret)
{
	time_t t = (time_t)(after + 1 + (c->utc ? 0 : tz_offset_s));
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	int h0 = tm.tm_hour, m0 = tm.tm_min, s0 = tm.tm_sec;
	for (int day = 0; day < CAL_SEARCH_DAY; day++) {
		if (day) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
			time_t norm = timegm(&tm);
			gmtime_r(&norm, &tm);
			h0 = m0 = s0 = 0;
		}
		int year = tm.tm_year + 1900, wd = (tm.tm_wday + 6) % 7;
		if (year < 1970 || year > 2225)
			return -ENOENT;
		if (!(c->years[(year - 1970) / 64] & (1ull << ((year - 1970) % 64))) ||
		    !(c->months & (1u << (tm.tm_mon + 1))) || !(c->days & (1u << tm.tm_mday)) ||
		    !(c->weekdays & (1u << wd)))
			continue;
		for (int h = first_bit(c->hours, h0, 23); h >= 0;
		     h = first_bit(c->hours, h + 1, 23)) {
			int mfrom = h == h0 ? m0 : 0;
			for (int m = first_bit(c->minutes, mfrom, 59); m >= 0;
			     m = first_bit(c->minutes, m + 1, 59)) {
				int s = first_bit(c->seconds, h == h0 && m == m0 ? s0 : 0, 59);
				if (s < 0)
					continue;
				tm.tm_hour = h, tm.tm_min = m, tm.tm_sec = s;
				*ret = (int64_t)timegm(&tm) - (c->utc ? 0 : tz_offset_s);
				return 0;
			}
			m0 = 0, s0 = 0;
			if (h == h0)
				h0 = -1;
		}
	}
	return -ENOENT;
}
