'use strict';
// The lockcheck worker for npm redis-semaphore's Mutex and RedlockMutex, speaking LCP/1 (docs/protocol.md):
// newline JSON on stdin/stdout, logs on stderr. One ioredis client per node shared by every protocol thread
// (promises on the one event loop); a new Mutex (or RedlockMutex, on topology redlock) per acquire, kept per
// (thread, key), whose onLockLost sends a `lost` event for that thread and key.

const lcp = require('./lcp');
const { TIMEOUT, NOT_SUPPORTED, UNAVAILABLE, MALFORMED, CRASH, ProtoError, send, slot } = lcp;

const sem = require('redis-semaphore');
const Redis = require('ioredis');

const KINDS = ['redis-semaphore', 'mutex'];
const NUMERIC = ['refreshInterval', 'retryInterval'];
// acquireAttemptsLimit and tryAcquire() came with redis-semaphore 5.1.
const ATTEMPTS = 'acquireAttemptsLimit' in sem.defaultTimeoutOptions;

let cfg = null; // set by init
const held = new Map(); // `${thread}\n${key}` -> the Mutex of that owner's last grant

function init(m) {
  const o = m.options || {}, lk = m.lock || {};
  if (lk.family && lk.family !== 'mutex') throw new ProtoError(NOT_SUPPORTED, `lock family ${lk.family}: this worker drives redis-semaphore's Mutex and RedlockMutex`);
  if (lk.kind && !KINDS.includes(lk.kind)) throw new ProtoError(NOT_SUPPORTED, `lock kind ${lk.kind}: this worker drives ${KINDS.join(', ')}`);
  const settings = {};
  for (const [k, v] of Object.entries(m.library_options || {})) {
    if (!NUMERIC.includes(k)) throw new ProtoError(MALFORMED, `unknown library option ${k} (the worker takes ${NUMERIC.join(', ')})`);
    const n = Number(v);
    if (String(v).trim() === '' || !Number.isFinite(n) || n < 0) throw new ProtoError(MALFORMED, `library option ${k}=${v} is not a number of ms`);
    settings[k] = n;
  }
  const timeout = o.timeout_ms > 0 ? o.timeout_ms : 3000;
  const clients = lcp.clientsFor(Redis, m, timeout, ['single', 'sentinel', 'redlock']);
  cfg = {
    clients, settings, timeout, redlock: m.topology.kind === 'redlock',
    // The refresh sets lockTimeout again every refreshInterval (the library's default: 0.8 × lockTimeout):
    // lockTimeout is watchdog_ms, as protocol.md asks, so the ratio the library ships with is the one tested.
    watchdog: o.watchdog_ms > 0 ? o.watchdog_ms : 30000,
  };
  return {
    clients,
    ok: { library: 'redis-semaphore', version: lcp.installed(__dirname, 'redis-semaphore'),
      runtime: `node ${process.versions.node}, ioredis ${lcp.installed(__dirname, 'ioredis')}, ${cfg.redlock ? 'RedlockMutex' : 'Mutex'}`,
      kinds: KINDS, caps: ['watchdog', 'events'] },
  };
}

// An ioredis failure: a command timeout may have run; a command never written (offline queue) did not.
function failure(e) {
  if (e instanceof ProtoError) return e;
  const msg = String((e && e.message) || e);
  if (/Command timed out|ETIMEDOUT|timeout/i.test(msg)) return new ProtoError(TIMEOUT, msg);
  if (/enableOfflineQueue|Stream isn't writeable/.test(msg)) return new ProtoError(UNAVAILABLE, msg);
  return new ProtoError(CRASH, `${(e && e.name) || 'Error'}: ${msg}`);
}

async function acquire(m) {
  const id = slot(m), key = m.keys[0];
  // lease_ms 0: the library's refresh keeps the lock (lockTimeout watchdog_ms, refreshed every 0.8 of it, or the
  // refreshInterval option); a lease: lockTimeout is that lease, never refreshed (refreshInterval 0).
  const lease = m.lease_ms > 0 ? m.lease_ms : cfg.watchdog;
  const opts = {
    lockTimeout: lease,
    // wait_ms 0 is one attempt (acquireAttemptsLimit 1, from 5.1; before it, a window of one retryInterval);
    // else attempts every retryInterval until acquireTimeout (the library's loop).
    acquireTimeout: m.wait_ms > 0 ? m.wait_ms : (ATTEMPTS ? Math.max(cfg.timeout, 1000) : (cfg.settings.retryInterval ?? 10)),
    onLockLost: (err) => send({ type: 'event', event: 'lost', thread: m.thread, key, text: String(err && err.message) }),
  };
  if (ATTEMPTS) opts.acquireAttemptsLimit = m.wait_ms > 0 ? Number.POSITIVE_INFINITY : 1;
  if (cfg.settings.retryInterval !== undefined) opts.retryInterval = cfg.settings.retryInterval;
  if (m.lease_ms > 0) opts.refreshInterval = 0;
  else if (cfg.settings.refreshInterval !== undefined) opts.refreshInterval = cfg.settings.refreshInterval;
  const mu = cfg.redlock ? new sem.RedlockMutex(cfg.clients, key, opts) : new sem.Mutex(cfg.clients[0], key, opts);
  let granted;
  try {
    if (typeof mu.tryAcquire === 'function') granted = await mu.tryAcquire();
    else granted = await mu.acquire().then(() => true); // before 5.1: acquire() throws TimeoutError when not granted
  } catch (e) {
    if (e && e.constructor && e.constructor.name === 'TimeoutError' && /timeout$/.test(e.message)) granted = false;
    else throw failure(e);
  }
  if (granted) held.set(id, mu);
  return { granted: !!granted };
}

async function release(m) {
  const id = slot(m);
  const mu = held.get(id);
  // release() stops the refresh and runs its delete-if-equal script only when the Mutex thinks it holds the
  // lock; it returns nothing either way (so an owner without a grant, or one told of a loss, is answered ok).
  if (!mu) return {};
  try { await mu.release(); } catch (e) { throw failure(e); }
  held.delete(id);
  return {};
}

// Release nothing at exit: stop the refresh timers (lcp closes the connections).
lcp.serve({ init, handlers: { acquire, release },
  close: () => { for (const mu of held.values()) (mu.stopRefresh || mu._stopRefresh).call(mu); } });
