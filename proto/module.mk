# proto: the kin.v1 schema and ttrpc's envelope. protoc-c turns proto/*.proto
# into $(BUILD)/gen/proto/*.pb-c.{c,h}, shared by rpc/ (the envelope, Code,
# Route/Cancel, the Health probe), api/ (serves) and ctl/ (calls); encoded
# by libprotobuf-c (static archive from libprotobuf-c-dev).
# Pattern rules only below: no explicit target may become make's default.
PROTO_FILES  := $(wildcard proto/*.proto)
PROTO_GEN_C  := $(patsubst %.proto,$(BUILD)/gen/%.pb-c.c,$(PROTO_FILES))
PROTO_GEN_H  := $(PROTO_GEN_C:.c=.h)
GEN_SRCS     += $(PROTO_GEN_C)
GEN_HDRS     += $(PROTO_GEN_H)
LIBS         += -lprotobuf-c
CFLAGS       += -I$(BUILD)/gen

$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC-C $<"; protoc-c --c_out=$(BUILD)/gen -I. $<

# Any module's object may include a generated header: all wait for them.
# (An explicit rule here would become make's default goal; keep it `all`.)
.DEFAULT_GOAL := all
$(patsubst %.c,$(BUILD)/obj/%.o,$(foreach m,$(MODULES),$(wildcard $(m)/*.c))): | $(PROTO_GEN_H)
# The generated sources too: cells, vm and zone import kin.proto (Limit).
$(patsubst %.c,$(BUILD)/obj/%.o,$(PROTO_GEN_C)): | $(PROTO_GEN_H)
