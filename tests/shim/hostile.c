/* shim-hostile: a hostile caller of a running kin shim's Task service, for
 * tests/ns/shim.test.sh (containerd is trusted, but its requests carry what
 * users and images put in them).
 *   shim-hostile SOCKET TASK_ID SCRATCH_DIR
 *   shim-hostile --update SOCKET TASK_ID MEMORY_BYTES   (one valid Update,
 *       as kubelet's resize would send; for the guest suite, whose ctr
 *       has no update command)
 * TASK_ID is a running task of that shim; SCRATCH_DIR a directory to make
 * bad bundles in. Every request below must be answered with a clean status
 * (the code named, never INTERNAL or UNKNOWN, no connection cut), and at
 * the end the shim must still answer Connect with TASK_ID running.
 * Prints "ok NAME" or "bad NAME WHY" per check; exits 0 if all were ok. */
#include "proto/shim.pb-c.h"
#include "rpc/rpc.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define TASK "containerd.task.v2.Task"

static struct rpc_client *client;
static const char *task_id, *scratch;
static int failures;

static void verdict(bool good, const char *name, const char *why)
{
	printf(good ? "ok %s\n" : "bad %s %s\n", name, why);
	fflush(stdout);
	failures += !good;
}

/* One call; want is the code it must end with (ERR_OK for success). */
static void expect(const char *name, const char *method, const ProtobufCMessage *in, int want)
{
	struct err st = {0};
	ProtobufCMessage *out = NULL;
	int r = rpc_client_call(client, TASK, method, in, NULL, &st, &out);
	char why[700];
	if (r < 0) {
		snprintf(why, sizeof(why), "the call failed: %s", strerror(-r));
		verdict(false, name, why);
		return;
	}
	snprintf(why, sizeof(why), "code %d (want %d): %.600s", (int)st.code, want, st.msg);
	verdict((int)st.code == want && (want == ERR_OK || st.msg[0]), name, why);
}

static char *bundle(const char *name, const char *config)
{
	static char path[4096];
	char file[4200];
	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	mkdir(path, 0700);
	snprintf(file, sizeof(file), "%s/config.json", path);
	if (config && strcmp(config, "FIFO") == 0) {
		mkfifo(file, 0600);
	} else if (config) {
		FILE *f = fopen(file, "w");
		if (f) {
			fputs(config, f);
			fclose(f);
		}
	}
	return path;
}

static void creates(void)
{
	char long_id[200];
	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	Kin__Shim__CreateTaskRequest m = KIN__SHIM__CREATE_TASK_REQUEST__INIT;
	m.bundle = bundle("b0", "{}");
	m.id = (char *)"../up";
	expect("create_id_dotdot", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.id = long_id;
	expect("create_id_long", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.id = (char *)task_id;
	expect("create_id_taken", "Create", &m.base, ERR_ALREADY_EXISTS);
	m.id = (char *)"h1";
	m.bundle = (char *)"relative/bundle";
	expect("create_bundle_relative", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.bundle = bundle("b1", NULL);
	expect("create_no_config", "Create", &m.base, ERR_NOT_FOUND);
	m.bundle = bundle("b2", "FIFO");
	expect("create_config_fifo", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.bundle = bundle("b3", "{not json");
	expect("create_config_not_json", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.bundle =
	    bundle("b4", "{\"ociVersion\":\"1.0.2\",\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
	                 "\"args\":[\"/bin/true\"],"
	                 "\"cwd\":\"/\"},\"root\":{\"path\":\"rootfs\"},\"hooks\":{\"prestart\":"
	                 "[{\"path\":\"/bin/true\"}]},\"linux\":{\"namespaces\":[{\"type\":"
	                 "\"mount\"}]}}");
	expect("create_hooks", "Create", &m.base, ERR_UNIMPLEMENTED);
	m.bundle = bundle("b5", "{\"ociVersion\":\"1.0.2\",\"process\":{\"user\":{\"uid\":0,"
	                        "\"gid\":0},\"args\":[\"/bin/true\"],"
	                        "\"cwd\":\"/\"},\"root\":{\"path\":\"rootfs\"},\"linux\":"
	                        "{\"namespaces\":[{\"type\":\"mount\"}]}}");
	expect("create_missing_rootfs", "Create", &m.base, ERR_NOT_FOUND);
	m.terminal = true;
	expect("create_terminal", "Create", &m.base, ERR_UNIMPLEMENTED);
	m.terminal = false;
	m.stdout = (char *)"binary:///bin/logger";
	expect("create_stdio_uri", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.stdout = (char *)"";
	Kin__Shim__Mount mnt = KIN__SHIM__MOUNT__INIT, *mp[17];
	for (int i = 0; i < 17; i++)
		mp[i] = &mnt;
	m.rootfs = mp;
	m.n_rootfs = 17;
	expect("create_rootfs_too_many", "Create", &m.base, ERR_INVALID_ARGUMENT);
	m.n_rootfs = 1;
	mnt.type = (char *)"";
	mnt.source = (char *)"none";
	expect("create_rootfs_no_type", "Create", &m.base, ERR_INVALID_ARGUMENT);
	mnt.type = (char *)"no-such-fs";
	expect("create_rootfs_bad_fs", "Create", &m.base, ERR_NOT_FOUND);
}

static void on_task(void)
{
	Kin__Shim__StartRequest start = KIN__SHIM__START_REQUEST__INIT;
	start.id = (char *)"nosuch";
	expect("start_unknown", "Start", &start.base, ERR_NOT_FOUND);
	start.id = (char *)task_id;
	expect("start_again", "Start", &start.base, ERR_FAILED_PRECONDITION);
	start.exec_id = (char *)"nosuch";
	expect("start_unknown_exec", "Start", &start.base, ERR_NOT_FOUND);
	Kin__Shim__KillRequest kill = KIN__SHIM__KILL_REQUEST__INIT;
	kill.id = (char *)task_id;
	kill.signal = 0;
	expect("kill_signal_0", "Kill", &kill.base, ERR_INVALID_ARGUMENT);
	kill.signal = 4294967295u;
	expect("kill_signal_huge", "Kill", &kill.base, ERR_INVALID_ARGUMENT);
	Kin__Shim__DeleteRequest del = KIN__SHIM__DELETE_REQUEST__INIT;
	del.id = (char *)task_id;
	expect("delete_running", "Delete", &del.base, ERR_FAILED_PRECONDITION);
	Kin__Shim__ExecProcessRequest ex = KIN__SHIM__EXEC_PROCESS_REQUEST__INIT;
	Kin__Shim__Any spec = KIN__SHIM__ANY__INIT;
	ex.id = (char *)task_id;
	ex.exec_id = (char *)"init";
	expect("exec_id_init", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	ex.exec_id = (char *)"../x";
	expect("exec_id_dotdot", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	ex.exec_id = (char *)"h2";
	expect("exec_no_spec", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	ex.spec = &spec;
	spec.value = (ProtobufCBinaryData){9, (uint8_t *)"not json!"};
	expect("exec_spec_not_json", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	spec.value = (ProtobufCBinaryData){2, (uint8_t *)"[]"};
	expect("exec_spec_array", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	spec.value = (ProtobufCBinaryData){13, (uint8_t *)"{\"args\":[1]}"};
	expect("exec_spec_bad_args", "Exec", &ex.base, ERR_INVALID_ARGUMENT);
	Kin__Shim__UpdateTaskRequest up = KIN__SHIM__UPDATE_TASK_REQUEST__INIT;
	up.id = (char *)task_id;
	expect("update_no_resources", "Update", &up.base, ERR_INVALID_ARGUMENT);
	Kin__Shim__Any res = KIN__SHIM__ANY__INIT;
	res.type_url = (char *)"types.containerd.io/opencontainers/runtime-spec/1/LinuxResources";
	res.value = (ProtobufCBinaryData){22, (uint8_t *)"{\"memory\":{\"limit\":[]}"};
	up.resources = &res;
	expect("update_bad_resources", "Update", &up.base, ERR_INVALID_ARGUMENT);
	Kin__Shim__CheckpointTaskRequest cp = KIN__SHIM__CHECKPOINT_TASK_REQUEST__INIT;
	cp.id = (char *)task_id;
	expect("checkpoint_refused", "Checkpoint", &cp.base, ERR_UNIMPLEMENTED);
	Kin__Shim__ResizePtyRequest rp = KIN__SHIM__RESIZE_PTY_REQUEST__INIT;
	rp.id = (char *)task_id;
	expect("resize_pty_refused", "ResizePty", &rp.base, ERR_UNIMPLEMENTED);
	Kin__Shim__StateRequest sr = KIN__SHIM__STATE_REQUEST__INIT;
	sr.id = (char *)"nosuch";
	expect("state_unknown", "State", &sr.base, ERR_NOT_FOUND);
	Kin__Shim__WaitRequest wr = KIN__SHIM__WAIT_REQUEST__INIT;
	wr.id = (char *)task_id;
	wr.exec_id = (char *)"nosuch";
	expect("wait_unknown_exec", "Wait", &wr.base, ERR_NOT_FOUND);
}

static int update(const char *sock, const char *id, const char *bytes)
{
	char addr[256], json[128];
	snprintf(addr, sizeof(addr), "unix:%s", sock);
	snprintf(json, sizeof(json), "{\"memory\":{\"limit\":%s}}", bytes);
	if (rpc_client_connect(addr, 5000, &client) < 0)
		return 2;
	Kin__Shim__Any res = KIN__SHIM__ANY__INIT;
	res.type_url = (char *)"types.containerd.io/opencontainers/runtime-spec/1/LinuxResources";
	res.value = (ProtobufCBinaryData){strlen(json), (uint8_t *)json};
	Kin__Shim__UpdateTaskRequest up = KIN__SHIM__UPDATE_TASK_REQUEST__INIT;
	up.id = (char *)id;
	up.resources = &res;
	expect("update", "Update", &up.base, ERR_OK);
	rpc_client_free(client);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "--update") == 0)
		return update(argv[2], argv[3], argv[4]);
	if (argc != 4) {
		fprintf(stderr, "usage: shim-hostile SOCKET TASK_ID SCRATCH_DIR\n");
		return 2;
	}
	task_id = argv[2];
	scratch = argv[3];
	char addr[256];
	snprintf(addr, sizeof(addr), "unix:%s", argv[1]);
	if (rpc_client_connect(addr, 5000, &client) < 0) {
		fprintf(stderr, "shim-hostile: cannot connect to %s\n", argv[1]);
		return 2;
	}
	creates();
	on_task();
	/* Still serving, the task untouched. */
	Kin__Shim__StateRequest sr = KIN__SHIM__STATE_REQUEST__INIT;
	sr.id = (char *)task_id;
	struct err st = {0};
	ProtobufCMessage *out = NULL;
	int r = rpc_client_call(client, TASK, "State", &sr.base,
	                        &kin__shim__state_response__descriptor, &st, &out);
	Kin__Shim__StateResponse *s = (Kin__Shim__StateResponse *)out;
	verdict(r == 0 && st.code == ERR_OK && s && s->status == KIN__SHIM__STATUS__RUNNING,
	        "task_still_running", st.msg);
	if (out)
		protobuf_c_message_free_unpacked(out, NULL);
	rpc_client_free(client);
	return failures ? 1 : 0;
}
