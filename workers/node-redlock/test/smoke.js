'use strict';
// smoke.sh's checks: see smoke.sh.
const { redis, worker, sleep, checks, granted, refused, code } = require('./lcp');
const [runcmd, addr, password] = process.argv.slice(2);
const prefix = `lockcheck-smoke-${process.pid}-${Date.now()}:`;
const k = (n) => prefix + n;

(async () => {
  const r = await redis(addr, password);
  const w = worker(runcmd);
  const { check, failed } = checks();
  const acq = (thread, key, wait_ms = 0, lease_ms = 5000) => w.req({ type: 'acquire', thread, keys: [k(key)], wait_ms, lease_ms });
  const rel = (thread, key) => w.req({ type: 'release', thread, keys: [k(key)] });
  const ext = (thread, key, lease_ms) => w.req({ type: 'extend', thread, keys: [k(key)], lease_ms });

  const t0 = Date.now();
  const init = await w.req({ type: 'init', protocol: 1, client: 'c1', seed: 1,
    topology: { kind: 'single', nodes: [{ name: 'n1', addr }] }, password,
    lock: { kind: 'mutex', family: 'mutex' },
    options: { lease_ms: 0, watchdog_ms: 30000, wait_ms: 5000, timeout_ms: 3000 }, library_options: {} }, 60000);
  const startup = Date.now() - t0;
  check(`init_ok (${init.library} ${init.version}, ${init.runtime}; ${startup} ms to init_ok)`,
    init.type === 'init_ok' && init.library && /^\d/.test(init.version || '') && (init.kinds || []).includes('mutex') &&
    (init.caps || []).includes('extend'), init);
  if (init.type !== 'init_ok') { console.log(w.stderr); w.kill(); process.exit(1); }

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
  check('threads 3 and 4 acquire b and c concurrently; thread 5 refused b',
    granted(both[0]) && granted(both[1]) && refused(both[2]), both);

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
  m = await w.req({ type: 'acquire', thread: 11, keys: [k('x'), k('y')], wait_ms: 0, lease_ms: 1000 });
  check('two keys in one acquire: an error reply, not a crash', m.type === 'error' && typeof m.code === 'number', m);
  for (const [t, key] of [[4, 'c'], [6, 'b'], [10, 'd']]) await rel(t, key);

  m = await w.req({ type: 'shutdown' });
  check('shutdown_ok', m.type === 'shutdown_ok', m);
  const ex = await w.waitExit(5000);
  check('worker exited 0 within 5 s of shutdown', ex && ex.code === 0, ex);
  check('stdout held only JSON objects', w.badLines.length === 0, w.badLines);
  r.close();
  w.kill();
  console.log(failed() ? `${failed()} check(s) failed; worker stderr:\n${w.stderr}` : 'all checks passed');
  process.exit(failed() ? 1 : 0);
})().catch((e) => { console.error(`smoke.sh: ${e.message || e}`); process.exit(2); });
