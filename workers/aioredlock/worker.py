"""The lockcheck worker for aioredlock (the asyncio Redlock), speaking LCP/1 (docs/protocol.md).

One Aioredlock manager per worker over the masters (all of topology.nodes on `redlock`, nodes[0] on `single`),
shared by every protocol thread, each a task on lcp.py's one event loop, as an asyncio application shares its
manager between tasks. The Lock object of each grant is kept per (thread, key).
"""

import asyncio
import platform
import sys
import time
import uuid

import lcp

import aioredlock
from aioredlock import Aioredlock

try:
    from importlib.metadata import version as _dist_version
except ImportError:  # pragma: no cover - Python < 3.8
    _dist_version = None

LockError = aioredlock.LockError
_errors = sys.modules["aioredlock.errors"]
# LockAcquiringError: a master answered the script's ERROR (another id holds the key); LockRuntimeError: a
# master's Redis or socket error. Versions before 0.6 have LockError alone.
LockAcquiringError = getattr(_errors, "LockAcquiringError", None)
LockRuntimeError = getattr(_errors, "LockRuntimeError", None)


def _version(dist):
    if _dist_version is not None:
        try:
            return _dist_version(dist)
        except Exception:
            pass
    return "unknown"


def _definite(exc):
    """True when aioredlock's LockError says only that other ids hold the key (no master failed)."""
    return LockAcquiringError is not None and type(exc) is LockAcquiringError


class Bounded(Exception):
    """A library call that outlived the worker's bound (aioredis 1.x has no command timeout)."""


class AioRedlock(lcp.Backend):
    library = "aioredlock"
    kinds = ("aioredlock", "mutex")
    caps = ("extend", "reads")

    def __init__(self):
        self.mgr = None
        self.locks = {}  # (thread, key) -> the Lock of that owner's last grant
        self.default_lease_ms = 30000
        self.auto_extend = False
        self.timeout = 3.0

    async def init(self, msg):
        topo = msg.get("topology") or {}
        lock = msg.get("lock") or {}
        opts = msg.get("options") or {}
        lib = dict(msg.get("library_options") or {})
        if lock.get("family", "mutex") != "mutex" or lock.get("kind", "mutex") not in self.kinds:
            raise lcp.Error(lcp.NOT_SUPPORTED, "lock %s/%s: aioredlock's lock is a mutex (kinds: %s)" % (
                lock.get("family"), lock.get("kind"), ", ".join(self.kinds)))
        auto = lib.pop("auto_extend", "false")
        if auto not in ("true", "false"):
            raise lcp.Error(lcp.MALFORMED, "library option auto_extend=%r: true or false" % auto)
        self.auto_extend = auto == "true"
        kw = {}
        for name, conv in (("retry_count", int), ("retry_delay_min", float), ("retry_delay_max", float)):
            if name in lib:
                kw[name] = conv(lib.pop(name))
        if lib:
            raise lcp.Error(lcp.NOT_SUPPORTED, "library options %s: the aioredlock worker takes auto_extend, "
                            "retry_count, retry_delay_min, retry_delay_max" % ", ".join(sorted(lib)))
        if self.auto_extend:
            # lock() without lock_timeout: the manager's watchdog task re-sets internal_lock_timeout every 0.6 of
            # it. watchdog_ms is that timeout (protocol.md, Options), at the library's own ratio.
            self.caps = self.caps + ("watchdog",)
            kw["internal_lock_timeout"] = (opts.get("watchdog_ms") or 30000) / 1000.0
            self.default_lease_ms = int(opts.get("watchdog_ms") or 30000)
        else:
            self.default_lease_ms = int(opts.get("lease_ms") or opts.get("watchdog_ms") or 30000)
        self.timeout = (opts.get("timeout_ms") or 3000) / 1000.0
        nodes = topo.get("nodes") or []
        kind = topo.get("kind", "single")
        if kind == "single":
            nodes = nodes[:1]
        elif kind != "redlock":
            # aioredlock's Sentinel support dials what the Sentinels announce, with no address mapping for nat.
            raise lcp.Error(lcp.NOT_SUPPORTED, "topology %r: the aioredlock worker runs on single or redlock" % kind)
        if not nodes:
            raise lcp.Error(lcp.MALFORMED, "init: topology %s has no nodes" % kind)
        conns = []
        for n in nodes:
            host, _, port = n["addr"].rpartition(":")
            # timeout is aioredis's connect timeout; it has no command timeout (the worker bounds each call).
            conns.append({"host": host, "port": int(port), "password": msg.get("password") or None,
                          "timeout": self.timeout})
        self.mgr = Aioredlock(conns, **kw)
        # Connect and warm up here, not in the first acquire: is_locked opens every master's pool (and a wrong
        # password fails the start).
        await self._bounded(self.mgr.is_locked("lockcheck-warm-up"), self.timeout * 2)
        return _version("aioredlock"), "python %s, aioredis %s, asyncio" % (platform.python_version(), _version("aioredis"))

    async def _bounded(self, coro, seconds):
        try:
            return await asyncio.wait_for(coro, seconds)
        except asyncio.TimeoutError:
            raise Bounded("no answer within %.1fs (aioredis 1.x has no command timeout: the worker bounds "
                          "each call)" % seconds)

    async def acquire(self, thread, keys, wait_ms, lease_ms):
        # lock() is retry_count attempts (default 3, 0.1-0.3 s apart) over the masters in parallel, granted when
        # a majority set it and the validity (lease - elapsed - drift) is positive; it raises LockError else. It
        # has no wait: a wait is lock() called again until wait_ms is spent, as an application polls.
        lease_s = (lease_ms or self.default_lease_ms) / 1000.0
        deadline = time.monotonic() + wait_ms / 1000.0
        unsure = None
        while True:
            try:
                if self.auto_extend:
                    lk = await self._bounded(self.mgr.lock(keys[0]), wait_ms / 1000.0 + 2 * self.timeout)
                else:
                    lk = await self._bounded(self.mgr.lock(keys[0], lock_timeout=lease_s),
                                             wait_ms / 1000.0 + 2 * self.timeout)
                self.locks[(thread, keys[0])] = lk
                return {"granted": True}
            except LockError as e:
                if not _definite(e):
                    unsure = e  # a master failed: its SET may have landed (the library cleans up in background)
            if time.monotonic() >= deadline:
                if unsure is not None:
                    raise unsure
                return {"granted": False}

    def _held(self, thread, key):
        lk = self.locks.get((thread, key))
        if lk is None:
            # An owner that never acquired this key: a Lock with a fresh id and valid=False (what Lock() is
            # before lock() returns it), so extend() refuses it and no master holds its id.
            lk = aioredlock.Lock(self.mgr, key, str(uuid.uuid4()), self.default_lease_ms / 1000.0, valid=False)
        return lk

    async def release(self, thread, keys):
        # unlock() marks the Lock invalid, stops its watchdog, and deletes the key on the masters holding this
        # id; a master where the key is gone answers OK (so a release after the lease ran out answers ok).
        await self._bounded(self.mgr.unlock(self._held(thread, keys[0])), 2 * self.timeout)

    async def extend(self, thread, keys, lease_ms):
        # extend() re-runs the acquire script with this id (it sets the key when it is free or this id's), and on
        # failure unlocks the Lock and raises.
        lk = self._held(thread, keys[0])
        await self._bounded(self.mgr.extend(lk, lock_timeout=(lease_ms or self.default_lease_ms) / 1000.0),
                            2 * self.timeout)
        return True

    async def held(self, thread, keys):
        # The Lock's own validity flag, as the library's docs offer it: true from the grant until unlock or a
        # failed extend.
        return bool(self._held(thread, keys[0]).valid)

    async def is_locked(self, thread, keys):
        return await self._bounded(self.mgr.is_locked(keys[0]), 2 * self.timeout)

    def classify(self, exc):
        text = "%s: %s" % (type(exc).__name__, exc)
        if isinstance(exc, LockError) and _definite(exc):
            return lcp.NOT_HELD, text  # other ids hold the key on a majority: this owner does not
        if isinstance(exc, RuntimeError) and "not valid" in str(exc):
            return lcp.NOT_HELD, text  # extend of a Lock the library already released: refused before sending
        if isinstance(exc, Bounded):
            return lcp.TIMEOUT, text
        return lcp.CRASH, text

    async def close(self):
        if self.mgr is not None:
            # destroy() would unlock every held lock: closing the connections leaves Redis as the run left it.
            await self.mgr.redis.clear_connections()


if __name__ == "__main__":
    sys.exit(lcp.serve(AioRedlock()))
