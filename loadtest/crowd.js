// crowd.js: USERS people arrive together, each enters once and then polls its
// status, waiting the server's poll_after_ms between polls, until ENTERED.
// Each person calls from an address of its own (X-Forwarded-For: clientAddr
// of its VU number, see lib.js), as the server limits enter and status per
// client address.
//
// Start the server for this run with a short tick and a refill size larger
// than the default (scripts/loadtest.sh does exactly this):
//
//   WAITROOM_REFILL_INTERVAL=1s WAITROOM_REFILL_SIZE=50 WAITROOM_ADMIN_TOKEN=...
//   WAITROOM_INSECURE_USER_IDS=true   (the users are plain ids, see lib.js)
//
//   k6 run -e USERS=2000 -e ADMIN_TOKEN=... -e QUEUE=default loadtest/crowd.js
//
//   USERS          virtual users, one user id each          (default 2000)
//   MAX_DURATION   hard bound for every scenario            (default 5m)
//   ENTER_SPREAD   spread the arrivals uniformly over this  (default 0s)
//   OPERATOR       "0" to skip the operator scenario        (default on)
//   OLD_SIZE, NEW_SIZE, SWITCH_AFTER: see operator.js
//   BASE_URL, QUEUE, ADMIN_TOKEN, RUN_ID: see lib.js
//
// What must hold (each is a counter with a threshold, so k6 exits 99 on a miss):
//   position_increased == 0  a user's position never goes up between two polls
//   lost == 0                a WAITING user never turns NOT_WAITING
//   admitted >= USERS        everyone is ENTERED before MAX_DURATION
//   over_admitted == 0       (monitor) no history point admits more than the
//                            refill size in force at its tick
//   rate_not_following == 0  (operator) after the size is raised, every tick
//                            admits min(new size, line): see operator.js
// The monitor and operator scenarios need ADMIN_TOKEN; without it they are
// left out and the run says so.
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { enter, status, ticket, clientAddr, adminGet, envInt, durationMs, runId, waitReady, ADMIN_TOKEN, BASE_URL, QUEUE } from './lib.js';
import { operator as runOperator } from './operator.js';

const USERS = envInt('USERS', 2000);
const MAX_DURATION = __ENV.MAX_DURATION || '5m';
const MAX_MS = durationMs(MAX_DURATION);
const ENTER_SPREAD_MS = durationMs(__ENV.ENTER_SPREAD || '0s');
const WITH_ADMIN = ADMIN_TOKEN !== '';
const WITH_OPERATOR = WITH_ADMIN && __ENV.OPERATOR !== '0';

const positionIncreased = new Counter('position_increased');
const lost = new Counter('lost');
const admitted = new Counter('admitted');
const overAdmitted = new Counter('over_admitted');
const pointsChecked = new Counter('history_points_checked');
const waitMs = new Trend('wait_to_enter', true);
const polls = new Trend('polls_per_user');

const scenarios = {
  crowd: { executor: 'per-vu-iterations', vus: USERS, iterations: 1, maxDuration: MAX_DURATION, exec: 'crowd', gracefulStop: '5s' },
};
const thresholds = {
  position_increased: ['count==0'],
  lost: ['count==0'],
  admitted: [`count>=${USERS}`],
  http_req_failed: ['rate<0.001'],
  checks: ['rate>0.999'],
};
if (WITH_ADMIN) {
  scenarios.monitor = { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: MAX_DURATION, exec: 'monitor' };
  thresholds.over_admitted = ['count==0'];
  thresholds.history_points_checked = ['count>0'];
}
if (WITH_OPERATOR) {
  scenarios.operator = { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: MAX_DURATION, exec: 'operator' };
  thresholds.rate_not_following = ['count==0'];
}

export const options = {
  scenarios,
  thresholds,
  setupTimeout: '30s',
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(99)', 'max'],
};

export function setup() {
  waitReady();
  if (!WITH_ADMIN) console.warn('crowd: ADMIN_TOKEN unset: monitor and operator scenarios skipped');
  const id = runId();
  console.log(`crowd: ${USERS} users against ${BASE_URL} queue ${QUEUE}, user ids ${id}-<vu>`);
  return { runId: id };
}

// crowd is one user: enter, then poll until ENTERED.
export function crowd(data) {
  positionIncreased.add(0);
  lost.add(0);
  admitted.add(0);
  if (ENTER_SPREAD_MS > 0) sleep((Math.random() * ENTER_SPREAD_MS) / 1000);

  const user = `${data.runId}-${exec.vu.idInTest}`;
  const client = clientAddr(exec.vu.idInTest);
  const start = Date.now();
  const deadline = start + MAX_MS - 10000;
  const res = enter(user, client);
  let t = ticket(res);
  if (!check(res, { 'enter 200 with WAITING or ENTERED': () => t !== null && (t.status === 'WAITING' || t.status === 'ENTERED') })) {
    return;
  }
  let n = 0;
  while (t.status === 'WAITING' && Date.now() < deadline) {
    const last = t;
    check(last, { 'WAITING has poll_after_ms > 0': (x) => x.poll_after_ms > 0 });
    sleep(Math.max(last.poll_after_ms, 50) / 1000);
    n++;
    const r = status(user, client);
    const next = ticket(r);
    if (!check(r, { 'status 200': () => next !== null })) continue; // try again after the same pause
    if (next.status === 'NOT_WAITING') {
      lost.add(1);
      console.error(`crowd: ${user} was WAITING at position ${last.position} and is now NOT_WAITING`);
      return;
    }
    if (next.status === 'WAITING' && next.position > last.position) {
      positionIncreased.add(1);
      console.error(`crowd: ${user} position went up ${last.position} -> ${next.position}`);
    }
    t = next;
  }
  polls.add(n);
  if (t.status === 'ENTERED') {
    admitted.add(1);
    waitMs.add(Date.now() - start);
  } else {
    console.error(`crowd: ${user} still ${t.status} at position ${t.position} when time ran out`);
  }
}

// monitor samples the refill size in force (every 250 ms) while the crowd
// drains, then checks every history point against the largest size seen
// around its tick.
export function monitor() {
  overAdmitted.add(0);
  const start = Date.now();
  const deadline = start + MAX_MS - 5000;
  const sizes = []; // {t, size}
  let interval = 1000;
  let sawWaiting = false;
  let emptySince = 0;
  while (Date.now() < deadline) {
    const q = adminGet('');
    if (q) {
      sizes.push({ t: Date.now(), size: q.refill_size });
      interval = q.refill_interval_ms;
      if (q.waiting > 0) {
        sawWaiting = true;
        emptySince = 0;
      } else if (sawWaiting) {
        emptySince = emptySince || Date.now();
        if (Date.now() - emptySince > 2 * interval) break;
      } else if (Date.now() - start > 30000) {
        break; // the crowd never formed a line; nothing to watch
      }
    }
    sleep(0.25);
  }
  const h = adminGet('/history');
  if (!h || !Array.isArray(h.points) || sizes.length === 0) {
    console.error('monitor: no history or no refill size samples');
    return;
  }
  const slack = interval + 500;
  let over = 0;
  let checked = 0;
  for (const p of h.points) {
    if (p.at_ms < start) continue; // ticks from before this run
    let limit = 0;
    for (const s of sizes) if (s.t >= p.at_ms - slack && s.t <= p.at_ms + slack) limit = Math.max(limit, s.size);
    if (limit === 0) {
      // no sample near this tick: use the last sample taken before it
      for (const s of sizes) if (s.t <= p.at_ms) limit = s.size;
      if (limit === 0) limit = sizes[0].size;
    }
    checked++;
    if (p.admitted > limit) {
      over++;
      console.error(`monitor: tick at ${p.at_ms} admitted ${p.admitted} > refill size ${limit}`);
    }
  }
  overAdmitted.add(over);
  pointsChecked.add(checked);
  console.log(`monitor: ${checked} history points checked, ${over} over the refill size`);
}

export function operator() {
  runOperator();
}
