// The back office's side of the admin API: how it signed in (a token, or
// the session cookie of a sign-in through the identity provider), who
// that is (GET /admin/v1/me), the requests it makes, and the server's
// clock.
//
// A token lives in sessionStorage only (gone when the tab closes) and is
// sent as a Bearer header, never in a URL. The session cookie is HttpOnly:
// the page never sees it, the browser sends it (same origin). A session
// here is one sign-in: its number is bumped at each sign-in and sign-out,
// so an answer that comes back for an older one is dropped.

import { session as store } from './storage.js';

const REQUEST_TIMEOUT_MS = 10000;
const TOKEN_KEY = 'waitroom:admin-token';

let session = 0;
let me = null; // who is signed in (GET /admin/v1/me), or null
let skew = 0; // the server's clock minus ours (ms), from the Date header of its answers
let refusedHandler = () => {};

export function getToken() {
  return store.get(TOKEN_KEY) || '';
}
export function setToken(v) {
  store.set(TOKEN_KEY, v); // when it cannot be kept: signed in for this page view only
}
export function clearToken() {
  store.remove(TOKEN_KEY);
}

// setMe keeps who is signed in; null when nobody is.
export function setMe(v) {
  me = v;
}
export function getMe() {
  return me;
}
// canOperate: the signed-in role may change queue's settings.
export function canOperate(queue) {
  return !!me && (me.operate || []).includes(queue);
}
// isAdmin: the signed-in role may do everything (webhooks, probes, tokens).
export function isAdmin() {
  return !!me && me.admin === true;
}

// authHeaders are the headers that carry the credential: the token's,
// none for a session (its cookie goes by itself).
export function authHeaders(token) {
  const tok = token || getToken();
  return tok ? { Authorization: 'Bearer ' + tok } : {};
}

// currentSession is the session answers must belong to; newSession
// starts another (a sign-in, a sign-out).
export function currentSession() {
  return session;
}
export function newSession() {
  return ++session;
}

// onRefused sets what happens when the server stops accepting the token
// (401, 403): the sign-in module signs out. refused reports it.
export function onRefused(fn) {
  refusedHandler = fn;
}
export function refused(err) {
  refusedHandler(err);
}

// api makes one request with the token (or token, when given; with
// neither, the session cookie) and
// returns the decoded answer. A failure is an Error with status (0: no
// answer), code (the API's, or "network"), field (the setting the server
// named) and retryAfter (seconds).
export async function api(method, path, body, token) {
  const ctrl = new AbortController();
  const timeout = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
  const headers = authHeaders(token);
  if (body) headers['Content-Type'] = 'application/json';
  try {
    const res = await fetch(path, {
      method: method,
      headers: headers,
      body: body ? JSON.stringify(body) : undefined,
      cache: 'no-store',
      credentials: 'same-origin', // the session cookie, when signed in through the provider
      signal: ctrl.signal,
    });
    noteServerTime(res.headers.get('Date'));
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      const e = (data && data.error) || {};
      throw Object.assign(new Error(e.message || res.statusText || 'HTTP ' + res.status),
        { status: res.status, code: e.code || 'http_' + res.status, field: e.field || '',
          retryAfter: Number(res.headers.get('Retry-After')) || 0 });
    }
    return data;
  } catch (err) {
    if (err.status === undefined) {
      err.status = 0;
      err.code = 'network';
    }
    throw err;
  } finally {
    clearTimeout(timeout);
  }
}

// noteServerTime keeps the offset of the server's clock, so the active
// users this page samples sit on the time axis of the server's ticks. The
// Date header has whole seconds: its middle is the best guess.
function noteServerTime(header) {
  const at = Date.parse(header || '');
  if (isFinite(at)) skew = at + 500 - Date.now();
}

export function serverNow() {
  return Date.now() + skew;
}
