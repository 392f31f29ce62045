# kin — one build: static build/kin, the test binaries, fuzzers, benchmarks.
#   make              build/kin (static, glibc)
#   make check        every test layer; last line "N passed, N failed"
#   make check SANITIZE=1   the same against an ASan+UBSan (dynamic) build
#   make fuzz         long libFuzzer runs      make bench   benchmarks vs peers
#   make lint         clang-format check, cppcheck, the layer check
#   make format       clang-format -i over the files make lint checks
#   make install      bin/kin, its bash completion and man pages under $(DESTDIR)$(PREFIX)

CC       ?= cc
CLANG    ?= clang
SANITIZE ?= 0
PREFIX   ?= /usr/local
DESTDIR  ?=
SYSTEMCTL ?= 0
FUZZ_SECONDS ?= 10

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wformat-security \
	-Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition \
	-Wpointer-arith -Wundef -Wvla -Wwrite-strings -Wnull-dereference \
	-Wimplicit-fallthrough -Wmissing-declarations -Wredundant-decls
CFLAGS   := -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARNINGS) -fstack-protector-strong \
	-ffunction-sections -fdata-sections -I. $(EXTRA_CFLAGS)
LDFLAGS  :=
# Debian archives kin links as modules bring them in (see README).
LIBS     :=

ifeq ($(SANITIZE),1)
BUILD    ?= build/san
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
else
BUILD    ?= build
CFLAGS   += -D_FORTIFY_SOURCE=2
KIN_LDFLAGS := -static
# Startup and idle code first: lld puts the sections of the symbols listed in
# init/kin.order (made by `make kin-order`) together at the start of .text,
# .rodata and .data, and init/kin.ld moves the crt and IFUNC stubs next to
# them, so the pages an idle kin touches, and the 64 KiB the kernel maps
# around each fault, stay few (docs/memory.md). Without ld.lld
# the link still works, only larger in memory.
ifneq ($(shell command -v ld.lld 2>/dev/null),)
KIN_ORDER ?= init/kin.order
KIN_LDFLAGS += -fuse-ld=lld -Wl,--symbol-ordering-file=$(KIN_ORDER) -Wl,--no-warn-symbol-ordering \
	-Wl,-T,init/kin.ld
KIN_LINK_DEPS := $(KIN_ORDER) init/kin.ld
endif
endif

MODULES  := lib proto init api ctl cells vm net rpc rootfs zone oci shim auth tls units keep
# A module may add a MODULE/module.mk: LIBS it links, CFLAGS it needs,
# GEN_SRCS it generates (into $(BUILD)/gen) with GEN_HDRS their headers, and
# rules for them. Keeps this file free of module detail.
GEN_SRCS :=
GEN_HDRS :=
-include $(wildcard $(addsuffix /module.mk,$(MODULES)))
SRCS     := $(foreach m,$(MODULES),$(wildcard $(m)/*.c)) $(GEN_SRCS)
OBJS     := $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS))
# Everything but main(): what unit tests and fuzzers link against.
LIB_OBJS := $(filter-out $(BUILD)/obj/init/main.o,$(OBJS))

KIN := $(BUILD)/kin

.PHONY: all kin check check-run unit ns fuzz fuzz-build bench bench-run soak demo clean format lint lint-run \
	install deps kin-order
# Plain `make` first installs what building needs (scripts/deps.sh build: one
# dpkg query when all is there), then builds in a fresh make that sees it
# (ld.lld, for one, is looked for when the Makefile is read).
all:
	@scripts/deps.sh build
	@$(MAKE) --no-print-directory kin
# containerd runs runtime io.containerd.kin.v2 as containerd-shim-kin-v2 (and
# kin-vm as containerd-shim-kin-vm-v2): links to the one binary.
SHIM_LINKS := containerd-shim-kin-v2 containerd-shim-kin-vm-v2
kin: $(KIN) $(addprefix $(BUILD)/,$(SHIM_LINKS))
$(addprefix $(BUILD)/,$(SHIM_LINKS)): | $(KIN)
	@ln -sf kin $@

# The test programs (unit tests, drivers, fuzzers, benchmarks): tests/tests.mk
# adds them to CHECK_DEPS and BENCH_DEPS.
CHECK_DEPS :=
BENCH_DEPS :=
include tests/tests.mk

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $<"; $(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(KIN): $(OBJS) $(KIN_LINK_DEPS)
	$(CC) $(LDFLAGS) $(KIN_LDFLAGS) -o $@ $(OBJS) $(LIBS)

fuzz-build: $(FUZZERS)

# check, bench and demo first install what is missing (scripts/deps.sh: all).
check:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory check-run
check-run: $(KIN) $(CHECK_DEPS)
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/run-all.sh

# Guest images always carry the static kin: an ASan build is dynamic and a
# guest has none of its libraries. `kin image build` (any build) puts
# $KIN_IMAGE_SELF into images when it is set.
ifeq ($(SANITIZE),1)
check-run bench-run demo-run: static-kin
export KIN_IMAGE_SELF := $(abspath build/kin)
endif
.PHONY: static-kin demo-run
static-kin:
	@$(MAKE) --no-print-directory SANITIZE=0 BUILD=build build/kin

unit: $(BUILD)/unit-tests
	$(BUILD)/unit-tests

fuzz: $(FUZZERS)
	@BUILD=$(BUILD) FUZZ_SECONDS=$${FUZZ_SECONDS:-300} tests/fuzz/run.sh

# The soaks with faults, long (`make check` runs them for 20, 15 and 30
# s): the host's, a shim pod's under containerd, then a guest's (real
# limits; the host kin SIGKILLed too).
soak: $(KIN)
	@BUILD=$(BUILD) SOAK_SECONDS=$${SOAK_SECONDS:-300} tests/ns/soak.test.sh
	@BUILD=$(BUILD) SOAK_SECONDS=$${SOAK_SECONDS:-300} tests/ns/soak-shim.test.sh
	@BUILD=$(BUILD) SOAK_SECONDS=$${SOAK_SECONDS:-300} tests/vm/soak.test.sh

bench:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory bench-run
bench-run: $(KIN) $(BENCH_DEPS)
	@BUILD=$(BUILD) tests/bench/run.sh

demo:
	@scripts/deps.sh
	@$(MAKE) --no-print-directory demo-run
demo-run: $(KIN) $(BUILD)/ns-helper
	@BUILD=$(BUILD) scripts/demo.sh

# The completion script comes from the binary being installed (`kin ctl
# completion bash`), made before anything is copied: a kin without the
# subcommand (or printing nothing) fails the install instead of leaving an
# empty completion file.
COMPLETION_DIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
# The man pages are written by hand in roff (docs/man/), installed as they are.
MAN_DIR := $(DESTDIR)$(PREFIX)/share/man
install: $(KIN)
	@mkdir -p $(BUILD)
	@$(KIN) ctl completion bash >$(BUILD)/kin.bash-completion 2>$(BUILD)/kin.bash-completion.err && \
		[ -s $(BUILD)/kin.bash-completion ] || { \
		echo "install: '$(KIN) ctl completion bash' printed no completion script:" >&2; \
		cat $(BUILD)/kin.bash-completion.err >&2; rm -f $(BUILD)/kin.bash-completion; exit 1; }
	install -D -m 0755 $(KIN) $(DESTDIR)$(PREFIX)/bin/kin
	for l in $(SHIM_LINKS); do ln -sf kin $(DESTDIR)$(PREFIX)/bin/$$l; done
	install -D -m 0644 $(BUILD)/kin.bash-completion $(COMPLETION_DIR)/kin
	install -D -m 0644 docs/man/kin.1 $(MAN_DIR)/man1/kin.1
	install -D -m 0644 docs/man/kin-ctl.1 $(MAN_DIR)/man1/kin-ctl.1
	install -D -m 0644 docs/man/kin-init.8 $(MAN_DIR)/man8/kin-init.8
	@# kin answers as systemctl (docs/rpc.md "systemctl"); only on request, since a
	@# host's own systemd would be shadowed: make install SYSTEMCTL=1
	if [ "$(SYSTEMCTL)" = 1 ]; then ln -sf kin $(DESTDIR)$(PREFIX)/bin/systemctl; fi

deps:
	scripts/deps.sh

# Regenerates init/kin.order from the page faults of a running kin (perf).
kin-order: $(OBJS)
	@BUILD=$(BUILD) scripts/kin-order.sh

# lint: scripts/lint.sh (clang-format --dry-run, cppcheck with the build's
# -I/-D flags over the modules' own sources, scripts/layers.sh). cppcheck
# reads the generated headers, so they are made first.
lint:
	@scripts/deps.sh lint
	@$(MAKE) --no-print-directory lint-run
lint-run: $(GEN_HDRS)
	@LINT_SRCS="$(filter-out $(GEN_SRCS),$(SRCS))" \
		LINT_CPPFLAGS="$(filter -I% -D%,$(CFLAGS))" scripts/lint.sh

# The same files lint's clang-format check reads (every tracked .c/.h).
format:
	@scripts/lint.sh format

clean:
	rm -rf build

-include $(OBJS:.o=.d) $(FUZZ_OBJS:.o=.d)
