// What the waiting page knows: the queue it is for, what the address
// asked, and the state render() draws from (waiting-render.js). The flow
// (waiting-flow.js and the modules of its answers) is the only writer.

import { local } from './storage.js';
import { sameSitePath } from './waiting-handoff.js';

const params = new URLSearchParams(location.search);

export const queue = queueFromPath(location.pathname);

function queueFromPath(path) {
  const m = /^\/q\/([^/]+)\/?$/.exec(path);
  if (!m) return 'default'; // e.g. the file opened from disk while developing
  try { return decodeURIComponent(m[1]); } catch (e) { return m[1]; }
}

// The queue's API, under which the page makes every request.
export const queueAPI = '/api/v1/queues/' + encodeURIComponent(queue);

// Where the gate in front of the order page sent the user from: once
// admitted, they go back there with the pass (instead of target_url).
export const returnPath = sameSitePath(params.get('return'));

// The gate cancelled this browser's entry pass as used from too many
// places (WAITROOM_PASS_MAX_CLIENTS): say so instead of a generic notice.
export const usedElsewhere = params.get('reason') === 'used_elsewhere';

export const page = {
  state: 'loading', // mirrors body[data-state]: loading|notopen|waiting|entered|left|released|full|moved|error
  resuming: false, // loading text: checking an old place vs joining fresh
  // A site's join token (?join=): the first enter sends it, so one account
  // holds one place on every device. Dropped once an enter with it is
  // answered; from then on the cookie names the place.
  joinToken: params.get('join') || '',
  inviteCode: '', // an invitation code typed, until its enter is answered (waiting-code.js)
  // A hand-over of a place from another device (?handoff= from its QR
  // code, or a code typed here): the next enter takes that place over.
  // Dropped once an enter with it is answered.
  handoff: params.get('handoff') || '',
  member: '', // the member id of the last ticket: whose place we hold
  ticket: null, // last WAITING ticket, kept on screen while reconnecting
  // The lowest position shown since the place was (re)joined: a position
  // estimated from a replica's snapshot (position_estimated) may move by a
  // place or two either way between polls, and the page never shows it
  // rising for someone who stays in line. 0: none shown yet.
  lowest: 0,
  pass: '', // the entry pass of an ENTERED ticket
  next: null, // the turn's next step (waiting-handoff.js turnStep); null: nowhere known
  updatedAt: null,
  place: null, // {user_id, initial_position, joined_at}: the progress of member's place
  notice: usedElsewhere ? 'usedElsewhere' : '', // string key shown under the status line
  errorText: '',
  canRetry: true, // the error panel offers "Join again"
  retryInMs: 0, // >0 while reconnecting
  retryAt: 0, // while reconnecting: when the next try comes (Date.now() ms)
  unavailable: false, // while reconnecting: the room answered that it is away (503)
  // A scheduled opening that answered not_open: {from, opens} in ms (NaN
  // when not given).
  opening: null,
  checking: false, // solving a challenge: the page says it checks the browser
  // While checking: the time the solve is expected to take yet (ms; NaN
  // until the worker's rate is known, below 0 past the expectation).
  checkLeftMs: NaN,
  // Asking for the human check (waiting-human.js): {failed} (the last
  // token was refused), or null.
  human: null,
  // A full line: the local time to try again at (shown) and when the
  // automatic retry comes (with its jitter; 0: none pending).
  fullAt: 0,
  fullRetryAt: 0,
  // A scheduled opening's draw (waiting-draw.js): {member, sealed (the
  // commitment seen before the opening), commitment, key, place}, or null.
  draw: null,
};

// ---- the progress of a place, kept in localStorage ----
//
// The member id in a ticket's user_id only keys this progress; it proves
// nothing (the place belongs to whoever holds the place cookie).

const keys = {
  place: 'waitroom:place:' + queue,
  oldUser: 'waitroom:user:' + queue, // the plain user id of earlier versions
};

// storedPlace is the progress this browser saved for the queue, whoever's
// place it was; readPlace only member id's.
export function storedPlace() {
  try {
    const p = JSON.parse(local.get(keys.place) || 'null');
    return p && typeof p === 'object' ? p : null;
  } catch (e) {
    return null;
  }
}
export function readPlace(id) {
  const p = storedPlace();
  return p && p.user_id === id ? p : null;
}
export function savePlace(p) {
  page.place = p;
  local.set(keys.place, JSON.stringify(p));
}
export function clearPlace() {
  page.place = null;
  local.remove(keys.place);
}
// forgetOldUser drops what earlier versions kept: it names no place any more.
export function forgetOldUser() {
  local.remove(keys.oldUser);
}

// ---- what the address asked, forgotten once used ----

// dropJoinToken forgets the join token once the server has answered an
// enter with it: the cookie now names the account's place, and a reload
// (or a bookmark) must not send a token that may have expired meanwhile.
export function dropJoinToken() {
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
export function dropHandoff() {
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
