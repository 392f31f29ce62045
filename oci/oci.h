/* oci: the OCI formats a pod is made of.
 *
 * Images (image-spec): a content-addressed store of blobs verified against
 * their sha256 digests, manifests, configs and layers unpacked once into
 * read-only directories that every container of the image shares (an
 * overlay of them is a container's root). Import reads skopeo's transports:
 * an OCI layout directory, the same as a tar, and `docker save` output.
 *
 * Layers are hostile input: the tar reader refuses any entry that would
 * write outside its layer's directory and bounds entries, names and sizes.
 *
 * Runtime bundles (runtime-spec): config.json parsed into what kin needs to
 * start an executable, with errors naming the JSON path.
 *
 * oci knows nothing of cells, zones or RPC (rule: oci -> lib): api/ maps an
 * image config or a bundle onto an executable's spec. Store and import do
 * blocking file work: callers run them in a child, never in PID 1's loop. */
#pragma once

#include "lib/lib.h"

/* "sha256:" + 64 hex */
#define OCI_DIGEST_LEN 71

/* ---- layers (layer.c, tar.c, decompress.c) ------------------------------ */

/* ---- the image store (store.c, import.c) -------------------------------- */

/* ---- runtime bundles (spec.c) ------------------------------------------- */
