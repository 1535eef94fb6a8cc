// Entering with a proof of work, when the queue asks for one: an enter
// refused with challenge_required made no place. The page gets a
// challenge, solves it in a Web Worker (waiting-pow.js, pow-worker.js)
// while it says it is checking the browser and about how long that
// should take yet, and enters with {challenge, nonce}. A challenge that
// expires before it is solved, or a solution refused again, gets a new
// challenge, at most CHALLENGE_ATTEMPTS in all, then the error panel.
// Once asked, every later enter of this page solves one first.
//
// What follows a solve is the flow's (waiting-flow.js), which passes it in
// as callbacks (flow: {enter(solution), fail(text), waitOut(err, next)}):
// this module imports nothing of it.

import { t } from './waiting-messages.js';
import { page, queueAPI } from './waiting-state.js';
import { api, backoff, away } from './waiting-api.js';
import { solve, stopSolver } from './waiting-pow.js';
import { render, showCheckProgress } from './waiting-render.js';
import { attempt, later, stopTimer } from './waiting-attempt.js';

// Challenges fetched for one join before the page gives up.
const CHALLENGE_ATTEMPTS = 3;

const challengeURL = queueAPI + '/challenge';

// onChallenge answers an enter refused with challenge_required: solve
// one (again) and enter.
export function onChallenge(flow) {
  attempt.failures = 0;
  page.retryInMs = 0;
  attempt.needChallenge = true;
  solveAndEnter(flow);
}

// solveAndEnter gets a challenge, solves it in the worker and enters
// with the solution. A challenge that expires first, a failed fetch or
// an unusable answer gets another after a backoff, at most
// CHALLENGE_ATTEMPTS since the last ticket; then the error panel.
export async function solveAndEnter(flow) {
  stopTimer();
  stopSolver();
  const gen = attempt.generation;
  if (attempt.challengeTries >= CHALLENGE_ATTEMPTS) {
    page.checking = false;
    flow.fail(t('errChallenge'));
    return;
  }
  attempt.challengeTries++;
  page.checking = true;
  page.checkLeftMs = NaN; // the plain words until the worker's rate is known
  render();
  showCheckProgress(0);
  attempt.inFlight = true;
  let solution;
  try {
    const ch = await api('GET', challengeURL);
    if (gen !== attempt.generation) return;
    if (typeof ch.challenge !== 'string' || !(ch.difficulty >= 0)) {
      throw Object.assign(new Error('bad challenge'), { status: 0, code: 'bad_response' });
    }
    solution = await solve(ch, onProgress);
  } catch (err) {
    if (gen !== attempt.generation || err.code === 'cancelled') return;
    attempt.inFlight = false;
    onUnsolved(err, flow);
    return;
  }
  if (gen !== attempt.generation) return;
  showCheckProgress(100);
  flow.enter(solution);
}

// onProgress shows a report of the solve: how far, and the time left
// (render says it, waiting-format.js checkText).
function onProgress(p) {
  page.checkLeftMs = p.leftMs;
  render();
  showCheckProgress(p.pct);
}

// onUnsolved handles a challenge that brought no solution.
function onUnsolved(err, flow) {
  if (err.code === 'queue_not_found' || err.code === 'no_worker') {
    page.checking = false;
    flow.fail(err.code === 'queue_not_found' ? t('errQueue') : t('errChallenge'));
    return;
  }
  if (away(err)) {
    // The room is away: no challenge was tried, so none is counted.
    attempt.challengeTries--;
    page.checking = false;
    flow.waitOut(err, () => solveAndEnter(flow));
    return;
  }
  // Expired, a failed fetch, a solver error: another challenge, later.
  const n = attempt.challengeTries;
  const wait = err.code === 'rate_limited' ? Math.max(err.retryAfterMs, backoff(n)) : backoff(n);
  later(() => solveAndEnter(flow), Math.round(wait));
}
