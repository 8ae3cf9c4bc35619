package lockcheck;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Redisson settings by name, through reflection: setters come and go across versions (fairLockWaitTimeout
 * since 3.46, checkLockSyncedSlaves since 3.17, a NatMapper in 3.16.6 but not 3.11.6), so the worker asks
 * the classes it runs with instead of compiling against one version's.
 */
final class Options {
    private static final Object NO = new Object();

    private Options() {
    }

    /**
     * Sets option name to value on the server config (timeout, retryAttempts, ...) or, failing that, on the
     * Config (lockWatchdogTimeout, checkLockSyncedSlaves, ...). An option neither has is not-supported.
     */
    static void set(Object config, Object server, String name, String value) throws Worker.Failure {
        if (name.isEmpty()) {
            throw new Worker.Failure(Worker.MALFORMED, "library option with an empty name");
        }
        String setter = "set" + Character.toUpperCase(name.charAt(0)) + name.substring(1);
        // Newer versions move some settings (password) from the server config to Config and deprecate the
        // old setter, which then logs a warning: the first setter not deprecated wins, else the first.
        Method use = null;
        Object on = null;
        Object arg = null;
        Method seen = null;
        for (Object target : new Object[] {server, config}) {
            for (Method m : setters(target.getClass(), setter)) {
                seen = m;
                Object a = convert(value, m.getParameterTypes()[0]);
                if (a != NO && (use == null || (use.isAnnotationPresent(Deprecated.class)
                        && !m.isAnnotationPresent(Deprecated.class)))) {
                    use = m;
                    on = target;
                    arg = a;
                }
            }
        }
        if (use != null) {
            invoke(use, on, arg, name);
            return;
        }
        if (seen != null) {
            throw new Worker.Failure(Worker.MALFORMED, "library option " + name + ": cannot use '" + value + "' as "
                    + seen.getParameterTypes()[0].getSimpleName());
        }
        throw new Worker.Failure(Worker.NOT_SUPPORTED, "unknown library option " + name + " (redisson " + Worker.version()
                + " has no " + setter + ")");
    }

    /** Sets name when the server config has that setter, and does nothing when it has not. */
    static void setIfPresent(Object server, String name, String value) throws Worker.Failure {
        String setter = "set" + Character.toUpperCase(name.charAt(0)) + name.substring(1);
        for (Method m : setters(server.getClass(), setter)) {
            if (m.getParameterTypes()[0] == String.class) {
                invoke(m, server, value, name);
                return;
            }
        }
    }

    /** The value of a numeric getter (getTimeout, ...) of the config, or dflt when it has none. */
    static long getMs(Object config, String name, long dflt) {
        try {
            Method m = config.getClass().getMethod("get" + Character.toUpperCase(name.charAt(0)) + name.substring(1));
            m.setAccessible(true);
            Object v = m.invoke(config);
            return v instanceof Number ? ((Number) v).longValue() : dflt;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return dflt;
        }
    }

    private static List<Method> setters(Class<?> c, String name) {
        List<Method> out = new ArrayList<>();
        for (Method m : c.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 1 && !m.isBridge()) {
                out.add(m);
            }
        }
        return out;
    }

    private static void invoke(Method m, Object target, Object arg, String name) throws Worker.Failure {
        try {
            // The declaring class may be package-private (BaseConfig in 3.11) though the setter is public.
            m.setAccessible(true);
            m.invoke(target, arg);
        } catch (InvocationTargetException e) {
            throw new Worker.Failure(Worker.MALFORMED, "library option " + name + ": " + e.getCause().getMessage());
        } catch (IllegalAccessException e) {
            throw new Worker.Failure(Worker.NOT_SUPPORTED, "library option " + name + ": " + e.getMessage());
        }
    }

    /** value as an argument of type t, or NO when this setter cannot take it. */
    private static Object convert(String v, Class<?> t) {
        try {
            if (t == String.class) {
                return v;
            }
            if (t == int.class || t == Integer.class) {
                return Integer.parseInt(v.trim());
            }
            if (t == long.class || t == Long.class) {
                return Long.parseLong(v.trim());
            }
            if (t == double.class || t == Double.class) {
                return Double.parseDouble(v.trim());
            }
            if (t == float.class || t == Float.class) {
                return Float.parseFloat(v.trim());
            }
            if (t == boolean.class || t == Boolean.class) {
                String b = v.trim().toLowerCase();
                return b.equals("true") ? Boolean.TRUE : b.equals("false") ? Boolean.FALSE : NO;
            }
            if (t == Duration.class) {
                return Duration.ofMillis(Long.parseLong(v.trim()));
            }
            if (t.isEnum()) {
                for (Object c : t.getEnumConstants()) {
                    if (((Enum<?>) c).name().equalsIgnoreCase(v.trim())) {
                        return c;
                    }
                }
            }
        } catch (NumberFormatException e) {
            return NO;
        }
        return NO;
    }

    /**
     * Makes server (a Sentinel or Cluster config) dial every address a node or Sentinel announces through nat,
     * i.e. through this client's own proxies: a NatMapper where the version has one (in org.redisson.api, later
     * org.redisson.config), else the older natMap, which Cluster mode keys by "host:port" (Sentinel mode by host
     * only, which cannot tell lockcheck's proxies apart: refused).
     */
    static void nat(Object server, Map<String, String> nat, boolean sentinel) throws Worker.Failure {
        if (nat.isEmpty()) {
            return;
        }
        Class<?> mapper = null;
        for (String n : new String[] {"org.redisson.config.NatMapper", "org.redisson.api.NatMapper"}) {
            try {
                mapper = Class.forName(n);
                break;
            } catch (ClassNotFoundException e) {
                // try the next
            }
        }
        if (mapper == null && sentinel) {
            // Before NatMapper, Sentinel mode's natMap maps a host to a host and keeps the port, and every
            // lockcheck proxy is on 127.0.0.1: the announced addresses cannot be mapped to the client's links.
            throw new Worker.Failure(Worker.NOT_SUPPORTED, "redisson " + Worker.version() + " has no NatMapper and its "
                    + "Sentinel natMap maps hosts only, not ports: the sentinel topology needs a version with NatMapper");
        }
        try {
            if (mapper != null) {
                Object proxy = Proxy.newProxyInstance(Options.class.getClassLoader(), new Class<?>[] {mapper},
                        (p, m, a) -> {
                            switch (m.getName()) {
                                case "map":
                                    return map(a[0], nat);
                                case "hashCode":
                                    return System.identityHashCode(p);
                                case "equals":
                                    return p == a[0];
                                case "toString":
                                    return "lockcheck-nat" + nat;
                                default:
                                    throw new UnsupportedOperationException(m.getName());
                            }
                        });
                server.getClass().getMethod("setNatMapper", mapper).invoke(server, proxy);
            } else {
                server.getClass().getMethod("setNatMap", Map.class).invoke(server, new HashMap<>(nat));
            }
        } catch (ReflectiveOperationException e) {
            throw new Worker.Failure(Worker.NOT_SUPPORTED, "cannot set Redisson's NAT mapping: " + e);
        }
    }

    /** Maps one RedisURI through nat by "host:port"; an address not in nat is dialled as it is. */
    private static Object map(Object uri, Map<String, String> nat) throws ReflectiveOperationException {
        Class<?> c = uri.getClass();
        String host = (String) c.getMethod("getHost").invoke(uri);
        int port = (Integer) c.getMethod("getPort").invoke(uri);
        String to = nat.get(host + ":" + port);
        if (to == null) {
            return uri;
        }
        String scheme = (String) c.getMethod("getScheme").invoke(uri);
        return c.getConstructor(String.class).newInstance(scheme + "://" + to);
    }
}
