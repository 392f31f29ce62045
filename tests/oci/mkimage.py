#!/usr/bin/env python3
"""Builds OCI images by hand for kin's tests: each layer a tar of a
directory (a file named .wh.X in it is an OCI whiteout, .wh..wh..opq an
opaque marker) or a ready .tar (a crafted one), compressed, hashed, and
written as one of skopeo's transports. Nothing comes from a registry.

  mkimage.py --format oci|oci-archive|docker-archive --out PATH --tag TAG
             [--comp gzip|zstd|none] [--config JSON] [--multiarch]
             [--bad-digest N] LAYERDIR...
"""
import argparse, gzip, hashlib, io, json, os, subprocess, sys, tarfile

def layer_tar(d):
    if d.endswith(".tar"):  # a layer made elsewhere (a crafted one), as it is
        with open(d, "rb") as f:
            return f.read()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for root, dirs, files in os.walk(d):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                p = os.path.join(root, name)
                t.add(p, arcname=os.path.relpath(p, d), recursive=False)
    return buf.getvalue()

def compress(data, comp):
    if comp == "gzip":
        return gzip.compress(data, mtime=0)
    if comp == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                              check=True).stdout
    return data

MT_LAYER = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
            "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
            "none": "application/vnd.oci.image.layer.v1.tar"}

def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", required=True, choices=["oci", "oci-archive", "docker-archive"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--comp", default="gzip", choices=["gzip", "zstd", "none"])
    ap.add_argument("--config", default="{}", help="the config's \"config\" object (JSON)")
    ap.add_argument("--multiarch", action="store_true")
    ap.add_argument("--bad-digest", type=int, default=-1,
                    help="store other bytes (the same tar, gzipped anew) for layer N: "
                         "a digest mismatch")
    ap.add_argument("layers", nargs="+")
    a = ap.parse_args()

    tars = [layer_tar(d) for d in a.layers]
    blobs = {}
    if a.format == "docker-archive":
        config = {"architecture": "amd64", "os": "linux", "created": "2026-01-02T03:04:05Z",
                  "config": json.loads(a.config),
                  "rootfs": {"type": "layers", "diff_ids": [sha(t) for t in tars]}}
        cfg = json.dumps(config).encode()
        files = {sha(cfg)[7:] + ".json": cfg}
        paths = []
        for i, t in enumerate(tars):
            if i == a.bad_digest:
                t = t[:-1024] + b"X" + t[-1023:]
            p = "%064x/layer.tar" % (i + 1)
            files[p] = t
            paths.append(p)
        files["manifest.json"] = json.dumps([{"Config": sha(cfg)[7:] + ".json",
                                              "RepoTags": [a.tag], "Layers": paths}]).encode()
        write_tar(a.out, files)
        return
    layers = []
    for i, t in enumerate(tars):
        z = compress(t, a.comp)
        d = sha(z)
        if i == a.bad_digest:
            # Valid gzip of the same tar, other bytes: only the digest tells.
            z = gzip.compress(t, mtime=1)
        blobs[d] = z
        layers.append({"mediaType": MT_LAYER[a.comp], "digest": d, "size": len(z)})
    config = {"architecture": "amd64", "os": "linux", "created": "2026-01-02T03:04:05Z",
              "config": json.loads(a.config),
              "rootfs": {"type": "layers", "diff_ids": [sha(t) for t in tars]}}
    cfg = json.dumps(config).encode()
    blobs[sha(cfg)] = cfg
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": sha(cfg), "size": len(cfg)},
                "layers": layers}
    m = json.dumps(manifest).encode()
    blobs[sha(m)] = m
    top = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(m),
           "size": len(m), "annotations": {"org.opencontainers.image.ref.name": a.tag}}
    if a.multiarch:
        other = json.dumps({"schemaVersion": 2, "config": {}, "layers": []}).encode()
        blobs[sha(other)] = other
        idx = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
               "manifests": [
                   {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": sha(other), "size": len(other),
                    "platform": {"architecture": "arm64", "os": "linux"}},
                   {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": sha(m), "size": len(m),
                    "platform": {"architecture": "amd64", "os": "linux"}}]}
        ib = json.dumps(idx).encode()
        blobs[sha(ib)] = ib
        top = {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": sha(ib),
               "size": len(ib), "annotations": {"org.opencontainers.image.ref.name": a.tag}}
    index = {"schemaVersion": 2, "manifests": [top]}
    files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
             "index.json": json.dumps(index).encode()}
    for d, b in blobs.items():
        files["blobs/sha256/" + d[7:]] = b
    if a.format == "oci":
        for p, b in files.items():
            full = os.path.join(a.out, p)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(b)
    else:
        write_tar(a.out, files)

def write_tar(path, files):
    with tarfile.open(path, "w") as t:
        for p, b in sorted(files.items()):
            ti = tarfile.TarInfo(p)
            ti.size = len(b)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(b))

main()
