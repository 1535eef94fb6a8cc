// Far from the head, the page places itself: it reads the
// line's public document (GET .../line: the same for everyone, cached for
// a second by nginx or a CDN, so the crowd far back costs the origin
// nothing) and works out its position and wait from its own arrival
// number (line-math.js: the server's own arithmetic). It asks the origin
// for its status only when that position nears the head (the exact zone,
// plus what the line can move before the next look), when the document
// cannot place it, and at least every 5 minutes, to learn of a removal.
// Far back nobody is dropped for silence, so no status is owed there.

import { queueAPI } from './waiting-state.js';
import { api, serverNow } from './waiting-api.js';
import { attempt, later } from './waiting-attempt.js';
import { place } from './line-math.js';

const STATUS_EVERY_MS = 5 * 60 * 1000; // the longest the page goes without the origin's word
const MIN_LOOK_MS = 2000; // the document changes once a tick; a second is its cache
const MAX_LOOK_MS = 60000; // the status poll's own bound (queue.MaxPoll)

const lineURL = queueAPI + '/line';

let lastStatusAt = 0; // when the origin last answered a status (Date.now())

// heard notes a status answered by the origin.
export function heard() {
  lastStatusAt = Date.now();
}

// lookInterval is when the page reads the document again, as the status
// poll's policy (queue.Ticket.PollAfter): after the next tick, and the
// further back, the later: a tenth of the ticks ahead, up to a minute,
// less up to a fifth at random. Far back the position moves slowly, and
// ten million pages each reading every interval would cost the edge more
// than their status polls ever cost the origin.
function lookInterval(doc, p, ageMs) {
  const interval = Math.max(doc.refill_interval_ms, 1);
  const ticksAhead = Math.floor((p.position - 1) / Math.max(doc.refill_size, 1));
  let wait = Math.max(0, doc.until_next_tick_ms - ageMs) + interval + 100;
  const skip = Math.floor(ticksAhead / 10);
  if (skip > 0) {
    const extra = Math.min(skip * interval, MAX_LOOK_MS);
    wait += extra - Math.random() * (extra / 5);
  }
  return Math.round(Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, wait)));
}

// followFromDocument schedules the next look at the document instead of a
// status, for a waiting ticket with its arrival number that is far back
// (an estimated position) or fresh (entered: the look tells whether it is
// far); false when the page must ask its status as before. onStatus asks
// the origin; onEstimate shows a ticket worked out here.
export function followFromDocument(tk, entered, onStatus, onEstimate) {
  if (!(tk.arrival > 0) || !(tk.position > 0) || !(tk.position_estimated || entered)) return false;
  // The first look when the server said to poll (for a fresh place, a
  // random point of its interval, so a crowd that joined at once spreads).
  later(() => look(tk, onStatus, onEstimate), Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, tk.poll_after_ms || 0)));
  return true;
}

// look reads the document and shows what it says of the place, or asks
// the status: near the head, when it cannot place it, every 5 minutes, or
// when the document cannot be had.
// closedIn is the closing message in the page's language, else English,
// else any (as the server picks it for a status).
function closedIn(m) {
  m = m || {};
  const lang = document.documentElement.lang;
  return m[lang] || m.en || m[Object.keys(m).sort()[0]] || '';
}

async function look(tk, onStatus, onEstimate) {
  const gen = attempt.generation; // a leave or join since drops what this look finds
  if (Date.now() - lastStatusAt >= STATUS_EVERY_MS) {
    onStatus();
    return;
  }
  let doc;
  try {
    doc = await api('GET', lineURL);
  } catch {
    if (gen === attempt.generation) onStatus(); // the origin decides what a failure means
    return;
  }
  if (gen !== attempt.generation) return;
  if (doc.closed) {
    // Sold out: the document says so, with no status call.
    onEstimate(Object.assign({}, tk, { status: 'CLOSED', message: closedIn(doc.closed_message), reopens_at: doc.reopens_at }));
    return;
  }
  const age = Math.max(0, serverNow() - doc.at_ms);
  const p = place(doc, tk.arrival, age);
  if (!p) {
    onStatus();
    return;
  }
  const wait = lookInterval(doc, p, age);
  // How far the head may come before the next look.
  const margin = doc.tick_reach * (Math.ceil(wait / Math.max(doc.refill_interval_ms, 1)) + 1);
  if (p.position <= doc.near_head + margin) {
    onStatus();
    return;
  }
  const next = Object.assign({}, tk, p, { waiting: doc.waiting, paused: doc.paused, position_estimated: true });
  onEstimate(next);
  later(() => look(next, onStatus, onEstimate), wait);
}
