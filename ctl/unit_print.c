/* unit_print: services as systemctl shows them — the status block, the
 * list-units table, the links enable and disable made — for `kin ctl
 * service` and the systemctl personality alike, so both print one way.
 * Scripts and eyes trained on systemctl read these: the layout follows
 * systemd 252's where kin has the facts, and leaves lines out where not. */
#include "ctl/ctl-int.h"

#include <signal.h>
#include <string.h>
#include <time.h>

static const char *const unit_suffixes[] = {
    ".service",   ".socket", ".target", ".timer", ".path",  ".mount",
    ".automount", ".swap",   ".device", ".slice", ".scope",
};

const char *ctl_unit_name(const char *in, char *buf, size_t size)
{
	const char *dot = strrchr(in, '.');
	for (size_t i = 0; dot && i < ARRAY_SIZE(unit_suffixes); i++)
		if (!strcmp(dot, unit_suffixes[i]))
			return in;
	if (strlen(in) + strlen(".service") >= size || strlen(in) > CTL_UNIT_NAME_MAX)
		return in;
	snprintf(buf, size, "%s.service", in);
	return buf;
}

/* systemd's timespans: the two largest units ("2h 3min", "1 day 4h", "12s"). */
static void span_format(uint64_t us, char *buf, size_t size)
{
	static const struct {
		const char *name;
		uint64_t us;
	} units[] = {
	    {"month", 2629800000000ull},
	    {"week", 604800000000ull},
	    {"day", 86400000000ull},
	    {"h", 3600000000ull},
	    {"min", 60000000ull},
	    {"s", 1000000ull},
	    {"ms", 1000ull},
	};
	size_t len = 0, parts = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(units) && parts < 2; i++) {
		uint64_t n = us / units[i].us;
		if (!n)
			continue;
		us -= n * units[i].us;
		bool word = units[i].name[1] && units[i].name[2] && strcmp(units[i].name, "min");
		int w = snprintf(buf + len, size - len, "%s%llu%s%s%s", parts ? " " : "",
		                 (unsigned long long)n, word ? " " : "", units[i].name,
		                 word && n > 1 ? "s" : "");
		if (w < 0 || (size_t)w >= size - len)
			return;
		len += (size_t)w;
		parts++;
	}
	if (!parts)
		snprintf(buf, size, "0");
}

void ctl_unit_since(uint64_t us, uint64_t now_us, char *buf, size_t size)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	char when[64], ago[64];
	if (!localtime_r(&t, &tm) || !strftime(when, sizeof(when), "%a %Y-%m-%d %H:%M:%S %Z", &tm))
		snprintf(when, sizeof(when), "@%llu", (unsigned long long)t);
	if (now_us >= us) {
		span_format(now_us - us, ago, sizeof(ago));
		snprintf(buf, size, "%s; %s ago", when, ago);
	} else {
		snprintf(buf, size, "%s", when);
	}
}

static uint64_t now_realtime_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ull + (uint64_t)ts.tv_nsec / 1000;
}

/* systemd's byte sizes: "4.5M", "812.0K", "1.2G". */
static void bytes_format(uint64_t b, char *buf, size_t size)
{
	static const char units[] = "KMGTPE";
	if (b < 1024) {
		snprintf(buf, size, "%lluB", (unsigned long long)b);
		return;
	}
	double v = (double)b / 1024;
	size_t i = 0;
	while (v >= 1024 && i + 1 < sizeof(units) - 1) {
		v /= 1024;
		i++;
	}
	snprintf(buf, size, "%.1f%c", v, units[i]);
}

static void print_loaded(FILE *f, const Kin__V1__UnitStatus *u)
{
	if (!strcmp(u->load_state, "not-found"))
		fprintf(f, "     Loaded: not-found (Reason: Unit %s not found.)\n", u->name);
	else if (!strcmp(u->load_state, "masked"))
		fprintf(f, "     Loaded: masked (Reason: Unit %s is masked.)\n", u->name);
	else if (u->load_error[0])
		fprintf(f, "     Loaded: %s (Reason: %s)\n", u->load_state, u->load_error);
	else if (u->fragment[0])
		fprintf(f, "     Loaded: %s (%s%s%s)\n", u->load_state, u->fragment,
		        u->unit_file_state[0] ? "; " : "", u->unit_file_state);
	else
		fprintf(f, "     Loaded: %s\n", u->load_state);
}

static void print_active(FILE *f, const Kin__V1__UnitStatus *u, uint64_t now)
{
	char since[160] = "";
	bool up = !strcmp(u->active_state, "active") || !strcmp(u->active_state, "reloading") ||
	          !strcmp(u->active_state, "deactivating");
	uint64_t t = up ? u->active_enter_us : u->inactive_enter_us;
	if (t)
		ctl_unit_since(t, now, since, sizeof(since));
	fprintf(f, "     Active: %s (%s)", u->active_state, u->sub_state);
	if (!strcmp(u->active_state, "failed") && u->result[0] && strcmp(u->result, "success"))
		fprintf(f, " (Result: %s)", u->result);
	if (since[0])
		fprintf(f, " since %s", since);
	fputc('\n', f);
}

static void print_main_pid(FILE *f, const Kin__V1__UnitStatus *u)
{
	if (u->main_pid <= 0)
		return;
	fprintf(f, "   Main PID: %d", u->main_pid);
	if (u->exited && u->exit_signal) {
		const char *sig = sigabbrev_np(u->exit_signal);
		fprintf(f, " (code=killed, signal=%s)", sig ? sig : "?");
	} else if (u->exited) {
		fprintf(f, " (code=exited, status=%d/%s)", u->exit_code,
		        u->exit_code ? "FAILURE" : "SUCCESS");
	}
	fputc('\n', f);
}

void ctl_unit_print_status(FILE *f, const Kin__V1__UnitStatusResponse *m)
{
	const Kin__V1__UnitStatus *u = m->unit;
	char b[32];
	if (!u)
		return;
	fprintf(f, "%s %s%s%s\n", !strcmp(u->active_state, "failed") ? "×" : "●", u->name,
	        u->description[0] ? " - " : "", u->description);
	print_loaded(f, u);
	print_active(f, u, now_realtime_us());
	if (u->triggered_by[0])
		fprintf(f, "TriggeredBy: ● %s\n", u->triggered_by);
	if (u->job[0])
		fprintf(f, "        Job: %s\n", u->job);
	if (u->condition[0])
		fprintf(f, "  Condition: start condition failed: %s\n", u->condition);
	if (u->next_elapse_us) {
		char when[160];
		ctl_unit_since(u->next_elapse_us, 0, when, sizeof(when));
		fprintf(f, "    Trigger: %s\n", when);
	}
	print_main_pid(f, u);
	if (u->control_pid > 0)
		fprintf(f, "Control PID: %d\n", u->control_pid);
	if (u->status_text[0])
		fprintf(f, "     Status: \"%s\"\n", u->status_text);
	if (u->has_tasks)
		fprintf(f, "      Tasks: %llu\n", (unsigned long long)u->tasks_current);
	if (u->has_memory) {
		bytes_format(u->memory_current, b, sizeof(b));
		fprintf(f, "     Memory: %s\n", b);
	}
	if (u->cell[0])
		fprintf(f, "     CGroup: /%s\n", u->cell);
	if (m->n_log)
		fputc('\n', f);
	for (size_t i = 0; i < m->n_log; i++)
		fprintf(f, "%s\n", m->log[i]);
}

void ctl_unit_print_changes(FILE *f, const Kin__V1__UnitFilesResponse *m)
{
	for (size_t i = 0; i < m->n_changes; i++) {
		const Kin__V1__UnitFileChange *c = m->changes[i];
		if (!strcmp(c->type, "created"))
			fprintf(f, "Created symlink %s → %s.\n", c->link, c->target);
		else
			fprintf(f, "Removed \"%s\".\n", c->link);
	}
}

void ctl_unit_print_list(FILE *f, const Kin__V1__ListUnitsResponse *m, bool legend)
{
	int w[4] = {4, 4, 6, 3}; /* UNIT LOAD ACTIVE SUB */
	for (size_t i = 0; i < m->n_units; i++) {
		const Kin__V1__UnitStatus *u = m->units[i];
		const char *col[4] = {u->name, u->load_state, u->active_state, u->sub_state};
		for (int k = 0; k < 4; k++)
			if ((int)strlen(col[k]) > w[k])
				w[k] = (int)strlen(col[k]);
	}
	if (legend)
		fprintf(f, "  %-*s %-*s %-*s %-*s DESCRIPTION\n", w[0], "UNIT", w[1], "LOAD", w[2],
		        "ACTIVE", w[3], "SUB");
	for (size_t i = 0; i < m->n_units; i++) {
		const Kin__V1__UnitStatus *u = m->units[i];
		fprintf(f, "%s %-*s %-*s %-*s %-*s %s\n",
		        !strcmp(u->active_state, "failed") ? "●" : " ", w[0], u->name, w[1],
		        u->load_state, w[2], u->active_state, w[3], u->sub_state, u->description);
	}
	if (legend)
		fprintf(f, "\n%zu units listed.\n", m->n_units);
}
