/* debian internals: the steps of a Debian root, shared by debian.c (base,
 * packages) and debian-root.c (kin's files, the finish, the image). */
#pragma once

#include "rootfs/rootfs-int.h"

/* Runs fn in a forked child in a private mount namespace (its mounts end
 * with it; it ends with the builder). fn's err comes back in d. */
int rootfs_debian_in_private_ns(int (*fn)(void *data, struct err *d), void *data, struct err *d);
/* The cached base for o's release from o's mirror (or the host's), made
 * by debootstrap if missing. Its path in ret_base. */
int rootfs_debian_base(const struct rootfs_build_opts *o, const char *cache, char *ret_base,
                       size_t size, struct err *d);
/* apt-get install of o->packages into root (a copy of the base), in a
 * chroot with proc, sys and a small dev mounted, policy-rc.d refusing
 * every service start and the host's resolv.conf; apt-get clean after. */
int rootfs_debian_install(const struct rootfs_build_opts *o, const char *root, struct err *d);
/* Writes len bytes as path (relative to rootfd, made or replaced, mode),
 * with no symlink followed on the way or at the end; missing parents made
 * 0755. */
int rootfs_debian_put(int rootfd, const char *path, const void *data, size_t len, mode_t mode,
                      struct err *d);
/* The whole Debian build: base, copy, packages, kin and its files, the tree
 * t (modules, --add) on top, times clamped, ext4 at tmp_out. */
int rootfs_debian_write(const struct rootfs_tree *t, const struct rootfs_build_opts *o,
                        const char *tmp_out, struct err *d);
