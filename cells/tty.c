/* tty: an executable's terminal. Each run of a spec with terminal gets a
 * new pty from /dev/ptmx: the slave (opened through the master with
 * TIOCGPTPEER, so no path in any mount namespace is looked up) becomes the
 * child's stdin, stdout and stderr and, after its setsid, its controlling
 * terminal (spawn.c); the master stays in kin, non-blocking, read into the
 * stdout ring as a pipe would be (output.c) and written as stdin through a
 * dup of it. A master kin closes hangs the terminal up (SIGHUP to the
 * session), so it goes to the keeper and along a re-exec as the pipes do. */
#include "cells/cells-int.h"

#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define TTY_ROWS_DEFAULT 24
#define TTY_COLS_DEFAULT 80

int exec_tty_open(struct exec *e, int *ret_master, int *ret_slave, struct err *err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (master < 0)
		return err_set_errno(err, -errno, "exec \"%s\": terminal: /dev/ptmx: %m", e->label);
	int unlock = 0;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return err_set_errno(err, -errno, "exec \"%s\": terminal: unlock: %m", e->label);
	if (!e->rows || !e->cols) {
		e->rows = e->spec->rows ? e->spec->rows : TTY_ROWS_DEFAULT;
		e->cols = e->spec->cols ? e->spec->cols : TTY_COLS_DEFAULT;
	}
	struct winsize ws = {.ws_row = e->rows, .ws_col = e->cols};
	if (ioctl(master, TIOCSWINSZ, &ws) < 0)
		return err_set_errno(err, -errno, "exec \"%s\": terminal: window size: %m",
		                     e->label);
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return err_set_errno(err, -errno, "exec \"%s\": terminal: slave: %m", e->label);
	/* Its user owns it, as login does, unless ids are another namespace's. */
	if (!(e->spec->namespaces & EXEC_NS_USER) && e->spec->uid &&
	    fchown(slave, e->spec->uid, -1) < 0)
		log_debug("exec \"%s\": terminal: chown: %s", e->label, strerror(errno));
	*ret_master = TAKE_FD(master);
	*ret_slave = slave;
	return 0;
}

static int tty_get(struct cells *c, const char *cell, const char *name, struct exec **ret,
                   struct err *err)
{
	int r = exec_get(c, cell, name, ret, err);
	if (r < 0)
		return r;
	if (!(*ret)->spec->terminal)
		return err_set(err, -ENOTTY, ERR_FAILED_PRECONDITION,
		               "exec \"%s\" has no terminal (started without one)", (*ret)->label);
	return 0;
}

int exec_has_terminal(struct cells *c, const char *cell, const char *name, struct err *err)
{
	struct exec *e;
	int r = exec_get(c, cell, name, &e, err);
	return r < 0 ? r : e->spec->terminal;
}

int exec_resize(struct cells *c, const char *cell, const char *name, unsigned rows, unsigned cols,
                struct err *err)
{
	struct exec *e;
	int r = tty_get(c, cell, name, &e, err);
	if (r < 0)
		return r;
	if (!rows || !cols || rows > EXEC_TTY_SIZE_MAX || cols > EXEC_TTY_SIZE_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "exec \"%s\": window size %ux%u: rows and columns are 1-%d",
		               e->label, rows, cols, EXEC_TTY_SIZE_MAX);
	e->rows = (uint16_t)rows;
	e->cols = (uint16_t)cols;
	int fd = e->out[EXEC_STDOUT].src.fd;
	if (!e->token || fd < 0)
		return err_set(err, -ESRCH, ERR_FAILED_PRECONDITION,
		               "exec \"%s\" is not running (its terminal is closed)", e->label);
	struct winsize ws = {.ws_row = e->rows, .ws_col = e->cols};
	if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
		return err_set_errno(err, -errno, "exec \"%s\": window size: %m", e->label);
	return 0;
}

/* ^D at the start of a line: what a terminal's reader takes as the end. */
int exec_tty_eof(struct exec *e)
{
	struct termios t;
	int fd = e->stdin_fd;
	if (fd < 0)
		return 0;
	char eof = tcgetattr(fd, &t) == 0 && t.c_cc[VEOF] ? (char)t.c_cc[VEOF] : 4;
	return write(fd, &eof, 1) < 0 ? -errno : 0;
}
