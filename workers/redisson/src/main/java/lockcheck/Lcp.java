package lockcheck;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The output side of LCP/1 (docs/protocol.md) for the Java workers: one JSON object a line on the protocol's
 * stdout, logs on stderr. Shared with the Spring Integration worker, whose build copies this file and Json.java.
 */
final class Lcp {
    /** The protocol's stdout. System.out is pointed at stderr so that nothing else can write here. */
    private static PrintStream out;

    private Lcp() {
    }

    /** Takes stdout for the protocol; call first in main. */
    static void claimStdout() {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
    }

    /** Writes one message; synchronized because every request thread replies through it. */
    static synchronized void send(Map<String, Object> m) {
        out.print(Json.write(m));
        out.print('\n');
        out.flush();
    }

    static Map<String, Object> reply(String type, Object inReplyTo) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", type);
        m.put("in_reply_to", inReplyTo);
        return m;
    }

    static void sendError(Object inReplyTo, int code, String text) {
        Map<String, Object> m = reply("error", inReplyTo);
        m.put("code", code);
        m.put("text", text == null ? "" : text);
        send(m);
    }

    static void log(String s) {
        System.err.println("lockcheck-worker: " + s);
    }

    static void flush() {
        out.flush();
    }
}
