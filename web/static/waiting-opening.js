// A scheduled opening. Before its pre-queue window an enter answers 403
// not_open with prequeue_from and opens_at: a definite "not yet", not a
// failure, and no place is held. The page counts down to prequeue_from
// and then enters once (a not_open answer again only reschedules). In
// the window a WAITING ticket has position 0 and opens_at: the user is in
// the draw, and at opens_at everyone in it gets a place in a random
// order, so the page shows no number, only the countdown (waiting-
// render.js). Times are counted on the server's clock, estimated from the
// Date header of its answers (waiting-api.js).
//
// The enter itself is the flow's (waiting-flow.js): it passes its enter
// in, and this module imports nothing of it.

import { t } from './waiting-messages.js';
import { page, clearPlace } from './waiting-state.js';
import { serverNow, backoff } from './waiting-api.js';
import { render, say } from './waiting-render.js';
import { when } from './waiting-format.js';
import { attempt, later, stopTimer, MAX_TIMER_MS } from './waiting-attempt.js';

// Before a scheduled opening's pre-queue window the page enters at a
// random moment within this much of the window's start (at most a tenth
// of the window): nothing is gained by being first in a draw, so a crowd
// of open pages need not hit the server in the same instant.
const SPREAD_MAX_MS = 3000;

let enterAt = 0; // the local time of the enter the page waits for
let notOpenAgain = 0; // not_open answers in a row after the window should have opened

// opened notes that the page holds a place: a later not_open starts
// counting anew.
export function opened() {
  notOpenAgain = 0;
}

// onNotOpen waits for a scheduled opening's pre-queue window and then
// enters once. An answer that it is still not open, when by our estimate
// the window should have opened (the clocks disagree, or the operator
// moved it), backs off like a failure would, so no page hammers. enter
// joins the line.
export function onNotOpen(detail, enter) {
  stopTimer();
  const from = Date.parse(detail.prequeue_from || '');
  const opens = Date.parse(detail.opens_at || '');
  page.opening = { from: from, opens: opens };
  attempt.hadPlace = false;
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
  armEnter(enter);
}

// armEnter sets the timer for the scheduled enter, in steps of at most
// MAX_TIMER_MS.
function armEnter(enter) {
  later(() => enterWhenDue(enter), Math.min(MAX_TIMER_MS, Math.max(0, enterAt - Date.now())));
}

// enterWhenDue makes the scheduled enter if it is due.
export function enterWhenDue(enter) {
  if (page.state !== 'notopen' || attempt.inFlight) return;
  if (Date.now() < enterAt) {
    armEnter(enter);
    return;
  }
  page.state = 'loading';
  render();
  enter();
}
