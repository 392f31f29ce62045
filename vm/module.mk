# vm: microVMs. The QMP monitor (vm/qmp.c) parses with jansson (libjansson-dev).
LIBS += -ljansson
