/* config: what a container takes from an image's config blob — the
 * "config" object of image-spec's config.json (Entrypoint, Cmd, Env,
 * WorkingDir, User, StopSignal). The blob was verified on import, yet a
 * store can be edited by hand: every field is checked and bounded. */
#include "oci/oci-int.h"

#include <jansson.h>
#include <string.h>

#define CONFIG_STRINGS_MAX 1024 /* elements of Entrypoint, Cmd or Env */

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static int strv_get(json_t *obj, const char *key, char ***ret, struct err *err)
{
	json_t *a = json_object_get(obj, key), *e;
	size_t i;
	*ret = NULL;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > CONFIG_STRINGS_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "image config: config.%s: not a list of at most %d strings", key,
		               CONFIG_STRINGS_MAX);
	char **v = calloc(json_array_size(a) + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		const char *s = json_string_value(e);
		if (!s || !(v[i] = strdup(s))) {
			strv_free(v);
			return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
			               "image config: config.%s[%zu]: not a string", key, i);
		}
	}
	*ret = v;
	return 0;
}

static int str_get(json_t *obj, const char *key, char **ret, struct err *err)
{
	json_t *v = json_object_get(obj, key);
	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "image config: %s: not a string",
		               key);
	if (json_string_length(v) == 0)
		return 0;
	return (*ret = strdup(json_string_value(v))) ? 0 : -ENOMEM;
}

int oci_image_config_parse(const char *json, size_t len, struct oci_image_config **ret,
                           struct err *err)
{
	json_error_t je;
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return err_set(err, -EBADMSG, ERR_INVALID_ARGUMENT,
		               "image config: not a JSON object (%s)", j ? "other type" : je.text);
	}
	struct oci_image_config *c = calloc(1, sizeof(*c));
	json_t *cfg = json_object_get(j, "config");
	int r = c ? 0 : -ENOMEM;
	if (r == 0 && cfg && !json_is_object(cfg) && !json_is_null(cfg))
		r = err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		            "image config: config: not an object");
	if (r == 0)
		r = strv_get(cfg, "Entrypoint", &c->entrypoint, err);
	if (r == 0)
		r = strv_get(cfg, "Cmd", &c->cmd, err);
	if (r == 0)
		r = strv_get(cfg, "Env", &c->env, err);
	if (r == 0)
		r = str_get(cfg, "WorkingDir", &c->working_dir, err);
	if (r == 0)
		r = str_get(cfg, "User", &c->user, err);
	if (r == 0)
		r = str_get(cfg, "StopSignal", &c->stop_signal, err);
	if (r == 0)
		r = str_get(j, "os", &c->os, err);
	if (r == 0)
		r = str_get(j, "architecture", &c->architecture, err);
	json_decref(j);
	if (r < 0) {
		oci_image_config_free(c);
		return r == -ENOMEM ? err_set_errno(err, r, "image config: out of memory") : r;
	}
	*ret = c;
	return 0;
}

void oci_image_config_free(struct oci_image_config *c)
{
	if (!c)
		return;
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	strv_free(c->env);
	free(c->working_dir);
	free(c->user);
	free(c->stop_signal);
	free(c->os);
	free(c->architecture);
	free(c);
}
