/* json: every `-o json` output of kin ctl, from the messages' protobuf-c
 * descriptors (field names as in proto/ files), and the one JSON string
 * escaper. Numbers are printed as numbers (64-bit ones too), enums as
 * their value's name, bytes as a string. */
#include "ctl/ctl-int.h"

#include <stdio.h>
#include <string.h>

void ctl_json_str(const char *s, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_cstr(const char *s)
{
	ctl_json_str(s ? s : "", s ? strlen(s) : 0);
}

static void json_enum(const ProtobufCFieldDescriptor *f, int v)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
	if (e)
		json_cstr(e->name);
	else
		printf("%d", v);
}

static void json_value(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
		json_cstr(*(char *const *)p);
		break;
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		ctl_json_str((const char *)b->data, b->len);
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)p ? "true" : "false", stdout);
		break;
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		printf("%d", *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		printf("%u", *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		printf("%llu", (unsigned long long)*(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		printf("%lld", (long long)*(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		printf("%.2f", *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		printf("%.2f", (double)*(const float *)p);
		break;
	case PROTOBUF_C_TYPE_ENUM:
		json_enum(f, *(const int *)p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
		if (sub)
			ctl_json_msg(sub);
		else
			fputs("null", stdout);
		break;
	}
	}
}

static size_t field_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	default:
		return 4;
	}
}

static void json_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
	const uint8_t *base = (const uint8_t *)m;
	json_cstr(f->name);
	putchar(':');
	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		json_value(f, base + f->offset);
		return;
	}
	size_t n = *(const size_t *)(base + f->quantifier_offset);
	const uint8_t *arr = *(uint8_t *const *)(base + f->offset);
	putchar('[');
	for (size_t k = 0; k < n; k++) {
		if (k)
			putchar(',');
		json_value(f, arr + k * field_size(f));
	}
	putchar(']');
}

static bool name_in(const char *const *names, const char *name)
{
	for (; names && *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

void ctl_json_fields(const ProtobufCMessage *m, const char *const *first, bool comma)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	for (const char *const *n = first; n && *n; n++) {
		const ProtobufCFieldDescriptor *f =
		    protobuf_c_message_descriptor_get_field_by_name(d, *n);
		if (!f)
			continue;
		if (comma)
			putchar(',');
		comma = true;
		json_field(m, f);
	}
	for (unsigned i = 0; i < d->n_fields; i++) {
		if (name_in(first, d->fields[i].name))
			continue;
		if (comma)
			putchar(',');
		comma = true;
		json_field(m, &d->fields[i]);
	}
}

void ctl_json_line_ordered(const ProtobufCMessage *m, const char *const *first)
{
	putchar('{');
	ctl_json_fields(m, first, false);
	puts("}");
	fflush(stdout);
}

void ctl_json_msg(const ProtobufCMessage *m)
{
	putchar('{');
	ctl_json_fields(m, NULL, false);
	putchar('}');
}

void ctl_json_line(const ProtobufCMessage *m)
{
	ctl_json_msg(m);
	putchar('\n');
	fflush(stdout);
}
