// auth: who may call what, and the audit trail of what they changed. One
// authorization model for every transport: a policy of rules
//
//     IDENTITY ROLE [TARGET...]        # comments and blank lines allowed
//
//   IDENTITY  uid:N, gid:N (unix peers: the peer's uid; its primary or any
//             supplementary gid), uri:URI, dns:NAME, cn:NAME (names a TLS
//             peer's verified client certificate carries: SAN URIs, SAN DNS
//             names, the subject's CN). dns: compares without case.
//   ROLE      read     Health, Version, every List/Show/Status/Logs/Events/
//                      Stats/Wait/Inspect
//             operate  read + start, stop, signal, exec, stdin, freeze,
//                      thaw, kill of cells and executables
//             admin    everything (power, zones, VMs, images, cells'
//                      create/update/delete, policy reload)
//   TARGET    where through routing (the kin-target of a call): none = this
//             kin only; "." this kin; "pod1" exactly that kin; "pod1/*"
//             pod1 and every kin below it; "vm/db/*" likewise; "*" this kin
//             and every kin below.
//
// No rule means no access. A peer the transport vouches for as the machine's
// own superuser (root or kin's own uid on the unix socket, the parent over a
// zone's channel or a VM's link) is admin everywhere whatever the policy.
// A policy that does not parse is refused as a whole, naming the line.
// Every method kin serves has a role in one table (auth_method_role); a
// method missing from it needs admin. Knows nothing of rpc: init passes
// strings.
#pragma once

#include "lib/lib.h"

#include <sys/types.h>

enum auth_role { AUTH_NONE = 0, AUTH_READ = 1, AUTH_OPERATE = 2, AUTH_ADMIN = 3 };

#define AUTH_RULES_MAX   4096       /* rules in one policy */
#define AUTH_TARGETS_MAX 32         /* targets on one rule */
#define AUTH_LINE_MAX    4096       /* bytes in one policy line */
#define AUTH_FILE_MAX    (1u << 20) /* bytes in a policy file */
#define AUTH_NAME_MAX    255        /* bytes in an identity's value (after "uri:") */
#define AUTH_NAMES_MAX   16         /* names one TLS peer carries */
#define AUTH_GROUPS_MAX  64         /* supplementary gids looked at */

/* Who calls, as its transport vouched for it. Strings are borrowed. */
struct auth_peer {
	const char *transport; /* "unix", "vsock", "tls", "zone", "link": for messages */
	bool superuser;        /* admin everywhere (see above) */
	bool has_ids;          /* uid/gid/groups are meaningful (unix peers) */
	uid_t uid;
	gid_t gid;
	size_t n_groups;
	gid_t groups[AUTH_GROUPS_MAX];
	size_t n_names;
	const char *names[AUTH_NAMES_MAX]; /* "uri:spiffe://a/b", "dns:x.example", "cn:ops" */
};

struct auth_policy;

/* Parses a whole policy; source names it in messages ("/etc/kin/policy").
 * On error: -EINVAL (or -ENOMEM, -E2BIG) and err says
 * "SOURCE: line N: WHAT" (unknown role "root", bad identity "uid:x",
 * a target with an empty hop, too many rules ...). An empty text is a
 * valid policy with no rules. */
int auth_policy_parse(const char *text, size_t len, const char *source, struct auth_policy **ret,
                      struct err *err);
/* Reads path (at most AUTH_FILE_MAX bytes, else -EFBIG) and parses it. */
int auth_policy_load(const char *path, struct auth_policy **ret, struct err *err);
/* An empty policy (no rules), for rules added one by one. */
int auth_policy_new(struct auth_policy **ret);
/* Adds one rule as it would appear in a file ("uid:1000 admin *"):
 * kin.rpc.uids=/gids= become rules this way. Same checks as a file line. */
int auth_policy_add_line(struct auth_policy *p, const char *line, struct err *err);
size_t auth_policy_count(const struct auth_policy *p);
void auth_policy_free(struct auth_policy *p);
/* kin's policy from its sources: the file (auth_policy_load; "" none) and
 * the shorthand rules "uid:N admin *" and "gid:N admin *" for the ids
 * given (kin.rpc.uids=, gids=). */
struct auth_policy_sources {
	const char *file;
	const uint32_t *uids, *gids;
	size_t n_uids, n_gids;
};
int auth_policy_build(const struct auth_policy_sources *src, struct auth_policy **ret,
                      struct err *err);

/* The role a method needs ("kin.v1.Cells", "Create"): from the table. */
enum auth_role auth_method_role(const char *service, const char *method);
/* true when a method changes something (needs more than read): audited. */
bool auth_method_changes(const char *service, const char *method);
/* true when the table names the method (not the admin default): the unit
 * test asserts every kin.v1 method is classified on purpose. */
bool auth_method_known(const char *service, const char *method);
const char *auth_role_name(enum auth_role role); /* "read", "operate", "admin", "none" */

// May peer call service/method on target ("" or NULL: this kin)? 0 yes;
// -EACCES no, and err (ERR_PERMISSION_DENIED) says who, what and why:
//   "cn:ops may not call kin.v1.System/Poweroff: it needs admin, cn:ops has operate"
//   "uid:1000 may not call kin.v1.Cells/List on \"pod2\": its rules reach pod1/*"
//   "uid:1000 may not call kin.v1.Health/Check: no rule names uid:1000 or its gids"
// A NULL policy is one with no rules.
int auth_check(const struct auth_policy *p, const struct auth_peer *peer, const char *service,
               const char *method, const char *target, struct err *err);
/* The peer's name in messages and audit lines: its first TLS name, else
 * "uid:N", else its transport. */
void auth_peer_name(const struct auth_peer *peer, char *buf, size_t size);

/* ---- audit (auth/audit.c) ------------------------------------------------ */

/* One line per change and per denial, through log_info ("audit: ..."):
 *   audit: who=cn:ops via=tls call=kin.v1.Cells/Create target=pod1 object=web result=OK
 * (values quoted when they hold a space or quote; control bytes escaped).
 * Changes are all logged (their number is bounded by the calls kin serves);
 * denials at most AUTH_AUDIT_DENIALS_PER_S per second, and those past it are
 * counted and reported in one line ("audit: 512 denials not logged in the
 * last 1.0 s (rate limit)") at the next audit line or auth_audit_tick. */
#define AUTH_AUDIT_DENIALS_PER_S 20
struct auth_audit {
	uint64_t window_ns; /* start of the current one-second window */
	unsigned logged;    /* denials logged in it */
	uint64_t dropped;   /* denials not logged since the last report */
	uint64_t dropped_since_ns;
};
struct auth_audit_entry {
	const char *who, *via, *service, *method, *target, *object;
	int code;    /* ERR_* (lib/err.h) */
	bool denial; /* rate-limited */
};
/* The line auth_audit_log logs ("audit: who=... result=OK") into buf
 * (always terminated; each value cut to AUTH_AUDIT_VALUE_MAX bytes so a
 * line fits the log's). NULL or empty target: "target=."; NULL strings
 * otherwise print as "". Returns the length written. */
#define AUTH_AUDIT_VALUE_MAX 160
#define AUTH_AUDIT_LINE_MAX  960
size_t auth_audit_format(const struct auth_audit_entry *e, char *buf, size_t size);
/* now_ns: CLOCK_MONOTONIC (a parameter, for tests). */
void auth_audit_log(struct auth_audit *a, const struct auth_audit_entry *e, uint64_t now_ns);
/* Reports dropped denials once their window has passed. */
void auth_audit_tick(struct auth_audit *a, uint64_t now_ns);
/* The object a request names, for audit: the request's protobuf field 1
 * when it is a length-delimited field of 1..128 printable bytes (a name,
 * a path, an id in every kin.v1 request that has one); else "". Reads the
 * payload's wire format only, never trusting it. */
void auth_request_object(const uint8_t *payload, size_t len, char *buf, size_t size);
