/* qmp: QEMU's monitor protocol (QMP), what vm/qemu.c's monitor requests
 * speak. Each message is one JSON object on a line; a talk is the
 * greeting, qmp_capabilities, one command and its answer, with events
 * (asynchronous, any time) skipped. Internal to vm/. */
#pragma once

#include "vm/vm.h"

/* A monitor's line at most: QEMU's greeting and answers to the commands
 * kin sends are a few hundred bytes; a longer line is refused. */
#define VM_QMP_LINE_MAX (64 * 1024)

enum vm_qmp_kind {
	VM_QMP_GREETING, /* {"QMP": {...}} */
	VM_QMP_RETURN,   /* {"return": ...} */
	VM_QMP_ERROR,    /* {"error": {"class": ..., "desc": ...}} */
	VM_QMP_EVENT,    /* {"event": "NAME", ...} */
};

struct vm_qmp_msg {
	enum vm_qmp_kind kind;
	/* An error's "CLASS: DESC", an event's name; printable, cut to fit. */
	char what[160];
};

/* Reads one message (len bytes, no NUL needed, the line's end taken off
 * or not). -EBADMSG with e naming what is wrong ("not JSON at byte 3", "an
 * object with none of QMP, return, error, event"): a monitor's bytes are
 * not trusted. vm names the VM in e. */
int vm_qmp_parse(const char *vm, const char *line, size_t len, struct vm_qmp_msg *ret,
                 struct err *e);

/* A talk with a QMP monitor: q's request, what names it in errors
 * ("pause"), command is one JSON object without its newline; both kept by
 * pointer (static strings). ended_ok: the VMM may end (hang up) once the
 * command is sent, and that counts as done (a shutdown request). */
int vm_qmp_talk(const struct vm_monitor_req *q, const char *what, const char *command,
                bool ended_ok, struct vm_monitor_talk **ret, struct err *e);
void vm_qmp_talk_cancel(struct vm_monitor_talk *t);
