#!/bin/sh
# smoke.sh RUNCMD ADDR PASSWORD: drives a mutex-family LCP/1 worker (RUNCMD, run by sh -c) against the
# Redis at ADDR (host:port, loopback) on a `single` topology and checks, by the protocol replies and by
# reading the keys in Redis: init, acquire, a second thread refused, a wait that is granted when the holder
# releases, extend (the TTL really moves), concurrent threads, release, release of a lock never held and of
# one that expired and was taken by another thread (error 40, the other's lock untouched), shutdown.
# Prints one line per check and the start-up time to init_ok; exits 0 only if every check passed.
# Needs node (for this script's driver), nothing else.
set -eu
if [ $# -ne 3 ]; then
	echo "usage: smoke.sh RUNCMD ADDR PASSWORD" >&2
	exit 2
fi
exec node - "$@" <<'JS'
'use strict';
const { spawn } = require('child_process');
const net = require('net');
const readline = require('readline');
const [runcmd, addr, password] = process.argv.slice(2);
const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
if (!/^127\./.test(host)) { console.error(`smoke.sh: ${addr} is not a loopback address`); process.exit(2); }
const prefix = `lockcheck-smoke-${process.pid}-${Date.now()}:`;
const k = (n) => prefix + n;

// One raw RESP connection to read what the worker did to the keys.
function redis() {
  const s = net.connect(port, host);
  let buf = '', waiters = [];
  s.on('data', (d) => {
    buf += d;
    let m;
    while ((m = /^([+\-:])(.*)\r\n/.exec(buf)) || (m = /^\$(-?\d+)\r\n/.exec(buf))) {
      if (m[0][0] === '$') {
        const n = Number(m[1]);
        if (n < 0) { buf = buf.slice(m[0].length); waiters.shift()(null); continue; }
        if (buf.length < m[0].length + n + 2) break;
        const v = buf.slice(m[0].length, m[0].length + n);
        buf = buf.slice(m[0].length + n + 2);
        waiters.shift()(v);
        continue;
      }
      buf = buf.slice(m[0].length);
      waiters.shift()(m[1] === ':' ? Number(m[2]) : (m[1] === '-' ? new Error(m[2]) : m[2]));
    }
  });
  const cmd = (...a) => new Promise((r) => {
    waiters.push(r);
    s.write(`*${a.length}\r\n` + a.map((x) => `$${Buffer.byteLength(String(x))}\r\n${x}\r\n`).join(''));
  });
  return { cmd, close: () => s.end() };
}

const w = spawn('sh', ['-c', runcmd], { stdio: ['pipe', 'pipe', 'pipe'] });
let stderr = '';
w.stderr.on('data', (d) => { stderr += d; });
const pending = new Map();
const badLines = [];
readline.createInterface({ input: w.stdout }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { badLines.push(line); return; }
  if (m === null || typeof m !== 'object') { badLines.push(line); return; }
  const p = pending.get(m.in_reply_to);
  if (p) { pending.delete(m.in_reply_to); p(m); }
});
let exited = null;
w.on('exit', (code, sig) => { exited = { code, sig }; for (const p of pending.values()) p({ type: 'exited' }); pending.clear(); });
let msgId = 0;
function req(body, timeoutMs = 20000) {
  const id = ++msgId;
  return new Promise((resolve) => {
    const t = setTimeout(() => { pending.delete(id); resolve({ type: 'no reply' }); }, timeoutMs);
    pending.set(id, (m) => { clearTimeout(t); resolve(m); });
    w.stdin.write(JSON.stringify({ ...body, msg_id: id }) + '\n');
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let failed = 0;
function check(name, ok, got) {
  if (!ok) failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ': got ' + JSON.stringify(got)}`);
}
const acq = (thread, key, wait_ms = 0, lease_ms = 5000) => req({ type: 'acquire', thread, keys: [k(key)], wait_ms, lease_ms });
const rel = (thread, key) => req({ type: 'release', thread, keys: [k(key)] });
const ext = (thread, key, lease_ms) => req({ type: 'extend', thread, keys: [k(key)], lease_ms });
const granted = (m) => m.type === 'acquire_ok' && m.granted === true;
const refused = (m) => m.type === 'acquire_ok' && m.granted === false;
const code = (m, c) => m.type === 'error' && m.code === c;

(async () => {
  const r = redis();
  const auth = await r.cmd('AUTH', password);
  if (auth instanceof Error) { console.error(`smoke.sh: AUTH at ${addr}: ${auth.message}`); process.exit(2); }
  const t0 = Date.now();
  const init = await req({ type: 'init', protocol: 1, client: 'c1', seed: 1,
    topology: { kind: 'single', nodes: [{ name: 'n1', addr }] }, password,
    lock: { kind: 'mutex', family: 'mutex' },
    options: { lease_ms: 0, watchdog_ms: 30000, wait_ms: 5000, timeout_ms: 3000 }, library_options: {} }, 60000);
  const startup = Date.now() - t0;
  check(`init_ok (${init.library} ${init.version}, ${init.runtime}; ${startup} ms to init_ok)`,
    init.type === 'init_ok' && init.library && /^\d/.test(init.version || '') && (init.kinds || []).includes('mutex') &&
    (init.caps || []).includes('extend'), init);
  if (init.type !== 'init_ok') { console.log(stderr); process.exit(1); }

  let m = await acq(1, 'a', 0, 5000);
  check('thread 1 acquires a', granted(m), m);
  const pttl0 = await r.cmd('PTTL', k('a'));
  check('a is in Redis with the lease as its TTL', pttl0 > 4000 && pttl0 <= 5000, pttl0);
  m = await acq(2, 'a', 300);
  check('thread 2 is refused a (held by thread 1; waited 300 ms)', refused(m), m);
  m = await ext(1, 'a', 20000);
  const pttl1 = await r.cmd('PTTL', k('a'));
  check('thread 1 extends a to 20 s (TTL moved)', m.type === 'extend_ok' && m.extended === true && pttl1 > 15000, { m, pttl1 });

  const both = await Promise.all([acq(3, 'b'), acq(4, 'c'), acq(5, 'b', 200)]);
  check('threads 3 and 4 acquire b and c concurrently; thread 5 refused b', granted(both[0]) && granted(both[1]) && refused(both[2]), both);

  const waiting = acq(6, 'b', 4000);
  await sleep(300);
  m = await rel(3, 'b');
  check('thread 3 releases b', m.type === 'release_ok', m);
  m = await waiting;
  check('thread 6, waiting up to 4 s for b, gets it after the release', granted(m), m);

  m = await rel(1, 'a');
  const gone = await r.cmd('EXISTS', k('a'));
  check('thread 1 releases a (key deleted)', m.type === 'release_ok' && gone === 0, { m, gone });
  m = await rel(1, 'a');
  check('thread 1 releases a again: error 40', code(m, 40), m);
  m = await rel(7, 'c');
  check('thread 7 releases c, held by thread 4: error 40', code(m, 40), m);
  check('c still held by thread 4', (await r.cmd('EXISTS', k('c'))) === 1, null);
  m = await rel(8, 'never');
  check('thread 8 releases a lock never acquired: error 40', code(m, 40), m);

  m = await acq(9, 'd', 0, 300);
  check('thread 9 acquires d with a 300 ms lease', granted(m), m);
  await sleep(600);
  m = await acq(10, 'd', 0, 10000);
  check('after the lease ran out, thread 10 acquires d', granted(m), m);
  const val = await r.cmd('GET', k('d'));
  m = await rel(9, 'd');
  check('thread 9 releases d, which expired and thread 10 holds: error 40', code(m, 40), m);
  m = await ext(9, 'd', 10000);
  check('thread 9 extends d: not extended (false or error 40)', (m.type === 'extend_ok' && m.extended === false) || code(m, 40), m);
  check("thread 10's d untouched", (await r.cmd('GET', k('d'))) === val, null);
  m = await req({ type: 'acquire', thread: 11, keys: [k('x'), k('y')], wait_ms: 0, lease_ms: 1000 });
  check('two keys in one acquire: an error reply, not a crash', m.type === 'error' && typeof m.code === 'number', m);
  for (const [t, key] of [[4, 'c'], [6, 'b'], [10, 'd']]) await rel(t, key);

  m = await req({ type: 'shutdown' });
  check('shutdown_ok', m.type === 'shutdown_ok', m);
  for (let i = 0; i < 50 && !exited; i++) await sleep(100);
  check('worker exited 0 within 5 s of shutdown', exited && exited.code === 0, exited);
  check('stdout held only JSON objects', badLines.length === 0, badLines);
  r.close();
  if (!exited) w.kill('SIGKILL');
  console.log(failed ? `${failed} check(s) failed; worker stderr:\n${stderr}` : 'all checks passed');
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.error(`smoke.sh: ${e.stack || e}`); w.kill('SIGKILL'); process.exit(1); });
JS
