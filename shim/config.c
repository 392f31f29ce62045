/* config: what a kin-vm shim boots its pods with, from a small file of
 * "KEY = VALUE" lines ('#' starts a comment): vm.kernel and vm.image (a
 * kernel and a `kin image build` initramfs, both required), vm.cpus,
 * vm.memory (512M, 1G or MiB) and vm.accel (auto, kvm, tcg). The file is
 * the administrator's, yet it is checked like any input: an unknown key, a
 * bad value or an overlong line is refused with the line named. */
#include "shim/shim.h"

#include <stdio.h>
#include <string.h>

#define CONFIG_FILE_MAX (64 * 1024)

static int set(struct shim_vm_config *c, const char *key, const char *value)
{
	uint64_t n;
	if (strcmp(key, "vm.kernel") == 0 || strcmp(key, "vm.image") == 0) {
		char *dst = key[3] == 'k' ? c->kernel : c->image;
		if (value[0] != '/')
			return -EINVAL;
		return str_copy(dst, PATH_MAX, value);
	}
	if (strcmp(key, "vm.cpus") == 0) {
		if (str_to_u64(value, 64, &n) < 0 || n == 0)
			return -EINVAL;
		c->cpus = (unsigned)n;
		return 0;
	}
	if (strcmp(key, "vm.memory") == 0) {
		if (str_to_size(value, 1 << 20, (uint64_t)256 << 30, &n) < 0 || n < (64 << 20) ||
		    n % (1 << 20))
			return -EINVAL;
		c->memory_mb = (unsigned)(n >> 20);
		return 0;
	}
	if (strcmp(key, "vm.accel") == 0) {
		if (strcmp(value, "auto") && strcmp(value, "kvm") && strcmp(value, "tcg"))
			return -EINVAL;
		return str_copy(c->accel, sizeof(c->accel), value);
	}
	return -ENOENT;
}

int shim_vm_config_parse(const char *path, char *text, struct shim_vm_config *ret, struct err *err)
{
	struct shim_vm_config c = {0};
	unsigned line = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		line++;
		char *hash = strchr(l, '#');
		if (hash)
			*hash = '\0';
		l = str_trim(l);
		if (!*l)
			continue;
		char *eq = strchr(l, '=');
		if (!eq)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: expected KEY = VALUE", path, line);
		*eq = '\0';
		char *key = str_trim(l), *value = str_trim(eq + 1);
		int r = set(&c, key, value);
		if (r == -ENOENT)
			return err_set(err, r, ERR_INVALID_ARGUMENT,
			               "%s: line %u: unknown key \"%.40s\" (vm.kernel, vm.image, "
			               "vm.cpus, vm.memory, vm.accel)",
			               path, line, key);
		if (r < 0)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: %s: bad value \"%.80s\"", path, line, key,
			               value);
	}
	if (!c.kernel[0] || !c.image[0])
		return err_set(err, -EINVAL, ERR_FAILED_PRECONDITION,
		               "%s: vm.kernel and vm.image are required for kin-vm pods", path);
	*ret = c;
	return 0;
}

int shim_vm_config_load(struct shim_vm_config *ret, struct err *err)
{
	const char *path = getenv(SHIM_CONFIG_ENV);
	if (!path || !path[0])
		path = SHIM_CONFIG_DEFAULT;
	_cleanup_free_ char *text = NULL;
	int r = file_read_regular(path, CONFIG_FILE_MAX, &text, NULL);
	if (r < 0)
		return err_set(
		    err, r, r == -ENOENT ? ERR_FAILED_PRECONDITION : ERR_INVALID_ARGUMENT,
		    "%s: %s (kin-vm pods need vm.kernel and vm.image there)", path, strerror(-r));
	return shim_vm_config_parse(path, text, ret, err);
}
