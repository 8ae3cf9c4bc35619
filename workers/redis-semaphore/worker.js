'use strict';
// The lockcheck worker for npm redis-semaphore, speaking LCP/1 (docs/protocol.md): newline JSON on stdin/stdout,
// logs on stderr. One ioredis client per node shared by every protocol thread (promises on the one event loop).
// The lock family picks the class (redlock topology: its Redlock twin):
//   mutex               Mutex / RedlockMutex, a new one per acquire, kept per (thread, key);
//   semaphore           Semaphore / RedlockSemaphore (MultiSemaphore / RedlockMultiSemaphore for n > 1 or the
//                       `multi` option), refreshed by the library (its watchdog), a hold kept per (thread, key);
//   expirable-semaphore Semaphore / RedlockSemaphore (Multi… with `multi`) with a fixed lease (the permit's
//                       lease_ms, no refresh), the permit's id being the library's identifier.
// Each grant's onLockLost sends a `lost` event for that thread and key.

const lcp = require('./lcp');
const { TIMEOUT, NOT_SUPPORTED, UNAVAILABLE, MALFORMED, CRASH, NOT_HELD, ProtoError, send, slot } = lcp;

const sem = require('redis-semaphore');
const Redis = require('ioredis');

// mutex before the semaphores: a kind probe picks the first kind lockcheck knows (the worker's own lock).
const KINDS = ['redis-semaphore', 'mutex', 'semaphore', 'expirable-semaphore'];
const FAMILY = { 'redis-semaphore': 'mutex', mutex: 'mutex', semaphore: 'semaphore', 'expirable-semaphore': 'expirable-semaphore' };
const NUMERIC = ['refreshInterval', 'retryInterval', 'multi'];
// acquireAttemptsLimit and tryAcquire() came with redis-semaphore 5.1.
const ATTEMPTS = 'acquireAttemptsLimit' in sem.defaultTimeoutOptions;

let cfg = null; // set by init
const held = new Map(); // mutex: `${thread}\n${key}` -> the Mutex of that owner's last grant
const holds = new Map(); // semaphore: `${thread}\n${key}` -> [{lock, n}], that owner's holds, oldest first
const permits = new Map(); // expirable-semaphore: permit id (the library's identifier) -> its lock

function init(m) {
  const o = m.options || {}, lk = m.lock || {};
  const family = lk.kind ? FAMILY[lk.kind] : (lk.family || 'mutex');
  if (lk.kind && !family) throw new ProtoError(NOT_SUPPORTED, `lock kind ${lk.kind}: this worker drives ${KINDS.join(', ')}`);
  if (lk.family && lk.family !== family) throw new ProtoError(NOT_SUPPORTED, `lock family ${lk.family}: kind ${lk.kind} is family ${family}`);
  const settings = {};
  for (const [k, v] of Object.entries(m.library_options || {})) {
    if (!NUMERIC.includes(k)) throw new ProtoError(MALFORMED, `unknown library option ${k} (the worker takes ${NUMERIC.join(', ')})`);
    const n = Number(v);
    if (String(v).trim() === '' || !Number.isFinite(n) || n < 0) throw new ProtoError(MALFORMED, `library option ${k}=${v} is not a non-negative number`);
    settings[k] = n;
  }
  const counted = family !== 'mutex';
  if (settings.multi !== undefined && (!counted || !Number.isInteger(settings.multi) || settings.multi < 1)) {
    throw new ProtoError(MALFORMED, `library option multi=${settings.multi}: a whole number of MultiSemaphore permits per lockcheck permit, for lock semaphore or expirable-semaphore`);
  }
  // The library's limit is a constructor argument of every instance, not a value in Redis: lockcheck's
  // --permits, which init carries for the counted families.
  if (counted && !(Number.isInteger(o.permits) && o.permits > 0)) {
    throw new ProtoError(MALFORMED, `init without options.permits: redis-semaphore's limit is each instance's (lockcheck sends --permits)`);
  }
  const timeout = o.timeout_ms > 0 ? o.timeout_ms : 3000;
  const clients = lcp.clientsFor(Redis, m, timeout, ['single', 'sentinel', 'redlock']);
  const redlock = m.topology.kind === 'redlock';
  cfg = {
    clients, settings, timeout, redlock, family, limit: o.permits, scale: settings.multi || 1,
    // The refresh sets lockTimeout again every refreshInterval (the library's default: 0.8 × lockTimeout):
    // lockTimeout is watchdog_ms, as protocol.md asks, so the ratio the library ships with is the one tested.
    watchdog: o.watchdog_ms > 0 ? o.watchdog_ms : 30000,
    lease: o.lease_ms > 0 ? o.lease_ms : 0,
  };
  const cls = className(family, settings.multi > 1);
  return {
    clients,
    ok: { library: 'redis-semaphore', version: lcp.installed(__dirname, 'redis-semaphore'),
      runtime: `node ${process.versions.node}, ioredis ${lcp.installed(__dirname, 'ioredis')}, ${cls}`,
      // A fixed-lease permit is never refreshed: no watchdog, and no loss for onLockLost to see.
      kinds: KINDS, caps: family === 'expirable-semaphore' ? [] : ['watchdog', 'events'] },
  };
}

// className is the library's class for a family (multi: MultiSemaphore), Redlock's on topology redlock.
function className(family, multi) {
  const base = family === 'mutex' ? 'Mutex' : (multi ? 'MultiSemaphore' : 'Semaphore');
  return cfg && cfg.redlock ? `Redlock${base}` : base;
}

// An ioredis failure: a command timeout may have run; a command never written (offline queue) did not.
function failure(e) {
  if (e instanceof ProtoError) return e;
  const msg = String((e && e.message) || e);
  // \btimeout: not the library's own lockTimeout, which a script error names.
  if (/Command timed out|ETIMEDOUT|\btimeout/i.test(msg)) return new ProtoError(TIMEOUT, msg);
  if (/enableOfflineQueue|Stream isn't writeable/.test(msg)) return new ProtoError(UNAVAILABLE, msg);
  return new ProtoError(CRASH, `${(e && e.name) || 'Error'}: ${msg}`);
}

// options are one acquire's: lockTimeout `lease` (refreshed at the library's 0.8 of it, or the refreshInterval
// option, when `refresh`; never when not), acquireTimeout wait_ms, onLockLost a `lost` event for thread, key.
function options(m, key, lease, refresh) {
  const opts = {
    lockTimeout: lease,
    // wait_ms 0 is one attempt (acquireAttemptsLimit 1, from 5.1; before it, a window of one retryInterval);
    // else attempts every retryInterval until acquireTimeout (the library's loop).
    acquireTimeout: m.wait_ms > 0 ? m.wait_ms : (ATTEMPTS ? Math.max(cfg.timeout, 1000) : (cfg.settings.retryInterval ?? 10)),
    onLockLost: (err) => send({ type: 'event', event: 'lost', thread: m.thread, key, text: String(err && err.message) }),
  };
  if (ATTEMPTS) opts.acquireAttemptsLimit = m.wait_ms > 0 ? Number.POSITIVE_INFINITY : 1;
  if (cfg.settings.retryInterval !== undefined) opts.retryInterval = cfg.settings.retryInterval;
  if (!refresh) opts.refreshInterval = 0;
  else if (cfg.settings.refreshInterval !== undefined) opts.refreshInterval = cfg.settings.refreshInterval;
  return opts;
}

// semaphore makes the library's semaphore of key taking n lockcheck permits: a (Redlock)Semaphore for one, a
// (Redlock)MultiSemaphore otherwise, each lockcheck permit `scale` of its permits out of limit × scale (so that
// k holders fit exactly when k × n fit in --permits, whatever the scale).
function semaphore(key, n, opts) {
  const target = cfg.redlock ? cfg.clients : cfg.clients[0];
  if (n === 1 && cfg.scale === 1) return new (cfg.redlock ? sem.RedlockSemaphore : sem.Semaphore)(target, key, cfg.limit, opts);
  return new (cfg.redlock ? sem.RedlockMultiSemaphore : sem.MultiSemaphore)(target, key, cfg.limit * cfg.scale, n * cfg.scale, opts);
}

// take runs the library's tryAcquire (before 5.1: acquire(), whose TimeoutError is a refusal).
async function take(lock) {
  try {
    if (typeof lock.tryAcquire === 'function') return !!(await lock.tryAcquire());
    await lock.acquire();
    return true;
  } catch (e) {
    if (e && e.constructor && e.constructor.name === 'TimeoutError' && /timeout$/.test(e.message)) return false;
    throw failure(e);
  }
}

async function drop(lock) {
  try { await lock.release(); } catch (e) { throw failure(e); }
}

function family(want) {
  if (cfg.family !== want) throw new ProtoError(NOT_SUPPORTED, `this run drives family ${cfg.family}, not ${want}`);
}

function keyOf(m) {
  slot({ thread: m.thread, keys: [m.key] }); // checks thread and key
  return m.key;
}

async function acquire(m) {
  family('mutex');
  const id = slot(m), key = m.keys[0];
  // lease_ms 0: the library's refresh keeps the lock (lockTimeout watchdog_ms, refreshed every 0.8 of it, or the
  // refreshInterval option); a lease: lockTimeout is that lease, never refreshed (refreshInterval 0).
  const opts = options(m, key, m.lease_ms > 0 ? m.lease_ms : cfg.watchdog, !(m.lease_ms > 0));
  const mu = cfg.redlock ? new sem.RedlockMutex(cfg.clients, key, opts) : new sem.Mutex(cfg.clients[0], key, opts);
  const granted = await take(mu);
  if (granted) held.set(id, mu);
  return { granted };
}

async function release(m) {
  family('mutex');
  const id = slot(m);
  const mu = held.get(id);
  // release() stops the refresh and runs its delete-if-equal script only when the Mutex thinks it holds the
  // lock; it returns nothing either way (so an owner without a grant, or one told of a loss, is answered ok).
  if (!mu) return {};
  await drop(mu);
  held.delete(id);
  return {};
}

// set_permits: the library has no such call; its limit is every instance's constructor argument, init's
// permits. The request is answered set when it names that limit (lockcheck's one set-up call per key).
async function setPermits(m) {
  if (cfg.family === 'mutex') family('semaphore');
  keyOf(m);
  if (m.n !== cfg.limit) throw new ProtoError(MALFORMED, `set_permits ${m.n}: the worker's limit is init's permits, ${cfg.limit}`);
  return { set: true };
}

async function acquirePermits(m) {
  family('semaphore');
  const key = keyOf(m), n = m.n > 0 ? m.n : 1;
  // No lease in the request: the library's refresh keeps the permits (lockTimeout watchdog_ms), or, with
  // --lease, lockTimeout is that lease and nothing refreshes it.
  const lock = semaphore(key, n, options(m, key, cfg.lease || cfg.watchdog, !cfg.lease));
  const granted = await take(lock);
  if (granted) {
    const id = `${m.thread}\n${key}`;
    holds.set(id, [...(holds.get(id) || []), { lock, n }]);
  }
  return { granted };
}

async function releasePermits(m) {
  family('semaphore');
  const key = keyOf(m), n = m.n > 0 ? m.n : 1, id = `${m.thread}\n${key}`;
  const mine = holds.get(id) || [];
  const i = mine.findIndex((h) => h.n === n);
  // The library releases only what an instance took: a thread holding no n permits of key has nothing to call.
  if (i < 0) throw new ProtoError(NOT_HELD, `thread ${m.thread} holds no ${n} permits of ${key}`);
  await drop(mine[i].lock);
  mine.splice(i, 1);
  if (mine.length === 0) holds.delete(id);
  return {};
}

async function acquirePermit(m) {
  family('expirable-semaphore');
  const key = keyOf(m);
  if (!(m.lease_ms > 0)) throw new ProtoError(NOT_SUPPORTED, 'acquire_permit without lease_ms: a fixed-lease permit needs one');
  const lock = semaphore(key, 1, options(m, key, m.lease_ms, false));
  if (!(await take(lock))) return { permit: '' };
  permits.set(lock.identifier, lock);
  return { permit: lock.identifier };
}

async function releasePermit(m) {
  family('expirable-semaphore');
  keyOf(m);
  const lock = typeof m.permit === 'string' ? permits.get(m.permit) : undefined;
  if (!lock) return { released: false }; // not a permit this worker was granted: the library has nothing to release
  // release() returns nothing: released is what the library says of the permit, its isAcquired (never
  // refreshed, a fixed-lease permit stays "acquired" after its lease ran out: its user is not told).
  const was = lock.isAcquired;
  await drop(lock);
  permits.delete(m.permit);
  return { released: !!was };
}

// available: not a library call (the library has none). The worker reads the library's sorted set the way its
// acquire script judges it: limit − members newer than now − lockTimeout, in lockcheck permits; on redlock,
// what a majority of the masters would still grant. A read only: nothing is removed.
const COUNT = `return redis.call('zcount', KEYS[1], '(' .. ARGV[1], '+inf')`;
async function available(m) {
  if (cfg.family === 'mutex') family('semaphore');
  const key = keyOf(m);
  const lease = cfg.lease || cfg.watchdog; // the lockTimeout the run's acquires use (a range: its lower bound)
  const since = Date.now() - lease;
  const reads = await Promise.allSettled(cfg.clients.map((c) => c.eval(COUNT, 1, `semaphore:${key}`, since)));
  const free = reads.filter((r) => r.status === 'fulfilled').map((r) => cfg.limit - Math.ceil(Number(r.value) / cfg.scale));
  const quorum = Math.floor(cfg.clients.length / 2) + 1;
  if (free.length < quorum) throw failure(reads.find((r) => r.status === 'rejected').reason);
  free.sort((a, b) => b - a);
  return { value: Math.max(free[quorum - 1], 0) };
}

// Release nothing at exit: stop the refresh timers (lcp closes the connections).
function close() {
  const locks = [...held.values(), ...permits.values()];
  for (const hs of holds.values()) for (const h of hs) locks.push(h.lock);
  for (const l of locks) (l.stopRefresh || l._stopRefresh).call(l);
}

lcp.serve({ init, handlers: { acquire, release, set_permits: setPermits, acquire_permits: acquirePermits,
  release_permits: releasePermits, acquire_permit: acquirePermit, release_permit: releasePermit, available }, close });
