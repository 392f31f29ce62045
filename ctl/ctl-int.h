/* ctl-int: what the files of `kin ctl` share, never included outside
 * ctl/. One `kin ctl` run is a struct ctl: its options, the one connection
 * every unary call of the run uses, and the words its messages start
 * with. Every command is a row of a command table (struct ctl_cmd): the
 * same tables dispatch, and make the bash completion (ctl/completion.c).
 * Every helper here prints what went wrong itself and returns the exit
 * code to end with, so a command only passes codes on. */
#pragma once

#include "rpc/rpc.h"
#include "vm/vm.h"
#include "proto/kin.pb-c.h"
#include "proto/system.pb-c.h"
#include "proto/cells.pb-c.h"
#include "proto/vm.pb-c.h"
#include "proto/zone.pb-c.h"
#include "proto/units.pb-c.h"

#include <getopt.h>
#include <stdio.h>
#include <limits.h>
#include <stdint.h>

/* Exit codes, the contract scripts rely on (docs/rpc.md, kin-ctl(1)). */
enum { CTL_OK = 0, CTL_RPC_ERROR = 1, CTL_USAGE = 2, CTL_UNREACHABLE = 3 };

/* How long `exec start` waits by default: kin's own deadline for a
 * child's setup (5 s, docs/cells.md) and 5 s more, so a setup that times
 * out is reported as DEADLINE_EXCEEDED, not as an unreachable kin. */
#define CTL_EXEC_START_WAIT_MS (5000 + 5000)

#define CTL_RELAYS_MAX 16 /* TLS relay children of one run */

struct ctl {
	const char *address; /* unix:PATH, vsock:CID:PORT, tls:HOST:PORT, PATH */
	bool address_set;    /* --socket/--connect given: a context's does not apply */
	const char *cert, *key, *ca, *server_name; /* tls: */
	const char *context;                       /* --context */
	pid_t relays[CTL_RELAYS_MAX];              /* reaped at the end */
	size_t n_relays;
	char dial_err[ERR_MSG_MAX]; /* why a TLS connection failed */
	bool json;
	int timeout_ms;      /* unary calls */
	bool timeout_set;    /* given: also bounds waits (wait, stop, freeze, delete) */
	struct rpc_kv md[1]; /* --target: sent with every call */
	size_t n_md;
	struct rpc_client *client; /* connected at the first call, kept to the end */
	const char *what;          /* "cell create", for messages */
	char what_buf[64];
};

/* The client configuration (ctl/config.c): named contexts. */
#define CTL_CONTEXTS_MAX 32
struct ctl_context {
	char name[65];
	char address[256];
	char cert[512], key[512], ca[512];
	char server_name[256];
	char target[256];
};
struct ctl_config {
	char path[PATH_MAX];
	char current[65];
	bool has_current; /* a current-context line, even an empty one */
	size_t n;
	struct ctl_context ctx[CTL_CONTEXTS_MAX];
};
/* Reads ~/.config/kin/config or $KIN_CONFIG; none there is an empty one.
 * -errno with err naming the file and line. */
int ctl_config_load(struct ctl_config *cfg, struct err *err);
/* text: len bytes, changed in place; cfg->path names it in messages. */
int ctl_config_parse(struct ctl_config *cfg, char *text, size_t len, struct err *err);
const struct ctl_context *ctl_config_find(const struct ctl_config *cfg, const char *name);
int ctl_config_main(struct ctl *ctl, int argc, char **argv);
/* A connected socket to kin at ctl->address (a TLS relay's end for tls:). */
int ctl_dial(struct ctl *ctl, int *ret_fd);
bool ctl_address_is_tls(const char *a); /* tls:HOST:PORT, well formed */

/* One command or subcommand. run gets argv with argv[0] its own word.
 * opts: its options, for the completion. subs: its subcommands
 * ({NULL}-terminated), when it has any. */
struct ctl_cmd {
	const char *name;
	const char *help; /* one line */
	int (*run)(struct ctl *ctl, int argc, char **argv);
	const struct option *opts;
	const struct ctl_cmd *subs;
};

/* The subcommand argv[1] of group (argv[0]) run from table: ctl->what
 * becomes "GROUP SUB" (what_sub) or "GROUP"; missing and unknown are the
 * usage sentences for no and an unknown subcommand ("%s": the word). */
int ctl_cmd_dispatch(struct ctl *ctl, const struct ctl_cmd *table, int argc, char **argv,
                     const char *missing, const char *unknown, bool what_sub);
const struct ctl_cmd *ctl_cmd_find(const struct ctl_cmd *table, const char *name);

/* "kin ctl WHAT: ..." and where help is, on stderr; returns CTL_USAGE. */
int ctl_usage(struct ctl *ctl, const char *fmt, ...) _printf_(2, 3);
/* Options every subcommand takes: -o json|text, -h; and getopt's errors.
 * Returns 1 when the command ends with *ret, 0 when parsing goes on, -1
 * when c is not one of them. av is the vector given to getopt. */
int ctl_common_opt(struct ctl *ctl, int c, char **av, int *ret);
/* -o's value into ctl->json; CTL_USAGE (said) when neither text nor json. */
int ctl_output_opt(struct ctl *ctl, const char *arg);

/* How a call ended (r: the client's result, st: its status when r >= 0),
 * said on stderr and, with -o json, as {"error":...} on stdout; returns
 * the exit code. */
int ctl_result(struct ctl *ctl, int r, const struct err *st);
/* One unary call on the run's connection, bounded by timeout_ms (0: waits
 * as long as kin takes); target (NULL: --target's) as kin-target. quiet:
 * an RPC error is returned (CTL_RPC_ERROR, *st set) but not printed. */
struct ctl_call {
	const char *service, *method;
	const ProtobufCMessage *in;
	const ProtobufCMessageDescriptor *out_desc;
	int timeout_ms;
	const char *target;
	bool quiet;
};
int ctl_call(struct ctl *ctl, const struct ctl_call *c, ProtobufCMessage **ret_out, struct err *st);
/* ctl_call with the run's timeout; waits: no timeout unless --timeout was given. */
int ctl_call_simple(struct ctl *ctl, const char *service, const char *method,
                    const ProtobufCMessage *in, const ProtobufCMessageDescriptor *out_desc,
                    ProtobufCMessage **ret_out, bool waits);
/* A server stream to its end: each message printed (as JSON with -o json)
 * as it comes; the exit code says how the stream ended. */
int ctl_stream_run(struct ctl *ctl, const char *service, const char *method,
                   const ProtobufCMessage *in, const ProtobufCMessageDescriptor *desc,
                   void (*print)(const ProtobufCMessage *m));

/* JSON (ctl/json.c): s (len bytes) as a JSON string; a message by its
 * descriptor, every field under its proto name; a line of it, flushed. */
void ctl_json_str(const char *s, size_t len);
void ctl_json_msg(const ProtobufCMessage *m);
void ctl_json_line(const ProtobufCMessage *m);
/* A message's fields without the braces, after a comma when comma: those
 * named in first (NULL-terminated, may be NULL) in that order, then the
 * rest in field order. The order scripts have read since the JSON was
 * written by hand (version, zones). */
void ctl_json_fields(const ProtobufCMessage *m, const char *const *first, bool comma);
void ctl_json_line_ordered(const ProtobufCMessage *m, const char *const *first);

/* KEY=VALUE into the next of lims/ptrs (max): CTL_OK, or CTL_USAGE said. */
int ctl_limit_add(struct ctl *ctl, Kin__V1__Limit *lims, Kin__V1__Limit **ptrs, size_t *n,
                  size_t max, char *kv, const char *bad_fmt, const char *full_fmt);

/* The VM options `vm start` and `zone create --vm` share, parsed by vm/'s
 * table (vm/options.c; getopt values VM_OPT_VAL + id) into a spec; the
 * requests take what was given (given: 1 << id), "" or 0 for the rest.
 * Paths are made absolute here: the kin that starts QEMU may run
 * elsewhere (cwd). */
struct ctl_vm_args {
	struct vm_spec spec;
	unsigned given;
};
void ctl_vm_args_init(struct ctl_vm_args *a);
/* c: VM_OPT_VAL + id; door: VM_OPT_FOR_CTL or VM_OPT_FOR_ZONE. */
int ctl_vm_opt(struct ctl *ctl, struct ctl_vm_args *a, unsigned door, int c, const char *arg);
/* The request's value of option id: what was given, else "" (0 for
 * numbers: ctl_vm_num). */
const char *ctl_vm_str(const struct ctl_vm_args *a, enum vm_opt_id id);
uint32_t ctl_vm_num(const struct ctl_vm_args *a, enum vm_opt_id id);

/* The command groups (their tables, and the help text of each). */
extern const struct ctl_cmd ctl_cell_cmds[], ctl_exec_cmds[], ctl_vm_cmds[], ctl_zone_cmds[],
    ctl_image_cmds[];
extern const struct option ctl_cell_opts[], ctl_exec_opts[], ctl_events_opts[], ctl_shell_opts[];
extern const char ctl_cells_help[], ctl_vm_help[], ctl_zone_help[], ctl_image_help[];
int ctl_cell_main(struct ctl *ctl, int argc, char **argv);
int ctl_exec_main(struct ctl *ctl, int argc, char **argv);
int ctl_events_main(struct ctl *ctl, int argc, char **argv);
int ctl_shell_main(struct ctl *ctl, int argc, char **argv);
int ctl_vm_main(struct ctl *ctl, int argc, char **argv);
int ctl_zone_main(struct ctl *ctl, int argc, char **argv);
int ctl_image_main(struct ctl *ctl, int argc, char **argv);
/* A LogChunk of a log stream (exec logs, service logs): its bytes to
 * stdout or stderr as they came, a note for bytes dropped. */
void ctl_log_print(const ProtobufCMessage *m);

/* Exec/Start of in, waiting as long as kin's setup deadline and more; a
 * terminal's size, unless given, is the client terminal's. */
int ctl_exec_start_call(struct ctl *ctl, Kin__V1__StartRequest *in, ProtobufCMessage **ret_out);
/* The exit code of an ended run, as a shell's: its code, 128 + its
 * signal, 255 when unknown. */
int ctl_exit_status(const Kin__V1__ExecStatus *s);

/* Attached to an executable (ctl/attach.c): its output to stdout and
 * stderr from where from says (resume), kin ctl's stdin to it, until it
 * ends (the exit code is its status), the detach key (-1: none) or a
 * signal ends kin ctl (128 + N; the process goes on). terminal: the
 * executable has one: the client's terminal goes raw (restored on every
 * way out) and its window size follows SIGWINCH. close_at_eof: the end
 * of kin ctl's stdin closes the executable's. */
struct ctl_attach {
	const char *cell, *name;
	bool terminal, require_terminal, resume, close_at_eof;
	uint64_t from[2];
	int detach_key;
};
#define CTL_DETACH_KEY_DEFAULT 0x1d /* Ctrl-] */
int ctl_attach(struct ctl *ctl, const struct ctl_attach *opt);
/* Whether the last ctl_attach ended because kin ctl got a signal. */
bool ctl_attach_signalled(void);
/* The client terminal's size (stdin's or stdout's); false when neither is one. */
bool ctl_window_size(unsigned *rows, unsigned *cols);
/* "^]", "^P", "^x" into its byte; "none" -1; anything else -2. */
int ctl_detach_key_parse(const char *s);

/* ---- services: kin.v1.Units (ctl/service.c), for `kin ctl service` and
 * the systemctl personality (ctl/systemctl.c) ---------------------------------------- */

#define CTL_UNIT_NAME_MAX 255 /* units.h's UNIT_NAME_MAX: kin checks it again */
/* A name as systemctl mangles it: one without a unit type suffix gets
 * ".service" ("ssh" → "ssh.service"); any other (too long ones too: kin
 * says what is wrong) is returned as given. buf: CTL_UNIT_NAME_MAX + 1. */
const char *ctl_unit_name(const char *in, char *buf, size_t size);
/* Status as systemctl prints it: "● NAME - DESCRIPTION", Loaded:, Active:,
 * Main PID:, Status:, Tasks:, Memory:, CGroup:, then the log lines. */
void ctl_unit_print_status(FILE *f, const Kin__V1__UnitStatusResponse *m);
/* "Created symlink LINK → TARGET." / "Removed \"LINK\"." per change. */
void ctl_unit_print_changes(FILE *f, const Kin__V1__UnitFilesResponse *m);
/* The table of list-units (legend: the header and the count line). */
void ctl_unit_print_list(FILE *f, const Kin__V1__ListUnitsResponse *m, bool legend);
/* "Mon 2024-01-01 10:00:00 UTC; 2h 3min ago" of a CLOCK_REALTIME µs time. */
void ctl_unit_since(uint64_t us, uint64_t now_us, char *buf, size_t size);
/* Calls of kin.v1.Units; quiet: an RPC error is not printed (st set).
 * Jobs without no_block and DaemonReload wait (no timeout unless --timeout). */
int ctl_unit_status(struct ctl *ctl, const char *name, uint32_t log_lines, bool quiet,
                    Kin__V1__UnitStatusResponse **ret, struct err *st);
int ctl_unit_job(struct ctl *ctl, const char *name, const char *type, bool no_block, bool quiet,
                 Kin__V1__UnitJobResponse **ret, struct err *st);
/* method: Enable, Disable, Mask, Unmask. */
int ctl_unit_files(struct ctl *ctl, const char *method, char **names, size_t n, bool quiet,
                   Kin__V1__UnitFilesResponse **ret, struct err *st);
int ctl_unit_list(struct ctl *ctl, bool all, bool quiet, Kin__V1__ListUnitsResponse **ret,
                  struct err *st);
int ctl_daemon_reload(struct ctl *ctl, bool quiet, struct err *st);
extern const struct ctl_cmd ctl_service_cmds[];
extern const struct option ctl_service_opts[];
extern const char ctl_service_help[];
int ctl_service_main(struct ctl *ctl, int argc, char **argv);
int ctl_daemon_reload_main(struct ctl *ctl, int argc, char **argv);

/* ---- the systemctl personality (ctl/systemctl.c, systemctl_verbs.c) -------------------- */

#include "ctl/ctl.h"

#define CTL_SC_ARGS_MAX  64 /* unit names (or patterns) of one command */
#define CTL_SC_PROPS_MAX 64 /* -p names */

/* systemctl's command line, parsed (options anywhere, "--" ends them). */
struct ctl_sc_args {
	const char *verb; /* NULL: list-units */
	char *args[CTL_SC_ARGS_MAX];
	size_t nargs;
	const char *props[CTL_SC_PROPS_MAX];
	size_t nprops;
	char props_buf[4096]; /* -p A,B split here */
	size_t props_len;
	const char *root, *type, *state, *preset_mode, *signal;
	uint32_t lines;
	bool quiet, no_block, now, force, full, all, value, no_legend, runtime, user, version, help;
};
/* CTL_OK, or CTL_USAGE with why (one sentence) filled. */
int ctl_sc_parse(int argc, char **argv, struct ctl_sc_args *a, char *why, size_t why_size);
/* A verb systemctl has: its kin.v1.Units translation (NULL: unknown). */
struct ctl_sc_verb {
	const char *name;
	int (*run)(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
	           const struct ctl_systemctl_env *env);
	const char *job; /* the Job type (start, ...), or the file verb (enable, ...) */
	bool offline;    /* works on the files without a running kin */
	int min_args;    /* unit names needed */
};
const struct ctl_sc_verb *ctl_sc_verb_find(const char *name);
/* `systemctl show`: each property of u asked for (all known ones when
 * none) as NAME=VALUE, or VALUE with --value; unknown names print nothing. */
void ctl_sc_show(FILE *f, const Kin__V1__UnitStatus *u, const char *const *props, size_t n,
                 bool value);
/* Exit codes of systemctl's queries for one unit's state. */
int ctl_sc_is_active_code(const char *active_state);  /* 0 active/reloading, else 3 */
int ctl_sc_is_enabled_code(const char *file_state);   /* 0 enabled & co., else 1 */
int ctl_sc_status_code(const Kin__V1__UnitStatus *u); /* 0 running, 3 not, 4 not found */
/* is-system-running of a unit list: running, degraded, starting. */
const char *ctl_sc_system_state(const Kin__V1__ListUnitsResponse *m);

/* `kin ctl completion bash`. */
int ctl_completion_main(struct ctl *ctl, int argc, char **argv);
extern const struct ctl_cmd ctl_cmds[];
extern const struct option ctl_main_opts[];
