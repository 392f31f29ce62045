/* attach: kin ctl attached to an executable — `exec attach CELL NAME` and
 * the end of `exec start -i`. Output comes as kin.v1.Exec/Attach's server
 * stream (a connection of its own), input goes as Exec/Stdin calls on the
 * run's connection, one at a time so kin gets it in order, the window size
 * as Exec/Resize on SIGWINCH. One poll loop: the stream, a signalfd, and
 * stdin only while no input waits to be taken (a terminal that takes
 * nothing is asked again after a growing pause, output read meanwhile).
 *
 * A stream kin ended UNAVAILABLE (it re-executed; the terminal went along)
 * is opened again from the positions seen, for up to 5 s.
 *
 * The client's terminal is put in raw mode (keys go to the remote terminal
 * as typed: Ctrl-C is a byte its line discipline turns into SIGINT there)
 * and restored on every way out: the end, a detach, an error, SIGTERM,
 * SIGHUP, SIGINT, SIGQUIT (blocked and read from the signalfd, so none can
 * end kin ctl between the two). The detach key (Ctrl-] unless changed)
 * leaves the process running. The exit code is the process's, as a shell's
 * would be; 128 + N when kin ctl itself was ended by signal N. */
#include "ctl/ctl-int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#define ATTACH_IN_MAX   4096
#define ATTACH_RETRY_MS 64   /* at most, between asks while the terminal takes nothing */
#define ATTACH_AGAIN_MS 5000 /* to attach again after kin re-executed */

static bool attach_signalled; /* the last attach ended by a signal to kin ctl */
static struct termios tty_saved;
static bool tty_is_raw;

static void tty_restore(void)
{
	if (tty_is_raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &tty_saved);
	tty_is_raw = false;
}

static void tty_raw(void)
{
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &tty_saved) < 0)
		return;
	struct termios t = tty_saved;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0) {
		tty_is_raw = true;
		atexit(tty_restore);
	}
}

bool ctl_attach_signalled(void)
{
	return attach_signalled;
}

bool ctl_window_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;
	for (int fd = STDIN_FILENO; fd <= STDOUT_FILENO; fd++)
		if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
			*rows = ws.ws_row;
			*cols = ws.ws_col;
			return true;
		}
	return false;
}

int ctl_detach_key_parse(const char *s)
{
	if (!strcmp(s, "none"))
		return -1;
	if (s[0] == '^' && s[1] && !s[2] && s[1] >= '@' && s[1] <= '_')
		return s[1] - '@'; /* ^] is 0x1d */
	if (s[0] == '^' && s[1] >= 'a' && s[1] <= 'z' && !s[2])
		return s[1] - 'a' + 1;
	return -2;
}

struct attach {
	struct ctl *ctl;
	const struct ctl_attach *opt;
	struct rpc_stream *s;
	uint8_t in[ATTACH_IN_MAX];
	size_t in_len;
	bool in_eof, close_pending, detach_pending;
	bool seen; /* a message came: the attach was taken */
	int retry_ms, send_failures;
	uint64_t pos[2];
};

static void attach_resize(struct attach *a)
{
	unsigned rows, cols;
	if (!a->opt->terminal || !ctl_window_size(&rows, &cols))
		return;
	Kin__V1__ResizeRequest in = KIN__V1__RESIZE_REQUEST__INIT;
	in.cell = (char *)a->opt->cell;
	in.name = (char *)a->opt->name;
	in.rows = rows;
	in.cols = cols;
	struct err st;
	ProtobufCMessage *out = NULL;
	const struct ctl_call c = {.service = "kin.v1.Exec",
	                           .method = "Resize",
	                           .in = &in.base,
	                           .out_desc = &kin__v1__empty__descriptor,
	                           .timeout_ms = a->ctl->timeout_ms,
	                           .quiet = true};
	if (ctl_call(a->ctl, &c, &out, &st) == CTL_OK && out)
		protobuf_c_message_free_unpacked(out, NULL);
}

/* What waits in a->in to kin, once: CTL_OK (taken in part or not at
 * all: sent again later), or the exit code of a failure. An executable
 * that ended takes no more: the input goes, its status comes on the
 * stream. */
static int attach_send(struct attach *a)
{
	Kin__V1__StdinRequest in = KIN__V1__STDIN_REQUEST__INIT;
	in.cell = (char *)a->opt->cell;
	in.name = (char *)a->opt->name;
	in.data.data = a->in;
	in.data.len = a->in_len;
	in.close = a->close_pending;
	struct err st = {0};
	ProtobufCMessage *out = NULL;
	const struct ctl_call c = {.service = "kin.v1.Exec",
	                           .method = "Stdin",
	                           .in = &in.base,
	                           .out_desc = &kin__v1__stdin_response__descriptor,
	                           .timeout_ms = a->ctl->timeout_ms,
	                           .quiet = true};
	int r = ctl_call(a->ctl, &c, &out, &st);
	if (r != CTL_OK) {
		if (r == CTL_RPC_ERROR && st.code == ERR_FAILED_PRECONDITION) {
			a->in_len = 0;
			a->close_pending = false;
			a->in_eof = true;
			return CTL_OK;
		}
		/* kin re-executing (UNAVAILABLE, or the connection gone): the
		 * input waits and goes again, for up to ATTACH_AGAIN_MS. */
		bool later = r == CTL_UNREACHABLE || st.code == ERR_UNAVAILABLE;
		if (later && a->send_failures++ < ATTACH_AGAIN_MS / ATTACH_RETRY_MS) {
			a->retry_ms = ATTACH_RETRY_MS;
			return CTL_OK;
		}
		tty_restore();
		return r == CTL_RPC_ERROR ? ctl_result(a->ctl, 0, &st) : r;
	}
	a->send_failures = 0;
	size_t w = (size_t)((Kin__V1__StdinResponse *)out)->written;
	protobuf_c_message_free_unpacked(out, NULL);
	if (w > a->in_len)
		w = a->in_len;
	memmove(a->in, a->in + w, a->in_len - w);
	a->in_len -= w;
	if (!a->in_len)
		a->close_pending = false;
	a->retry_ms = w                               ? 0
	              : !a->retry_ms                  ? 1
	              : a->retry_ms < ATTACH_RETRY_MS ? a->retry_ms * 2
	                                              : ATTACH_RETRY_MS;
	return CTL_OK;
}

/* Local input: up to the detach key, which detaches once what came before
 * it is taken. */
static void attach_read_input(struct attach *a)
{
	ssize_t n = read(STDIN_FILENO, a->in, sizeof(a->in));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		a->in_eof = true;
		a->close_pending = a->opt->close_at_eof;
		return;
	}
	a->in_len = (size_t)n;
	if (a->opt->detach_key >= 0 && tty_is_raw) {
		uint8_t *k = memchr(a->in, a->opt->detach_key, a->in_len);
		if (k) {
			a->in_len = (size_t)(k - a->in);
			a->detach_pending = true;
		}
	}
}

static int attach_detach(struct attach *a, const char *why)
{
	tty_restore();
	fprintf(stderr,
	        "\r\nkin ctl: %s %s/%s; it goes on (kin ctl exec attach %s %s --from %llu:%llu)\n",
	        why, a->opt->cell, a->opt->name, a->opt->cell, a->opt->name,
	        (unsigned long long)a->pos[0], (unsigned long long)a->pos[1]);
	return CTL_OK;
}

static bool attach_again(struct attach *a);

/* One message of the stream: 1 go on, 0 the end (*code set). */
static int attach_output(struct attach *a, int *code)
{
	ProtobufCMessage *m;
	struct err st;
	int r = rpc_client_stream_next(a->s, &kin__v1__attach_output__descriptor, &m, &st);
	if (r == 0 && st.code == ERR_UNAVAILABLE && attach_again(a))
		return 1;
	if (r < 0 && a->seen) {
		/* Attached, then the connection went: a kin on the way cuts a
		 * client that does not read its output (no answer is sent then). */
		tty_restore();
		fprintf(stderr,
		        "kin ctl: exec %s/%s: the connection was closed (%s): a client that does "
		        "not read is cut off (attach again: --from %llu:%llu)\n",
		        a->opt->cell, a->opt->name, strerror(-r), (unsigned long long)a->pos[0],
		        (unsigned long long)a->pos[1]);
		*code = CTL_RPC_ERROR;
		return 0;
	}
	if (r <= 0) {
		tty_restore();
		*code = ctl_result(a->ctl, r, &st);
		if (*code == CTL_OK) { /* ended with no status: kin stopped the stream */
			fprintf(stderr,
			        "kin ctl: the attached stream ended without an exit status\n");
			*code = CTL_RPC_ERROR;
		}
		return 0;
	}
	const Kin__V1__AttachOutput *o = (const Kin__V1__AttachOutput *)m;
	int s = o->stream == KIN__V1__LOG_STREAM__STDERR;
	a->seen = true;
	if (o->data.len) /* our own stdout gone: what comes is dropped */
		(void)write_all(s ? STDERR_FILENO : STDOUT_FILENO, o->data.data, o->data.len);
	if (o->position)
		a->pos[s] = o->position;
	if (o->exit) {
		tty_restore();
		*code = ctl_exit_status(o->exit);
	}
	bool end = o->exit != NULL;
	protobuf_c_message_free_unpacked(m, NULL);
	return !end;
}

static int attach_signal(struct attach *a, int sfd, int *code)
{
	struct signalfd_siginfo si;
	if (read(sfd, &si, sizeof(si)) != sizeof(si))
		return 1;
	if (si.ssi_signo == SIGWINCH) {
		attach_resize(a);
		return 1;
	}
	char why[64];
	snprintf(why, sizeof(why), "%s: detached from", strsignal((int)si.ssi_signo));
	attach_detach(a, why);
	*code = 128 + (int)si.ssi_signo;
	attach_signalled = true;
	return 0;
}

static int attach_loop(struct attach *a, int sfd)
{
	int code = CTL_OK;
	for (;;) {
		bool want_in = !a->in_len && !a->in_eof && !a->detach_pending && !a->close_pending;
		struct pollfd p[3] = {{.fd = rpc_client_stream_fd(a->s), .events = POLLIN},
		                      {.fd = sfd, .events = POLLIN},
		                      {.fd = want_in ? STDIN_FILENO : -1, .events = POLLIN}};
		bool work = a->in_len || a->close_pending;
		int n = poll(p, 3, work ? a->retry_ms : -1);
		if (n < 0 && errno != EINTR)
			return tty_restore(), CTL_RPC_ERROR;
		if (p[1].revents && !attach_signal(a, sfd, &code))
			return code;
		if (p[0].revents && !attach_output(a, &code))
			return code;
		if (p[2].revents)
			attach_read_input(a);
		if ((a->in_len || a->close_pending) && (code = attach_send(a)) != CTL_OK)
			return code;
		if (a->detach_pending && !a->in_len)
			return attach_detach(a, "detached from");
	}
}

/* The stream, from where asked the first time, from what was seen since
 * (again: after kin re-executed, which ends streams UNAVAILABLE). */
static int attach_open(struct attach *a, bool again)
{
	Kin__V1__AttachRequest in = KIN__V1__ATTACH_REQUEST__INIT;
	unsigned rows = 0, cols = 0;
	int fd;
	in.cell = (char *)a->opt->cell;
	in.name = (char *)a->opt->name;
	in.resume = again || a->opt->resume;
	in.stdout_from = a->pos[0];
	in.stderr_from = a->pos[1];
	in.require_terminal = a->opt->require_terminal;
	if (a->opt->terminal && ctl_window_size(&rows, &cols)) {
		in.rows = rows;
		in.cols = cols;
	}
	int r = ctl_dial(a->ctl, &fd);
	if (r == 0)
		r = rpc_client_stream_open_fd(fd, "kin.v1.Exec", "Attach", &in.base, a->ctl->md,
		                              a->ctl->n_md, &a->s);
	return r;
}

/* kin went away for a moment (a re-exec): attach again where we were,
 * for up to ATTACH_AGAIN_MS. */
static bool attach_again(struct attach *a)
{
	rpc_client_stream_free(a->s);
	a->s = NULL;
	for (int waited = 0; waited < ATTACH_AGAIN_MS; waited += 100) {
		if (attach_open(a, true) == 0)
			return true;
		poll(NULL, 0, 100);
	}
	return false;
}

int ctl_attach(struct ctl *ctl, const struct ctl_attach *opt)
{
	struct attach a = {.ctl = ctl, .opt = opt};
	if (opt->resume)
		a.pos[0] = opt->from[0], a.pos[1] = opt->from[1];
	/* Signals first: from here on none ends kin ctl with its terminal raw. */
	sigset_t mask;
	sigemptyset(&mask);
	int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGWINCH};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&mask, sigs[i]);
	signal(SIGPIPE, SIG_IGN);
	int sfd = -1;
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
	    (sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		fprintf(stderr, "kin ctl: %s: signals: %s\n", ctl->what, strerror(errno));
		return CTL_RPC_ERROR;
	}
	int r = attach_open(&a, false);
	if (r < 0) {
		close(sfd);
		return ctl_result(ctl, r, NULL);
	}
	if (opt->terminal)
		tty_raw();
	int code = attach_loop(&a, sfd);
	tty_restore();
	rpc_client_stream_free(a.s);
	close(sfd);
	return code;
}
