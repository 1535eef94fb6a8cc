// Telling the person their turn has come when they are not looking at the
// page: the tab is hidden, or another window is in front. Then the title
// flashes until they are back, a short sound plays if they have clicked
// on the page (browsers let a page make sound only after a gesture, so the
// first click or key press makes the audio context), and a system
// notification shows if they asked for one with "Notify me". The
// permission is requested on that button's click only, never by itself.
// Nothing of this happens while the page is in front of them: the turn
// panel says it all.

import { $ } from './dom.js';
import { t } from './waiting-messages.js';

const FLASH_MS = 1000;

let audio = null; // the AudioContext, made on the first gesture
let flashTimer = 0;

// initAlerts listens for the first gesture and wires "Notify me".
export function initAlerts() {
  const unlock = () => {
    if (makeAudio()) {
      document.removeEventListener('pointerdown', unlock, true);
      document.removeEventListener('keydown', unlock, true);
    }
  };
  document.addEventListener('pointerdown', unlock, true);
  document.addEventListener('keydown', unlock, true);

  $('notify-btn').addEventListener('click', async () => {
    try {
      await Notification.requestPermission();
    } catch (e) { /* an old browser's callback form: the state below tells */ }
    showNotify();
  });
  showNotify();

  // Back: the tab shown, the window in front, or a touch on the page.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') stopFlash();
  });
  window.addEventListener('focus', stopFlash);
  document.addEventListener('pointerdown', stopFlash, true);
  document.addEventListener('keydown', stopFlash, true);
}

function makeAudio() {
  const Ctx = window.AudioContext || window.webkitAudioContext;
  if (!Ctx) return true; // no Web Audio: nothing to unlock
  try {
    if (!audio) audio = new Ctx();
    if (audio.state === 'suspended') audio.resume().catch(() => {});
  } catch (e) {
    audio = null;
  }
  return !!audio;
}

// showNotify shows "Notify me" while the browser can still ask, and the
// note that it will notify once the person has allowed it.
function showNotify() {
  const can = 'Notification' in window;
  const perm = can ? Notification.permission : 'denied';
  $('notify-btn').hidden = perm !== 'default';
  $('notify-on').hidden = perm !== 'granted';
}

// away is true when the person is not looking at the page.
export function away() {
  return document.visibilityState === 'hidden' || !document.hasFocus();
}

// alertTurn tells the person away from the page that their turn has come
// (body: what the turn panel says to do). It returns whether they were.
export function alertTurn(body) {
  if (!away()) return false;
  flash();
  beep();
  notify(body);
  return true;
}

// flash alternates the title with the turn's until the person is back.
function flash() {
  stopFlash();
  let on = false;
  const step = () => {
    on = !on;
    document.title = on ? t('turnTitle') : t('pageTitle');
  };
  step();
  flashTimer = setInterval(step, FLASH_MS);
}

function stopFlash() {
  if (!flashTimer) return;
  clearInterval(flashTimer);
  flashTimer = 0;
  document.title = t('pageTitle');
}

// beep plays two short rising tones, if a gesture made the audio context.
function beep() {
  if (!audio) return;
  try {
    if (audio.state === 'suspended') audio.resume().catch(() => {});
    const now = audio.currentTime;
    [[0, 660], [0.18, 880]].forEach(([at, freq]) => {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, now + at);
      gain.gain.exponentialRampToValueAtTime(0.25, now + at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + at + 0.16);
      osc.connect(gain).connect(audio.destination);
      osc.start(now + at);
      osc.stop(now + at + 0.17);
    });
  } catch (e) { /* no sound is no harm */ }
}

// notify shows the system notification, if the person allowed it.
function notify(body) {
  if (!('Notification' in window) || Notification.permission !== 'granted') return;
  try {
    const n = new Notification(t('turnTitle'), { body: body, tag: 'waitroom-turn', lang: document.documentElement.lang });
    n.onclick = () => {
      window.focus();
      n.close();
    };
  } catch (e) { /* Chrome on Android needs a service worker for it: the title and sound remain */ }
}

// whenSeen runs go now if the page is shown, else once it is: a turn
// that sends the person on waits for them, so that the flashing title and
// the turn panel are what they come back to.
export function whenSeen(go) {
  if (document.visibilityState !== 'hidden') {
    go();
    return;
  }
  const seen = () => {
    if (document.visibilityState === 'hidden') return;
    document.removeEventListener('visibilitychange', seen);
    go();
  };
  document.addEventListener('visibilitychange', seen);
}
