// operator.js: an operator raises the refill size while a crowd is waiting,
// and we check that admissions follow. crowd.js runs it as its "operator"
// scenario; it also runs on its own next to any other load:
//
//   k6 run -e ADMIN_TOKEN=... -e QUEUE=crowd loadtest/operator.js
//
//   OLD_SIZE      refill size set first                     (default 50)
//   NEW_SIZE      refill size set at half-time              (default 200)
//   SWITCH_AFTER  time from "line formed" to the switch     (default: half the
//                 time the line needs to drain at OLD_SIZE)
//   MAX_DURATION  hard bound for the whole run              (default 5m)
//
// Timeline: PUT OLD_SIZE, wait until the line has formed (waiting > 0 and no
// longer growing), wait SWITCH_AFTER, PUT NEW_SIZE, wait until the line is
// empty, then read the history. Ticks well before the switch must admit at
// most OLD_SIZE, ticks well after it at most NEW_SIZE, and the mean admitted
// per busy tick after the switch must be higher than before. Any miss adds
// to the counter rate_not_following (threshold count==0). Ticks within one
// refill interval of the switch are not judged: either size may apply there.
import { sleep, fail } from 'k6';
import { Counter } from 'k6/metrics';
import { adminGet, putRefillSize, envInt, durationMs, waitReady, ADMIN_TOKEN, QUEUE } from './lib.js';

const OLD_SIZE = envInt('OLD_SIZE', 50);
const NEW_SIZE = envInt('NEW_SIZE', 200);
const MAX_DURATION = __ENV.MAX_DURATION || '5m';

const rateNotFollowing = new Counter('rate_not_following');

export const options = {
  scenarios: {
    operator: { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: MAX_DURATION, exec: 'operator' },
  },
  thresholds: { rate_not_following: ['count==0'] },
};

export function setup() {
  if (!ADMIN_TOKEN) fail('operator.js needs ADMIN_TOKEN');
  waitReady();
}

function stats(points) {
  const n = points.length;
  const sum = points.reduce((a, p) => a + p.admitted, 0);
  const max = points.reduce((a, p) => Math.max(a, p.admitted), 0);
  return { n, mean: n ? sum / n : 0, max };
}

function miss(msg) {
  console.error(`operator: ${msg}`);
  rateNotFollowing.add(1);
}

export function operator() {
  rateNotFollowing.add(0);
  const deadline = Date.now() + durationMs(MAX_DURATION) - 5000;
  if (!putRefillSize(OLD_SIZE)) return miss(`could not set refill size ${OLD_SIZE}`);
  const q0 = adminGet('');
  if (!q0) return miss('could not read the queue');
  const interval = q0.refill_interval_ms;

  // 1. Wait for the line to form: waiting > 0 and not growing any more.
  let prev = -1;
  let formedAt = 0;
  let waiting = 0;
  while (Date.now() < deadline) {
    const q = adminGet('');
    waiting = q ? q.waiting : 0;
    if (waiting > 0 && waiting <= prev) {
      formedAt = Date.now();
      break;
    }
    prev = waiting;
    sleep(0.5);
  }
  if (!formedAt) return miss('the line never formed');

  // 2. Half-time: the line drains at OLD_SIZE per interval.
  const switchAfter = __ENV.SWITCH_AFTER
    ? durationMs(__ENV.SWITCH_AFTER)
    : Math.max(2 * interval, Math.floor(waiting / OLD_SIZE / 2) * interval);
  console.log(`operator: line formed with ${waiting} waiting; refill ${OLD_SIZE}/${interval}ms, switching to ${NEW_SIZE} in ${switchAfter}ms`);
  sleep(switchAfter / 1000);
  const putStart = Date.now();
  if (!putRefillSize(NEW_SIZE)) return miss(`could not set refill size ${NEW_SIZE}`);
  const putEnd = Date.now();

  // 3. Wait for the line to drain, then for one more tick to be recorded.
  let drained = false;
  while (Date.now() < deadline) {
    const q = adminGet('');
    if (q && q.waiting === 0) {
      drained = true;
      break;
    }
    sleep(0.5);
  }
  if (!drained) miss('the line did not drain before MAX_DURATION');
  sleep(Math.min(2 * interval, 10000) / 1000);

  // 4. Judge the history.
  const h = adminGet('/history');
  if (!h || !Array.isArray(h.points)) return miss('could not read the history');
  const before = h.points.filter((p) => p.at_ms > formedAt && p.at_ms < putStart - interval);
  const after = h.points.filter((p) => p.at_ms > putEnd + interval && p.admitted > 0);
  const b = stats(before);
  const a = stats(after);
  console.log(
    `operator: admitted per tick before switch n=${b.n} mean=${b.mean.toFixed(1)} max=${b.max} (size ${OLD_SIZE}); ` +
      `after n=${a.n} mean=${a.mean.toFixed(1)} max=${a.max} (size ${NEW_SIZE})`,
  );
  if (b.n === 0) miss('no tick recorded before the switch');
  if (a.n === 0) miss('no tick with admissions recorded after the switch');
  if (b.max > OLD_SIZE) miss(`a tick before the switch admitted ${b.max} > ${OLD_SIZE}`);
  if (a.max > NEW_SIZE) miss(`a tick after the switch admitted ${a.max} > ${NEW_SIZE}`);
  if (a.n > 0 && b.n > 0 && !(a.mean > b.mean)) miss(`admission rate did not rise (${b.mean} -> ${a.mean})`);
}

export default operator;
