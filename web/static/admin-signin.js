// Signing in and out of the back office (a token, or the identity
// provider's sign-in, whose session cookie the server set), and the
// refresh loop of a signed-in session: every 2 s the queues, then their
// histories, one request after the previous answer, so a slow server
// never piles them up.

import { $ } from './dom.js';
import { t } from './admin-messages.js';
import { clock, waitText } from './admin-format.js';
import { api, setToken, clearToken, getToken, currentSession, newSession, onRefused, setMe, getMe } from './admin-api.js';
import { renderQueues, refreshHistories, clearQueues, redrawQueues } from './admin-queues.js';
import { loadCatalog } from './admin-settings.js';

const REFRESH_MS = 2000;

let timer = 0;
let refreshedAt = null; // when the dashboard last refreshed without error
let statusCode = ''; // the code of the failed refresh the status line tells of; '' when none

// A change the server refuses the token for ends the session.
onRefused((err) => signOut(authMessage(err)));

// signIn tries token ('' for the session cookie of a sign-in through the
// provider); quiet is a credential kept from earlier (a token of this
// tab, a cookie), whose refusal means the session ended rather than a
// typo.
export async function signIn(token, quiet) {
  const mine = newSession();
  const btn = $('login-btn');
  btn.disabled = true;
  try {
    // Who this is comes first: the queues' sections hide what the role
    // may not do. The rest is asked only once the credential is known
    // good, so a wrong one counts one failure.
    const who = await api('GET', '/admin/v1/me', null, token);
    setMe(who);
    const data = await api('GET', '/admin/v1/queues', null, token);
    await loadCatalog(token);
    if (mine !== currentSession()) return;
    if (token) setToken(token);
    showDashboard();
    renderQueues(data);
    refreshHistories(mine).catch(() => { /* the next refresh reports it */ });
    schedule(mine);
  } catch (err) {
    if (mine !== currentSession()) return;
    setMe(null);
    if (!credentialFault(err)) {
      // The server could not judge the token (its store or the server
      // itself is away): it is not wrong, so it stays, in the field and
      // in this tab, for the next try.
      showLogin(authMessage(err), token);
      return;
    }
    clearToken();
    if (!token && err.status === 401) showLogin(''); // no sign-in cookie: nothing ended
    else showLogin(quiet && err.status === 401 ? t('sessionEnded') : authMessage(err));
  } finally {
    btn.disabled = false;
  }
}

export function signOut(message) {
  const cookie = getMe() && !getToken(); // signed in through the provider
  newSession();
  clearTimeout(timer);
  clearToken();
  setMe(null);
  clearQueues();
  showLogin(message || '');
  // The server ends the session and clears its cookie.
  if (cookie) api('POST', '/admin/logout').catch(() => { /* the cookie lapses anyway */ });
}

// credentialFault reports whether err says the credential is at fault
// (refused, locked out, not allowed), not that it could not be judged.
function credentialFault(err) {
  return err.status > 0 && err.status < 500;
}

// showLogin shows the sign-in form, with message under it ('' for none).
// keep, when given, is a token the server could not judge ('' for the
// session cookie's): left in the field and not marked wrong; without it
// the field is emptied and, with a message, marked wrong.
export function showLogin(message, keep) {
  document.body.setAttribute('data-state', 'signed-out');
  $('dashboard').hidden = true;
  $('signout').hidden = true;
  $('whoami').hidden = true;
  $('login').hidden = false;
  const err = $('login-error');
  err.textContent = message;
  err.hidden = !message;
  $('token').setAttribute('aria-invalid', String(!!message && keep === undefined));
  $('token').value = keep || '';
  $('token').focus();
}

function showDashboard() {
  document.body.setAttribute('data-state', 'signed-in');
  showWho();
  $('login').hidden = true;
  $('login-error').hidden = true;
  $('dashboard').hidden = false;
  $('signout').hidden = false;
}

// showWho says who is signed in and as what role, in the top bar.
function showWho() {
  const me = getMe();
  const el = $('whoami');
  el.hidden = !me;
  if (me) el.textContent = t('signedInAs', { name: me.actor.name, role: t('role_' + me.role) });
}

// offerProvider shows the identity provider's sign-in button when the
// server has one (GET /admin/v1/signin-options: no credential needed).
export async function offerProvider() {
  try {
    const opts = await api('GET', '/admin/v1/signin-options');
    $('login-oidc').hidden = !opts.oidc;
  } catch {
    $('login-oidc').hidden = true;
  }
}

function authMessage(err) {
  if (err.status === 401) return t('badToken');
  if (err.code === 'too_many_attempts') return t('tooManyAttempts', { wait: waitText(err.retryAfter) });
  if (err.code === 'admin_disabled') return t('adminDisabled');
  if (err.status === 0) return t('unreachable');
  if (err.code === 'unavailable') return t('storeUnreachable');
  return t('serverError', { code: err.code, message: err.message });
}

function schedule(mine) {
  clearTimeout(timer);
  timer = setTimeout(() => refresh(mine), REFRESH_MS);
}

// A new request starts only after the previous one finished, so a slow
// server never piles requests up.
async function refresh(mine) {
  try {
    const data = await api('GET', '/admin/v1/queues');
    if (mine !== currentSession()) return;
    renderQueues(data);
    await refreshHistories(mine);
    setStatus('');
  } catch (err) {
    if (mine !== currentSession()) return;
    if (err.status === 401 || err.status === 403) {
      signOut(authMessage(err));
      return;
    }
    setStatus(err.code);
  }
  if (mine === currentSession()) schedule(mine);
}

// setStatus tells of a failed refresh (its error code), or with '' that
// the last one worked, and when.
function setStatus(code) {
  statusCode = code;
  if (!code) refreshedAt = new Date();
  showStatus();
}

function showStatus() {
  const el = $('admin-status');
  el.textContent = statusCode ? t('refreshFailed', { code: statusCode }) : '';
  el.hidden = !statusCode;
  if (!statusCode && refreshedAt) $('refreshed').textContent = t('refreshed', { time: clock(refreshedAt) });
}

// redrawDashboard draws what the dashboard shows again, in the language
// now chosen.
export function redrawDashboard() {
  showStatus();
  showWho();
  redrawQueues();
}
