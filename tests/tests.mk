# Test programs: how make builds what make check, make fuzz and make bench
# run. Included by the Makefile after every module.mk, so LIB_OBJS (kin's
# objects but main) and LIBS are known here. CHECK_DEPS and BENCH_DEPS: the
# programs check-run and bench-run wait for.

UNIT_SRCS := $(wildcard tests/unit/*.c)
# Unit tests keep string literals in non-const fields of test tables.
$(BUILD)/unit-tests: $(UNIT_SRCS) $(LIB_OBJS)
	$(CC) $(CFLAGS) -Wno-write-strings -Wno-discarded-qualifiers $(LDFLAGS) -Itests/unit -o $@ $(UNIT_SRCS) $(LIB_OBJS) $(LIBS)

$(BUILD)/ns-helper: tests/ns/helper.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< 

# The test driver of tests/ns/cells.test.sh: scripted cell operations on the
# real library (no RPC needed).
$(BUILD)/cells-driver: tests/cells/driver.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)
# The hostile client of tests/ns/cells-rpc.test.sh: random and extreme
# requests to every Cells/Exec/Events method (string literals in messages).
$(BUILD)/cells-hostile: tests/cells/hostile.c $(LIB_OBJS)
	$(CC) $(CFLAGS) -Wno-write-strings -Wno-discarded-qualifiers $(LDFLAGS) -o $@ $< \
		$(LIB_OBJS) $(LIBS)
# A static probe the executables run to report what isolation they got.
$(BUILD)/cells-probe: tests/cells/probe.c
	$(CC) -O2 -Wall -Werror -static -o $@ $<
# The cells benchmark's in-guest timing loop (tests/bench/cells.sh): static,
# so the guest image carries it as a plain file.
$(BUILD)/cells-bench: tests/cells/bench.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) $(KIN_LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The RPC load and bad-input client, and the route client (tests/ns/rpc_*.c).
$(BUILD)/rpc-%: tests/ns/rpc_%.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The pod-network driver of tests/ns/net-tap.test.sh (net_tap_create,
# net_tc_redirect, and a guest's end of the tap).
$(BUILD)/net-tap: tests/ns/net_tap.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The Go ttrpc peer (Debian's golang-github-containerd-ttrpc-dev), built
# offline: the interop client for make check, a Health server for make bench.
$(BUILD)/ttrpc-peer: tests/interop/main.go
	@mkdir -p $(BUILD)/go-cache
	cd tests/interop && GOPATH=/usr/share/gocode GO111MODULE=off \
		GOCACHE=$(abspath $(BUILD))/go-cache go build -o $(abspath $@) main.go

# The test driver of tests/ns/zone.test.sh plays the parent kin from a
# script, and the zones benchmark (tests/bench/zones.sh) uses it too.
$(BUILD)/zone-driver: tests/zone/driver.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The layer unpacker of tests/ns/oci-layer.test.sh (a blob into a directory).
$(BUILD)/oci-layer-unpack: tests/oci/layer_unpack.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The hostile caller of a shim's Task service (tests/ns/shim.test.sh).
$(BUILD)/shim-hostile: tests/shim/hostile.c $(LIB_OBJS)
	$(CC) $(CFLAGS) -Wno-discarded-qualifiers $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The driver of tests/ns/tls-gateway.test.sh: kin's side of the TLS
# gateway (listening socket, control socket, handoffs) and kin ctl's side
# of tls_client_open.
$(BUILD)/tls-gateway-driver: tests/tls/gateway_driver.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

CHECK_DEPS += $(BUILD)/tls-gateway-driver
CHECK_DEPS += $(BUILD)/oci-layer-unpack $(BUILD)/shim-hostile $(BUILD)/net-tap
CHECK_DEPS += $(BUILD)/unit-tests $(BUILD)/ns-helper $(BUILD)/cells-driver \
	$(BUILD)/cells-hostile $(BUILD)/cells-probe $(BUILD)/rpc-load $(BUILD)/rpc-route \
	$(BUILD)/ttrpc-peer $(BUILD)/zone-driver

# libFuzzer builds (clang); module sources compiled in with the fuzzer's
# instrumentation. tests/fuzz/replay.c gives each target a plain main too.
FUZZ_SRCS := $(filter-out tests/fuzz/replay.c,$(wildcard tests/fuzz/*.c))
FUZZERS   := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRCS))
FUZZ_CFLAGS := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	$(filter-out -D_FORTIFY_SOURCE%,$(filter -I% -D%,$(CFLAGS)))
# Module objects are built once with the fuzzer's instrumentation and
# shared by every target (compiling all of kin per target took minutes).
FUZZ_OBJS := $(patsubst %.c,build/fuzz/obj/%.o,$(filter-out init/main.c,$(SRCS)))
build/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC-FUZZ $<"; $(CLANG) $(FUZZ_CFLAGS:-fsanitize=fuzzer,%=-fsanitize=fuzzer-no-link,%) -MMD -MP -c $< -o $@
$(FUZZ_OBJS): | $(GEN_SRCS)
build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_OBJS) $(LIBS)
build/fuzz/%-replay: tests/fuzz/%.c tests/fuzz/replay.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB_OBJS) $(LIBS)
CHECK_DEPS += $(FUZZERS)

# Benchmark programs (tests/bench/*.c) and the test programs bench-run uses.
$(BUILD)/bench-%: tests/bench/%.c
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench-%,$(wildcard tests/bench/*.c))
BENCH_DEPS += $(BENCH_BINS) $(BUILD)/ns-helper $(BUILD)/cells-bench $(BUILD)/ttrpc-peer \
	$(BUILD)/zone-driver $(BUILD)/rpc-gap
