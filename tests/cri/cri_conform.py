#!/usr/bin/env python3
"""critest's specs that kin's shim once failed, as the kubelet's calls to
containerd's CRI (the same calls and the same checks as cri-tools'
pkg/validate, written here from what they do):

  privileged          a privileged pod and container: every capability of
                      the host's bounding set, no seccomp, nothing masked, every device of the host's /dev, and
                      CAP_NET_ADMIN at work in the pod's network
  privileged_seccomp  a seccomp profile that blocks sethostname is ignored
                      for a privileged container (hostname works)
  host_ipc            hostIPC: a shared memory segment made on the host is
                      seen in the container (and not in a pod without it)
  host_pid            hostPID: the host's processes are seen, and the pod's
                      gone with it
  sysctls             pod-level sysctls (IPC namespace ones) are what the
                      pod's containers read
  sandbox_pause       Task Pause and Resume of the pod's sandbox (ctr):
                      the pod frozen and thawed
  sandbox_stats       Task Stats of the pod's sandbox (ctr task metrics):
                      its CPU time
  setuid              a setuid-root program run as uid 1000 has euid 0
  propagation_*       a volume with rprivate, rslave and rshared
                      propagation: host -> container and container -> host
                      as each mode says

  cri_conform.py SOCKET GENDIR HANDLER IMAGE LOGDIR [--only NAME,...]

Prints one "PASS cri/NAME" or "FAIL cri/NAME: why" line per check, exits 1
if any failed."""
import argparse, ctypes, os, shutil, subprocess, sys, tempfile, time

import cri_flow

MS_BIND, MS_REC, MS_PRIVATE, MS_SHARED, MNT_DETACH = 4096, 16384, 1 << 18, 1 << 20, 2
libc = ctypes.CDLL(None, use_errno=True)


def mount(src, dst, flags):
    if libc.mount(src.encode() if src else None, dst.encode(), None, flags, None) != 0:
        raise OSError(ctypes.get_errno(), "mount %s on %s" % (src, dst))


def umount(path):
    libc.umount2(path.encode(), MNT_DETACH)


def host_status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return line.split()[1]
    return ""


class Conform(cri_flow.Flow):
    def pod_config(self, name, privileged=False, ipc=None, pid=None, sysctls=None):
        pb = self.pb
        ns = pb.NamespaceOption(network=pb.POD, ipc=pb.NODE if ipc == "node" else pb.POD,
                                pid=pb.NODE if pid == "node" else pb.POD)
        sconf = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid="uid-%s-%d" % (name, os.getpid()),
                                           namespace="kintest", attempt=0),
            hostname=name, log_directory=self.a.logdir,
            linux=pb.LinuxPodSandboxConfig(
                sysctls=sysctls or {},
                security_context=pb.LinuxSandboxSecurityContext(namespace_options=ns,
                                                                privileged=privileged)))
        return sconf

    def pod(self, name, **kw):
        pb = self.pb
        sconf = self.pod_config(name, **kw)
        r = self.try_call(name + "/run_pod", "RunPodSandbox",
                          pb.RunPodSandboxRequest(config=sconf, runtime_handler=self.a.handler))
        return (r.pod_sandbox_id, sconf) if r else (None, None)

    def start(self, name, pod, sconf, cmd=None, privileged=False, mounts=(), seccomp=None, ipc=None,
              pid=None, user=None):
        pb = self.pb
        ns = pb.NamespaceOption(network=pb.POD, ipc=pb.NODE if ipc == "node" else pb.POD,
                                pid=pb.NODE if pid == "node" else pb.CONTAINER)
        sc = pb.LinuxContainerSecurityContext(privileged=privileged, namespace_options=ns)
        if user is not None:
            sc.run_as_user.value = user
        if seccomp:
            sc.seccomp.CopyFrom(pb.SecurityProfile(profile_type=pb.SecurityProfile.Localhost,
                                                   localhost_ref=seccomp))
        conf = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=self.a.image),
            command=cmd or ["/bin/sleep", "100000"], log_path=name + ".log",
            mounts=list(mounts), linux=pb.LinuxContainerConfig(security_context=sc))
        r = self.try_call(name + "/create", "CreateContainer",
                          pb.CreateContainerRequest(pod_sandbox_id=pod, config=conf, sandbox_config=sconf))
        if not r:
            return None
        if not self.try_call(name + "/start", "StartContainer",
                             pb.StartContainerRequest(container_id=r.container_id)):
            return None
        st = self.wait_state(r.container_id, pb.CONTAINER_RUNNING)
        return r.container_id if self.check(name + "/running", st.state == pb.CONTAINER_RUNNING,
                                             "state %d" % st.state) else None

    def sh(self, cid, script):
        """(exit code, stdout text) of sh -c SCRIPT in the container."""
        try:
            e = self.call("ExecSync", self.pb.ExecSyncRequest(container_id=cid, cmd=["/bin/sh", "-c", script],
                                                              timeout=20))
            return e.exit_code, e.stdout.decode(errors="replace") + e.stderr.decode(errors="replace")
        except self.grpc.RpcError as err:
            return -1, "%s: %s" % (err.code(), err.details())

    def ctr(self, *args):
        """ctr ARGS on containerd's k8s.io namespace (the Task API's view)."""
        return subprocess.run(["ctr", "-a", self.a.socket, "-n", "k8s.io", "task"] + list(args),
                              capture_output=True, text=True)

    def task_column(self, task, col):
        """A column of `ctr task ls` for task (1 pid, 2 status), or ""."""
        return next((l.split()[col] for l in self.ctr("ls").stdout.splitlines() if l.startswith(task)), "")

    def end(self, pod):
        if not pod:
            return
        pb = self.pb
        for c in list(self.list_ids(pod)):
            self.call("StopContainer", pb.StopContainerRequest(container_id=c, timeout=1))
            self.call("RemoveContainer", pb.RemoveContainerRequest(container_id=c))
        self.call("StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=pod))
        self.call("RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=pod))

    # ---- the specs ----

    def privileged(self):
        pod, sconf = self.pod("priv", privileged=True)
        c = pod and self.start("priv", pod, sconf, privileged=True)
        if c:
            _, out = self.sh(c, "grep -E '^(CapEff|Seccomp):' /proc/self/status")
            want = "CapEff:\t%s\nSeccomp:\t0\n" % host_status("CapBnd")
            self.check("priv/all_caps_no_seccomp", out == want, "%r, want %r" % (out, want))
            # (/sys is not checked: sysfs is one superblock per network
            # namespace, read-only for all once the sandbox mounted it so —
            # runc's pause does, kin's zone too)
            _, out = self.sh(c, "cat /proc/mounts")
            masked = [l for l in out.splitlines() if l.split()[1] in ("/proc/kcore", "/proc/keys",
                                                                      "/sys/firmware", "/proc/sysrq-trigger")]
            self.check("priv/nothing_masked", not masked, repr(masked))
            host = sorted(d for d in os.listdir("/dev") if d != "console"  # runc leaves it out too
                          if os.path.exists("/dev/" + d) and not os.path.isdir("/dev/" + d)
                          and (os.stat("/dev/" + d).st_mode & 0o060000))
            _, out = self.sh(c, "ls /dev")
            missing = sorted(set(host) - set(out.split()))
            self.check("priv/host_devices", len(host) > 5 and not missing,
                       "%d host devices, missing in the container: %s" % (len(host), missing[:8]))
            rc, out = self.sh(c, "ip link set lo mtu 65536 && ip link set lo mtu 65535 && "
                                 "ip link show lo | grep -q 'mtu 65535' && ip link set lo mtu 65536")
            self.check("priv/net_admin", rc == 0, "exit %d: %s" % (rc, out[-200:]))
        self.end(pod)

    def privileged_seccomp(self):
        d = tempfile.mkdtemp(prefix="kinsc")
        prof = os.path.join(d, "no-sethostname.json")
        open(prof, "w").write('{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": '
                              '[{"names": ["sethostname"], "action": "SCMP_ACT_ERRNO"}]}')
        pod, sconf = self.pod("privsc", privileged=True)
        c = pod and self.start("privsc", pod, sconf, privileged=True, seccomp=prof)
        if c:
            rc, out = self.sh(c, "hostname kin-renamed && hostname")
            self.check("privsc/seccomp_ignored", rc == 0 and out.strip() == "kin-renamed",
                       "exit %d: %s" % (rc, out[-200:]))
        self.end(pod)
        shutil.rmtree(d, ignore_errors=True)

    def refused(self, name, method, req, words):
        """A call kin-vm must refuse, its error naming words."""
        try:
            r = self.call(method, req)
            self.check(name, False, "not refused")
            return r
        except self.grpc.RpcError as e:
            self.check(name, words in (e.details() or ""), "%s: %s" % (e.code(), e.details()))

    def pod_refused(self, name, words, **kw):
        """A pod kin-vm must refuse (a VM has a kernel of its own), named."""
        r = self.refused(name + "/refused_in_a_vm", "RunPodSandbox",
                         self.pb.RunPodSandboxRequest(config=self.pod_config(name, **kw),
                                                      runtime_handler=self.a.handler), words)
        if r:
            self.end(r.pod_sandbox_id)

    def host_ipc(self):
        if self.a.handler == "kin-vm":
            return self.pod_refused("hostipc", "cannot share the host's IPC namespace", ipc="node")
        out = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True).stdout
        shmid = out.split()[-1] if out.split() else ""
        if not self.check("hostipc/segment_made", shmid.isdigit(), "ipcmk: %r" % out):
            return
        try:
            for mode, seen in (("node", True), (None, False)):
                name = "hostipc" if mode else "podipc"
                pod, sconf = self.pod(name, ipc=mode)
                c = pod and self.start(name, pod, sconf, ipc=mode)
                if c:
                    _, out = self.sh(c, "cat /proc/sysvipc/shm")
                    ids = [l.split()[1] for l in out.splitlines()[1:] if len(l.split()) > 1]
                    self.check(name + "/segment_" + ("seen" if seen else "unseen"), (shmid in ids) == seen,
                               "shmid %s, the container's: %s" % (shmid, ids[:8]))
                self.end(pod)
        finally:
            subprocess.run(["ipcrm", "-m", shmid], capture_output=True)

    def host_pid(self):
        me = str(os.getpid())
        if self.a.handler == "kin-vm":
            return self.pod_refused("hostpid", "cannot share the host's PID namespace", pid="node")
        for mode, seen in (("node", True), (None, False)):
            name = "hostpid" if mode else "podpid"
            pod, sconf = self.pod(name, pid=mode)
            c = pod and self.start(name, pod, sconf, pid=mode)
            pid = ""
            if c:
                rc, out = self.sh(c, "test -d /proc/%s" % me)
                self.check(name + "/host_process_" + ("seen" if seen else "unseen"), (rc == 0) == seen,
                           "test -d /proc/%s: exit %d %s" % (me, rc, out[-100:]))
                pid = self.task_column(c, 1)
            self.end(pod)
            if mode and self.check(name + "/pid_known", pid.isdigit() and int(pid) > 1, "ctr's pid %r" % pid):
                # its zone's kin is no PID 1: it ends what it ran
                end = time.time() + 10
                while time.time() < end and os.path.exists("/proc/" + pid):
                    time.sleep(0.1)
                self.check(name + "/processes_gone", not os.path.exists("/proc/" + pid),
                           "the container's process %s is still there" % pid)

    def sysctls(self):
        want = {"kernel.shm_rmid_forced": "1", "fs.mqueue.msg_max": "100"}
        pod, sconf = self.pod("sysctl", sysctls=want)
        c = pod and self.start("sysctl", pod, sconf)
        if c:
            for k, v in want.items():
                _, out = self.sh(c, "cat /proc/sys/" + k.replace(".", "/"))
                self.check("sysctl/" + k, out.strip() == v, "read %r, want %r" % (out.strip(), v))
        self.end(pod)

    def sandbox_pause(self):
        """Task Pause/Resume on the pod's sandbox (ctr task pause POD): the
        pod's processes frozen (their cgroup says so) and thawed, the
        sandbox's status PAUSED then RUNNING."""
        pod, sconf = self.pod("pause")
        c = pod and self.start("pause", pod, sconf)
        if c:
            pid = "" if self.a.handler == "kin-vm" else self.task_column(c, 1)
            cg = next((l.split(":", 2)[2] for l in open("/proc/%s/cgroup" % pid) if l.startswith("0::")), "?") \
                if pid.isdigit() else "?"
            cg2 = next((l.split()[4] for l in open("/proc/self/mountinfo") if " - cgroup2 " in l), "/sys/fs/cgroup")
            events = "%s%s/cgroup.events" % (cg2, cg.strip())

            def frozen():
                return next((l.split()[1] for l in open(events) if l.startswith("frozen ")), "?") \
                    if os.path.exists(events) else "no " + events

            def status():
                return self.task_column(pod, 2)
            vm = self.a.handler == "kin-vm"  # its pids are the guest's: the VM is asked instead
            if vm:
                def frozen():  # a paused guest answers no exec
                    try:
                        self.call("ExecSync", self.pb.ExecSyncRequest(container_id=c, cmd=["/bin/true"],
                                                                      timeout=3), timeout=6)
                        return "0"
                    except self.grpc.RpcError:
                        return "1"
            r = self.ctr("pause", pod)
            self.check("pause/paused", r.returncode == 0 and frozen() == "1" and status() == "PAUSED",
                       "rc %d %s: frozen %s, status %s" % (r.returncode, r.stderr.strip()[-200:], frozen(),
                                                           status()))
            r = self.ctr("resume", pod)
            rc, out = self.sh(c, "echo thawed")
            self.check("pause/resumed", r.returncode == 0 and (vm or frozen() == "0") and status() == "RUNNING"
                       and out.strip() == "thawed",
                       "rc %d %s: frozen %s, status %s, exec %r" % (r.returncode, r.stderr.strip()[-200:],
                                                                   frozen(), status(), out))
        self.end(pod)

    def setuid(self):
        """A setuid-root program (the image's /bin/euid) run as uid 1000 has
        effective uid 0: allowPrivilegeEscalation's default, as critest's
        "should allow privilege escalation when false" checks."""
        pod, sconf = self.pod("setuid")
        c = pod and self.start("setuid", pod, sconf, user=1000)
        if c:
            rc, out = self.sh(c, "id -u; /bin/euid")
            self.check("setuid/effective_uid_0", rc == 0 and out.split() == ["1000", "0"],
                       "exit %d: %r (uid, then euid)" % (rc, out[-200:]))
        self.end(pod)

    def sandbox_stats(self):
        """Task Stats of the pod's sandbox (ctr task metrics POD): the zone's
        cell, or a kin-vm pod's VMM's — CPU time used, never refused."""
        pod, sconf = self.pod("stats")
        c = pod and self.start("stats", pod, sconf, cmd=["/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do "
                                                                         "i=$((i+1)); done; sleep 100000"])
        if c:
            time.sleep(1)
            r = self.ctr("metrics", pod)
            cpu = [l.split() for l in r.stdout.splitlines() if "usage_usec" in l]
            self.check("stats/sandbox_metrics", r.returncode == 0 and cpu and int(cpu[0][-1]) > 0,
                       "rc %d: %s %s" % (r.returncode, r.stdout[-300:], r.stderr.strip()[-200:]))
        self.end(pod)

    def propagation(self, mode):
        pb = self.pb
        kind = {"rprivate": pb.PROPAGATION_PRIVATE, "rslave": pb.PROPAGATION_HOST_TO_CONTAINER,
                "rshared": pb.PROPAGATION_BIDIRECTIONAL}[mode]
        name = "prop-" + mode
        base = tempfile.mkdtemp(prefix="kinprop")
        src, flag = os.path.join(base, "mnt"), os.path.join(base, "srcdir")
        point = os.path.join(src, "propagationMnt")
        os.makedirs(point)
        os.makedirs(flag)
        open(os.path.join(flag, "flagFile"), "w").close()
        mount(src, src, MS_BIND | MS_REC)
        mount(None, src, (MS_PRIVATE if mode == "rprivate" else MS_SHARED) | MS_REC)
        pod, sconf = self.pod(name, privileged=True)
        try:
            if self.a.handler == "kin-vm" and mode == "rshared":  # refused, named
                conf = pb.ContainerConfig(
                    metadata=pb.ContainerMetadata(name=name), image=pb.ImageSpec(image=self.a.image),
                    command=["/bin/sleep", "100000"], log_path=name + ".log",
                    mounts=[pb.Mount(host_path=src, container_path=src, propagation=kind)])
                r = self.try_call(name + "/create", "CreateContainer",
                                  pb.CreateContainerRequest(pod_sandbox_id=pod, config=conf,
                                                            sandbox_config=sconf))
                if r:  # the shim's Create comes with CRI's Start
                    self.refused(name + "/refused_in_a_vm", "StartContainer",
                                 pb.StartContainerRequest(container_id=r.container_id),
                                 "cannot propagate mounts back to the host")
                return
            c = pod and self.start(name, pod, sconf, privileged=True,
                                   mounts=[pb.Mount(host_path=src, container_path=src, propagation=kind)])
            if not c:
                return
            mount(flag, point, MS_BIND | MS_REC)  # on the host, after the start
            _, out = self.sh(c, "ls -A " + point)
            to_ctr = mode != "rprivate"
            self.check(name + "/host_to_container" + ("" if to_ctr else "_not"),
                       bool(out.strip()) == to_ctr, "the container's %s: %r" % (point, out))
            inner = os.path.join(src, "containerMntPoint")
            rc, out = self.sh(c, "mkdir -p %s && mount --bind /etc %s" % (inner, inner))
            self.check(name + "/mount_in_container", rc == 0, "exit %d: %s" % (rc, out[-200:]))
            back = bool(os.listdir(inner)) if os.path.isdir(inner) else False
            if os.environ.get("CRI_PAUSE"):
                time.sleep(float(os.environ["CRI_PAUSE"]))
            to_host = mode == "rshared"
            self.check(name + "/container_to_host" + ("" if to_host else "_not"), back == to_host,
                       "the host's %s is %sempty" % (inner, "not " if back else ""))
        finally:
            self.end(pod)
            for m in (os.path.join(src, "containerMntPoint"), point, src):
                umount(m)
            shutil.rmtree(base, ignore_errors=True)

    def run(self):
        specs = {"privileged": self.privileged, "privileged_seccomp": self.privileged_seccomp,
                 "host_ipc": self.host_ipc, "sandbox_pause": self.sandbox_pause,
                 "sandbox_stats": self.sandbox_stats, "setuid": self.setuid, "host_pid": self.host_pid, "sysctls": self.sysctls,
                 "propagation_rprivate": lambda: self.propagation("rprivate"),
                 "propagation_rslave": lambda: self.propagation("rslave"),
                 "propagation_rshared": lambda: self.propagation("rshared")}
        for name, fn in specs.items():
            if self.a.only and name not in self.a.only.split(","):
                continue
            try:
                fn()
            except Exception as e:  # a broken spec is a failure, named; the next one runs
                self.check(name + "/flow", False, "%s: %s" % (type(e).__name__, e))


def main():
    p = argparse.ArgumentParser()
    for a in ("socket", "gendir", "handler", "image", "logdir"):
        p.add_argument(a)
    p.add_argument("--only", default="")
    a = p.parse_args()
    a.host_network, a.oom = False, "no"
    f = Conform(a)
    f.run()
    sys.exit(1 if f.failed else 0)


if __name__ == "__main__":
    main()
