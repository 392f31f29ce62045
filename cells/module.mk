# cells: cgroup v2 cells and executables. Static archives from libseccomp-dev
# and libcap-dev.
LIBS += -lseccomp -lcap

# The test driver of tests/ns/cells.test.sh: scripted cell operations on the
# real library (no RPC needed). LIB_OBJS is known only after every module.mk,
# hence the second expansion; the default goal stays `all`.
.DEFAULT_GOAL := all
.SECONDEXPANSION:
$(BUILD)/cells-driver: tests/cells/driver.c $$(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)
check-run: $(BUILD)/cells-driver
# The hostile client of tests/ns/cells-rpc.test.sh: random and extreme
# requests to every Cells/Exec/Events method (string literals in messages).
$(BUILD)/cells-hostile: tests/cells/hostile.c $$(LIB_OBJS)
	$(CC) $(CFLAGS) -Wno-write-strings -Wno-discarded-qualifiers $(LDFLAGS) -o $@ $< \
		$(LIB_OBJS) $(LIBS)
check-run: $(BUILD)/cells-hostile
# A static probe the executables run to report what isolation they got.
$(BUILD)/cells-probe: tests/cells/probe.c
	$(CC) -O2 -Wall -Werror -static -o $@ $<
check-run: $(BUILD)/cells-probe
# The cells benchmark's in-guest timing loop (tests/bench/cells.sh): static,
# so the guest image carries it as a plain file.
$(BUILD)/cells-bench: tests/cells/bench.c $$(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $(KIN_LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)
BENCH_DEPS += $(BUILD)/cells-bench
