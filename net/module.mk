# net: netlink through libnl-route (static archives from libnl-3-dev and
# libnl-route-3-dev). Order matters for static linking: route before core.
LIBS += -lnl-route-3 -lnl-3
CFLAGS += -I/usr/include/libnl3
