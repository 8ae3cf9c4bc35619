'use strict';
// The lockcheck worker for npm redis-semaphore's Mutex and RedlockMutex, speaking LCP/1 (docs/protocol.md):
// newline JSON on stdin/stdout, logs on stderr. One ioredis client per node shared by every protocol thread
// (promises on the one event loop); a new Mutex (or RedlockMutex, on topology redlock) per acquire, kept per
// (thread, key), whose onLockLost sends a `lost` event for that thread and key.

const readline = require('readline');
const path = require('path');
const fs = require('fs');

function log(...a) { process.stderr.write(new Date().toISOString() + ' ' + a.join(' ') + '\n'); }
function installed(name) {
  return JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', name, 'package.json'), 'utf8')).version;
}

const sem = require('redis-semaphore');
const Redis = require('ioredis');

const TIMEOUT = 0, NOT_SUPPORTED = 10, UNAVAILABLE = 11, MALFORMED = 12, CRASH = 13;
const KINDS = ['redis-semaphore', 'mutex'];
const NUMERIC = ['refreshInterval', 'retryInterval'];
// acquireAttemptsLimit and tryAcquire() came with redis-semaphore 5.1.
const ATTEMPTS = 'acquireAttemptsLimit' in sem.defaultTimeoutOptions;

function send(m) { process.stdout.write(JSON.stringify(m) + '\n'); }

class ProtoError extends Error {
  constructor(code, text) { super(text); this.code = code; }
}

let cfg = null; // set by init
const held = new Map(); // `${thread}\n${key}` -> the Mutex of that owner's last grant

function init(m) {
  const t = m.topology, o = m.options || {}, lk = m.lock || {};
  if (!t || !Array.isArray(t.nodes) || t.nodes.length === 0) throw new ProtoError(MALFORMED, 'init without topology nodes');
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
  // lockcheck's timeout for each command and dial: without one a command queued while a link is cut waits for
  // as long as ioredis reconnects.
  const redisOpts = { password: m.password || undefined, connectTimeout: timeout, commandTimeout: timeout };
  const hp = (addr) => { const i = addr.lastIndexOf(':'); return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }; };
  const natMap = {};
  for (const [from, to] of Object.entries(t.nat || {})) natMap[from] = hp(to);
  let clients;
  switch (t.kind) {
    case 'single':
      clients = [new Redis({ ...hp(t.nodes[0].addr), ...redisOpts })];
      break;
    case 'redlock': // independent masters: RedlockMutex over one client each
      clients = t.nodes.map((n) => new Redis({ ...hp(n.addr), ...redisOpts }));
      break;
    case 'sentinel': // ioredis maps the master a Sentinel announces through natMap
      if (!Array.isArray(t.sentinels) || t.sentinels.length === 0) throw new ProtoError(MALFORMED, 'sentinel topology without sentinels');
      clients = [new Redis({ sentinels: t.sentinels.map(hp), name: t.master_name, sentinelPassword: m.password || undefined,
        natMap, updateSentinels: false, ...redisOpts })];
      break;
    default:
      throw new ProtoError(NOT_SUPPORTED, `topology ${t.kind}: this worker runs on single, sentinel or redlock`);
  }
  for (const [i, c] of clients.entries()) {
    let last = '';
    c.on('error', (e) => { if (e.message !== last) log(`client ${i}: ${e.message}`); last = e.message; });
  }
  cfg = {
    clients, settings, timeout, redlock: t.kind === 'redlock',
    // The refresh sets lockTimeout again every refreshInterval (the library's default: 0.8 × lockTimeout):
    // lockTimeout is watchdog_ms, as protocol.md asks, so the ratio the library ships with is the one tested.
    watchdog: o.watchdog_ms > 0 ? o.watchdog_ms : 30000,
  };
  return clients;
}

function slot(m) {
  if (!Number.isInteger(m.thread) || m.thread <= 0) throw new ProtoError(MALFORMED, 'thread must be a positive integer');
  if (!Array.isArray(m.keys) || m.keys.length !== 1 || typeof m.keys[0] !== 'string') {
    throw new ProtoError(NOT_SUPPORTED, 'keys: this worker locks one key per request');
  }
  return `${m.thread}\n${m.keys[0]}`;
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

const handlers = { acquire, release };
let clients = null;
let exiting = false;

function exit(code = 0) {
  if (exiting) return;
  exiting = true;
  // Release nothing: stop the refresh timers, close the connections and go.
  for (const mu of held.values()) (mu.stopRefresh || mu._stopRefresh).call(mu);
  for (const c of clients || []) c.disconnect();
  process.exit(code);
}

async function handle(m) {
  const reply = (body) => send({ type: `${m.type}_ok`, in_reply_to: m.msg_id, ...body });
  const error = (e) => {
    const code = e instanceof ProtoError ? e.code : CRASH;
    if (!(e instanceof ProtoError)) log(`${m.type} ${m.msg_id}: ${e.stack || e}`);
    send({ type: 'error', in_reply_to: m.msg_id, code, text: e.message || String(e) });
  };
  if (m.type === 'init') {
    if (cfg) { error(new ProtoError(MALFORMED, 'init twice')); return; }
    try {
      clients = init(m);
      // Connect and warm up here, not in the first acquire: one PING per node; a wrong password fails the start.
      const pings = await Promise.allSettled(clients.map((c) => c.ping()));
      const ok = pings.filter((p) => p.status === 'fulfilled').length;
      if (ok === 0) throw new ProtoError(UNAVAILABLE, `no node answered PING: ${pings[0].reason && pings[0].reason.message}`);
      for (const [i, p] of pings.entries()) if (p.status === 'rejected') log(`node ${i}: ${p.reason.message}`);
      reply({ library: 'redis-semaphore', version: installed('redis-semaphore'),
        runtime: `node ${process.versions.node}, ioredis ${installed('ioredis')}, ${cfg.redlock ? 'RedlockMutex' : 'Mutex'}`,
        kinds: KINDS, caps: ['watchdog', 'events'] });
    } catch (e) {
      error(e);
      exit(1);
    }
    return;
  }
  if (m.type === 'shutdown') { reply({}); setImmediate(() => exit(0)); return; }
  if (!cfg) { error(new ProtoError(MALFORMED, 'no init yet')); return; }
  const h = handlers[m.type];
  if (!h) { error(new ProtoError(NOT_SUPPORTED, `request ${m.type}: this worker drives the mutex family (acquire, release)`)); return; }
  try { reply(await h(m)); } catch (e) { error(e); }
}

// A refresh that fails with a Redis error rejects inside the library's timer (it fires onLockLost only when the
// refresh ran and found another identifier): log it, never let it take the worker down (Node's default).
process.on('unhandledRejection', (e) => log(`unhandled rejection: ${(e && e.stack) || e}`));

const rlines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rlines.on('line', (line) => {
  if (!line.trim()) return;
  let m;
  try { m = JSON.parse(line); } catch (e) { log(`malformed request: ${e.message}`); return; }
  if (!m || typeof m !== 'object' || typeof m.type !== 'string' || !Number.isInteger(m.msg_id)) { log('malformed request: not an object with a type and msg_id'); return; }
  handle(m).catch((e) => log(`unhandled: ${e.stack || e}`));
});
rlines.on('close', () => exit(0));
