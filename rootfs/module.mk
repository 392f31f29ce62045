# rootfs: libblkid resolves root=LABEL=/UUID= (Debian ships libblkid.a).
LIBS += -lblkid
