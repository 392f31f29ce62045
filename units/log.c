/* log: each service's output kept on disk, beside cells' rings — one file
 * per service under the log directory (/var/log/kin on a host), appended
 * to as output arrives, rotated at UNITS_LOG_FILE_MAX to NAME.log.1 (the
 * one older file kept), so a service that floods costs at most twice that. */
#include "units/units-int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNITS_LOG_FILE_MAX (4 * 1024 * 1024)

struct log_follow {
	struct units *m;
	char name[UNIT_NAME_MAX + 1];
};

static void log_append(struct units *m, const char *unit, const void *buf, size_t len)
{
	char path[768], old[800];
	if (!m->log_dir[0])
		return;
	if (snprintf(path, sizeof(path), "%s/%s.log", m->log_dir, unit) >= (int)sizeof(path))
		return;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0 && errno == ENOENT && mkdir_p(m->log_dir, 0750) == 0)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return;
	struct stat st;
	if (fstat(fd, &st) == 0 && st.st_size + (off_t)len > UNITS_LOG_FILE_MAX) {
		close(fd);
		snprintf(old, sizeof(old), "%s.1", path);
		rename(path, old);
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (fd < 0)
			return;
	}
	if (write_all(fd, buf, len) < 0)
		log_debug("units: %s: %m", path);
	close(fd);
}

static void on_data(enum exec_stream s, const void *buf, size_t len, void *data)
{
	struct log_follow *f = data;
	(void)s;
	log_append(f->m, f->name, buf, len);
}

static void on_end(void *data)
{
	free(data);
}

static const struct exec_log_ops follow_ops = {.data = on_data, .end = on_end};
static const struct exec_log_ops live_ops = {.data = on_data, .end = on_end, .live = true};

static void attach(struct units *m, const char *unit, const char *cell, const char *exec,
                   const struct exec_log_ops *ops)
{
	if (!m->log_dir[0])
		return;
	struct log_follow *f = calloc(1, sizeof(*f));
	if (!f)
		return;
	f->m = m;
	str_copy(f->name, sizeof(f->name), unit);
	struct exec_follower *h = NULL;
	if (exec_log_follow(m->cells, cell, exec, ops, f, NULL, &h, NULL) < 0)
		free(f);
}

void units_log_attach(struct units *m, const char *unit, const char *cell, const char *exec)
{
	attach(m, unit, cell, exec, &follow_ops);
}

void units_log_reattach(struct units *m, const char *unit, const char *cell, const char *exec)
{
	attach(m, unit, cell, exec, &live_ops);
}
