"""redisconn: the one Redis client of a Python library's worker on the run's topology (single, or a master
found through the Sentinels with every announced address mapped through init's nat), sync or asyncio. Shared by
the workers whose library takes a redis-py client (redis-py, python-redis-lock); copied beside worker.py by
build-venv.sh."""

import lcp


def client(msg, kw, redis_class, via_sentinel):
    """The one client of the worker, of redis_class (sync or asyncio), on the run's topology."""
    topo = msg.get("topology") or {}
    nodes = topo.get("nodes") or []
    kind = topo.get("kind", "single")
    if kind == "single":
        if not nodes:
            raise lcp.Error(lcp.MALFORMED, "init: topology single needs one node")
        host, port = split(nodes[0]["addr"])
        return redis_class(host=host, port=port, **kw)
    if kind == "sentinel":
        return via_sentinel(topo, msg.get("password") or None, kw)
    # These locks talk to one server: Redlock over independent masters is pottery's and aioredlock's job,
    # and Cluster (RedisCluster, address_remap from 5.0) is not wired here.
    raise lcp.Error(lcp.NOT_SUPPORTED, "topology %r: this worker runs on single or sentinel" % kind)


def disconnect(client):
    """Closes a sync client's pool at the worker's end; nothing it raises matters any more."""
    try:
        if client is not None:
            client.connection_pool.disconnect()
    except Exception:
        pass


def split(addr):
    host, _, port = addr.rpartition(":")
    return host, int(port)


def sentinel_client(topo, password, kw):
    """A master client found through the Sentinels, with every announced address mapped through nat.

    redis-py's Sentinel has no address_remap (Cluster has, from 5.0), so this subclass remaps what
    discover_master returns: the one place redis-py turns a Sentinel answer into an address to dial."""
    import redis.sentinel

    nat = nat_of(topo)

    class RemappedSentinel(redis.sentinel.Sentinel):
        def discover_master(self, service_name):
            return nat(redis.sentinel.Sentinel.discover_master(self, service_name))

    return master(RemappedSentinel, topo, password, kw, redis.StrictRedis)


def async_sentinel_client(topo, password, kw):
    """sentinel_client's twin for redis.asyncio, whose discover_master is a coroutine."""
    import redis.asyncio
    import redis.asyncio.sentinel

    nat = nat_of(topo)

    class RemappedSentinel(redis.asyncio.sentinel.Sentinel):
        async def discover_master(self, service_name):
            return nat(await redis.asyncio.sentinel.Sentinel.discover_master(self, service_name))

    return master(RemappedSentinel, topo, password, kw, redis.asyncio.StrictRedis)


def nat_of(topo):
    """Maps a (host, port) a Sentinel announced through init's nat."""
    table = dict(topo.get("nat") or {})

    def remap(hp):
        mapped = table.get("%s:%s" % hp)
        return split(mapped) if mapped else hp

    return remap


def master(sentinel_class, topo, password, kw, redis_class):
    sentinels = [split(a) for a in topo.get("sentinels") or []]
    if not sentinels:
        raise lcp.Error(lcp.MALFORMED, "init: topology sentinel needs sentinels")
    skw = dict(password=password, socket_timeout=kw["socket_timeout"],
               socket_connect_timeout=kw["socket_connect_timeout"])
    s = sentinel_class(sentinels, sentinel_kwargs=skw, **kw)
    return s.master_for(topo.get("master_name") or "lockcheck", redis_class=redis_class)
