/* options: the one table of VM options — `kin vm run`, `kin ctl vm
 * start`, `kin ctl zone create --vm` and a kin-vm shim's shim.conf
 * (vm.NAME) all parse through it: each option's name, value, setter into
 * struct vm_spec, what a good value looks like and its help line. What
 * differs by door stays at the door: which options it takes (doors), and
 * what a relative path means there (ctl makes it absolute: the kin that
 * runs QEMU may be elsewhere; shim.conf wants it absolute). */
#include "vm/vm.h"

#include <stdio.h>
#include <string.h>

static int set_kernel(struct vm_spec *s, const char *v)
{
	return str_copy(s->kernel, sizeof(s->kernel), v);
}

static int set_image(struct vm_spec *s, const char *v)
{
	return str_copy(s->image, sizeof(s->image), v);
}

static int set_disk(struct vm_spec *s, const char *v)
{
	return str_copy(s->disk, sizeof(s->disk), v);
}

static int set_cpus(struct vm_spec *s, const char *v)
{
	uint64_t n;
	if (str_to_u64(v, VM_CPUS_MAX, &n) < 0 || n == 0)
		return -EINVAL;
	s->cpus = (unsigned)n;
	return 0;
}

/* A size (512M, 1G); a bare number is MiB, as QEMU's -m. Whole MiB. */
static int set_memory(struct vm_spec *s, const char *v)
{
	uint64_t bytes;
	if (str_to_size(v, 1 << 20, (uint64_t)VM_MEMORY_MAX_MB << 20, &bytes) < 0 ||
	    bytes % (1 << 20) || bytes < (uint64_t)VM_MEMORY_MIN_MB << 20)
		return -EINVAL;
	s->memory_mb = (unsigned)(bytes >> 20);
	return 0;
}

static int set_accel(struct vm_spec *s, const char *v)
{
	return vm_accel_parse(v, &s->accel);
}

static int set_append(struct vm_spec *s, const char *v)
{
	return str_copy(s->cmdline, sizeof(s->cmdline), v);
}

#define ALL  (VM_OPT_FOR_RUN | VM_OPT_FOR_CTL | VM_OPT_FOR_ZONE | VM_OPT_FOR_CONF)
#define FULL (VM_OPT_FOR_RUN | VM_OPT_FOR_CTL) /* the doors whose requests carry it */

const struct vm_option vm_options[VM_OPT_N] = {
    [VM_OPT_KERNEL] = {"kernel", "FILE", "guest kernel (bzImage)", "a file", ALL, set_kernel},
    [VM_OPT_IMAGE] = {"image", "FILE", "initramfs from 'kin image build'", "a file", ALL,
                      set_image},
    [VM_OPT_DISK] = {"disk", "FILE",
                     "an ext4 root disk ('kin image build --format ext4'): the initramfs's "
                     "kin switches root to it",
                     "a file", FULL, set_disk},
    [VM_OPT_CPUS] = {"cpus", "N", "virtual CPUs (default 1)", "a number from 1 to 64", ALL,
                     set_cpus},
    [VM_OPT_MEMORY] = {"memory", "SIZE", "memory: 512M, 1G, or a bare number of MiB (default 512)",
                       "a size such as 512M, 1G or 2048 (MiB), from 64M to 256G", ALL, set_memory},
    [VM_OPT_ACCEL] = {"accel", "auto|kvm|tcg", "accelerator (default auto: KVM only with vmx/svm)",
                      "auto, kvm or tcg", ALL, set_accel},
    [VM_OPT_APPEND] = {"append", "TEXT", "more guest kernel command line",
                       "at most 1023 bytes of text", FULL, set_append},
};

int vm_option_find(const char *name, unsigned door)
{
	for (size_t i = 0; i < VM_OPT_N; i++)
		if ((vm_options[i].doors & door) && strcmp(vm_options[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

int vm_option_set(enum vm_opt_id id, struct vm_spec *spec, const char *value, struct err *e)
{
	const struct vm_option *o = &vm_options[id];
	int r = o->set(spec, value);
	if (r < 0)
		return err_set(e, -EINVAL, ERR_INVALID_ARGUMENT, "%s '%.80s': expected %s", o->name,
		               value, o->expect);
	return 0;
}

int vm_options_help(unsigned door, char *buf, size_t size)
{
	size_t at = 0;
	for (size_t i = 0; i < VM_OPT_N; i++) {
		const struct vm_option *o = &vm_options[i];
		if (!(o->doors & door))
			continue;
		char flag[32];
		snprintf(flag, sizeof(flag), "--%s %s", o->name, o->metavar);
		int n = snprintf(buf + at, size - at, "  %-20s %s\n", flag, o->help);
		if (n < 0 || (size_t)n >= size - at)
			return -E2BIG;
		at += (size_t)n;
	}
	return 0;
}
