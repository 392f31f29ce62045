/* config_more: [Socket], [Timer] and [Install] (systemd.socket(5),
 * systemd.timer(5), systemd.unit(5) "[Install] Section Options"). */
#include "units/config-int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SK(f) offsetof(struct unit_def, socket.f)
#define TM(f) offsetof(struct unit_def, timer.f)
#define IN(f) offsetof(struct unit_def, install.f)

static int listen_add(struct unit_def *d, enum unit_listen_type t, const char *v, struct err *err)
{
	struct unit_socket *s = &d->socket;
	if (!*v) {
		for (size_t i = 0; i < s->nlisten; i++)
			free(s->listen[i].address);
		s->nlisten = 0;
		return 0;
	}
	if (s->nlisten >= UNIT_LISTENS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "more than %d addresses",
		               UNIT_LISTENS_MAX);
	if (strlen(v) > 255)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "address too long");
	struct unit_listen *l = &s->listen[s->nlisten];
	l->type = t;
	l->address = strdup(v);
	if (!l->address)
		return -ENOMEM;
	s->nlisten++;
	return 0;
}

#define LISTEN(fn, t)                                                                              \
	static int fn(struct unit_def *d, void *f, const char *v, struct err *err)                 \
	{                                                                                          \
		(void)f;                                                                           \
		return listen_add(d, t, v, err);                                                   \
	}
LISTEN(cfg_stream, UNIT_LISTEN_STREAM)
LISTEN(cfg_dgram, UNIT_LISTEN_DATAGRAM)
LISTEN(cfg_seqpacket, UNIT_LISTEN_SEQPACKET)
LISTEN(cfg_fifo, UNIT_LISTEN_FIFO)

static int cfg_octal(struct unit_def *d, void *field, const char *v, struct err *err)
{
	char *end;
	unsigned long m = strtoul(v, &end, 8);
	(void)d;
	if (!*v || *end || m > 07777)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not an octal mode");
	*(mode_t *)field = (mode_t)m;
	return 0;
}

static int cfg_u32(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)d;
	if (str_to_u32(v, field) < 0)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "not a number");
	return 0;
}

static int cfg_v6only(struct unit_def *d, void *field, const char *v, struct err *err)
{
	(void)field;
	if (!strcmp(v, "default"))
		d->socket.bind_ipv6_only = -1;
	else if (!strcmp(v, "both"))
		d->socket.bind_ipv6_only = 0;
	else if (!strcmp(v, "ipv6-only"))
		d->socket.bind_ipv6_only = 1;
	else
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "not default, both or ipv6-only");
	return 0;
}

const struct cfg_directive cfg_socket_table[] = {
    {"ListenStream", cfg_stream, 0},
    {"ListenDatagram", cfg_dgram, 0},
    {"ListenSequentialPacket", cfg_seqpacket, 0},
    {"ListenFIFO", cfg_fifo, 0},
    {"Accept", cfg_bool, SK(accept)},
    {"SocketMode", cfg_octal, SK(socket_mode)},
    {"DirectoryMode", cfg_octal, SK(directory_mode)},
    {"SocketUser", cfg_str, SK(socket_user)},
    {"SocketGroup", cfg_str, SK(socket_group)},
    {"FileDescriptorName", cfg_str, SK(file_descriptor_name)},
    {"Service", cfg_str, SK(service)},
    {"Backlog", cfg_u32, SK(backlog)},
    {"PassCredentials", cfg_bool, SK(pass_credentials)},
    {"PassSecurity", cfg_bool, SK(pass_security)},
    {"RemoveOnStop", cfg_bool, SK(remove_on_stop)},
    {"ReusePort", cfg_bool, SK(reuse_port)},
    {"FreeBind", cfg_bool, SK(free_bind)},
    {"BindIPv6Only", cfg_v6only, 0},
    {"MaxConnections", cfg_u32, SK(max_connections)},
    {"ReceiveBuffer", NULL, 0},
    {"SendBuffer", NULL, 0},
    {"Symlinks", NULL, 0},
    {"Writable", NULL, 0},
    {"Priority", NULL, 0},
    {"KeepAlive", NULL, 0},
    {NULL, NULL, 0},
};

static int cfg_calendar(struct unit_def *d, void *f, const char *v, struct err *err)
{
	struct unit_timer *t = &d->timer;
	(void)f;
	if (!*v) {
		for (size_t i = 0; i < t->non_calendar; i++)
			free(t->on_calendar_text[i]);
		t->non_calendar = 0;
		return 0;
	}
	if (t->non_calendar >= UNIT_CALENDARS_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT,
		               "more than %d OnCalendar=", UNIT_CALENDARS_MAX);
	int r = unit_calendar_parse(v, &t->on_calendar[t->non_calendar], err);
	if (r < 0)
		return r;
	if (!(t->on_calendar_text[t->non_calendar] = strdup(v)))
		return -ENOMEM;
	t->non_calendar++;
	return 0;
}

const struct cfg_directive cfg_timer_table[] = {
    {"OnCalendar", cfg_calendar, 0},
    {"OnBootSec", cfg_secs, TM(on_boot_us)},
    {"OnStartupSec", cfg_secs, TM(on_startup_us)},
    {"OnActiveSec", cfg_secs, TM(on_active_us)},
    {"OnUnitActiveSec", cfg_secs, TM(on_unit_active_us)},
    {"OnUnitInactiveSec", cfg_secs, TM(on_unit_inactive_us)},
    {"RandomizedDelaySec", cfg_secs, TM(randomized_delay_us)},
    {"AccuracySec", cfg_secs, TM(accuracy_us)},
    {"Persistent", cfg_bool, TM(persistent)},
    {"WakeSystem", cfg_bool, TM(wake_system)},
    {"RemainAfterElapse", cfg_bool, TM(remain_after_elapse)},
    {"Unit", cfg_str, TM(unit)},
    {"FixedRandomDelay", NULL, 0},
    {"OnClockChange", NULL, 0},
    {"OnTimezoneChange", NULL, 0},
    {NULL, NULL, 0},
};

const struct cfg_directive cfg_install_table[] = {
    {"WantedBy", cfg_words, IN(wanted_by)},
    {"RequiredBy", cfg_words, IN(required_by)},
    {"Alias", cfg_words, IN(alias)},
    {"Also", cfg_words, IN(also)},
    {"DefaultInstance", cfg_str, IN(default_instance)},
    {NULL, NULL, 0},
};

void cfg_more_free(struct unit_def *d)
{
	struct unit_socket *s = &d->socket;
	for (size_t i = 0; i < s->nlisten; i++)
		free(s->listen[i].address);
	free(s->socket_user);
	free(s->socket_group);
	free(s->file_descriptor_name);
	free(s->service);
	struct unit_timer *t = &d->timer;
	for (size_t i = 0; i < t->non_calendar; i++)
		free(t->on_calendar_text[i]);
	free(t->unit);
	unit_strv_clear(&d->install.wanted_by);
	unit_strv_clear(&d->install.required_by);
	unit_strv_clear(&d->install.alias);
	unit_strv_clear(&d->install.also);
	free(d->install.default_instance);
}
