/* import: an image from one of skopeo's transports into the store.
 *
 *   oci:DIR[:TAG]          an OCI image layout (index.json, blobs/)
 *   oci-archive:FILE[:TAG] the same as a tar (gzip or zstd too)
 *   docker-archive:FILE[:NAME]  `docker save` output (manifest.json)
 *
 * An archive is first unpacked into the store's tmp/ by the same hostile
 * tar reader as layers (no whiteouts), then read as a directory. Every file
 * of the source is opened beneath it (openat2 RESOLVE_BENEATH), every blob
 * checked against its descriptor's size and digest, every layer's
 * uncompressed stream against the config's diff_id, all while it is being
 * unpacked into tmp/; only a layer that passed is renamed into layers/,
 * and the record is written last. So a failed import leaves nothing the
 * store uses, and tmp/ is swept by the next one. Runs in a child (it
 * blocks on disk and holds the store's lock). */
#include "oci/oci-int.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#define MT_OCI_INDEX    "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST  "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIF "application/vnd.docker.distribution.manifest.v2+json"
#define REF_NAME_ANNOT  "org.opencontainers.image.ref.name"
#define ARCHIVE_ENTRIES (1u << 20)
#define LAYER_ENTRIES   (1u << 22)
#define LAYER_BYTES     (1ull << 40)
#define RESERVE_BYTES   (64ull << 20) /* free space an import leaves the machine */
#define INDEX_DEPTH_MAX 2

struct source {
	const char *ref; /* as the user wrote it, for messages */
	char path[PATH_MAX];
	char tag[OCI_NAME_MAX + 1];
	bool docker, archive;
	int dirfd;    /* the layout (or the unpacked archive) */
	char tmp[64]; /* tmp/ entry of an unpacked archive, "" for none */
};

struct import {
	struct oci_store *store;
	struct source src;
	struct oci_image *img;
	json_t *config;
	struct err *err;
};

/* ---- files of the source -------------------------------------------------------- */

static int open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY),
	                       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* A whole small file of the source (a JSON document), verified against
 * digest when one is given. */
static int read_json(struct import *im, const char *path, const char *digest, json_t **ret,
                     char *ret_digest)
{
	struct stat st;
	_cleanup_close_ int fd = open_beneath(im->src.dirfd, path, O_RDONLY);
	if (fd < 0)
		return err_set_errno(im->err, fd, "%s: %s: %s", im->src.ref, path, strerror(-fd));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX)
		return err_set(im->err, -EFBIG, ERR_INVALID_ARGUMENT,
		               "%s: %s: not a regular file of at most %d bytes", im->src.ref, path,
		               OCI_JSON_MAX);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	struct oci_fd_reader fr;
	struct oci_hash_reader h;
	oci_fd_reader_init(&fr, fd, (uint64_t)st.st_size, path);
	oci_hash_reader_init(&h, &fr.r);
	size_t len = 0;
	for (ssize_t n; buf && len < (size_t)st.st_size; len += (size_t)n) {
		n = oci_read(&h.r, buf + len, (size_t)st.st_size - len, im->err);
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
	}
	if (!buf)
		return err_set_errno(im->err, -ENOMEM, "%s: %s: out of memory", im->src.ref, path);
	char got[OCI_DIGEST_LEN + 1];
	oci_hash_reader_digest(&h, got);
	if (digest && strcmp(got, digest) != 0)
		return err_set(im->err, -EBADMSG, ERR_DATA_LOSS,
		               "%s: %s: digest mismatch: expected %s, the content has %s",
		               im->src.ref, path, digest, got);
	if (ret_digest)
		memcpy(ret_digest, got, sizeof(got));
	json_error_t je;
	*ret = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!*ret)
		return err_set(im->err, -EBADMSG, ERR_INVALID_ARGUMENT,
		               "%s: %s: not JSON: %s at line %d column %d", im->src.ref, path,
		               je.text, je.line, je.column);
	if (!json_is_object(*ret) && !json_is_array(*ret)) {
		json_decref(*ret);
		return err_set(im->err, -EBADMSG, ERR_INVALID_ARGUMENT, "%s: %s: not a JSON object",
		               im->src.ref, path);
	}
	return 0;
}

/* blobs/sha256/HEX of a digest, after checking the digest's form. */
static int blob_path(struct import *im, const char *digest, char *buf, size_t size)
{
	if (!digest || !oci_digest_valid(digest))
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: digest \"%.80s\": kin takes sha256 digests only", im->src.ref,
		               digest ? digest : "(none)");
	snprintf(buf, size, "blobs/sha256/%s", digest + 7);
	return 0;
}

/* A descriptor's digest and size (size -1 when the source gives none). */
struct desc {
	const char *digest, *media_type;
	int64_t size;
};

static int desc_get(struct import *im, json_t *j, const char *what, struct desc *d)
{
	json_t *size = json_object_get(j, "size");
	d->digest = json_string_value(json_object_get(j, "digest"));
	d->media_type = json_string_value(json_object_get(j, "mediaType"));
	d->size = json_is_integer(size) ? json_integer_value(size) : -1;
	if (!json_is_object(j) || !d->digest || d->size < 0)
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: %s: a descriptor needs a digest and a size", im->src.ref, what);
	return 0;
}

static int read_blob_json(struct import *im, const struct desc *d, json_t **ret)
{
	char path[128];
	int r = blob_path(im, d->digest, path, sizeof(path));
	if (r < 0)
		return r;
	return read_json(im, path, d->digest, ret, NULL);
}

/* ---- the store's side --------------------------------------------------------- */

/* Copies a verified JSON blob of the source into the store's blobs/. */
static int store_blob(struct import *im, const char *src_path, const char *digest)
{
	char dst[128], tmp[64];
	int sfd = oci_store_fd(im->store);
	snprintf(dst, sizeof(dst), "blobs/sha256/%s", digest + 7);
	if (faccessat(sfd, dst, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	_cleanup_close_ int in = open_beneath(im->src.dirfd, src_path, O_RDONLY);
	snprintf(tmp, sizeof(tmp), "tmp/blob-%d", (int)getpid());
	_cleanup_close_ int out = openat(sfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char buf[65536];
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write_all(out, buf, (size_t)n) < 0) {
			n = -1;
			break;
		}
	if (in < 0 || out < 0 || n < 0 || renameat(sfd, tmp, sfd, dst) < 0)
		return err_set_errno(im->err, -(errno ? errno : EIO), "%s: storing blob %s: %m",
		                     im->src.ref, digest);
	return 0;
}

static int layer_exists(struct import *im, const char *diff_id)
{
	char path[96];
	snprintf(path, sizeof(path), "layers/%s", diff_id + 7);
	return faccessat(oci_store_fd(im->store), path, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Unpacks one layer into tmp/ while checking both digests, then renames
 * it into layers/DIFFHEX. blob_digest NULL: docker-archive (no compressed
 * digest; the diff_id is the check). */
static int import_layer(struct import *im, size_t i, const char *path, const char *blob_digest,
                        int64_t blob_size, enum oci_compression comp, const char *diff_id)
{
	char tmp[64], dst[96], label[128], got[OCI_DIGEST_LEN + 1];
	int sfd = oci_store_fd(im->store);
	struct stat st;
	snprintf(label, sizeof(label), "layer %s", blob_digest ? blob_digest : diff_id);
	_cleanup_close_ int fd = open_beneath(im->src.dirfd, path, O_RDONLY);
	if (fd < 0)
		return err_set_errno(im->err, fd, "%s: layer %zu: %s: %s", im->src.ref, i, path,
		                     strerror(-fd));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (blob_size >= 0 && st.st_size != blob_size))
		return err_set(im->err, -EBADMSG, ERR_DATA_LOSS,
		               "%s: %s: %s is not a file of the %lld bytes its descriptor says",
		               im->src.ref, label, path, (long long)blob_size);
	snprintf(tmp, sizeof(tmp), "tmp/layer-%d-%zu", (int)getpid(), i);
	dir_remove_tree(sfd, tmp, 0);
	if (mkdirat(sfd, tmp, 0755) < 0)
		return err_set_errno(im->err, -errno, "%s: %s: mkdir: %m", im->src.ref, label);
	_cleanup_close_ int dirfd = openat(sfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct oci_fd_reader fr;
	struct oci_hash_reader zh, th;
	struct oci_reader *dec = NULL;
	struct oci_layer_stats stats;
	const struct oci_layer_limits lim = {
	    .max_entries = LAYER_ENTRIES, .max_bytes = LAYER_BYTES, .reserve_bytes = RESERVE_BYTES};
	oci_fd_reader_init(&fr, fd, (uint64_t)st.st_size, label);
	oci_hash_reader_init(&zh, &fr.r);
	int r = dirfd < 0 ? -errno : oci_decomp_new(&zh.r, comp, label, &dec, im->err);
	if (r >= 0) {
		oci_hash_reader_init(&th, dec);
		r = oci_layer_unpack(&th.r, dirfd, label, &lim, OCI_UNPACK_WHITEOUTS, &stats,
		                     im->err);
	}
	if (r >= 0 && blob_digest) {
		oci_hash_reader_digest(&zh, got);
		if (strcmp(got, blob_digest) != 0)
			r = err_set(im->err, -EBADMSG, ERR_DATA_LOSS,
			            "%s: %s: digest mismatch: the blob has %s", im->src.ref, label,
			            got);
	}
	if (r >= 0) {
		oci_hash_reader_digest(&th, got);
		if (strcmp(got, diff_id) != 0)
			r = err_set(
			    im->err, -EBADMSG, ERR_DATA_LOSS,
			    "%s: %s: diff_id mismatch: the config says %s, the layer has %s",
			    im->src.ref, label, diff_id, got);
	}
	if (dec)
		oci_decomp_free(dec);
	snprintf(dst, sizeof(dst), "layers/%s", diff_id + 7);
	if (r >= 0 && renameat(sfd, tmp, sfd, dst) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		r = err_set_errno(im->err, -errno, "%s: %s: rename into layers/: %m", im->src.ref,
		                  label);
	dir_remove_tree(sfd, tmp, 0);
	if (r >= 0)
		im->img->size += (uint64_t)st.st_size;
	return r < 0 ? r : 0;
}

/* ---- the config ------------------------------------------------------------------ */

/* "2024-01-02T03:04:05.123Z" or with an offset: seconds since 1970 (0 when
 * absent or not RFC 3339: "created" is informational). */
static int64_t parse_created(const char *s)
{
	struct tm tm = {0};
	const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!p)
		return 0;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	int64_t t = (int64_t)timegm(&tm);
	if ((p[0] == '+' || p[0] == '-') && strlen(p) == 6 && p[3] == ':') {
		int off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
		          ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		t += p[0] == '+' ? -off : off;
	} else if (strcmp(p, "Z") != 0)
		return 0;
	return t < 0 ? 0 : t;
}

/* The config: linux/amd64, and one diff_id per layer (nlayers). */
static int check_config(struct import *im, size_t nlayers)
{
	json_t *c = im->config;
	const char *os = json_string_value(json_object_get(c, "os"));
	const char *arch = json_string_value(json_object_get(c, "architecture"));
	json_t *diff_ids = json_object_get(json_object_get(c, "rootfs"), "diff_ids");
	if (!json_is_object(c))
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: config: not a JSON object", im->src.ref);
	if ((os && strcmp(os, "linux") != 0) || (arch && strcmp(arch, "amd64") != 0))
		return err_set(im->err, -EINVAL, ERR_FAILED_PRECONDITION,
		               "%s: the image is for %s/%s; kin runs linux/amd64", im->src.ref,
		               os ? os : "?", arch ? arch : "?");
	if (!json_is_array(diff_ids) || json_array_size(diff_ids) != nlayers)
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: config: rootfs.diff_ids has %zu entries for %zu layers",
		               im->src.ref, json_array_size(diff_ids), nlayers);
	if (nlayers > OCI_LAYERS_MAX)
		return err_set(im->err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "%s: %zu layers; kin takes at most %d", im->src.ref, nlayers,
		               OCI_LAYERS_MAX);
	for (size_t i = 0; i < nlayers; i++) {
		const char *d = json_string_value(json_array_get(diff_ids, i));
		if (!d || !oci_digest_valid(d))
			return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "%s: config: rootfs.diff_ids[%zu]: not a sha256 digest",
			               im->src.ref, i);
		memcpy(im->img->layers[i], d, OCI_DIGEST_LEN + 1);
	}
	im->img->nlayers = nlayers;
	im->img->created = parse_created(json_string_value(json_object_get(c, "created")));
	return 0;
}

/* ---- oci: and oci-archive: ------------------------------------------------------- */

static enum oci_compression layer_compression(const char *mt, bool *ok)
{
	*ok = true;
	if (!mt)
		return OCI_COMP_AUTO;
	if (str_startswith(mt, "application/vnd.oci.image.layer.") ||
	    str_startswith(mt, "application/vnd.docker.image.rootfs.")) {
		if (strstr(mt, "+gzip") || strstr(mt, ".tar.gzip"))
			return OCI_COMP_GZIP;
		if (strstr(mt, "+zstd"))
			return OCI_COMP_ZSTD;
		if (!strchr(mt, '+') && (strstr(mt, ".tar") || strstr(mt, ".diff.tar")))
			return OCI_COMP_NONE;
	}
	*ok = false;
	return OCI_COMP_AUTO;
}

/* From an index (index.json or a nested one), the descriptor to follow:
 * the tagged one, the only one, or linux/amd64 of a multi-arch list. */
static int index_pick(struct import *im, json_t *index, bool top, json_t **ret)
{
	json_t *m = json_object_get(index, "manifests"), *d, *only = NULL;
	size_t i, n = json_array_size(m), amd64 = 0;
	char tags[256] = "";
	if (!json_is_array(m) || n == 0)
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: the index lists no manifests", im->src.ref);
	json_array_foreach(m, i, d)
	{
		json_t *ann = json_object_get(d, "annotations");
		const char *name = json_string_value(json_object_get(ann, REF_NAME_ANNOT));
		json_t *plat = json_object_get(d, "platform");
		const char *os = json_string_value(json_object_get(plat, "os"));
		const char *arch = json_string_value(json_object_get(plat, "architecture"));
		if (top && im->src.tag[0]) {
			if (name && strcmp(name, im->src.tag) == 0) {
				*ret = d;
				return 0;
			}
		} else if (!top && os && arch && !strcmp(os, "linux") && !strcmp(arch, "amd64")) {
			if (amd64++ == 0)
				only = d;
		}
		if (top && name && strlen(tags) + strlen(name) + 3 < sizeof(tags))
			snprintf(tags + strlen(tags), sizeof(tags) - strlen(tags), "%s%s",
			         tags[0] ? ", " : "", name);
	}
	if (top && im->src.tag[0])
		return err_set(im->err, -ENOENT, ERR_NOT_FOUND,
		               "%s: no image tagged \"%s\" (tags: %s)", im->src.ref, im->src.tag,
		               tags[0] ? tags : "none");
	if (!top) {
		if (!only)
			return err_set(im->err, -ENOENT, ERR_NOT_FOUND,
			               "%s: the multi-arch index has no linux/amd64 image",
			               im->src.ref);
		*ret = only;
		return 0;
	}
	if (n > 1)
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: the layout holds %zu images; name one as :TAG (tags: %s)",
		               im->src.ref, n, tags[0] ? tags : "none");
	*ret = json_array_get(m, 0);
	return 0;
}

/* Follows index.json down to an image manifest: *ret is owned. */
static int oci_manifest(struct import *im, json_t **ret, struct desc *ret_desc)
{
	json_t *index = NULL, *next = NULL, *pick = NULL;
	int r = read_json(im, "index.json", NULL, &index, NULL);
	for (int depth = 0; r >= 0; depth++) {
		r = index_pick(im, index, depth == 0, &pick);
		if (r >= 0)
			r = desc_get(im, pick, "index.json", ret_desc);
		if (r >= 0 && depth == 0 && !im->img->name[0]) {
			const char *name = json_string_value(
			    json_object_get(json_object_get(pick, "annotations"), REF_NAME_ANNOT));
			if (name && oci_name_valid(name))
				str_copy(im->src.tag, sizeof(im->src.tag), name);
		}
		if (r >= 0)
			r = read_blob_json(im, ret_desc, &next);
		if (r < 0)
			break;
		/* The descriptor lives in index, freed below: keep its digest. */
		memcpy(im->img->digest, ret_desc->digest, OCI_DIGEST_LEN + 1);
		ret_desc->digest = im->img->digest;
		ret_desc->media_type = NULL;
		const char *mt = json_string_value(json_object_get(next, "mediaType"));
		if (!mt)
			mt = ret_desc->media_type;
		if (json_is_array(json_object_get(next, "manifests")) ||
		    (mt && (!strcmp(mt, MT_OCI_INDEX) || !strcmp(mt, MT_DOCKER_LIST)))) {
			if (depth + 1 >= INDEX_DEPTH_MAX) {
				r = err_set(im->err, -ELOOP, ERR_INVALID_ARGUMENT,
				            "%s: indexes nest deeper than %d", im->src.ref,
				            INDEX_DEPTH_MAX);
				break;
			}
			json_decref(index);
			index = TAKE_PTR(next);
			continue;
		}
		*ret = TAKE_PTR(next);
		break;
	}
	json_decref(index);
	json_decref(next);
	return r;
}

static int import_oci(struct import *im)
{
	json_t *manifest = NULL, *layers, *l;
	struct desc md, cd;
	char path[128];
	size_t i;
	int r = oci_manifest(im, &manifest, &md);
	if (r < 0)
		return r;
	layers = json_object_get(manifest, "layers");
	r = desc_get(im, json_object_get(manifest, "config"), "manifest: config", &cd);
	if (r >= 0 && !json_is_array(layers))
		r = err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: manifest: no layers list",
		            im->src.ref);
	if (r >= 0)
		r = read_blob_json(im, &cd, &im->config);
	if (r >= 0)
		r = check_config(im, json_array_size(layers));
	json_array_foreach(layers, i, l)
	{
		struct desc ld;
		bool ok;
		if (r < 0)
			break;
		r = desc_get(im, l, "manifest: layers[]", &ld);
		enum oci_compression comp = layer_compression(ld.media_type, &ok);
		if (r >= 0 && !ok)
			r = err_set(
			    im->err, -EINVAL, ERR_INVALID_ARGUMENT,
			    "%s: manifest: layers[%zu]: media type \"%.100s\" is not a layer kin "
			    "reads (tar, tar+gzip, tar+zstd)",
			    im->src.ref, i, ld.media_type);
		if (r >= 0)
			r = blob_path(im, ld.digest, path, sizeof(path));
		if (r >= 0 && layer_exists(im, im->img->layers[i]))
			im->img->size += (uint64_t)ld.size;
		else if (r >= 0)
			r = import_layer(im, i, path, ld.digest, ld.size, comp, im->img->layers[i]);
	}
	if (r >= 0) {
		memcpy(im->img->config, cd.digest, OCI_DIGEST_LEN + 1);
		im->img->size += (uint64_t)cd.size;
		r = blob_path(im, md.digest, path, sizeof(path));
		if (r >= 0)
			r = store_blob(im, path, md.digest);
		if (r >= 0 && blob_path(im, cd.digest, path, sizeof(path)) >= 0)
			r = store_blob(im, path, cd.digest);
	}
	json_decref(manifest);
	return r;
}

/* ---- docker-archive: --------------------------------------------------------------- */

/* A layer already in the store still counts in the image's size. */
static int add_file_size(struct import *im, const char *path)
{
	struct stat st;
	_cleanup_close_ int fd = open_beneath(im->src.dirfd, path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return err_set_errno(im->err, fd < 0 ? fd : -errno, "%s: %s: %s", im->src.ref, path,
		                     strerror(fd < 0 ? -fd : errno));
	im->img->size += (uint64_t)st.st_size;
	return 0;
}

static int import_docker(struct import *im)
{
	json_t *manifest = NULL, *entry = NULL, *e, *layers, *tags;
	const char *config_path;
	size_t i, n;
	int r = read_json(im, "manifest.json", NULL, &manifest, NULL);
	if (r < 0)
		return r;
	n = json_array_size(manifest);
	json_array_foreach(manifest, i, e)
	{
		json_t *t;
		size_t k;
		json_array_foreach(json_object_get(e, "RepoTags"), k,
		                   t) if (im->src.tag[0] && json_string_value(t) &&
		                          !strcmp(json_string_value(t), im->src.tag)) entry = e;
	}
	if (!entry && !im->src.tag[0] && n == 1)
		entry = json_array_get(manifest, 0);
	if (!entry) {
		if (im->src.tag[0])
			r = err_set(im->err, -ENOENT, ERR_NOT_FOUND,
			            "%s: manifest.json has no image tagged \"%s\"", im->src.ref,
			            im->src.tag);
		else
			r = err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
			            "%s: manifest.json lists %zu images; name one as :NAME",
			            im->src.ref, n);
		goto out;
	}
	config_path = json_string_value(json_object_get(entry, "Config"));
	layers = json_object_get(entry, "Layers");
	tags = json_object_get(entry, "RepoTags");
	if (!config_path || !json_is_array(layers)) {
		r = err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		            "%s: manifest.json: an image needs Config and Layers", im->src.ref);
		goto out;
	}
	if (!im->src.tag[0] && json_string_value(json_array_get(tags, 0)) &&
	    oci_name_valid(json_string_value(json_array_get(tags, 0))))
		str_copy(im->src.tag, sizeof(im->src.tag),
		         json_string_value(json_array_get(tags, 0)));
	/* docker save names no digests: the config's own is the image's id,
	 * and the diff_ids it lists check the layers. */
	r = read_json(im, config_path, NULL, &im->config, im->img->config);
	if (r >= 0)
		r = check_config(im, json_array_size(layers));
	for (i = 0; r >= 0 && i < json_array_size(layers); i++) {
		const char *path = json_string_value(json_array_get(layers, i));
		if (!path)
			r = err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
			            "%s: manifest.json: Layers[%zu]: not a string", im->src.ref, i);
		else if (!layer_exists(im, im->img->layers[i]))
			r = import_layer(im, i, path, NULL, -1, OCI_COMP_AUTO, im->img->layers[i]);
		else
			r = add_file_size(im, path);
	}
	if (r >= 0) {
		memcpy(im->img->digest, im->img->config, OCI_DIGEST_LEN + 1);
		r = store_blob(im, config_path, im->img->config);
	}
out:
	json_decref(manifest);
	return r;
}

/* ---- the source ----------------------------------------------------------------- */

/* "transport:path[:tag]": the tag is what follows the last ':' when that
 * holds no '/' (a path may hold ':' itself). */
static int parse_ref(struct source *src, const char *ref, struct err *err)
{
	const char *rest;
	if ((rest = str_startswith(ref, "oci:") ? ref + 4 : NULL))
		;
	else if ((rest = str_startswith(ref, "oci-archive:") ? ref + 12 : NULL))
		src->archive = true;
	else if ((rest = str_startswith(ref, "docker-archive:") ? ref + 15 : NULL))
		src->archive = src->docker = true;
	else
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image \"%.200s\": not a reference kin imports (oci:DIR[:TAG], "
		               "oci-archive:FILE[:TAG], docker-archive:FILE)",
		               ref);
	const char *colon = strrchr(rest, ':');
	size_t plen = colon && !strchr(colon, '/') ? (size_t)(colon - rest) : strlen(rest);
	if (plen == 0 || plen >= sizeof(src->path) || rest[0] != '/')
		return err_set(
		    err, -EINVAL, ERR_INVALID_ARGUMENT,
		    "image \"%.200s\": the path must be absolute (on the machine kin runs on)",
		    ref);
	memcpy(src->path, rest, plen);
	src->path[plen] = 0;
	if (rest[plen] && (str_copy(src->tag, sizeof(src->tag), rest + plen + 1) < 0 ||
	                   !oci_name_valid(src->tag)))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image \"%.200s\": \"%.100s\" is not a valid tag", ref,
		               rest + plen + 1);
	src->ref = ref;
	src->dirfd = -1;
	return 0;
}

static int source_open(struct oci_store *s, struct source *src, struct err *err)
{
	if (!src->archive) {
		src->dirfd = open(src->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (src->dirfd < 0)
			return err_set_errno(err, -errno, "%s: %s: %m", src->ref, src->path);
		return 0;
	}
	int sfd = oci_store_fd(s);
	_cleanup_close_ int fd = open(src->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return err_set_errno(err, -errno, "%s: %s: %m", src->ref, src->path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: %s: not a regular file",
		               src->ref, src->path);
	snprintf(src->tmp, sizeof(src->tmp), "tmp/archive-%d", (int)getpid());
	if (mkdirat(sfd, src->tmp, 0700) < 0 ||
	    (src->dirfd = openat(sfd, src->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_set_errno(err, -errno, "%s: mkdir %s: %m", src->ref, src->tmp);
	struct oci_fd_reader fr;
	struct oci_reader *dec = NULL;
	struct oci_layer_stats stats;
	const struct oci_layer_limits lim = {.max_entries = ARCHIVE_ENTRIES,
	                                     .max_bytes = LAYER_BYTES,
	                                     .reserve_bytes = RESERVE_BYTES};
	char label[PATH_MAX + 16];
	snprintf(label, sizeof(label), "archive %s", src->path);
	oci_fd_reader_init(&fr, fd, (uint64_t)st.st_size, label);
	int r = oci_decomp_new(&fr.r, OCI_COMP_AUTO, label, &dec, err);
	if (r >= 0)
		r = oci_layer_unpack(dec, src->dirfd, label, &lim, 0, &stats, err);
	if (dec)
		oci_decomp_free(dec);
	return r < 0 ? r : 0;
}

static void source_close(struct oci_store *s, struct source *src)
{
	if (src->dirfd >= 0)
		close(src->dirfd);
	if (src->tmp[0])
		dir_remove_tree(oci_store_fd(s), src->tmp, 0);
}

/* The name: given, or the source's tag; a bare tag ("latest") of an oci:
 * layout becomes BASENAME:TAG. */
static int pick_name(struct import *im, const char *name)
{
	char buf[OCI_NAME_MAX + 2];
	const char *tag = im->src.tag;
	if (!name && tag[0] && !strchr(tag, ':') && !strchr(tag, '/') && !im->src.docker) {
		const char *base = strrchr(im->src.path, '/') + 1;
		if (base[0] && snprintf(buf, sizeof(buf), "%s:%s", base, tag) < (int)sizeof(buf))
			name = buf;
	}
	if (!name)
		name = tag[0] ? tag : NULL;
	if (!name)
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: the source names no image; give one (--name)", im->src.ref);
	if (!oci_name_valid(name))
		return err_set(im->err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "%s: \"%.100s\" is not a valid image name", im->src.ref, name);
	str_copy(im->img->name, sizeof(im->img->name), name);
	return 0;
}

int oci_import(struct oci_store *s, const char *ref, const char *name, struct oci_image *ret,
               struct err *err)
{
	struct import im = {.store = s, .img = ret, .err = err};
	memset(ret, 0, sizeof(*ret));
	if (name && !oci_name_valid(name))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image name \"%.100s\": [A-Za-z0-9._:@/+-], at most %d bytes", name,
		               OCI_NAME_MAX);
	if (name)
		str_copy(ret->name, sizeof(ret->name), name);
	int r = parse_ref(&im.src, ref, err);
	if (r < 0)
		return r;
	_cleanup_close_ int lock = oci_store_lock(s, err);
	if (lock < 0)
		return lock;
	oci_store_sweep(s);
	r = source_open(s, &im.src, err);
	if (r >= 0)
		r = im.src.docker ? import_docker(&im) : import_oci(&im);
	if (r >= 0)
		r = pick_name(&im, name);
	if (r >= 0)
		r = oci_store_record_write(s, ret, err);
	source_close(s, &im.src);
	json_decref(im.config);
	return r;
}
