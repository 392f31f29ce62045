/* spawn: the one way kin starts a process of its own (lib/child.c's
 * child_spawn, cells' executables, zone kins). clone3 with a pidfd,
 * optionally straight into a cgroup and into new namespaces, and a report
 * pipe: the child writes (step, errno) when a setup step fails, and the
 * pipe's write end is CLOEXEC, so EOF means the child reached execve. The
 * parent may read the report at once (blocking) or from its loop. Plus
 * what every such child does the same way: signal reset, the failure
 * report, a minimal /dev. Included by lib/lib.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h> /* before P_PIDFD: newer glibc declares it in idtype_t */

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct spawn_opts {
	uint64_t ns_flags;    /* CLONE_NEW* to create with the child */
	int cgroup_fd;        /* >= 0: CLONE_INTO_CGROUP (an O_PATH directory fd) */
	bool report_nonblock; /* the parent's end of the report pipe non-blocking */
};

struct spawn_proc {
	pid_t pid;     /* 0 in the child */
	int pidfd;     /* the parent's; -1 in the child */
	int report_fd; /* parent: the read end; child: the write end */
};

/* clone3. Returns 1 in the parent (ret filled in), 0 in the child (ret's
 * report_fd is its end, to hand to spawn_child_fail), or -errno in the
 * parent when no child was made (nothing left open). */
int spawn_clone(const struct spawn_opts *o, struct spawn_proc *ret);

/* The child's side. Every signal back to its default action; the mask
 * kept, emptied, or filled (a zone kin's signals stay pending through
 * exec until its signalfd reads them). */
enum spawn_mask { SPAWN_MASK_KEEP, SPAWN_MASK_EMPTY, SPAWN_MASK_FULL };
void spawn_signals_reset(enum spawn_mask mask);
/* Reports that setup step `step` failed with errno err (0: EIO), exits 127. */
_Noreturn void spawn_child_fail(int report_fd, int step, int err);
/* Makes the minimal /dev at dir ("dev" relative to a new root, or
 * ROOT/dev): a small tmpfs with null, zero, full, random, urandom and tty
 * bound from ours (works in a user namespace, where mknod does not), the
 * fd/stdin/stdout/stderr links, and — not fatal where refused — a private
 * devpts with its ptmx link and a tmpfs /dev/shm. -errno (errno set too). */
int spawn_make_dev(const char *dir);

/* The parent's side. Reads the report: 1 the child exec'd (EOF), 0
 * nothing yet (a non-blocking fd), -errno the child's failure with the step
 * in *ret_step (-EIO and step -1: it died mid-report). */
int spawn_report_read(int report_fd, int *ret_step);
/* SIGKILL through the pidfd and reap; for a child not tracked yet (or one
 * that has already exited: the kill is then a no-op). */
void spawn_kill_and_reap(int pidfd);

/* The one pidfd shim: pidfd_send_signal(2) and waitid(P_PIDFD). Both
 * return 0 or -errno; si is zeroed first, so with WNOHANG si->si_pid == 0
 * means "not exited yet". */
int spawn_pidfd_signal(int pidfd, int sig);
int spawn_pidfd_wait(int pidfd, siginfo_t *si, int options);
