// Leaving the line, and joining it again (at the back) from the panels
// that offer it: left, error, released (abandoned) and moved.
//
// Joining again ends in the flow's enter (waiting-flow.js), which the
// caller passes in: this module imports nothing of the flow.

import { t } from './waiting-messages.js';
import { page, queueAPI, clearPlace } from './waiting-state.js';
import { api, transient, backoff } from './waiting-api.js';
import { stopSolver } from './waiting-pow.js';
import { stopHuman } from './waiting-human.js';
import { render, say, forgetAnnounced } from './waiting-render.js';
import { attempt, stopTimer } from './waiting-attempt.js';

const DELETE_ATTEMPTS = 4;

let pendingDelete = Promise.resolve();

export function leave() {
  attempt.generation++;
  stopTimer();
  stopSolver();
  stopHuman();
  page.checking = false;
  attempt.inFlight = false;
  clearPlace();
  page.state = 'left';
  page.retryInMs = 0;
  page.notice = '';
  render();
  say(t('leftTitle'));
  pendingDelete = deleteWithRetry(attempt.generation);
}

// DELETE is idempotent, so retrying it is safe; stop if the user joins again.
// The server clears the place cookie when it answers.
async function deleteWithRetry(gen) {
  const url = queueAPI + '/place';
  for (let i = 1; i <= DELETE_ATTEMPTS && gen === attempt.generation; i++) {
    try {
      await api('DELETE', url);
      return;
    } catch (err) {
      if (!transient(err) || i === DELETE_ATTEMPTS) return;
      await new Promise((r) => setTimeout(r, backoff(i)));
    }
  }
}

// placeGone shows that the server ended this page's place ('released':
// dropped as abandoned; 'moved': taken over by another device): polling
// and any proof of work stop, the place is forgotten, and the panel offers
// one click to join again at the back (joinAgain).
export function placeGone(state, words) {
  stopTimer();
  stopSolver();
  clearPlace();
  attempt.hadPlace = false;
  page.ticket = null;
  page.notice = '';
  page.state = state;
  page.retryInMs = 0;
  render();
  say(words);
}

// joinAgain forgets the attempt that ended and joins the line afresh, at
// the back, with enter.
export async function joinAgain(enter) {
  if (page.state !== 'left' && page.state !== 'error' && page.state !== 'released' && page.state !== 'moved') return; // a double click joins once
  stopSolver();
  page.state = 'loading';
  page.resuming = false;
  render();
  // Wait for an earlier leave to land so it cannot delete the new place.
  await pendingDelete.catch(() => {});
  attempt.generation++;
  attempt.hadPlace = false;
  attempt.reentered = false;
  attempt.failures = 0;
  page.retryInMs = 0;
  attempt.limited = 0;
  attempt.challengeTries = 0;
  attempt.humanTries = 0;
  stopHuman();
  page.checking = false;
  attempt.fullAutoUsed = false;
  page.ticket = null;
  page.pass = '';
  page.next = null;
  page.notice = '';
  forgetAnnounced();
  page.errorText = '';
  render();
  enter();
}
