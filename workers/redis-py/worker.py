"""The lockcheck worker for redis-py's Lock (redis.lock.Lock), speaking LCP/1 (docs/protocol.md).

One Redis client (its connection pool) per worker; one Lock object per (thread, key), made at acquire, so
release and extend use the token the library keeps for that owner. Each protocol thread runs on its own OS
thread (lcp.py), which is what redis-py's default thread_local token storage assumes.

library_options asyncio=true drives redis.asyncio's Lock instead (redis-py 4.2 on): one redis.asyncio client
per worker and each protocol thread a task on one event loop (lcp.py's asyncio mode), as an asyncio
application runs. Its tasks share one OS thread, so thread_local keeps nothing apart: the Lock objects per
(thread, key) do.
"""

import inspect
import platform
import sys

import lcp
import redisconn

import redis
import redis.lock

try:
    from importlib.metadata import version as _dist_version
except ImportError:  # pragma: no cover - Python < 3.8
    _dist_version = None

LockError = redis.exceptions.LockError
# LockNotOwnedError came with redis-py 3.x; before it, a lost lock was a plain LockError.
LockNotOwnedError = getattr(redis.exceptions, "LockNotOwnedError", LockError)

# LockError texts (2.10.6 to 8.x) that say, before or instead of any effect, that this owner does not hold the lock.
_NOT_HELD = ("unlocked lock", "no longer owned", "not owned", "already unlocked")


def _version():
    if _dist_version is not None:
        return _dist_version("redis")
    return redis.__version__


def _lock_class(opts):
    """redis.lock.Lock, the class named in redis-py's docs; library_options lock_class=lua picks the
    LuaLock that redis-py 2.x's r.lock() chose on servers with scripting (3.0 made Lock the Lua one)."""
    name = opts.get("lock_class", "")
    if name in ("", "Lock", "lock"):
        return redis.lock.Lock
    if name.lower() in ("lua", "lualock") and hasattr(redis.lock, "LuaLock"):
        return redis.lock.LuaLock
    raise lcp.Error(lcp.NOT_SUPPORTED, "library option lock_class=%r: this redis-py has %s" % (
        name, ", ".join(n for n in ("Lock", "LuaLock") if hasattr(redis.lock, n))))


class RedisPy(lcp.Backend):
    library = "redis-py"
    kinds = ("redis-py", "mutex")
    caps = ("extend",)

    def __init__(self):
        self.client = None
        self.locks = {}  # (thread, key) -> the Lock object of that owner's last grant
        self.default_lease_ms = 30000
        self.sleep = 0.1
        self.lock_class = redis.lock.Lock
        self.supports_replace_ttl = False
        self.enter = False

    def select(self, msg):
        flavour = (msg.get("library_options") or {}).get("asyncio", "false")
        if flavour not in ("true", "false"):
            raise lcp.Error(lcp.MALFORMED, "library option asyncio=%r: true or false" % flavour)
        if flavour == "false":
            return self
        try:
            import redis.asyncio.lock  # noqa: F401 (redis-py 4.2 on)
        except ImportError:
            raise lcp.Error(lcp.NOT_SUPPORTED, "library option asyncio: redis-py %s has no redis.asyncio "
                            "(4.2.0 on)" % _version())
        return RedisPyAsync()

    def configure(self, msg):
        """The settings both flavours share; returns the client's keyword arguments."""
        lock = msg.get("lock") or {}
        opts = msg.get("options") or {}
        lib = msg.get("library_options") or {}
        if lock.get("family", "mutex") != "mutex" or lock.get("kind", "redis-py") not in self.kinds:
            raise lcp.Error(lcp.NOT_SUPPORTED, "lock %s/%s: redis-py's Lock is a mutex (kinds: %s)" % (
                lock.get("family"), lock.get("kind"), ", ".join(self.kinds)))
        self.sleep = float(lib.get("sleep", "0.1"))
        acquire = lib.get("acquire", "call")
        if acquire not in ("call", "with"):
            raise lcp.Error(lcp.NOT_SUPPORTED, "library option acquire=%r: call (Lock.acquire) or with (the "
                            "context manager's __enter__)" % acquire)
        self.enter = acquire == "with"
        lease = opts.get("lease_ms") or opts.get("watchdog_ms") or 30000
        self.default_lease_ms = int(lease)
        timeout = (opts.get("timeout_ms") or 3000) / 1000.0
        return dict(password=msg.get("password") or None, socket_timeout=timeout, socket_connect_timeout=timeout)

    def init(self, msg):
        kw = self.configure(msg)
        self.lock_class = _lock_class(msg.get("library_options") or {})
        self.client = redisconn.client(msg, kw, redis.StrictRedis, redisconn.sentinel_client)
        self.client.ping()  # a bad address or password fails the start, in one line
        self.supports_replace_ttl = "replace_ttl" in inspect.signature(self.lock_class.extend).parameters
        self.caps = _caps(self.lock_class)
        return _version(), "python %s" % platform.python_version()

    def _new_lock(self, key, lease_ms):
        return self.lock_class(self.client, key, timeout=lease_ms / 1000.0, sleep=self.sleep)

    def acquire(self, thread, keys, wait_ms, lease_ms):
        lease_ms = lease_ms or self.default_lease_ms
        if self.enter:
            return self._enter(thread, keys[0], wait_ms, lease_ms)
        lk = self._new_lock(keys[0], lease_ms)
        # blocking=False is one SET NX PX; otherwise redis-py polls every `sleep` until blocking_timeout.
        if wait_ms > 0:
            granted = lk.acquire(blocking=True, blocking_timeout=wait_ms / 1000.0)
        else:
            granted = lk.acquire(blocking=False)
        if granted:
            self.locks[(thread, keys[0])] = lk
        return {"granted": bool(granted)}

    def _enter(self, thread, key, wait_ms, lease_ms):
        """`with r.lock(key, timeout=lease, blocking_timeout=wait):` as an application writes it: the body
        runs once __enter__ returns. Before 3.0 __enter__ ignored acquire() returning False, so the body ran
        without the lock (issue #621); 3.0 raises LockError instead."""
        lk = self.lock_class(self.client, key, timeout=lease_ms / 1000.0, sleep=self.sleep,
                             blocking_timeout=wait_ms / 1000.0)
        try:
            lk.__enter__()
        except LockError as exc:
            if isinstance(exc, LockNotOwnedError) and LockNotOwnedError is not LockError:
                raise
            return {"granted": False}  # 3.0+: "Unable to acquire lock within the time specified"
        self.locks[(thread, key)] = lk
        return {"granted": True}

    def _held(self, thread, key):
        lk = self.locks.get((thread, key))
        # An owner that never acquired this key gets a fresh Lock, so the library itself says it is not held.
        return lk if lk is not None else self._new_lock(key, self.default_lease_ms)

    def release(self, thread, keys):
        self._held(thread, keys[0]).release()

    def held(self, thread, keys):
        return self._held(thread, keys[0]).owned()

    def is_locked(self, thread, keys):
        return self._held(thread, keys[0]).locked()

    def extend(self, thread, keys, lease_ms):
        lk = self._held(thread, keys[0])
        seconds = (lease_ms or int(lk.timeout * 1000 if lk.timeout else self.default_lease_ms)) / 1000.0
        if self.supports_replace_ttl:
            # The lease restarts at lease_ms, as redsync's and pottery's extends do.
            return lk.extend(seconds, replace_ttl=True)
        # redis-py 2.x has no replace_ttl: its extend adds to the remaining TTL (see README).
        return lk.extend(seconds)

    def classify(self, exc):
        text = "%s: %s" % (type(exc).__name__, exc)
        if isinstance(exc, LockNotOwnedError) and LockNotOwnedError is not LockError:
            return lcp.NOT_HELD, text
        if isinstance(exc, LockError) and any(s in str(exc) for s in _NOT_HELD):
            return lcp.NOT_HELD, text
        if isinstance(exc, redis.exceptions.TimeoutError):
            return lcp.TIMEOUT, text
        # ConnectionError stays indefinite: redis-py before 4 resends a command once after a connection
        # error, so even a refused reconnect may follow a command that ran.
        return lcp.CRASH, text

    def close(self):
        redisconn.disconnect(self.client)


class RedisPyAsync(RedisPy):
    """redis.asyncio's Lock (asyncio=true): the same requests as RedisPy, as coroutines on lcp's event loop."""

    async def init(self, msg):
        import redis.asyncio
        import redis.asyncio.lock

        kw = self.configure(msg)
        if (msg.get("library_options") or {}).get("lock_class", "") not in ("", "Lock", "lock"):
            raise lcp.Error(lcp.NOT_SUPPORTED, "library option lock_class: redis.asyncio has Lock only")
        self.lock_class = redis.asyncio.lock.Lock
        self.client = redisconn.client(msg, kw, redis.asyncio.StrictRedis, redisconn.async_sentinel_client)
        await self.client.ping()
        self.supports_replace_ttl = "replace_ttl" in inspect.signature(self.lock_class.extend).parameters
        self.caps = _caps(self.lock_class)
        return _version(), "python %s, asyncio" % platform.python_version()

    async def acquire(self, thread, keys, wait_ms, lease_ms):
        lease_ms = lease_ms or self.default_lease_ms
        if self.enter:
            lk = self.lock_class(self.client, keys[0], timeout=lease_ms / 1000.0, sleep=self.sleep,
                                 blocking_timeout=wait_ms / 1000.0)
            try:
                await lk.__aenter__()  # async with r.lock(...): raises LockError when not acquired in time
            except LockError as exc:
                if isinstance(exc, LockNotOwnedError) and LockNotOwnedError is not LockError:
                    raise
                return {"granted": False}
            self.locks[(thread, keys[0])] = lk
            return {"granted": True}
        lk = self._new_lock(keys[0], lease_ms)
        if wait_ms > 0:
            granted = await lk.acquire(blocking=True, blocking_timeout=wait_ms / 1000.0)
        else:
            granted = await lk.acquire(blocking=False)
        if granted:
            self.locks[(thread, keys[0])] = lk
        return {"granted": bool(granted)}

    async def release(self, thread, keys):
        await self._held(thread, keys[0]).release()

    async def held(self, thread, keys):
        return await self._held(thread, keys[0]).owned()

    async def is_locked(self, thread, keys):
        return await self._held(thread, keys[0]).locked()

    async def extend(self, thread, keys, lease_ms):
        lk = self._held(thread, keys[0])
        seconds = (lease_ms or int(lk.timeout * 1000 if lk.timeout else self.default_lease_ms)) / 1000.0
        if self.supports_replace_ttl:
            return await lk.extend(seconds, replace_ttl=True)
        return await lk.extend(seconds)

    async def close(self):
        if self.client is not None:
            # aclose from redis-py 5.0.1, close before it.
            await (getattr(self.client, "aclose", None) or self.client.close)()


def _caps(lock_class):
    """extend always; reads where this redis-py's Lock has owned() and locked() (older ones have not);
    thread-bound always: release() by an owner without the lock's token raises LockError ("Cannot release an
    unlocked lock") or LockNotOwnedError, both classified not-held (40), so a stray release is refused."""
    reads = ("reads",) if hasattr(lock_class, "owned") and hasattr(lock_class, "locked") else ()
    return ("extend",) + reads + ("thread-bound",)


if __name__ == "__main__":
    sys.exit(lcp.serve(RedisPy()))
