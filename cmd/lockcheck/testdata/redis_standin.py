"""A stand-in for redis-py's Redis, for TestProtocolDocPython (the test machine has no redis-py): the two
commands docs/protocol.md's Python example calls, over RESP to a real redis-server, one at a time."""

import socket
import threading


class ResponseError(Exception):
    pass


class Redis(object):
    def __init__(self, host="127.0.0.1", port=6379, password=None):
        self.addr, self.password = (host, port), password
        self.lock = threading.Lock()  # one connection, shared by the worker's threads
        self.f = None

    def set(self, name, value, nx=False, px=None):
        args = ["SET", name, value]
        if px:
            args += ["PX", px]
        if nx:
            args.append("NX")
        return self._call(*args) is not None

    def eval(self, script, numkeys, *args):
        return self._call("EVAL", script, numkeys, *args)

    def _call(self, *args):
        with self.lock:
            if self.f is None:
                self.f = socket.create_connection(self.addr).makefile("rwb")
                if self.password:
                    self._send(("AUTH", self.password))
                    self._read()
            self._send(args)
            return self._read()

    def _send(self, args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.f.write(out)
        self.f.flush()

    def _read(self):
        line = self.f.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise ResponseError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ResponseError("unexpected reply %r" % line)
