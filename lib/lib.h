/* lib: the few helpers every kin module needs — ownership macros, logging,
 * string parsing, small fd and file utilities, and the epoll event loop.
 * Nothing here knows about roles, cells, RPC or VMs. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "lib/err.h"
#include "lib/list.h"
#include "lib/spawn.h"
#include "lib/buf.h"

/* ---- ownership ------------------------------------------------------- */

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

/* kin's version (the build may set it), what every role reports. */
#ifndef KIN_VERSION
#define KIN_VERSION "0.1.0"
#endif

#define _cleanup_(f)    __attribute__((cleanup(f)))
#define _cleanup_free_  _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _unused_        __attribute__((unused))
#define _printf_(a, b)  __attribute__((format(printf, a, b)))
#define _noreturn_      __attribute__((noreturn))

/* Hand ownership on: returns the value and clears the variable so its
 * cleanup handler does nothing. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p = (p);                                                            \
		(p) = NULL;                                                                        \
		_p;                                                                                \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_fd;                                                                               \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define STRLEN(s)     (sizeof(s) - 1)

/* ---- logging ----------------------------------------------------------- */

enum log_level { LOG_ERR_ = 3, LOG_WARN_ = 4, LOG_INFO_ = 6, LOG_DEBUG_ = 7 };

enum log_target {
	LOG_TARGET_STDERR, /* fd 2, plain lines */
	LOG_TARGET_KMSG,   /* /dev/kmsg with <prio> prefixes */
};

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error|warn|info|debug" (and the numeric syslog levels 0-7). */
int log_parse_level(const char *s, enum log_level *ret_level);
/* The name log_parse_level reads back: "error", "warn", "info", "debug". */
const char *log_level_name(enum log_level l);
/* Opens /dev/kmsg; falls back to stderr if it cannot. */
void log_set_target(enum log_target target);
void log_msg(enum log_level level, const char *fmt, ...) _printf_(2, 3);
void log_vmsg(enum log_level level, const char *fmt, va_list ap);

#define log_error(...) log_msg(LOG_ERR_, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN_, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO_, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_get_level() >= LOG_DEBUG_)                                                 \
			log_msg(LOG_DEBUG_, __VA_ARGS__);                                          \
	} while (0)

/* ---- strings ----------------------------------------------------------- */

bool str_startswith(const char *s, const char *prefix);
/* s without leading and trailing blanks (spaces, tabs, CRs and newlines;
 * cut in place): a config line's word, a one-line file's value. */
char *str_trim(char *s);
/* "HOST:PORT" (one ':') or "[HOST]:PORT" (an IPv6 literal) into host
 * (brackets taken off) and a port 1-65535. -EINVAL if malformed or host
 * does not fit. *ret_bracketed: whether it came in brackets. */
int str_hostport_split(const char *s, char *host, size_t size, uint16_t *ret_port,
                       bool *ret_bracketed);
/* Strict decimal parsers: the whole string, no sign, no spaces, in range. */
int str_to_u64(const char *s, uint64_t max, uint64_t *ret);
/* The value of a hex digit (either case), -1 for another character. */
int hex_digit(char c);
int str_to_u32(const char *s, uint32_t *ret);
/* "1500ms", "10s", "2m", or a bare number of seconds, into milliseconds. */
int str_to_duration_ms(const char *s, uint64_t max_ms, uint64_t *ret_ms);
/* A size: a number with an optional binary suffix K, M, G or T (either
 * case: 512M = 512 MiB), a bare number counting in bare_unit bytes (1 for
 * bytes, 1 << 20 for flags that count MiB). At most max bytes; -EINVAL
 * when malformed, -ERANGE over max. */
int str_to_size(const char *s, uint64_t bare_unit, uint64_t max, uint64_t *ret_bytes);
/* Copies at most size-1 bytes and always terminates; -ENAMETOOLONG if cut. */
int str_copy(char *dst, size_t size, const char *src);
/* A valid hostname per RFC 1123 labels, at most 64 bytes. */
bool str_is_hostname(const char *s);

/* ---- files and fds ----------------------------------------------------- */

int fd_set_nonblock(int fd, bool on);
int fd_set_cloexec(int fd, bool on);
/* Raises the soft limit of open fds toward want (never past the hard
 * limit, never lowered); the soft limit asked for (as it stood when it was
 * not raised), 0 when it cannot be read. */
unsigned long fd_limit_raise(unsigned long want);
/* Reads a whole small file (at most max bytes) into a NUL-terminated buffer. */
int file_read_small(const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* file_read_small of a path someone else names (a client, a bundle):
 * opened without blocking and read only if it is a regular file (-EINVAL
 * otherwise), so a FIFO or a device there cannot stall the caller. */
int file_read_regular(const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* Writes s to an existing file (sysfs, cgroupfs, proc), one write(2). */
int file_write_str(const char *path, const char *s);
/* Writes s as the whole of path, made (mode) or truncated; no symlink followed. */
int file_create_str(const char *path, const char *s, mode_t mode);
/* mkdir -p with the given mode for the missing parts. */
int mkdir_p(const char *path, mode_t mode);
/* A mountpoint sits on another device than its parent directory (a bind
 * mount of the same filesystem is not seen). */
bool path_is_mountpoint(const char *path);
/* The first cgroup2 mount of /proc/self/mountinfo: where it is mounted and
 * the cgroup it shows as its root. -ENOENT: none. */
int cgroup2_find_mount(char *buf, size_t size, char *mount_root, size_t root_size);
/* Reads a non-blocking inotify fd until it is empty, calling fn(wd, mask,
 * data) for each event. */
void inotify_drain(int fd, void (*fn)(int wd, uint32_t mask, void *data), void *data);
/* Enables, as far as each allows, every controller it has in the subtree
 * of each directory from mount down to the parent of mount/rel, so that
 * rel gets them (as runtimes do along a cgroupsPath). */
int cgroup2_enable_along(const char *mount, const char *rel);
/* Opens the directory path below dirfd one component at a time, never
 * following a symlink (one on the way, or a non-directory, is -ELOOP;
 * ".." is -EINVAL), making missing ones with create_mode (0: none). The
 * walk for anything written into a tree someone else controls: a layer,
 * a container's root. *ret_fd is a new fd (O_DIRECTORY). */
int dir_open_beneath(int dirfd, const char *path, mode_t create_mode, int *ret_fd);
/* rm -rf of name under dirfd (AT_FDCWD: a path), never following a
 * symlink; blocking (a child's work for a large tree). depth: 0. */
int dir_remove_tree(int dirfd, const char *name, unsigned depth);
/* A sealed memfd (name) holding a copy of the file at path, O_CLOEXEC:
 * a binary that nothing can change. */
int file_sealed_copy(const char *path, const char *name, int *ret_fd);
/* A file as it was: its inode and the times any change moves. */
struct file_id {
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
};
/* The running binary as a sealed memfd (file_sealed_copy of
 * /proc/self/exe), made once and shared: a zone's kin runs from it, a
 * re-exec hands it to the next kin to fall back to. *ret_fd stays the
 * process's (dup it to keep it); *ret_id (may be NULL) is what it was
 * made from. -errno when it cannot be made. */
int self_copy(int *ret_fd, struct file_id *ret_id);
/* Whether there is one now; let go of it (dups made of it live on): 12 MB
 * of memory nobody may need. */
bool self_copy_have(void);
void self_copy_drop(void);
/* The same copy made by a child, so the loop does not wait for 12 MB
 * (a re-exec's probe makes it): self_copy_begin returns 1 with j ready
 * (the binary open, an empty memfd) when there is no copy yet, 0 when
 * there is one, or -errno; the child calls self_copy_fill (-errno); the
 * parent, once the child ended, self_copy_end: the copy checked whole
 * and sealed is the process's from now on (-EIO when the child did not
 * finish; then nothing is kept). j's fds are closed either way. */
struct self_copy_job {
	int src, memfd;
	struct file_id id;
};
int self_copy_begin(struct self_copy_job *j);
int self_copy_fill(const struct self_copy_job *j);
int self_copy_end(struct self_copy_job *j);
/* The next kin's side: fd (a copy of the file `id`, handed along a
 * re-exec) becomes this process's self_copy if it has none and runs that
 * very file, unchanged — a re-exec of the same binary copies it no more.
 * True when taken (then the copy owns fd). */
bool self_copy_take(int fd, const struct file_id *id);
/* Writes all of buf, retrying on EINTR and short writes (blocking fds). */
int write_all(int fd, const void *buf, size_t len);
/* One message on a unix socket with n (<= SOCK_FDS_MAX) fds in
 * SCM_RIGHTS; flags as sendmsg's (MSG_NOSIGNAL always). */
#define SOCK_FDS_MAX 64
int sock_send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n, int flags);
/* One message: its bytes into buf (the length, 0 at EOF, -errno), the fds
 * of every SCM_RIGHTS header into fds (O_CLOEXEC; past max, closed), their
 * count in *ret_n. */
ssize_t sock_recv_fds(int sock, void *buf, size_t size, int *fds, size_t max, size_t *ret_n,
                      int flags);
/* An int socket option at SOL_SOCKET (SO_TYPE, SO_ACCEPTCONN), or -errno:
 * what an fd handed over is checked by before it is taken for a socket. */
int sock_opt(int fd, int opt);
/* A unix stream socket connected to path, O_CLOEXEC (flags: SOCK_NONBLOCK
 * too, then a full backlog answers -EAGAIN), or -errno. */
int sock_unix_connect(const char *path, int flags);
/* The inode of what fd is open on (a pipe's, to find it again among fds
 * handed over), 0 for fd < 0 or when fstat fails. Every pty master opened
 * through /dev/ptmx has that node's inode: one is told by its pty's number
 * instead (FD_INO_PTY | N), unique in a devpts instance. */
#define FD_INO_PTY (UINT64_C(0x7074790000000000))
uint64_t fd_ino(int fd);
/* Whether fd is a pty master. */
bool fd_is_pty_master(int fd);

/* ---- time -------------------------------------------------------------- */

uint64_t now_monotonic_ns(void);

/* ---- event loop -------------------------------------------------------- */

/* One epoll set, edge of every module: a source is an fd plus a callback.
 * The loop owns no fds; whoever adds a source closes it after removing it. */
struct ev_loop;
struct ev_source;
typedef void (*ev_handler_fn)(struct ev_source *src, uint32_t events);

struct ev_source {
	int fd;
	ev_handler_fn fn;
	void *data;
	struct list_node deferred; /* the loop's: an ev_add not made yet */
	uint32_t deferred_events;
};

int ev_loop_new(struct ev_loop **ret_loop);
void ev_loop_free(struct ev_loop *loop);
int ev_add(struct ev_loop *loop, struct ev_source *src, uint32_t events);
/* While on, ev_add only queues the source (a restore's thousands of pipes
 * and pidfds: what is already there waits in the kernel, nothing is
 * lost): ev_run_once adds the queue a slice at a time between its turns,
 * so the loop answers meanwhile. ev_mod, ev_del and ev_close know a
 * queued source. An add that fails later is logged. */
void ev_defer(struct ev_loop *loop, bool on);
/* The epoll fd, to hand along a re-exec (ev_retire). */
int ev_loop_fd(const struct ev_loop *loop);
/* A previous loop's epoll set, handed along a re-exec: closing it would
 * take out every registration of the fds that went along at once (~1 us
 * each, thousands). Instead they are taken out in slices between turns
 * (fds: a bitmap of nbits, the fds that may be in it), then it is closed.
 * Takes old_epfd (closed at once when one is retiring already). */
int ev_retire(struct ev_loop *loop, int old_epfd, const uint64_t *fds, size_t nbits);
int ev_mod(struct ev_loop *loop, struct ev_source *src, uint32_t events);
int ev_del(struct ev_loop *loop, struct ev_source *src);
/* A source's end: out of the loop (loop NULL: never added, or the loop is
 * gone), its fd closed, fd -1; nothing when fd is already -1. */
void ev_close(struct ev_loop *loop, struct ev_source *src);
/* Waits up to timeout_ms (-1: forever) and dispatches ready sources.
 * Returns the number dispatched, or -errno (never -EINTR). */
int ev_run_once(struct ev_loop *loop, int timeout_ms);

/* ---- children ---------------------------------------------------------- */

/* Every child kin starts is tracked by a pidfd in the loop; every zombie,
 * tracked or an orphan reparented to us, is reaped by child_reap(). Tracked
 * children are reaped through their pidfd, so an exit is never lost to the
 * orphan sweep and a recycled PID is never signalled. */
#include <signal.h>

struct child_table;
struct child;
/* Runs after the child is reaped and forgotten: its pidfd is closed. */
typedef void (*child_exit_fn)(const siginfo_t *si, void *data);

int child_table_new(struct ev_loop *loop, struct child_table **ret);
void child_table_free(struct child_table *t);
/* fork+exec argv (PATH searched) with an empty signal mask. An exec failure
 * returns its -errno here, with the failed child already reaped. t NULL:
 * not tracked (a child meant to outlive kin; the orphan sweep reaps it). */
int child_spawn(struct child_table *t, char *const argv[], child_exit_fn on_exit, void *data,
                struct child **ret);
/* Tracks a child started elsewhere (clone3 into a cgroup); takes pidfd. */
int child_track(struct child_table *t, pid_t pid, int pidfd, child_exit_fn on_exit, void *data,
                struct child **ret);
/* Tracks a child kin did not start in this image: one a previous kin
 * (before a re-exec) started, still unreaped. -ECHILD when pid is not a
 * child of ours, -EEXIST when it is tracked already. on_exit may be NULL
 * (reaped, nobody told). */
int child_adopt(struct child_table *t, pid_t pid, child_exit_fn on_exit, void *data,
                struct child **ret);
/* Watches a process that is not kin's child (one a kin that was killed
 * started; takes its pidfd): its end is seen but its status is not, so
 * on_exit gets si_code 0 (child_status_known says so). It is signalled
 * through the pidfd like any child, and counted among them. */
int child_watch(struct child_table *t, pid_t pid, int pidfd, child_exit_fn on_exit, void *data,
                struct child **ret);
/* After a re-exec: tracks again what the previous image tracked, by the
 * pidfd it handed over (child_pidfd, kept across execve) — no check and
 * no new pidfd, as child_adopt and child_watch would do for each of
 * thousands. Takes pidfd; -EEXIST when pid is tracked already. */
int child_retrack(struct child_table *t, pid_t pid, int pidfd, bool watched, child_exit_fn on_exit,
                  void *data, struct child **ret);
int child_pidfd(const struct child *c);
bool child_watched(const struct child *c);
/* False for the end of a watched process, whose status nobody told kin. */
bool child_status_known(const siginfo_t *si);
pid_t child_pid(const struct child *c);
int child_signal(struct child *c, int sig);
/* Signals every tracked child. */
void child_signal_all(struct child_table *t, int sig);
/* The parent of pid as /proc/PID/stat says, or -errno. */
int proc_ppid(pid_t pid);
/* Signals every descendant of root, found through /proc (processes
 * reparented to root, a subreaper, from anywhere below included);
 * returns how many were signalled. */
size_t child_signal_descendants(pid_t root, int sig);
/* Reaps every zombie child; returns how many. */
size_t child_reap(struct child_table *t);
size_t child_count(const struct child_table *t);
uint64_t child_orphans_reaped(const struct child_table *t);
/* True when the process has no children at all (tracked or not). */
bool child_none_left(void);
/* Shell-style status: the exit code, or 128 + the signal that killed it. */
int child_status_code(const siginfo_t *si);

/* fn(arg, err) run in a child, a fork of kin, for a step that can hang
 * and must not hang PID 1: a stat() of a path a client named, on a mount
 * that may be dead. done gets fn's return and err, from the loop, never
 * from inside child_call; or -ETIMEDOUT (DEADLINE_EXCEEDED, "WHAT: no
 * answer within N ms") once timeout_ms passed, the child killed. fn sees
 * kin's memory as it was at the call and only looks: what it changes is
 * lost. *ret (ret may be NULL) is valid until done is called: to cancel,
 * done then never called. The call frees itself. */
struct child_call;
typedef int (*child_call_fn)(void *arg, struct err *err);
typedef void (*child_call_done_fn)(int result, const struct err *err, void *data);
int child_call(struct child_table *t, child_call_fn fn, void *arg, unsigned timeout_ms,
               const char *what, child_call_done_fn done, void *data, struct child_call **ret);
void child_call_cancel(struct child_call *c);

/* ---- names --------------------------------------------------------------- */

#define NAME_MAX_LEN 64
/* An object name clients give (cell, VM, zone, executable): [A-Za-z0-9_.-],
 * 1..64 bytes, never "." or "..". Safe as a path element. */
bool name_is_valid(const char *s);

/* mount(8)'s flag options ("ro", "nosuid", "relatime", "bind", ...): true,
 * with the bits to set and clear, when name is one; false for the
 * filesystem's own data options. */
bool mount_option_flag(const char *name, unsigned long *ret_set, unsigned long *ret_clear);

/* ---- passwd and group files (lib/passwd.c) ---------------------------------- */

/* Field f (0-based) of a colon-separated line into buf; false when the
 * line has no such field or it does not fit. */
bool passwd_field(const char *line, unsigned f, char *buf, size_t size);
/* The line of a passwd or group text whose name (field 0) or, with by_id,
 * id (field 2) is key: its id in *ret_id, field 3 (passwd: the primary
 * gid) in *ret_f3 when asked, its name in ret_name. */
bool passwd_lookup(const char *text, const char *key, bool by_id, uint32_t *ret_id,
                   uint32_t *ret_f3, char *ret_name, size_t name_size);
/* The groups of a group text whose member list names user (gid left out). */
void passwd_supplementary(const char *group, const char *user, uint32_t gid, uint32_t *groups,
                          size_t max, size_t *ret_n);
