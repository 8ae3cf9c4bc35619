'use strict';
// lcp.js: LCP/1 (docs/protocol.md) for the Node.js workers (node-redlock, redis-semaphore): the protocol's codes,
// the reply loop on stdin/stdout, and the ioredis clients of a topology. Each worker's build.sh copies it beside
// its worker.js. Requests run as promises on the one event loop, never serialized.

const fs = require('fs');
const path = require('path');
const readline = require('readline');

// stdout is the protocol's: anything a library prints goes to stderr instead.
console.log = console.info = console.warn = console.debug = console.error;

const TIMEOUT = 0, NOT_SUPPORTED = 10, UNAVAILABLE = 11, MALFORMED = 12, CRASH = 13, NOT_HELD = 40;

function log(...a) { process.stderr.write(new Date().toISOString() + ' ' + a.join(' ') + '\n'); }

function send(m) { process.stdout.write(JSON.stringify(m) + '\n'); }

class ProtoError extends Error {
  constructor(code, text) { super(text); this.code = code; }
}

// The version of a package installed beside the worker (its package.json; a leading "v" dropped).
function installed(dir, name) {
  const j = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8'));
  return String(j.version).replace(/^v/, '');
}

function hostPort(addr) { const i = addr.lastIndexOf(':'); return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }; }

// The ioredis clients of init's topology: single (one), redlock (one per master), sentinel (ioredis's Sentinel
// support, announced addresses mapped through natMap), cluster (when allowed). Each command and dial gets
// lockcheck's timeout: without one a command queued while a link is cut waits as long as ioredis reconnects.
function clientsFor(Redis, m, timeout, kinds) {
  const t = m.topology;
  if (!t || !Array.isArray(t.nodes) || t.nodes.length === 0) throw new ProtoError(MALFORMED, 'init without topology nodes');
  if (!kinds.includes(t.kind)) throw new ProtoError(NOT_SUPPORTED, `topology ${t.kind}: this worker runs on ${kinds.join(', ')}`);
  const redisOpts = { password: m.password || undefined, connectTimeout: timeout, commandTimeout: timeout };
  const natMap = {};
  for (const [from, to] of Object.entries(t.nat || {})) natMap[from] = hostPort(to);
  let clients;
  switch (t.kind) {
    case 'single':
      clients = [new Redis({ ...hostPort(t.nodes[0].addr), ...redisOpts })];
      break;
    case 'redlock': // every node an independent master: one client each
      clients = t.nodes.map((n) => new Redis({ ...hostPort(n.addr), ...redisOpts }));
      break;
    case 'sentinel': // only the given Sentinels are asked
      if (!Array.isArray(t.sentinels) || t.sentinels.length === 0) throw new ProtoError(MALFORMED, 'sentinel topology without sentinels');
      clients = [new Redis({ sentinels: t.sentinels.map(hostPort), name: t.master_name, sentinelPassword: m.password || undefined,
        natMap, updateSentinels: false, ...redisOpts })];
      break;
    default: // cluster
      clients = [new Redis.Cluster(t.nodes.map((n) => hostPort(n.addr)), { natMap, redisOptions: redisOpts })];
  }
  for (const [i, c] of clients.entries()) {
    let last = '';
    c.on('error', (e) => { if (e.message !== last) log(`client ${i}: ${e.message}`); last = e.message; });
  }
  return clients;
}

// serve answers LCP/1 on stdin/stdout. w.init(m) returns {clients, ok} (ok: init_ok's fields) or throws;
// w.handlers maps a request type to an async function returning the reply's fields; w.close() runs at exit.
// Every client answers one PING at init (a worker that cannot start says so there): connect and warm up.
function serve(w) {
  let clients = null, ready = false, exiting = false;
  const exit = (code = 0) => {
    if (exiting) return;
    exiting = true;
    if (w.close) w.close(); // release nothing: close the connections and go
    for (const c of clients || []) c.disconnect();
    process.exit(code);
  };
  const handle = async (m) => {
    const reply = (body) => send({ type: `${m.type}_ok`, in_reply_to: m.msg_id, ...body });
    const error = (e) => {
      const code = e instanceof ProtoError ? e.code : CRASH;
      if (!(e instanceof ProtoError)) log(`${m.type} ${m.msg_id}: ${e.stack || e}`);
      send({ type: 'error', in_reply_to: m.msg_id, code, text: e.message || String(e) });
    };
    if (m.type === 'init') {
      if (ready || clients) { error(new ProtoError(MALFORMED, 'init twice')); return; }
      try {
        if (m.protocol !== undefined && m.protocol !== 1) throw new ProtoError(NOT_SUPPORTED, `protocol ${m.protocol}: this worker speaks LCP/1`);
        const started = w.init(m);
        clients = started.clients;
        const pings = await Promise.allSettled(clients.map((c) => c.ping()));
        const ok = pings.filter((p) => p.status === 'fulfilled').length;
        if (ok === 0) throw new ProtoError(UNAVAILABLE, `no node answered PING: ${pings[0].reason && pings[0].reason.message}`);
        for (const [i, p] of pings.entries()) if (p.status === 'rejected') log(`node ${i}: ${p.reason.message}`);
        reply(started.ok);
        ready = true;
      } catch (e) {
        error(e);
        exit(1);
      }
      return;
    }
    // After the replies already decided (setImmediate), so that a quick answer is not cut off.
    if (m.type === 'shutdown') { reply({}); setImmediate(() => exit(0)); return; }
    if (!ready) { error(new ProtoError(MALFORMED, 'no init yet')); return; }
    const h = w.handlers[m.type];
    if (!h) { error(new ProtoError(NOT_SUPPORTED, `request ${m.type}: this worker answers ${Object.keys(w.handlers).join(', ')}`)); return; }
    try { reply(await h(m)); } catch (e) { error(e); }
  };
  // A library promise nobody awaits must not take the worker down (Node's default): log it. A request it
  // leaves unanswered is lockcheck's to time out.
  process.on('unhandledRejection', (e) => log(`unhandled rejection: ${(e && e.stack) || e}`));
  const rlines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  rlines.on('line', (line) => {
    if (!line.trim()) return;
    let m;
    try { m = JSON.parse(line); } catch (e) { log(`malformed request: ${e.message}`); return; }
    if (!m || typeof m !== 'object' || typeof m.type !== 'string') { log('malformed request: not an object with a type'); return; }
    handle(m).catch((e) => log(`unhandled: ${e.stack || e}`));
  });
  rlines.on('close', () => exit(0));
}

// slot is a request's (thread, key) as a map key, checking both.
function slot(m) {
  if (!Number.isInteger(m.thread) || m.thread <= 0) throw new ProtoError(MALFORMED, 'thread must be a positive integer');
  if (!Array.isArray(m.keys) || m.keys.length !== 1 || typeof m.keys[0] !== 'string') {
    throw new ProtoError(NOT_SUPPORTED, 'keys: this worker locks one key per request');
  }
  return `${m.thread}\n${m.keys[0]}`;
}

module.exports = { TIMEOUT, NOT_SUPPORTED, UNAVAILABLE, MALFORMED, CRASH, NOT_HELD, log, send, ProtoError, installed, clientsFor, serve, slot };
