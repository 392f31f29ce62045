/* Fuzz target: the kernel command line parser (kin.* options), fed the raw
 * bytes of a /proc/cmdline. */
#include "init/init.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void diag(void *userdata, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	(*(int *)userdata)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct init_config cfg;
	char *s = malloc(size + 1);
	int n = 0;
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	init_config_defaults(&cfg);
	int problems = init_cmdline_parse(s, &cfg, diag, &n);
	if (problems != n || cfg.grace_ms > INIT_GRACE_MAX_MS ||
	    strlen(cfg.hostname) > INIT_HOSTNAME_MAX || (cfg.share[0] && cfg.share[0] != '/'))
		__builtin_trap();
	free(s);
	return 0;
}
