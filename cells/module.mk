# cells: cgroup v2 cells and executables. Static archives from libseccomp-dev
# and libcap-dev.
LIBS += -lseccomp -lcap
