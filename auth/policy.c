/* policy: the rules of auth.h, parsed strictly (a policy that does not
 * parse is refused whole, naming the line, so a typo never silently grants
 * or drops access), and auth_check, which says whether a peer may call a
 * method on a target and, when not, why in one sentence an operator can
 * act on. */
#include "auth/auth-int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum ident_kind { IDENT_UID, IDENT_GID, IDENT_URI, IDENT_DNS, IDENT_CN };
enum target_kind { TARGET_SELF, TARGET_ALL, TARGET_EXACT, TARGET_TREE };

struct target {
	enum target_kind kind;
	const char *path; /* EXACT, TREE: the hops (TREE without its last hop "*") */
	const char *text; /* as written, for messages */
};

struct rule {
	enum ident_kind kind;
	uint32_t id;      /* uid:, gid: */
	const char *name; /* the identity as written ("dns:x.example") */
	enum auth_role role;
	size_t n_targets; /* 0: this kin only */
	struct target *targets;
	char *strings; /* owns name, path and text */
};

struct auth_policy {
	struct rule *rules;
	size_t n, cap;
};

/* A quoted token for a message: short enough to keep the sentence. */
#define QUOTE_MAX 60
#define QUOTE_BUF (QUOTE_MAX * 4 + 8)

/* s escaped and in double quotes, for a message. */
static const char *quote(char buf[static QUOTE_BUF], const char *s)
{
	size_t n = auth_escape(buf + 1, QUOTE_BUF - 2, s, strlen(s), QUOTE_MAX);
	buf[0] = '"';
	buf[n + 1] = '"';
	buf[n + 2] = '\0';
	return buf;
}

/* ---- targets ------------------------------------------------------------ */

/* Why the hops of path (joined by '/') are not a target, or NULL when they
 * are one. Hops are object names (lib's name_is_valid), so a target can
 * never climb out of the tree it names. */
static const char *hops_problem(const char *path)
{
	const char *p = path;
	for (;;) {
		size_t n = strcspn(p, "/");
		if (n == 0)
			return "an empty hop";
		if (n > NAME_MAX_LEN)
			return "a hop longer than 64 bytes";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return n == 1 ? "a \".\" hop" : "a \"..\" hop";
		for (size_t i = 0; i < n; i++) {
			char c = p[i];
			if (c == '*')
				return "\"*\" other than as the whole target or its last hop";
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
				return "a byte outside [A-Za-z0-9_.-] in a hop";
		}
		if (p[n] == '\0')
			return NULL;
		p += n + 1;
	}
}

/* Parses a rule's target in place (a subtree's ending is cut off). */
static const char *target_parse(char *s, struct target *t)
{
	size_t len = strlen(s);
	t->path = NULL;
	if (strcmp(s, ".") == 0) {
		t->kind = TARGET_SELF;
		return NULL;
	}
	if (strcmp(s, "*") == 0) {
		t->kind = TARGET_ALL;
		return NULL;
	}
	t->kind = TARGET_EXACT;
	t->path = s;
	if (len >= 2 && strcmp(s + len - 2, "/*") == 0) {
		t->kind = TARGET_TREE;
		s[len - 2] = '\0';
	}
	return hops_problem(s);
}

static bool target_matches(const struct target *t, const char *call)
{
	switch (t->kind) {
	case TARGET_SELF:
		return !call;
	case TARGET_ALL:
		return true;
	case TARGET_EXACT:
		return call && strcmp(call, t->path) == 0;
	case TARGET_TREE: {
		size_t n = strlen(t->path);
		/* on hop boundaries only: "pod10" is not below "pod1" */
		return call && strncmp(call, t->path, n) == 0 &&
		       (call[n] == '\0' || call[n] == '/');
	}
	}
	return false;
}

/* ---- rules --------------------------------------------------------------- */

static void rule_done(struct rule *r)
{
	free(r->targets);
	free(r->strings);
}

static const char *identity_parse(const char *s, struct rule *r)
{
	static const struct {
		const char *prefix;
		enum ident_kind kind;
	} kinds[] = {
	    {"uid:", IDENT_UID}, {"gid:", IDENT_GID}, {"uri:", IDENT_URI},
	    {"dns:", IDENT_DNS}, {"cn:", IDENT_CN},
	};
	r->name = s;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (!str_startswith(s, kinds[i].prefix))
			continue;
		const char *v = s + strlen(kinds[i].prefix);
		r->kind = kinds[i].kind;
		if (r->kind == IDENT_UID || r->kind == IDENT_GID) {
			/* (uid_t)-1 means "no id" to the kernel: never a peer's */
			if (str_to_u32(v, &r->id) < 0 || r->id == UINT32_MAX)
				return "not a decimal id below 4294967295";
			return NULL;
		}
		size_t n = strlen(v);
		if (n == 0)
			return "an empty name";
		if (n > AUTH_NAME_MAX)
			return "a name longer than 255 bytes";
		for (size_t j = 0; j < n; j++)
			if (v[j] <= ' ' || v[j] > '~')
				return "a byte that is not printable ASCII";
		return NULL;
	}
	return "expected uid:N, gid:N, uri:, dns: or cn:";
}

static int role_parse(const char *s, enum auth_role *ret)
{
	for (enum auth_role r = AUTH_READ; r <= AUTH_ADMIN; r++)
		if (strcmp(s, auth_role_name(r)) == 0) {
			*ret = r;
			return 0;
		}
	return -EINVAL;
}

/* Splits a line (len bytes, no '\n') into at most max tokens in buf,
 * dropping a comment and a trailing CR. Returns the count or -E2BIG. */
static int tokenize(const char *line, size_t len, char *buf, char **tok, size_t max)
{
	size_t n = 0;
	memcpy(buf, line, len);
	buf[len] = '\0';
	char *hash = strchr(buf, '#');
	if (hash)
		*hash = '\0';
	size_t l = strlen(buf);
	if (l > 0 && buf[l - 1] == '\r')
		buf[l - 1] = '\0';
	for (char *p = buf;;) {
		p += strspn(p, " \t");
		if (!*p)
			return (int)n;
		if (n == max)
			return -E2BIG;
		tok[n++] = p;
		p += strcspn(p, " \t");
		if (*p)
			*p++ = '\0';
	}
}

/* Parses one line into a rule (n_targets counts its targets; an empty line
 * gives *ret_empty). where: "SOURCE: line N" or "rule \"...\"". */
static int rule_parse(const char *line, size_t len, const char *where, struct rule *r,
                      bool *ret_empty, struct err *err)
{
	char q[QUOTE_BUF];
	char *tok[AUTH_TARGETS_MAX + 2];
	*ret_empty = false;
	*r = (struct rule){0};
	if (len > AUTH_LINE_MAX)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: longer than %d bytes",
		               where, AUTH_LINE_MAX);
	if (memchr(line, '\0', len))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: a NUL byte", where);

	/* One allocation owns every string of the rule: the tokens, and a
	 * second copy of the targets so a subtree's path can drop its last hop. */
	r->strings = malloc(2 * len + 2);
	if (!r->strings)
		return err_set_errno(err, -ENOMEM, "%s: out of memory", where);
	int n = tokenize(line, len, r->strings, tok, ARRAY_SIZE(tok));
	if (n == -E2BIG) {
		rule_done(r);
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: more than %d targets",
		               where, AUTH_TARGETS_MAX);
	}
	if (n == 0) {
		rule_done(r);
		*ret_empty = true;
		return 0;
	}
	const char *why = identity_parse(tok[0], r);
	if (why) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: bad identity %s: %s", where,
		        quote(q, tok[0]), why);
		rule_done(r);
		return -EINVAL;
	}
	if (n < 2) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: identity %s has no role", where,
		        quote(q, tok[0]));
		rule_done(r);
		return -EINVAL;
	}
	if (role_parse(tok[1], &r->role) < 0) {
		err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		        "%s: unknown role %s: expected read, operate or admin", where,
		        quote(q, tok[1]));
		rule_done(r);
		return -EINVAL;
	}
	r->n_targets = (size_t)n - 2;
	if (r->n_targets > 0) {
		r->targets = calloc(r->n_targets, sizeof(*r->targets));
		if (!r->targets) {
			rule_done(r);
			return err_set_errno(err, -ENOMEM, "%s: out of memory", where);
		}
	}
	char *copy = r->strings + len + 1;
	for (size_t i = 0; i < r->n_targets; i++) {
		size_t tl = strlen(tok[i + 2]);
		memcpy(copy, tok[i + 2], tl + 1);
		struct target *t = &r->targets[i];
		why = target_parse(copy, t);
		t->text = tok[i + 2];
		if (why) {
			err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: bad target %s: %s", where,
			        quote(q, tok[i + 2]), why);
			rule_done(r);
			return -EINVAL;
		}
		copy += tl + 1;
	}
	return 0;
}

static int policy_append(struct auth_policy *p, struct rule *r, const char *where, struct err *err)
{
	if (p->n == AUTH_RULES_MAX)
		return err_set(err, -E2BIG, ERR_INVALID_ARGUMENT, "%s: more than %d rules", where,
		               AUTH_RULES_MAX);
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		if (cap > AUTH_RULES_MAX)
			cap = AUTH_RULES_MAX;
		struct rule *rules = realloc(p->rules, cap * sizeof(*rules));
		if (!rules)
			return err_set_errno(err, -ENOMEM, "%s: out of memory", where);
		p->rules = rules;
		p->cap = cap;
	}
	p->rules[p->n++] = *r;
	*r = (struct rule){0};
	return 0;
}

static int policy_add(struct auth_policy *p, const char *line, size_t len, const char *where,
                      struct err *err)
{
	struct rule r;
	bool empty;
	int ret = rule_parse(line, len, where, &r, &empty, err);
	if (ret < 0 || empty)
		return ret;
	ret = policy_append(p, &r, where, err);
	rule_done(&r);
	return ret;
}

/* ---- the policy ------------------------------------------------------------ */

int auth_policy_new(struct auth_policy **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void auth_policy_free(struct auth_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		rule_done(&p->rules[i]);
	free(p->rules);
	free(p);
}

size_t auth_policy_count(const struct auth_policy *p)
{
	return p ? p->n : 0;
}

static void auth_policy_freep(struct auth_policy **p)
{
	auth_policy_free(*p);
}

int auth_policy_parse(const char *text, size_t len, const char *source, struct auth_policy **ret,
                      struct err *err)
{
	_cleanup_(auth_policy_freep) struct auth_policy *p = NULL;
	char where[128];
	if (!source)
		source = "policy";
	if (auth_policy_new(&p) < 0)
		return err_set_errno(err, -ENOMEM, "%s: out of memory", source);
	size_t lineno = 1;
	for (size_t pos = 0; pos < len; lineno++) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		snprintf(where, sizeof(where), "%s: line %zu", source, lineno);
		int r = policy_add(p, text + pos, n, where, err);
		if (r < 0)
			return r;
		pos += n + (nl ? 1 : 0);
	}
	*ret = TAKE_PTR(p);
	return 0;
}

int auth_policy_add_line(struct auth_policy *p, const char *line, struct err *err)
{
	char q[QUOTE_BUF], where[QUOTE_BUF + 16];
	size_t len = strnlen(line, AUTH_LINE_MAX + 1);
	snprintf(where, sizeof(where), "rule %s", quote(q, line));
	struct rule r;
	bool empty;
	int ret = rule_parse(line, len, where, &r, &empty, err);
	if (ret < 0)
		return ret;
	if (empty)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: no identity and role",
		               where);
	ret = policy_append(p, &r, where, err);
	rule_done(&r);
	return ret;
}

int auth_policy_load(const char *path, struct auth_policy **ret, struct err *err)
{
	struct stat st;
	/* Symlinks are followed (admins keep policies under /etc that way);
	 * O_NONBLOCK so a FIFO put there cannot stall PID 1 at open. */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return err_set_errno(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		return err_set_errno(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT, "%s: not a regular file", path);
	if (st.st_size > (off_t)AUTH_FILE_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT, "%s: larger than %u bytes", path,
		               AUTH_FILE_MAX);
	/* One byte more than the size seen, so growth while reading shows. */
	size_t cap = (size_t)st.st_size + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return err_set_errno(err, -ENOMEM, "%s: out of memory", path);
	for (;;) {
		if (len == cap) {
			if (cap > AUTH_FILE_MAX)
				return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT,
				               "%s: larger than %u bytes", path, AUTH_FILE_MAX);
			size_t ncap = cap * 2 > AUTH_FILE_MAX + 1 ? AUTH_FILE_MAX + 1 : cap * 2;
			char *nb = realloc(buf, ncap);
			if (!nb)
				return err_set_errno(err, -ENOMEM, "%s: out of memory", path);
			buf = nb;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_errno(err, -errno, "%s: %s", path, strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	return auth_policy_parse(buf, len, path, ret, err);
}

/* ---- the check --------------------------------------------------------------- */

static bool rule_names_peer(const struct rule *r, const struct auth_peer *peer)
{
	switch (r->kind) {
	case IDENT_UID:
		return peer->has_ids && peer->uid == r->id;
	case IDENT_GID:
		if (!peer->has_ids)
			return false;
		if (peer->gid == r->id)
			return true;
		for (size_t i = 0; i < peer->n_groups && i < AUTH_GROUPS_MAX; i++)
			if (peer->groups[i] == r->id)
				return true;
		return false;
	case IDENT_URI:
	case IDENT_DNS:
	case IDENT_CN:
		for (size_t i = 0; i < peer->n_names && i < AUTH_NAMES_MAX; i++) {
			const char *n = peer->names[i];
			if (!n)
				continue;
			if (r->kind == IDENT_DNS
			        ? str_startswith(n, "dns:") && strcasecmp(n + 4, r->name + 4) == 0
			        : strcmp(n, r->name) == 0)
				return true;
		}
		return false;
	}
	return false;
}

void auth_peer_name(const struct auth_peer *peer, char *buf, size_t size)
{
	if (size == 0)
		return;
	for (size_t i = 0; peer && i < peer->n_names && i < AUTH_NAMES_MAX; i++)
		if (peer->names[i] && peer->names[i][0]) {
			str_copy(buf, size, peer->names[i]);
			return;
		}
	if (peer && peer->has_ids)
		snprintf(buf, size, "uid:%u", (unsigned)peer->uid);
	else
		str_copy(buf, size, peer && peer->transport ? peer->transport : "unknown");
}

/* What a peer's rules reach, for a denial: "pod1, pod3, this kin", each
 * once, cut with "..." to keep the sentence short. Targets in rules were
 * checked at parse time, so they need no escaping here. */
struct reach {
	char text[200];
	size_t used;
	bool full;
};

static void reach_add(struct reach *r, const char *what)
{
	size_t len = strlen(what);
	for (const char *p = r->text; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, what, n) == 0)
			return;
		p += n;
		p += strspn(p, ", ");
	}
	if (r->full)
		return;
	/* room for this, its ", " and a later ", ..." */
	r->full = r->used + len + 2 + 5 >= sizeof(r->text);
	int n = snprintf(r->text + r->used, sizeof(r->text) - r->used, "%s%s", r->used ? ", " : "",
	                 r->full ? "..." : what);
	if (n > 0)
		r->used += (size_t)n;
}

/* The denial's sentence once the rules naming the peer are known. */
static int deny(const struct auth_policy *p, const struct auth_peer *peer, const char *call,
                const char *target, enum auth_role need, bool named, enum auth_role best,
                struct err *err)
{
	char raw[AUTH_NAME_MAX + 8], who[QUOTE_BUF], on[QUOTE_BUF + 8] = "", q[QUOTE_BUF];
	auth_peer_name(peer, raw, sizeof(raw));
	auth_escape(who, sizeof(who), raw, strlen(raw), QUOTE_MAX);
	if (target)
		snprintf(on, sizeof(on), " on %s", quote(q, target));
	if (!named) {
		const char *also = peer->has_ids                          ? " or its gids"
		                   : peer->n_names > 1                    ? " or its other names"
		                   : peer->n_names == 1 && peer->names[0] ? ""
		                                                          : NULL;
		if (!also)
			return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
			               "%s may not call %s%s: a %s peer carries no identity a rule "
			               "can name",
			               who, call, on, who);
		return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
		               "%s may not call %s%s: no rule names %s%s", who, call, on, who,
		               also);
	}
	if (best < need)
		return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
		               "%s may not call %s%s: it needs %s, %s has %s", who, call, on,
		               auth_role_name(need), who, auth_role_name(best));
	struct reach reach = {.used = 0};
	for (size_t i = 0; i < p->n; i++) {
		const struct rule *r = &p->rules[i];
		if (r->role < need || !rule_names_peer(r, peer))
			continue;
		if (r->n_targets == 0)
			reach_add(&reach, "this kin");
		for (size_t j = 0; j < r->n_targets; j++)
			reach_add(&reach, r->targets[j].kind == TARGET_SELF ? "this kin"
			                                                    : r->targets[j].text);
	}
	if (need > AUTH_READ)
		return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
		               "%s may not call %s%s: its %s rules reach %s", who, call, on,
		               auth_role_name(need), reach.text);
	return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
	               "%s may not call %s%s: its rules reach %s", who, call, on, reach.text);
}

int auth_check(const struct auth_policy *p, const struct auth_peer *peer, const char *service,
               const char *method, const char *target, struct err *err)
{
	static const struct auth_policy none = {0};
	char call[2 * QUOTE_BUF + 2], qs[QUOTE_BUF], qm[QUOTE_BUF], q[QUOTE_BUF];

	if (peer && peer->superuser)
		return 0;
	if (!p)
		p = &none;
	if (!service)
		service = "";
	if (!method)
		method = "";
	auth_escape(qs, sizeof(qs), service, strlen(service), QUOTE_MAX);
	auth_escape(qm, sizeof(qm), method, strlen(method), QUOTE_MAX);
	snprintf(call, sizeof(call), "%s/%s", qs, qm);
	if (!peer)
		return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
		               "an unknown peer may not call %s", call);
	if (target && (!target[0] || strcmp(target, ".") == 0))
		target = NULL;
	const char *why = target ? hops_problem(target) : NULL;
	if (why) {
		char raw[AUTH_NAME_MAX + 8], who[QUOTE_BUF];
		auth_peer_name(peer, raw, sizeof(raw));
		auth_escape(who, sizeof(who), raw, strlen(raw), QUOTE_MAX);
		return err_set(err, -EACCES, ERR_PERMISSION_DENIED,
		               "%s may not call %s on %s: the target is malformed (%s)", who, call,
		               quote(q, target), why);
	}

	enum auth_role need = auth_method_role(service, method), best = AUTH_NONE;
	bool named = false;
	for (size_t i = 0; i < p->n; i++) {
		const struct rule *r = &p->rules[i];
		if (!rule_names_peer(r, peer))
			continue;
		named = true;
		if (r->role > best)
			best = r->role;
		if (r->role < need)
			continue;
		if (r->n_targets == 0 && !target)
			return 0;
		for (size_t j = 0; j < r->n_targets; j++)
			if (target_matches(&r->targets[j], target))
				return 0;
	}
	return deny(p, peer, call, target, need, named, best, err);
}

int auth_policy_build(const struct auth_policy_sources *src, struct auth_policy **ret,
                      struct err *err)
{
	struct auth_policy *p = NULL;
	int r = src->file[0] ? auth_policy_load(src->file, &p, err) : auth_policy_new(&p);
	char line[64];
	for (size_t i = 0; r >= 0 && i < src->n_uids; i++) {
		snprintf(line, sizeof(line), "uid:%u admin *", (unsigned)src->uids[i]);
		r = auth_policy_add_line(p, line, err);
	}
	for (size_t i = 0; r >= 0 && i < src->n_gids; i++) {
		snprintf(line, sizeof(line), "gid:%u admin *", (unsigned)src->gids[i]);
		r = auth_policy_add_line(p, line, err);
	}
	if (r < 0) {
		auth_policy_free(p);
		return r;
	}
	*ret = p;
	return 0;
}
