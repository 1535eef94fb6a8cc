// Continuing on another device. "Continue on another device"
// asks the server for a hand-over of this page's place (POST
// .../handoff: a token and a short code, used once within two minutes)
// and shows it as a QR code (an image the server draws from the token,
// GET .../handoff/qr, for this page's place only) and as the code to
// type. The other device opens the QR code's link (/q/{queue}?handoff=)
// or types the code in "Moving your place here from another device?";
// its enter takes the place over (useHandoff), and this page's next
// request is answered place_moved, which it shows (onMoved).
//
// Not to be confused with waiting-handoff.js: that one hands the entry
// pass over to the site when the turn comes.
//
// The enter that takes the place over is the flow's (waiting-flow.js),
// passed to bindMove: this module imports nothing of the flow.

import { $ } from './dom.js';
import { t } from './waiting-messages.js';
import { page, queueAPI } from './waiting-state.js';
import { api } from './waiting-api.js';
import { hhmm } from './waiting-format.js';
import { stopSolver } from './waiting-pow.js';
import { stopHuman } from './waiting-human.js';
import { render, say } from './waiting-render.js';
import { attempt, stopTimer } from './waiting-attempt.js';
import { placeGone } from './waiting-leave.js';

let shown = null; // the hand-over on screen: {token, code, expires}
let expiry = 0; // hides it when it expires

// bindMove wires the buttons. enterHandoff makes the enter that takes a
// handed-over place (page.handoff) over.
export function bindMove(enterHandoff) {
  $('move-btn').addEventListener('click', show);
  // No QR code without WAITROOM_PUBLIC_URL (404): the code still works.
  $('move-qr').addEventListener('error', () => { $('move-qr').hidden = true; });
  $('move-close').addEventListener('click', hide);
  $('move-use-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const code = $('move-use-code').value.trim();
    if (!code) return;
    $('move-use-code').value = '';
    $('move-use').open = false;
    useHandoff(code, enterHandoff);
  });
}

async function show() {
  $('move-error').hidden = true;
  let h;
  try {
    h = await api('POST', queueAPI + '/handoff');
  } catch (err) {
    // place_moved: the next poll shows it; anything else, say so here.
    $('move-error').textContent = t('moveFailed');
    $('move-error').hidden = false;
    return;
  }
  shown = { token: h.token, code: h.code, expires: Date.parse(h.expires_at) };
  $('move-qr').hidden = false;
  $('move-qr').src = queueAPI + '/handoff/qr?token=' + encodeURIComponent(h.token);
  $('move-qr').alt = t('moveQrAlt');
  $('move-code').textContent = h.code;
  $('move-expires').textContent = isFinite(shown.expires) ? t('moveExpires', { time: hhmm(shown.expires) }) : '';
  $('move-box').hidden = false;
  $('move-btn').hidden = true;
  clearTimeout(expiry);
  // Expiry is counted on this browser's clock: the server's answer came
  // just now, and a code shown a little too long is only refused.
  const left = isFinite(shown.expires) ? Math.max(0, shown.expires - Date.now()) : 120000;
  expiry = setTimeout(hide, Math.min(left, 120000));
}

function hide() {
  clearTimeout(expiry);
  shown = null;
  $('move-box').hidden = true;
  $('move-qr').removeAttribute('src');
  $('move-code').textContent = '';
  $('move-btn').hidden = document.body.getAttribute('data-state') !== 'waiting';
}

// onMoved shows that this page's place moved to another device. The
// page stops polling; one click joins again, at the back.
export function onMoved() {
  placeGone('moved', t('movedTitle'));
}

// useHandoff takes over the place another device handed over (a code
// typed here): one enter with it; this page's own place, if any, is
// given up by the server for it.
export function useHandoff(code, enterHandoff) {
  if (!code || attempt.inFlight) return;
  attempt.generation++;
  stopTimer();
  stopSolver();
  stopHuman(); // a hand-over proves the place: no human check
  page.handoff = code;
  page.checking = false;
  page.state = 'loading';
  render();
  enterHandoff();
}
