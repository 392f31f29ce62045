# cells: cgroup v2 cells and executables. Static archives from libseccomp-dev
# and libcap-dev. (Its test programs: tests/tests.mk.)
LIBS += -lseccomp -lcap
