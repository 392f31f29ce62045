/* Fuzz target: OnCalendar= specs (units/calendar.c). A spec parsed has a
 * value in every field; its next match is strictly after the time asked,
 * and its date and time (in UTC or the offset given) are ones every field
 * allows: never a wrong match. */
#include "units/units.h"

#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_match(const struct unit_calendar *c, int64_t after, long off)
{
	int64_t t = 0;
	int r = unit_calendar_next(c, after, off, &t);
	if (r == -ENOENT)
		return;
	if (r < 0 || t <= after)
		__builtin_trap();
	time_t local = (time_t)(t + (c->utc ? 0 : off));
	struct tm tm;
	if (!gmtime_r(&local, &tm))
		__builtin_trap();
	int y = tm.tm_year + 1900, wd = (tm.tm_wday + 6) % 7;
	if (y < 1970 || y > 2225 || !(c->years[(y - 1970) / 64] >> ((y - 1970) % 64) & 1))
		__builtin_trap();
	if (!(c->months >> (tm.tm_mon + 1) & 1) || !(c->days >> tm.tm_mday & 1) ||
	    !(c->weekdays >> wd & 1) || !(c->hours >> tm.tm_hour & 1) ||
	    !(c->minutes >> tm.tm_min & 1) || !(c->seconds >> tm.tm_sec & 1))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[1024];
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
	memcpy(s, data, n);
	s[n] = '\0';
	struct unit_calendar c;
	struct err e = {0};
	if (unit_calendar_parse(s, &c, &e) < 0) {
		if (!strstr(e.msg, "calendar \""))
			__builtin_trap();
		return 0;
	}
	if (!c.weekdays || !c.months || !c.days || !c.hours || !c.minutes || !c.seconds ||
	    !(c.years[0] | c.years[1] | c.years[2] | c.years[3]))
		__builtin_trap();
	/* Times from the input's length and bytes: 1970, now-ish, near the end. */
	int64_t seed = 0;
	for (size_t i = 0; i < size && i < 8; i++)
		seed = seed << 8 | data[i];
	check_match(&c, -1, 0);
	check_match(&c, 1700000000 + (seed % 100000000), 3600);
	check_match(&c, 8078572000, -7200);
	check_match(&c, (seed % 9000000000) - 1000, 0);
	return 0;
}
