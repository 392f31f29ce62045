#!/usr/bin/env python3
"""The CRI flow a kubelet drives, against containerd's CRI plugin with
kin's shim as the runtime handler: Version, RunPodSandbox, two containers
in one pod that reach each other over the pod's localhost, ContainerStatus,
ExecSync (exit code and output), the container log in CRI's format,
StopContainer (SIGTERM, then SIGKILL after the grace), RemoveContainer,
StopPodSandbox, RemovePodSandbox, with ListContainers and ListPodSandbox
checked throughout, and an OOM-killed container where memory limits work.

  cri_flow.py SOCKET GENDIR HANDLER IMAGE LOGDIR [--host-network] [--oom yes|no]

Prints one "PASS cri/NAME" or "FAIL cri/NAME: why" line per check, and
exits 1 if any failed. GENDIR receives the Python code protoc makes of
tests/cri/cri.proto."""
import argparse, os, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(gendir):
    from grpc_tools import protoc
    os.makedirs(gendir, exist_ok=True)
    r = protoc.main(["protoc", "-I" + HERE, "--python_out=" + gendir,
                     "--grpc_python_out=" + gendir, os.path.join(HERE, "cri.proto")])
    if r != 0:
        sys.exit("protoc failed on cri.proto")
    sys.path.insert(0, gendir)
    import cri_pb2, cri_pb2_grpc
    return cri_pb2, cri_pb2_grpc


class Flow:
    def __init__(self, a):
        import grpc
        self.grpc = grpc
        self.pb, stubs = load(a.gendir)
        self.chan = grpc.insecure_channel("unix://" + a.socket)
        self.rt = stubs.RuntimeServiceStub(self.chan)
        self.a = a
        self.failed = 0

    def check(self, name, cond, why=""):
        if cond:
            print("PASS cri/" + name)
        else:
            print("FAIL cri/%s: %s" % (name, why))
            self.failed += 1
        sys.stdout.flush()
        return cond

    def call(self, method, req, timeout=60):
        return getattr(self.rt, method)(req, timeout=timeout)

    def try_call(self, name, method, req, timeout=60):
        try:
            return self.call(method, req, timeout)
        except self.grpc.RpcError as e:
            self.check(name, False, "%s: %s" % (e.code(), e.details()))
            return None

    def sandbox_config(self, name, uid):
        pb = self.pb
        ns = pb.NamespaceOption(network=pb.NODE if self.a.host_network else pb.POD)
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid=uid, namespace="kintest", attempt=0),
            hostname=name, log_directory=self.a.logdir,
            linux=pb.LinuxPodSandboxConfig(
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns)))

    def container(self, pod, sconf, name, cmd, memory=0):
        pb = self.pb
        res = pb.LinuxContainerResources(memory_limit_in_bytes=memory) if memory else None
        conf = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=self.a.image),
            command=cmd, log_path=name + ".log",
            linux=pb.LinuxContainerConfig(resources=res))
        r = self.try_call("create_" + name, "CreateContainer",
                          pb.CreateContainerRequest(pod_sandbox_id=pod, config=conf,
                                                    sandbox_config=sconf))
        return r.container_id if r else None

    def status(self, cid):
        return self.call("ContainerStatus", self.pb.ContainerStatusRequest(container_id=cid)).status

    def wait_state(self, cid, state, secs=20):
        end = time.time() + secs
        while time.time() < end:
            st = self.status(cid)
            if st.state == state:
                return st
            time.sleep(0.1)
        return self.status(cid)

    def list_ids(self, pod):
        pb = self.pb
        cs = self.call("ListContainers", pb.ListContainersRequest(
            filter=pb.ContainerFilter(pod_sandbox_id=pod))).containers
        return {c.id: c.state for c in cs}

    def run(self):
        pb, a = self.pb, self.a
        v = self.try_call("version", "Version", pb.VersionRequest())
        if not v:
            return
        self.check("version", v.runtime_name == "containerd", v.runtime_name)
        sconf = self.sandbox_config("kinpod", "uid-kinpod")
        r = self.try_call("run_pod_sandbox", "RunPodSandbox",
                          pb.RunPodSandboxRequest(config=sconf, runtime_handler=a.handler))
        if not r:
            return
        pod = r.pod_sandbox_id
        st = self.call("PodSandboxStatus", pb.PodSandboxStatusRequest(pod_sandbox_id=pod)).status
        self.check("run_pod_sandbox", st.state == pb.SANDBOX_READY and st.runtime_handler == a.handler,
                   "state %d handler %s" % (st.state, st.runtime_handler))
        items = self.call("ListPodSandbox", pb.ListPodSandboxRequest()).items
        self.check("list_pod_sandbox", any(i.id == pod and i.state == pb.SANDBOX_READY for i in items),
                   "pod not listed ready")

        port = str(20000 + os.getpid() % 20000)
        web = self.container(pod, sconf, "web", ["/bin/busybox", "httpd", "-f", "-p", "127.0.0.1:" + port,
                                                  "-h", "/etc"])
        client = self.container(pod, sconf, "client", ["/bin/sh", "-c",
                                "for i in $(seq 200); do busybox wget -q -O- http://127.0.0.1:%s/passwd && exit 0; sleep 0.1; done; exit 9" % port])
        if not web or not client:
            return
        # Both containers went to the pod's shim: one shim daemon for the pod.
        shims = 0
        for pid in os.listdir("/proc"):
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            except (OSError, ValueError):
                continue
            if cmd and cmd[0].endswith((b"containerd-shim-kin-v2", b"containerd-shim-kin-vm-v2")) \
                    and b"serve" in cmd and pod.encode() in cmd:
                shims += 1
        self.check("one_shim_per_pod", shims == 1, "%d shim daemons for the pod" % shims)
        ids = self.list_ids(pod)
        self.check("list_created", ids.get(web) == pb.CONTAINER_CREATED and ids.get(client) == pb.CONTAINER_CREATED,
                   str(ids))
        for c, n in ((web, "web"), (client, "client")):
            self.try_call("start_" + n, "StartContainer", pb.StartContainerRequest(container_id=c))
        st = self.wait_state(web, pb.CONTAINER_RUNNING)
        self.check("status_running", st.state == pb.CONTAINER_RUNNING and st.started_at > 0,
                   "state %d" % st.state)
        st = self.wait_state(client, pb.CONTAINER_EXITED)
        self.check("pod_localhost", st.state == pb.CONTAINER_EXITED and st.exit_code == 0,
                   "client state %d exit %d" % (st.state, st.exit_code))
        log = os.path.join(a.logdir, "client.log")
        text = open(log).read() if os.path.exists(log) else ""
        # CRI's log format: "TIME STREAM P|F LINE".
        lines = [l.split(" ", 3) for l in text.splitlines()]
        self.check("container_log_cri_format",
                   any(len(l) == 4 and l[1] == "stdout" and l[2] in ("F", "P") and l[3].startswith("root:")
                       for l in lines), "log: %r" % text[:200])

        if not a.host_network:
            # CNI's netns is the pod's: the zone joined it, so the container
            # has the address CRI reports.
            ip = self.call("PodSandboxStatus", pb.PodSandboxStatusRequest(
                pod_sandbox_id=pod)).status.network.ip
            e = self.try_call("pod_network", "ExecSync", pb.ExecSyncRequest(
                container_id=web, cmd=["/bin/busybox", "ip", "-4", "addr", "show", "eth0"], timeout=20))
            if e:
                self.check("pod_network", ip and ("inet %s/" % ip).encode() in e.stdout,
                           "pod ip %r, eth0: %r" % (ip, e.stdout))
            # and packets flow: CNI's bridge (.1 of the pod's /24, the
            # suites' subnets) answers a ping.
            e = self.try_call("pod_network_traffic", "ExecSync", pb.ExecSyncRequest(
                container_id=web, cmd=["/bin/sh", "-c",
                                       "gw=$(busybox ip -o -4 addr show eth0 | busybox awk "
                                       "'{split($4, a, \".\"); print a[1] \".\" a[2] \".\" a[3] \".1\"}'); "
                                       "busybox ping -c 1 -W 5 $gw"], timeout=20))
            if e:
                self.check("pod_network_traffic", e.exit_code == 0 and b"1 packets received" in e.stdout,
                           "exit %d: %r %r" % (e.exit_code, e.stdout[-200:], e.stderr[-200:]))
        e = self.try_call("exec_sync", "ExecSync", pb.ExecSyncRequest(
            container_id=web, cmd=["/bin/sh", "-c", "echo out-$((6*7)); echo err >&2; exit 3"], timeout=20))
        if e:
            self.check("exec_sync", e.exit_code == 3 and e.stdout == b"out-42\n" and e.stderr == b"err\n",
                       "exit %d out %r err %r" % (e.exit_code, e.stdout, e.stderr))

        # A process that ignores SIGTERM: StopContainer kills it after the grace.
        stubborn = self.container(pod, sconf, "stubborn",
                                  ["/bin/sh", "-c", "trap '' TERM; echo armed; while :; do sleep 0.1; done"])
        if stubborn:
            self.try_call("start_stubborn", "StartContainer", pb.StartContainerRequest(container_id=stubborn))
            self.wait_state(stubborn, pb.CONTAINER_RUNNING)
            # Running is exec'd, not yet past the trap: wait for its word.
            log = os.path.join(a.logdir, "stubborn.log")
            end = time.time() + 20
            while time.time() < end and not (os.path.exists(log) and "armed" in open(log).read()):
                time.sleep(0.05)
            t0 = time.time()
            self.try_call("stop_stubborn", "StopContainer",
                          pb.StopContainerRequest(container_id=stubborn, timeout=1))
            st = self.status(stubborn)
            self.check("stop_term_then_kill", st.state == pb.CONTAINER_EXITED and st.exit_code == 137
                       and time.time() - t0 >= 0.9, "state %d exit %d" % (st.state, st.exit_code))
        self.try_call("stop_web", "StopContainer", pb.StopContainerRequest(container_id=web, timeout=5))
        st = self.status(web)
        self.check("stop_container", st.state == pb.CONTAINER_EXITED, "state %d" % st.state)

        if a.oom == "yes":
            hog = self.container(pod, sconf, "hog", ["/bin/sh", "-c", "x=a; while :; do x=$x$x; done"],
                                 memory=16 << 20)
            if hog:
                self.try_call("start_hog", "StartContainer", pb.StartContainerRequest(container_id=hog))
                st = self.wait_state(hog, pb.CONTAINER_EXITED, 60)
                self.check("oom_killed", st.reason == "OOMKilled", "reason %r exit %d" % (st.reason, st.exit_code))

        for c in list(self.list_ids(pod)):
            self.try_call("remove_container", "RemoveContainer", pb.RemoveContainerRequest(container_id=c))
        self.check("list_after_remove", self.list_ids(pod) == {}, str(self.list_ids(pod)))
        self.try_call("stop_pod_sandbox", "StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=pod))
        st = self.call("PodSandboxStatus", pb.PodSandboxStatusRequest(pod_sandbox_id=pod)).status
        self.check("pod_not_ready", st.state == pb.SANDBOX_NOTREADY, "state %d" % st.state)
        self.try_call("remove_pod_sandbox", "RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
        items = self.call("ListPodSandbox", pb.ListPodSandboxRequest()).items
        self.check("list_after_remove_pod", not any(i.id == pod for i in items), "pod still listed")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("socket")
    p.add_argument("gendir")
    p.add_argument("handler")
    p.add_argument("image")
    p.add_argument("logdir")
    p.add_argument("--host-network", action="store_true")
    p.add_argument("--oom", default="no")
    a = p.parse_args()
    f = Flow(a)
    try:
        f.run()
    except Exception as e:  # a broken flow is a failure, named
        f.check("flow", False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if f.failed else 0)


if __name__ == "__main__":
    main()
