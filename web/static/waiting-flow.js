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
//   - challenge_required: the queue asks for proof of work
//     (waiting-challenge.js).
//   - human_check_required, human_check_failed: the room asks for a
//     human check, or refused its token; the page shows the provider's
//     widget and enters with its token (waiting-human.js).
//   - queue_full: the line is at its cap; one automatic retry at the time
//     the server gives, and a button (waiting-full.js).
//   - rate_limited (also for a status): the call is made again after
//     Retry-After, with jitter and growing if it repeats, and nothing is
//     shown: it is the server pacing us, not a lost connection.
//
// A scheduled opening answers an enter not_open until its pre-queue
// window: the page counts down and enters then (waiting-opening.js).
//
// While the operator pauses the line, WAITING tickets say paused: true.
// Nobody is admitted then and every place is kept, so the page says so,
// promises no wait time, and goes on polling as the server suggests; the
// first ticket without the flag brings the estimate back.
//
// A place not heard from for a while (no enter or status: the page was
// closed, frozen or asleep) is dropped when the line reaches it, and the
// ticket then says NOT_WAITING with reason "abandoned". The page does not
// rejoin by itself then: it explains, and one click joins again at the back
// (waiting-leave.js).
//
// The modules of the answers call back into this one (an enter, the error
// panel) from their timers and buttons, but import nothing of it: the flow,
// or waiting.js where it wires their buttons, passes them what they may
// call. So the imports go one way, and each of them can be read and loaded
// without this one (web/web_test.go fails on an import circle). Their
// bookkeeping is shared in waiting-attempt.js.

import { i18n, t, served } from './waiting-messages.js';
import { page, queue, queueAPI, returnPath, usedElsewhere, storedPlace, readPlace, savePlace, clearPlace, dropJoinToken, dropHandoff } from './waiting-state.js';
import { api, transient, backoff, away, awayWait } from './waiting-api.js';
import { turnStep } from './waiting-handoff.js';
import { codeAnswered } from './waiting-code.js';
import { render, say, announce } from './waiting-render.js';
import { alertTurn, whenSeen } from './waiting-alerts.js';
import { attempt, later, stopTimer, MAX_TIMER_MS } from './waiting-attempt.js';
import { onChallenge, solveAndEnter } from './waiting-challenge.js';
import { askHuman } from './waiting-human.js';
import { onFull, fullWhenDue } from './waiting-full.js';
import { onNotOpen, opened, enterWhenDue } from './waiting-opening.js';
import { onMoved } from './waiting-move.js';
import { placeGone } from './waiting-leave.js';
import { heard, followFromDocument } from './waiting-line.js';
import { noteDraw } from './waiting-draw.js';

const FALLBACK_POLL_MS = 2000;
const MIN_POLL_MS = 250; // guards against a server hint of 0 hammering us
const LIMIT_JITTER = 0.2; // a rate-limited call waits Retry-After plus up to 20 %
// Why a place ended (NOT_WAITING reason) -> the notice shown after the
// single automatic re-enter. "abandoned" is not here: it never re-enters.
const REJOIN_NOTICES = {
  expired: 'rejoinedExpired',
  done: 'rejoinedDone',
  removed: 'rejoinedRemoved',
  left: 'rejoinedLeft',
};

// What follows a proof of work (waiting-challenge.js, which imports
// nothing of this module): an enter with its solution, or the error
// panel, or waiting while the room is away.
const challengeFlow = { enter: (solution) => step('enter', solution), fail: fail, waitOut: waitOut };

// start shows the page's first state and makes its first request. The
// cookie may hold a place from an earlier visit (or an admission): ask
// first, never enter blindly. A join token enters at once, which keeps
// the account's place if it holds one already.
export function start() {
  if (served.closed) {
    // The gate's sold-out page: the server said the sale is closed,
    // with the message in every language; the page's is shown.
    const m = served.closed.message || {};
    onClosed({ message: m[i18n.lang()] || m.en || Object.values(m)[0] || '', reopens_at: served.closed.reopens_at });
    return;
  }
  page.resuming = !page.joinToken && !page.handoff && !!storedPlace();
  render();
  if (page.handoff) enterHandoff();
  else if (page.joinToken) enter();
  else step('status');
}

function schedule(ms) {
  later(() => step('status'), ms);
}

// enter joins the line, with a solved challenge first when the queue
// has asked this page for one.
export function enter() {
  if (attempt.needChallenge) solveAndEnter(challengeFlow);
  else step('enter');
}

// enterHandoff takes over the place handed over from another device
// (page.handoff): the hand-over proves the place, so no challenge first.
export function enterHandoff() {
  step('enter');
}

// step runs one request; every answer or error decides the next one.
// An enter carries the join token while there is one, and solution when
// given: a solved challenge {challenge, nonce}, a human check's
// {human_token}, or both.
export async function step(action, solution) {
  stopTimer();
  const gen = attempt.generation;
  attempt.inFlight = true;
  let tk;
  try {
    tk = await request(action, solution);
  } catch (err) {
    if (gen !== attempt.generation) return;
    page.checking = false;
    onRefused(action, solution, err);
    return;
  } finally {
    if (gen === attempt.generation) attempt.inFlight = false;
  }
  if (gen !== attempt.generation) return;
  attempt.failures = 0;
  page.retryInMs = 0;
  attempt.limited = 0;
  page.checking = false;
  attempt.challengeTries = 0;
  attempt.humanTries = 0;
  attempt.fullAutoUsed = false;
  if (action === 'enter') {
    if (page.handoff) page.notice = 'movedHere';
    dropJoinToken();
    dropHandoff();
    codeAnswered(tk);
  }
  onTicket(tk, action);
}

// request makes step's call: an enter (with what proves the place or
// the right to one) or a status.
function request(action, solution) {
  if (action !== 'enter') return api('GET', queueAPI + '/status');
  const moving = page.handoff;
  const body = moving ? { handoff: moving } : page.joinToken ? { join_token: page.joinToken } : {};
  if (solution && solution.challenge) {
    body.challenge = solution.challenge;
    body.nonce = solution.nonce;
  }
  if (solution && solution.human_token) body.human_token = solution.human_token;
  if (page.inviteCode && !moving) body.invite_code = page.inviteCode;
  return api('POST', queueAPI + '/enter', body);
}

// CODE_KEPT are the refusals of an enter that make it again as it was:
// an invitation code it carried goes with it again.
const CODE_KEPT = ['challenge_required', 'human_check_required', 'human_check_failed', 'queue_full'];

// onRefused decides what follows a request that got no ticket: the
// definite answers (see the top of the file) each have their own; the
// rest are failures (onError).
function onRefused(action, solution, err) {
  if (err.code === 'rate_limited') {
    onLimited(action, solution, err);
    return;
  }
  attempt.limited = 0;
  const entering = action === 'enter';
  if (entering && !CODE_KEPT.includes(err.code) && codeAnswered(null, err)) {
    step('status'); // definite: the code changed nothing, the place is kept
  } else if (entering && err.code === 'challenge_required') {
    onChallenge(challengeFlow); // definite: no place was made
  } else if (entering && (err.code === 'human_check_required' || err.code === 'human_check_failed')) {
    // Definite: no place was made. The enter is made again as it was
    // (a solved challenge stays unused), with the widget's token.
    attempt.failures = 0;
    page.retryInMs = 0;
    const asked = solution || {};
    askHuman(err.detail, err.code === 'human_check_failed', {
      enter: (token) => step('enter', { challenge: asked.challenge, nonce: asked.nonce, human_token: token }),
      fail: fail,
    });
  } else if (entering && err.code === 'queue_full') {
    onFull(err, enter);
  } else if (entering && err.code === 'not_open') {
    // A definite "not yet": no place is held, nothing failed. The
    // answer set the place cookie, which the later enter proves.
    attempt.failures = 0;
    page.retryInMs = 0;
    dropJoinToken();
    onNotOpen(err.detail, enter);
  } else if (err.code === 'sale_closed') {
    // Definite: the sale is over; nothing more to ask.
    onClosed(err.detail || {});
  } else if (err.code === 'place_moved') {
    // Definite: another device holds this place now (the server
    // cleared this browser's cookie; waiting-move.js).
    onMoved();
  } else if (entering && err.code === 'invalid_handoff') {
    // Used, expired or mistyped: nothing changed. Say so; the user
    // asks the other device for a new one, or joins here.
    dropHandoff();
    fail(t('moveInvalid'));
  } else if (!entering && err.code === 'invalid_place') {
    // A definite answer: this browser proves no place (no cookie yet,
    // or it expired). Not a failure to back off from.
    attempt.failures = 0;
    page.retryInMs = 0;
    onNoPlace(action);
  } else {
    onError(err);
  }
}

// onLimited makes a rate-limited call again once the server allows it:
// a 429 changed nothing, so an enter is made again (with the same
// solution: its challenge was not used) and a status asked again. The
// wait is Retry-After plus jitter, never less, and grows like a backoff
// if the refusals go on; the page shows nothing, its last answer stands.
function onLimited(action, solution, err) {
  attempt.limited++;
  const wait = Math.max(err.retryAfterMs || 0, backoff(attempt.limited)) * (1 + Math.random() * LIMIT_JITTER);
  later(() => step(action, solution), Math.min(MAX_TIMER_MS, Math.round(wait)));
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
  attempt.failures++;
  page.unavailable = false;
  page.retryInMs = backoff(attempt.failures);
  page.retryAt = Date.now() + page.retryInMs;
  render();
  schedule(page.retryInMs); // always a status poll, never an enter (see top of file)
}

// waitOut waits while the room is away (its Redis, or waitroom behind a
// proxy: 502-504), saying so, and that the place is kept, with the
// seconds to the next try; then next. The waits grow to a minute
// (awayWait): every page in line asks a room that is coming back.
export function waitOut(err, next) {
  attempt.failures++;
  page.unavailable = true;
  page.retryInMs = awayWait(attempt.failures, err);
  page.retryAt = Date.now() + page.retryInMs;
  render();
  later(next, page.retryInMs);
}

function onTicket(tk, action) {
  heard();
  page.updatedAt = new Date();
  const held = page.ticket;
  if (tk.user_id !== page.member || action === 'enter' ||
      (tk.arrival > 0 && held && held.arrival > 0 && tk.arrival !== held.arrival)) {
    // A new place, or the back of the line again; or the answer of an
    // older credential's place (a double click kept the first enter's
    // answer): the server answers with the member's current place and
    // its number (and credential), which the page follows from now on,
    // even when it is further back than the position shown.
    page.lowest = 0;
  }
  if (tk.user_id !== page.member) {
    page.member = tk.user_id || '';
    page.place = readPlace(page.member);
  }
  noteDraw(tk);
  switch (tk.status) {
    case 'WAITING':
      onWaiting(tk, action);
      return;
    case 'ENTERED':
      enterTurn(tk);
      return;
    case 'NOT_WAITING':
      onNoPlace(action, tk.reason || '');
      return;
    case 'CLOSED':
      onClosed(tk);
      return;
    default:
      onError(Object.assign(new Error('unknown status'), { status: 0, code: 'bad_response' }));
  }
}

// onWaiting shows a place in line and polls it when the server says; far
// back (an estimated position, or any fresh place: the document says
// whether it is far) it follows the line's public document instead
// (waiting-line.js).
function onWaiting(tk, action) {
  attempt.hadPlace = true;
  page.opening = null;
  opened();
  // In a draw (position 0) there is no number to measure progress
  // from yet; the first real position starts it.
  if (tk.position > 0 && (!page.place || tk.position > page.place.initial_position)) {
    savePlace({ queue: queue, user_id: page.member, initial_position: tk.position, joined_at: Date.now() });
  }
  showWaiting(tk);
  if (!followFromDocument(tk, action === 'enter', () => step('status'), showWaiting)) {
    schedule(tk.poll_after_ms > 0 ? Math.max(MIN_POLL_MS, tk.poll_after_ms) : FALLBACK_POLL_MS);
  }
}

// showWaiting shows a waiting ticket, the origin's or one worked out from
// the line's document. Never a higher number than already shown while in
// line: an estimate far back may waver, the exact one near the head is
// exact.
function showWaiting(tk) {
  if (tk.status === 'CLOSED') {
    onClosed(tk); // the line's document said so (waiting-line.js)
    return;
  }
  page.updatedAt = new Date(); // the origin's answer, or the document's
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
  if ((attempt.hadPlace && attempt.reentered) || action === 'enter') {
    clearPlace();
    fail(t('errLost'));
    return;
  }
  if (attempt.hadPlace || storedPlace() || REJOIN_NOTICES[reason]) page.notice = REJOIN_NOTICES[reason] || 'rejoined';
  if (usedElsewhere) page.notice = 'usedElsewhere';
  if (attempt.hadPlace) attempt.reentered = true;
  attempt.hadPlace = false;
  clearPlace();
  page.ticket = null;
  page.resuming = false;
  render();
  enter();
}

// release shows that the place was dropped as abandoned and offers to
// join again at the back (joinAgain: one click, one enter).
function release() {
  placeGone('released', t('releasedTitle') + '. ' + t('releasedBody'));
}

// enterTurn shows the turn and its next step (waiting-handoff.js). The
// place stays ours (the server keeps the admission until the session
// ends), so a reload asks for the status and lands here again, with a
// fresh pass, instead of entering anew. A redirect replaces this page in
// the history: coming back to it would only send the user forward again.
// Someone looking away is told (waiting-alerts.js), and a hidden page
// sends them on once it is shown again, not behind their back.
function enterTurn(tk) {
  stopTimer();
  attempt.hadPlace = true;
  page.state = 'entered';
  page.pass = tk.pass || '';
  page.next = turnStep(tk, returnPath);
  render();
  say(t('turnTitle'));
  alertTurn(page.next ? t('turnBody') : t('turnNowhere'));
  const next = page.next;
  if (next && next.go) whenSeen(() => location.replace(next.href));
}

// onClosed shows that the operator closed the sale (sold out), with its
// message and when sales reopen, and stops asking: the page makes no
// more requests.
function onClosed(c) {
  stopTimer();
  page.closed = { message: c.message || '', reopens_at: c.reopens_at || '' };
  page.state = 'closed';
  page.retryInMs = 0;
  render();
  say(page.closed.message || t('closedTitle'));
}

export function fail(text, retry) {
  stopTimer();
  page.errorText = text;
  page.canRetry = retry !== false;
  page.state = 'error';
  page.retryInMs = 0;
  render();
}

// pollSoon asks at once when the tab comes back (shown, thawed or
// restored) or the network returns: browsers throttle timers in background
// tabs and stop them in frozen ones, and a backoff may be long. Before an
// opening the only request is the scheduled enter, made if it is due; on a
// full line, the automatic retry if it is due.
export function pollSoon() {
  if (page.state === 'notopen') enterWhenDue(enter);
  else if (page.state === 'full') fullWhenDue(enter);
  else if ((page.state === 'waiting' || page.state === 'loading') && !attempt.inFlight) step('status');
}
