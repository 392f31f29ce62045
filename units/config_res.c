/* config_res: the resource directives that map onto a cell
 * (systemd.resource-control(5)) into struct unit_resources, and the long
 * tail of directives kin knows but does not act on — each reported once
 * as ignored, never a refusal. */
#include "units/config-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void res_set(struct cfg *c, bool on)
{
	uint32_t bit = 1u << c->dir->arg;
	c->d->res.set = on ? c->d->res.set | bit : c->d->res.set & ~bit;
}

/* "20%", "12.5%" into parts per 10000 of the whole (more than 100% is fine). */
static int percent_parse(const char *s, uint64_t *ret)
{
	size_t n = strlen(s);
	if (n < 2 || n > 16 || s[n - 1] != '%')
		return -EINVAL;
	uint64_t whole = 0, frac = 0, div = 1;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++)
		whole = whole * 10 + (uint64_t)(*p - '0');
	if (p == s)
		return -EINVAL;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (div < 100)
				frac = frac * 10 + (uint64_t)(*p - '0'), div *= 10;
	if (*p != '%')
		return -EINVAL;
	*ret = whole * 100 + frac * 100 / div;
	return 0;
}

static uint64_t physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* Memory*=: bytes with K/M/G/T, "infinity", or a percentage of the
 * machine's memory; "" drops it. */
static int cfg_memory(struct cfg *c, const char *v)
{
	uint64_t *f = CFG_FIELD(c, uint64_t), bytes, pm;
	if (!*v) {
		res_set(c, false);
		return 0;
	}
	if (strcmp(v, "infinity") == 0)
		bytes = UNIT_INFINITY;
	else if (percent_parse(v, &pm) == 0 && pm <= 10000)
		bytes = physical_memory() / 10000 * pm;
	else if (str_to_size(v, 1, UNIT_INFINITY - 1, &bytes) < 0)
		return cfg_bad(c, "\"%.60s\" is not a size, a percentage or infinity", v);
	*f = bytes;
	res_set(c, true);
	return 0;
}

static int cfg_cpu_quota(struct cfg *c, const char *v)
{
	uint64_t pm;
	if (!*v) {
		res_set(c, false);
		return 0;
	}
	if (percent_parse(v, &pm) < 0 || pm == 0 || pm > 100000000)
		return cfg_bad(c, "\"%.60s\" is not a percentage", v);
	/* per cent of one CPU is 10000 µs of each second */
	c->d->res.cpu_quota_per_sec_us = pm * 100;
	res_set(c, true);
	return 0;
}

/* A weight 1..10000; arg2 scale: the old CPUShares= (1024 the default)
 * and BlockIOWeight= (500) map onto the 100 of the new ones. */
static int weight_set(struct cfg *c, const char *v, uint64_t *f, uint64_t min, uint64_t max,
                      uint64_t old_default)
{
	uint64_t w;
	if (!*v) {
		res_set(c, false);
		return 0;
	}
	if (str_to_u64(v, max, &w) < 0 || w < min)
		return cfg_bad(c, "\"%.60s\" is not a weight (%llu..%llu)", v,
		               (unsigned long long)min, (unsigned long long)max);
	if (old_default)
		w = w * 100 / old_default;
	*f = w < 1 ? 1 : w > 10000 ? 10000 : w;
	res_set(c, true);
	return 0;
}

static int cfg_cpu_weight(struct cfg *c, const char *v)
{
	/* "idle" is cpu.idle in systemd; the lowest weight is kin's nearest */
	if (strcmp(v, "idle") == 0)
		v = "1";
	return weight_set(c, v, &c->d->res.cpu_weight, 1, 10000, 0);
}

static int cfg_cpu_shares(struct cfg *c, const char *v)
{
	return weight_set(c, v, &c->d->res.cpu_weight, 2, 262144, 1024);
}

static int cfg_io_weight(struct cfg *c, const char *v)
{
	return weight_set(c, v, &c->d->res.io_weight, 1, 10000, 0);
}

static int cfg_blkio_weight(struct cfg *c, const char *v)
{
	return weight_set(c, v, &c->d->res.io_weight, 10, 1000, 500);
}

static uint64_t pid_max(void)
{
	_cleanup_free_ char *text = NULL;
	uint64_t n = 0;
	if (file_read_small("/proc/sys/kernel/pid_max", 32, &text, NULL) < 0 ||
	    str_to_u64(str_trim(text), UINT32_MAX, &n) < 0 || n == 0)
		return 4194304; /* the kernel's limit on 64-bit */
	return n;
}

static int cfg_tasks_max(struct cfg *c, const char *v)
{
	uint64_t n, pm;
	if (!*v) {
		res_set(c, false);
		return 0;
	}
	if (strcmp(v, "infinity") == 0)
		n = UNIT_INFINITY;
	else if (percent_parse(v, &pm) == 0 && pm <= 10000)
		n = pid_max() * pm / 10000;
	else if (str_to_u64(v, UNIT_INFINITY - 1, &n) < 0 || n == 0)
		return cfg_bad(c, "\"%.60s\" is not a number, a percentage or infinity", v);
	c->d->res.tasks_max = n;
	res_set(c, true);
	return 0;
}

/* AllowedCPUs=, AllowedMemoryNodes=: "0-3 5" or "0-3,5" as cpuset writes it. */
static int cfg_cpuset(struct cfg *c, const char *v)
{
	char *f = CFG_FIELD(c, char);
	char buf[128];
	size_t n = 0;
	if (!*v) {
		f[0] = '\0';
		res_set(c, false);
		return 0;
	}
	for (const char *p = v; *p; p++) {
		if (!strchr("0123456789-, \t", *p))
			return cfg_bad(c, "\"%.60s\" is not a list of numbers and ranges", v);
		char ch = *p == ' ' || *p == '\t' ? ',' : *p;
		if (ch == ',' && (n == 0 || buf[n - 1] == ','))
			continue;
		if (n + 1 >= sizeof(buf))
			return cfg_bad(c, "the list is longer than %zu bytes", sizeof(buf) - 1);
		buf[n++] = ch;
	}
	while (n && buf[n - 1] == ',')
		n--;
	buf[n] = '\0';
	memcpy(f, buf, n + 1);
	res_set(c, true);
	return 0;
}

/* Delegate=: a boolean, or the controllers to hand over (all of them, for kin). */
static int cfg_delegate(struct cfg *c, const char *v)
{
	bool b;
	if (unit_bool_parse(v, &b) == 0)
		c->d->res.delegate = b;
	else
		c->d->res.delegate = *v != '\0';
	return 0;
}

#define MEM(key, field, bit)                                                                       \
	{                                                                                          \
		key, CFG_RES, cfg_memory, CFG_OFF(res.field), bit, 0                               \
	}

const struct cfg_directive cfg_res_table[] = {
    MEM("MemoryMin", memory_min, UNIT_RES_MEMORY_MIN),
    MEM("MemoryLow", memory_low, UNIT_RES_MEMORY_LOW),
    MEM("MemoryHigh", memory_high, UNIT_RES_MEMORY_HIGH),
    MEM("MemoryMax", memory_max, UNIT_RES_MEMORY_MAX),
    MEM("MemoryLimit", memory_max, UNIT_RES_MEMORY_MAX), /* the old name */
    MEM("MemorySwapMax", memory_swap_max, UNIT_RES_MEMORY_SWAP_MAX),
    {"CPUQuota", CFG_RES, cfg_cpu_quota, 0, UNIT_RES_CPU_QUOTA, 0},
    {"CPUWeight", CFG_RES, cfg_cpu_weight, 0, UNIT_RES_CPU_WEIGHT, 0},
    {"CPUShares", CFG_RES, cfg_cpu_shares, 0, UNIT_RES_CPU_WEIGHT, 0},
    {"IOWeight", CFG_RES, cfg_io_weight, 0, UNIT_RES_IO_WEIGHT, 0},
    {"BlockIOWeight", CFG_RES, cfg_blkio_weight, 0, UNIT_RES_IO_WEIGHT, 0},
    {"TasksMax", CFG_RES, cfg_tasks_max, 0, UNIT_RES_TASKS_MAX, 0},
    {"AllowedCPUs", CFG_RES, cfg_cpuset, CFG_OFF(res.allowed_cpus), UNIT_RES_ALLOWED_CPUS, 0},
    {"AllowedMemoryNodes", CFG_RES, cfg_cpuset, CFG_OFF(res.allowed_mems), UNIT_RES_ALLOWED_MEMS,
     0},
    {"Delegate", CFG_RES, cfg_delegate, 0, 0, 0},
    {NULL, 0, NULL, 0, 0, 0},
};

/* ---- known, not acted on ------------------------------------------------------ */

#define NOTED(key, sections)                                                                       \
	{                                                                                          \
		key, sections, NULL, 0, 0, CFG_NOTED                                               \
	}

const struct cfg_directive cfg_noted_table[] = {
    /* [Unit] */
    NOTED("SourcePath", CFG_UNIT),
    NOTED("JobRunningTimeoutSec", CFG_UNIT),
    NOTED("JobTimeoutAction", CFG_UNIT),
    NOTED("JobTimeoutRebootArgument", CFG_UNIT),
    NOTED("StartLimitAction", CFG_UNIT),
    NOTED("FailureAction", CFG_UNIT | CFG_SERVICE),
    NOTED("SuccessAction", CFG_UNIT | CFG_SERVICE),
    NOTED("FailureActionExitStatus", CFG_UNIT),
    NOTED("SuccessActionExitStatus", CFG_UNIT),
    NOTED("RebootArgument", CFG_UNIT | CFG_SERVICE),
    NOTED("CollectMode", CFG_UNIT),
    NOTED("PropagatesReloadTo", CFG_UNIT),
    NOTED("ReloadPropagatedFrom", CFG_UNIT),
    NOTED("PropagatesStopTo", CFG_UNIT),
    NOTED("StopPropagatedFrom", CFG_UNIT),
    NOTED("JoinsNamespaceOf", CFG_UNIT),
    NOTED("OnSuccess", CFG_UNIT),
    NOTED("OnSuccessJobMode", CFG_UNIT),
    NOTED("OnFailureJobMode", CFG_UNIT),
    NOTED("OnFailureIsolate", CFG_UNIT),
    NOTED("SurviveFinalKillSignal", CFG_UNIT),
    /* [Service] */
    NOTED("ExitType", CFG_SERVICE),
    NOTED("OOMPolicy", CFG_SERVICE),
    NOTED("RestartMode", CFG_SERVICE),
    NOTED("RestartSteps", CFG_SERVICE),
    NOTED("RestartMaxDelaySec", CFG_SERVICE),
    NOTED("TimeoutStartFailureMode", CFG_SERVICE),
    NOTED("TimeoutStopFailureMode", CFG_SERVICE),
    NOTED("FileDescriptorStorePreserve", CFG_SERVICE),
    NOTED("USBFunctionDescriptors", CFG_SERVICE),
    NOTED("USBFunctionStrings", CFG_SERVICE),
    NOTED("ReloadSignal", CFG_SERVICE),
    NOTED("OpenFile", CFG_SERVICE),
    NOTED("PermissionsStartOnly", CFG_SERVICE),
    NOTED("RootDirectoryStartOnly", CFG_SERVICE),
    NOTED("SysVStartPriority", CFG_SERVICE),
    NOTED("BusPolicy", CFG_SERVICE),
    /* the exec tail */
    NOTED("ProtectKernelTunables", CFG_EXEC),
    NOTED("ProtectKernelModules", CFG_EXEC),
    NOTED("ProtectKernelLogs", CFG_EXEC),
    NOTED("ProtectControlGroups", CFG_EXEC),
    NOTED("ProtectClock", CFG_EXEC),
    NOTED("ProtectHostname", CFG_EXEC),
    NOTED("MemoryDenyWriteExecute", CFG_EXEC),
    NOTED("LockPersonality", CFG_EXEC),
    NOTED("RestrictRealtime", CFG_EXEC),
    NOTED("RestrictSUIDSGID", CFG_EXEC),
    NOTED("RestrictNamespaces", CFG_EXEC),
    NOTED("RestrictFileSystems", CFG_EXEC),
    NOTED("RemoveIPC", CFG_EXEC),
    NOTED("PrivateUsers", CFG_EXEC),
    NOTED("PrivateMounts", CFG_EXEC),
    NOTED("PrivateIPC", CFG_EXEC),
    NOTED("MountFlags", CFG_EXEC),
    NOTED("SystemCallArchitectures", CFG_EXEC),
    NOTED("SystemCallLog", CFG_EXEC),
    NOTED("KeyringMode", CFG_EXEC),
    NOTED("ProcSubset", CFG_EXEC),
    NOTED("BindPaths", CFG_EXEC),
    NOTED("BindReadOnlyPaths", CFG_EXEC),
    NOTED("TemporaryFileSystem", CFG_EXEC),
    NOTED("ExecPaths", CFG_EXEC),
    NOTED("NoExecPaths", CFG_EXEC),
    NOTED("ExecSearchPath", CFG_EXEC),
    NOTED("IPCNamespacePath", CFG_EXEC),
    NOTED("NetworkNamespacePath", CFG_EXEC),
    NOTED("RootImage", CFG_EXEC),
    NOTED("RootImageOptions", CFG_EXEC),
    NOTED("RootHash", CFG_EXEC),
    NOTED("RootHashSignature", CFG_EXEC),
    NOTED("RootVerity", CFG_EXEC),
    NOTED("MountImages", CFG_EXEC),
    NOTED("ExtensionImages", CFG_EXEC),
    NOTED("ExtensionDirectories", CFG_EXEC),
    NOTED("MountAPIVFS", CFG_EXEC),
    NOTED("SecureBits", CFG_EXEC),
    NOTED("Capabilities", CFG_EXEC),
    NOTED("CPUSchedulingPolicy", CFG_EXEC),
    NOTED("CPUSchedulingPriority", CFG_EXEC),
    NOTED("CPUSchedulingResetOnFork", CFG_EXEC),
    NOTED("CPUAffinity", CFG_EXEC),
    NOTED("NUMAPolicy", CFG_EXEC),
    NOTED("NUMAMask", CFG_EXEC),
    NOTED("IOSchedulingClass", CFG_EXEC),
    NOTED("IOSchedulingPriority", CFG_EXEC),
    NOTED("TimerSlackNSec", CFG_EXEC),
    NOTED("Personality", CFG_EXEC),
    NOTED("IgnoreSIGPIPE", CFG_EXEC),
    NOTED("UtmpIdentifier", CFG_EXEC),
    NOTED("UtmpMode", CFG_EXEC),
    NOTED("SELinuxContext", CFG_EXEC),
    NOTED("AppArmorProfile", CFG_EXEC),
    NOTED("SmackProcessLabel", CFG_EXEC),
    NOTED("PAMName", CFG_EXEC),
    NOTED("TTYVTDisallocate", CFG_EXEC),
    NOTED("TTYRows", CFG_EXEC),
    NOTED("TTYColumns", CFG_EXEC),
    NOTED("SyslogFacility", CFG_EXEC),
    NOTED("SyslogLevel", CFG_EXEC),
    NOTED("SyslogLevelPrefix", CFG_EXEC),
    NOTED("LogLevelMax", CFG_EXEC),
    NOTED("LogExtraFields", CFG_EXEC),
    NOTED("LogRateLimitIntervalSec", CFG_EXEC),
    NOTED("LogRateLimitBurst", CFG_EXEC),
    NOTED("LogFilterPatterns", CFG_EXEC),
    NOTED("LogNamespace", CFG_EXEC),
    NOTED("StandardInputText", CFG_EXEC),
    NOTED("StandardInputData", CFG_EXEC),
    NOTED("LoadCredential", CFG_EXEC),
    NOTED("LoadCredentialEncrypted", CFG_EXEC),
    NOTED("SetCredential", CFG_EXEC),
    NOTED("SetCredentialEncrypted", CFG_EXEC),
    NOTED("ImportCredential", CFG_EXEC),
    NOTED("CoredumpFilter", CFG_EXEC),
    NOTED("TimeoutCleanSec", CFG_EXEC),
    NOTED("RuntimeRandomizedExtraSec", CFG_SERVICE),
    NOTED("SetLoginEnvironment", CFG_EXEC),
    NOTED("MemoryKSM", CFG_EXEC),
    /* the resource tail */
    NOTED("Slice", CFG_RES),
    NOTED("CPUAccounting", CFG_RES),
    NOTED("MemoryAccounting", CFG_RES),
    NOTED("IOAccounting", CFG_RES),
    NOTED("BlockIOAccounting", CFG_RES),
    NOTED("TasksAccounting", CFG_RES),
    NOTED("IPAccounting", CFG_RES),
    NOTED("StartupCPUWeight", CFG_RES),
    NOTED("StartupCPUShares", CFG_RES),
    NOTED("StartupIOWeight", CFG_RES),
    NOTED("StartupBlockIOWeight", CFG_RES),
    NOTED("StartupAllowedCPUs", CFG_RES),
    NOTED("StartupAllowedMemoryNodes", CFG_RES),
    NOTED("CPUQuotaPeriodSec", CFG_RES),
    NOTED("IODeviceWeight", CFG_RES),
    NOTED("IOReadBandwidthMax", CFG_RES),
    NOTED("IOWriteBandwidthMax", CFG_RES),
    NOTED("IOReadIOPSMax", CFG_RES),
    NOTED("IOWriteIOPSMax", CFG_RES),
    NOTED("IODeviceLatencyTargetSec", CFG_RES),
    NOTED("BlockIODeviceWeight", CFG_RES),
    NOTED("BlockIOReadBandwidth", CFG_RES),
    NOTED("BlockIOWriteBandwidth", CFG_RES),
    NOTED("IPAddressAllow", CFG_RES),
    NOTED("IPAddressDeny", CFG_RES),
    NOTED("IPIngressFilterPath", CFG_RES),
    NOTED("IPEgressFilterPath", CFG_RES),
    NOTED("DeviceAllow", CFG_RES),
    NOTED("DevicePolicy", CFG_RES),
    NOTED("DisableControllers", CFG_RES),
    NOTED("DelegateSubgroup", CFG_RES),
    NOTED("ManagedOOMSwap", CFG_RES),
    NOTED("ManagedOOMMemoryPressure", CFG_RES),
    NOTED("ManagedOOMMemoryPressureLimit", CFG_RES),
    NOTED("ManagedOOMPreference", CFG_RES),
    NOTED("MemoryPressureWatch", CFG_RES),
    NOTED("MemoryPressureThresholdSec", CFG_RES),
    NOTED("MemoryZSwapMax", CFG_RES),
    NOTED("DefaultMemoryMin", CFG_RES),
    NOTED("DefaultMemoryLow", CFG_RES),
    NOTED("BPFProgram", CFG_RES),
    NOTED("SocketBindAllow", CFG_RES),
    NOTED("SocketBindDeny", CFG_RES),
    NOTED("RestrictNetworkInterfaces", CFG_RES),
    NOTED("NFTSet", CFG_RES),
    /* [Socket] */
    NOTED("ListenNetlink", CFG_SOCKET),
    NOTED("ListenSpecial", CFG_SOCKET),
    NOTED("ListenMessageQueue", CFG_SOCKET),
    NOTED("ListenUSBFunction", CFG_SOCKET),
    NOTED("SocketProtocol", CFG_SOCKET),
    NOTED("BindToDevice", CFG_SOCKET),
    NOTED("MaxConnectionsPerSource", CFG_SOCKET),
    NOTED("KeepAlive", CFG_SOCKET),
    NOTED("KeepAliveTimeSec", CFG_SOCKET),
    NOTED("KeepAliveIntervalSec", CFG_SOCKET),
    NOTED("KeepAliveProbes", CFG_SOCKET),
    NOTED("NoDelay", CFG_SOCKET),
    NOTED("Priority", CFG_SOCKET),
    NOTED("DeferAcceptSec", CFG_SOCKET),
    NOTED("ReceiveBuffer", CFG_SOCKET),
    NOTED("SendBuffer", CFG_SOCKET),
    NOTED("IPTOS", CFG_SOCKET),
    NOTED("IPTTL", CFG_SOCKET),
    NOTED("Mark", CFG_SOCKET),
    NOTED("PipeSize", CFG_SOCKET),
    NOTED("MessageQueueMaxMessages", CFG_SOCKET),
    NOTED("MessageQueueMessageSize", CFG_SOCKET),
    NOTED("Writable", CFG_SOCKET),
    NOTED("Broadcast", CFG_SOCKET),
    NOTED("Transparent", CFG_SOCKET),
    NOTED("PassPacketInfo", CFG_SOCKET),
    NOTED("Timestamping", CFG_SOCKET),
    NOTED("TCPCongestion", CFG_SOCKET),
    NOTED("ExecStartPre", CFG_SOCKET),
    NOTED("ExecStartPost", CFG_SOCKET),
    NOTED("ExecStopPre", CFG_SOCKET),
    NOTED("ExecStopPost", CFG_SOCKET),
    NOTED("TimeoutSec", CFG_SOCKET),
    NOTED("Symlinks", CFG_SOCKET),
    NOTED("SmackLabel", CFG_SOCKET),
    NOTED("SmackLabelIPIn", CFG_SOCKET),
    NOTED("SmackLabelIPOut", CFG_SOCKET),
    NOTED("SELinuxContextFromNet", CFG_SOCKET),
    NOTED("FlushPending", CFG_SOCKET),
    NOTED("TriggerLimitIntervalSec", CFG_SOCKET),
    NOTED("TriggerLimitBurst", CFG_SOCKET),
    NOTED("PollLimitIntervalSec", CFG_SOCKET),
    NOTED("PollLimitBurst", CFG_SOCKET),
    NOTED("PassFileDescriptorsToExec", CFG_SOCKET),
    /* [Timer] */
    NOTED("OnClockChange", CFG_TIMER),
    NOTED("OnTimezoneChange", CFG_TIMER),
    NOTED("FixedRandomDelay", CFG_TIMER),
    NOTED("DeferReactivation", CFG_TIMER),
    {NULL, 0, NULL, 0, 0, 0},
};
