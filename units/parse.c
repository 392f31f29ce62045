/* parse: the unit file syntax of systemd.syntax(7) — [Section] headers,
 * Key=Value assignments, '#'/';' comments, backslash continuations — turned
 * into a stream of assignments. Nothing here knows a directive: meaning is
 * config*.c's. The bytes are a package's or an admin's, so every line is
 * bounded and a bad one is reported and skipped, never fatal. */
#include "units/units.h"

#include <string.h>

#define SECTION_MAX 256 /* bytes of a section name */

struct parser {
	const char *file;
	unit_assign_fn fn;
	unit_diag_fn diag;
	void *data;
	char section[SECTION_MAX];
	bool in_section; /* a valid header seen (a bad one clears it) */
	bool bad_section_noted;
	unsigned ndiag; /* syntax problems reported in this file */
};

/* A file that is not a unit file at all (a link to something else) would
 * otherwise put every one of its lines in kin's log. */
#define PARSE_DIAG_MAX 8

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static char *strip(char *s)
{
	while (is_space(*s))
		s++;
	size_t n = strlen(s);
	while (n && is_space(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static void diag(struct parser *p, unsigned line, const char *what, const char *text)
{
	if (!p->diag || ++p->ndiag > PARSE_DIAG_MAX + 1)
		return;
	if (p->ndiag > PARSE_DIAG_MAX)
		p->diag(p->data, p->file, line,
		        "%s:%u: more than %d lines that are not unit syntax; "
		        "the rest are not shown",
		        p->file, line, PARSE_DIAG_MAX);
	else
		p->diag(p->data, p->file, line, "%s:%u: %s: \"%.60s\"", p->file, line, what, text);
}

static int section_header(struct parser *p, char *l, unsigned line)
{
	size_t n = strlen(l);
	if (n < 3 || l[n - 1] != ']' || n - 2 >= SECTION_MAX || memchr(l + 1, ']', n - 2) ||
	    memchr(l + 1, '[', n - 2)) {
		diag(p, line, "not a section header, the section's lines are ignored", l);
		p->in_section = false;
		p->bad_section_noted = true; /* its assignments are not reported one by one */
		return 0;
	}
	memcpy(p->section, l + 1, n - 2);
	p->section[n - 2] = '\0';
	p->in_section = true;
	p->bad_section_noted = false;
	return 0;
}

/* One logical line, continuations already joined, in place. */
static int logical_line(struct parser *p, char *l, unsigned line)
{
	l = strip(l);
	if (!*l || *l == '#' || *l == ';')
		return 0;
	if (*l == '[')
		return section_header(p, l, line);
	char *eq = strchr(l, '=');
	if (!eq) {
		diag(p, line, "not an assignment (no '='), ignored", l);
		return 0;
	}
	*eq = '\0';
	char *key = strip(l), *value = strip(eq + 1);
	if (!*key) {
		diag(p, line, "an assignment without a key, ignored", value);
		return 0;
	}
	if (!p->in_section) {
		if (!p->bad_section_noted)
			diag(p, line, "an assignment outside of any section, ignored", key);
		return 0;
	}
	struct unit_assign a = {
	    .section = p->section, .key = key, .value = value, .file = p->file, .line = line};
	return p->fn(&a, p->data);
}

/* Whether a physical line ends in an unescaped backslash ("\\\\" at the end
 * is an escaped backslash, not a continuation). */
static bool continues(const char *l, size_t n)
{
	size_t k = 0;
	while (k < n && l[n - 1 - k] == '\\')
		k++;
	return k % 2 == 1;
}

static int check_bytes(const char *text, size_t len, const char *file, struct err *err)
{
	if (len > UNIT_FILE_MAX)
		return err_set(err, -EFBIG, ERR_INVALID_ARGUMENT,
		               "unit file \"%s\": larger than %u bytes", file, UNIT_FILE_MAX);
	const char *nul = memchr(text, '\0', len);
	if (nul)
		return err_set(err, -EINVAL, ERR_INVALID_ARGUMENT,
		               "unit file \"%s\": a NUL byte at offset %zu", file,
		               (size_t)(nul - text));
	return 0;
}

int unit_file_parse(const char *text, size_t len, const char *file, unit_assign_fn fn,
                    unit_diag_fn diag_fn, void *data, struct err *err)
{
	struct parser p = {.file = file ? file : "", .fn = fn, .diag = diag_fn, .data = data};
	int r = check_bytes(text, len, p.file, err);
	if (r < 0)
		return r;
	/* The logical line being built: continuations joined, at most
	 * UNIT_LINE_MAX bytes (a longer one is reported and dropped whole). */
	_cleanup_free_ char *buf = malloc(len < UNIT_LINE_MAX ? len + 1 : UNIT_LINE_MAX + 1);
	if (!buf)
		return err_set(err, -ENOMEM, ERR_RESOURCE_EXHAUSTED, "unit file \"%s\": %s", p.file,
		               strerror(ENOMEM));
	size_t cap = len < UNIT_LINE_MAX ? len : UNIT_LINE_MAX, used = 0;
	bool joining = false, too_long = false;
	unsigned lineno = 0, first = 0;
	for (size_t off = 0; off < len;) {
		const char *l = text + off, *nl = memchr(l, '\n', len - off);
		size_t n = nl ? (size_t)(nl - l) : len - off;
		off += n + (nl ? 1 : 0);
		lineno++;
		if (joining) {
			/* A comment inside a continuation is skipped, the
			 * continuation goes on (systemd's rule). */
			size_t s = 0;
			while (s < n && (l[s] == ' ' || l[s] == '\t'))
				s++;
			if (s < n && (l[s] == '#' || l[s] == ';'))
				continue;
		} else {
			first = lineno;
			used = 0;
			too_long = false;
		}
		bool more = continues(l, n);
		if (used + n > cap) {
			too_long = true;
		} else {
			memcpy(buf + used, l, n);
			used += n;
			if (more)
				buf[used - 1] = ' '; /* the backslash joins with a space */
		}
		joining = more;
		if (more && off < len)
			continue;
		joining = false;
		if (too_long) {
			if (diag_fn)
				diag_fn(data, p.file, first,
				        "%s:%u: a line longer than %u bytes, ignored", p.file,
				        first, UNIT_LINE_MAX);
			continue;
		}
		buf[used] = '\0';
		if ((r = logical_line(&p, buf, first)) < 0)
			return err_set_errno(err, r, "unit file \"%s\": line %u: %s", p.file, first,
			                     strerror(-r));
	}
	return 0;
}
