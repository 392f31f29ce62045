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
# A static probe the executables run to report what isolation they got.
$(BUILD)/cells-probe: tests/cells/probe.c
	$(CC) -O2 -Wall -Werror -static -o $@ $<
check-run: $(BUILD)/cells-probe
