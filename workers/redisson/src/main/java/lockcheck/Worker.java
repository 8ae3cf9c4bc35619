package lockcheck;

import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * One lockcheck client: its Redisson instances, the lock kind of the run, and one Java thread per protocol
 * thread. Only APIs present in every Redisson from 3.11 on are called directly; the rest go through
 * reflection (Config setters, the NAT mapper, RFencedLock) so one source builds against every version.
 */
final class Worker {
    static final int TIMEOUT = 0;
    static final int NOT_SUPPORTED = 10;
    static final int UNAVAILABLE = 11;
    static final int MALFORMED = 12;
    static final int CRASH = 13;
    static final int NOT_HELD = 40;
    static final int NO_SYNC = 41;

    /** A failure with its protocol error code. */
    static final class Failure extends Exception {
        final int code;

        Failure(int code, String text) {
            super(text);
            this.code = code;
        }
    }

    /** The kinds whose acquire is an RLock call, which the api option can change. */
    private static final List<String> LOCK_KINDS = List.of("reentrant", "fair", "multi", "redlock", "rwlock");

    /**
     * The kinds whose one lock object has isHeldByCurrentThread, isLocked and forceUnlock: caps reads and
     * force-unlock. Not multi or redlock (groups), nor rwlock, for which lockcheck sends none of them.
     */
    private static final List<String> CROSS_THREAD_KINDS = List.of("reentrant", "fair", "fenced");

    /**
     * The kinds whose unlock refuses every thread that does not hold the lock: caps thread-bound and
     * force-unlock. Not fair: RFairLock.unlock() of a free lock succeeds, so a stray release, or the
     * victim's release after a forceUnlock, answers ok and lockcheck would flag it on most runs.
     */
    private static final List<String> THREAD_BOUND_KINDS = List.of("reentrant", "fenced");

    private static final List<String> KINDS = List.of("reentrant", "fair", "fenced", "multi", "redlock", "rwlock",
            "semaphore", "expirable-semaphore", "latch");

    /** RedissonClient.getFencedLock(String), absent before RFencedLock existed. */
    private static final Method FENCED_LOCK = method(RedissonClient.class, "getFencedLock", String.class);
    /** RFencedLock.tryLockAndGetToken(long, long, TimeUnit), looked up on the interface when it exists. */
    private static final Method FENCED_TRY = FENCED_LOCK == null ? null
            : method(FENCED_LOCK.getReturnType(), "tryLockAndGetToken", long.class, long.class, TimeUnit.class);

    private final List<RedissonClient> clients;
    private final String kind;
    /** A not-held answer that took this long or longer is not trusted as definite (see run). */
    private final long notHeldWithinMs;
    private final Map<Long, ExecutorService> threads = new ConcurrentHashMap<>();
    /** The API form that acquire calls (library option api): tryLock unless a run asks for another. */
    private final Api api;

    private Worker(List<RedissonClient> clients, String kind, long notHeldWithinMs, Api api) {
        this.clients = clients;
        this.kind = kind;
        this.notHeldWithinMs = notHeldWithinMs;
        this.api = api;
    }

    private static Method method(Class<?> c, String name, Class<?>... params) {
        try {
            return c.getMethod(name, params);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    static List<String> kinds() {
        List<String> k = new ArrayList<>(KINDS);
        if (FENCED_TRY == null) {
            k.remove("fenced");
        }
        return k;
    }

    /** The Redisson version on the classpath, from its jar's Maven metadata (or manifest). */
    static String version() {
        try (InputStream in = Redisson.class.getResourceAsStream("/META-INF/maven/org.redisson/redisson/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null) {
                    return v;
                }
            }
        } catch (Exception e) {
            // fall through to the manifest
        }
        String v = Redisson.class.getPackage().getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    Map<String, Object> hello() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("library", "redisson");
        m.put("version", version());
        m.put("runtime", "java " + System.getProperty("java.version"));
        m.put("kinds", kinds());
        List<String> caps = new ArrayList<>(List.of("watchdog", "reentrant"));
        if (FENCED_TRY != null) {
            caps.add("fencing");
        }
        // Per kind: init_ok is for the run's one lock kind, and lockcheck reads its caps from it.
        if (CROSS_THREAD_KINDS.contains(kind)) {
            caps.add("reads");
        }
        if (THREAD_BOUND_KINDS.contains(kind)) {
            // force-unlock too only where unlock refuses a non-holder: a fair lock's victim, after a
            // forceUnlock, releases the free lock "successfully" and would be flagged on most runs.
            caps.addAll(List.of("force-unlock", "thread-bound"));
        }
        m.put("caps", caps);
        return m;
    }

    // ---- init ----

    static Worker init(Map<String, Object> msg) throws Failure {
        Object proto = msg.get("protocol");
        if (proto != null && !Long.valueOf(1).equals(proto)) {
            throw new Failure(NOT_SUPPORTED, "protocol " + proto + " is not supported (this worker speaks 1)");
        }
        Map<String, Object> topo = obj(msg, "topology");
        Map<String, Object> lock = obj(msg, "lock");
        String kind = str(lock, "kind");
        if (!kinds().contains(kind)) {
            throw new Failure(NOT_SUPPORTED, "lock kind " + kind + " is not supported by redisson " + version()
                    + " (supported: " + String.join(", ", kinds()) + ")");
        }
        Map<String, Object> opts = msg.get("options") == null ? Map.of() : obj(msg, "options");
        Map<String, Object> libOpts = new LinkedHashMap<>(
                msg.get("library_options") == null ? Map.of() : obj(msg, "library_options"));
        // "api" names the call acquire makes, not a Redisson setting, so it is taken out before the setters.
        Api api = Api.parse(libOpts.remove("api"));
        if (api.form != Api.Form.TRY_LOCK && (kind.equals("fenced") || !LOCK_KINDS.contains(kind))) {
            throw new Failure(NOT_SUPPORTED, "library option api=" + api + " applies to the RLock kinds, not " + kind);
        }
        String password = msg.get("password") == null ? "" : str(msg, "password");
        String tkind = str(topo, "kind");
        List<String> nodes = new ArrayList<>();
        for (Object n : list(topo, "nodes", false)) {
            if (!(n instanceof Map)) {
                throw new Failure(MALFORMED, "topology.nodes: each node must be an object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> nm = (Map<String, Object>) n;
            nodes.add(uri(str(nm, "addr")));
        }
        Map<String, String> nat = new LinkedHashMap<>();
        if (topo.get("nat") != null) {
            for (Map.Entry<String, Object> e : obj(topo, "nat").entrySet()) {
                nat.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }

        List<Config> configs = new ArrayList<>();
        List<Object> servers = new ArrayList<>(); // the server config of each, where the connection settings go
        switch (tkind) {
            case "single":
            case "redlock":
                if (nodes.isEmpty()) {
                    throw new Failure(MALFORMED, "topology.nodes is empty");
                }
                // redlock: one Redisson instance per master, as a RedissonRedLock user has.
                for (String n : tkind.equals("single") ? nodes.subList(0, 1) : nodes) {
                    Config c = new Config();
                    servers.add(c.useSingleServer().setAddress(n));
                    configs.add(c);
                }
                break;
            case "sentinel": {
                Config c = new Config();
                List<String> sentinels = new ArrayList<>();
                for (Object s : list(topo, "sentinels", true)) {
                    sentinels.add(uri(String.valueOf(s)));
                }
                Object s = c.useSentinelServers().setMasterName(str(topo, "master_name"))
                        .addSentinelAddress(sentinels.toArray(new String[0]));
                Options.nat(s, nat, true);
                configs.add(c);
                servers.add(s);
                break;
            }
            case "cluster": {
                if (nodes.isEmpty()) {
                    throw new Failure(MALFORMED, "topology.nodes is empty");
                }
                Config c = new Config();
                Object s = c.useClusterServers().addNodeAddress(nodes.toArray(new String[0]));
                Options.nat(s, nat, false);
                configs.add(c);
                servers.add(s);
                break;
            }
            default:
                throw new Failure(NOT_SUPPORTED, "topology kind " + tkind + " is not supported");
        }
        for (int i = 0; i < configs.size(); i++) {
            Config c = configs.get(i);
            Object server = servers.get(i);
            if (!password.isEmpty()) {
                Options.set(c, server, "password", password);
                if (tkind.equals("sentinel")) {
                    // lockcheck's Sentinels share the nodes' password; older versions use "password" for both.
                    Options.setIfPresent(server, "sentinelPassword", password);
                }
            }
            long timeout = num(opts, "timeout_ms");
            if (timeout > 0) {
                Options.set(c, server, "timeout", Long.toString(timeout));
            }
            long watchdog = num(opts, "watchdog_ms");
            if (watchdog > 0) {
                Options.set(c, server, "lockWatchdogTimeout", Long.toString(watchdog));
            }
            for (Map.Entry<String, Object> e : libOpts.entrySet()) {
                Options.set(c, server, e.getKey(), String.valueOf(e.getValue()));
            }
        }
        List<RedissonClient> clients = new ArrayList<>();
        try {
            for (Config c : configs) {
                clients.add(Redisson.create(c));
            }
        } catch (Exception e) {
            e.printStackTrace();
            for (RedissonClient r : clients) {
                r.shutdown(0, 1, TimeUnit.SECONDS);
            }
            throw new Failure(UNAVAILABLE, "cannot start Redisson: " + text(e));
        }
        // Redisson resends a command only after a response timeout or a retry delay, so an unlock answered
        // sooner than both was sent once. Retry delays start at 1 s (retryInterval before 4.x, jittered
        // retryDelay after).
        long within = Math.min(1000, Options.getMs(servers.get(0), "timeout", 3000));
        within = Math.min(within, Options.getMs(servers.get(0), "retryInterval", within));
        return new Worker(clients, kind, Math.max(within, 1), api);
    }

    private static String uri(String addr) {
        return addr.contains("://") ? addr : "redis://" + addr;
    }

    // ---- message fields ----

    @SuppressWarnings("unchecked")
    private static Map<String, Object> obj(Map<String, Object> m, String k) throws Failure {
        Object v = m.get(k);
        if (!(v instanceof Map)) {
            throw new Failure(MALFORMED, k + " must be an object");
        }
        return (Map<String, Object>) v;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Map<String, Object> m, String k, boolean required) throws Failure {
        Object v = m.get(k);
        if (v == null && !required) {
            return List.of();
        }
        if (!(v instanceof List)) {
            throw new Failure(MALFORMED, k + " must be a list");
        }
        return (List<Object>) v;
    }

    private static String str(Map<String, Object> m, String k) throws Failure {
        Object v = m.get(k);
        if (!(v instanceof String) || ((String) v).isEmpty()) {
            throw new Failure(MALFORMED, k + " must be a non-empty string");
        }
        return (String) v;
    }

    /** A non-negative integer field; absent is 0. */
    private static long num(Map<String, Object> m, String k) throws Failure {
        Object v = m.get(k);
        if (v == null) {
            return 0;
        }
        if (!(v instanceof Long) || (Long) v < 0) {
            throw new Failure(MALFORMED, k + " must be a non-negative integer");
        }
        return (Long) v;
    }

    private static int count(Map<String, Object> m) throws Failure {
        long n = num(m, "n");
        if (n < 1 || n > Integer.MAX_VALUE) {
            throw new Failure(MALFORMED, "n must be a positive integer");
        }
        return (int) n;
    }

    private static List<String> keys(Map<String, Object> m) throws Failure {
        List<String> out = new ArrayList<>();
        for (Object k : list(m, "keys", true)) {
            if (!(k instanceof String) || ((String) k).isEmpty()) {
                throw new Failure(MALFORMED, "keys must be non-empty strings");
            }
            out.add((String) k);
        }
        if (out.isEmpty()) {
            throw new Failure(MALFORMED, "keys is empty");
        }
        return out;
    }

    private static String one(List<String> keys) throws Failure {
        if (keys.size() != 1) {
            throw new Failure(MALFORMED, "this lock kind takes one key, not " + keys.size());
        }
        return keys.get(0);
    }

    // ---- requests ----

    /** Runs the request on its thread's own Java thread: Redisson's lock owner is the calling thread. */
    void dispatch(Map<String, Object> msg, Object id, String type) {
        Object th = msg.get("thread");
        if (!(th instanceof Long) || (Long) th <= 0) {
            Lcp.sendError(id, MALFORMED, "thread must be a positive integer");
            return;
        }
        ExecutorService ex = threads.computeIfAbsent((Long) th, t -> Executors.newSingleThreadExecutor(r -> {
            Thread x = new Thread(r, "lockcheck-thread-" + t);
            x.setDaemon(true);
            return x;
        }));
        ex.execute(() -> run(msg, id, type));
    }

    private void run(Map<String, Object> msg, Object id, String type) {
        Map<String, Object> res;
        long start = System.nanoTime();
        try {
            res = handle(type, msg);
        } catch (Throwable e) {
            int code = code(e);
            String text = text(e);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            if (code == NOT_HELD && tookMs >= notHeldWithinMs) {
                // A resent unlock whose first copy did apply finds the lock gone and says "not held": without
                // an unlock latch that keeps its request id across resends (3.52 / 4.3), that answer is wrong,
                // and a definite one would tell the checkers the lock was still held.
                code = CRASH;
                text += " (after " + tookMs + " ms: Redisson may have resent an unlock that had applied)";
            }
            if (code == CRASH) {
                Lcp.log(type + " " + id + " failed:");
                e.printStackTrace();
            }
            Lcp.sendError(id, code, text);
            return;
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        String said = REFUSALS.get(type);
        if (said != null && Boolean.FALSE.equals(res.get(said)) && tookMs >= notHeldWithinMs) {
            // The same doubt as a late not-held: a resent tryRelease / trySetPermits / trySetCount / forceUnlock
            // whose first copy applied answers false.
            Lcp.sendError(id, CRASH, type + " answered " + said + "=false after " + tookMs
                    + " ms: Redisson may have resent a call that had applied");
            return;
        }
        Map<String, Object> ok = Lcp.reply(type + "_ok", id);
        ok.putAll(res);
        Lcp.send(ok);
    }

    /** Requests whose false answer means "it did not apply", and the reply field that carries it. */
    private static final Map<String, String> REFUSALS = Map.of("release_permit", "released", "set_permits", "set",
            "set_count", "set", "force_unlock", "released");

    private Map<String, Object> handle(String type, Map<String, Object> m) throws Exception {
        Map<String, Object> r = new LinkedHashMap<>();
        RedissonClient c = clients.get(0);
        switch (type) {
            case "acquire": {
                RLock lock = lock(m);
                long wait = num(m, "wait_ms");
                long lease = num(m, "lease_ms");
                // lease 0: no fixed lease, so -1 and Redisson's watchdog keeps the lock.
                long l = lease > 0 ? lease : -1;
                if (kind.equals("fenced")) {
                    Long token = (Long) FENCED_TRY.invoke(lock, wait, l, TimeUnit.MILLISECONDS);
                    r.put("granted", token != null);
                    if (token != null) {
                        r.put("token", token);
                    }
                } else {
                    r.put("granted", api.acquire(lock, wait, lease));
                }
                return r;
            }
            case "release":
                lock(m).unlock();
                return r;
            case "held":
                // On this protocol thread's own Java thread (dispatch), which is what "current thread" means.
                r.put("held", crossThreadLock(m, type).isHeldByCurrentThread());
                return r;
            case "is_locked":
                r.put("locked", crossThreadLock(m, type).isLocked());
                return r;
            case "force_unlock":
                r.put("released", crossThreadLock(m, type).forceUnlock());
                return r;
            case "extend":
                throw new Failure(NOT_SUPPORTED, "Redisson has no extend: its watchdog renews locks taken without a lease");
            case "set_permits": {
                String key = str(m, "key");
                int n = count(m);
                if (kind.equals("semaphore")) {
                    r.put("set", c.getSemaphore(key).trySetPermits(n));
                } else if (kind.equals("expirable-semaphore")) {
                    r.put("set", c.getPermitExpirableSemaphore(key).trySetPermits(n));
                } else {
                    throw wrongKind(type);
                }
                return r;
            }
            case "acquire_permits": {
                RSemaphore s = semaphore(m, type);
                int n = count(m);
                r.put("granted", s.tryAcquire(n, num(m, "wait_ms"), TimeUnit.MILLISECONDS));
                return r;
            }
            case "release_permits": {
                RSemaphore s = semaphore(m, type);
                s.release(count(m));
                return r;
            }
            case "acquire_permit": {
                RPermitExpirableSemaphore s = expirable(m, type);
                long wait = num(m, "wait_ms");
                long lease = num(m, "lease_ms");
                // lease 0: a permit without a lease (held until released); Redisson has no watchdog here.
                String p = lease > 0 ? s.tryAcquire(wait, lease, TimeUnit.MILLISECONDS)
                        : s.tryAcquire(wait, TimeUnit.MILLISECONDS);
                r.put("permit", p == null ? "" : p);
                return r;
            }
            case "release_permit": {
                RPermitExpirableSemaphore s = expirable(m, type);
                r.put("released", s.tryRelease(str(m, "permit")));
                return r;
            }
            case "available": {
                String key = str(m, "key");
                if (kind.equals("semaphore")) {
                    r.put("value", c.getSemaphore(key).availablePermits());
                } else if (kind.equals("expirable-semaphore")) {
                    r.put("value", c.getPermitExpirableSemaphore(key).availablePermits());
                } else if (kind.equals("latch")) {
                    // Not in the protocol's table for latches: the count, which is what a latch has available.
                    r.put("value", c.getCountDownLatch(key).getCount());
                } else {
                    throw wrongKind(type);
                }
                return r;
            }
            case "set_count": {
                RCountDownLatch l = latch(m, type);
                r.put("set", l.trySetCount(num(m, "n")));
                return r;
            }
            case "count_down":
                latch(m, type).countDown();
                return r;
            case "await":
                r.put("done", latch(m, type).await(num(m, "wait_ms"), TimeUnit.MILLISECONDS));
                return r;
            default:
                throw new Failure(NOT_SUPPORTED, "unknown request type " + type);
        }
    }

    private Failure wrongKind(String type) {
        return new Failure(NOT_SUPPORTED, type + " does not apply to lock kind " + kind);
    }

    /** The lock of a held, is_locked or force_unlock request, for the kinds that list their caps. */
    private RLock crossThreadLock(Map<String, Object> m, String type) throws Exception {
        if (!CROSS_THREAD_KINDS.contains(kind)) {
            throw wrongKind(type);
        }
        return lock(m);
    }

    private RSemaphore semaphore(Map<String, Object> m, String type) throws Failure {
        if (!kind.equals("semaphore")) {
            throw wrongKind(type);
        }
        return clients.get(0).getSemaphore(str(m, "key"));
    }

    private RPermitExpirableSemaphore expirable(Map<String, Object> m, String type) throws Failure {
        if (!kind.equals("expirable-semaphore")) {
            throw wrongKind(type);
        }
        return clients.get(0).getPermitExpirableSemaphore(str(m, "key"));
    }

    private RCountDownLatch latch(Map<String, Object> m, String type) throws Failure {
        if (!kind.equals("latch")) {
            throw wrongKind(type);
        }
        return clients.get(0).getCountDownLatch(str(m, "key"));
    }

    /** The Redisson lock object a request names; a new object each time, as all state lives in Redis and the client. */
    private RLock lock(Map<String, Object> m) throws Exception {
        List<String> keys = keys(m);
        RedissonClient c = clients.get(0);
        switch (kind) {
            case "reentrant":
                return c.getLock(one(keys));
            case "fair":
                return c.getFairLock(one(keys));
            case "fenced":
                return (RLock) FENCED_LOCK.invoke(c, one(keys));
            case "multi": {
                RLock[] members = new RLock[keys.size()];
                for (int i = 0; i < members.length; i++) {
                    members[i] = c.getLock(keys.get(i));
                }
                return c.getMultiLock(members);
            }
            case "redlock": {
                // Every key on every master, each master through its own Redisson (the usual group is one key
                // on each of N masters); on a one-node topology, the keys on that node.
                List<RLock> members = new ArrayList<>();
                for (RedissonClient rc : clients) {
                    for (String k : keys) {
                        members.add(rc.getLock(k));
                    }
                }
                return new RedissonRedLock(members.toArray(new RLock[0]));
            }
            case "rwlock": {
                RReadWriteLock rw = c.getReadWriteLock(one(keys));
                Object mode = m.get("mode");
                if ("read".equals(mode)) {
                    return rw.readLock();
                }
                if ("write".equals(mode)) {
                    return rw.writeLock();
                }
                throw new Failure(MALFORMED, "mode must be read or write for rwlock");
            }
            default:
                throw wrongKind(m.get("type") + "");
        }
    }

    // ---- errors ----

    private static Throwable unwrap(Throwable e) {
        while ((e instanceof InvocationTargetException || e instanceof UndeclaredThrowableException
                || e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    private static boolean isA(Throwable t, String className) {
        for (Class<?> c = t.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(className)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The protocol code of a failure. Definite codes only where the library says nothing took effect
     * (IllegalMonitorStateException from unlock, our own checks); every Redis or connection failure is
     * indefinite, because Redisson may have written the command, or retried one it had written.
     */
    static int code(Throwable e) {
        Throwable top = unwrap(e);
        if (top instanceof Failure) {
            return ((Failure) top).code;
        }
        if (top instanceof IllegalMonitorStateException) {
            return NOT_HELD;
        }
        for (Throwable t = top; t != null; t = t.getCause() == t ? null : t.getCause()) {
            t = unwrap(t);
            // 3.17+ throws NoSyncedSlavesException; 3.16.7 to 3.16.x an IllegalStateException saying how many
            // replicas were synced; RedisWaitException is Redis refusing the WAIT after the script ran.
            if (isA(t, "org.redisson.command.NoSyncedSlavesException") || isA(t, "org.redisson.client.RedisWaitException")
                    || (t instanceof IllegalStateException && String.valueOf(t.getMessage()).contains("slaves were synced"))) {
                return NO_SYNC;
            }
            if (isA(t, "org.redisson.client.RedisTimeoutException")) {
                return TIMEOUT;
            }
        }
        return CRASH;
    }

    static String text(Throwable e) {
        Throwable t = unwrap(e);
        if (t instanceof Failure) {
            return t.getMessage();
        }
        StringBuilder b = new StringBuilder(t.getClass().getSimpleName()).append(": ").append(t.getMessage());
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != t) {
            b.append(" (cause: ").append(root.getClass().getSimpleName()).append(": ").append(root.getMessage()).append(')');
        }
        return b.toString();
    }

    /** Shuts every Redisson instance down at once, each bounded; releases nothing. */
    void close() {
        List<Thread> ts = new ArrayList<>();
        for (RedissonClient c : clients) {
            Thread t = new Thread(() -> {
                try {
                    c.shutdown(0, 2, TimeUnit.SECONDS);
                } catch (Throwable e) {
                    Lcp.log("shutdown: " + text(e));
                }
            }, "lockcheck-close");
            t.setDaemon(true);
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
