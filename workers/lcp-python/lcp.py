"""lcp: the lock-client protocol (LCP/1, docs/protocol.md) for Python workers.

A worker supplies a Backend (init, acquire, release, extend); serve() does the rest: JSON lines on stdin and
stdout, the protocol threads run concurrently, one lock around stdout, and exit 0 on shutdown or when stdin
closes. The threads run as the library's own applications run them:
- a Backend with plain methods (a sync library): one OS thread per protocol thread, so libraries that keep
  their token in threading.local, as redis-py's Lock does, see one owner per protocol thread;
- a Backend whose methods are coroutines (async def, an asyncio library): one event loop for the whole
  worker and one task on it per protocol thread, as an application's tasks share one loop and one client.
Each protocol thread's requests run in order. It depends on nothing outside the standard library, so it runs
on every Python 3 and every version of the library under test.
"""

import asyncio
import inspect
import json
import os
import queue
import sys
import threading
import traceback

# Protocol error codes (docs/protocol.md, "Errors").
TIMEOUT = 0
NOT_SUPPORTED = 10
UNAVAILABLE = 11
MALFORMED = 12
CRASH = 13
INTERRUPTED = 14
NOT_HELD = 40


class Error(Exception):
    """A reply of type error with this code; anything else a backend raises is mapped by its classify."""

    def __init__(self, code, text):
        Exception.__init__(self, text)
        self.code = code
        self.text = text


class Backend(object):
    """What a worker implements. Each method runs on the OS thread of its protocol thread; or, when the
    methods are coroutines (async def: init, acquire, release, extend, and close if it likes), as a task of
    its protocol thread on the worker's one event loop."""

    library = ""
    kinds = ()
    caps = ()
    # The unit of the library's leases in ms (1000 when it takes whole seconds), 0 for any: announced in
    # init_ok, so that lockcheck sends only multiples of it (docs/protocol.md, "Leases").
    lease_granularity_ms = 0

    def init(self, msg):
        """Connects as msg says; returns (version, runtime). Raise Error to refuse."""
        raise NotImplementedError

    def acquire(self, thread, keys, wait_ms, lease_ms):
        """Returns a dict of reply fields: granted, and token / valid_ms when the library says."""
        raise NotImplementedError

    def release(self, thread, keys):
        raise NotImplementedError

    def extend(self, thread, keys, lease_ms):
        """Returns True when the library says it extended."""
        raise NotImplementedError

    # Optional, answered only when the Backend defines them and lists cap reads (docs/protocol.md, "Caps"):
    #   held(thread, keys) -> True when the calling protocol thread holds the lock;
    #   is_locked(thread, keys) -> True when anyone holds it;
    # and, with cap force-unlock, force_unlock(thread, keys) -> True when it deleted someone's hold.

    def classify(self, exc):
        """Maps a library exception onto (code, text). The default, crash, is the indefinite one."""
        return CRASH, "%s: %s" % (type(exc).__name__, exc)

    def select(self, msg):
        """The Backend that serves this run, chosen from init's msg (library_options): self by default. A
        worker offering a sync and an asyncio flavour of its library returns the other one here."""
        return self

    def close(self):
        pass


def log(*args):
    sys.stderr.write(" ".join(str(a) for a in args) + "\n")
    sys.stderr.flush()


class _Server(object):
    def __init__(self, backend, out):
        self.backend = backend
        self.out = out
        self.out_lock = threading.Lock()
        self.threads = {}  # protocol thread -> its queue (a queue.Queue, or an asyncio.Queue in asyncio mode)
        self.loop = None  # the event loop, for a Backend of coroutines
        self.tasks = []
        self.ready = False

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.out_lock:
            self.out.write(line)
            self.out.flush()

    def error(self, msg_id, code, text):
        self.send({"type": "error", "in_reply_to": msg_id, "code": code, "text": str(text)[:2000]})

    def handle_init(self, msg):
        b = self.backend
        mid = msg.get("msg_id")
        try:
            b = self.backend = b.select(msg)
            if inspect.iscoroutinefunction(b.acquire):
                # One event loop, on a thread of its own: the main thread keeps reading stdin.
                self.loop = asyncio.new_event_loop()
                th = threading.Thread(target=self.loop.run_forever, name="lcp-asyncio")
                th.daemon = True
                th.start()
            version, runtime = self.wait(b.init(msg))
        except Error as e:
            self.error(mid, e.code, e.text)
            return False
        except Exception as e:  # the library failed to start: say so in one line, and exit
            log(traceback.format_exc())
            code, text = b.classify(e)
            self.error(mid, code, "init: " + text)
            return False
        ok = {"type": "init_ok", "in_reply_to": mid, "library": b.library, "version": version,
              "runtime": runtime, "kinds": list(b.kinds), "caps": list(b.caps)}
        if b.lease_granularity_ms:
            ok["lease_granularity_ms"] = int(b.lease_granularity_ms)
        self.send(ok)
        self.ready = True
        return True

    def wait(self, result):
        """init's result, awaited on the event loop when it is a coroutine (init is called from the main
        thread, which reads stdin)."""
        if inspect.isawaitable(result):
            return asyncio.run_coroutine_threadsafe(_awaited(result), self.loop).result()
        return result

    def call(self, msg):
        """Checks a request and calls the backend; returns (the backend's result, possibly a coroutine, and
        the function that makes the reply's fields of what it returns)."""
        b = self.backend
        t = msg["type"]
        keys = msg.get("keys")
        if not isinstance(keys, list) or len(keys) != 1 or not isinstance(keys[0], str):
            raise Error(NOT_SUPPORTED if isinstance(keys, list) and len(keys) > 1 else MALFORMED,
                        "%s needs keys: one lock name (got %r)" % (t, keys))
        if t == "acquire":
            if msg.get("mode") is not None:
                raise Error(NOT_SUPPORTED, "mode %r: this worker drives mutexes only" % msg.get("mode"))
            return b.acquire(msg["thread"], keys, _ms(msg, "wait_ms"), _ms(msg, "lease_ms")), dict
        if t == "release":
            return b.release(msg["thread"], keys), lambda _: {}
        if t == "held":
            return b.held(msg["thread"], keys), lambda r: {"held": bool(r)}
        if t == "is_locked":
            return b.is_locked(msg["thread"], keys), lambda r: {"locked": bool(r)}
        if t == "force_unlock":
            return b.force_unlock(msg["thread"], keys), lambda r: {"released": bool(r)}
        return b.extend(msg["thread"], keys, _ms(msg, "lease_ms")), lambda r: {"extended": bool(r)}

    def answer(self, msg, reply=None, exc=None):
        mid = msg["msg_id"]
        if isinstance(exc, Error):
            self.error(mid, exc.code, exc.text)
        elif exc is not None:
            code, text = self.backend.classify(exc)
            if code == CRASH:
                log("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            self.error(mid, code, text)
        else:
            reply["type"] = msg["type"] + "_ok"
            reply["in_reply_to"] = mid
            self.send(reply)

    def run_request(self, msg):
        try:
            result, shape = self.call(msg)
            reply = shape(result)
        except Exception as e:
            self.answer(msg, exc=e)
            return
        self.answer(msg, reply)

    async def run_request_async(self, msg):
        try:
            result, shape = self.call(msg)
            reply = shape(await _awaited(result))
        except Exception as e:
            self.answer(msg, exc=e)
            return
        self.answer(msg, reply)

    def dispatch(self, msg):
        thread = msg.get("thread")
        if not isinstance(thread, int) or isinstance(thread, bool) or thread <= 0:
            self.error(msg["msg_id"], MALFORMED, "%s needs thread: a positive integer" % msg["type"])
            return
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.dispatch_async, thread, msg)
            return
        q = self.threads.get(thread)
        if q is None:
            q = queue.Queue()
            self.threads[thread] = q
            th = threading.Thread(target=self.thread_loop, args=(q,), name="lcp-thread-%d" % thread)
            th.daemon = True  # shutdown does not wait for a call blocked in the library
            th.start()
        q.put(msg)

    def thread_loop(self, q):
        while True:
            self.run_request(q.get())

    def dispatch_async(self, thread, msg):
        """On the event loop: the protocol thread's task, made at its first request, takes msg."""
        q = self.threads.get(thread)
        if q is None:
            q = self.threads[thread] = asyncio.Queue()
            self.tasks.append(self.loop.create_task(self.task_loop(q)))  # kept: the loop holds tasks weakly
        q.put_nowait(msg)

    async def task_loop(self, q):
        while True:
            await self.run_request_async(await q.get())

    def serve(self, stdin):
        for raw in stdin:
            raw = raw.strip()
            if not raw:
                continue
            try:
                msg = json.loads(raw)
            except ValueError as e:
                log("lcp: not JSON, ignored:", raw[:200], e)
                continue
            if not isinstance(msg, dict):
                log("lcp: not a JSON object, ignored:", raw[:200])
                continue
            mid = msg.get("msg_id")
            t = msg.get("type")
            if not isinstance(mid, int) or isinstance(mid, bool):
                log("lcp: request without an integer msg_id, ignored:", raw[:200])
                continue
            if not isinstance(t, str):
                self.error(mid, MALFORMED, "a request needs a type (a string)")
            elif t == "init":
                if self.ready:
                    self.error(mid, MALFORMED, "init: already initialised")
                    continue
                if not self.handle_init(msg):
                    return 1
            elif not self.ready:
                self.error(mid, MALFORMED, "%s before init" % t)
            elif t == "shutdown":
                self.send({"type": "shutdown_ok", "in_reply_to": mid})
                return 0
            elif t in ("acquire", "release", "extend", "held", "is_locked", "force_unlock"):
                if not _offers(self.backend, t):
                    self.error(mid, NOT_SUPPORTED, "%s: not supported by this worker" % t)
                    continue
                self.dispatch(msg)
            else:
                self.error(mid, NOT_SUPPORTED, "%s: not supported by this worker (family mutex)" % t)
        return 0


# The cap an optional request needs, and whether a Backend defines its method (the reads are not on Backend).
_OPTIONAL = {"extend": "extend", "held": "reads", "is_locked": "reads", "force_unlock": "force-unlock"}


def _offers(backend, t):
    cap = _OPTIONAL.get(t)
    return cap is None or (cap in backend.caps and callable(getattr(backend, t, None)))


def _ms(msg, field):
    v = msg.get(field, 0)
    if v is None:
        return 0
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise Error(MALFORMED, "%s must be a non-negative integer (got %r)" % (field, v))
    return v


async def _awaited(result):
    # run_coroutine_threadsafe takes coroutines only; a backend may return any awaitable (or, for close, none).
    if inspect.isawaitable(result):
        return await result
    return result


def serve(backend):
    """Serves LCP/1 on stdin/stdout until shutdown or end of input, then exits the process."""
    # The protocol owns stdout: keep a private handle on it and point fd 1 and sys.stdout at stderr,
    # so a stray print or a library's warning cannot corrupt the stream.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stdin = os.fdopen(sys.stdin.fileno(), "r", encoding="utf-8", errors="replace")
    srv = _Server(backend, out)
    rc = srv.serve(stdin)
    try:
        if srv.loop is not None:
            # An async close gets 2 s: a task may be blocked on a frozen node.
            asyncio.run_coroutine_threadsafe(_awaited(srv.backend.close()), srv.loop).result(2)
        else:
            srv.backend.close()
    except Exception as e:
        log("lcp: close:", e)
    out.flush()
    sys.stderr.flush()
    # Threads may be blocked inside the library (a paused or partitioned node): do not wait for them.
    os._exit(rc)
