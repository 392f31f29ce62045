# rpc: ttrpc framing, server, client, transports, routing. Its messages
# come from proto/ (proto/module.mk).
# Test programs that link the modules: the load and bad-input client.
# LIB_OBJS is only known after every module.mk: expand it a second time.
.SECONDEXPANSION:
$(BUILD)/rpc-%: tests/ns/rpc_%.c $$(LIB_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJS) $(LIBS)

# The Go ttrpc peer (Debian's golang-github-containerd-ttrpc-dev), built
# offline: the interop client for make check, a Health server for make bench.
$(BUILD)/ttrpc-peer: tests/interop/main.go
	@mkdir -p $(BUILD)/go-cache
	cd tests/interop && GOPATH=/usr/share/gocode GO111MODULE=off \
		GOCACHE=$(abspath $(BUILD))/go-cache go build -o $(abspath $@) main.go

CHECK_DEPS += $(BUILD)/rpc-load $(BUILD)/rpc-route $(BUILD)/ttrpc-peer
BENCH_DEPS += $(BUILD)/ttrpc-peer
