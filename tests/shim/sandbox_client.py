#!/usr/bin/env python3
"""containerd's Sandbox API called on a kin shim, as containerd 1.7/2.x's
sandboxed CRI calls it: ttrpc frames by hand, the messages from kin's own
proto/sandbox.proto and proto/shim.proto (compiled here with grpc_tools
into a scratch directory). Prints "ok NAME" or "bad NAME why" per check
for tests/ns/sandbox.test.sh.

  sandbox_client.py SOCKET SANDBOX_ID NETNS BUNDLE BUNDLE2 SCRATCH [--vm]

With --vm the shim is containerd-shim-kin-vm-v2: the sandbox is a
host-network pod (NETNS unused), its pid QEMU's, its containers in the
guest.
"""
import os, socket, struct, subprocess, sys, threading, time

sock_path, sb_id, netns, bundle, bundle2, scratch = sys.argv[1:7]
vm = sys.argv[7:8] == ['--vm']
root = os.path.dirname(os.path.abspath(__file__)) + '/../..'
gen = scratch + '/gen'
os.makedirs(gen, exist_ok=True)
subprocess.check_call([sys.executable, '-m', 'grpc_tools.protoc', '-I' + root, '--python_out=' + gen,
                       'proto/shim.proto', 'proto/sandbox.proto', 'proto/ttrpc.proto'])
sys.path.insert(0, gen + '/proto')
sys.path.insert(0, gen)
from proto import sandbox_pb2 as sb, shim_pb2 as shim, ttrpc_pb2 as tt  # noqa: E402

SVC = 'containerd.runtime.sandbox.v1.Sandbox'
TASK2, TASK3 = 'containerd.task.v2.Task', 'containerd.task.v3.Task'
OK, INVALID, NOT_FOUND, EXISTS, PRECOND, UNAVAILABLE = 0, 3, 5, 6, 9, 14


def say(good, name, why=''):
    why = ' '.join(str(why).split())
    print(('ok %s' % name) if good else ('bad %s %s' % (name, why)), flush=True)


class Conn:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock_path)
        self.sid = 1

    def recvn(self, n):
        b = b''
        while len(b) < n:
            c = self.s.recv(n - len(b))
            if not c:
                raise EOFError('connection closed')
            b += c
        return b

    def call(self, service, method, msg, out_type, timeout=30):
        """(code, message, answer or None)"""
        req = tt.Request(service=service, method=method, payload=msg.SerializeToString())
        body = req.SerializeToString()
        sid, self.sid = self.sid, self.sid + 2
        self.s.settimeout(timeout)
        self.s.sendall(struct.pack('>IIBB', len(body), sid, 1, 0) + body)
        while True:
            n, rsid, typ, _ = struct.unpack('>IIBB', self.recvn(10))
            data = self.recvn(n)
            if rsid == sid and typ == 2:
                break
        resp = tt.Response.FromString(data)
        if resp.status.code:
            return resp.status.code, resp.status.message, None
        return 0, '', out_type.FromString(resp.payload)


c = Conn()


def expect(name, method, msg, out_type, code, service=SVC):
    try:
        got, why, out = c.call(service, method, msg, out_type)
    except Exception as e:  # the shim must keep serving
        say(False, name, 'call failed: %r' % e)
        return None
    say(got == code and (code == OK or why), name, 'code %d (want %d): %s' % (got, code, why))
    return out


def ino(path):
    return os.stat(path).st_ino


def pod_config(net_mode=sb.POD):
    pc = sb.PodSandboxConfig(hostname='sbpod')
    pc.metadata.name, pc.metadata.uid, pc.metadata.namespace = 'p', 'u1', 'default'
    pc.linux_config.security_context.namespace_options.network = net_mode
    return shim.Any(type_url='type.googleapis.com/runtime.v1.PodSandboxConfig',
                    value=pc.SerializeToString())


# ---- the wrong order, and hostile creates ----
expect('start_before_create', 'StartSandbox', sb.StartSandboxRequest(sandbox_id=sb_id),
       sb.StartSandboxResponse, PRECOND)
expect('status_before_create', 'SandboxStatus', sb.SandboxStatusRequest(sandbox_id=sb_id),
       sb.SandboxStatusResponse, PRECOND)
expect('wait_before_create', 'WaitSandbox', sb.WaitSandboxRequest(sandbox_id=sb_id),
       sb.WaitSandboxResponse, PRECOND)
expect('create_other_id', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id='other', netns_path=netns, options=pod_config()),
       sb.CreateSandboxResponse, NOT_FOUND)
expect('create_bad_any_type', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, netns_path=netns,
                               options=shim.Any(type_url='example.com/Bogus', value=b'\x08\x01')),
       sb.CreateSandboxResponse, INVALID)
expect('create_bad_any_bytes', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, netns_path=netns,
                               options=shim.Any(type_url='runtime.v1.PodSandboxConfig',
                                                value=b'\x12\xff\xff\xff\x0f')),
       sb.CreateSandboxResponse, INVALID)
expect('create_missing_netns', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, options=pod_config()), sb.CreateSandboxResponse,
       INVALID)
expect('create_netns_not_netns', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, netns_path='/etc/passwd', options=pod_config()),
       sb.CreateSandboxResponse, INVALID)
expect('create_netns_relative', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, netns_path='run/netns/x', options=pod_config()),
       sb.CreateSandboxResponse, INVALID)

# ---- the sandbox ----
t0 = time.time()
expect('create', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, bundle_path=os.getcwd(),
                               netns_path='' if vm else netns,
                               options=pod_config(sb.NODE if vm else sb.POD)),
       sb.CreateSandboxResponse, OK)
expect('create_twice', 'CreateSandbox',
       sb.CreateSandboxRequest(sandbox_id=sb_id, netns_path=netns, options=pod_config()),
       sb.CreateSandboxResponse, EXISTS)
st = expect('start', 'StartSandbox', sb.StartSandboxRequest(sandbox_id=sb_id),
            sb.StartSandboxResponse, OK)
pid = st.pid if st else 0
if vm:  # QEMU is not dumpable: its cmdline is what root may read
    try:
        argv0 = open('/proc/%d/cmdline' % pid, 'rb').read().split(b'\0')[0].decode()
    except OSError as e:
        argv0 = repr(e)
    say('qemu-system' in os.path.basename(argv0), 'start_pid_is_vmm', argv0)
else:
    try:
        same = pid > 0 and ino('/proc/%d/ns/net' % pid) == ino(netns)
        exe = os.readlink('/proc/%d/exe' % pid) if pid else ''
    except OSError as e:
        same, exe = False, repr(e)
    say(same, 'start_pid_in_netns', 'pid %d' % pid)
    say(exe.endswith('/kin') or 'kin' in os.path.basename(exe), 'start_pid_is_kin', exe)
say(st is not None and abs(st.created_at.seconds - t0) < 60, 'start_created_at')
p = expect('platform', 'Platform', sb.PlatformRequest(sandbox_id=sb_id), sb.PlatformResponse, OK)
say(p is not None and p.platform.os == 'linux' and p.platform.architecture, 'platform_linux',
    str(p))
s = expect('status', 'SandboxStatus', sb.SandboxStatusRequest(sandbox_id=sb_id, verbose=True),
           sb.SandboxStatusResponse, OK)
say(s is not None and s.state == 'SANDBOX_READY' and s.pid == pid and s.info.get('flavor') == ('kin-vm' if vm else 'kin'),
    'status_ready', str(s))
expect('ping', 'PingSandbox', sb.PingRequest(sandbox_id=sb_id), sb.PingResponse, OK)
expect('ping_other_id', 'PingSandbox', sb.PingRequest(sandbox_id='x'), sb.PingResponse, NOT_FOUND)

# ---- a container through the Task API joins the zone ----
import json  # noqa: E402
cfg_path = bundle + '/config.json'
cfg = json.load(open(cfg_path))
cfg['process']['terminal'] = False
cfg['process']['args'] = ['/bin/sh', '-c', 'hostname; readlink /proc/self/ns/net']
cfg['root'] = {'path': 'rootfs', 'readonly': False}
cfg.pop('hostname', None)  # the pod's, as CRI leaves it
cfg['annotations'] = {'io.kubernetes.cri.container-type': 'container',
                      'io.kubernetes.cri.sandbox-id': sb_id}
for ns in cfg['linux']['namespaces']:
    if ns['type'] in ('network', 'ipc', 'uts'):
        ns['path'] = '/proc/%d/ns/%s' % (pid, 'net' if ns['type'] == 'network' else ns['type'])
json.dump(cfg, open(cfg_path, 'w'))
out_file = scratch + '/c1.out'
open(out_file, 'w').close()
expect('task_create', 'Create',
       shim.CreateTaskRequest(id='c1', bundle=bundle, stdout=out_file, stderr=out_file),
       shim.CreateTaskResponse, OK, TASK2)
expect('task_start', 'Start', shim.StartRequest(id='c1'), shim.StartResponse, OK, TASK2)
w = expect('task_wait', 'Wait', shim.WaitRequest(id='c1'), shim.WaitResponse, OK, TASK2)
out = open(out_file).read().split()
if vm:  # the guest's: its output relayed from the guest's log ring
    time.sleep(0.5)
    out = open(out_file).read().split()
say(w is not None and w.exit_status == 0 and len(out) == 2 and out[0] == 'sbpod' and
    (vm or out[1] == 'net:[%d]' % ino(netns)), 'container_joins_sandbox', '%s %r' % (w, out))
st3 = expect('task_v3_state', 'State', shim.StateRequest(id='c1'), shim.StateResponse, OK, TASK3)
say(st3 is not None and st3.status == shim.STOPPED, 'task_v3_stopped', str(st3))
expect('task_delete', 'Delete', shim.DeleteRequest(id='c1'), shim.DeleteResponse, OK, TASK2)
# The Task API's Shutdown with no task left keeps a Sandbox API's sandbox.
expect('task_shutdown_keeps', 'Shutdown', shim.ShutdownRequest(id='c1'), shim.Empty, OK, TASK2)
time.sleep(0.3)
expect('ping_after_task_shutdown', 'PingSandbox', sb.PingRequest(sandbox_id=sb_id), sb.PingResponse,
       OK)

m = expect('metrics', 'SandboxMetrics', sb.SandboxMetricsRequest(sandbox_id=sb_id),
           sb.SandboxMetricsResponse, OK)
say(m is not None and m.metrics.id == sb_id and
    m.metrics.data.type_url == 'io.containerd.cgroups.v2.Metrics', 'metrics_cgroups_v2', str(m))

# ---- stop, wait ----
waited = {}


def waiter():
    try:
        waited['r'] = Conn().call(SVC, 'WaitSandbox', sb.WaitSandboxRequest(sandbox_id=sb_id),
                                  sb.WaitSandboxResponse)
    except Exception as e:
        waited['r'] = (-1, repr(e), None)


th = threading.Thread(target=waiter)
th.start()
# A container that ignores SIGTERM: StopSandbox's timeout kills the zone
# (its kin alone would wait 10 s before its SIGKILL).
cfg['process']['args'] = ['/bin/sh', '-c', 'trap "" TERM; exec sleep 1000']
json.dump(cfg, open(bundle2 + '/config.json', 'w'))
expect('task_create_stubborn', 'Create', shim.CreateTaskRequest(id='c2', bundle=bundle2),
       shim.CreateTaskResponse, OK, TASK2)
expect('task_start_stubborn', 'Start', shim.StartRequest(id='c2'), shim.StartResponse, OK, TASK2)
time.sleep(0.5)
say('r' not in waited, 'wait_blocks_while_running', str(waited))
t1 = time.time()
expect('stop', 'StopSandbox', sb.StopSandboxRequest(sandbox_id=sb_id, timeout_secs=1),
       sb.StopSandboxResponse, OK)
say(time.time() - t1 < 6, 'stop_timeout_kills', '%.1f s' % (time.time() - t1))
th.join(20)
code, why, wr = waited.get('r', (-1, 'no answer', None))
say(code == 0 and wr.exited_at.seconds > 0, 'wait_answers_after_stop', '%d %s %s' % (code, why, wr))
say(pid > 0 and not os.path.exists('/proc/%d' % pid), 'zone_gone_after_stop')
s = expect('status_stopped', 'SandboxStatus', sb.SandboxStatusRequest(sandbox_id=sb_id),
           sb.SandboxStatusResponse, OK)
say(s is not None and s.state == 'SANDBOX_NOTREADY' and s.exited_at.seconds > 0, 'status_notready',
    str(s))
expect('ping_stopped', 'PingSandbox', sb.PingRequest(sandbox_id=sb_id), sb.PingResponse, UNAVAILABLE)
w = expect('wait_after_end', 'WaitSandbox', sb.WaitSandboxRequest(sandbox_id=sb_id),
           sb.WaitSandboxResponse, OK)
expect('start_after_end', 'StartSandbox', sb.StartSandboxRequest(sandbox_id=sb_id),
       sb.StartSandboxResponse, PRECOND)
expect('shutdown', 'ShutdownSandbox', sb.ShutdownSandboxRequest(sandbox_id=sb_id),
       sb.ShutdownSandboxResponse, OK)
