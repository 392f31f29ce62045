# oci: OCI images and runtime bundles. Static archives from libjansson-dev
# (JSON), zlib1g-dev (gzip layers) and libzstd-dev (zstd layers).
LIBS += -ljansson -lzstd -lz
