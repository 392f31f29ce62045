/* manager-int: the manager's VM entries, shared by vm/manager.c (start,
 * end, re-exec) and vm/control.c (monitor requests, the stop). Internal
 * to vm/. */
#pragma once

#include "vm/vm.h"

/* What a start needs between vm_start and the VMM's spawn. */
struct vm_start_job {
	struct vm_spec spec;
	char **argv;              /* one allocation */
	struct child_call *check; /* the files' check, until it answers */
};

struct vm_entry {
	struct list_node node; /* in vm_manager.live while the slot is used */
	struct vm_info info;
	struct child *child;      /* plain child; NULL once exited */
	bool by_runner;           /* started through the runner */
	bool starting;            /* vm_start began; events.started not told yet */
	struct vm_start_job *job; /* while its files are checked */
	struct vm_manager *m;
	/* A monitor request under way (the backend's talk), and who waits. */
	struct vm_monitor_talk *talk;
	enum vm_op talk_op;
	vm_request_done_fn talk_done;
	void *talk_data;
	/* A stop under way (vm_stop): its steps so far, its deadline. */
	struct {
		bool on, poweroff_asked, shutdown_asked, killed;
		uint64_t deadline_ns;
		struct ev_source timer; /* fires at the deadline: SIGKILL */
	} stop;
};

/* What a kin running no VM writes first, on one page: the manager is
 * large (mmap'd, its slots never touched until used). */
struct vm_manager {
	struct ev_loop *loop;
	struct child_table *children;
	struct vm_events events;
	const struct vm_backend *backend;
	struct vm_runner runner; /* start NULL: plain children */
	struct vm_stop_hooks stop_hooks;
	struct list_node live; /* the used slots, in start order */
	char state_dir[PATH_MAX];
	struct vm_entry vms[VM_MAX]; /* the slots */
};

struct vm_entry *vm_entry_find(struct vm_manager *m, const char *name);
/* A stop of e is over (its VMM ended): its timer goes. */
void vm_stop_over(struct vm_entry *e);
/* What control.c holds for e goes, nobody told: a talk, a stop (e is
 * forgotten, or the manager freed). */
void vm_control_end(struct vm_entry *e);
