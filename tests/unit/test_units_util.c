#include "unit.h"
#include "units/units.h"

TEST(units_util)
{
	uint64_t us = 0;
	CHECK(unit_timespan_parse("90", 1000000, &us) == 0 && us == 90000000ull);
	CHECK(unit_timespan_parse("1min 30s", 1000000, &us) == 0 && us == 90000000ull);
	CHECK(unit_timespan_parse("100ms", 1000000, &us) == 0 && us == 100000ull);
	CHECK(unit_timespan_parse("1.5s", 1000000, &us) == 0 && us == 1500000ull);
	CHECK(unit_timespan_parse("2h", 1000000, &us) == 0 && us == 7200000000ull);
	CHECK(unit_timespan_parse("5min", 1000000, &us) == 0 && us == 300000000ull);
	CHECK(unit_timespan_parse("infinity", 1000000, &us) == 0 && us == UNIT_INFINITY);
	CHECK(unit_timespan_parse("", 1000000, &us) == -EINVAL);
	CHECK(unit_timespan_parse("5 parsecs", 1000000, &us) == -EINVAL);
	CHECK(unit_timespan_parse("-1", 1000000, &us) == -EINVAL);
	CHECK(unit_timespan_parse("99999999999999999999", 1000000, &us) == -ERANGE);
	bool b = false;
	CHECK(unit_bool_parse("yes", &b) == 0 && b);
	CHECK(unit_bool_parse("Off", &b) == 0 && !b);
	CHECK(unit_bool_parse("maybe", &b) == -EINVAL);
	CHECK(unit_type_from_suffix("ssh.service") == UNIT_SERVICE);
	CHECK(unit_type_from_suffix("dbus.socket") == UNIT_SOCKET);
	CHECK(unit_type_from_suffix("x.conf") == UNIT_TYPE_INVALID);
	CHECK(strcmp(unit_dep_name(UNIT_DEP_BINDS_TO), "BindsTo") == 0);
	struct unit_strv l = {0};
	CHECK(unit_strv_push(&l, "a") == 0 && unit_strv_push(&l, "b") == 0);
	CHECK(l.n == 2 && unit_strv_contains(&l, "b") && !unit_strv_contains(&l, "c") && !l.v[2]);
	unit_strv_clear(&l);
	CHECK(l.n == 0 && !l.v);
}
