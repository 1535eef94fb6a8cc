// Proof of work: solving a queue's challenge before entering. The search
// runs in a Web Worker (pow-worker.js, a classic worker from the same
// origin, as the CSP wants), so the page stays responsive meanwhile.

import { toLocal } from './waiting-api.js';

const WORKER_URL = '/_waitroom/static/pow-worker.js';
const CHALLENGE_MARGIN_MS = 2000; // a solve is abandoned this long before its challenge expires

let solver = null; // {worker, cancel} of the solve in progress

// solve runs the challenge ch ({challenge, difficulty, expires_at}) in a
// worker and resolves to the solution {challenge, nonce}, or rejects (code
// expired) when the challenge would expire before the enter could use it.
// progress gets, at each report of the worker, {pct, leftMs}: the chance,
// in %, that a solution has been found by now, and the time expected to be
// left (checkLeft). stopSolver cancels it (code cancelled); a worker that cannot run rejects
// with code no_worker.
export function solve(ch, progress) {
  return new Promise((resolve, reject) => {
    const fault = (code, msg) => Object.assign(new Error(msg), { status: -1, code: code });
    let worker;
    try {
      worker = new Worker(WORKER_URL);
    } catch (e) {
      reject(fault('no_worker', String(e)));
      return;
    }
    const expected = Math.pow(2, ch.difficulty);
    const started = performance.now();
    // expires_at is on the server's clock; at the latest 5 minutes.
    const expires = toLocal(Date.parse(ch.expires_at || ''));
    const left = isFinite(expires) ? expires - Date.now() - CHALLENGE_MARGIN_MS : 300000;
    let expiry = 0;
    const finish = (fn, v) => {
      clearTimeout(expiry);
      worker.terminate();
      if (solver && solver.worker === worker) solver = null;
      fn(v);
    };
    solver = { worker: worker, cancel: () => finish(reject, fault('cancelled', 'cancelled')) };
    expiry = setTimeout(() => finish(reject, fault('expired', 'challenge expired')), Math.max(0, left));
    worker.onmessage = (e) => {
      const m = e.data || {};
      if (m.type === 'progress') {
        // The chance of having found a solution by now: it rises
        // steadily and reaches 100 % only when one is found.
        progress({
          pct: 100 * (1 - Math.exp(-m.tried / expected)),
          leftMs: checkLeft(expected, m.tried, m.ms, performance.now() - started),
        });
      } else if (m.type === 'done') {
        finish(resolve, { challenge: ch.challenge, nonce: String(m.nonce) });
      } else {
        finish(reject, fault('solver', m.message || 'solver failed'));
      }
    };
    // A worker that cannot load (blocked, missing) fails here.
    worker.onerror = (e) => {
      e.preventDefault();
      finish(reject, fault('no_worker', e.message || 'worker failed'));
    };
    worker.postMessage({ challenge: ch.challenge, difficulty: ch.difficulty });
  });
}

// checkLeft is the time (ms) a solve of expected hashes on average is
// expected to take beyond elapsed, at the rate the worker reports (tried
// hashes in workerMs): NaN while there is no rate yet, below 0 once the
// solve has run past its expectation. A solve's remaining work is, strictly,
// 2^difficulty hashes at every moment (each hash is a fresh draw), which
// would read as a countdown that never moves; so the page counts down to
// the average total and says "about", and past it that the check is
// taking longer than expected. elapsed is the page's own clock, which
// includes the worker's start, as the person waits through it.
export function checkLeft(expected, tried, workerMs, elapsed) {
  if (!(tried > 0 && workerMs > 0)) return NaN;
  return (expected * workerMs) / tried - elapsed;
}

export function stopSolver() {
  if (solver) solver.cancel();
}
