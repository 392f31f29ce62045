/* The re-exec handover format (lib/state.h) and an executable's spec in it
 * (cells/state_spec.c): round trips, unknown fields skipped, malformed
 * lengths refused, kept fds made O_CLOEXEC again or closed. */
#include "unit.h"
#include "lib/lib.h"
#include "lib/state.h"
#include "cells/cells-int.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

static int cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);
	return f < 0 ? -1 : !!(f & FD_CLOEXEC);
}

TEST(state_round_trip_and_unknown_fields)
{
	struct state_w w;
	state_w_init(&w);
	state_put_u64(&w, 1, 42);
	size_t at = state_open(&w, 2);
	state_put_str(&w, 1, "hello");
	state_put_u64(&w, 999, 7); /* a newer kin's field */
	state_put_i64(&w, 3, -5);
	state_close(&w, at);
	state_put_str(&w, 4, NULL); /* nothing written */
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	CHECK_EQ(cloexec(fd), 0); /* kept for the exec */
	struct state_in in;
	uint32_t format = 0;
	CHECK_EQ(state_in_open(fd, &in, &format), 0);
	CHECK_EQ(format, STATE_FORMAT);
	struct state_r r = in.top, sub;
	struct state_field f, g;
	uint64_t v = 0;
	int64_t iv = 0;
	char buf[16];
	size_t seen = 0;
	while (state_next(&r, &f) > 0) {
		if (f.tag == 1) {
			CHECK(state_get_u64(&f, &v) == 0 && v == 42);
			seen++;
		}
		if (f.tag == 2) {
			state_get_record(&f, &sub);
			while (state_next(&sub, &g) > 0) {
				if (g.tag == 1) {
					CHECK(state_get_str(&g, buf, sizeof(buf)) == 0);
					seen++;
				}
				if (g.tag == 3) {
					CHECK(state_get_i64(&g, &iv) == 0 && iv == -5);
					seen++;
				}
			}
		}
		CHECK(f.tag != 4);
	}
	CHECK_EQ(seen, 3);
	CHECK_STR(buf, "hello");
	/* A string field read as a number, or too long for its buffer. */
	r = in.top;
	state_next(&r, &f);
	state_next(&r, &f);
	state_get_record(&f, &sub);
	state_next(&sub, &g);
	CHECK_EQ(state_get_u64(&g, &v), -EBADMSG);
	CHECK_EQ(state_get_str(&g, buf, 3), -ENAMETOOLONG);
	state_in_close(&in);
	close(fd);
	state_w_free(&w);
}

TEST(state_refuses_bad_bytes)
{
	uint8_t bad[] = {1, 0, 200, 0, 0, 0, 1, 2}; /* a length past the end */
	struct state_r r = {.data = bad, .len = sizeof(bad)};
	struct state_field f;
	CHECK_EQ(state_next(&r, &f), -EBADMSG);
	uint8_t nul[] = {1, 0, 3, 0, 0, 0, 'a', 0, 'b'};
	r = (struct state_r){.data = nul, .len = sizeof(nul)};
	CHECK_EQ(state_next(&r, &f), 1);
	char buf[8], *dup = NULL;
	CHECK_EQ(state_get_str(&f, buf, sizeof(buf)), -EBADMSG);
	CHECK_EQ(state_get_strdup(&f, &dup), -EBADMSG);
	/* Another format, and no state at all. */
	int fd = memfd_create("t", MFD_CLOEXEC);
	CHECK(write(fd, "KINSTATE\x09\0\0\0\0\0\0\0", 16) == 16);
	struct state_in in;
	uint32_t format = 0;
	CHECK_EQ(state_in_open(fd, &in, &format), -EPROTO);
	CHECK_EQ(format, 9);
	close(fd);
	fd = memfd_create("t", MFD_CLOEXEC);
	CHECK(write(fd, "NOTSTATE\x01\0\0\0\0\0\0\0", 16) == 16);
	CHECK_EQ(state_in_open(fd, &in, NULL), -EBADMSG);
	close(fd);
}

TEST(state_kept_fds)
{
	int a = open("/dev/null", O_RDONLY | O_CLOEXEC),
	    b = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct state_w w;
	state_w_init(&w);
	state_put_fd(&w, 1, a);
	state_put_fd(&w, 2, b);
	CHECK(cloexec(a) == 0 && cloexec(b) == 0);
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	struct state_in in;
	CHECK_EQ(state_in_open(fd, &in, NULL), 0);
	struct state_r r = in.top;
	struct state_field f;
	int got = -1;
	state_next(&r, &f);
	CHECK_EQ(state_get_fd(&in, &f, &got), 0);
	CHECK_EQ(got, a);
	CHECK_EQ(cloexec(a), 1);
	CHECK_EQ(state_get_fd(&in, &f, &got), -EBADF); /* not twice */
	state_in_close(&in);                           /* b: nobody took it */
	CHECK_EQ(cloexec(b), -1);
	CHECK_EQ(cloexec(a), 1);
	close(a);
	close(fd);
	/* The exec failed: every kept fd is O_CLOEXEC again. */
	a = open("/dev/null", O_RDONLY | O_CLOEXEC);
	state_w_free(&w);
	state_w_init(&w);
	state_put_fd(&w, 1, a);
	state_w_unkeep(&w);
	CHECK_EQ(cloexec(a), 1);
	close(a);
	state_w_free(&w);
}

TEST(state_exec_spec_round_trip)
{
	struct exec_spec s;
	exec_spec_init(&s);
	char *argv[] = {"/bin/sh", "-c", "echo hi", NULL}, *env[] = {"A=1", "B=two", NULL};
	const char *masked[] = {"/proc/kcore", NULL};
	struct exec_mount mounts[] = {
	    {.source = "proc", .target = "/proc", .type = "proc", .flags = MS_NOSUID},
	    {.source = "/srv", .target = "/srv", .flags = MS_BIND | MS_RDONLY}};
	struct exec_device_rule dev[] = {
	    {.allow = true, .type = 'c', .major = 1, .minor = -1, .access = 3}};
	struct exec_device_node node[] = {
	    {.path = "/dev/fuse", .type = 'c', .major = 10, .minor = 229, .mode = 0666}};
	s.argv = argv;
	s.env = env;
	s.cwd = "/tmp";
	s.uid = 1000, s.gid = 1000, s.groups[0] = 27, s.ngroups = 1;
	s.rlimits[0] = (struct exec_rlimit){RLIMIT_NOFILE, 1024, 4096}, s.nrlimits = 1;
	s.namespaces = EXEC_NS_PID | EXEC_NS_MNT | EXEC_NS_USER;
	s.uid_map[0] = (struct exec_idmap){0, 100000, 65536}, s.nuid_map = 1;
	s.gid_map[0] = (struct exec_idmap){0, 100000, 65536}, s.ngid_map = 1;
	s.root = "/srv/root", s.masked_paths = masked;
	s.mounts = mounts, s.nmounts = 2;
	s.devices_set = true, s.devices = dev, s.ndevices = 1;
	s.device_nodes = node, s.ndevice_nodes = 1;
	s.oom_score_adj_set = true, s.oom_score_adj = -500;
	s.nice_set = true, s.nice = -3;
	s.restart = EXEC_RESTART_ON_FAILURE, s.backoff_base_ms = 250;
	s.stdio_paths[1] = "/var/log/x.log";
	struct state_w w;
	state_w_init(&w);
	exec_spec_save(&w, 7, &s);
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	struct state_in in;
	CHECK_EQ(state_in_open(fd, &in, NULL), 0);
	struct state_r r = in.top;
	struct state_field f;
	CHECK_EQ(state_next(&r, &f), 1);
	struct exec_spec *d = NULL;
	struct err err = {0};
	CHECK_EQ(exec_spec_restore(&f, &d, &err), 0);
	if (d) {
		CHECK_STR(d->argv[2], "echo hi");
		CHECK(d->argv[3] == NULL);
		CHECK_STR(d->env[1], "B=two");
		CHECK_STR(d->cwd, "/tmp");
		CHECK(d->uid == 1000 && d->ngroups == 1 && d->groups[0] == 27);
		CHECK(d->nrlimits == 1 && d->rlimits[0].hard == 4096);
		CHECK(d->nuid_map == 1 && d->uid_map[0].outside == 100000);
		CHECK_STR(d->root, "/srv/root");
		CHECK_STR(d->masked_paths[0], "/proc/kcore");
		CHECK(d->nmounts == 2 && d->mounts[1].flags == (MS_BIND | MS_RDONLY));
		CHECK_STR(d->mounts[0].type, "proc");
		CHECK(d->ndevices == 1 && d->devices[0].minor == -1);
		CHECK(d->ndevice_nodes == 1 && d->device_nodes[0].minor == 229);
		CHECK_STR(d->device_nodes[0].path, "/dev/fuse");
		CHECK_EQ(d->oom_score_adj, -500);
		CHECK_EQ(d->nice, -3);
		CHECK(d->restart == EXEC_RESTART_ON_FAILURE && d->backoff_base_ms == 250);
		CHECK_STR(d->stdio_paths[1], "/var/log/x.log");
		CHECK(d->stdio_paths[0] == NULL && d->hostname == NULL);
		exec_spec_free(d);
	}
	state_in_close(&in);
	close(fd);
	state_w_free(&w);
}

/* A terminal's spec: the flag and the size go along a re-exec. */
TEST(state_exec_spec_terminal)
{
	struct exec_spec s;
	exec_spec_init(&s);
	char *argv[] = {"/bin/sh", NULL};
	s.argv = argv;
	s.terminal = true, s.rows = 50, s.cols = 132;
	struct state_w w;
	state_w_init(&w);
	exec_spec_save(&w, 7, &s);
	int fd = -1;
	CHECK_EQ(state_w_seal(&w, &fd), 0);
	struct state_in in;
	CHECK_EQ(state_in_open(fd, &in, NULL), 0);
	struct state_r r = in.top;
	struct state_field f;
	CHECK_EQ(state_next(&r, &f), 1);
	struct exec_spec *d = NULL;
	struct err err = {0};
	CHECK_EQ(exec_spec_restore(&f, &d, &err), 0);
	if (d) {
		CHECK(d->terminal && d->rows == 50 && d->cols == 132);
		exec_spec_free(d);
	}
	state_in_close(&in);
	close(fd);
	state_w_free(&w);
}

static uint64_t file_state_value(int dirfd, const char *name)
{
	struct state_in in;
	struct state_field f;
	uint64_t v = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || state_in_open(fd, &in, NULL) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	struct state_r r = in.top;
	while (state_next(&r, &f) > 0)
		if (f.tag == 1)
			state_get_u64(&f, &v);
	state_in_close(&in);
	return v;
}

/* A file state is written over the previous one's file and the names
 * exchanged: a shorter state over a longer one reads as itself (the
 * header's length), and nothing is ever truncated or unlinked meanwhile. */
TEST(state_file_exchanged_not_freed)
{
	char dir[] = "/tmp/kin-unit-state.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dirfd >= 0);
	struct state_w w;
	char big[4096];
	memset(big, 'x', sizeof(big));
	for (uint64_t i = 1; i <= 3; i++) {
		state_w_init(&w);
		state_put_u64(&w, 1, i);
		if (i == 1) /* the first is longer than the ones after */
			state_put_bytes(&w, 2, big, sizeof(big));
		CHECK_EQ(state_w_write_file(&w, dirfd, "state"), 0);
		state_w_free(&w);
		CHECK_EQ(file_state_value(dirfd, "state"), i);
	}
	struct stat st;
	CHECK_EQ(file_state_value(dirfd, ".state.new"), 2); /* the previous one */
	CHECK_EQ(fstatat(dirfd, "state", &st, 0), 0);
	CHECK(st.st_size > 4096); /* the third over the first's file, never truncated */
	{ /* a reader of the whole file (no length in the header) skips the tail */
		int whole = openat(dirfd, "state", O_RDWR | O_CLOEXEC);
		struct state_in in0;
		struct state_field f0;
		uint64_t v = 0;
		CHECK(whole >= 0);
		CHECK_EQ(pwrite(whole, "\0\0\0\0", 4, 12), 4);
		CHECK_EQ(state_in_open(whole, &in0, NULL), 0);
		CHECK_EQ(in0.size, (size_t)st.st_size);
		struct state_r top = in0.top;
		CHECK_EQ(state_next(&top, &f0), 1);
		CHECK_EQ(state_get_u64(&f0, &v), 0);
		CHECK_EQ(v, 3);
		CHECK_EQ(state_next(&top, &f0), 1);
		CHECK_EQ(f0.tag, STATE_TAG_PAD);
		CHECK_EQ(state_next(&top, &f0), 0);
		state_in_close(&in0);
		close(whole);
	}
	/* A length past the file's end is refused. */
	int fd = openat(dirfd, "state", O_RDWR | O_CLOEXEC);
	CHECK_EQ(pwrite(fd, "\xff\xff\xff\x7f", 4, 12), 4);
	struct state_in in;
	CHECK_EQ(state_in_open(fd, &in, NULL), -EBADMSG);
	close(fd);
	CHECK_EQ(state_file_remove(dirfd, "state"), 0);
	CHECK(faccessat(dirfd, "state", F_OK, 0) < 0 &&
	      faccessat(dirfd, ".state.new", F_OK, 0) < 0);
	CHECK_EQ(state_file_remove(dirfd, "state"), 0); /* gone already: fine */
	close(dirfd);
	rmdir(dir);
}
