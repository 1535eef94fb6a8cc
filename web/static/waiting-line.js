// Far from the head, the page places itself (issue 29): it reads the
// line's public document (GET .../line: the same for everyone, cached for
// a second by nginx or a CDN, so the crowd far back costs the origin
// nothing) and works out its position and wait from its own arrival
// number (line-math.js: the server's own arithmetic). It asks the origin
// for its status only when that position nears the head (the exact zone,
// plus what the line can move before the next look), when the document
// cannot place it, and at least every 5 minutes, to learn of a removal.
// Far back nobody is dropped for silence, so no status is owed there.

import { queue } from './waiting-state.js';
import { api, serverNow } from './waiting-api.js';
import { attempt, later } from './waiting-attempt.js';
import { place } from './line-math.js';

const STATUS_EVERY_MS = 5 * 60 * 1000; // the longest the page goes without the origin's word
const MIN_LOOK_MS = 2000; // the document changes once a tick; a second is its cache
const MAX_LOOK_MS = 15000;

const lineURL = '/api/v1/queues/' + encodeURIComponent(queue) + '/line';

let lastStatusAt = 0; // when the origin last answered a status (Date.now())

// heard notes a status answered by the origin.
export function heard() {
  lastStatusAt = Date.now();
}

// lookInterval is how often the page reads the document of a line that
// ticks every intervalMs.
function lookInterval(intervalMs) {
  return Math.min(MAX_LOOK_MS, Math.max(MIN_LOOK_MS, intervalMs || 0));
}

// followFromDocument schedules the next look at the document instead of a
// status, for a waiting ticket with its arrival number that is far back
// (an estimated position) or fresh (entered: the look tells whether it is
// far); false when the page must ask its status as before. onStatus asks
// the origin; onEstimate shows a ticket worked out here.
export function followFromDocument(tk, entered, onStatus, onEstimate) {
  if (!(tk.arrival > 0) || !(tk.position > 0) || !(tk.position_estimated || entered)) return false;
  later(() => look(tk, onStatus, onEstimate), lookInterval(tk.poll_after_ms));
  return true;
}

// look reads the document and shows what it says of the place, or asks
// the status: near the head, when it cannot place it, every 5 minutes, or
// when the document cannot be had.
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
  const wait = lookInterval(doc.refill_interval_ms);
  const p = place(doc, tk.arrival, serverNow() - doc.at_ms);
  // How far the head may come before the next look.
  const margin = doc.tick_reach * (Math.ceil(wait / Math.max(doc.refill_interval_ms, 1)) + 1);
  if (!p || p.position <= doc.near_head + margin) {
    onStatus();
    return;
  }
  const next = Object.assign({}, tk, p, { waiting: doc.waiting, paused: doc.paused, position_estimated: true });
  onEstimate(next);
  later(() => look(next, onStatus, onEstimate), wait);
}
