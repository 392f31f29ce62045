#!/usr/bin/env python3
"""The client side of tests/ns/tty.test.sh: kin ctl run on a real pty (the
driver holds the master, as a terminal emulator would), keys typed into it,
its screen read back. Prints "ok NAME" or "bad NAME WHY" per check; the
suite counts them.

  tty_client.py interactive ROWS COLS PROMPT -- KINCTL...   typed input echoed,
      stty size, a resize, Ctrl-C to the foreground job, exit 3 as kin ctl's
      exit code, the terminal's modes restored
  tty_client.py detach PROMPT -- KINCTL...    types `echo before`, detaches with ^]
  tty_client.py expect TEXT -- KINCTL...      attaches, waits for TEXT, detaches
  tty_client.py sigterm PROMPT -- KINCTL...   SIGTERM to kin ctl: 143, modes restored
  tty_client.py pair PROMPT -- KINCTL...     two clients attached: each sees the other's input
  tty_client.py run PROMPT COMMAND TEXT -- KINCTL...  COMMAND shows TEXT; exit: 0
  tty_client.py reexec PROMPT COMMAND -- KINCTL...  COMMAND (a re-exec) while attached:
      still attached after it, typing works
"""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time


class Client:
    def __init__(self, argv, rows=24, cols=80):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execvp(argv[0], argv)
            finally:
                os._exit(127)
        self.size(rows, cols)
        self.modes = termios.tcgetattr(self.fd)
        self.screen = b""
        self.status = None

    def size(self, rows, cols):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read_until(self, text, timeout=5.0):
        """True once text is on the screen (after what was seen before)."""
        start = len(self.screen)
        end = time.time() + timeout
        while time.time() < end:
            if text.encode() in self.screen[start:]:
                return True
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if not r:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                break
            self.screen += data
        return text.encode() in self.screen[start:]

    def type(self, keys):
        os.write(self.fd, keys.encode() if isinstance(keys, str) else keys)

    def wait(self, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                self.read_until("\0", 0.3)  # what it said last
                return self.status
            self.read_until("\0", 0.05)  # drain, so kin ctl never blocks on its output
        return None

    def restored(self):
        return termios.tcgetattr(self.fd) == self.modes


def check(name, cond, why=""):
    print(("ok %s" % name) if cond else ("bad %s %s" % (name, why)), flush=True)
    return cond


def tail(c):
    return repr(c.screen[-300:])


def interactive(rows, cols, prompt, argv):
    c = Client(argv, rows, cols)
    check("prompt", c.read_until(prompt, 10), tail(c))
    c.type("echo typed-$((6*7))\r")
    check("typed_input_echoed",
          c.read_until("typed-42", 5) and b"echo typed-$((6*7))" in c.screen, tail(c))
    c.type("stty size\r")
    check("stty_size_as_set", c.read_until("%d %d" % (rows, cols), 5), tail(c))
    c.size(rows + 10, cols + 20)
    os.kill(c.pid, signal.SIGWINCH)
    time.sleep(0.5)
    c.type("stty size\r")
    check("stty_size_after_resize", c.read_until("%d %d" % (rows + 10, cols + 20), 5), tail(c))
    c.type("sleep 30\r")
    time.sleep(0.5)
    c.type("\x03")
    c.type("echo still-$((1+1))\r")
    ok = c.read_until("still-2", 5)  # not after 30 s: the sleep got SIGINT
    check("ctrl_c_reaches_the_job_not_kin_ctl", ok and os.waitpid(c.pid, os.WNOHANG)[0] == 0,
          tail(c))
    c.type("exit 3\r")
    st = c.wait()
    check("exit_status_3", st == 3, "kin ctl ended %r" % st)
    check("modes_restored", c.restored())


def detach(prompt, argv):
    c = Client(argv)
    check("attached", c.read_until(prompt, 10), tail(c))
    c.type("echo before-$((2+3))\r")
    check("before_echoed", c.read_until("before-5", 5), tail(c))
    c.type("\x1d")
    st = c.wait()
    check("detach_exits_0", st == 0, "kin ctl ended %r: %s" % (st, tail(c)))
    check("detach_says_so", b"detached from" in c.screen, tail(c))
    check("detach_modes_restored", c.restored())


def expect(text, argv):
    c = Client(argv)
    check("sees_" + "".join(ch if ch.isalnum() else "_" for ch in text), c.read_until(text, 10),
          tail(c))
    c.type("\x1d")
    check("expect_detached", c.wait() == 0, tail(c))


def reexec(prompt, command, argv):
    c = Client(argv)
    check("reexec_attached", c.read_until(prompt, 10), tail(c))
    rc = os.system(command + " >/dev/null 2>&1")
    check("reexec_done", rc == 0, "%s: %r" % (command, rc))
    c.type("echo after-$((7*7))\r")
    check("attached_across_reexec", c.read_until("after-49", 8) and
          os.waitpid(c.pid, os.WNOHANG)[0] == 0, tail(c))
    c.type("\x1d")
    check("reexec_detached", c.wait() == 0, tail(c))


def run(prompt, command, want, argv):
    c = Client(argv)
    check("run_prompt", c.read_until(prompt, 10), tail(c))
    c.type(command + "\r")
    check("run_" + "".join(ch if ch.isalnum() else "_" for ch in want), c.read_until(want, 5),
          tail(c))
    c.type("exit\r")
    st = c.wait()
    check("run_exit_0", st == 0, "kin ctl ended %r: %s" % (st, tail(c)))


def pair(prompt, argv):
    a, b = Client(argv), Client(argv)
    check("pair_attached", a.read_until(prompt, 10) and b.read_until(prompt, 10), tail(b))
    a.type("echo from-a-$((1+1))\r")
    check("pair_b_sees_a", b.read_until("from-a-2", 5), tail(b))
    b.type("echo from-b-$((2+2))\r")
    check("pair_a_sees_b", a.read_until("from-b-4", 5), tail(a))
    a.type("\x1d")
    b.type("\x1d")
    check("pair_detached", a.wait() == 0 and b.wait() == 0, tail(a) + tail(b))


def sigterm(prompt, argv):
    c = Client(argv)
    check("sigterm_attached", c.read_until(prompt, 10), tail(c))
    raw = termios.tcgetattr(c.fd)
    check("client_raw_while_attached", raw != c.modes and not (raw[3] & termios.ICANON))
    os.kill(c.pid, signal.SIGTERM)
    st = c.wait()
    check("sigterm_exit_143", st == 143, "kin ctl ended %r" % st)
    check("sigterm_modes_restored", c.restored())


def main():
    args = sys.argv[1:]
    dd = args.index("--")
    argv, words = args[dd + 1:], args[:dd]
    if words[0] == "interactive":
        interactive(int(words[1]), int(words[2]), words[3], argv)
    elif words[0] == "detach":
        detach(words[1], argv)
    elif words[0] == "expect":
        expect(words[1], argv)
    elif words[0] == "reexec":
        reexec(words[1], words[2], argv)
    elif words[0] == "run":
        run(words[1], words[2], words[3], argv)
    elif words[0] == "pair":
        pair(words[1], argv)
    elif words[0] == "sigterm":
        sigterm(words[1], argv)
    else:
        sys.exit("unknown scenario " + words[0])


if __name__ == "__main__":
    main()
