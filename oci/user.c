/* user: an image's User ("app", "1000", "app:staff", "1000:50") resolved
 * the way a container runtime does, in the image's own /etc/passwd and
 * /etc/group — never the host's (kin links no NSS: lib/nonss.c). The files
 * are read through the image's layers top first, as the overlay would
 * show them: a whiteout or an opaque /etc above hides the ones below.
 * Each file is opened inside its layer's directory (RESOLVE_IN_ROOT), so a
 * symlinked /etc/passwd can never reach the host's. */
#include "oci/oci-int.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define USER_FILE_MAX (1 << 20)

/* Reads "etc/passwd" or "etc/group" as the image shows it into *ret
 * (NULL when the image has none). */
static int image_file(struct oci_store *s, const struct oci_image *img, const char *file,
                      char **ret, struct err *err)
{
	char dir[PATH_MAX];
	*ret = NULL;
	for (size_t i = img->nlayers; i-- > 0;) {
		struct stat st;
		char opq[2];
		snprintf(dir, sizeof(dir), "%s/layers/%s", oci_store_dir(s), img->layers[i] + 7);
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return err_set_errno(err, -errno, "image \"%s\": layer %s: %m", img->name,
			                     img->layers[i]);
		if (fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) &&
		    st.st_rdev == makedev(0, 0))
			return 0; /* whited out */
		struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
		_cleanup_close_ int fd = (int)syscall(SYS_openat2, dfd, file, &how, sizeof(how));
		if (fd >= 0) {
			if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
			    st.st_size > USER_FILE_MAX)
				return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
				               "image \"%s\": /%s is not a file of at most 1 MiB",
				               img->name, file);
			char *buf = malloc((size_t)st.st_size + 1);
			ssize_t n = buf ? read(fd, buf, (size_t)st.st_size) : -1;
			if (n < 0) {
				free(buf);
				return err_set_errno(err, -EIO, "image \"%s\": reading /%s failed",
				                     img->name, file);
			}
			buf[n] = 0;
			*ret = buf;
			return 0;
		}
		/* Not in this layer: an opaque /etc hides the layers below. */
		_cleanup_close_ int etc =
		    openat(dfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (etc >= 0 && fgetxattr(etc, "trusted.overlay.opaque", opq, sizeof(opq)) == 1 &&
		    opq[0] == 'y')
			return 0;
	}
	return 0;
}

int oci_image_user(struct oci_store *s, const struct oci_image *img, const char *spec,
                   struct oci_user *ret, struct err *err)
{
	char user[256] = "", grp[256] = "", name[256] = "";
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	const char *colon = strchr(spec ? spec : "", ':');
	memset(ret, 0, sizeof(*ret));
	if (!spec || !spec[0])
		return 0; /* root */
	if (strlen(spec) >= sizeof(user) || (colon && !colon[1]) || spec[0] == ':')
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "user \"%.100s\": expected USER[:GROUP] (names or ids)", spec);
	snprintf(user, sizeof(user), "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
	if (colon)
		str_copy(grp, sizeof(grp), colon + 1);
	int r = image_file(s, img, "etc/passwd", &passwd, err);
	if (r >= 0)
		r = image_file(s, img, "etc/group", &group, err);
	if (r < 0)
		return r;
	bool uid_numeric = str_to_u32(user, &ret->uid) == 0;
	if (!passwd_lookup(passwd, user, uid_numeric, &ret->uid, &ret->gid, name, sizeof(name))) {
		if (!uid_numeric)
			return err_set(err, -ENOENT, ERR_NOT_FOUND,
			               "user \"%s\" is not in the image's /etc/passwd", user);
		ret->gid = 0; /* an id the image does not list: gid 0, as runc does */
	}
	if (grp[0] && str_to_u32(grp, &ret->gid) != 0 &&
	    !passwd_lookup(group, grp, false, &ret->gid, NULL, NULL, 0))
		return err_set(err, -ENOENT, ERR_NOT_FOUND,
		               "group \"%s\" is not in the image's /etc/group", grp);
	/* Supplementary groups come with a user named by passwd, unless a
	 * group was given explicitly. */
	if (name[0] && !grp[0] && group)
		passwd_supplementary(group, name, ret->gid, ret->groups, OCI_USER_GROUPS_MAX,
		                     &ret->ngroups);
	return 0;
}
