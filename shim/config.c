/* config: what a kin-vm shim boots its pods with, from a small file of
 * "KEY = VALUE" lines ('#' starts a comment): vm.kernel and vm.image (a
 * kernel and a `kin image build` initramfs, both required), vm.cpus,
 * vm.memory (512M, 1G or MiB) and vm.accel (auto, kvm, tcg), read through
 * vm/'s one option table. The file is
 * the administrator's, yet it is checked like any input: an unknown key, a
 * bad value or an overlong line is refused with the line named. */
#include "shim/shim.h"

#include <stdio.h>
#include <string.h>

#define CONFIG_FILE_MAX (64 * 1024)

/* KEY's value through vm/'s option table (vm.NAME: the options shim.conf
 * takes); a path must be absolute. -ENOENT for a key it does not know. */
static int set(struct shim_vm_config *c, const char *key, const char *value)
{
	int id = str_startswith(key, "vm.") ? vm_option_find(key + 3, VM_OPT_FOR_CONF) : -ENOENT;
	if (id < 0)
		return -ENOENT;
	if ((id == VM_OPT_KERNEL || id == VM_OPT_IMAGE) && value[0] != '/')
		return -EINVAL;
	return vm_option_set((enum vm_opt_id)id, &c->spec, value, NULL);
}

/* "vm.kernel, vm.image, ...": the keys, for an unknown one's error. */
static void keys(char *buf, size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < VM_OPT_N && at < size; i++)
		if (vm_options[i].doors & VM_OPT_FOR_CONF)
			at += (size_t)snprintf(buf + at, size - at, "%svm.%s", at ? ", " : "",
			                       vm_options[i].name);
}

int shim_vm_config_parse(const char *path, char *text, struct shim_vm_config *ret, struct err *err)
{
	struct shim_vm_config c;
	unsigned line = 0;
	vm_spec_defaults(&c.spec);
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
		if (r == -ENOENT) {
			char known[160];
			keys(known, sizeof(known));
			return err_set(err, r, ERR_INVALID_ARGUMENT,
			               "%s: line %u: unknown key \"%.40s\" (%s)", path, line, key,
			               known);
		}
		if (r < 0)
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: line %u: %s: bad value \"%.80s\"", path, line, key,
			               value);
	}
	if (!c.spec.kernel[0] || !c.spec.image[0])
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
