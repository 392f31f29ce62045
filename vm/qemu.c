/* qemu: the first VMM backend. A q35 machine (QEMU's microvm machine hangs
 * under TCG here), no default devices, the console on the first serial port
 * into a file, the RPC link as a virtio-serial port backed by a unix socket,
 * user networking (or the spec's tap), a virtio-9p share when the spec has
 * one, and a vhost-vsock device when the spec has a CID. Its monitor is QMP
 * (vm/qmp.c): shutdown (Ctrl-Alt-Del), pause and resume. */
#include "vm/qmp-int.h"

#include <stdio.h>
#include <string.h>

#define QEMU_ARGV_MAX 64
#define QEMU_STR_MAX  8192

struct argv_builder {
	char **argv;
	size_t argc;
	char *str; /* string pool inside the same allocation */
	size_t used;
	bool overflow;
};

static void add(struct argv_builder *b, const char *fmt, ...) _printf_(2, 3);
static void add(struct argv_builder *b, const char *fmt, ...)
{
	va_list ap;
	if (b->argc + 1 >= QEMU_ARGV_MAX) {
		b->overflow = true;
		return;
	}
	va_start(ap, fmt);
	int n = vsnprintf(b->str + b->used, QEMU_STR_MAX - b->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= QEMU_STR_MAX - b->used) {
		b->overflow = true;
		return;
	}
	b->argv[b->argc++] = b->str + b->used;
	b->used += (size_t)n + 1;
}

/* QEMU option values use ',' as a separator; a path with a comma would be
 * read as more options. Refused rather than escaped. */
static bool qemu_safe(const char *s)
{
	return !strchr(s, ',');
}

static int qemu_build_argv(const struct vm_spec *spec, enum vm_accel accel,
                           const struct vm_paths *paths, char ***ret_argv)
{
	if (!qemu_safe(spec->kernel) || !qemu_safe(spec->image) || !qemu_safe(spec->disk) ||
	    !qemu_safe(spec->share) || !qemu_safe(spec->tap) || !qemu_safe(spec->mac) ||
	    !qemu_safe(paths->console) || !qemu_safe(paths->link) || !qemu_safe(paths->monitor))
		return -EINVAL;
	char *mem = calloc(1, QEMU_ARGV_MAX * sizeof(char *) + QEMU_STR_MAX);
	if (!mem)
		return -ENOMEM;
	struct argv_builder b = {.argv = (char **)mem, .str = mem + QEMU_ARGV_MAX * sizeof(char *)};

	add(&b, "qemu-system-x86_64");
	add(&b, "-name");
	add(&b, "%s", spec->name);
	add(&b, "-machine");
	add(&b, "q35,accel=%s", accel == VM_ACCEL_KVM ? "kvm" : "tcg");
	add(&b, "-cpu");
	add(&b, accel == VM_ACCEL_KVM ? "host" : "max");
	add(&b, "-smp");
	add(&b, "%u", spec->cpus);
	add(&b, "-m");
	add(&b, "%u", spec->memory_mb);
	add(&b, "-nodefaults");
	add(&b, "-no-user-config");
	add(&b, "-no-reboot");
	add(&b, "-display");
	add(&b, "none");
	add(&b, "-serial");
	add(&b, "file:%s", paths->console);
	add(&b, "-qmp");
	add(&b, "unix:%s,server=on,wait=off", paths->monitor);
	add(&b, "-kernel");
	add(&b, "%s", spec->kernel);
	add(&b, "-initrd");
	add(&b, "%s", spec->image);
	if (spec->disk[0]) {
		add(&b, "-drive");
		add(&b, "file=%s,if=virtio,format=raw", spec->disk);
	}
	char guest[3 * VM_GUEST_NAME_MAX];
	if (vm_guest_words(&vm_backend_qemu.guest, spec->share[0], guest, sizeof(guest)) < 0) {
		free(mem);
		return -E2BIG;
	}
	add(&b, "-append");
	add(&b, "console=ttyS0 panic=-1 quiet %s %s%s%s%s%s",
	    spec->tap[0] ? spec->guest_ip : VM_GUEST_NET, guest,
	    spec->disk[0] ? " root=/dev/vda rootfstype=ext4" : "",
	    spec->share[0] ? " kin.share=" : "", spec->share_at, spec->cmdline[0] ? " " : "");
	if (spec->cmdline[0]) { /* appended to the last word in the pool */
		size_t n = strlen(spec->cmdline);
		if (b.used + n >= QEMU_STR_MAX) {
			free(mem);
			return -E2BIG;
		}
		b.used--; /* overwrite the NUL */
		memcpy(b.str + b.used, spec->cmdline, n + 1);
		b.used += n + 1;
	}
	add(&b, "-device");
	add(&b, "virtio-serial-pci,id=vser0");
	add(&b, "-chardev");
	add(&b, "socket,id=kinlink,path=%s,server=on,wait=off", paths->link);
	add(&b, "-device");
	add(&b, "virtserialport,bus=vser0.0,chardev=kinlink,name=%s",
	    vm_backend_qemu.guest.link_name);
	if (spec->tap[0]) {
		add(&b, "-netdev");
		add(&b, "tap,id=net0,ifname=%s,script=no,downscript=no,vnet_hdr=on", spec->tap);
		add(&b, "-device");
		add(&b, "virtio-net-pci,netdev=net0,mac=%s", spec->mac);
	} else {
		add(&b, "-netdev");
		add(&b, "user,id=net0");
		add(&b, "-device");
		add(&b, "virtio-net-pci,netdev=net0");
	}
	if (spec->share[0]) { /* multidevs: the pod's rootfs mounts lie below it */
		add(&b, "-fsdev");
		add(&b, "local,id=fs0,path=%s,security_model=passthrough,multidevs=remap",
		    spec->share);
		add(&b, "-device");
		add(&b, "virtio-9p-pci,fsdev=fs0,mount_tag=%s", vm_backend_qemu.guest.share_tag);
	}
	add(&b, "-device");
	add(&b, "virtio-rng-pci");
	if (spec->vsock_cid) { /* unique per host: the manager picks it */
		add(&b, "-device");
		add(&b, "vhost-vsock-pci,guest-cid=%u", spec->vsock_cid);
	}
	if (b.overflow) {
		free(mem);
		return -E2BIG;
	}
	b.argv[b.argc] = NULL;
	*ret_argv = b.argv;
	return 0;
}

/* Ctrl-Alt-Del, not system_powerdown: kin as the guest's init takes the
 * keys (SIGINT) as a reboot, which -no-reboot makes QEMU's exit; an ACPI
 * power button event would need a daemon in the guest to act on it. */
static int qemu_shutdown(const struct vm_monitor_req *q, struct vm_monitor_talk **ret,
                         struct err *e)
{
	return vm_qmp_talk(q, "Ctrl-Alt-Del",
	                   "{\"execute\":\"send-key\",\"arguments\":{\"keys\":["
	                   "{\"type\":\"qcode\",\"data\":\"ctrl\"},"
	                   "{\"type\":\"qcode\",\"data\":\"alt\"},"
	                   "{\"type\":\"qcode\",\"data\":\"delete\"}]}}",
	                   true, ret, e);
}

static int qemu_pause(const struct vm_monitor_req *q, struct vm_monitor_talk **ret, struct err *e)
{
	return vm_qmp_talk(q, "pause", "{\"execute\":\"stop\"}", false, ret, e);
}

static int qemu_resume(const struct vm_monitor_req *q, struct vm_monitor_talk **ret, struct err *e)
{
	return vm_qmp_talk(q, "resume", "{\"execute\":\"cont\"}", false, ret, e);
}

const struct vm_backend vm_backend_qemu = {
    .name = "qemu",
    .build_argv = qemu_build_argv,
    .guest = VM_GUEST_KINDS_QEMU,
    .shutdown = qemu_shutdown,
    .pause = qemu_pause,
    .resume = qemu_resume,
    .talk_cancel = vm_qmp_talk_cancel,
};
