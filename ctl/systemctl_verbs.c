/* systemctl_verbs: each systemctl verb as the kin.v1.Units calls `kin ctl
 * service` makes (ctl/service.c), with systemctl's output and exit codes.
 * The file verbs (enable, disable, reenable, preset, mask, unmask,
 * is-enabled) work offline when no kin answers on the socket (it is absent
 * or refuses: a chroot during a package install, an image build) or with
 * --root: straight on the unit files, through the functions init gives
 * (units/install.c's). preset is enable: kin reads no preset files (Debian
 * ships none without the systemd package, whose policy is enable-all). */
#include "ctl/ctl-int.h"

#include <fnmatch.h>
#include <string.h>

/* ---- connecting, and errors said as systemctl says them --------------------------------- */

/* 0: connected (the run's client made), 1: no kin there (socket absent
 * or refusing), else the exit code (said). */
static int sc_connect(struct ctl *ctl)
{
	int fd, r = ctl_dial(ctl, &fd);
	if (r == -ENOENT || r == -ECONNREFUSED || r == -ENOTDIR)
		return 1;
	if (r == 0)
		r = rpc_client_from_fd(fd, ctl->timeout_ms, &ctl->client);
	if (r < 0) {
		fprintf(stderr, "systemctl: cannot reach kin at %s: %s\n", ctl->address,
		        strerror(-r));
		return 1 + 1; /* as systemctl exits when its manager does not answer */
	}
	return 0;
}

static int sc_online(struct ctl *ctl, const char *verb)
{
	int r = sc_connect(ctl);
	if (r == 1) {
		fprintf(stderr, "systemctl: %s: kin is not running here (no socket at %s)\n", verb,
		        ctl->address);
		return 1;
	}
	return r ? 1 : 0;
}

static int sc_fail(int r, const struct err *st)
{
	if (r == CTL_RPC_ERROR)
		fprintf(stderr, "systemctl: %s\n", st->msg);
	return 1;
}

static bool not_found(int r, const struct err *st)
{
	return r == CTL_RPC_ERROR && st->code == ERR_NOT_FOUND;
}

/* ---- jobs ------------------------------------------------------------------------------- */

static int v_job(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                 const struct ctl_systemctl_env *env)
{
	char buf[CTL_UNIT_NAME_MAX + 1];
	struct err st;
	(void)env;
	if (sc_online(ctl, v->name))
		return 1;
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitJobResponse *m;
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		int r = ctl_unit_job(ctl, name, v->job, a->no_block, true, &m, &st);
		if (r != CTL_OK) {
			if (r == CTL_RPC_ERROR && st.code != ERR_NOT_FOUND)
				fprintf(stderr,
				        "Job for %s failed: %s\nSee \"systemctl status %s\" for "
				        "details.\n",
				        name, st.msg, name);
			else
				sc_fail(r, &st);
			return 1;
		}
		protobuf_c_message_free_unpacked(&m->base, NULL);
	}
	return 0;
}

/* kill: only --signal=KILL, as cgroup.kill of the unit's cell (invoke-rc.d's
 * force-stop); other signals are not reachable through kin's API yet. */
static int v_kill(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                  const struct ctl_systemctl_env *env)
{
	const char *s = a->signal ? a->signal : "TERM";
	char buf[CTL_UNIT_NAME_MAX + 1];
	struct err st;
	(void)env;
	if (strcmp(s, "KILL") && strcmp(s, "SIGKILL") && strcmp(s, "9")) {
		fprintf(stderr,
		        "systemctl: kill --signal=%s is not supported by kin yet (only "
		        "--signal=KILL)\n",
		        s);
		return 1;
	}
	if (sc_online(ctl, v->name))
		return 1;
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitStatusResponse *m;
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		int r = ctl_unit_status(ctl, name, 0, true, &m, &st);
		if (r != CTL_OK)
			return sc_fail(r, &st);
		Kin__V1__CellRequest in = KIN__V1__CELL_REQUEST__INIT;
		in.path = m->unit && m->unit->cell[0] ? m->unit->cell : NULL;
		const struct ctl_call c = {.service = "kin.v1.Cells",
		                           .method = "Kill",
		                           .in = &in.base,
		                           .timeout_ms = ctl->timeout_ms,
		                           .quiet = true};
		r = in.path ? ctl_call(ctl, &c, NULL, &st) : CTL_OK;
		protobuf_c_message_free_unpacked(&m->base, NULL);
		if (r != CTL_OK)
			return sc_fail(r, &st);
	}
	return 0;
}

/* ---- the unit files ----------------------------------------------------------------------- */

static void print_change(const char *what, const char *link, const char *target, void *data)
{
	const struct ctl_sc_args *a = data;
	if (a->quiet)
		return;
	if (!strcmp(what, "created"))
		fprintf(stderr, "Created symlink %s → %s.\n", link, target);
	else
		fprintf(stderr, "Removed \"%s\".\n", link);
}

static int files_offline(const struct ctl_sc_args *a, const char *verb, char **names, size_t n,
                         const struct ctl_systemctl_env *env)
{
	struct err err = {0};
	if (!env || !env->files) {
		fprintf(stderr, "systemctl: %s: kin is not running and cannot reach the files\n",
		        verb);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (env->files(a->root ? a->root : "", verb, names[i], print_change, (void *)a,
		               &err) < 0) {
			fprintf(stderr, "systemctl: %s\n", err.msg);
			return 1;
		}
	return 0;
}

static const char *files_method(const char *verb)
{
	return !strcmp(verb, "enable")    ? "Enable"
	       : !strcmp(verb, "disable") ? "Disable"
	       : !strcmp(verb, "mask")    ? "Mask"
	                                  : "Unmask";
}

static int files_online(struct ctl *ctl, const struct ctl_sc_args *a, const char *verb,
                        char **names, size_t n)
{
	Kin__V1__UnitFilesResponse *m;
	struct err st;
	int r = ctl_unit_files(ctl, files_method(verb), names, n, true, &m, &st);
	if (r != CTL_OK)
		return sc_fail(r, &st);
	for (size_t i = 0; i < m->n_changes; i++)
		print_change(m->changes[i]->type, m->changes[i]->link, m->changes[i]->target,
		             (void *)a);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return 0;
}

/* enable, disable, reenable, preset, mask, unmask (v->job: the file verb;
 * "reenable" is disable then enable). --now starts or stops too. */
static int v_files(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                   const struct ctl_systemctl_env *env)
{
	static char bufs[CTL_SC_ARGS_MAX][CTL_UNIT_NAME_MAX + 1];
	char *names[CTL_SC_ARGS_MAX];
	bool re = !strcmp(v->name, "reenable");
	const char *verb = re ? "disable" : v->job;
	if (a->user) {
		fprintf(stderr, "systemctl: kin runs no user units: %s --user/--global ignored\n",
		        v->name);
		return 0;
	}
	if (!strcmp(v->name, "preset") && a->preset_mode && !strcmp(a->preset_mode, "disable-only"))
		return 0; /* every preset is "enable": there is nothing to disable */
	for (size_t i = 0; i < a->nargs; i++)
		names[i] = (char *)ctl_unit_name(a->args[i], bufs[i], sizeof(bufs[i]));
	int off = a->root ? 1 : sc_connect(ctl);
	if (off > 1)
		return 1;
	for (int pass = 0; pass < (re ? 2 : 1); pass++, verb = v->job) {
		int r = off ? files_offline(a, verb, names, a->nargs, env)
		            : files_online(ctl, a, verb, names, a->nargs);
		if (r)
			return r;
	}
	if (!a->now || (strcmp(v->job, "enable") && strcmp(v->job, "disable") && !re))
		return 0;
	if (off) {
		fprintf(stderr, "systemctl: --now: kin is not running here; nothing %s\n",
		        strcmp(v->job, "disable") ? "started" : "stopped");
		return 0;
	}
	struct ctl_sc_args b = *a;
	struct ctl_sc_verb job = {v->name, NULL, strcmp(v->job, "disable") ? "restart" : "stop",
	                          false, 1};
	if (!re && !strcmp(v->job, "enable"))
		job.job = "start";
	for (size_t i = 0; i < a->nargs; i++)
		b.args[i] = names[i];
	return v_job(ctl, &b, &job, env);
}

static int v_is_enabled(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                        const struct ctl_systemctl_env *env)
{
	char buf[CTL_UNIT_NAME_MAX + 1], state[64];
	int code = 1, off = a->root ? 1 : sc_connect(ctl);
	if (off > 1)
		return 1;
	(void)v;
	for (size_t i = 0; i < a->nargs; i++) {
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		struct err st = {0};
		int r;
		if (off) {
			r = env && env->file_state ? env->file_state(a->root ? a->root : "", name,
			                                             state, sizeof(state))
			                           : -ENOTSUP;
			if (r < 0)
				err_set(&st, r, ERR_NOT_FOUND, "unit file %s: %s", name,
				        r == -ENOENT ? "no such unit file" : strerror(-r));
			r = r < 0 ? CTL_RPC_ERROR : CTL_OK;
		} else {
			Kin__V1__UnitRequest in = KIN__V1__UNIT_REQUEST__INIT;
			ProtobufCMessage *out;
			in.name = (char *)name;
			const struct ctl_call c = {
			    .service = "kin.v1.Units",
			    .method = "FileState",
			    .in = &in.base,
			    .out_desc = &kin__v1__unit_file_state_response__descriptor,
			    .timeout_ms = ctl->timeout_ms,
			    .quiet = true};
			r = ctl_call(ctl, &c, &out, &st);
			if (r == CTL_OK) {
				str_copy(state, sizeof(state),
				         ((Kin__V1__UnitFileStateResponse *)out)->state);
				protobuf_c_message_free_unpacked(out, NULL);
			}
		}
		if (r != CTL_OK) {
			sc_fail(r, &st);
			continue;
		}
		if (!a->quiet)
			printf("%s\n", state);
		if (ctl_sc_is_enabled_code(state) == 0)
			code = 0;
	}
	return code;
}

/* ---- queries ------------------------------------------------------------------------------ */

/* is-active (0 when any is active, else 3) and is-failed (0 when any
 * failed, else 1); a unit kin does not know is "inactive". */
static int v_is_active(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                       const struct ctl_systemctl_env *env)
{
	bool failed = !strcmp(v->name, "is-failed");
	char buf[CTL_UNIT_NAME_MAX + 1];
	int code = failed ? 1 : 3;
	(void)env;
	if (sc_online(ctl, v->name))
		return code;
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitStatusResponse *m = NULL;
		struct err st;
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		int r = ctl_unit_status(ctl, name, 0, true, &m, &st);
		if (r != CTL_OK && !not_found(r, &st)) {
			sc_fail(r, &st);
			continue;
		}
		const char *s = m && m->unit ? m->unit->active_state : "inactive";
		if (!a->quiet)
			printf("%s\n", s);
		if (failed ? !strcmp(s, "failed") : ctl_sc_is_active_code(s) == 0)
			code = 0;
		if (m)
			protobuf_c_message_free_unpacked(&m->base, NULL);
	}
	return code;
}

/* status: 0 when the (first) unit runs, 3 when not, 4 no such unit. */
static int v_status(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                    const struct ctl_systemctl_env *env)
{
	char buf[CTL_UNIT_NAME_MAX + 1];
	int code = -1;
	(void)env;
	if (sc_online(ctl, v->name))
		return 3;
	if (!a->nargs) {
		Kin__V1__ListUnitsResponse *m;
		struct err st;
		int r = ctl_unit_list(ctl, false, true, &m, &st);
		if (r != CTL_OK)
			return sc_fail(r, &st);
		printf("● kin\n    State: %s\n    Units: %zu active\n", ctl_sc_system_state(m),
		       m->n_units);
		protobuf_c_message_free_unpacked(&m->base, NULL);
		return 0;
	}
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitStatusResponse *m;
		struct err st;
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		int r = ctl_unit_status(ctl, name, a->lines, true, &m, &st), c;
		if (r == CTL_OK) {
			if (i)
				putchar('\n');
			ctl_unit_print_status(stdout, m);
			c = m->unit ? ctl_sc_status_code(m->unit) : 4;
			protobuf_c_message_free_unpacked(&m->base, NULL);
		} else if (not_found(r, &st)) {
			fprintf(stderr, "Unit %s could not be found.\n", name);
			c = 4;
		} else {
			sc_fail(r, &st);
			c = 1;
		}
		if (code < 0)
			code = c;
	}
	return code;
}

static int v_show(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                  const struct ctl_systemctl_env *env)
{
	char buf[CTL_UNIT_NAME_MAX + 1];
	(void)env;
	if (sc_online(ctl, v->name))
		return 1;
	if (!a->nargs) { /* the manager's own: what scripts ask of it */
		printf(a->value ? "%s\n" : "Version=%s\n", "252");
		return 0;
	}
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitStatusResponse *m;
		struct err st;
		const char *name = ctl_unit_name(a->args[i], buf, sizeof(buf));
		int r = ctl_unit_status(ctl, name, 0, true, &m, &st);
		if (r != CTL_OK)
			return sc_fail(r, &st);
		if (i && !a->value)
			putchar('\n');
		if (m->unit)
			ctl_sc_show(stdout, m->unit, a->props, a->nprops, a->value);
		protobuf_c_message_free_unpacked(&m->base, NULL);
	}
	return 0;
}

static int v_cat(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                 const struct ctl_systemctl_env *env)
{
	char buf[CTL_UNIT_NAME_MAX + 1];
	(void)env;
	if (sc_online(ctl, v->name))
		return 1;
	for (size_t i = 0; i < a->nargs; i++) {
		Kin__V1__UnitRequest in = KIN__V1__UNIT_REQUEST__INIT;
		ProtobufCMessage *out;
		struct err st;
		in.name = (char *)ctl_unit_name(a->args[i], buf, sizeof(buf));
		const struct ctl_call c = {.service = "kin.v1.Units",
		                           .method = "Cat",
		                           .in = &in.base,
		                           .out_desc = &kin__v1__unit_cat_response__descriptor,
		                           .timeout_ms = ctl->timeout_ms,
		                           .quiet = true};
		int r = ctl_call(ctl, &c, &out, &st);
		if (r != CTL_OK)
			return sc_fail(r, &st);
		printf("%s%s", i ? "\n" : "", ((Kin__V1__UnitCatResponse *)out)->text);
		protobuf_c_message_free_unpacked(out, NULL);
	}
	return 0;
}

/* ---- lists and the manager ------------------------------------------------------------------- */

static bool list_match(const struct ctl_sc_args *a, const Kin__V1__UnitStatus *u, bool files)
{
	bool any = !a->nargs;
	for (size_t i = 0; i < a->nargs && !any; i++)
		any = fnmatch(a->args[i], u->name, 0) == 0;
	if (!any || (files && !u->unit_file_state[0]))
		return false;
	if (a->type && strcmp(u->type, a->type))
		return false;
	if (a->state && strcmp(a->state, files ? u->unit_file_state : u->active_state) &&
	    strcmp(a->state, u->sub_state) && strcmp(a->state, u->load_state))
		return false;
	return true;
}

/* list-units [PATTERN...] and list-unit-files [PATTERN...] */
static int v_list(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                  const struct ctl_systemctl_env *env)
{
	bool files = !strcmp(v->name, "list-unit-files");
	Kin__V1__ListUnitsResponse *m;
	struct err st;
	(void)env;
	if (sc_online(ctl, v->name))
		return 1;
	int r = ctl_unit_list(ctl, files || a->all, true, &m, &st);
	if (r != CTL_OK)
		return sc_fail(r, &st);
	size_t n = 0;
	for (size_t i = 0; i < m->n_units; i++)
		if (list_match(a, m->units[i], files))
			m->units[n++] = m->units[i];
	size_t total = m->n_units;
	m->n_units = n; /* the rest are freed with the message: keep them counted */
	if (files) {
		if (!a->no_legend)
			printf("%-42s %s\n", "UNIT FILE", "STATE");
		for (size_t i = 0; i < n; i++)
			printf("%-42s %s\n", m->units[i]->name, m->units[i]->unit_file_state);
		if (!a->no_legend)
			printf("\n%zu unit files listed.\n", n);
	} else {
		ctl_unit_print_list(stdout, m, !a->no_legend);
	}
	m->n_units = total;
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return 0;
}

static int v_system(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                    const struct ctl_systemctl_env *env)
{
	Kin__V1__ListUnitsResponse *m;
	struct err st;
	(void)v;
	(void)env;
	if (sc_connect(ctl)) {
		if (!a->quiet)
			printf("offline\n");
		return 1;
	}
	int r = ctl_unit_list(ctl, false, true, &m, &st);
	if (r != CTL_OK)
		return sc_fail(r, &st);
	const char *s = ctl_sc_system_state(m);
	if (!a->quiet)
		printf("%s\n", s);
	protobuf_c_message_free_unpacked(&m->base, NULL);
	return strcmp(s, "running") ? 1 : 0;
}

/* daemon-reload with no kin running has nothing to reload: done. */
static int v_reload(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                    const struct ctl_systemctl_env *env)
{
	struct err st;
	(void)a;
	(void)v;
	(void)env;
	int r = sc_connect(ctl);
	if (r)
		return r == 1 ? 0 : 1;
	r = ctl_daemon_reload(ctl, true, &st);
	return r == CTL_OK ? 0 : sc_fail(r, &st);
}

static int v_unsupported(struct ctl *ctl, const struct ctl_sc_args *a, const struct ctl_sc_verb *v,
                         const struct ctl_systemctl_env *env)
{
	(void)ctl;
	(void)a;
	(void)env;
	fprintf(stderr, "systemctl: %s is not supported yet by kin\n", v->name);
	return 1;
}

static const struct ctl_sc_verb verbs[] = {
    {"start", v_job, "start", false, 1},
    {"stop", v_job, "stop", false, 1},
    {"restart", v_job, "restart", false, 1},
    {"reload", v_job, "reload", false, 1},
    {"try-restart", v_job, "try-restart", false, 1},
    {"condrestart", v_job, "try-restart", false, 1},
    {"reload-or-restart", v_job, "reload-or-restart", false, 1},
    {"try-reload-or-restart", v_job, "try-reload-or-restart", false, 1},
    {"force-reload", v_job, "try-reload-or-restart", false, 1},
    {"kill", v_kill, NULL, false, 1},
    {"enable", v_files, "enable", true, 1},
    {"disable", v_files, "disable", true, 1},
    {"reenable", v_files, "enable", true, 1},
    {"preset", v_files, "enable", true, 1},
    {"mask", v_files, "mask", true, 1},
    {"unmask", v_files, "unmask", true, 1},
    {"is-enabled", v_is_enabled, NULL, true, 1},
    {"is-active", v_is_active, NULL, false, 1},
    {"is-failed", v_is_active, NULL, false, 1},
    {"status", v_status, NULL, false, 0},
    {"show", v_show, NULL, false, 0},
    {"cat", v_cat, NULL, false, 1},
    {"list-units", v_list, NULL, false, 0},
    {"list-unit-files", v_list, NULL, false, 0},
    {"is-system-running", v_system, NULL, false, 0},
    {"daemon-reload", v_reload, NULL, false, 0},
    {"daemon-reexec", v_unsupported, NULL, false, 0},
};

const struct ctl_sc_verb *ctl_sc_verb_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++)
		if (!strcmp(verbs[i].name, name))
			return &verbs[i];
	return NULL;
}
