#!/usr/bin/env python3
"""Health/Check calls on one connection to a kin (ttrpc frames by hand),
for the suites that show a connection going along a re-exec.

  health_conn.py SOCKET STOPFILE loop   call every 5 ms until STOPFILE
                                        exists; "ok N calls on one
                                        connection", or why not (exit 1)
  health_conn.py SOCKET GOFILE twice    one call, wait for GOFILE, one
                                        more: "ok" or "denied" each
"""
import os, socket, struct, sys, time

sock, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
calls, sid = 0, 1


def recvn(n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            print('connection closed after %d calls' % calls)
            sys.exit(1)
        b += c
    return b


def call():
    """'ok' or 'denied' (a status with a code), after checking the frame."""
    global calls, sid
    req = b'\x0a\x0dkin.v1.Health\x12\x05Check\x1a\x00'
    s.sendall(struct.pack('>IIBB', len(req), sid, 1, 0) + req)
    n, rsid, typ, _ = struct.unpack('>IIBB', recvn(10))
    body = recvn(n)
    if rsid != sid or typ != 2:
        print('call %d: stream %d type %d %r' % (sid, rsid, typ, body[:80]))
        sys.exit(1)
    calls += 1
    sid += 2
    # Response: field 1 (status) absent, or without a code, is OK.
    return 'denied' if body[:1] == b'\x0a' and body[2:3] == b'\x08' else 'ok'


if mode == 'loop':
    while not os.path.exists(path):
        r = call()
        if r != 'ok':
            print('call %d: %s' % (calls, r))
            sys.exit(1)
        time.sleep(0.005)
    print('ok %d calls on one connection' % calls)
else:
    print(call(), flush=True)
    while not os.path.exists(path):
        time.sleep(0.01)
    print(call(), flush=True)
