'use strict';
// A small LCP/1 driver for the worker's own checks (smoke.sh, faults.sh): starts a worker command, sends
// requests and matches replies and events; plus a raw RESP connection to look at the keys in Redis.
const { spawn } = require('child_process');
const net = require('net');
const readline = require('readline');

function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  const host = addr.slice(0, i), port = Number(addr.slice(i + 1));
  if (!/^127\./.test(host)) throw new Error(`${addr} is not a loopback address`);
  return { host, port };
}

// redis(addr, password): cmd(...args) resolves to the reply (an Error for an error reply).
async function redis(addr, password) {
  const { host, port } = hostPort(addr);
  const s = net.connect(port, host);
  let buf = '';
  const waiters = [];
  s.on('error', (e) => { while (waiters.length) waiters.shift()(e); });
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
  const auth = await cmd('AUTH', password);
  if (auth instanceof Error) throw new Error(`AUTH at ${addr}: ${auth.message}`);
  return { cmd, close: () => s.end() };
}

// worker(runcmd): req(body, timeoutMs) resolves to the reply ({type: 'no reply'} on timeout, {type:
// 'exited'} if the worker died); events collects event messages; badLines what was not a JSON object.
function worker(runcmd) {
  const w = spawn('sh', ['-c', runcmd], { stdio: ['pipe', 'pipe', 'pipe'] });
  const st = { stderr: '', badLines: [], events: [], exited: null };
  w.stderr.on('data', (d) => { st.stderr += d; });
  const pending = new Map();
  readline.createInterface({ input: w.stdout }).on('line', (line) => {
    let m;
    try { m = JSON.parse(line); } catch (e) { st.badLines.push(line); return; }
    if (m === null || typeof m !== 'object' || Array.isArray(m)) { st.badLines.push(line); return; }
    if (m.type === 'event') { st.events.push(m); return; }
    const p = pending.get(m.in_reply_to);
    if (p) { pending.delete(m.in_reply_to); p(m); }
  });
  w.on('exit', (code, sig) => {
    st.exited = { code, sig };
    for (const p of pending.values()) p({ type: 'exited' });
    pending.clear();
  });
  let msgId = 0;
  st.req = (body, timeoutMs = 20000) => {
    const id = ++msgId;
    return new Promise((resolve) => {
      const t = setTimeout(() => { pending.delete(id); resolve({ type: 'no reply' }); }, timeoutMs);
      pending.set(id, (m) => { clearTimeout(t); resolve(m); });
      w.stdin.write(JSON.stringify({ ...body, msg_id: id }) + '\n');
    });
  };
  st.pid = w.pid; // sh -c execs a single command, and run execs node: this is the worker's own process
  st.signal = (sig) => { if (!st.exited) w.kill(sig); };
  st.kill = () => { if (!st.exited) w.kill('SIGKILL'); };
  st.waitExit = async (ms) => { for (let i = 0; i < ms / 50 && !st.exited; i++) await sleep(50); return st.exited; };
  return st;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// checks(): check(name, ok, got) prints one line; failed() counts the failures.
function checks() {
  let failed = 0;
  return {
    check(name, ok, got) {
      if (!ok) failed++;
      console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok ? '' : ': got ' + JSON.stringify(got)}`);
      return ok;
    },
    failed: () => failed,
  };
}

const granted = (m) => m.type === 'acquire_ok' && m.granted === true;
const refused = (m) => m.type === 'acquire_ok' && m.granted === false;
const code = (m, c) => m.type === 'error' && m.code === c;

module.exports = { redis, worker, sleep, checks, granted, refused, code, hostPort };
