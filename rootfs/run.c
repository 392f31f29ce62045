/* run: the builder's few helper programs (apt-get, dpkg, depmod, mke2fs)
 * run to completion, and removal of scratch directories. The builder is an
 * ordinary process (`kin image`), never PID 1, so waiting is fine here. */
#include "rootfs/rootfs-int.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

int rootfs_run(const char *const argv[], const char *const env_extra[], const char *cwd, int out_fd)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		if (out_fd >= 0)
			dup2(out_fd, STDOUT_FILENO);
		if (cwd && chdir(cwd) < 0) {
			fprintf(stderr, "kin image: %s: %s\n", cwd, strerror(errno));
			_exit(127);
		}
		for (size_t i = 0; env_extra && env_extra[i]; i++)
			putenv((char *)env_extra[i]);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "kin image: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static int rm_rf_at(int parent, const char *name, int depth)
{
	if (depth > 256)
		return -ELOOP;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		DIR *d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				rm_rf_at(dirfd(d), de->d_name, depth + 1);
		closedir(d);
		return unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -errno : 0;
	}
	return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

int rootfs_rm_rf(const char *path)
{
	return rm_rf_at(AT_FDCWD, path, 0);
}
