package lockcheck;

import java.util.concurrent.TimeUnit;
import org.redisson.api.RLock;

/**
 * The RLock call acquire makes (library option {@code api=FORM[:UNIT]}). The default is tryLock(wait, lease,
 * MILLISECONDS); the other forms are there because some Redisson bugs live only in them (RedissonMultiLock's
 * lock(lease, unit) and lockInterruptibly(lease, unit) convert the unit themselves, RedissonFairLock's
 * tryLockAsync gives up through another path than tryLock). UNIT is a TimeUnit name: the request's lease_ms
 * and wait_ms are handed over in that unit, so lock(10, SECONDS) is exactly what a user would write.
 */
final class Api {
    enum Form {
        TRY_LOCK("tryLock"),
        /** lock(lease, unit), or lock() for lease 0: blocks until granted, wait_ms is not used. */
        LOCK("lock"),
        /** lockInterruptibly(lease, unit), or lockInterruptibly() for lease 0: the same. */
        LOCK_INTERRUPTIBLY("lockInterruptibly"),
        /** tryLockAsync(wait, lease, unit), then waits for the future on the protocol thread. */
        TRY_LOCK_ASYNC("tryLockAsync");

        final String name;

        Form(String name) {
            this.name = name;
        }
    }

    final Form form;
    final TimeUnit unit;

    private Api(Form form, TimeUnit unit) {
        this.form = form;
        this.unit = unit;
    }

    static Api parse(Object value) throws Worker.Failure {
        if (value == null) {
            return new Api(Form.TRY_LOCK, TimeUnit.MILLISECONDS);
        }
        String v = String.valueOf(value);
        String f = v;
        TimeUnit unit = TimeUnit.MILLISECONDS;
        int colon = v.indexOf(':');
        if (colon >= 0) {
            f = v.substring(0, colon);
            try {
                unit = TimeUnit.valueOf(v.substring(colon + 1));
            } catch (IllegalArgumentException e) {
                throw new Worker.Failure(Worker.NOT_SUPPORTED, "library option api=" + v + ": " + v.substring(colon + 1)
                        + " is not a TimeUnit (MILLISECONDS, SECONDS, ...)");
            }
        }
        for (Form form : Form.values()) {
            if (form.name.equals(f)) {
                return new Api(form, unit);
            }
        }
        // Not supported (10), as an unknown setter is: lockcheck takes it for bad input, not a harness failure.
        throw new Worker.Failure(Worker.NOT_SUPPORTED, "library option api=" + v
                + ": want tryLock, lock, lockInterruptibly or tryLockAsync, optionally :UNIT");
    }

    /** ms in this form's unit; a value the unit cannot carry exactly is refused rather than rounded. */
    private long in(long ms, String field) throws Worker.Failure {
        long one = unit.toMillis(1);
        if (one == 0 || ms % one != 0) {
            throw new Worker.Failure(Worker.MALFORMED, field + " " + ms + " is not a whole number of " + unit);
        }
        return ms / one;
    }

    /** Acquires lock with the request's wait and lease (ms; lease 0: none, so the watchdog). */
    boolean acquire(RLock lock, long waitMs, long leaseMs) throws Exception {
        long lease = leaseMs > 0 ? in(leaseMs, "lease_ms") : -1;
        switch (form) {
            case LOCK:
                if (lease > 0) {
                    lock.lock(lease, unit);
                } else {
                    lock.lock();
                }
                return true;
            case LOCK_INTERRUPTIBLY:
                if (lease > 0) {
                    lock.lockInterruptibly(lease, unit);
                } else {
                    lock.lockInterruptibly();
                }
                return true;
            case TRY_LOCK_ASYNC:
                return lock.tryLockAsync(in(waitMs, "wait_ms"), lease, unit).get();
            default:
                return lock.tryLock(in(waitMs, "wait_ms"), lease, unit);
        }
    }

    @Override
    public String toString() {
        return unit == TimeUnit.MILLISECONDS ? form.name : form.name + ":" + unit;
    }
}
