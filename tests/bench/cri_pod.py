#!/usr/bin/env python3
"""Benchmark helper of tests/bench/shim.sh: a CRI pod and one container to
Running (RunPodSandbox, CreateContainer, StartContainer, the wall time of
the three) for each runtime handler given, interleaved, RUNS times; prints
"HANDLER MEDIAN_MS". With --hold HANDLER, leaves one such pod running and
prints its sandbox id (for the memory figures), then waits for stdin to
close before removing it.

  cri_pod.py SOCKET GENDIR IMAGE RUNS HANDLER... [--hold HANDLER]"""
import os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cri"))
import cri_flow  # noqa: E402


def main():
    args = sys.argv[1:]
    hold = None
    if "--hold" in args:
        i = args.index("--hold")
        hold = args[i + 1]
        del args[i:i + 2]
    sock, gendir, image, runs, handlers = args[0], args[1], args[2], int(args[3]), args[4:]
    pb, stubs = cri_flow.load(gendir)
    import grpc
    rt = stubs.RuntimeServiceStub(grpc.insecure_channel("unix://" + sock))
    n = [0]

    def pod_up(handler):
        n[0] += 1
        name = "b%d" % n[0]
        sconf = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid="u-" + name, namespace="bench"),
            log_directory="/tmp",  # host network: the host's UTS too (runc refuses a hostname)
            linux=pb.LinuxPodSandboxConfig(security_context=pb.LinuxSandboxSecurityContext(
                namespace_options=pb.NamespaceOption(network=pb.NODE))))
        t0 = time.monotonic()
        pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=sconf, runtime_handler=handler),
                               timeout=60).pod_sandbox_id
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod, sandbox_config=sconf,
            config=pb.ContainerConfig(metadata=pb.ContainerMetadata(name="c"),
                                      image=pb.ImageSpec(image=image),
                                      command=["/bin/sleep", "1000"], log_path="c-%d.log" % n[0])),
            timeout=60).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        return (time.monotonic() - t0) * 1000, pod, cid

    def pod_down(pod, cid):
        rt.StopContainer(pb.StopContainerRequest(container_id=cid, timeout=0), timeout=60)
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=60)
        rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod), timeout=60)
        rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod), timeout=60)

    if hold:
        _, pod, cid = pod_up(hold)
        print(pod, flush=True)
        sys.stdin.read()
        pod_down(pod, cid)
        return
    times = {h: [] for h in handlers}
    for _ in range(runs):
        for h in handlers:
            ms, pod, cid = pod_up(h)
            times[h].append(ms)
            pod_down(pod, cid)
    for h in handlers:
        v = sorted(times[h])
        print("%s %.1f" % (h, v[len(v) // 2]))


if __name__ == "__main__":
    main()
