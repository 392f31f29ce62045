/* units: systemd unit files as kin's service format.
 *
 * Three layers, one way each:
 *   1. files  — names (templates, instances, aliases), the search path, a
 *      unit's fragment and drop-ins, masks, the *.wants/ *.requires/ links
 *      (load.c); the file syntax itself (parse.c).
 *   2. defs   — every directive kin knows turned into a typed struct
 *      unit_def (config*.c), with specifiers expanded at load and command
 *      lines split into words (cmd.c); $VAR expansion waits for the run
 *      (the environment is known then). Unknown directives are reported
 *      once through a diag callback and ignored: a unit is never refused for
 *      one (systemd's own rule). A bad value drops that assignment only.
 *   3. the manager (manager.c, service.c, ...) — the loaded units, the boot
 *      transaction, services run as cells (system.slice/NAME.service).
 *
 * Everything that reads outside bytes (unit files, drop-ins, environment
 * files, calendar specs) is bounded and fuzzed. Library code logs at debug at
 * most; problems go to the caller's diag callback or a struct err. */
#pragma once

#include "cells/cells.h"
#include "lib/lib.h"

#include <stdint.h>
#include <sys/types.h>

/* ---- bounds ---------------------------------------------------------------- */

#define UNIT_NAME_MAX    255          /* bytes of a full unit name */
#define UNIT_FILE_MAX    (256 * 1024) /* one unit file or drop-in */
#define UNIT_LINE_MAX    (64 * 1024)  /* one logical line, continuations joined */
#define UNIT_DROPINS_MAX 64           /* drop-in files of one unit */
#define UNIT_DIRS_MAX    8            /* search path entries */
#define UNIT_LIST_MAX    256          /* entries of one list directive */
#define UNIT_CMDS_MAX    64           /* commands of one Exec* directive */
#define UNIT_ARGS_MAX    256          /* words of one command */
#define UNIT_ENV_MAX     256          /* Environment= assignments of a unit */
#define UNIT_ENVFILE_MAX (256 * 1024) /* an EnvironmentFile's size */
#define UNITS_MAX        2048         /* units one manager loads */
#define UNIT_INFINITY    UINT64_MAX   /* a time span or limit of "infinity" */

/* ---- names ------------------------------------------------------------------ */

enum unit_type {
	UNIT_SERVICE,
	UNIT_SOCKET,
	UNIT_TARGET,
	UNIT_TIMER,
	UNIT_PATH,
	UNIT_MOUNT,
	UNIT_AUTOMOUNT,
	UNIT_SWAP,
	UNIT_DEVICE,
	UNIT_SLICE,
	UNIT_SCOPE,
	UNIT_TYPE_COUNT,
	UNIT_TYPE_INVALID = -1,
};
const char *unit_type_name(enum unit_type t);           /* "service" */
enum unit_type unit_type_from_suffix(const char *name); /* by ".service"; INVALID */

/* A parsed name: "getty@tty1.service" is prefix "getty", instance "tty1",
 * type service, template "getty@.service". "foo.service" has no instance
 * (instance NULL), "getty@.service" is a template (instance ""). */
struct unit_name {
	char full[UNIT_NAME_MAX + 1];
	char prefix[UNIT_NAME_MAX + 1];
	char template_name[UNIT_NAME_MAX + 1]; /* "" unless an instance or template */
	const char *instance;                  /* into instance_buf, NULL: none */
	enum unit_type type;
	/* instance's bytes (a copy of the struct must point instance at its
	 * own: unit_name_parse(src.full) does). */
	char instance_buf[UNIT_NAME_MAX + 1];
};
/* Checks and splits a name systemd would accept: [A-Za-z0-9:_.\-\\@] with at
 * most one '@', a known type suffix, a non-empty prefix, ≤ UNIT_NAME_MAX.
 * -EINVAL with a sentence naming it. */
int unit_name_parse(const char *name, struct unit_name *ret, struct err *err);
bool unit_name_valid(const char *name);
/* "getty@.service" + "tty1" → "getty@tty1.service". */
int unit_name_instantiate(const char *template_name, const char *instance, char *buf, size_t size);
/* systemd's unit name escaping: "/dev/sda1" ↔ "dev-sda1" (path form, %I/%P),
 * '-' for '/', "\x2d" for '-', other bytes outside [A-Za-z0-9:_.] as \xNN. */
int unit_name_unescape(const char *in, bool path, char *buf, size_t size);
int unit_name_escape(const char *in, bool path, char *buf, size_t size);

/* ---- file syntax (parse.c) -------------------------------------------------- */

/* One assignment as read: the section it is in, the key, the value with
 * continuation lines joined (a '\' at line end joins with a space) and
 * leading/trailing whitespace gone; comments ('#' or ';' first on a line)
 * are skipped. An empty value ("Key=") is kept: it resets a list. */
struct unit_assign {
	const char *section; /* "Service" */
	const char *key;     /* "ExecStart" */
	const char *value;
	const char *file; /* for messages */
	unsigned line;    /* of the key */
};
typedef int (*unit_assign_fn)(const struct unit_assign *a, void *data);
/* Problems that do not stop a parse or a load (a line without '=', an
 * assignment before any section, an unknown directive, a bad value): one
 * sentence naming file:line and what was wrong. */
typedef void (*unit_diag_fn)(void *data, const char *file, unsigned line, const char *fmt, ...)
    _printf_(4, 5);
/* Calls fn for each assignment in order; fn returning < 0 stops. Bytes
 * beyond UNIT_FILE_MAX or a NUL byte refuse the file (-EINVAL/-EFBIG, err
 * names it). A line that is not an assignment or a section header goes to
 * diag and is skipped. */
int unit_file_parse(const char *text, size_t len, const char *file, unit_assign_fn fn,
                    unit_diag_fn diag, void *data, struct err *err);

/* ---- typed definitions (config*.c) ------------------------------------------- */

struct unit_strv {
	char **v; /* NULL-terminated once non-empty */
	size_t n;
};
int unit_strv_push(struct unit_strv *l, const char *s); /* copies; -E2BIG past UNIT_LIST_MAX */
void unit_strv_clear(struct unit_strv *l);
bool unit_strv_contains(const struct unit_strv *l, const char *s);

enum unit_dep {
	UNIT_DEP_WANTS,
	UNIT_DEP_REQUIRES,
	UNIT_DEP_REQUISITE,
	UNIT_DEP_BINDS_TO,
	UNIT_DEP_PART_OF,
	UNIT_DEP_CONFLICTS,
	UNIT_DEP_BEFORE,
	UNIT_DEP_AFTER,
	UNIT_DEP_ON_FAILURE,
	UNIT_DEP_UPHOLDS,
	UNIT_DEP_COUNT,
};
const char *unit_dep_name(enum unit_dep d); /* "Wants" */

/* Conditions and asserts: the [Unit] directives kin evaluates. */
enum unit_cond_type {
	UNIT_COND_PATH_EXISTS,
	UNIT_COND_PATH_EXISTS_GLOB,
	UNIT_COND_PATH_IS_DIRECTORY,
	UNIT_COND_PATH_IS_SYMBOLIC_LINK,
	UNIT_COND_PATH_IS_MOUNT_POINT,
	UNIT_COND_PATH_IS_READ_WRITE,
	UNIT_COND_DIRECTORY_NOT_EMPTY,
	UNIT_COND_FILE_NOT_EMPTY,
	UNIT_COND_FILE_IS_EXECUTABLE,
	UNIT_COND_KERNEL_COMMAND_LINE,
	UNIT_COND_VIRTUALIZATION,
	UNIT_COND_CAPABILITY,
	UNIT_COND_HOST,
	UNIT_COND_ARCHITECTURE,
	UNIT_COND_FIRST_BOOT,
	UNIT_COND_NEEDS_UPDATE,
	UNIT_COND_CONTROL_GROUP_CONTROLLER,
	UNIT_COND_USER,
	UNIT_COND_GROUP,
	UNIT_COND_SECURITY,
	UNIT_COND_AC_POWER,
	UNIT_COND_TYPE_COUNT,
};
struct unit_condition {
	enum unit_cond_type type;
	bool assert;  /* Assert*: failing fails the start */
	bool trigger; /* '|': any trigger condition suffices */
	bool negate;  /* '!' */
	char *arg;    /* specifiers expanded */
};
#define UNIT_CONDS_MAX 64
/* What conditions are checked against (tests give their own). */
struct unit_cond_env {
	const char *root;           /* paths are under it; "" or NULL: "/" */
	const char *cmdline;        /* /proc/cmdline's text */
	const char *virtualization; /* "kvm", "qemu", "container-other", "" none */
	bool container;             /* virtualization is a container's */
	uint64_t caps;              /* the capability bounding set kin has */
	const char *hostname, *machine_id, *architecture; /* "x86-64" */
	uint32_t controllers; /* bit per cells' cells_controller present */
	bool first_boot;
};
/* 1: all pass (or none), 0: a condition fails (why says which: `ConditionPathExists=
 * /etc/ssh/sshd_not_to_be_run`), -EPERM: an assert fails (err). Conditions of a
 * type kin cannot check (Security=, ACPower=) pass. */
int unit_conditions_check(const struct unit_condition *c, size_t n, const struct unit_cond_env *env,
                          char *why, size_t why_size);

/* One command of an Exec* directive, split into words with specifiers
 * expanded; $VAR/${VAR} are kept for unit_cmd_expand. */
#define UNIT_CMD_IGNORE_FAILURE  (1u << 0) /* '-' */
#define UNIT_CMD_ARGV0           (1u << 1) /* '@': the second word is argv[0] */
#define UNIT_CMD_FULL_PRIVILEGES (1u << 2) /* '+': no User=, no sandboxing */
#define UNIT_CMD_NO_SETUID       (1u << 3) /* '!': no User=/Group= switch */
#define UNIT_CMD_AMBIENT         (1u << 4) /* '!!' */
#define UNIT_CMD_NO_ENV_EXPAND   (1u << 5) /* ':' */
struct unit_cmd {
	unsigned flags;
	char *path;  /* the executable (absolute, or a name searched in PATH at run) */
	char **argv; /* NULL-terminated; argv[0] is path unless '@' gave another */
	size_t argc;
};
struct unit_cmds {
	struct unit_cmd *v;
	size_t n;
};
void unit_cmds_clear(struct unit_cmds *l);

/* Specifiers (%i %I %n %N %p %P %t %S %C %L %E %T %V %h %u %U %g %G %H %m %b %v %%)
 * as a system manager running as root expands them. */
struct unit_spec_ctx {
	const struct unit_name *name;
	const char *hostname, *machine_id, *boot_id, *kernel_release; /* NULL: "" */
};
/* Expands specifiers in in; an unknown specifier is -EINVAL naming it. */
int unit_specifiers_expand(const char *in, const struct unit_spec_ctx *ctx, char **ret,
                           struct err *err);
/* A whole Exec* value: prefixes, words (systemd's quoting and C escapes), ';'
 * as a command separator; appends to l. -EINVAL names what was wrong. */
int unit_cmd_parse(const char *value, const struct unit_spec_ctx *ctx, struct unit_cmds *l,
                   struct err *err);
/* The words at run time: "$VAR" alone becomes the value split at
 * whitespace (zero or more words), "${VAR}" (alone or in a word) and "$VAR"
 * in a word the value unsplit, "$$" a '$'; unset variables expand to
 * nothing. env is "K=V" strings (later ones win). The result is
 * NULL-terminated, freed with unit_argv_free. */
int unit_cmd_expand(const struct unit_cmd *cmd, char *const *env, size_t nenv, char ***ret_argv,
                    struct err *err);
void unit_argv_free(char **argv);
/* Environment= value: one or more "K=V" words (quotes as in commands),
 * appended to l (specifiers already expanded). */
int unit_env_assign_parse(const char *value, struct unit_strv *l, struct err *err);
/* An EnvironmentFile's text: KEY=VALUE lines, '#'/';' comments, single and
 * double quotes, backslash continuation; a bad line is skipped and counted in
 * *ret_bad. Appends "K=V" to l. */
int unit_envfile_parse(const char *text, size_t len, struct unit_strv *l, size_t *ret_bad,
                       struct err *err);
/* systemd time spans: "90", "1min 30s", "5s", "100ms", "2h", "infinity";
 * bare numbers are in default_unit_us (1000000 for seconds). */
int unit_timespan_parse(const char *s, uint64_t default_unit_us, uint64_t *ret_us);
/* Boolean directives: 1/yes/true/on, 0/no/false/off. */
int unit_bool_parse(const char *s, bool *ret);

/* OnCalendar= (calendar.c): the common forms — minutely, hourly, daily,
 * weekly, monthly, yearly/annually, quarterly, semiannually, "*-*-* 06:00:00",
 * "Mon..Fri *-*-* 9:00", lists "1,15", ranges "a..b", repeats "0/15",
 * "*:0/5", an optional trailing timezone "UTC" (else local time). */
struct unit_calendar {
	/* Each field a bitmask of the values allowed (all bits: '*'). */
	uint8_t weekdays;  /* bit 0 Monday .. bit 6 Sunday; 0x7f: any */
	uint64_t years[4]; /* bit (y - 1970): 1970..2225 */
	uint16_t months;   /* bits 1..12 */
	uint32_t days;     /* bits 1..31 */
	uint32_t hours;    /* bits 0..23 */
	uint64_t minutes;  /* bits 0..59 */
	uint64_t seconds;  /* bits 0..59 */
	bool utc;
};
int unit_calendar_parse(const char *s, struct unit_calendar *ret, struct err *err);
/* The first time (seconds since the epoch) strictly after after that
 * matches, in UTC or the local time given by tz_offset_s (seconds east).
 * -ENOENT when none within the years kept. */
int unit_calendar_next(const struct unit_calendar *c, int64_t after, long tz_offset_s,
                       int64_t *ret);

/* [Service] Type= */
enum unit_service_type {
	UNIT_SVC_SIMPLE,
	UNIT_SVC_EXEC,
	UNIT_SVC_FORKING,
	UNIT_SVC_ONESHOT,
	UNIT_SVC_NOTIFY,
	UNIT_SVC_IDLE,
	UNIT_SVC_DBUS, /* run as simple: kin has no bus (noted once) */
};
enum unit_restart {
	UNIT_RESTART_NO,
	UNIT_RESTART_ALWAYS,
	UNIT_RESTART_ON_SUCCESS,
	UNIT_RESTART_ON_FAILURE,
	UNIT_RESTART_ON_ABNORMAL,
	UNIT_RESTART_ON_ABORT,
	UNIT_RESTART_ON_WATCHDOG,
};
enum unit_kill_mode {
	UNIT_KILL_CONTROL_GROUP,
	UNIT_KILL_MIXED,
	UNIT_KILL_PROCESS,
	UNIT_KILL_NONE,
};
enum unit_notify_access { UNIT_NOTIFY_NONE, UNIT_NOTIFY_MAIN, UNIT_NOTIFY_EXEC, UNIT_NOTIFY_ALL };
enum unit_stdio {
	UNIT_STDIO_DEFAULT, /* input: null; output: kin's ring (journal, syslog, kmsg, inherit) */
	UNIT_STDIO_NULL,
	UNIT_STDIO_TTY,    /* TTYPath= (default /dev/console) */
	UNIT_STDIO_FILE,   /* file:PATH */
	UNIT_STDIO_APPEND, /* append:PATH */
	UNIT_STDIO_TRUNCATE,
	UNIT_STDIO_SOCKET, /* the socket unit's connection (Accept=yes), else null */
};
enum unit_protect_system {
	UNIT_PROTECT_SYSTEM_NO,
	UNIT_PROTECT_SYSTEM_YES,
	UNIT_PROTECT_SYSTEM_FULL,
	UNIT_PROTECT_SYSTEM_STRICT
};
enum unit_protect_home {
	UNIT_PROTECT_HOME_NO,
	UNIT_PROTECT_HOME_YES,
	UNIT_PROTECT_HOME_READ_ONLY,
	UNIT_PROTECT_HOME_TMPFS
};

/* RuntimeDirectory=, StateDirectory=, CacheDirectory=, LogsDirectory=,
 * ConfigurationDirectory= under /run, /var/lib, /var/cache, /var/log, /etc. */
enum unit_dir_kind {
	UNIT_DIR_RUNTIME,
	UNIT_DIR_STATE,
	UNIT_DIR_CACHE,
	UNIT_DIR_LOGS,
	UNIT_DIR_CONFIG,
	UNIT_DIR_KIND_COUNT
};

struct unit_rlimit {
	int resource;        /* RLIMIT_* */
	uint64_t soft, hard; /* UNIT_INFINITY: unlimited */
};
#define UNIT_RLIMITS_MAX 16
#define UNIT_SUCCESS_MAX 32 /* entries of SuccessExitStatus= & co. */

/* Exit statuses and signals listed by SuccessExitStatus=,
 * RestartPreventExitStatus=, RestartForceExitStatus= ("1 2 SIGKILL"). */
struct unit_exit_set {
	int codes[UNIT_SUCCESS_MAX];
	size_t ncodes;
	int signals[UNIT_SUCCESS_MAX];
	size_t nsignals;
};
bool unit_exit_set_has(const struct unit_exit_set *s, int code, int signal);

/* The execution settings services and sockets share. */
struct unit_exec {
	char *user, *group; /* names or numbers; resolved at run from the root's files */
	struct unit_strv supplementary_groups;
	bool dynamic_user;       /* noted, run as nobody */
	char *working_directory; /* "~" for the user's home; '-' prefix kept: missing is fine */
	char *root_directory;
	bool umask_set;
	mode_t umask;
	struct unit_rlimit rlimits[UNIT_RLIMITS_MAX];
	size_t nrlimits;
	bool nice_set, oom_score_adjust_set;
	int nice, oom_score_adjust;
	struct unit_strv environment;       /* "K=V", in order (later wins) */
	struct unit_strv environment_files; /* "-/etc/default/ssh": '-' kept */
	struct unit_strv pass_environment, unset_environment;
	enum unit_stdio std_input, std_output, std_error;
	char *std_output_path, *std_error_path, *std_input_path;
	char *tty_path;
	bool tty_reset, tty_vhangup;
	char *syslog_identifier;
	/* Directories made before the start, owned by User=/Group=. */
	struct unit_strv dirs[UNIT_DIR_KIND_COUNT];
	mode_t dir_modes[UNIT_DIR_KIND_COUNT]; /* default 0755 */
	bool runtime_directory_preserve;
	/* sandboxing kin honours */
	bool no_new_privileges;
	bool caps_bounding_set; /* CapabilityBoundingSet= given */
	uint64_t caps_bounding;
	uint64_t caps_ambient;
	bool private_tmp, private_network, private_devices, protect_proc_invisible;
	enum unit_protect_system protect_system;
	enum unit_protect_home protect_home;
	struct unit_strv read_only_paths, read_write_paths, inaccessible_paths; /* '-' kept */
	/* SystemCallFilter=: names and @groups as given; a leading '~' on the
	 * first assignment makes the list a deny-list. Later assignments of the
	 * same kind add; of the other kind subtract: their entries are kept
	 * with a '~' prefix ("~@privileged"), applied in order. The same for
	 * RestrictAddressFamilies=. */
	struct unit_strv syscall_filter;
	bool syscall_filter_deny;
	int syscall_errno;                 /* SystemCallErrorNumber=, 0: kill */
	struct unit_strv address_families; /* RestrictAddressFamilies= as given */
	bool address_families_deny;
};

/* The resource directives that map onto a cell (cells.h's cell_limits). */
struct unit_resources {
	uint32_t set; /* bit per enum unit_resource */
	uint64_t memory_min, memory_low, memory_high, memory_max,
	    memory_swap_max;           /* bytes or UNIT_INFINITY */
	uint64_t cpu_quota_per_sec_us; /* CPUQuota=20% → 200000 */
	uint64_t cpu_weight, io_weight, tasks_max;
	char allowed_cpus[128], allowed_mems[128];
	bool delegate;
};
enum unit_resource {
	UNIT_RES_MEMORY_MIN,
	UNIT_RES_MEMORY_LOW,
	UNIT_RES_MEMORY_HIGH,
	UNIT_RES_MEMORY_MAX,
	UNIT_RES_MEMORY_SWAP_MAX,
	UNIT_RES_CPU_QUOTA,
	UNIT_RES_CPU_WEIGHT,
	UNIT_RES_IO_WEIGHT,
	UNIT_RES_TASKS_MAX,
	UNIT_RES_ALLOWED_CPUS,
	UNIT_RES_ALLOWED_MEMS,
};

struct unit_service {
	enum unit_service_type type;
	bool remain_after_exit, guess_main_pid;
	char *pid_file;
	char *bus_name;
	struct unit_cmds exec_start_pre, exec_start, exec_start_post, exec_reload, exec_stop,
	    exec_stop_post, exec_condition;
	enum unit_restart restart;
	uint64_t restart_us; /* RestartSec=, default 100 ms */
	struct unit_exit_set success_exit_status, restart_prevent, restart_force;
	uint64_t timeout_start_us, timeout_stop_us;             /* default 90 s; UNIT_INFINITY */
	uint64_t timeout_abort_us, runtime_max_us, watchdog_us; /* 0: none */
	enum unit_kill_mode kill_mode;
	int kill_signal;                /* default SIGTERM */
	int restart_kill_signal;        /* 0: kill_signal */
	int final_kill_signal;          /* default SIGKILL */
	bool send_sigkill, send_sighup; /* default true, false */
	enum unit_notify_access notify_access;
	struct unit_strv sockets;    /* Sockets=: default the socket of the same name */
	char *file_descriptor_store; /* noted, unused */
	bool non_blocking;
};

/* [Socket] */
enum unit_listen_type {
	UNIT_LISTEN_STREAM,
	UNIT_LISTEN_DATAGRAM,
	UNIT_LISTEN_SEQPACKET,
	UNIT_LISTEN_FIFO
};
struct unit_listen {
	enum unit_listen_type type;
	char *address; /* "/run/x.sock", "@abstract", "80", "127.0.0.1:80", "[::]:80" as given */
};
#define UNIT_LISTENS_MAX 32
struct unit_socket {
	struct unit_listen listen[UNIT_LISTENS_MAX];
	size_t nlisten;
	bool accept;
	mode_t socket_mode, directory_mode; /* default 0666, 0755 */
	char *socket_user, *socket_group;
	char *file_descriptor_name; /* default the unit's name */
	char *service;              /* Service=; default NAME.service (Accept=no) */
	uint32_t backlog;           /* default SOMAXCONN */
	bool pass_credentials, pass_security, remove_on_stop, reuse_port, free_bind;
	int bind_ipv6_only; /* -1 default, 0 both, 1 ipv6-only */
	uint32_t max_connections;
};

/* [Timer] */
#define UNIT_CALENDARS_MAX 16
struct unit_timer {
	struct unit_calendar on_calendar[UNIT_CALENDARS_MAX];
	char *on_calendar_text[UNIT_CALENDARS_MAX];
	size_t non_calendar;
	uint64_t on_boot_us, on_startup_us, on_active_us, on_unit_active_us,
	    on_unit_inactive_us; /* 0: none */
	uint64_t randomized_delay_us, accuracy_us;
	bool persistent, wake_system, remain_after_elapse;
	char *unit; /* Unit=; default NAME.service */
};

/* [Install] */
struct unit_install {
	struct unit_strv wanted_by, required_by, alias, also;
	char *default_instance;
};

/* Where a definition came from. */
struct unit_source {
	char *fragment;           /* the unit file read ("" for a built-in) */
	struct unit_strv dropins; /* in the order applied */
	struct unit_strv aliases; /* other names that resolved to this unit */
	bool masked;              /* a link to /dev/null (or an empty file) */
};

struct unit_def {
	struct unit_name name; /* the unit's own name (an alias resolves to it) */
	struct unit_source source;
	/* [Unit] */
	char *description;
	struct unit_strv documentation;
	struct unit_strv deps[UNIT_DEP_COUNT]; /* names, specifiers expanded */
	struct unit_strv requires_mounts_for;
	struct unit_condition conds[UNIT_CONDS_MAX];
	size_t nconds;
	bool default_dependencies; /* default true */
	bool refuse_manual_start, refuse_manual_stop, stop_when_unneeded, allow_isolate;
	bool ignore_on_isolate;
	uint64_t start_limit_interval_us; /* default 10 s */
	unsigned start_limit_burst;       /* default 5 */
	uint64_t job_timeout_us;          /* 0: none */
	/* by type */
	struct unit_exec exec;       /* service, socket (ExecStartPre of sockets unused) */
	struct unit_resources res;   /* service, socket, slice */
	struct unit_service service; /* UNIT_SERVICE */
	struct unit_socket socket;   /* UNIT_SOCKET */
	struct unit_timer timer;     /* UNIT_TIMER */
	struct unit_install install;
	/* Wants=/Requires= that came from NAME.wants/ and NAME.requires/
	 * directories (the enablement links), kept apart so `cat` shows them. */
	struct unit_strv wants_dir, requires_dir;
	unsigned ignored; /* directives reported and ignored */
};

/* A definition with every default (Type=simple, TimeoutStartSec=90s, ...). */
int unit_def_new(const struct unit_name *name, struct unit_def **ret);
void unit_def_free(struct unit_def *d);
/* One assignment into d (the directive table, config*.c). Unknown
 * sections and keys, bad values: diag once, 0 returned (ignored). -E2BIG
 * when a list bound is passed (diag'd too) is also ignored; < 0 only on
 * -ENOMEM. */
int unit_def_apply(struct unit_def *d, const struct unit_assign *a, const struct unit_spec_ctx *ctx,
                   unit_diag_fn diag, void *data);

/* ---- loading from the search path (load.c) ------------------------------------ */

struct unit_paths {
	/* Absolute directories in priority order: /etc/systemd/system,
	 * /run/systemd/system, /lib/systemd/system, /usr/lib/systemd/system
	 * (below root; a directory missing is fine). */
	char dirs[UNIT_DIRS_MAX][256];
	size_t ndirs;
	char root[256]; /* "" for the real root; every path read is below it */
};
/* The four system directories below root ("" or "/": the real root). */
int unit_paths_init(struct unit_paths *p, const char *root);
/* Puts an extra directory first (tests, --unit-dir). */
int unit_paths_prepend(struct unit_paths *p, const char *dir);

/* Loads name: its fragment (the first directory that has it; a symlink to
 * /dev/null or an empty file masks it; a symlink to another name makes
 * this name an alias of that unit, loaded under its own name; an instance
 * falls back to its template's file), then drop-ins NAME.d/ *.conf of the
 * unit, its aliases and its template, and the type's (service.d/) —
 * ordered by file name, a file of a higher-priority directory hiding the
 * same name below — then NAME.wants/ and NAME.requires/ entries of every
 * directory. -ENOENT (NOT_FOUND, err names the unit) when there is no
 * fragment and no built-in; a fragment that cannot be read or parsed whole
 * fails the load with err naming the file. Problems inside go to diag. */
int unit_load(const struct unit_paths *p, const char *name, const struct unit_spec_ctx *base,
              unit_diag_fn diag, void *data, struct unit_def **ret, struct err *err);
/* The unit files present: every name (not templates) found in the search
 * path, with its state: "enabled", "static", "masked", "alias",
 * "disabled", "generated". fn returning < 0 stops. */
typedef int (*unit_file_visit_fn)(const char *name, const char *state, const char *path,
                                  void *data);
int unit_files_list(const struct unit_paths *p, unit_file_visit_fn fn, void *data);

/* ---- enable / disable (install.c) ----------------------------------------------- */

/* systemctl's enable/disable/mask/unmask on the files: the links [Install]
 * asks for, made in the first directory (/etc/systemd/system); every link
 * made or removed is reported through change ("created" / "removed", the
 * link, its target). Masking links NAME to /dev/null there. */
typedef void (*unit_change_fn)(const char *what, const char *link, const char *target, void *data);
int unit_enable(const struct unit_paths *p, const char *name, unit_change_fn change, void *data,
                struct err *err);
int unit_disable(const struct unit_paths *p, const char *name, unit_change_fn change, void *data,
                 struct err *err);
int unit_mask(const struct unit_paths *p, const char *name, bool mask, unit_change_fn change,
              void *data, struct err *err);
/* "enabled", "enabled-runtime", "linked", "alias", "masked", "static",
 * "disabled", "indirect", "generated", or -ENOENT. */
int unit_file_state(const struct unit_paths *p, const char *name, char *buf, size_t size);

/* ---- from a unit to a cells exec_spec (execspec.c) ----------------------------- */

/* What a run needs besides the definition. */
struct unit_run_ctx {
	const char *root; /* "" or "/": the real root; passwd/group and env files below it */
	char *const *manager_env; /* "K=V" every service starts from (PATH, LANG, ...) */
	size_t nmanager_env;
	const char
	    *notify_socket; /* NOTIFY_SOCKET= for Type=notify and NotifyAccess=, NULL: none */
	pid_t main_pid;     /* $MAINPID for ExecReload/ExecStop, 0: unset */
	const int *fds;     /* sockets passed as LISTEN_FDS (fd 3 on), none: NULL */
	size_t nfds;
	const char *fd_names;      /* LISTEN_FDNAMES (':'-joined) */
	const char *invocation_id; /* 32 hex chars, INVOCATION_ID= */
	bool control; /* a control command (pre, post, stop, reload): not the main one */
	/* PrivateTmp='s directories of this run (unit_private_tmp_make's name),
	 * NULL or "": a fresh tmpfs per command */
	const char *private_tmp;
};

/* A spec and the memory its pointers use; free with unit_exec_spec_free. */
struct unit_exec_spec {
	struct exec_spec spec;
	void *arena; /* everything spec points to */
};
/* One command of d as cells runs it: the words expanded with the run's
 * environment (unit_cmd_expand), User=/Group=/SupplementaryGroups= resolved
 * from root's /etc/passwd and /etc/group (the user's groups from
 * /etc/group as initgroups would; HOME, USER, LOGNAME, SHELL set), the
 * environment built in systemd's order (manager, Environment=,
 * EnvironmentFile= read now — '-' ignores a missing one —, PassEnvironment=,
 * UnsetEnvironment=, then MAINPID, NOTIFY_SOCKET, LISTEN_*, *_DIRECTORY),
 * WorkingDirectory, UMask, Limit*, Nice, OOMScoreAdjust, capabilities,
 * NoNewPrivileges, stdio (rings by default, files, a tty), and the
 * sandboxing kin honours (PrivateTmp, PrivateNetwork, ProtectSystem,
 * ProtectHome, ReadOnly/ReadWrite/InaccessiblePaths, ProtectProc,
 * SystemCallFilter, RestrictAddressFamilies) as namespaces, mounts and a
 * seccomp profile. The '+', '!' and '!!' prefixes drop what they say.
 * -errno with err naming the unit and the cause (`unit "nginx.service":
 * User=www: no such user in /etc/passwd`). */
int unit_exec_build(const struct unit_def *d, const struct unit_cmd *cmd,
                    const struct unit_run_ctx *ctx, struct unit_exec_spec *ret, struct err *err);
void unit_exec_spec_free(struct unit_exec_spec *s);
/* SystemCallFilter= and RestrictAddressFamilies= as a cells seccomp
 * profile's text (syscalls.c): *ret_text NULL when the unit has neither
 * (or names a syscall group kin does not know: logged); free it. */
int unit_syscall_profile(const struct unit_def *d, char **ret_text);
/* An errno by name ("EPERM") or number, 1..4095. */
int unit_errno_parse(const char *v, int *ret);
/* RuntimeDirectory= & co.: made (mode, owner) before the first command;
 * remove takes the runtime ones away after the stop (unless Preserve). */
int unit_exec_dirs_make(const struct unit_def *d, const struct unit_run_ctx *ctx, struct err *err);
void unit_exec_dirs_remove(const struct unit_def *d, const struct unit_run_ctx *ctx);
/* PrivateTmp='s directories for one run of a service, shared by all its
 * commands (ExecStartPre= writes what ExecStart= reads), as systemd's
 * systemd-private-*: ROOT/tmp/NAME/tmp and ROOT/var/tmp/NAME/tmp (mode
 * 1777), seen by the commands as /tmp and /var/tmp. ret gets NAME ("" when
 * the unit has no PrivateTmp=). */
int unit_private_tmp_make(const struct unit_def *d, const char *root, char *ret, size_t size,
                          struct err *err);
void unit_private_tmp_remove(const char *root, const char *name);
/* A user and a group by name or number from root's /etc/passwd and
 * /etc/group (SocketUser=, SocketGroup=); NULL or "": -1, unchanged. */
int unit_owner_lookup(const char *root, const char *user, const char *group, uid_t *ret_uid,
                      gid_t *ret_gid);
/* Delegate=: the service's cgroup (cgroup_dir) handed to its User= — the
 * directory and the files a delegatee writes (cgroup.procs,
 * cgroup.subtree_control, cgroup.threads) chowned, as systemd does; nothing
 * for root or without Delegate=. */
int unit_delegate_chown(const struct unit_def *d, const char *root, const char *cgroup_dir,
                        struct err *err);

/* ---- the manager (manager.c, job.c, service.c, socket.c, timer.c, notify.c) --- */

struct units;
struct units_config {
	const char *root; /* "" the real root (tests: a directory, search paths below it) */
	const char *const *extra_dirs; /* searched first (NULL-terminated; --unit-dir) */
	const char *default_target;    /* NULL: default.target (a link; else multi-user.target) */
	const char *slice;             /* the cell services run under: NULL "system.slice" */
	const char *log_dir;       /* per-service files (NULL: /var/log/kin below root; "" none) */
	const char *run_dir;       /* the notify socket's directory: NULL /run/systemd */
	struct unit_cond_env cond; /* what conditions see */
	const char *const *boot_wants; /* more units the boot pulls in (a console's getty) */
	char *const *env;              /* the services' base environment */
	size_t nenv;
	/* The notify socket a re-exec handed over (units_state_notify_fd),
	 * bound at run_dir/notify already; NULL: bind a new one. */
	const int *notify_fd;
};
/* Loads nothing yet: makes the notify socket and the slice cell. */
int units_new(struct ev_loop *loop, struct child_table *children, struct cells *cells,
              const struct units_config *cfg, struct units **ret, struct err *err);
/* Stops nothing: the services keep running, their records are forgotten. */
void units_free(struct units *u);
/* Loads the default target and what it pulls in, and starts it. Failures
 * of units are logged and shown by status; boot goes on. */
int units_boot(struct units *u, struct err *err);
/* Stops every unit in reverse dependency order with their ExecStop and
 * timeouts; done once all are inactive (or their deadlines passed). */
void units_shutdown(struct units *u, void (*done)(void *data), void *data);
bool units_idle(const struct units *u); /* no job queued or running */

/* ---- re-exec (state.c) --------------------------------------------------------
 * The manager's state goes along when kin re-executes itself (lib/state.h):
 * each loaded unit's active state, result and timestamps; a service's state,
 * main pid, restart count and invocation; a socket's listening fds; a timer's
 * last trigger; the notify socket. The next kin loads every unit again from
 * its files (what daemon-reload does) and gives each its state back; the
 * services' processes, cells' executables, run on untouched. Only settled
 * units are carried: no job queued or running, no service between two
 * states (a start, a stop, a reload, a command running) — a re-exec waits
 * for those. */
struct state_w;
struct state_in;
struct state_field;
/* true when every unit is settled; else why names the first that is not. */
bool units_settled(const struct units *u, char *why, size_t size);
/* kin's children the units track themselves (a Type=forking daemon
 * adopted from its PIDFile=), which go along with them. */
size_t units_children(const struct units *u);
void units_save(struct units *u, struct state_w *w, uint16_t tag);
/* The notify socket in a saved state (taken from in; or, from a killed
 * kin's file, the one the keeper held: taken from kept, set to -1 there),
 * -1 none: for units_config.notify_fd, before units_new. */
int units_state_notify_fd(struct state_in *in, const struct state_field *f, int *kept,
                          size_t nkept);
/* Takes the units of a saved state back on a new manager (units_new,
 * nothing booted). A unit whose record does not read, or whose file is gone
 * while its service ran, is stopped (its cell killed and removed) with a log
 * line naming it. The number of units taken back, or -EBADMSG. */
int units_restore(struct units *u, struct state_in *in, const struct state_field *f);
/* The same from a killed kin's state file (no fds): each service whose
 * main process runs on (an executable the cells adopted, or a daemon in
 * its cell, watched) is adopted as it was. A socket unit takes its
 * listening fds back from kept (what the keeper held, by inode; each
 * taken is set to -1 there), and its service is adopted too; without
 * them (no keeper) that service, like one caught mid-way, is stopped.
 * Then the boot as ever (units_boot) starts what is not running. */
int units_adopt(struct units *u, struct state_in *in, const struct state_field *f, int *kept,
                size_t nkept);
/* A keeper (cells.h) for the notify socket and the socket units' listening
 * fds: each goes to keep() as it is made, and every one held now at once
 * (a keeper started anew holds none); unkeep() before kin closes one.
 * NULL: none. */
void units_set_keeper(struct units *u, const struct cells_keeper *k);
/* fn(data) after a unit's active state or sub-state changes (a state file
 * written again soon). */
void units_on_change(struct units *u, void (*fn)(void *data), void *data);

enum unit_active {
	UNIT_ACTIVE_INACTIVE,
	UNIT_ACTIVE_ACTIVATING,
	UNIT_ACTIVE_ACTIVE,
	UNIT_ACTIVE_RELOADING,
	UNIT_ACTIVE_DEACTIVATING,
	UNIT_ACTIVE_FAILED,
};
const char *unit_active_name(enum unit_active a); /* "active" */

/* A unit as `systemctl status`/`show` tells it. Strings are copies. */
struct unit_status {
	char name[UNIT_NAME_MAX + 1];
	char description[256];
	char load_state[16]; /* "loaded", "not-found", "masked", "bad-setting", "error" */
	char load_error[256];
	enum unit_active active;
	char sub[24];    /* "running", "exited", "dead", "failed", "start-pre", "auto-restart",
	                    "listening", "waiting", "elapsed", "stop-sigterm", ... */
	char result[24]; /* "success", "exit-code", "signal", "core-dump", "timeout",
	                    "start-limit-hit", "resources", "protocol", "dependency" */
	char fragment[256];
	char unit_file_state[24];  /* "enabled", "disabled", "static", "masked", ... */
	char job[16];              /* "start", "stop", ... or "" */
	char cell[CELLS_PATH_MAX]; /* "system.slice/ssh.service", "" none */
	char status_text[256];     /* the last STATUS= */
	char condition[256];       /* the condition that failed, "" none */
	pid_t main_pid, control_pid;
	int exit_code, exit_signal; /* the main process's last end */
	bool exited;
	uint32_t restarts;
	uint64_t active_enter_us, inactive_enter_us; /* CLOCK_REALTIME, 0 never */
	uint64_t memory_current, tasks_current;      /* 0 when not known */
	bool has_memory, has_tasks;
	enum unit_type type;
	char triggered_by[UNIT_NAME_MAX + 1]; /* socket or timer, "" none */
	uint64_t next_elapse_us;              /* timers: CLOCK_REALTIME, 0 none */
	/* What `systemctl show` scripts read (invoke-rc.d asks CanReload
	 * before a reload or force-reload): */
	bool can_reload;       /* a service with ExecReload= */
	char service_type[12]; /* services: Type= ("simple", "notify", ...), else "" */
	char restart[16];      /* services: Restart= ("no", "on-failure", ...), else "" */
};
typedef int (*units_visit_fn)(const struct unit_status *st, void *data);
/* Every loaded unit (all: also inactive ones and unit files not loaded). */
int units_list(struct units *u, bool all, units_visit_fn fn, void *data);
/* Loads name when not loaded yet. */
int units_status(struct units *u, const char *name, struct unit_status *st, struct err *err);

enum units_job_type {
	UNITS_JOB_START,
	UNITS_JOB_STOP,
	UNITS_JOB_RESTART,
	UNITS_JOB_RELOAD,
	UNITS_JOB_TRY_RESTART,       /* restart when active, else nothing */
	UNITS_JOB_RELOAD_OR_RESTART, /* reload when it can, else restart */
	UNITS_JOB_TRY_RELOAD_OR_RESTART,
	UNITS_JOB_TYPE_COUNT,
};
const char *units_job_type_name(enum units_job_type t); /* "start" */
/* Result of a job: 0 done, or -errno with err (the unit failed: its result and status). */
typedef void (*units_job_done_fn)(int result, const struct err *err, void *data);
/* Queues the job for name (loading it if needed) with what it pulls in;
 * returns 1 (pending: done later from the loop, unless no_block: then 0 at
 * once and done is never called) or -errno (err: NOT_FOUND, masked,
 * RefuseManualStart=). done may be NULL. */
int units_job(struct units *u, const char *name, enum units_job_type type, bool no_block,
              units_job_done_fn done, void *data, struct err *err);
/* Rereads every unit file; running services keep running with their new
 * definition for the next start. */
int units_daemon_reload(struct units *u, struct err *err);
/* The unit's files as `systemctl cat` prints them ("# /path" headers). */
int units_cat(struct units *u, const char *name, char **ret_text, struct err *err);
/* The cell and executable holding a service's main process output, for
 * cells' exec_log_read/exec_log_follow (`logs NAME`). */
int units_log_ref(struct units *u, const char *name, char *cell, size_t cell_size, char *exec,
                  size_t exec_size, struct err *err);
const struct unit_paths *units_paths(const struct units *u);
/* The enable/disable/mask of install.c, then a daemon-reload when needed. */

/* ---- host sysinit (sysinit.c, fstab.c, tmpfiles.c) -------------------------- */

/* What machine init does to a host's real root before its units start, in
 * its late boot's child: fstab, machine-id, /run, sysctl.d, modules-load.d,
 * tmpfiles.d, generators, the random seed. Problems are logged; it always
 * goes on. What needs another module is the owner's: */
struct units_sysinit_ops {
	/* A UUID=, LABEL=, PARTUUID= or PARTLABEL= source into its device
	 * node (0), else < 0 and the source is mounted as written. NULL: none. */
	int (*resolve)(const char *spec, char *ret_dev, size_t size);
	/* modules-load.d's modules, comma-separated: > 0 when some failed
	 * to load. NULL: none are loaded. */
	int (*modules_load)(const char *csv);
};
void units_sysinit(const struct units_sysinit_ops *ops);
/* The root has unit directories: a host that units_sysinit is for. */
bool units_host_root(void);
/* What ConditionVirtualization= sees: on a machine the DMI vendor of a VM
 * ("qemu", "kvm"; "" else), "container-other" in any other role. */
void units_host_virt(char *buf, size_t size, bool machine);
/* The login prompt a host's boot wants on the console the kernel writes
 * to: "serial-getty@ttyS0.service", "getty@tty1.service"; "" none. */
void units_host_getty(char *buf, size_t size);
/* A fresh random seed for the next boot, where the host boot keeps it
 * (at the machine's stop, before the unmount). */
void units_sysinit_seed_save(void);
/* Every swap off (at the machine's stop, before the unmount: a swap file
 * keeps its filesystem busy, and / would not remount read-only). */
void units_sysinit_swapoff(void);
/* Pure parts, unit-tested and fuzzed: fstab options into mount(2) flags
 * and data (-E2BIG when data does not fit), one sysctl.d line, one
 * tmpfiles.d line (< 0 when it was refused or failed; logged with file:n). */
int units_fstab_mount_options(const char *opts, unsigned long *ret_flags, char *data, size_t size);
int units_sysctl_line(char *line, const char *file, unsigned n);
int units_tmpfiles_line(char *line, const char *file, unsigned n);
struct units_tmpfiles_entry {
	char type;                             /* d D f L z Z */
	const char *path, *user, *group, *arg; /* into the line; "-": unset */
	mode_t mode;
	bool mode_set;
};
/* One line split and checked (nothing done): -EINVAL refused,
 * -EOPNOTSUPP a type or modifier not in kin's subset. */
int units_tmpfiles_parse(char *line, struct units_tmpfiles_entry *e);
