"""The lockcheck worker for pottery's Redlock, speaking LCP/1 (docs/protocol.md).

One Redis client per master (all of topology.nodes on `redlock`, nodes[0] on `single`); a new Redlock object
per acquire (pottery keeps the owner's UUID on the instance and asks users to "instantiate a new Redlock every
time", #408), kept per (thread, key) so release and extend use that owner's UUID.
"""

import inspect
import platform
import sys

import lcp

import redis
import pottery
from pottery import Redlock

try:
    from importlib.metadata import version as _dist_version
except ImportError:  # pragma: no cover - Python < 3.8
    _dist_version = None

_exc = getattr(pottery, "exceptions", None) or __import__("pottery.exceptions").exceptions
ReleaseUnlockedLock = _exc.ReleaseUnlockedLock
ExtendUnlockedLock = _exc.ExtendUnlockedLock
TooManyExtensions = _exc.TooManyExtensions

# pottery before 3.0 counted auto_release_time in milliseconds, 3.x in seconds: the default it declares (10 s,
# as 10000 or 10) says which.
_MS = (inspect.signature(Redlock.__init__).parameters["auto_release_time"].default or 10) >= 1000


def _version(dist):
    if _dist_version is not None:
        return _dist_version(dist)
    return getattr(sys.modules.get(dist), "__version__", "unknown")


class _Master(redis.Redis):
    """One master's client, on a pool shared by every Redlock, that notes the Redis errors of its calls.

    pottery swallows a master's Redis error (a "no" from that master), and only some versions say which in the
    exception they raise: these notes tell a definite "not held" from one where a master may have run it."""

    def __init__(self, pool):
        redis.Redis.__init__(self, connection_pool=pool)
        self.errors = []

    def execute_command(self, *args, **options):
        try:
            return redis.Redis.execute_command(self, *args, **options)
        except redis.exceptions.NoScriptError:
            raise  # the script cache missed: redis-py loads the script and calls it again
        except redis.exceptions.RedisError as e:
            self.errors.append(e)
            raise


def _indefinite(text, errs):
    """The answer to a call that some masters failed: the command may have run there with its reply lost, so
    0 if a timeout was among the errors, else 13."""
    text += " (redis errors: %s)" % ", ".join("%s: %s" % (type(x).__name__, x) for x in errs)
    timeout = any(isinstance(x, redis.exceptions.TimeoutError) for x in errs)
    return lcp.Error(lcp.TIMEOUT if timeout else lcp.CRASH, text)


def _seconds(ms):
    return int(ms) if _MS else ms / 1000.0


class Pottery(lcp.Backend):
    library = "pottery"
    kinds = ("pottery", "mutex")
    caps = ("extend",)

    def __init__(self):
        self.masters = []  # one client per master; each Redlock gets its own _Master views of their pools
        self.locks = {}  # (thread, key) -> (Redlock, its _Masters) of that owner's last grant
        self.default_lease_ms = 30000
        self.lib_kw = {}

    def init(self, msg):
        topo = msg.get("topology") or {}
        lock = msg.get("lock") or {}
        opts = msg.get("options") or {}
        lib = msg.get("library_options") or {}
        if lock.get("family", "mutex") != "mutex" or lock.get("kind", "pottery") not in self.kinds:
            raise lcp.Error(lcp.NOT_SUPPORTED, "lock %s/%s: pottery's Redlock is a mutex (kinds: %s)" % (
                lock.get("family"), lock.get("kind"), ", ".join(self.kinds)))
        # pottery's own settings, as library_options strings; the rest stay pottery's defaults.
        if "num_extensions" in lib:
            self.lib_kw["num_extensions"] = int(lib["num_extensions"])
        if "raise_on_redis_errors" in lib:
            self.lib_kw["raise_on_redis_errors"] = lib["raise_on_redis_errors"].lower() in ("1", "true", "yes")
        # redis_retries: how often redis-py resends a command that timed out (its Retry; 3 by default from
        # redis-py 6, none before): 0 turns the resends off.
        client_kw = {}
        if "redis_retries" in lib:
            from redis.backoff import NoBackoff
            from redis.retry import Retry
            client_kw["retry"] = Retry(NoBackoff(), int(lib["redis_retries"]))
        unknown = sorted(set(lib) - {"num_extensions", "raise_on_redis_errors", "redis_retries"})
        if unknown:
            raise lcp.Error(lcp.NOT_SUPPORTED, "library options %s: the pottery worker takes num_extensions, "
                            "raise_on_redis_errors, redis_retries" % ", ".join(unknown))
        self.default_lease_ms = int(opts.get("lease_ms") or opts.get("watchdog_ms") or 30000)
        timeout = (opts.get("timeout_ms") or 3000) / 1000.0
        nodes = topo.get("nodes") or []
        kind = topo.get("kind", "single")
        if kind == "single":
            nodes = nodes[:1]
        elif kind != "redlock":
            # pottery takes plain Redis clients as independent masters: no Sentinel discovery, no Cluster.
            raise lcp.Error(lcp.NOT_SUPPORTED, "topology %r: the pottery worker runs on single or redlock" % kind)
        if not nodes:
            raise lcp.Error(lcp.MALFORMED, "init: topology %s has no nodes" % kind)
        for n in nodes:
            host, _, port = n["addr"].rpartition(":")
            self.masters.append(redis.Redis(host=host, port=int(port), password=msg.get("password") or None,
                                            socket_timeout=timeout, socket_connect_timeout=timeout, **client_kw))
        # A bad address or password fails the start in one line; a majority answering is enough, as for pottery.
        errors = []
        for m in self.masters:
            try:
                m.ping()
            except redis.exceptions.AuthenticationError:
                raise
            except redis.exceptions.RedisError as e:
                errors.append(e)
        if len(errors) > len(self.masters) // 2:
            raise errors[0]
        return _version("pottery"), "python %s, redis-py %s" % (platform.python_version(), _version("redis"))

    def _new(self, key, lease_ms):
        masters = [_Master(m.connection_pool) for m in self.masters]
        return Redlock(key=key, masters=masters, auto_release_time=_seconds(lease_ms), **self.lib_kw), masters

    def acquire(self, thread, keys, wait_ms, lease_ms):
        lk, masters = self._new(keys[0], lease_ms or self.default_lease_ms)
        # blocking=False is one round over the masters; otherwise pottery retries (random delay up to 0.2 s)
        # until timeout. A master's Redis error counts as not acquired there (raise_on_redis_errors=False).
        if wait_ms > 0:
            granted = lk.acquire(blocking=True, timeout=wait_ms / 1000.0)
        else:
            granted = lk.acquire(blocking=False)
        if granted:
            self.locks[(thread, keys[0])] = (lk, masters)
        elif any(m.errors for m in masters):
            # pottery's False after a master's error is no refusal: the SET may have run there with its reply
            # lost (a key under a UUID pottery has dropped), as for release and extend (_call).
            raise _indefinite("not acquired", [err for m in masters for err in m.errors])
        return {"granted": bool(granted)}

    def _held(self, thread, key):
        held = self.locks.get((thread, key))
        # An owner that never acquired this key gets a fresh Redlock (no UUID), so pottery itself says not held.
        return held if held is not None else self._new(key, self.default_lease_ms)

    def _call(self, fn, masters):
        """Runs a Redlock's release or extend, turning pottery's "not held" into 40 only when every master
        answered."""
        for m in masters:
            del m.errors[:]
        try:
            fn()
        except (ReleaseUnlockedLock, ExtendUnlockedLock) as e:
            errs = [err for m in masters for err in m.errors]
            text = "%s: %s" % (type(e).__name__, _key(e))
            if not errs:
                raise lcp.Error(lcp.NOT_HELD, text + ": no quorum of the masters held this owner's UUID")
            raise _indefinite(text, errs)

    def release(self, thread, keys):
        lk, masters = self._held(thread, keys[0])
        self._call(lk.release, masters)

    def extend(self, thread, keys, lease_ms):
        # pottery's extend() takes no duration: it restarts the lease at the instance's auto_release_time
        # (a public attribute), so a different lease_ms is set there first, as the lease-aware model expects.
        lk, masters = self._held(thread, keys[0])
        if lease_ms:
            lk.auto_release_time = _seconds(lease_ms)
        try:
            self._call(lk.extend, masters)
        except TooManyExtensions:
            # pottery refused before sending anything: the lock is still held, only not extended. Not
            # extended: false, which says the owner lost the lock (the model then rejects its release).
            raise lcp.Error(lcp.INTERRUPTED, "pottery: TooManyExtensions (num_extensions %d)" % lk.num_extensions)
        return True

    def classify(self, exc):
        text = "%s: %s" % (type(exc).__name__, _key(exc) if _key(exc) is not None else exc)
        if isinstance(exc, redis.exceptions.TimeoutError):
            return lcp.TIMEOUT, text
        return lcp.CRASH, text

    def close(self):
        for m in self.masters:
            try:
                m.connection_pool.disconnect()
            except Exception:
                pass


def _key(exc):
    # pottery's errors print every master's repr: name the key instead (key from 2.x, _key in 1.x).
    return getattr(exc, "key", None) or getattr(exc, "_key", None)


if __name__ == "__main__":
    sys.exit(lcp.serve(Pottery()))
