package lockcheck;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;

import io.lettuce.core.internal.HostAndPort;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.MappingSocketAddressResolver;
import org.springframework.data.redis.connection.RedisConfiguration;
import org.springframework.data.redis.connection.RedisPassword;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/**
 * An LCP/1 worker (docs/protocol.md) driving Spring Integration's RedisLockRegistry: requests on stdin, replies on
 * stdout, one JSON object a line; logs on stderr. One registry per worker (one lockcheck client), as an
 * application has one; each protocol thread is a Java thread of its own (the registry's locks are
 * ReentrantLocks in the process, owned by the calling thread, in front of the key in Redis).
 */
public final class Main {
    static final int TIMEOUT = 0, NOT_SUPPORTED = 10, UNAVAILABLE = 11, MALFORMED = 12, CRASH = 13, NOT_HELD = 40;

    private static RedisLockRegistry registry;
    private static LettuceConnectionFactory factory;
    private static ClientResources resources;
    private static ThreadPoolTaskScheduler renewer;
    private static long expireAfter;
    private static final Map<Long, ExecutorService> threads = new ConcurrentHashMap<>();

    private Main() {
    }

    /** A protocol error with its code. */
    static final class Failure extends Exception {
        final int code;

        Failure(int code, String text) {
            super(text);
            this.code = code;
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object v) {
        return v instanceof Map ? (Map<String, Object>) v : Map.of();
    }

    static long num(Map<String, Object> m, String k) throws Failure {
        Object v = m.get(k);
        if (v == null) {
            return 0;
        }
        if (!(v instanceof Long) || (Long) v < 0) {
            throw new Failure(MALFORMED, k + " must be a non-negative integer");
        }
        return (Long) v;
    }

    static String version() {
        Package p = RedisLockRegistry.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    static Map<String, Object> init(Map<String, Object> msg) throws Failure {
        Map<String, Object> topo = map(msg.get("topology")), lock = map(msg.get("lock")), opts = map(msg.get("options"));
        Map<String, Object> lib = new LinkedHashMap<>(map(msg.get("library_options")));
        Object family = lock.getOrDefault("family", "mutex"), kind = lock.getOrDefault("kind", "mutex");
        if (!"mutex".equals(family) || !List.of("spring-integration", "mutex").contains(kind)) {
            throw new Failure(NOT_SUPPORTED, "lock " + family + "/" + kind + ": RedisLockRegistry's locks are mutexes (kinds: spring-integration, mutex)");
        }
        String topoKind = String.valueOf(topo.getOrDefault("kind", "single"));
        if (!List.of("single", "sentinel").contains(topoKind)) {
            throw new Failure(NOT_SUPPORTED, "topology " + topoKind + ": the spring-integration worker runs on single and sentinel");
        }
        String type = String.valueOf(lib.getOrDefault("lockType", "SPIN_LOCK"));
        lib.remove("lockType");
        String renewal = String.valueOf(lib.getOrDefault("renewal", "false"));
        lib.remove("renewal");
        Object idle = lib.remove("idleBetweenTries");
        if (!lib.isEmpty()) {
            throw new Failure(NOT_SUPPORTED, "library options " + lib.keySet() + ": the worker takes lockType (SPIN_LOCK, PUB_SUB_LOCK), renewal, idleBetweenTries");
        }
        if (!List.of("true", "false").contains(renewal)) {
            throw new Failure(MALFORMED, "library option renewal=" + renewal + ": true or false");
        }
        boolean renew = "true".equals(renewal);
        long timeout = num(opts, "timeout_ms") > 0 ? num(opts, "timeout_ms") : 3000;
        long watchdog = num(opts, "watchdog_ms") > 0 ? num(opts, "watchdog_ms") : 30000;
        // expireAfter is the registry's, for every lock it hands out: the run's --lease, else --watchdog (with
        // renewal on, the lease the renewal task sets again, as protocol.md asks of a watchdog).
        expireAfter = renew || num(opts, "lease_ms") == 0 ? watchdog : num(opts, "lease_ms");
        LettuceClientConfiguration.LettuceClientConfigurationBuilder client = LettuceClientConfiguration.builder()
                .commandTimeout(Duration.ofMillis(timeout));
        RedisConfiguration conf = "sentinel".equals(topoKind) ? sentinel(topo, msg.get("password"), client) : standalone(topo, msg.get("password"));
        factory = new LettuceConnectionFactory(conf, client.build());
        factory.afterPropertiesSet();
        factory.start();
        registry = new RedisLockRegistry(factory, "lockcheck", expireAfter);
        try {
            registry.setRedisLockType(RedisLockRegistry.RedisLockType.valueOf(type));
        } catch (IllegalArgumentException e) {
            throw new Failure(MALFORMED, "library option lockType=" + type + ": SPIN_LOCK or PUB_SUB_LOCK");
        }
        if (idle != null) {
            registry.setIdleBetweenTries(Duration.ofMillis(Long.parseLong(String.valueOf(idle))));
        }
        if (renew) {
            renewer = new ThreadPoolTaskScheduler();
            renewer.setThreadNamePrefix("lock-renewal-");
            renewer.initialize();
            registry.setRenewalTaskScheduler(renewer);
        }
        // Connect and warm up here, not in the first acquire: a PING on the factory's shared connection.
        factory.getConnection().ping();
        Map<String, Object> ok = Lcp.reply("init_ok", msg.get("msg_id"));
        ok.put("library", "spring-integration-redis");
        ok.put("version", version());
        ok.put("runtime", "java " + System.getProperty("java.version") + ", " + type + (renew ? ", renewal" : ""));
        ok.put("kinds", List.of("spring-integration", "mutex"));
        ok.put("caps", renew ? List.of("watchdog", "thread-bound") : List.of("extend", "thread-bound"));
        return ok;
    }

    static String password(Object pw) {
        return pw instanceof String && !((String) pw).isEmpty() ? (String) pw : null;
    }

    static HostAndPort hostPort(Object addr) throws Failure {
        String a = String.valueOf(addr);
        int colon = a.lastIndexOf(':');
        try {
            return HostAndPort.of(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1)));
        } catch (RuntimeException e) {
            throw new Failure(MALFORMED, "init: address " + a + " is not host:port");
        }
    }

    /** topology single: nodes[0]. */
    static RedisConfiguration standalone(Map<String, Object> topo, Object pw) throws Failure {
        List<?> nodes = (List<?>) topo.getOrDefault("nodes", List.of());
        if (nodes.isEmpty()) {
            throw new Failure(MALFORMED, "init: topology single needs one node");
        }
        HostAndPort hp = hostPort(map(nodes.get(0)).get("addr"));
        RedisStandaloneConfiguration conf = new RedisStandaloneConfiguration(hp.getHostText(), hp.getPort());
        if (password(pw) != null) {
            conf.setPassword(RedisPassword.of(password(pw)));
        }
        return conf;
    }

    /**
     * topology sentinel: Spring Data Redis's RedisSentinelConfiguration (the Sentinels asked for master_name), with
     * the password for the nodes and the Sentinels alike. The addresses the Sentinels announce are mapped through
     * init's nat to this client's own proxies by Lettuce's MappingSocketAddressResolver (every address Lettuce
     * dials passes through it; one not in nat, such as a Sentinel's own, is dialled as it is).
     */
    static RedisConfiguration sentinel(Map<String, Object> topo, Object pw, LettuceClientConfiguration.LettuceClientConfigurationBuilder client) throws Failure {
        List<?> sentinels = (List<?>) topo.getOrDefault("sentinels", List.of());
        Object master = topo.get("master_name");
        if (sentinels.isEmpty() || !(master instanceof String)) {
            throw new Failure(MALFORMED, "init: topology sentinel needs sentinels and master_name");
        }
        Set<String> addrs = new LinkedHashSet<>();
        for (Object s : sentinels) {
            HostAndPort hp = hostPort(s);
            addrs.add(hp.getHostText() + ":" + hp.getPort());
        }
        RedisSentinelConfiguration conf = new RedisSentinelConfiguration((String) master, addrs);
        if (password(pw) != null) {
            conf.setPassword(RedisPassword.of(password(pw)));
            conf.setSentinelPassword(RedisPassword.of(password(pw)));
        }
        Map<String, HostAndPort> nat = new HashMap<>();
        for (Map.Entry<String, Object> e : map(topo.get("nat")).entrySet()) {
            nat.put(e.getKey(), hostPort(e.getValue()));
        }
        Function<HostAndPort, HostAndPort> mapped = hp -> nat.getOrDefault(hp.getHostText() + ":" + hp.getPort(), hp);
        resources = ClientResources.builder().socketAddressResolver(MappingSocketAddressResolver.create(mapped)).build();
        client.clientResources(resources);
        return conf;
    }

    /** The lease a request asks for, which must be the registry's expireAfter (no per-lock lease in 6.5). */
    static void sameLease(long lease) throws Failure {
        if (lease != 0 && lease != expireAfter) {
            throw new Failure(NOT_SUPPORTED, "RedisLockRegistry's expireAfter is the registry's (" + expireAfter + "ms), not " + lease + "ms per lock");
        }
    }

    static Map<String, Object> handle(String type, Map<String, Object> msg) throws Exception {
        Object keys = msg.get("keys");
        if (!(keys instanceof List) || ((List<?>) keys).size() != 1 || !(((List<?>) keys).get(0) instanceof String)) {
            throw new Failure(NOT_SUPPORTED, type + " needs keys: one lock name");
        }
        String key = (String) ((List<?>) keys).get(0);
        Lock lock = registry.obtain(key);
        Map<String, Object> r = Lcp.reply(type + "_ok", msg.get("msg_id"));
        switch (type) {
            case "acquire":
                sameLease(num(msg, "lease_ms"));
                long wait = num(msg, "wait_ms");
                // tryLock(wait): the process's ReentrantLock for the key first, then the key in Redis (SET NX with
                // expireAfter; a spin with idleBetweenTries, or a wait on the unlock channel, until wait is spent).
                r.put("granted", wait == 0 ? lock.tryLock() : lock.tryLock(wait, TimeUnit.MILLISECONDS));
                return r;
            case "release":
                lock.unlock();
                return r;
            case "extend":
                sameLease(num(msg, "lease_ms"));
                registry.renewLock(key); // sets expireAfter again where this process holds the key
                r.put("extended", true);
                return r;
            default:
                throw new Failure(NOT_SUPPORTED, type + ": not supported by this worker (family mutex)");
        }
    }

    static void answer(Object id, Exception e) {
        Throwable t = e;
        while (t.getCause() != null && !(t instanceof Failure) && t.getCause() != t) {
            if (t instanceof IllegalStateException || t instanceof ConcurrentModificationException) {
                break;
            }
            t = t.getCause();
        }
        String text = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (t instanceof Failure) {
            Lcp.sendError(id, ((Failure) t).code, t.getMessage());
        } else if (t instanceof ConcurrentModificationException) {
            // unlock(): the key in Redis was no longer this process's ("released in the store due to expiration").
            Lcp.sendError(id, NOT_HELD, text);
        } else if (t instanceof IllegalStateException || t instanceof IllegalMonitorStateException) {
            // unlock() by a thread that does not hold the local lock, or renewLock() of a lock not held here.
            String m = String.valueOf(t.getMessage());
            Lcp.sendError(id, m.contains("own") || m.contains("not") || m.contains("held") ? NOT_HELD : CRASH, text);
        } else if (text.contains("Timeout") || text.contains("timed out")) {
            Lcp.sendError(id, TIMEOUT, text);
        } else {
            Lcp.log(type(e) + ": " + text);
            Lcp.sendError(id, CRASH, text);
        }
    }

    static String type(Exception e) {
        return e.getClass().getName();
    }

    public static void main(String[] args) throws Exception {
        Lcp.claimStdout();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        boolean ready = false;
        int rc = 0;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> msg;
            try {
                msg = map(Json.parse(line));
            } catch (IllegalArgumentException e) {
                Lcp.log("ignored a line that is not a JSON object (" + e.getMessage() + ")");
                continue;
            }
            Object id = msg.get("msg_id");
            Object type = msg.get("type");
            if (!(id instanceof Long)) {
                Lcp.log("ignored a message without an integer msg_id");
                continue;
            }
            if ("init".equals(type)) {
                if (ready) {
                    Lcp.sendError(id, MALFORMED, "init: already initialised");
                    continue;
                }
                try {
                    Lcp.send(init(msg));
                    ready = true;
                } catch (Exception e) {
                    answer(id, e);
                    rc = 1;
                    break;
                }
                continue;
            }
            if (!ready) {
                Lcp.sendError(id, MALFORMED, type + " before init");
                continue;
            }
            if ("shutdown".equals(type)) {
                Lcp.send(Lcp.reply("shutdown_ok", id));
                break;
            }
            if (!List.of("acquire", "release", "extend").contains(type)) {
                Lcp.sendError(id, NOT_SUPPORTED, type + ": not supported by this worker (family mutex)");
                continue;
            }
            Object th = msg.get("thread");
            if (!(th instanceof Long) || (Long) th <= 0) {
                Lcp.sendError(id, MALFORMED, type + " needs thread: a positive integer");
                continue;
            }
            // Each protocol thread is one Java thread, for the run: the registry's local lock is owned by it.
            threads.computeIfAbsent((Long) th, t -> Executors.newSingleThreadExecutor(r -> {
                Thread x = new Thread(r, "lcp-thread-" + t);
                x.setDaemon(true);
                return x;
            })).execute(() -> {
                try {
                    Lcp.send(handle((String) type, msg));
                } catch (Exception e) {
                    answer(id, e);
                }
            });
        }
        Lcp.flush();
        // Threads may be blocked in the library (a frozen node): do not wait for them, nor unlock anything.
        Runtime.getRuntime().halt(rc);
    }
}
