#include "unit.h"
#include "units/units.h"

/* The next match of spec after after (UTC unless off), or a negative errno. */
static int64_t next(const char *spec, int64_t after, long off)
{
	struct unit_calendar c;
	struct err e = {0};
	int r = unit_calendar_parse(spec, &c, &e);
	if (r < 0)
		return r;
	int64_t t = 0;
	r = unit_calendar_next(&c, after, off, &t);
	return r < 0 ? r : t;
}

TEST(units_calendar_next)
{
	CHECK_EQ(next("daily", 1709121600, 0), 1709164800);         /* 2024-02-28 12:00 → 02-29 */
	CHECK_EQ(next("daily", 1709164800, 0), 1709164800 + 86400); /* strictly after */
	CHECK_EQ(next("monthly", 1706659200, 0), 1706745600);       /* 01-31 → 02-01 */
	CHECK_EQ(next("*-02-29 12:00", 1677628800, 0), 1709208000); /* 2023-03-01 → 2024-02-29 */
	CHECK_EQ(next("*-*-31", 1711929600, 0), 1717113600);        /* April has none: 05-31 */
	CHECK_EQ(next("Mon..Fri *-*-* 9:00", 1709892000, 0), 1710147600); /* Fri 10:00 → Mon 9:00 */
	CHECK_EQ(next("*:0/15", 1710151620, 0), 1710152100);              /* 10:07 → 10:15 */
	CHECK_EQ(next("hourly", 1710154799, 0), 1710154800);              /* 10:59:59 → 11:00 */
	CHECK_EQ(next("minutely", 1710154799, 0), 1710154800);
	CHECK_EQ(next("quarterly", 1711929600, 0), 1719792000); /* 04-01 00:00 → 07-01 */
	CHECK_EQ(next("semiannually", 1711929600, 0), 1719792000);
	CHECK_EQ(next("yearly", 1735689599, 0), 1735689600);
	CHECK_EQ(next("annually", 1735689599, 0), 1735689600);
	CHECK_EQ(next("*-12-31 23:59:59", 1735689599, 0), 1767225599);
	CHECK_EQ(next("weekly", 1710072000, 0), 1710115200); /* Sun 12:00 → Mon 00:00 */
	CHECK_EQ(next("Sun", 1710072000, 0), 1710072000 - 43200 + 7 * 86400);
	CHECK_EQ(next("*-02-29", 3981398400, 0), 4233686400); /* 2100 is not a leap year */
	CHECK_EQ(next("2225-12-31 23:59:59", 0, 0), 8078572799);
	CHECK_EQ(next("2225-12-31 23:59:59", 8078572799, 0), -ENOENT);
	CHECK_EQ(next("*-02-30", 0, 0), -ENOENT);
	CHECK_EQ(next("2023-02-29", 0, 0), -ENOENT);
	CHECK_EQ(next("Mon 2024-03-12", 0, 0), -ENOENT); /* a Tuesday */
	/* Local time 1 h east: 06:00 there is 05:00 UTC; UTC in the spec wins. */
	CHECK_EQ(next("06:00", 1704067200, 3600), 1704085200);
	CHECK_EQ(next("06:00 UTC", 1704067200, 3600), 1704088800);
	CHECK_EQ(next("*-*-* 06:00:00", 1704067200, -3600), 1704088800 + 3600);
	/* Before 1970 and far past the end. */
	CHECK_EQ(next("daily", INT64_MIN, 0), 0);
	CHECK_EQ(next("daily", INT64_MAX, 0), -ENOENT);
	CHECK_EQ(next("daily", 0, 100 * 3600), -EINVAL);
	CHECK_EQ(next("1970-01-01 00:00:00", -1, 0), 0);
}

TEST(units_calendar_parse)
{
	struct unit_calendar c;
	struct err e = {0};
	CHECK(unit_calendar_parse("Sat,Sun 2024..2026-*-1,15 0/6:30", &c, &e) == 0);
	CHECK_EQ(c.weekdays, 0x60);
	CHECK_EQ(c.years[0], 7ull << 54); /* 2024 - 1970 = 54 */
	CHECK_EQ(c.months, 0x1ffe);
	CHECK_EQ(c.days, (1u << 1) | (1u << 15));
	CHECK_EQ(c.hours, (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
	CHECK_EQ(c.minutes, 1ull << 30);
	CHECK_EQ(c.seconds, 1ull);
	CHECK(!c.utc);
	CHECK(unit_calendar_parse("  Monday..Wednesday,friday 10-1 8..10:00/20:5 utc ", &c, &e) ==
	      0);
	CHECK_EQ(c.weekdays, 0x17);
	CHECK_EQ(c.months, 1u << 10);
	CHECK_EQ(c.days, 1u << 1);
	CHECK_EQ(c.hours, 0x700);
	CHECK_EQ(c.minutes, (1ull << 0) | (1ull << 20) | (1ull << 40));
	CHECK_EQ(c.seconds, 1ull << 5);
	CHECK(c.utc);
	const char *bad[] = {
	    "",
	    "UTC",
	    "*-*-* 25:00",
	    "Mon..Foo",
	    "*-*~01",
	    "12:00:00.5",
	    "*-*-* 12:00 Europe/Berlin",
	    "23-01-01",
	    "*:0/0",
	    "*:*/5",
	    "Fri..Mon",
	    "1..5/0",
	    "12:00 *-*-*",
	    "*-*-* Mon",
	    "15",
	    "*-13-01",
	    "*-*-32",
	    "*-*-0",
	    "*:60",
	    "1969-01-01",
	    "2226-01-01",
	    "*-*-*-*",
	    "1:2:3:4",
	    "Mon,",
	    "*-1,,2-*",
	    "Mon Tue",
	    "secondly",
	    "@1700000000",
	    "2024-01-01T10:00",
	    "99999-01-01",
	    "*-*-* *:*:*:",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.msg[0] = '\0';
		int r = unit_calendar_parse(bad[i], &c, &e);
		if (r != -EINVAL || !strstr(e.msg, "calendar \""))
			printf("    accepted? \"%s\": %d\n", bad[i], r);
		CHECK(r == -EINVAL && strstr(e.msg, "calendar \""));
	}
	char big[1000];
	memset(big, '*', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(unit_calendar_parse(big, &c, &e) == -EINVAL);
}
