// The waiting page's flow for /q/{queue}: joins the line, polls the
// user's place and moves them on when it is their turn. A state machine
// over the queue API: each answer (or error) sets the state in
// waiting-state.js, renders it and decides the next request.
//
// The place belongs to whoever holds its credential, which the server keeps
// in an HttpOnly cookie (wr_place_{queue}): this script never sees it and
// names nobody. It asks for "my" status, enters with an empty body (or a
// site's join token from ?join=) and leaves with DELETE .../place; the
// browser sends the cookie with each. The member id in a ticket's user_id
// only keys the progress kept in localStorage; it proves nothing.
//
// The rule that shapes this file: a failed request never re-enters the line.
// Entering again puts the user at the back, so after any error we only ask
// for the status, and only a successful answer that we hold no place
// (NOT_WAITING, or a status that finds no valid cookie) may lead to a new
// enter. Three refusals of an enter are definite answers that changed
// nothing, not failures, and are the only ones answered with another enter:
//
//   - challenge_required: the queue asks for proof of work. The page gets
//     a challenge, solves it in a Web Worker (pow-worker.js, same origin as
//     the CSP wants) while it says it is checking the browser, and enters
//     with {challenge, nonce}. A challenge that expires before it is
//     solved, or a solution refused again, gets a new challenge, at most
//     CHALLENGE_ATTEMPTS in all, then the error panel. Once asked, every
//     later enter of this page solves one first.
//   - queue_full: the line is at its cap. The page says when to try again
//     (Retry-After, shown as local time) with a button, and tries once by
//     itself at that time, with jitter so full pages do not return at once.
//   - rate_limited (also for a status): the call is made again after
//     Retry-After, with jitter and growing if it repeats, and nothing is
//     shown: it is the server pacing us, not a lost connection.
//
// While the operator pauses the line, WAITING tickets say paused: true.
// Nobody is admitted then and every place is kept, so the page says so,
// promises no wait time, and goes on polling as the server suggests; the
// first ticket without the flag brings the estimate back.
//
// A scheduled opening. Before its pre-queue window an enter answers 403
// not_open with prequeue_from and opens_at: a definite "not yet", not a
// failure, and no place is held. The page counts down to prequeue_from and
// then enters once (a not_open answer again only reschedules). In the
// window a WAITING ticket has position 0 and opens_at: the user is in the
// draw, and at opens_at everyone in it gets a place in a random order, so
// the page shows no number, only the countdown. Times are counted on the
// server's clock, estimated from the Date header of its answers.
//
// A place not heard from for a while (no enter or status: the page was
// closed, frozen or asleep) is dropped when the line reaches it, and the
// ticket then says NOT_WAITING with reason "abandoned". The page does not
// rejoin by itself then: it explains, and one click joins again at the back.

import { t } from './waiting-messages.js';
import { page, queue, returnPath, usedElsewhere, storedPlace, readPlace, savePlace, clearPlace } from './waiting-state.js';
import { api, serverNow, transient, backoff, away, awayWait } from './waiting-api.js';
import { solve, stopSolver } from './waiting-pow.js';
import { turnStep } from './waiting-handoff.js';
import { render, say, announce, forgetAnnounced, showCheckProgress } from './waiting-render.js';
import { when, hhmm } from './waiting-format.js';
import { alertTurn, whenSeen } from './waiting-alerts.js';

const FALLBACK_POLL_MS = 2000;
const MIN_POLL_MS = 250; // guards against a server hint of 0 hammering us
const DELETE_ATTEMPTS = 4;
const MAX_TIMER_MS = 3600000; // longer waits re-arm: setTimeout overflows past ~24.8 days
// Before a scheduled opening's pre-queue window the page enters at a
// random moment within this much of the window's start (at most a tenth
// of the window): nothing is gained by being first in a draw, so a crowd
// of open pages need not hit the server in the same instant.
const SPREAD_MAX_MS = 3000;
// Proof of work: challenges fetched for one join before the page gives up.
const CHALLENGE_ATTEMPTS = 3;
// A full line's automatic retry comes up to this much after its time
// (at most a tenth of the wait, at least a second's spread).
const FULL_SPREAD_MAX_MS = 5000;
const LIMIT_JITTER = 0.2; // a rate-limited call waits Retry-After plus up to 20 %
// Why a place ended (NOT_WAITING reason) -> the notice shown after the
// single automatic re-enter. "abandoned" is not here: it never re-enters.
const REJOIN_NOTICES = {
  expired: 'rejoinedExpired',
  done: 'rejoinedDone',
  removed: 'rejoinedRemoved',
  left: 'rejoinedLeft',
};

const base = '/api/v1/queues/' + encodeURIComponent(queue);

let hadPlace = false; // seen WAITING/ENTERED since the last (re)join
let reentered = false; // the single re-enter after losing a place is used up
let failures = 0;
let timer = 0;
let inFlight = false;
let generation = 0; // bumped on leave/join so late answers of an old attempt are dropped
let pendingDelete = Promise.resolve();
let enterAt = 0; // before a scheduled opening: the local time of the enter it waits for
let notOpenAgain = 0; // not_open answers in a row after the window should have opened
// Proof of work (see the top of the file).
let needChallenge = false; // the queue asked for one: later enters solve first
let challengeTries = 0; // challenges fetched since the last ticket or join
let limited = 0; // rate_limited answers in a row
let fullAutoUsed = false; // a full line's automatic retry is used since the last ticket or click

// start shows the page's first state and makes its first request. The
// cookie may hold a place from an earlier visit (or an admission): ask
// first, never enter blindly. A join token enters at once, which keeps
// the account's place if it holds one already.
export function start() {
  page.resuming = !page.joinToken && !page.handoff && !!storedPlace();
  render();
  if (page.handoff) step('enter'); // a hand-over proves the place: no challenge
  else if (page.joinToken) enter();
  else step('status');
}

function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(() => step('status'), ms);
}

// enter joins the line, with a solved challenge first when the queue
// has asked this page for one.
function enter() {
  if (needChallenge) solveAndEnter();
  else step('enter');
}

// step runs one request; every answer or error decides the next one.
// An enter carries the join token while there is one, and solution, a
// solved challenge {challenge, nonce}, when given.
async function step(action, solution) {
  clearTimeout(timer);
  const gen = generation;
  inFlight = true;
  let tk;
  try {
    if (action === 'enter') {
      const moving = page.handoff;
      const body = moving ? { handoff: moving } : page.joinToken ? { join_token: page.joinToken } : {};
      if (solution) {
        body.challenge = solution.challenge;
        body.nonce = solution.nonce;
      }
      tk = await api('POST', base + '/enter', body);
    } else {
      tk = await api('GET', base + '/status');
    }
  } catch (err) {
    if (gen !== generation) return;
    page.checking = false;
    if (err.code === 'rate_limited') {
      onLimited(action, solution, err);
      return;
    }
    limited = 0;
    if (action === 'enter' && err.code === 'challenge_required') {
      // Definite: no place was made. Solve one (again) and enter.
      failures = 0;
      page.retryInMs = 0;
      needChallenge = true;
      solveAndEnter();
      return;
    }
    if (action === 'enter' && err.code === 'queue_full') {
      failures = 0;
      page.retryInMs = 0;
      onFull(err);
      return;
    }
    if (action === 'enter' && err.code === 'not_open') {
      // A definite "not yet": no place is held, nothing failed. The
      // answer set the place cookie, which the later enter proves.
      failures = 0;
      page.retryInMs = 0;
      dropJoinToken();
      onNotOpen(err.detail);
      return;
    }
    if (err.code === 'place_moved') {
      // Definite: another device holds this place now (the server
      // cleared this browser's cookie).
      onMoved();
      return;
    }
    if (action === 'enter' && err.code === 'invalid_handoff') {
      // Used, expired or mistyped: nothing changed. Say so; the user
      // asks the other device for a new one, or joins here.
      dropHandoff();
      fail(t('moveInvalid'));
      return;
    }
    if (action === 'status' && err.code === 'invalid_place') {
      // A definite answer: this browser proves no place (no cookie yet,
      // or it expired). Not a failure to back off from.
      failures = 0;
      page.retryInMs = 0;
      onNoPlace(action);
      return;
    }
    onError(err);
    return;
  } finally {
    if (gen === generation) inFlight = false;
  }
  if (gen !== generation) return;
  failures = 0;
  page.retryInMs = 0;
  limited = 0;
  page.checking = false;
  challengeTries = 0;
  fullAutoUsed = false;
  if (action === 'enter') {
    if (page.handoff) page.notice = 'movedHere';
    dropJoinToken();
    dropHandoff();
  }
  onTicket(tk, action);
}

// onLimited makes a rate-limited call again once the server allows it:
// a 429 changed nothing, so an enter is made again (with the same
// solution: its challenge was not used) and a status asked again. The
// wait is Retry-After plus jitter, never less, and grows like a backoff
// if the refusals go on; the page shows nothing, its last answer stands.
function onLimited(action, solution, err) {
  limited++;
  const wait = Math.max(err.retryAfterMs || 0, backoff(limited)) * (1 + Math.random() * LIMIT_JITTER);
  clearTimeout(timer);
  timer = setTimeout(() => step(action, solution), Math.min(MAX_TIMER_MS, Math.round(wait)));
}

// solveAndEnter gets a challenge, solves it in the worker and enters
// with the solution. A challenge that expires first, a failed fetch or
// an unusable answer gets another after a backoff, at most
// CHALLENGE_ATTEMPTS since the last ticket; then the error panel.
async function solveAndEnter() {
  clearTimeout(timer);
  stopSolver();
  const gen = generation;
  if (challengeTries >= CHALLENGE_ATTEMPTS) {
    page.checking = false;
    fail(t('errChallenge'));
    return;
  }
  challengeTries++;
  page.checking = true;
  render();
  showCheckProgress(0);
  inFlight = true;
  let solution;
  try {
    const ch = await api('GET', base + '/challenge');
    if (gen !== generation) return;
    if (typeof ch.challenge !== 'string' || !(ch.difficulty >= 0)) {
      throw Object.assign(new Error('bad challenge'), { status: 0, code: 'bad_response' });
    }
    solution = await solve(ch, showCheckProgress);
  } catch (err) {
    if (gen !== generation || err.code === 'cancelled') return;
    inFlight = false;
    if (err.code === 'queue_not_found' || err.code === 'no_worker') {
      page.checking = false;
      fail(err.code === 'queue_not_found' ? t('errQueue') : t('errChallenge'));
      return;
    }
    if (away(err)) {
      // The room is away: no challenge was tried, so none is counted.
      challengeTries--;
      page.checking = false;
      waitOut(err, solveAndEnter);
      return;
    }
    // Expired, a failed fetch, a solver error: another challenge, later.
    const wait = err.code === 'rate_limited' ? Math.max(err.retryAfterMs, backoff(challengeTries)) : backoff(challengeTries);
    timer = setTimeout(solveAndEnter, Math.round(wait));
    return;
  }
  if (gen !== generation) return;
  showCheckProgress(100);
  step('enter', solution);
}

// onFull shows that the line is at its cap and when to try again, and
// arms the one automatic retry: at that time, plus jitter. After that
// one, a line still full leaves the retry to the button.
function onFull(err) {
  clearTimeout(timer);
  let wait = err.retryAfterMs;
  if (!(wait > 0)) wait = Date.parse((err.detail && err.detail.retry_at) || '') - serverNow();
  if (!(wait > 0)) wait = backoff(1);
  page.fullAt = Date.now() + wait;
  page.fullRetryAt = 0;
  if (!fullAutoUsed) {
    fullAutoUsed = true;
    page.fullRetryAt = page.fullAt + Math.random() * Math.min(FULL_SPREAD_MAX_MS, Math.max(1000, wait / 10));
  }
  hadPlace = false;
  page.ticket = null;
  clearPlace();
  page.state = 'full';
  page.resuming = false;
  render();
  say(t('fullTitle') + '. ' + t('fullBody', { time: hhmm(page.fullAt) }));
  if (page.fullRetryAt) armFull();
}

function armFull() {
  clearTimeout(timer);
  timer = setTimeout(fullWhenDue, Math.min(MAX_TIMER_MS, Math.max(0, page.fullRetryAt - Date.now())));
}

function fullWhenDue() {
  if (page.state !== 'full' || inFlight || !page.fullRetryAt) return;
  if (Date.now() < page.fullRetryAt) {
    armFull();
    return;
  }
  retryFull(false);
}

// retryFull enters again from the full panel: by itself once, or when
// the user asks (which earns one more automatic retry if still full).
export function retryFull(byUser) {
  if (page.state !== 'full' || inFlight) return;
  clearTimeout(timer);
  page.fullRetryAt = 0;
  if (byUser) {
    fullAutoUsed = false;
    challengeTries = 0;
  }
  page.state = 'loading';
  render();
  enter();
}

// dropJoinToken forgets the join token once the server has answered an
// enter with it: the cookie now names the account's place, and a reload
// (or a bookmark) must not send a token that may have expired meanwhile.
function dropJoinToken() {
  if (!page.joinToken) return;
  page.joinToken = '';
  try {
    const u = new URL(location.href);
    u.searchParams.delete('join');
    history.replaceState(history.state, '', u.pathname + u.search + u.hash);
  } catch (e) { /* the address keeps the token; the page still works */ }
}

// dropHandoff forgets a hand-over once an enter with it is answered: it
// is used, and the address must not keep it (a reload, a shared tab).
function dropHandoff() {
  if (!page.handoff) return;
  page.handoff = '';
  try {
    const u = new URL(location.href);
    if (u.searchParams.has('handoff')) {
      u.searchParams.delete('handoff');
      history.replaceState(history.state, '', u.pathname + u.search + u.hash);
    }
  } catch (e) { /* the address keeps the used token; it no longer works */ }
}

// onMoved shows that this page's place moved to another device. The
// page stops polling; one click joins again, at the back.
function onMoved() {
  clearTimeout(timer);
  stopSolver();
  clearPlace();
  hadPlace = false;
  page.ticket = null;
  page.notice = '';
  page.state = 'moved';
  page.retryInMs = 0;
  render();
  say(t('movedTitle'));
}

// useHandoff takes over the place another device handed over (a code
// typed here): one enter with it; this page's own place, if any, is
// given up by the server for it.
export function useHandoff(code) {
  if (!code || inFlight) return;
  generation++;
  clearTimeout(timer);
  stopSolver();
  page.handoff = code;
  page.checking = false;
  page.state = 'loading';
  render();
  step('enter');
}

function onError(err) {
  if (!transient(err)) {
    if (err.code === 'invalid_join_token') {
      // Entering again with the same link would fail the same way.
      fail(t('errJoin'), false);
      return;
    }
    fail(err.code === 'queue_not_found' ? t('errQueue') : t('errGeneric', { code: err.code }));
    return;
  }
  if (away(err)) {
    waitOut(err, () => step('status')); // a status poll, never an enter (see top of file)
    return;
  }
  failures++;
  page.unavailable = false;
  page.retryInMs = backoff(failures);
  page.retryAt = Date.now() + page.retryInMs;
  render();
  schedule(page.retryInMs); // always a status poll, never an enter (see top of file)
}

// waitOut waits while the room is away (its Redis, or waitroom behind a
// proxy: 502-504), saying so, and that the place is kept, with the
// seconds to the next try; then next. The waits grow to a minute
// (awayWait): every page in line asks a room that is coming back.
function waitOut(err, next) {
  failures++;
  page.unavailable = true;
  page.retryInMs = awayWait(failures, err);
  page.retryAt = Date.now() + page.retryInMs;
  render();
  clearTimeout(timer);
  timer = setTimeout(next, page.retryInMs);
}

function onTicket(tk, action) {
  page.updatedAt = new Date();
  if (tk.user_id !== page.member || action === 'enter') {
    page.lowest = 0; // a new place, or the back of the line again
  }
  if (tk.user_id !== page.member) {
    page.member = tk.user_id || '';
    page.place = readPlace(page.member);
  }
  switch (tk.status) {
    case 'WAITING':
      hadPlace = true;
      page.opening = null;
      notOpenAgain = 0;
      // In a draw (position 0) there is no number to measure progress
      // from yet; the first real position starts it.
      if (tk.position > 0 && (!page.place || tk.position > page.place.initial_position)) {
        savePlace({ queue: queue, user_id: page.member, initial_position: tk.position, joined_at: Date.now() });
      }
      // Never a higher number than already shown while in line: an
      // estimate far back may waver, the exact one near the head is exact.
      if (tk.position > 0) {
        if (tk.position_estimated && page.lowest > 0 && tk.position > page.lowest) {
          tk = Object.assign({}, tk, { position: page.lowest });
        }
        page.lowest = page.lowest > 0 ? Math.min(page.lowest, tk.position) : tk.position;
      }
      page.ticket = tk;
      page.state = 'waiting';
      render();
      announce(tk);
      schedule(tk.poll_after_ms > 0 ? Math.max(MIN_POLL_MS, tk.poll_after_ms) : FALLBACK_POLL_MS);
      return;
    case 'ENTERED':
      enterTurn(tk);
      return;
    case 'NOT_WAITING':
      onNoPlace(action, tk.reason || '');
      return;
    default:
      onError(Object.assign(new Error('unknown status'), { status: 0, code: 'bad_response' }));
  }
}

// onNoPlace handles a successful answer that we hold no place. Before we
// ever held one in this attempt this is just the first join (or a place
// from an earlier visit that has gone); after holding one we allow exactly
// one re-enter. An enter answered with NOT_WAITING would loop, so it ends
// here too. A place dropped as abandoned is never rejoined by itself: the
// user was away, and decides.
function onNoPlace(action, reason) {
  if (action === 'status' && reason === 'abandoned') {
    release();
    return;
  }
  if ((hadPlace && reentered) || action === 'enter') {
    clearPlace();
    fail(t('errLost'));
    return;
  }
  if (hadPlace || storedPlace() || REJOIN_NOTICES[reason]) page.notice = REJOIN_NOTICES[reason] || 'rejoined';
  if (usedElsewhere) page.notice = 'usedElsewhere';
  if (hadPlace) reentered = true;
  hadPlace = false;
  clearPlace();
  page.ticket = null;
  page.resuming = false;
  render();
  enter();
}

// release shows that the place was dropped as abandoned and offers to
// join again at the back (joinAgain: one click, one enter).
function release() {
  clearTimeout(timer);
  clearPlace();
  hadPlace = false;
  page.ticket = null;
  page.notice = '';
  page.state = 'released';
  page.retryInMs = 0;
  render();
  say(t('releasedTitle') + '. ' + t('releasedBody'));
}

// onNotOpen waits for a scheduled opening's pre-queue window and then
// enters once. An answer that it is still not open, when by our estimate
// the window should have opened (the clocks disagree, or the operator
// moved it), backs off like a failure would, so no page hammers.
function onNotOpen(detail) {
  clearTimeout(timer);
  const from = Date.parse(detail.prequeue_from || '');
  const opens = Date.parse(detail.opens_at || '');
  page.opening = { from: from, opens: opens };
  hadPlace = false;
  page.ticket = null;
  clearPlace();
  let wait = from - serverNow();
  if (wait > 0) {
    notOpenAgain = 0;
    const span = opens - from; // the pre-queue window
    wait += Math.random() * Math.min(SPREAD_MAX_MS, span > 0 ? span / 10 : 0);
  } else {
    notOpenAgain++;
    wait = backoff(notOpenAgain); // also when the answer gave no time
  }
  enterAt = Date.now() + wait;
  page.state = 'notopen';
  page.resuming = false;
  render();
  if (isFinite(from)) say(t('notOpenLive', { time: when(from) }));
  armEnter();
}

// armEnter sets the timer for the scheduled enter, in steps of at most
// MAX_TIMER_MS.
function armEnter() {
  clearTimeout(timer);
  timer = setTimeout(enterWhenDue, Math.min(MAX_TIMER_MS, Math.max(0, enterAt - Date.now())));
}

function enterWhenDue() {
  if (page.state !== 'notopen' || inFlight) return;
  if (Date.now() < enterAt) {
    armEnter();
    return;
  }
  page.state = 'loading';
  render();
  enter();
}

// enterTurn shows the turn and its next step (waiting-handoff.js). The
// place stays ours (the server keeps the admission until the session
// ends), so a reload asks for the status and lands here again, with a
// fresh pass, instead of entering anew. A redirect replaces this page in
// the history: coming back to it would only send the user forward again.
// Someone looking away is told (waiting-alerts.js), and a hidden page
// sends them on once it is shown again, not behind their back.
function enterTurn(tk) {
  clearTimeout(timer);
  hadPlace = true;
  page.state = 'entered';
  page.pass = tk.pass || '';
  page.next = turnStep(tk, returnPath);
  render();
  say(t('turnTitle'));
  alertTurn(page.next ? t('turnBody') : t('turnNowhere'));
  const next = page.next;
  if (next && next.go) whenSeen(() => location.replace(next.href));
}

function fail(text, retry) {
  clearTimeout(timer);
  page.errorText = text;
  page.canRetry = retry !== false;
  page.state = 'error';
  page.retryInMs = 0;
  render();
}

// ---- leave / join again ----

export function leave() {
  generation++;
  clearTimeout(timer);
  stopSolver();
  page.checking = false;
  inFlight = false;
  clearPlace();
  page.state = 'left';
  page.retryInMs = 0;
  page.notice = '';
  render();
  say(t('leftTitle'));
  pendingDelete = deleteWithRetry(generation);
}

// DELETE is idempotent, so retrying it is safe; stop if the user joins again.
// The server clears the place cookie when it answers.
async function deleteWithRetry(gen) {
  const url = base + '/place';
  for (let i = 1; i <= DELETE_ATTEMPTS && gen === generation; i++) {
    try {
      await api('DELETE', url);
      return;
    } catch (err) {
      if (!transient(err) || i === DELETE_ATTEMPTS) return;
      await new Promise((r) => setTimeout(r, backoff(i)));
    }
  }
}

export async function joinAgain() {
  if (page.state !== 'left' && page.state !== 'error' && page.state !== 'released' && page.state !== 'moved') return; // a double click joins once
  stopSolver();
  page.state = 'loading';
  page.resuming = false;
  render();
  // Wait for an earlier leave to land so it cannot delete the new place.
  await pendingDelete.catch(() => {});
  generation++;
  hadPlace = false;
  reentered = false;
  failures = 0;
  page.retryInMs = 0;
  limited = 0;
  challengeTries = 0;
  page.checking = false;
  fullAutoUsed = false;
  page.ticket = null;
  page.pass = '';
  page.next = null;
  page.notice = '';
  forgetAnnounced();
  page.errorText = '';
  render();
  enter();
}

// pollSoon asks at once when the tab comes back (shown, thawed or
// restored) or the network returns: browsers throttle timers in background
// tabs and stop them in frozen ones, and a backoff may be long. Before an
// opening the only request is the scheduled enter, made if it is due; on a
// full line, the automatic retry if it is due.
export function pollSoon() {
  if (page.state === 'notopen') enterWhenDue();
  else if (page.state === 'full') fullWhenDue();
  else if ((page.state === 'waiting' || page.state === 'loading') && !inFlight) step('status');
}
