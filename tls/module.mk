# tls: OpenSSL 3 from Debian's libssl-dev (static libssl.a/libcrypto.a in
# build/kin). Only the gateway role and kin ctl's relay child run it.
LIBS += -lssl -lcrypto
