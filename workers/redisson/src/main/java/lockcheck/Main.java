package lockcheck;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * An LCP/1 worker (docs/protocol.md) driving the real Redisson: requests on stdin, replies on stdout, one JSON
 * object a line; logs on stderr.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) throws Exception {
        Lcp.claimStdout();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Worker w = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> msg;
            try {
                Object v = Json.parse(line);
                if (!(v instanceof Map)) {
                    throw new IllegalArgumentException("not a JSON object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) v;
                msg = m;
            } catch (IllegalArgumentException e) {
                // Nothing to reply to: an error needs the msg_id this line did not give.
                Lcp.log("ignored a line that is not a JSON object (" + e.getMessage() + ")");
                continue;
            }
            Object id = msg.get("msg_id");
            if (!(id instanceof Long)) {
                Lcp.log("ignored a message without an integer msg_id: " + line);
                continue;
            }
            Object type = msg.get("type");
            if (!(type instanceof String)) {
                Lcp.sendError(id, Worker.MALFORMED, "no type");
                continue;
            }
            if (w == null) {
                if (!"init".equals(type)) {
                    Lcp.sendError(id, Worker.MALFORMED, "the first message must be init");
                    continue;
                }
                try {
                    w = Worker.init(msg);
                } catch (Worker.Failure f) {
                    Lcp.sendError(id, f.code, f.getMessage());
                    Lcp.log("init failed: " + f.getMessage());
                    exit(null, 1);
                }
                Map<String, Object> ok = Lcp.reply("init_ok", id);
                ok.putAll(w.hello());
                Lcp.send(ok);
                continue;
            }
            switch ((String) type) {
                case "init":
                    Lcp.sendError(id, Worker.MALFORMED, "init was already received");
                    break;
                case "shutdown":
                    Lcp.send(Lcp.reply("shutdown_ok", id));
                    exit(w, 0);
                    break;
                default:
                    w.dispatch(msg, id, (String) type);
            }
        }
        exit(w, 0);
    }

    /** Closes the Redisson clients (bounded: lockcheck kills us 5 s after asking) and exits with code. */
    private static void exit(Worker w, int code) {
        if (w != null) {
            Thread t = new Thread(w::close, "lockcheck-shutdown");
            t.setDaemon(true);
            t.start();
            try {
                t.join(3000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (t.isAlive()) {
                Lcp.log("the Redisson clients did not shut down within 3 s; exiting anyway");
            }
        }
        Lcp.flush();
        System.err.flush();
        // halt, not exit: no shutdown hook or non-daemon library thread may hold the process.
        Runtime.getRuntime().halt(code);
    }
}
