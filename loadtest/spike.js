// spike.js: a flash crowd at a fixed arrival rate. Every iteration is a new
// user (id = run id + k6's global iteration number) who enters the queue
// once, from its own address (X-Forwarded-For: clientAddr of the iteration
// number, see lib.js; the server limits enter per client address).
//
//   k6 run -e RATE=500 -e DURATION=60s -e BASE_URL=http://127.0.0.1:8080 loadtest/spike.js
//
// The server must run with WAITROOM_INSECURE_USER_IDS=true (plain ids, see
// lib.js); scripts/loadtest.sh starts it so.
//
//   RATE       enters per second                    (default 500)
//   DURATION   how long the spike lasts             (default 60s)
//   P99_MS     p99 bound for enter, milliseconds    (default 5)
//   VUS        pre-allocated VUs / MAX_VUS ceiling  (default 50 / 1000)
//   BASE_URL, QUEUE, RUN_ID: see lib.js
//
// Fails (exit code 99) when more than 0.1 % of enters fail, when the enter
// p99 is at or above P99_MS, or when more than 0.1 % of checks fail.
// constant-arrival-rate is open-model: a slow server does not slow the
// arrivals down, so latency is not hidden by coordinated omission; k6 reports
// dropped_iterations if it runs out of VUs (raise MAX_VUS then).
import { check } from 'k6';
import exec from 'k6/execution';
import { enter, ticket, clientAddr, envInt, runId, waitReady, BASE_URL, QUEUE } from './lib.js';

const RATE = envInt('RATE', 500);
const DURATION = __ENV.DURATION || '60s';
const P99_MS = Number(__ENV.P99_MS || 5);

export const options = {
  scenarios: {
    spike: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: envInt('VUS', 50),
      maxVUs: envInt('MAX_VUS', 1000),
      gracefulStop: '5s',
    },
  },
  thresholds: {
    'http_req_failed{name:enter}': ['rate<0.001'],
    'http_req_duration{name:enter}': [`p(99)<${P99_MS}`],
    checks: ['rate>0.999'],
  },
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(99)', 'max'],
};

export function setup() {
  waitReady();
  const id = runId();
  console.log(`spike: ${RATE}/s for ${DURATION} against ${BASE_URL} queue ${QUEUE}, user ids ${id}-<n>`);
  return { runId: id };
}

export default function (data) {
  const n = exec.scenario.iterationInTest;
  const user = `${data.runId}-${n}`;
  const res = enter(user, clientAddr(n));
  const t = ticket(res);
  check(res, {
    'enter 200': (r) => r.status === 200,
    'enter ticket is ours': () => t !== null && t.user_id === user && t.queue === QUEUE,
    'enter WAITING or ENTERED': () => t !== null && (t.status === 'WAITING' || t.status === 'ENTERED'),
    'WAITING has position and poll hint': () =>
      t !== null && (t.status !== 'WAITING' || (t.position >= 1 && t.poll_after_ms > 0)),
  });
}
