/* cells-probe: what an executable sees of its isolation, for
 * tests/ns/cells.test.sh. Static, so it runs inside a bare rootfs too.
 *   cells-probe keyctl        keyctl(2): "keyctl: ok" or "keyctl: errno NAME"
 *   cells-probe unshare-user  unshare(CLONE_NEWUSER), same form
 *   cells-probe caps          "CapEff: ..." and "CapBnd: ..." from /proc/self/status
 *   cells-probe ids           "uid=U gid=G groups=N" */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEYCTL_GET_KEYRING_ID    0
#define KEY_SPEC_SESSION_KEYRING -3

static const char *errname(int e)
{
	switch (e) {
	case EPERM:
		return "EPERM";
	case EACCES:
		return "EACCES";
	case ENOSYS:
		return "ENOSYS";
	case ENOKEY:
		return "ENOKEY";
	case EINVAL:
		return "EINVAL";
	default:
		return "other";
	}
}

static int report(const char *what, long r)
{
	if (r < 0)
		printf("%s: errno %s\n", what, errname(errno));
	else
		printf("%s: ok\n", what);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "keyctl"))
		return report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
		                                KEY_SPEC_SESSION_KEYRING, 0));
	if (!strcmp(argv[1], "unshare-user"))
		return report("unshare-user", unshare(CLONE_NEWUSER));
	if (!strcmp(argv[1], "caps")) {
		char line[256];
		FILE *f = fopen("/proc/self/status", "re");
		if (!f)
			return 1;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "CapEff:", 7) || !strncmp(line, "CapBnd:", 7) ||
			    !strncmp(line, "CapAmb:", 7) || !strncmp(line, "NoNewPrivs:", 11) ||
			    !strncmp(line, "Seccomp:", 8))
				fputs(line, stdout);
		fclose(f);
		return 0;
	}
	if (!strcmp(argv[1], "ids")) {
		gid_t g[64];
		int n = getgroups(64, g);
		printf("uid=%d gid=%d groups=%d\n", (int)getuid(), (int)getgid(), n);
		return 0;
	}
	return 2;
}
