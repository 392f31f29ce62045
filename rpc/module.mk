# rpc: ttrpc framing, server, client, transports, handlers. Messages come
# from rpc/*.proto through protoc-c into $(BUILD)/gen/rpc and are encoded
# by libprotobuf-c (static archive from libprotobuf-c-dev).
# Pattern rules only below: no explicit target may become make's default.
RPC_PROTOS   := $(wildcard rpc/*.proto)
RPC_GEN_C    := $(patsubst %.proto,$(BUILD)/gen/%.pb-c.c,$(RPC_PROTOS))
RPC_GEN_H    := $(RPC_GEN_C:.c=.h)
GEN_SRCS     += $(RPC_GEN_C)
LIBS         += -lprotobuf-c
CFLAGS       += -I$(BUILD)/gen

$(BUILD)/gen/rpc/%.pb-c.c $(BUILD)/gen/rpc/%.pb-c.h: rpc/%.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC-C $<"; protoc-c --c_out=$(BUILD)/gen -I. $<

# Any module's object may include a generated header: all wait for them.
# (An explicit rule here would become make's default goal; keep it `all`.)
.DEFAULT_GOAL := all
$(patsubst %.c,$(BUILD)/obj/%.o,$(foreach m,$(MODULES),$(wildcard $(m)/*.c))): | $(RPC_GEN_H)

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
