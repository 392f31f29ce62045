/* log: leveled messages to stderr, or to /dev/kmsg while PID 1 has no
 * console. One write(2) per message so lines from several processes do not
 * interleave mid-line. */
#include "lib.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static enum log_level log_level = LOG_INFO_;
static int log_fd = -1; /* kmsg fd when the target is kmsg */
static const char *const log_ident = "kin";

void log_set_level(enum log_level level)
{
	log_level = level;
}
enum log_level log_get_level(void)
{
	return log_level;
}

const char *log_level_name(enum log_level l)
{
	return l <= LOG_ERR_    ? "error"
	       : l == LOG_WARN_ ? "warn"
	       : l == LOG_INFO_ ? "info"
	                        : "debug";
}

int log_parse_level(const char *s, enum log_level *ret_level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
	    {"error", LOG_ERR_},    {"err", LOG_ERR_},   {"warn", LOG_WARN_},
	    {"warning", LOG_WARN_}, {"info", LOG_INFO_}, {"debug", LOG_DEBUG_},
	};
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcasecmp(s, names[i].name) == 0) {
			*ret_level = names[i].level;
			return 0;
		}
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0') {
		int n = s[0] - '0';
		*ret_level = n <= 3   ? LOG_ERR_
		             : n <= 5 ? LOG_WARN_
		             : n == 6 ? LOG_INFO_
		                      : LOG_DEBUG_;
		return 0;
	}
	return -EINVAL;
}

void log_set_target(enum log_target target)
{
	if (log_fd >= 0) {
		close(log_fd);
		log_fd = -1;
	}
	if (target == LOG_TARGET_KMSG)
		log_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const tags[8] = {"error",   "error",  "error", "error",
	                                    "warning", "notice", "info",  "debug"};
	char buf[1024];
	int n, saved = errno;

	if (level > log_level)
		return;
	if (log_fd >= 0)
		n = snprintf(buf, sizeof(buf), "<%d>%s[%d]: ", (int)level, log_ident,
		             (int)getpid());
	else if (log_level >= LOG_DEBUG_) /* timestamps when looking closely */
		n = snprintf(buf, sizeof(buf), "%s[%d]: %.6f %s: ", log_ident, (int)getpid(),
		             (double)now_monotonic_ns() / 1e9, tags[level & 7]);
	else
		n = snprintf(buf, sizeof(buf), "%s[%d]: %s: ", log_ident, (int)getpid(),
		             tags[level & 7]);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (log_fd < 0 || write(log_fd, buf, (size_t)n) < 0)
		(void)!write(STDERR_FILENO, buf, (size_t)n);
	errno = saved;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
