// operator.js: an operator raises the refill size while a crowd is waiting,
// and we check that admissions follow. crowd.js runs it as its "operator"
// scenario; it also runs on its own next to any other load:
//
//   k6 run -e ADMIN_TOKEN=... -e QUEUE=crowd loadtest/operator.js
//
//   OLD_SIZE      refill size set first                     (default 50)
//   NEW_SIZE      refill size set at the switch             (default 200)
//   SWITCH_AFTER  longest wait from "line formed" to the switch (default:
//                 half the time the line needs to drain at OLD_SIZE)
//   MAX_DURATION  hard bound for the whole run              (default 5m)
//
// Timeline: PUT OLD_SIZE, wait until the line has formed (waiting > 0 and no
// longer growing), then switch (PUT NEW_SIZE) after SWITCH_AFTER, or as soon
// as only SWITCH_LINE = NEW_SIZE + 3 * OLD_SIZE are left waiting, whichever
// comes first, but never within two refill intervals of the line forming;
// wait until the line is empty, then read the history.
//
// What the check expects is derived from the line itself, so it holds for
// any crowd large enough to show the change. The history gives, for each
// tick, the line at its start (the previous point's "waiting"): with
// everyone already in line, a tick of size S admits min(S, line - abandoned)
// (the places it drops as abandoned take no token). Every tick well before
// the switch must admit exactly that with S = OLD_SIZE, every tick well after
// it with S = NEW_SIZE; ticks within one refill interval of the switch are
// not judged, as either size may apply there. SWITCH_LINE leaves enough line
// for that: at most one tick at OLD_SIZE before the PUT lands and one
// unjudged tick at NEW_SIZE, and still more than OLD_SIZE waiting for the
// next, the one that shows the raise. A crowd too small for that (the line
// must form with about NEW_SIZE + 6 * OLD_SIZE waiting: a crowd of about
// NEW_SIZE + 9 * OLD_SIZE users arriving together) fails with a message
// saying so; scripts/loadtest.sh scales the sizes with CROWD_USERS. Any miss
// adds to the counter rate_not_following (threshold count==0).
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

function miss(msg) {
  console.error(`operator: ${msg}`);
  rateNotFollowing.add(1);
}

// SWITCH_LINE is the line left at the switch: see the header.
const SWITCH_LINE = NEW_SIZE + 3 * OLD_SIZE;
// MIN_FORMED is the line the crowd must form for two judged intervals at
// OLD_SIZE before the switch and SWITCH_LINE after them (one more tick may
// come between the line forming and the first judged one).
const MIN_FORMED = SWITCH_LINE + 3 * OLD_SIZE;

// judge checks the ticks of points (oldest first) whose start lies in
// (from, to) against size S: each must admit min(S, line at its start -
// abandoned). It returns how many were judged, and how many of those had a
// line longer than OLD_SIZE (they show which size was in force).
function judge(points, from, to, size, label) {
  let n = 0;
  let telling = 0;
  for (let i = 1; i < points.length; i++) {
    const p = points[i];
    if (p.at_ms <= from || p.at_ms >= to) continue;
    const line = points[i - 1].waiting - p.abandoned;
    if (line <= 0) continue; // the line had drained: nothing to admit
    n++;
    const want = Math.min(size, line);
    if (line > OLD_SIZE) telling++;
    if (p.admitted > size) {
      miss(`a tick ${label} the switch (at ${p.at_ms}) admitted ${p.admitted} > refill size ${size}`);
    } else if (p.admitted < want) {
      miss(`a tick ${label} the switch (at ${p.at_ms}) admitted ${p.admitted} of a line of ${line}: want ${want} at refill size ${size}`);
    }
  }
  return { n, telling };
}

export function operator() {
  rateNotFollowing.add(0);
  if (!(NEW_SIZE > OLD_SIZE)) return miss(`NEW_SIZE (${NEW_SIZE}) must be larger than OLD_SIZE (${OLD_SIZE})`);
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
  if (waiting < MIN_FORMED) {
    console.warn(
      `operator: the line formed with ${waiting} waiting, fewer than the ${MIN_FORMED} a switch from ${OLD_SIZE} to ${NEW_SIZE} needs ` +
        `to be judged on both sides (a crowd of about ${NEW_SIZE + 9 * OLD_SIZE}); the check may find nothing to judge`,
    );
  }

  // 2. The switch: at half-time (the line drains at OLD_SIZE per interval),
  // or when SWITCH_LINE are left, but not before two intervals have passed.
  const switchAfter = __ENV.SWITCH_AFTER
    ? durationMs(__ENV.SWITCH_AFTER)
    : Math.max(2 * interval, Math.floor(waiting / OLD_SIZE / 2) * interval);
  console.log(
    `operator: line formed with ${waiting} waiting; refill ${OLD_SIZE}/${interval}ms, switching to ${NEW_SIZE} ` +
      `within ${switchAfter}ms or when ${SWITCH_LINE} are left`,
  );
  const earliest = formedAt + 2 * interval;
  const latest = Math.max(earliest, formedAt + switchAfter);
  let left = waiting;
  while (Date.now() < latest) {
    if (Date.now() >= earliest && left <= SWITCH_LINE) break;
    sleep(0.1);
    const q = adminGet('');
    if (q) left = q.waiting;
  }
  const putStart = Date.now();
  if (!putRefillSize(NEW_SIZE)) return miss(`could not set refill size ${NEW_SIZE}`);
  const putEnd = Date.now();
  console.log(`operator: switched ${putStart - formedAt}ms after the line formed, with ${left} waiting`);

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

  // 4. Judge the history against what each tick's line allowed.
  const h = adminGet('/history');
  if (!h || !Array.isArray(h.points)) return miss('could not read the history');
  const b = judge(h.points, formedAt, putStart - interval, OLD_SIZE, 'before');
  const a = judge(h.points, putEnd + interval, Infinity, NEW_SIZE, 'after');
  console.log(
    `operator: ticks judged before the switch ${b.n} (size ${OLD_SIZE}), after ${a.n} (size ${NEW_SIZE}, ` +
      `${a.telling} with more than ${OLD_SIZE} waiting), each admitting min(size, line)`,
  );
  if (b.n === 0) miss('no tick with a line to judge before the switch');
  if (a.telling === 0) {
    miss(
      `no tick after the switch had more than ${OLD_SIZE} waiting, so none could show the raise: ` +
        `the line formed with ${waiting} and was ${left} at the switch; a switch from ${OLD_SIZE} to ${NEW_SIZE} ` +
        `needs a line of ${MIN_FORMED} (a crowd of about ${NEW_SIZE + 9 * OLD_SIZE})`,
    );
  }
}

export default operator;
