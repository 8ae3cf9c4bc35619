'use strict';
// faults.sh's checks: see faults.sh. argv: RUNCMD PASSWORD then ADDR:PID for each of three redis-servers.
const { redis, worker, sleep, checks, granted, refused, code } = require('./lcp');
const [runcmd, password, ...servers] = process.argv.slice(2);
const nodes = servers.map((s) => { const [addr, pid] = s.split('='); return { addr, pid: Number(pid) }; });
const prefix = `lockcheck-faults-${process.pid}-${Date.now()}:`;
const k = (n) => prefix + n;
const { check, failed } = checks();
const TIMEOUT = 500;

function init(w, kind, library_options = {}, topoNodes = nodes, options = {}) {
  return w.req({ type: 'init', protocol: 1, client: 'c1', seed: 1,
    topology: { kind, nodes: topoNodes.map((n, i) => ({ name: `n${i + 1}`, addr: n.addr })) }, password,
    lock: { kind: 'node-redlock', family: 'mutex' },
    options: { lease_ms: 0, watchdog_ms: 30000, wait_ms: 1000, timeout_ms: TIMEOUT, ...options }, library_options }, 60000);
}

async function initFailures() {
  let w = worker(runcmd);
  let m = await w.req({ type: 'init', protocol: 1, client: 'c1', topology: { kind: 'single', nodes: [{ name: 'n1', addr: nodes[0].addr }] },
    password: 'wrong-password', lock: { kind: 'mutex', family: 'mutex' }, options: { timeout_ms: TIMEOUT } });
  let ex = await w.waitExit(5000);
  check('wrong password: init answered error, worker exited non-zero', m.type === 'error' && ex && ex.code !== 0, { m, ex, stderr: w.stderr });
  w.kill();
  w = worker(runcmd);
  m = await init(w, 'single', { retryCont: '3' }, nodes.slice(0, 1));
  ex = await w.waitExit(5000);
  check('unknown library option: init error 12 naming it', code(m, 12) && /retryCont/.test(m.text) && ex && ex.code !== 0, { m, ex });
  w.kill();
  w = worker(runcmd);
  m = await w.req({ type: 'init', protocol: 1, client: 'c1', topology: { kind: 'single', nodes: [{ name: 'n1', addr: nodes[0].addr }] },
    password, lock: { kind: 'rwlock', family: 'rwlock' }, options: { timeout_ms: TIMEOUT } });
  check('rwlock family: init error 10', code(m, 10), m);
  w.kill();
}

async function redlockFaults(rs) {
  const w = worker(runcmd);
  const w2 = worker(runcmd); // retryCount from wait_ms: 100 tries, 10 ms apart
  const [m0, m2] = await Promise.all([init(w, 'redlock', { retryCount: '2', retryDelay: '50' }),
    init(w2, 'redlock', { retryDelay: '10', retryJitter: '0' })]);
  check(`redlock over 3 masters: init_ok (${m0.version})`, m0.type === 'init_ok' && m2.type === 'init_ok', { m0, m2 });
  const acq = (thread, key, lease_ms = 10000) => w.req({ type: 'acquire', thread, keys: [k(key)], wait_ms: 0, lease_ms });
  let m = await acq(1, 'a');
  const vals = await Promise.all(rs.map((r) => r.cmd('GET', k('a'))));
  check('thread 1 acquires a: the same value on all three masters', granted(m) && vals[0] && vals.every((v) => v === vals[0]), { m, vals });
  check('the grant says its validity (valid_ms <= lease)', m.valid_ms > 0 && m.valid_ms <= 10000, m);
  m = await acq(2, 'a');
  check('thread 2 is refused a (definite: granted false)', refused(m), m);

  process.kill(nodes[2].pid, 'SIGSTOP');
  try {
    m = await acq(3, 'b');
    check('one master frozen: thread 3 acquires b on a quorum of 2', granted(m), m);
    process.kill(nodes[1].pid, 'SIGSTOP');
    m = await acq(4, 'c');
    check('two masters frozen: acquire c is error 0 (timeout, indefinite), not a refusal', code(m, 0), m);
    // 100 tries of a 500 ms timeout each would outlast lockcheck's hung bound (wait + the run's lease +
    // 4 × timeout + 5 s, at most 8 s here): the worker answers when the tries would have ended had the
    // nodes answered.
    const t0 = Date.now();
    m = await w2.req({ type: 'acquire', thread: 1, keys: [k('c2')], wait_ms: 1000, lease_ms: 1000 });
    const took = Date.now() - t0;
    check(`two masters frozen, retries for a 1 s wait: error 0 after ${took} ms, within lockcheck's bound`,
      code(m, 0) && took < 1000 + 4 * TIMEOUT + 5000 - 1000, m);
    m = await w.req({ type: 'extend', thread: 1, keys: [k('a')], lease_ms: 10000 });
    check('two masters frozen: extend a is error 0', code(m, 0), m);
    m = await w.req({ type: 'release', thread: 3, keys: [k('b')] });
    check('two masters frozen: release b is error 0 (kept for another try)', code(m, 0), m);
  } finally {
    process.kill(nodes[1].pid, 'SIGCONT');
    process.kill(nodes[2].pid, 'SIGCONT');
  }
  // The frozen masters run the queued scripts when they resume, and the release already ran on the live
  // one: the indefinite release did take effect, so the retry may find nothing (40) as well as succeed.
  m = await w.req({ type: 'release', thread: 3, keys: [k('b')] });
  check('masters back: release b again: ok, or 40 (the first one ran after all)', m.type === 'release_ok' || code(m, 40), m);
  const left = await Promise.all(rs.map((r) => r.cmd('EXISTS', k('b'))));
  check('b is gone from every master', left.every((v) => v === 0), left);
  m = await w.req({ type: 'release', thread: 1, keys: [k('a')] });
  const aLeft = await Promise.all(rs.map((r) => r.cmd('EXISTS', k('a'))));
  if (m0.version.startsWith('4.')) {
    // 4.x's _lock unlocks everywhere after an attempt without quorum, extend attempts included.
    check('4.x: the failed extend had unlocked a everywhere: release a is 40', code(m, 40) && aLeft.every((v) => v === 0), { m, aLeft });
  } else {
    check('5.x: the failed extend left a held: thread 1 releases it', m.type === 'release_ok' && aLeft.every((v) => v === 0), { m, aLeft });
  }
  await w.req({ type: 'shutdown' });
  check('stdout held only JSON objects', w.badLines.length === 0 && w2.badLines.length === 0, [w.badLines, w2.badLines]);
  w.kill();
  w2.kill();
}

// client-pause as lockcheck does it: SIGSTOP the holder's worker past its lease while another takes the lock.
async function pauseBeyondLease(rs) {
  const a = worker(runcmd), b = worker(runcmd);
  const [ia, ib] = await Promise.all([init(a, 'redlock', { retryDelay: '50' }), init(b, 'redlock', { retryDelay: '50' })]);
  check('two workers: init_ok', ia.type === 'init_ok' && ib.type === 'init_ok', { ia, ib });
  let m = await a.req({ type: 'acquire', thread: 1, keys: [k('p')], wait_ms: 0, lease_ms: 500 });
  check('worker A acquires p with a 500 ms lease', granted(m), m);
  a.signal('SIGSTOP');
  try {
    m = await b.req({ type: 'acquire', thread: 1, keys: [k('p')], wait_ms: 3000, lease_ms: 10000 });
    check('A frozen: worker B, waiting, acquires p once the lease ran out', granted(m), m);
  } finally {
    a.signal('SIGCONT');
  }
  const val = await rs[0].cmd('GET', k('p'));
  m = await a.req({ type: 'extend', thread: 1, keys: [k('p')], lease_ms: 10000 });
  check('A resumed: extend p is not extended', m.type === 'extend_ok' && m.extended === false, m);
  m = await a.req({ type: 'release', thread: 1, keys: [k('p')] });
  check('A resumed: release p is 40', code(m, 40), m);
  const after = await Promise.all(rs.map((r) => r.cmd('GET', k('p'))));
  check("B's p untouched on every master", after.every((v) => v === val), { val, after });
  await b.req({ type: 'release', thread: 1, keys: [k('p')] });
  a.kill();
  b.kill();
}

// client-clock: the worker under lockcheck's clock library (LD_PRELOAD); its clock jumps a minute ahead
// mid-hold, and redlock, which keeps validity on Date.now(), judges its own lock expired.
async function clientClock(rs) {
  const fs = require('fs');
  fs.writeFileSync(process.env.CLOCKSHIFT_FILE, Buffer.alloc(8)); // offset 0 ns
  const w = worker(`LD_PRELOAD=${process.env.CLOCKSHIFT_LIB} LOCKCHECK_CLOCK_FILE=${process.env.CLOCKSHIFT_FILE} ${runcmd}`);
  let m = await init(w, 'single', {}, nodes.slice(0, 1));
  check('client-clock: init_ok under the clock library', m.type === 'init_ok', m);
  m = await w.req({ type: 'acquire', thread: 1, keys: [k('t')], wait_ms: 0, lease_ms: 20000 });
  check('client-clock: thread 1 acquires t for 20 s', granted(m), m);
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(60n * 1000000000n);
  fs.writeFileSync(process.env.CLOCKSHIFT_FILE, b); // the worker maps the file: it sees this at once
  m = await w.req({ type: 'extend', thread: 1, keys: [k('t')], lease_ms: 20000 });
  const pttl = await rs[0].cmd('PTTL', k('t'));
  check('clock 60 s ahead: extend t is not extended (redlock: already expired) though Redis still has it',
    m.type === 'extend_ok' && m.extended === false && pttl > 10000, { m, pttl });
  await w.req({ type: 'shutdown' });
  w.kill();
  await rs[0].cmd('DEL', k('t'));
}

// 5.x using(): auto-extension while held, and a lost event once the lock is taken from under it.
async function usingLost(rs) {
  const w = worker(runcmd);
  let m = await init(w, 'redlock', { using: 'true', retryDelay: '50', automaticExtensionThreshold: '300' }, nodes, { watchdog_ms: 600 });
  if (m.type === 'error') {
    check(`using=true refused at init on a 4.x redlock (error 10): ${m.text}`, m.code === 10, m);
    w.kill();
    return;
  }
  check('using=true: init_ok with watchdog and events caps', (m.caps || []).includes('events') && (m.caps || []).includes('watchdog'), m);
  m = await w.req({ type: 'acquire', thread: 1, keys: [k('u')], wait_ms: 0, lease_ms: 600 });
  check('using: a fixed lease is error 10 (using() keeps the lock)', code(m, 10), m);
  m = await w.req({ type: 'acquire', thread: 1, keys: [k('u')], wait_ms: 0, lease_ms: 0 });
  check('using: thread 1 acquires u (duration: watchdog_ms, 600 ms)', granted(m), m);
  await sleep(1500);
  const pttl = await Promise.all(rs.map((r) => r.cmd('PTTL', k('u'))));
  check('1.5 s later u is still held on every master (using() extended it)', pttl.every((t) => t > 0), pttl);
  const renewed = w.events.filter((e) => e.event === 'renewed' && e.key === k('u')).length;
  check(`using: its extensions reported as renewed events (${renewed})`, renewed >= 2, w.events);
  w.events.length = 0;
  m = await w.req({ type: 'extend', thread: 1, keys: [k('u')], lease_ms: 600 });
  check('using: an explicit extend is error 10', code(m, 10), m);
  await Promise.all(rs.map((r) => r.cmd('SET', k('u'), 'someone-else', 'PX', '10000')));
  const lost = () => w.events.find((e) => e.event === 'lost');
  for (let i = 0; i < 60 && !lost(); i++) await sleep(100);
  const ev = lost() || {};
  check('u taken on every master: a lost event for thread 1 on u', ev.event === 'lost' && ev.thread === 1 && ev.key === k('u'), w.events);
  m = await w.req({ type: 'release', thread: 1, keys: [k('u')] });
  check('using: release after the loss is error 40', code(m, 40), m);
  const v = await rs[0].cmd('GET', k('u'));
  check("the other owner's u untouched", v === 'someone-else', v);
  await w.req({ type: 'shutdown' });
  w.kill();
}

// Sentinel announces the master at GHOST, where nothing listens; init's nat maps it to the first server.
async function sentinelNat(rs) {
  const topo = (nat) => ({ kind: 'sentinel', nodes: [{ name: 'n1', addr: nodes[0].addr }], sentinels: [process.env.SENTINEL],
    master_name: 'lockcheck', nat });
  const initS = (w, nat) => w.req({ type: 'init', protocol: 1, client: 'c1', topology: topo(nat), password,
    lock: { kind: 'mutex', family: 'mutex' }, options: { timeout_ms: TIMEOUT } }, 60000);
  let w = worker(runcmd);
  let m = await initS(w, {});
  check('sentinel without nat: the announced master is unreachable, init is an error', m.type === 'error', m);
  w.kill();
  w = worker(runcmd);
  m = await initS(w, { [process.env.GHOST]: nodes[0].addr });
  check('sentinel with nat: init_ok', m.type === 'init_ok', m);
  m = await w.req({ type: 'acquire', thread: 1, keys: [k('s')], wait_ms: 0, lease_ms: 5000 });
  const v = await rs[0].cmd('EXISTS', k('s'));
  check('sentinel: thread 1 acquires s, written on the server nat maps the master to', granted(m) && v === 1, { m, v });
  m = await w.req({ type: 'release', thread: 1, keys: [k('s')] });
  check('sentinel: thread 1 releases s', m.type === 'release_ok', m);
  await w.req({ type: 'shutdown' });
  w.kill();
}

(async () => {
  const rs = await Promise.all(nodes.map((n) => redis(n.addr, password)));
  await initFailures();
  if (process.env.SENTINEL) await sentinelNat(rs);
  await redlockFaults(rs);
  await pauseBeyondLease(rs);
  if (process.env.CLOCKSHIFT_LIB) await clientClock(rs);
  await usingLost(rs);
  for (const r of rs) r.close();
  console.log(failed() ? `${failed()} check(s) failed` : 'all checks passed');
  process.exit(failed() ? 1 : 0);
})().catch((e) => {
  for (const n of nodes) { try { process.kill(n.pid, 'SIGCONT'); } catch (_) { /* gone */ } }
  console.error(`faults.sh: ${e.stack || e}`);
  process.exit(2);
});
