// A full line: an enter refused with queue_full made no place, the line
// is at its cap. The page says when to try again (Retry-After, shown as
// local time) with a button, and tries once by itself at that time, with
// jitter so full pages do not return at once.
//
// Entering again is the flow's (waiting-flow.js): it passes its enter in,
// and this module imports nothing of it.

import { t } from './waiting-messages.js';
import { page, clearPlace } from './waiting-state.js';
import { serverNow, backoff } from './waiting-api.js';
import { render, say } from './waiting-render.js';
import { hhmm } from './waiting-format.js';
import { attempt, later, stopTimer, MAX_TIMER_MS } from './waiting-attempt.js';

// A full line's automatic retry comes up to this much after its time
// (at most a tenth of the wait, at least a second's spread).
const FULL_SPREAD_MAX_MS = 5000;

// onFull shows that the line is at its cap and when to try again, and
// arms the one automatic retry: at that time, plus jitter. After that
// one, a line still full leaves the retry to the button. enter joins the
// line.
export function onFull(err, enter) {
  attempt.failures = 0;
  page.retryInMs = 0;
  stopTimer();
  let wait = err.retryAfterMs;
  if (!(wait > 0)) wait = Date.parse((err.detail && err.detail.retry_at) || '') - serverNow();
  if (!(wait > 0)) wait = backoff(1);
  page.fullAt = Date.now() + wait;
  page.fullRetryAt = 0;
  if (!attempt.fullAutoUsed) {
    attempt.fullAutoUsed = true;
    page.fullRetryAt = page.fullAt + Math.random() * Math.min(FULL_SPREAD_MAX_MS, Math.max(1000, wait / 10));
  }
  attempt.hadPlace = false;
  page.ticket = null;
  clearPlace();
  page.state = 'full';
  page.resuming = false;
  render();
  say(t('fullTitle') + '. ' + t('fullBody', { time: hhmm(page.fullAt) }));
  if (page.fullRetryAt) armFull(enter);
}

function armFull(enter) {
  later(() => fullWhenDue(enter), Math.min(MAX_TIMER_MS, Math.max(0, page.fullRetryAt - Date.now())));
}

// fullWhenDue makes the automatic retry if it is due (and arms it again
// if not: a long wait is set in steps, and a tab brought back asks).
export function fullWhenDue(enter) {
  if (page.state !== 'full' || attempt.inFlight || !page.fullRetryAt) return;
  if (Date.now() < page.fullRetryAt) {
    armFull(enter);
    return;
  }
  retryFull(false, enter);
}

// retryFull enters again from the full panel: by itself once, or when
// the user asks (which earns one more automatic retry if still full).
export function retryFull(byUser, enter) {
  if (page.state !== 'full' || attempt.inFlight) return;
  stopTimer();
  page.fullRetryAt = 0;
  if (byUser) {
    attempt.fullAutoUsed = false;
    attempt.challengeTries = 0;
  }
  page.state = 'loading';
  render();
  enter();
}
