// Waiting page for /q/{queue}, the entry module: puts the page in its
// language, wires the buttons and the browser's events, and starts the
// flow. The modules, each one concern:
//
//   waiting-messages.js  the strings, per language (and t)
//   waiting-state.js     what the page knows and shows; the place's progress
//   waiting-flow.js      the state machine over the queue API, and the
//                        modules of its answers: waiting-challenge.js
//                        (proof of work), waiting-full.js (a full line),
//                        waiting-opening.js (a scheduled opening),
//                        waiting-leave.js (leave, join again); their
//                        bookkeeping in waiting-attempt.js. They import
//                        nothing of the flow: it, or this module, passes
//                        them its enter
//   waiting-api.js       requests, the server's clock, backoff
//   waiting-pow.js       proof of work, in pow-worker.js
//   waiting-handoff.js   where the turn sends the user, with the pass
//   waiting-move.js      continuing on another device: QR code, codes;
//                        a place moved here or away
//   waiting-code.js      an invitation code: the place to its lane
//   waiting-render.js    drawing the state; the live region
//   waiting-format.js    numbers, times and waits in the page's language
//   waiting-alerts.js    the turn told to someone looking away
//   waiting-draw.js      a draw's commitment, a drawn place's key and the
//                        link to check the draw (verify-draw.js's page)
//   i18n.js, storage.js, dom.js   shared with the back office
//
// The page's rescue, an inline classic script before the modules,
// reloads the page if a module fails to load (web/web.go).

import { $ } from './dom.js';
import { session } from './storage.js';
import { i18n, served } from './waiting-messages.js';
import { forgetOldUser } from './waiting-state.js';
import { start, pollSoon, enter, enterHandoff } from './waiting-flow.js';
import { leave, joinAgain } from './waiting-leave.js';
import { retryFull } from './waiting-full.js';
import { render } from './waiting-render.js';
import { initAlerts } from './waiting-alerts.js';
import { bindMove } from './waiting-move.js';
import { bindCode } from './waiting-code.js';

function init() {
  session.remove('waitroom:reloads'); // the modules loaded (the page's rescue)
  i18n.apply();
  showQueueText();
  i18n.bindSwitch(() => {
    showQueueText();
    render();
  });

  const dialog = $('leave-dialog');
  $('leave-btn').addEventListener('click', () => {
    if (typeof dialog.showModal === 'function') dialog.showModal();
    else dialog.setAttribute('open', '');
    $('leave-cancel').focus(); // the safe choice gets focus
  });
  $('leave-cancel').addEventListener('click', () => closeDialog(dialog));
  $('leave-confirm').addEventListener('click', () => {
    closeDialog(dialog);
    leave();
    $('join-again').focus();
  });
  const rejoin = () => joinAgain(enter);
  $('join-again').addEventListener('click', rejoin);
  $('retry').addEventListener('click', rejoin);
  $('rejoin').addEventListener('click', rejoin);
  $('moved-rejoin').addEventListener('click', rejoin);
  bindMove(enterHandoff);
  bindCode(enter);
  $('full-retry').addEventListener('click', () => retryFull(true, enter));
  $('pass').addEventListener('focus', (e) => e.target.select());
  initAlerts();

  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') pollSoon();
  });
  window.addEventListener('online', pollSoon);
  // A frozen page (a background tab the browser froze) runs again.
  document.addEventListener('resume', pollSoon);
  window.addEventListener('pageshow', (e) => {
    if (e.persisted) pollSoon(); // restored from the back/forward cache
  });

  forgetOldUser();
  start();
}

// showQueueText shows the queue's title and message (the operator's, in
// the server's page data) in the page's language: that language's
// variant, else English, else any. A template without the elements
// leaves them out; text is set with textContent, never as markup.
function showQueueText() {
  const title = pickText(served.title);
  const message = pickText(served.message);
  $('queue-title').textContent = title;
  $('queue-title').hidden = !title;
  $('queue-message').textContent = message;
  $('queue-message').hidden = !message;
  $('queue-text').hidden = !title && !message;
}

function pickText(variants) {
  if (!variants || typeof variants !== 'object') return '';
  const v = variants[i18n.lang()] || variants.en || Object.values(variants)[0];
  return typeof v === 'string' ? v : '';
}

function closeDialog(dialog) {
  if (typeof dialog.close === 'function') dialog.close();
  else dialog.removeAttribute('open');
}

init();
