/* oci: the OCI formats a pod is made of.
 *
 * Images (image-spec): a content-addressed store of blobs verified against
 * their sha256 digests, manifests, configs and layers unpacked once into
 * read-only directories that every container of the image shares (an
 * overlay of them is a container's root). Import reads skopeo's transports:
 * an OCI layout directory, the same as a tar, and `docker save` output.
 *
 * Layers are hostile input: the tar reader refuses any entry that would
 * write outside its layer's directory and bounds entries, names and sizes.
 *
 * Runtime bundles (runtime-spec): config.json parsed into what kin needs to
 * start an executable, with errors naming the JSON path; and edited as
 * JSON, what kin does not know of it kept (edit.c).
 *
 * oci knows nothing of cells, zones or RPC (rule: oci -> lib): api/ maps an
 * image config or a bundle onto an executable's spec. Store and import do
 * blocking file work: callers run them in a child, never in PID 1's loop. */
#pragma once

#include "lib/lib.h"

/* "sha256:" + 64 hex */
#define OCI_DIGEST_LEN 71

/* ---- layers (layer.c, tar.c, decompress.c) ------------------------------ */

/* ---- the image store (store.c, import.c, config.c) ---------------------- */

/* Where images live unless told (kin init --image-store DIR). The store:
 *   refs/NAME          one JSON record per image name (NAME %-escaped)
 *   blobs/sha256/HEX   manifests and configs, verified
 *   layers/HEX         each layer unpacked once (HEX: its diff_id), read-only
 *   tmp/               work in progress; swept at every import
 *   lock               flock: one writer (import, remove) at a time */
#define OCI_STORE_DEFAULT "/var/lib/kin/images"
#define OCI_NAME_MAX      255       /* "registry.example/team/app:1.2" */
#define OCI_LAYERS_MAX    127       /* overlayfs stacks at most 500; images rarely pass 50 */
#define OCI_JSON_MAX      (4 << 20) /* an index, manifest or config */

/* An image name: 1..OCI_NAME_MAX bytes of [A-Za-z0-9._:@/+-], no "..",
 * not starting with '/' or '.'. */
bool oci_name_valid(const char *name);
/* "sha256:" and 64 lower-case hex digits. */
bool oci_digest_valid(const char *digest);

/* One image of the store. */
struct oci_image {
	char name[OCI_NAME_MAX + 1];
	char digest[OCI_DIGEST_LEN + 1]; /* the manifest's (docker-archive: the config's) */
	char config[OCI_DIGEST_LEN + 1]; /* the config blob's */
	uint64_t size;                   /* bytes of its blobs as imported (config + layers) */
	int64_t created;                 /* the config's "created", seconds since 1970; 0 unknown */
	size_t nlayers;
	char layers[OCI_LAYERS_MAX][OCI_DIGEST_LEN + 1]; /* diff_ids, bottom first */
};

struct oci_store;
/* Opens (making it when missing, mode 0700) the store at dir. */
int oci_store_open(const char *dir, struct oci_store **ret, struct err *err);
void oci_store_free(struct oci_store *s);
const char *oci_store_dir(const struct oci_store *s);

/* Imports ref — "oci:DIR[:TAG]", "oci-archive:FILE[:TAG]" or
 * "docker-archive:FILE" — as name (NULL: the tag or name the source
 * carries). Blocking, long: run it in a child. Every blob is checked
 * against its digest and size, every layer's uncompressed bytes against
 * the config's diff_id, before the image is recorded; a layer already in
 * the store is not unpacked again. An existing record of the name is
 * replaced. */
int oci_import(struct oci_store *s, const char *ref, const char *name, struct oci_image *ret,
               struct err *err);
/* By name, or by digest ("sha256:…", or a unique prefix of 12+ hex digits). */
int oci_image_get(struct oci_store *s, const char *name_or_digest, struct oci_image *ret,
                  struct err *err);
typedef int (*oci_image_visit_fn)(const struct oci_image *img, void *data);
/* Every image, in name order; fn returning < 0 stops. */
int oci_image_list(struct oci_store *s, oci_image_visit_fn fn, void *data, struct err *err);
/* Forgets the name, then removes blobs and layers no other image uses. */
int oci_image_remove(struct oci_store *s, const char *name, struct err *err);
/* The config blob as stored (JSON), NUL-terminated. */
int oci_image_config_json(struct oci_store *s, const struct oci_image *img, char **ret,
                          size_t *ret_len, struct err *err);
/* The overlayfs lowerdir= value of img: its layers' directories, top first,
 * joined by ':'. -ENAMETOOLONG past size. */
int oci_image_lowerdirs(struct oci_store *s, const struct oci_image *img, char *buf, size_t size,
                        struct err *err);

/* An image's User resolved in its own /etc/passwd and /etc/group:
 * "app", "1000", "app:staff", "1000:50"; "" or NULL is root. A name the
 * image does not list is NOT_FOUND; a numeric uid it does not list gets
 * gid 0. Supplementary groups: those of /etc/group naming the user. */
#define OCI_USER_GROUPS_MAX 32
struct oci_user {
	uint32_t uid, gid;
	uint32_t groups[OCI_USER_GROUPS_MAX];
	size_t ngroups;
};
int oci_image_user(struct oci_store *s, const struct oci_image *img, const char *spec,
                   struct oci_user *ret, struct err *err);

/* What a container takes from an image's config (config.json's "config"). */
struct oci_image_config {
	char **entrypoint, **cmd, **env; /* NULL-terminated; NULL when absent */
	char *working_dir, *user;        /* NULL when absent or empty */
	char *stop_signal;
	char *os, *architecture;
};
int oci_image_config_parse(const char *json, size_t len, struct oci_image_config **ret,
                           struct err *err);
void oci_image_config_free(struct oci_image_config *c);

/* ---- runtime bundles (spec.c) ------------------------------------------- */

/* A runtime-spec config.json as kin runs it (runtime-spec 1.0 to 1.2).
 * Unknown fields are ignored, as the spec says; a known field kin cannot
 * honour, or one that is malformed, is refused with INVALID_ARGUMENT (or
 * UNIMPLEMENTED) naming its JSON path. Strings and vectors are owned. */
#define OCI_SPEC_JSON_MAX  (4 << 20)
#define OCI_SPEC_LIST_MAX  256  /* args, env, mounts, sysctls, device rules, ... */
#define OCI_SPEC_NODES_MAX 1024 /* linux.devices: a privileged container lists the host's */

enum oci_ns {
	OCI_NS_PID,
	OCI_NS_NET,
	OCI_NS_MNT,
	OCI_NS_IPC,
	OCI_NS_UTS,
	OCI_NS_USER,
	OCI_NS_CGROUP,
	OCI_NS_COUNT
};

struct oci_mount {
	char *destination, *type, *source, *data; /* data: options mount(2) takes as text */
	unsigned long flags;                      /* MS_* (MS_BIND, MS_REC with rbind) */
	unsigned long propagation;                /* MS_PRIVATE, MS_SLAVE, ... (| MS_REC) */
};
struct oci_idmap {
	uint32_t container, host, size;
};
struct oci_rlimit {
	int type;
	uint64_t soft, hard;
};
struct oci_device_rule {
	bool allow;
	char type;            /* 'a', 'b', 'c' */
	int64_t major, minor; /* -1: any */
	unsigned access;      /* 1 r, 2 w, 4 m */
};

/* linux.devices: a node the container's /dev must have. */
struct oci_device_node {
	char *path;           /* absolute, under /dev */
	char type;            /* 'c', 'b', 'p' ('u' is read as 'c') */
	int64_t major, minor; /* 0 for 'p' */
	uint32_t mode;        /* permission bits; 0666 when not given */
	uint32_t uid, gid;
};

struct oci_spec {
	bool terminal;
	uint64_t console_rows, console_cols; /* process.consoleSize; 0: not given */
	uint32_t uid, gid;
	uint32_t groups[32];
	size_t ngroups;
	int umask; /* -1: not given */
	char **args, **env, *cwd;
	bool caps_given;
	uint64_t cap_bounding, cap_effective, cap_permitted, cap_inheritable, cap_ambient;
	struct oci_rlimit rlimits[16];
	size_t nrlimits;
	bool no_new_privileges;
	bool oom_score_adj_given;
	int oom_score_adj;
	char *root;
	bool root_readonly;
	unsigned long root_propagation; /* linux.rootfsPropagation's MS_* flags; 0: not given */
	char *hostname;
	struct oci_mount *mounts;
	size_t nmounts;
	bool ns[OCI_NS_COUNT];
	char *ns_path[OCI_NS_COUNT]; /* join this one (NULL: a new one) */
	struct oci_idmap uid_map[8], gid_map[8];
	size_t nuid_map, ngid_map;
	char **sysctl; /* "key=value" */
	char **masked, **readonly;
	bool masked_given, readonly_given;
	/* resources; -1 (or 0, NULL) where not given */
	int64_t memory_limit, memory_reservation, memory_swap, cpu_quota, pids_limit;
	uint64_t cpu_shares, cpu_period, blkio_weight;
	char *cpus, *mems;
	char **unified; /* "key=value" */
	struct oci_device_rule *devices;
	size_t ndevices;
	struct oci_device_node *nodes;
	size_t nnodes;
	/* linux.seccomp as a profile in kin's text form (docs/cells.md "Seccomp profiles"),
	 * "unknown skip" first: names this kernel lacks are skipped, as runc
	 * does. NULL: no filter. */
	char *seccomp_text;
	char **annotations; /* "key=value" (at most 256, 64 KiB): the containerd shim reads
	                     * io.kubernetes.cri.* from here */
	char note[256];     /* what was given and is ignored (apparmor, selinux) */
};

/* Parses config.json text of a bundle at bundle_dir (root.path relative
 * to it is made absolute). */
int oci_spec_parse(const char *json, size_t len, const char *bundle_dir, struct oci_spec **ret,
                   struct err *err);
/* Reads DIR/config.json (at most OCI_SPEC_JSON_MAX bytes) and parses it. */
int oci_spec_load(const char *bundle_dir, struct oci_spec **ret, struct err *err);
void oci_spec_free(struct oci_spec *s);
/* A runtime-spec LinuxResources object alone (containerd's Update): only
 * the resource fields of *ret are set; errors name the field. */
int oci_resources_parse(const char *json, size_t len, struct oci_spec **ret, struct err *err);
/* A spec's resources as cgroup v2 files and values, as runc writes them
 * (cpu shares to cpu.weight, blkio weight to io.weight, swap as
 * memory.swap.max), then linux.resources.unified's as given: set(limits,
 * file, value, err) for each, until one fails (err's code then
 * INVALID_ARGUMENT). The caller's limits are whatever set fills. */
typedef int (*oci_limit_set_fn)(void *limits, const char *file, const char *value, struct err *err);
int oci_cgroup_limits(const struct oci_spec *o, oci_limit_set_fn set, void *limits,
                      struct err *err);

/* ---- editing a runtime spec (edit.c) ------------------------------------ */

/* A config.json as JSON: read (at most OCI_SPEC_JSON_MAX bytes, no
 * duplicate keys; not checked as a spec: oci_spec_load does that), edited,
 * written back whole and compact. err names path (and the line). */
struct oci_json;
int oci_json_load(const char *path, struct oci_json **ret, struct err *err);
int oci_json_save(const struct oci_json *j, const char *path, struct err *err);
void oci_json_free(struct oci_json *j);
/* annotations[key] and linux.cgroupsPath, or NULL when absent or not a
 * string; valid while j is. */
const char *oci_json_annotation(const struct oci_json *j, const char *key);
const char *oci_json_cgroups_path(const struct oci_json *j);
/* Drops each linux.namespaces entry whose path starts with prefix. */
void oci_json_drop_namespaces(struct oci_json *j, const char *prefix);
/* Each bind mount (type bind, or option bind or rbind) whose source is
 * absolute, mounts[i] with source: move puts where it is now into buf
 * (the mount's new source) or fails, which ends the walk with its error.
 * More than OCI_SPEC_LIST_MAX mounts: -E2BIG, err naming path. */
typedef int (*oci_json_bind_fn)(size_t i, const char *source, char *buf, size_t size, void *data,
                                struct err *err);
int oci_json_move_binds(struct oci_json *j, const char *path, oci_json_bind_fn move, void *data,
                        struct err *err);
/* process becomes json (len bytes): -EINVAL, nothing changed, unless it is
 * one JSON object (no duplicate keys). */
int oci_json_set_process(struct oci_json *j, const char *json, size_t len);
void oci_json_set_root_path(struct oci_json *j, const char *path);
