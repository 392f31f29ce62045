/* image: `kin ctl image import|list|inspect|rm` — the OCI image store of
 * a kin (kin.v1.Images). Paths in references are on the machine that kin
 * runs on; a relative one that exists here is made absolute (as vm start
 * does with its files), for the usual case of kin on this machine. */
#include "ctl/ctl-int.h"
#include "proto/images.pb-c.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char ctl_image_help[] =
    "\nImages (the OCI image store of the kin called; paths are on its machine):\n"
    "  image import REF [--name NAME]   REF: oci:DIR[:TAG], oci-archive:FILE[:TAG],\n"
    "                            docker-archive:FILE[:NAME]; waits until the layers\n"
    "                            are verified and unpacked\n"
    "  image list                every image: name, digest, size, created, users\n"
    "  image inspect NAME        the image's config (JSON); NAME or a digest\n"
    "  image rm NAME             refused while an executable uses it\n";

static void print_info(const Kin__V1__ImageInfo *m, bool one_line)
{
	char when[32] = "-";
	time_t t = (time_t)m->created;
	struct tm tm;
	if (m->created > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (one_line) {
		printf("%-32s %-19.19s %10llu %-20s %u\n", m->name, m->digest,
		       (unsigned long long)m->size, when, m->users);
		return;
	}
	printf("name:     %s\ndigest:   %s\nconfig:   %s\nsize:     %llu\ncreated:  %s\n"
	       "users:    %u\nlayers:   %zu\n",
	       m->name, m->digest, m->config, (unsigned long long)m->size, when, m->users,
	       m->n_layers);
	for (size_t i = 0; i < m->n_layers; i++)
		printf("  %s\n", m->layers[i]);
}

/* [-o json] [--name NAME (import)] WORD: the one positional word. */
static int image_parse(struct ctl *ctl, int argc, char **argv, const char **ret_word,
                       const char **ret_name)
{
	bool import = !strcmp(argv[1], "import"), list = !strcmp(argv[1], "list");
	int r;
	*ret_word = NULL;
	for (int i = 2; i < argc; i++) {
		if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
			if ((r = ctl_output_opt(ctl, argv[++i])) != CTL_OK)
				return r;
		} else if (!strcmp(argv[i], "--name") && import && i + 1 < argc) {
			*ret_name = argv[++i];
		} else if (argv[i][0] == '-') {
			return ctl_usage(ctl, "unknown option or missing value '%s'", argv[i]);
		} else if (!*ret_word && !list) {
			*ret_word = argv[i];
		} else {
			return ctl_usage(ctl, "unexpected argument '%s'", argv[i]);
		}
	}
	if (!list && !*ret_word)
		return ctl_usage(ctl, "%s needs %s", argv[1], import ? "a REF" : "a NAME");
	return CTL_OK;
}

/* TRANSPORT:PATH[:TAG] with PATH relative and found here: made absolute
 * into buf. Anything else is sent as written (kin names what is wrong). */
static const char *absolute_ref(const char *ref, char *buf, size_t size)
{
	const char *colon = strchr(ref, ':'), *tag;
	char path[PATH_MAX], real[PATH_MAX];
	if (!colon || colon[1] == '/' || colon[1] == 0)
		return ref;
	str_copy(path, sizeof(path), colon + 1);
	tag = NULL;
	if (!realpath(path, real)) {
		char *last = strrchr(path, ':');
		if (!last || strchr(last, '/'))
			return ref;
		*last = 0;
		tag = last + 1;
		if (!realpath(path, real))
			return ref;
	}
	if (snprintf(buf, size, "%.*s%s%s%s", (int)(colon - ref + 1), ref, real, tag ? ":" : "",
	             tag ? tag : "") >= (int)size)
		return ref;
	return buf;
}

static int image_import(struct ctl *ctl, int argc, char **argv)
{
	static char abs_ref[PATH_MAX + 512];
	Kin__V1__ImageImportRequest in = KIN__V1__IMAGE_IMPORT_REQUEST__INIT;
	const char *ref, *name = "";
	ProtobufCMessage *out;
	int r = image_parse(ctl, argc, argv, &ref, &name);
	if (r != CTL_OK)
		return r;
	in.ref = (char *)absolute_ref(ref, abs_ref, sizeof(abs_ref));
	in.name = (char *)name;
	/* An import takes as long as the layers do: no timeout unless given. */
	r = ctl_call_simple(ctl, "kin.v1.Images", "Import", &in.base,
	                    &kin__v1__image_info__descriptor, &out, true);
	if (r != CTL_OK)
		return r;
	if (ctl->json)
		ctl_json_line(out);
	else
		print_info((Kin__V1__ImageInfo *)out, false);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int image_list(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ImageListRequest in = KIN__V1__IMAGE_LIST_REQUEST__INIT;
	const char *word, *name;
	ProtobufCMessage *out;
	int r = image_parse(ctl, argc, argv, &word, &name);
	if (r != CTL_OK)
		return r;
	r = ctl_call_simple(ctl, "kin.v1.Images", "List", &in.base,
	                    &kin__v1__image_list_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ImageListResponse *m = (Kin__V1__ImageListResponse *)out;
	if (!ctl->json)
		printf("%-32s %-19s %10s %-20s %s\n", "NAME", "DIGEST", "SIZE", "CREATED", "USERS");
	for (size_t i = 0; i < m->n_images; i++) {
		if (ctl->json)
			ctl_json_line(&m->images[i]->base);
		else
			print_info(m->images[i], true);
	}
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int image_inspect(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ImageRequest in = KIN__V1__IMAGE_REQUEST__INIT;
	const char *name, *unused;
	ProtobufCMessage *out;
	int r = image_parse(ctl, argc, argv, &name, &unused);
	if (r != CTL_OK)
		return r;
	in.name = (char *)name;
	r = ctl_call_simple(ctl, "kin.v1.Images", "Inspect", &in.base,
	                    &kin__v1__image_inspect_response__descriptor, &out, false);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ImageInspectResponse *m = (Kin__V1__ImageInspectResponse *)out;
	if (ctl->json)
		ctl_json_line(out);
	else
		printf("%s\n", m->config_json);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static int image_rm(struct ctl *ctl, int argc, char **argv)
{
	Kin__V1__ImageRequest in = KIN__V1__IMAGE_REQUEST__INIT;
	const char *name, *unused;
	ProtobufCMessage *out;
	int r = image_parse(ctl, argc, argv, &name, &unused);
	if (r != CTL_OK)
		return r;
	in.name = (char *)name;
	r = ctl_call_simple(ctl, "kin.v1.Images", "Remove", &in.base,
	                    &kin__v1__image_remove_response__descriptor, &out, true);
	if (r != CTL_OK)
		return r;
	const Kin__V1__ImageRemoveResponse *m = (Kin__V1__ImageRemoveResponse *)out;
	if (ctl->json)
		ctl_json_line(out);
	else
		printf("removed %s (%s)\n", m->name, m->digest);
	protobuf_c_message_free_unpacked(out, NULL);
	return CTL_OK;
}

static const struct option import_opts[] = {
    {"name", required_argument, NULL, 'n'},
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};
static const struct option plain_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

const struct ctl_cmd ctl_image_cmds[] = {
    {"import", "import an OCI image", image_import, import_opts, NULL},
    {"list", "every image", image_list, plain_opts, NULL},
    {"inspect", "an image's config", image_inspect, plain_opts, NULL},
    {"rm", "remove an image", image_rm, plain_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

int ctl_image_main(struct ctl *ctl, int argc, char **argv)
{
	return ctl_cmd_dispatch(ctl, ctl_image_cmds, argc, argv,
	                        "expected import, list, inspect or rm",
	                        "unknown image command '%s' (import, list, inspect, rm)", false);
}
