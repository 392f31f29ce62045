/* edit: a runtime spec's config.json as JSON, edited and written back
 * whole, so that what kin does not know of it reaches the runtime that
 * reads it unchanged (a shim rewrites a container's spec for the zone
 * that runs it, and an exec's from its container's). What it reads of a
 * bundle without checking the spec (start and delete must work on one
 * that Create would refuse) is read here too. */
#include "oci/oci.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

struct oci_json {
	json_t *root;
};

int oci_json_load(const char *path, struct oci_json **ret, struct err *err)
{
	_cleanup_free_ char *text = NULL;
	int r = file_read_regular(path, OCI_SPEC_JSON_MAX, &text, NULL);
	if (r < 0)
		return err_set_errno(err, r, "%s: %s", path, strerror(-r));
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: line %d: %s", path,
		               jerr.line, jerr.text);
	struct oci_json *j = malloc(sizeof(*j));
	if (!j) {
		json_decref(root);
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
	}
	j->root = root;
	*ret = j;
	return 0;
}

int oci_json_save(const struct oci_json *j, const char *path, struct err *err)
{
	if (json_dump_file(j->root, path, JSON_COMPACT) < 0)
		return err_set(err, -EIO, ERR_INTERNAL, "%s: cannot write", path);
	return 0;
}

void oci_json_free(struct oci_json *j)
{
	if (!j)
		return;
	json_decref(j->root);
	free(j);
}

const char *oci_json_annotation(const struct oci_json *j, const char *key)
{
	return json_string_value(json_object_get(json_object_get(j->root, "annotations"), key));
}

const char *oci_json_cgroups_path(const struct oci_json *j)
{
	return json_string_value(json_object_get(json_object_get(j->root, "linux"), "cgroupsPath"));
}

void oci_json_drop_namespaces(struct oci_json *j, const char *prefix)
{
	json_t *nss = json_object_get(json_object_get(j->root, "linux"), "namespaces");
	for (size_t i = 0; json_is_array(nss) && i < json_array_size(nss);) {
		const char *p = json_string_value(json_object_get(json_array_get(nss, i), "path"));
		if (p && str_startswith(p, prefix))
			json_array_remove(nss, i);
		else
			i++;
	}
}

/* A bind mount: of type bind, or with a bind or rbind option (runc's
 * reading; containerd writes either). */
static bool mount_is_bind(json_t *m)
{
	const char *type = json_string_value(json_object_get(m, "type"));
	if (type && strcmp(type, "bind") == 0)
		return true;
	json_t *opts = json_object_get(m, "options"), *o;
	size_t i;
	json_array_foreach(opts, i, o)
	{
		const char *v = json_string_value(o);
		if (v && (strcmp(v, "bind") == 0 || strcmp(v, "rbind") == 0))
			return true;
	}
	return false;
}

int oci_json_move_binds(struct oci_json *j, const char *path, oci_json_bind_fn move, void *data,
                        struct err *err)
{
	char source[PATH_MAX];
	json_t *mounts = json_object_get(j->root, "mounts"), *m;
	size_t i;
	if (json_array_size(mounts) > OCI_SPEC_LIST_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "%s: more than %d mounts", path,
		               OCI_SPEC_LIST_MAX);
	json_array_foreach(mounts, i, m)
	{
		const char *s = json_string_value(json_object_get(m, "source"));
		if (!mount_is_bind(m) || !s || s[0] != '/')
			continue;
		int r = move(i, s, source, sizeof(source), data, err);
		if (r < 0)
			return r;
		json_object_set_new(m, "source", json_string(source));
	}
	return 0;
}

int oci_json_set_process(struct oci_json *j, const char *json, size_t len)
{
	json_t *proc = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(proc)) {
		json_decref(proc);
		return -EINVAL;
	}
	json_object_set_new(j->root, "process", proc);
	return 0;
}

void oci_json_set_root_path(struct oci_json *j, const char *path)
{
	json_object_set_new(json_object_get(j->root, "root"), "path", json_string(path));
}
