# zone: nested kins in namespaces (zone/zone.h). The test driver of
# tests/ns/zone.test.sh plays the parent kin from a script until rpc/
# routes kin-target calls, and the zones benchmark (tests/bench/zones.sh).
# LIB_OBJS is known only after every module.mk.
.DEFAULT_GOAL := all
.SECONDEXPANSION:
$(BUILD)/zone-driver: tests/zone/driver.c $$(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)
check-run: $(BUILD)/zone-driver
BENCH_DEPS += $(BUILD)/zone-driver
