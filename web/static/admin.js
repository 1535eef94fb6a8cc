// Back office at /admin, the entry module: sign in through the company's
// identity provider or with a token (the break-glass admin token, an API
// token), see who is signed in and as what role,
// watch every queue, change a queue's refill size, its cap on active users
// and how long a waiting place may go unheard before it is dropped, its
// defences (a cap on the line, proof of work before entering), pause and
// resume it, close the sale with a message (sold out) and reopen it,
// schedule an opening (and read its draw's seed), see a chart
// of its recent ticks and of its active users, and read its audit log (who
// changed what, from which address). The modules, each one concern:
//
//   admin-messages.js  the strings, per language (and t)
//   admin-signin.js    signing in and out; the refresh loop
//   admin-api.js       the token, the session, requests, the server's clock
//   admin-queues.js    one section per queue, kept in step with the server
//   admin-settings.js  the settings' forms and the pause button
//   admin-opening.js   the scheduled opening, in UTC
//   admin-sale.js      closing the sale (sold out) and reopening it
//   admin-chart.js     the live chart
//   admin-audit.js     the audit log view
//   admin-format.js    numbers and times in the page's language
//   i18n.js, storage.js, dom.js   shared with the waiting page
//
// All text is set with textContent, so queue names and server messages
// cannot inject markup.

import { $ } from './dom.js';
import { i18n, t } from './admin-messages.js';
import { getToken } from './admin-api.js';
import { signIn, signOut, showLogin, redrawDashboard, offerProvider } from './admin-signin.js';
import { session } from './storage.js';

session.remove('waitroom:reloads'); // the modules loaded (the page's rescue)
i18n.apply();
i18n.bindSwitch(redrawDashboard);

$('login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = $('token').value.trim();
  if (!token) {
    showLogin(t('enterToken'));
    return;
  }
  signIn(token, false);
});
$('signout').addEventListener('click', () => signOut(''));

// data-state is "loading" in the HTML until here: the form's handler is
// bound, so a sign-in is never posted to the server as a plain form. A
// token of this tab signs in; else the session cookie of a sign-in
// through the provider, if the browser holds one.
offerProvider();
const saved = getToken();
signIn(saved, true);
