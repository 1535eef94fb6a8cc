// The waiting page's requests to the queue API and its estimate of the
// server's clock. Every request is bounded by a timeout; a failure is an
// Error with status (0: no answer), code (the API's stable error code,
// or timeout when the page gave up waiting), detail (the error body) and
// retryAfterMs (Retry-After, 0 when absent).
//
// The timeout doubles for a request that went unanswered in time, up to
// a minute, until one like it (same method and address) is answered. A
// fixed one gave up on every enter of a link or server slower than it:
// the enter's place was made all the same, but its answer (the place's
// cookie) was lost with it, so the status that followed said "no place"
// and the page entered again, at the back, forever.

const REQUEST_TIMEOUT_MS = 10000;
const REQUEST_TIMEOUT_CAP_MS = 60000;
const BACKOFF_START_MS = 1000;
const BACKOFF_CAP_MS = 30000;
const BACKOFF_JITTER = 0.2; // ±20 %, so clients cut off together do not return together
const AWAY_START_MS = 4000; // while the room is away (awayWait), as its own page (internal/web/outage)
const AWAY_CAP_MS = 60000;
const CLOCK_JUMP_MS = 3000; // a clock estimate this far below the last one means the local clock moved

let skew = null; // the server's clock is at least Date.now() + skew (from Date headers)

const late = {}; // method + ' ' + url -> its requests unanswered in time, in a row

export async function api(method, url, body) {
  const kind = method + ' ' + url;
  const ctrl = new AbortController();
  const timeout = setTimeout(() => ctrl.abort(), requestTimeout(late[kind] || 0));
  try {
    const res = await fetch(url, {
      method: method,
      headers: body ? { 'Content-Type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
      cache: 'no-store',
      keepalive: method === 'DELETE', // let a leave finish even if the tab closes
      signal: ctrl.signal,
    });
    delete late[kind];
    noteServerTime(res.headers.get('Date'), Date.now());
    if (res.status === 204) return null;
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const err = new Error((data && data.error && data.error.message) || res.statusText);
      err.status = res.status;
      err.code = (data && data.error && data.error.code) || 'http_' + res.status;
      err.detail = (data && data.error) || {};
      const after = Number(res.headers.get('Retry-After'));
      err.retryAfterMs = after > 0 ? after * 1000 : 0; // seconds; an HTTP date is not sent
      throw err;
    }
    if (!data) throw Object.assign(new Error('empty response'), { status: 0, code: 'bad_response' });
    return data;
  } catch (err) {
    if (ctrl.signal.aborted) {
      // Not the AbortError itself: a DOMException's code is read-only.
      late[kind] = (late[kind] || 0) + 1;
      throw Object.assign(new Error('no answer in time'), { status: 0, code: 'timeout' });
    }
    if (err.status === undefined) err.status = 0; // network failure
    throw err;
  } finally {
    clearTimeout(timeout);
  }
}

// requestTimeout is the time a request gets after n of its kind in a row
// went unanswered in time: 10 s, doubling up to a minute.
function requestTimeout(n) {
  return Math.min(REQUEST_TIMEOUT_CAP_MS, REQUEST_TIMEOUT_MS * Math.pow(2, n));
}

// noteServerTime keeps an estimate of the server's clock, which decides
// a scheduled opening: users' clocks can be minutes off. The Date header
// is in whole seconds and written before the answer arrived, so each one
// gives a lower bound; the highest is kept, unless one far below says
// the local clock itself was changed.
function noteServerTime(header, localAt) {
  const d = Date.parse(header || '');
  if (!isFinite(d)) return;
  const s = d - localAt;
  if (skew === null || s > skew || s < skew - CLOCK_JUMP_MS) skew = s;
}

// serverNow is the server's time now, at the earliest: a moment counted
// down on it is never reached before the server reaches it.
export function serverNow() {
  return Date.now() + (skew || 0);
}

// toLocal is a moment on the server's clock (ms) on this browser's.
export function toLocal(ms) {
  return ms - (skew || 0);
}

// Worth retrying later: no answer, overload, or a server/Redis failure.
export function transient(err) {
  return err.status === 0 || err.status === 408 || err.status === 429 || err.status >= 500;
}

// backoff is the wait before the nth retry: doubling from a second up to
// half a minute, with jitter.
export function backoff(n) {
  const raw = Math.min(BACKOFF_CAP_MS, BACKOFF_START_MS * Math.pow(2, n - 1));
  return Math.round(raw * (1 + (Math.random() * 2 - 1) * BACKOFF_JITTER));
}

// away reports whether an answer says the waiting room itself is away
// (its Redis, or waitroom behind a proxy): 503 unavailable, or a proxy's
// 502 or 504. Not a full line (queue_full), which is a 503 with its own
// answer.
export function away(err) {
  return err.status >= 502 && err.status <= 504 && err.code !== 'queue_full';
}

// awayWait is the wait before the nth try while the room is away: 4 s,
// 8 s, 16 s ... up to a minute, with jitter, and never sooner than the
// answer's Retry-After. Longer than backoff: a room that lost its Redis
// is not back in a second, and every page in line asks it.
export function awayWait(n, err) {
  const raw = Math.min(AWAY_CAP_MS, AWAY_START_MS * Math.pow(2, n - 1));
  const w = raw * (1 + (Math.random() * 2 - 1) * BACKOFF_JITTER);
  return Math.round(Math.min(AWAY_CAP_MS, Math.max(w, err.retryAfterMs || 0)));
}
