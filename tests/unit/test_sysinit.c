/* units/fstab.c and units/tmpfiles.c: fstab options, tmpfiles.d lines. */
#include "units/units.h"
#include "unit.h"

#include <sys/mount.h>

TEST(host_mount_options)
{
	unsigned long flags = 0;
	char data[64];
	CHECK(units_fstab_mount_options("defaults", &flags, data, sizeof(data)) == 0 &&
	      flags == 0 && !data[0]);
	CHECK(units_fstab_mount_options("ro,nosuid,nodev,noatime,x-systemd.automount,nofail",
	                                &flags, data, sizeof(data)) == 0);
	CHECK(flags == (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOATIME) && !data[0]);
	CHECK(units_fstab_mount_options("rw,errors=remount-ro,size=10%,mode=1777", &flags, data,
	                                sizeof(data)) == 0);
	CHECK(flags == 0 && strcmp(data, "size=10%,mode=1777") == 0);
	CHECK(units_fstab_mount_options("ro,rw", &flags, data, sizeof(data)) == 0 && flags == 0);
	char big[2048];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK(units_fstab_mount_options(big, &flags, data, sizeof(data)) == -E2BIG);
	CHECK(units_fstab_mount_options(
	          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	          &flags, data, sizeof(data)) == -E2BIG);
}

TEST(host_tmpfiles_parse)
{
	struct units_tmpfiles_entry e;
	char l1[] = "d /run/postgresql 2775 postgres postgres - -";
	CHECK(units_tmpfiles_parse(l1, &e) == 0 && e.type == 'd' && e.mode == 02775 && e.mode_set &&
	      strcmp(e.path, "/run/postgresql") == 0 && strcmp(e.user, "postgres") == 0);
	char l2[] = "d /run/memcached";
	CHECK(units_tmpfiles_parse(l2, &e) == 0 && !e.mode_set && e.mode == 0755 &&
	      strcmp(e.group, "-") == 0);
	char l3[] = "f /etc/x 0600 root root - two words here";
	CHECK(units_tmpfiles_parse(l3, &e) == 0 && e.type == 'f' && e.arg &&
	      strcmp(e.arg, "two words here") == 0);
	char l4[] = "L+ /etc/mtab - - - - ../proc/self/mounts";
	CHECK(units_tmpfiles_parse(l4, &e) == 0 && e.type == 'L');
	char l5[] = "x /tmp/*";
	CHECK(units_tmpfiles_parse(l5, &e) == -EINVAL);
	char l6[] = "q /var/lib/machines 0700";
	CHECK(units_tmpfiles_parse(l6, &e) == -EOPNOTSUPP);
	char l7[] = "d relative/path";
	CHECK(units_tmpfiles_parse(l7, &e) == -EINVAL);
	char l8[] = "d /run/../etc";
	CHECK(units_tmpfiles_parse(l8, &e) == -EINVAL);
	char l9[] = "d /run/x 99999";
	CHECK(units_tmpfiles_parse(l9, &e) == -EINVAL);
	char l10[] = "d";
	CHECK(units_tmpfiles_parse(l10, &e) == -EINVAL);
	char l11[] = "d /run/%t";
	CHECK(units_tmpfiles_parse(l11, &e) == -EINVAL);
}
