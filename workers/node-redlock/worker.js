'use strict';
// lockcheck's LCP/1 worker for npm `redlock` (Mike Marcacci's node-redlock) on ioredis: docs/protocol.md.
// One process per lockcheck client; requests on stdin, replies on stdout, logs on stderr. It drives the 4.x
// API (lock/extend/unlock) or the 5.x API (acquire/extend/release, and optionally using()), chosen by the
// major version of the redlock package installed next to it.

const lcp = require('./lcp'); // the protocol's codes, reply loop and ioredis clients, shared with redis-semaphore
const { TIMEOUT, NOT_SUPPORTED, UNAVAILABLE, MALFORMED, CRASH, NOT_HELD, log, send, ProtoError, slot } = lcp;

// The version comes from the installed package's metadata (5.x does not export its package.json, hence
// the path). 5.0.0-beta.2's says "v5.0.0-beta.2": the "v" is dropped so that it reads as npm's version.
const installed = (name) => lcp.installed(__dirname, name);
const VERSION = installed('redlock');
const MAJOR = parseInt(VERSION, 10);
if (!(MAJOR >= 4)) {
  log(`redlock ${VERSION}: this worker drives the 4.x and 5.x APIs only`);
}
const V5 = MAJOR >= 5;
const mod = require('redlock');
const Redlock = V5 ? mod.default : mod;
const Redis = require('ioredis');

const KINDS = ['node-redlock', 'mutex'];

// library_options this worker understands: redlock's settings (numbers) and using (5.x: "true" drives
// acquire through using(), whose automatic extension and abort signal become the watchdog and lost events).
const NUMERIC = ['driftFactor', 'retryCount', 'retryDelay', 'retryJitter'];
if (V5) NUMERIC.push('automaticExtensionThreshold');

// boolOption reads a true/false library option.
function boolOption(k, v) {
  if (!['true', 'false'].includes(String(v))) throw new ProtoError(MALFORMED, `library option ${k}=${v}: true or false`);
  return String(v) === 'true';
}

let cfg = null; // set by init
const held = new Map(); // `${thread}\n${key}` -> {lock} or {using: {...}}

function init(m) {
  if (MAJOR < 4) throw new ProtoError(NOT_SUPPORTED, `redlock ${VERSION}: only the 4.x and 5.x APIs are driven`);
  const o = m.options || {}, lk = m.lock || {};
  if (lk.family && lk.family !== 'mutex') throw new ProtoError(NOT_SUPPORTED, `lock family ${lk.family}: redlock is a mutex`);
  if (lk.kind && !KINDS.includes(lk.kind)) throw new ProtoError(NOT_SUPPORTED, `lock kind ${lk.kind}: this worker drives ${KINDS.join(', ')}`);
  const settings = {};
  let using = false, resend = true;
  for (const [k, v] of Object.entries(m.library_options || {})) {
    if (k === 'resend') { // ioredis's autoResendUnfulfilledCommands: resend what was in flight when a link dropped
      resend = boolOption(k, v);
      continue;
    }
    if (k === 'using') {
      using = boolOption(k, v);
      if (using && !V5) throw new ProtoError(NOT_SUPPORTED, `library option using: redlock ${VERSION} has no using() (5.x has)`);
      continue;
    }
    if (!NUMERIC.includes(k)) throw new ProtoError(MALFORMED, `unknown library option ${k} (redlock ${VERSION} takes ${NUMERIC.join(', ')}${V5 ? ', using' : ''}, resend)`);
    const n = Number(v);
    if (String(v).trim() === '' || !Number.isFinite(n)) throw new ProtoError(MALFORMED, `library option ${k}=${v} is not a number`);
    settings[k] = n;
  }
  const timeout = o.timeout_ms > 0 ? o.timeout_ms : 3000;
  // ioredis as the redlock READMEs set it up (one client per master on redlock), with lockcheck's timeout.
  const clients = lcp.clientsFor(Redis, m, timeout, ['single', 'redlock', 'sentinel', 'cluster']);
  for (const c of clients) c.options.autoResendUnfulfilledCommands = resend;
  const retryDelay = settings.retryDelay ?? 200;
  cfg = {
    clients, settings, using, timeout,
    // lease_ms 0: the run's --lease, else its watchdog period, as a fixed TTL.
    defaultLease: o.lease_ms > 0 ? o.lease_ms : (o.watchdog_ms > 0 ? o.watchdog_ms : 30000),
    watchdog: o.watchdog_ms > 0 ? o.watchdog_ms : 30000, // using()'s duration
    runLease: o.lease_ms > 0 ? o.lease_ms : 0, // the run's --lease, in lockcheck's hung bound (deadline)
    // tryLock with a wait: redlock retries retryCount times, retryDelay (± retryJitter) apart; an explicit
    // retryCount wins over wait_ms.
    retriesFor: (waitMs) => settings.retryCount ?? Math.floor(Math.max(0, waitMs || 0) / Math.max(1, retryDelay)),
  };
  return {
    clients,
    ok: { library: 'redlock', version: VERSION, runtime: `node ${process.versions.node}, ioredis ${installed('ioredis')}`,
      kinds: KINDS, caps: using ? ['watchdog', 'events'] : ['extend'] },
  };
}

// A Redlock instance per call over the shared connections: its error events (4.x: clientError, 5.x:
// error) are this call's alone, which is how a failed call tells refusals from lost replies.
function redlock(settings, errs) {
  const rl = new Redlock(cfg.clients, settings);
  rl.on(V5 ? 'error' : 'clientError', (e) => errs.push(e));
  return rl;
}

// What one error a node gave says about the command: refused (5.x ResourceLockedError: the script ran and
// said no), replied (the server answered an error: the script did not run), unsent (never written),
// timeout, other.
function kindOf(e) {
  if (V5 && e instanceof mod.ResourceLockedError) return 'refused';
  const msg = String((e && e.message) || e);
  if (e && e.name === 'ReplyError') return 'replied';
  if (/Command timed out|ETIMEDOUT|timeout/i.test(msg)) return 'timeout';
  if (/enableOfflineQueue|Stream isn't writeable/.test(msg)) return 'unsent';
  return 'other';
}

// A call the library failed: definite only when every node's answer was definite. Returns null for a
// plain refusal (no error but "no"), or the protocol error to answer.
async function failure(err, errs) {
  if (err instanceof ProtoError) return err;
  if (V5 && err instanceof mod.ExecutionError && Array.isArray(err.attempts) && err.attempts.length) {
    // Each attempt's stats settle when every node has answered: wait (bounded) so late errors count.
    const all = Promise.all(err.attempts).catch(() => {});
    const late = await Promise.race([all.then(() => false), new Promise((r) => setTimeout(() => r(true), cfg.timeout + 1000).unref())]);
    if (late) return new ProtoError(TIMEOUT, `${err.message} (a node has not answered)`);
  }
  const isLib = V5 ? err instanceof mod.ExecutionError : err instanceof Redlock.LockError;
  if (!isLib) {
    if (/Duration must be|must be at least 100ms/.test(err.message)) return new ProtoError(MALFORMED, err.message);
    return new ProtoError(CRASH, `${err.name || 'Error'}: ${err.message}`);
  }
  const kinds = errs.map(kindOf);
  const first = (k) => errs[kinds.indexOf(k)].message;
  if (kinds.includes('timeout')) return new ProtoError(TIMEOUT, `${err.message}: ${first('timeout')}`);
  if (kinds.includes('other')) return new ProtoError(CRASH, `${err.message}: ${first('other')}`);
  if (kinds.includes('replied')) return new ProtoError(UNAVAILABLE, `${err.message}: ${first('replied')}`);
  if (kinds.includes('unsent')) return new ProtoError(UNAVAILABLE, `${err.message}: ${first('unsent')}`);
  return null;
}

function validMs(lock) { const v = lock.expiration - Date.now(); return v > 0 ? v : undefined; }

// lockcheck kills a worker that leaves a request unanswered past its hung bound, wait + the run's lease
// (init's lease_ms, 0 with the watchdog) + 4 × timeout + 5 s (docs/protocol.md), and
// redlock has no deadline of its own: each of its retries can wait a timeout for a node that does not
// answer. So a call gets about the time its retries take when the nodes answer, and one still running
// then is answered error 0 (it may yet take effect); onLate gets its result if it comes.
function deadline(m, retries) {
  const delay = cfg.settings.retryDelay ?? 200, jitter = cfg.settings.retryJitter ?? 100;
  const natural = retries < 0 ? Infinity : retries * (delay + jitter) + 2 * cfg.timeout + 1000;
  const kill = (m.wait_ms || 0) + cfg.runLease + 4 * cfg.timeout + 5000;
  return Math.max(1000, Math.min(natural, kill - 2000));
}

async function within(ms, what, p, onLate) {
  let late = false, timer;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => {
      late = true;
      reject(new ProtoError(TIMEOUT, `${what}: redlock still retrying after ${ms} ms (it may yet take effect)`));
    }, ms);
  });
  p.then((v) => { if (late) onLate(v); }, (e) => { if (late) log(`${what}, answered as a timeout, ended: ${e.message}`); });
  try { return await Promise.race([p, expired]); } finally { clearTimeout(timer); }
}

async function acquire(m) {
  const id = slot(m), key = m.keys[0];
  const lease = m.lease_ms > 0 ? m.lease_ms : cfg.defaultLease;
  const errs = [];
  const retries = cfg.retriesFor(m.wait_ms);
  const rl = redlock({ ...cfg.settings, retryCount: retries }, errs);
  const ms = deadline(m, retries);
  if (cfg.using) {
    // using() keeps the lock past any duration, as a watchdog does: a fixed lease is not what it gives.
    if (m.lease_ms > 0) throw new ProtoError(NOT_SUPPORTED, 'with using=true the library extends the lock itself: lease_ms must be 0 (its duration is watchdog_ms)');
    const h = { rl, errs };
    try {
      return await within(ms, 'acquire', acquireUsing(m, id, key, cfg.watchdog, h), () => {
        if (held.get(id) && held.get(id).using === h) held.delete(id);
        h.end(); // answered already: the routine ends and using() releases
        log(`acquire ${m.msg_id}: a late grant, released`);
      });
    } catch (e) {
      const f = await failure(e, errs);
      if (f) throw f;
      return { granted: false };
    }
  }
  try {
    // 4.x: lock(resource, ttl); 5.x: acquire([resources], duration). The Lock keeps the random value.
    const lock = await within(ms, 'acquire', V5 ? rl.acquire([key], lease) : Promise.resolve(rl.lock(key, lease)), (late) => {
      // Answered already: nobody holds this grant; let it go rather than leave it to its TTL.
      log(`acquire ${m.msg_id}: a late grant, released`);
      Promise.resolve(V5 ? rl.release(late) : rl.unlock(late)).catch(() => {});
    });
    held.set(id, { lock });
    return { granted: true, valid_ms: validMs(lock) };
  } catch (e) {
    const f = await failure(e, errs);
    if (f) throw f;
    return { granted: false };
  }
}

// 5.x using(): the routine holds the lock until the release request ends it; an abort is a lost event.
function acquireUsing(m, id, key, lease, h) {
  const { rl, errs } = h;
  let end;
  const ended = new Promise((r) => { end = r; });
  h.end = end;
  return new Promise((resolve, reject) => {
    // using() extends through lock.extend, i.e. this instance's extend: each success is a renewed event.
    const extend = rl.extend.bind(rl);
    rl.extend = async (...a) => {
      const l = await extend(...a);
      send({ type: 'event', event: 'renewed', thread: m.thread, key, text: `using() extended it by ${a[1]} ms` });
      return l;
    };
    h.done = rl.using([key], lease, async (signal) => {
      signal.addEventListener('abort', () => {
        const why = signal.error ? signal.error.message : 'aborted';
        send({ type: 'event', event: 'lost', thread: m.thread, key, text: `using() abort signal: ${why}` });
      });
      held.set(id, { using: h });
      resolve({ granted: true });
      await ended;
    });
    h.done.catch(async (e) => {
      if (held.get(id) && held.get(id).using === h) return; // a release failure: the release request answers it
      const f = await failure(e, errs);
      if (f) reject(f); else resolve({ granted: false });
    });
  });
}

async function release(m) {
  const id = slot(m);
  const h = held.get(id);
  if (!h) throw new ProtoError(NOT_HELD, `thread ${m.thread} holds no lock on ${m.keys[0]} from this worker`);
  let errs = [];
  try {
    // 4.x unlock tries once; 5.x release retries as acquire does.
    const ms = deadline(m, V5 ? (cfg.settings.retryCount ?? 10) : 0);
    const gone = () => { if (held.get(id) === h) held.delete(id); };
    if (h.using) {
      h.using.errs.length = 0; // from here on its errors are the release's
      errs = h.using.errs;
      h.using.end();
      await within(ms, 'release', h.using.done, gone);
    } else {
      const rl = redlock(cfg.settings, errs);
      await within(ms, 'release', Promise.resolve(V5 ? rl.release(h.lock) : rl.unlock(h.lock)), gone);
    }
    held.delete(id);
    return {};
  } catch (e) {
    const f = await failure(e, errs);
    if (f && f.code !== UNAVAILABLE) throw f; // indefinite: keep the lock for a later try
    if (h.using) held.delete(id); // using() has ended whatever happened
    if (f) throw f;
    held.delete(id);
    throw new ProtoError(NOT_HELD, `redlock: ${e.message}`);
  }
}

async function extend(m) {
  const id = slot(m);
  const h = held.get(id);
  if (!h) throw new ProtoError(NOT_HELD, `thread ${m.thread} holds no lock on ${m.keys[0]} from this worker`);
  if (h.using) throw new ProtoError(NOT_SUPPORTED, 'with using=true, using() extends the lock by itself');
  const lease = m.lease_ms > 0 ? m.lease_ms : cfg.defaultLease;
  const errs = [];
  const rl = redlock(cfg.settings, errs);
  try {
    // 4.x extends the Lock in place; 5.x returns a new Lock (the old one is marked expired).
    const ms = deadline(m, cfg.settings.retryCount ?? 10);
    const lock = await within(ms, 'extend', Promise.resolve(rl.extend(h.lock, lease)), (late) => {
      if (held.get(id) === h) held.set(id, { lock: late });
    });
    held.set(id, { lock });
    return { extended: true, valid_ms: validMs(lock) };
  } catch (e) {
    const f = await failure(e, errs);
    if (f) throw f;
    return { extended: false };
  }
}

lcp.serve({ init, handlers: { acquire, release, extend } });
