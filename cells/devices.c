/* devices: the device allow-list of an executable, enforced by a cgroup v2
 * device program (BPF_PROG_TYPE_CGROUP_DEVICE) kin assembles itself and
 * attaches to the cell before the child is cloned into it, so the child
 * starts confined. cgroup v2 has no devices.allow file: this is its form.
 *
 * Rules keep runtime-spec's meaning: the last rule that matches decides,
 * and no match denies. The devices every runtime gives a container (null,
 * zero, full, random, urandom, tty, ptmx, console, /dev/pts/N — kin's
 * minimal /dev) are allowed above any rule. The program checks rules from
 * the last to the first and returns at the first match.
 *
 * The program is attached with BPF_F_ALLOW_MULTI: a cell's executables
 * each add theirs, and a device must pass every one; they go with the cell. */
#include "cells/cells-int.h"

#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#define INSNS_MAX 4096

static const struct exec_device_rule defaults[] = {
    {true, 'c', 1, 3, 7}, {true, 'c', 1, 5, 7}, {true, 'c', 1, 7, 7},
    {true, 'c', 1, 8, 7}, {true, 'c', 1, 9, 7}, {true, 'c', 5, 0, 7},
    {true, 'c', 5, 1, 7}, {true, 'c', 5, 2, 7}, {true, 'c', 136, -1, 7},
};

struct prog {
	struct bpf_insn insns[INSNS_MAX];
	size_t n;
};

static void emit(struct prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (p->n < INSNS_MAX)
		p->insns[p->n++] = (struct bpf_insn){
		    .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

/* Instructions of one rule: a conditional jump past the rule per check
 * (three for the access bits), then r0 = verdict and exit. */
static int rule_len(const struct exec_device_rule *r)
{
	return (r->type != 'a') + (r->access != 7 ? 3 : 0) + (r->major >= 0) + (r->minor >= 0) + 2;
}

/* r2 = access bits, r3 = type, r4 = major, r5 = minor (set by the prologue).
 * A jump at index pos of the rule skips to the next rule: off total-pos-1. */
static void emit_rule(struct prog *p, const struct exec_device_rule *r)
{
	int total = rule_len(r), pos = 0;
#define NEXT() ((int16_t)(total - pos++ - 1))
	if (r->type != 'a')
		emit(p, BPF_JMP | BPF_JNE | BPF_K, 3, 0, NEXT(),
		     r->type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
	if (r->access != 7) {
		/* Every access asked for must be one the rule names. Ours: r 1,
		 * w 2, m 4; the kernel's: mknod 1, read 2, write 4. */
		int32_t acc = (r->access & 1 ? BPF_DEVCG_ACC_READ : 0) |
		              (r->access & 2 ? BPF_DEVCG_ACC_WRITE : 0) |
		              (r->access & 4 ? BPF_DEVCG_ACC_MKNOD : 0);
		emit(p, BPF_ALU64 | BPF_MOV | BPF_X, 0, 2, 0, 0);
		pos++;
		emit(p, BPF_ALU64 | BPF_AND | BPF_K, 0, 0, 0, ~acc & 7);
		pos++;
		emit(p, BPF_JMP | BPF_JNE | BPF_K, 0, 0, NEXT(), 0);
	}
	if (r->major >= 0)
		emit(p, BPF_JMP | BPF_JNE | BPF_K, 4, 0, NEXT(), (int32_t)r->major);
	if (r->minor >= 0)
		emit(p, BPF_JMP | BPF_JNE | BPF_K, 5, 0, NEXT(), (int32_t)r->minor);
#undef NEXT
	emit(p, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, r->allow ? 1 : 0);
	emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

int exec_devices_program(const struct exec_device_rule *rules, size_t n, struct bpf_insn **ret,
                         size_t *ret_n)
{
	struct prog *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/* access_type = (access << 16) | type; major; minor. */
	emit(p, BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0);
	emit(p, BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0);
	emit(p, BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 0xffff);
	emit(p, BPF_ALU64 | BPF_RSH | BPF_K, 2, 0, 0, 16);
	emit(p, BPF_LDX | BPF_MEM | BPF_W, 4, 1, 4, 0);
	emit(p, BPF_LDX | BPF_MEM | BPF_W, 5, 1, 8, 0);
	for (size_t i = 0; i < ARRAY_SIZE(defaults); i++)
		emit_rule(p, &defaults[i]);
	bool decided = false;
	for (size_t i = n; i-- > 0 && !decided;) {
		emit_rule(p, &rules[i]);
		/* A rule that matches everything decides for all the rules before
		 * it (the verifier refuses code it makes unreachable). */
		decided = rule_len(&rules[i]) == 2;
	}
	if (!decided) {
		emit(p, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
		emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	}
	if (p->n >= INSNS_MAX) {
		free(p);
		return -E2BIG;
	}
	*ret_n = p->n;
	*ret = (struct bpf_insn *)p; /* insns is the first member */
	return 0;
}

int exec_devices_attach(const struct exec_spec *s, int cgroup_fd, const char *label,
                        struct err *err)
{
	struct bpf_insn *insns;
	size_t n;
	char log[4096] = "";
	if (!s->devices_set)
		return 0;
	int r = exec_devices_program(s->devices, s->ndevices, &insns, &n);
	if (r < 0)
		return err_set_errno(err, r, "exec \"%s\": device rules: %s", label, strerror(-r));
	union bpf_attr load = {.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
	                       .insn_cnt = (uint32_t)n,
	                       .insns = (uint64_t)(uintptr_t)insns,
	                       .license = (uint64_t)(uintptr_t) "GPL"};
	int prog = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
	if (prog < 0) {
		/* Again with the verifier's log, for the message only: with a
		 * log the load fails ENOSPC once a long program's log outgrows
		 * the buffer, so the first try has none. */
		int e = errno;
		load.log_buf = (uint64_t)(uintptr_t)log;
		load.log_size = sizeof(log);
		load.log_level = 1;
		prog = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
		if (prog >= 0)
			close(prog);
		prog = -1;
		errno = e;
	}
	free(insns);
	if (prog < 0)
		return err_set_errno(err, -errno,
		                     "exec \"%s\": loading the device program: %m (%.200s)", label,
		                     log);
	union bpf_attr att = {.target_fd = (uint32_t)cgroup_fd,
	                      .attach_bpf_fd = (uint32_t)prog,
	                      .attach_type = BPF_CGROUP_DEVICE,
	                      .attach_flags = BPF_F_ALLOW_MULTI};
	r = (int)syscall(SYS_bpf, BPF_PROG_ATTACH, &att, sizeof(att));
	int e = errno;
	close(prog); /* the attachment keeps it */
	if (r < 0)
		return err_set_errno(err, -e, "exec \"%s\": attaching the device program: %s",
		                     label, strerror(e));
	return 0;
}
