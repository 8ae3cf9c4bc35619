"""The lockcheck worker for python-redis-lock's Lock (redis_lock.Lock), speaking LCP/1 (docs/protocol.md).

One StrictRedis client per worker, shared by every protocol thread (each on its own OS thread, lcp.py); one Lock
object per (thread, key), made at acquire, so release and extend use the id that owner was granted with.
python-redis-lock counts expire in whole seconds (int()), so the worker announces lease_granularity_ms 1000;
acquire's timeout is passed as the application's float (the library truncates it: see README.md).

library_options auto_renewal=true is the library's own renewal thread (expire*2/3): the worker then announces
cap watchdog, and a grant's expire is watchdog_ms (lockcheck's --watchdog), as protocol.md asks.
"""

import platform
import sys

import lcp
import redisconn

import redis
import redis_lock

try:
    from importlib.metadata import version as _dist_version
except ImportError:  # pragma: no cover - Python < 3.8
    _dist_version = None


def _version(dist, module):
    if _dist_version is not None:
        return _dist_version(dist)
    return getattr(module, "__version__", "unknown")


def _seconds(ms):
    """A lease as the whole seconds python-redis-lock's expire takes; anything else is refused, never rounded
    (protocol.md: lockcheck sends whole seconds to a worker that announces lease_granularity_ms 1000)."""
    if ms % 1000:
        raise lcp.Error(lcp.NOT_SUPPORTED, "python-redis-lock's expire is whole seconds (it truncates with "
                        "int()), not %dms" % ms)
    return ms // 1000


class PythonRedisLock(lcp.Backend):
    library = "python-redis-lock"
    kinds = ("python-redis-lock", "mutex")
    caps = ("extend", "reads", "thread-bound", "force-unlock")
    lease_granularity_ms = 1000

    def __init__(self):
        self.client = None
        self.locks = {}  # (thread, key) -> the Lock object of that owner's last grant
        self.default_lease_ms = 30000
        self.auto_renewal = False
        self.block_s = 5
        self.signal_expire = None

    def init(self, msg):
        lock = msg.get("lock") or {}
        opts = msg.get("options") or {}
        lib = msg.get("library_options") or {}
        if lock.get("family", "mutex") != "mutex" or lock.get("kind", "mutex") not in self.kinds:
            raise lcp.Error(lcp.NOT_SUPPORTED, "lock %s/%s: python-redis-lock's Lock is a mutex (kinds: %s)" % (
                lock.get("family"), lock.get("kind"), ", ".join(self.kinds)))
        unknown = sorted(set(lib) - {"auto_renewal", "signal_expire"})
        if unknown:
            raise lcp.Error(lcp.NOT_SUPPORTED, "library options %s: the python-redis-lock worker takes "
                            "auto_renewal, signal_expire" % ", ".join(unknown))
        renewal = lib.get("auto_renewal", "false")
        if renewal not in ("true", "false"):
            raise lcp.Error(lcp.MALFORMED, "library option auto_renewal=%r: true or false" % renewal)
        self.auto_renewal = renewal == "true"
        if "signal_expire" in lib:
            self.signal_expire = int(lib["signal_expire"])  # ms: how long a release's wake-up signal lasts
        if self.auto_renewal:
            # The renewal thread sets expire at each renewal: that is watchdog_ms (protocol.md, Options).
            self.caps = self.caps + ("watchdog",)
            self.default_lease_ms = int(opts.get("watchdog_ms") or 30000)
        else:
            self.default_lease_ms = int(opts.get("lease_ms") or opts.get("watchdog_ms") or 30000)
        timeout = (opts.get("timeout_ms") or 3000) / 1000.0
        # A waiting acquire is BLPOPs of up to its timeout, or of up to expire when int() made the timeout 0:
        # the client's read timeout must outlast them, or redis-py ends the wait with TimeoutError. Waits are
        # issued in BLPOPs of at most block_s (the run's --wait), and the read timeout is the command timeout
        # plus the longer of that and the run's lease.
        self.block_s = max(1, -(-int(opts.get("wait_ms") or 5000) // 1000))
        read_s = max(self.block_s, -(-self.default_lease_ms // 1000))
        kw = dict(password=msg.get("password") or None, socket_timeout=timeout + read_s,
                  socket_connect_timeout=timeout)
        self.client = redisconn.client(msg, kw, redis.StrictRedis, redisconn.sentinel_client)
        self.client.ping()  # connect and warm up here, not in the first acquire; a bad password fails the start
        return (_version("python-redis-lock", redis_lock),
                "python %s, redis-py %s" % (platform.python_version(), _version("redis", redis)))

    def _new(self, key, lease_ms):
        kw = {}
        if self.signal_expire is not None:
            kw["signal_expire"] = self.signal_expire
        return redis_lock.Lock(self.client, key, expire=_seconds(lease_ms), auto_renewal=self.auto_renewal, **kw)

    def acquire(self, thread, keys, wait_ms, lease_ms):
        lk = self._new(keys[0], lease_ms or self.default_lease_ms)
        if wait_ms == 0:
            granted = lk.acquire(blocking=False)  # one SET NX EX
        else:
            # acquire(timeout=T): SET NX EX, then BLPOP on the lock's signal list for up to int(T) seconds (0, a
            # sub-second T, means expire), then SET again. T is the application's float, as it would pass it.
            # The library refuses int(T) above expire (TimeoutTooLarge) without auto_renewal, and the read
            # timeout bounds one BLPOP: a longer wait is n equal calls, as an application would write it.
            wait_s = wait_ms / 1000.0
            limit = self.block_s if self.auto_renewal else min(self.block_s, lk._expire)
            n = max(1, -(-wait_ms // (limit * 1000)))
            granted = False
            for _ in range(n):
                granted = lk.acquire(blocking=True, timeout=wait_s / n)
                if granted:
                    break
        if granted:
            self.locks[(thread, keys[0])] = lk
        return {"granted": bool(granted)}

    def _held(self, thread, key):
        lk = self.locks.get((thread, key))
        # An owner that never acquired this key gets a fresh Lock (a new random id): the library says not held.
        return lk if lk is not None else self._new(key, self.default_lease_ms)

    def release(self, thread, keys):
        self._held(thread, keys[0]).release()

    def extend(self, thread, keys, lease_ms):
        lk = self._held(thread, keys[0])
        lk.extend(expire=_seconds(lease_ms or self.default_lease_ms))
        return True  # extend() returns None or raises NotAcquired (classified not-held below)

    def held(self, thread, keys):
        lk = self._held(thread, keys[0])
        return lk.get_owner_id() == lk.id

    def is_locked(self, thread, keys):
        return self._held(thread, keys[0]).locked()

    def force_unlock(self, thread, keys):
        # Lock.reset() runs the library's reset script (DEL the key whoever holds it, signal a waiter) and drops
        # its reply; the same registered script is called here to keep that reply: 1 when a hold was deleted.
        lk = self._held(thread, keys[0])
        return lk.reset_script(client=lk._client, keys=(lk._name, lk._signal), args=(lk.id, lk._signal_expire)) == 1

    def classify(self, exc):
        text = "%s: %s" % (type(exc).__name__, exc)
        if isinstance(exc, redis_lock.NotAcquired):
            return lcp.NOT_HELD, text  # the script found another id (or none) and changed nothing
        if isinstance(exc, (redis_lock.TimeoutTooLarge, redis_lock.InvalidTimeout, redis_lock.TimeoutNotUsable)):
            return lcp.NOT_SUPPORTED, text  # raised before anything is sent
        if isinstance(exc, redis.exceptions.TimeoutError):
            return lcp.TIMEOUT, text
        return lcp.CRASH, text

    def close(self):
        redisconn.disconnect(self.client)


if __name__ == "__main__":
    sys.exit(lcp.serve(PythonRedisLock()))
