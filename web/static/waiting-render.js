// Drawing the waiting page: everything shown is derived from the state in
// waiting-state.js, so render() can run at any time (a language switch, a
// countdown's next second) and shows the same thing for the same state.
// Screen readers hear changes through the live region (say, announce).

import { $ } from './dom.js';
import { t } from './waiting-messages.js';
import { page } from './waiting-state.js';
import { serverNow } from './waiting-api.js';
import { fmt, clock, when, hhmm, countdown, waitText, checkText } from './waiting-format.js';

let clockTimer = 0; // re-renders a countdown on the second
let retryTimer = 0; // re-renders the seconds to the next try while reconnecting
let announced = ''; // what the live region last told: a position, or the draw
let announcedPaused = false; // the live region last told of a pause

export function render() {
  const state = page.state;
  const ticket = page.ticket;
  const opening = page.opening;
  document.body.setAttribute('data-state', state);
  const active = state === 'loading' || state === 'waiting';
  const notOpen = state === 'notopen';
  $('intro').hidden = !active && !notOpen; // #status-text keeps its text for scripts and tests
  $('waiting-panel').hidden = !active;
  $('notopen-panel').hidden = !notOpen;
  $('turn').hidden = state !== 'entered';
  $('left').hidden = state !== 'left';
  $('released').hidden = state !== 'released';
  $('moved').hidden = state !== 'moved';
  $('full').hidden = state !== 'full';
  if (state === 'full') {
    $('full-text').textContent = t('fullBody', { time: hhmm(page.fullAt) });
    $('full-auto').hidden = !page.fullRetryAt;
  }
  $('checking').hidden = !(active && page.checking);
  const human = active && !!page.human;
  $('human-check').hidden = !human;
  $('human-check-text').textContent = human ? t(page.human.failed ? 'humanFailed' : 'humanCheck') : '';
  $('error').hidden = state !== 'error';
  $('error-text').textContent = page.errorText;
  $('retry').hidden = !page.canRetry;

  // The turn: the next step (waiting-handoff.js) as a link, or, when the
  // page knows of none, the words to go back to the site. The pass is
  // then tucked away for developers: a bare token is no next step.
  const next = page.next;
  const link = $('turn-link');
  link.hidden = !next;
  if (next) link.href = next.href;
  else link.removeAttribute('href');
  $('turn-body').textContent = next ? t('turnBody') : t('turnNowhere');
  $('pass-box').hidden = !!next || !page.pass;
  if ($('pass').value !== page.pass) $('pass').value = page.pass;

  // Continue on another device: offered while the place waits in line.
  const canMove = state === 'waiting' && !!ticket;
  $('move-btn').hidden = !canMove || !$('move-box').hidden;
  if (!canMove) $('move-box').hidden = true;

  // Reconnecting: the seconds to the next try, counted down; while the
  // room says it is away, that it is, and that the place is kept.
  const retrying = active && page.retryInMs > 0;
  $('reconnecting').hidden = !retrying;
  const left = { s: fmt(Math.max(1, Math.ceil((page.retryAt - Date.now()) / 1000))) };
  $('reconnecting-text').textContent = page.unavailable ? t('unavailableBanner', left) : t('reconnecting', left);
  tickRetry(retrying ? page.retryAt : NaN);

  const noticeEl = $('notice');
  noticeEl.hidden = !((active || notOpen) && page.notice);
  noticeEl.textContent = page.notice ? t(page.notice) : '';

  // The last ticket's word, kept while reconnecting like the position.
  const paused = active && !!ticket && ticket.paused === true;
  $('paused').hidden = !paused;

  // In a scheduled opening's draw (position 0): no number yet, only the
  // time of the draw. drawAt is NaN when the ticket gives none.
  const inDraw = active && !!ticket && ticket.position === 0;
  const drawAt = inDraw ? Date.parse(ticket.opens_at || '') : NaN;
  const drawPending = drawAt > serverNow();

  $('title').textContent = notOpen ? t('notOpenTitle') : inDraw ? t('drawTitle') : t('title');
  $('lede').textContent = notOpen ? t('notOpenLede') : inDraw ? t('drawLede') : t('lede');

  let status;
  if (active && page.checking) {
    status = checkText(page.checkLeftMs); // also when a lost place is entered again from 'waiting'
  } else if (human) {
    status = t('humanCheck');
  } else if (state === 'waiting' && ticket && paused) {
    status = t('summaryPaused', { n: fmt(ticket.waiting), count: ticket.waiting });
  } else if (state === 'waiting' && ticket && inDraw) {
    status = drawPending
      ? t('summaryDraw', { n: fmt(ticket.waiting), count: ticket.waiting, time: when(drawAt) })
      : t('summaryDrawing', { n: fmt(ticket.waiting), count: ticket.waiting });
  } else if (state === 'waiting' && ticket) {
    status = t('summary', { n: fmt(ticket.waiting), count: ticket.waiting, eta: waitText(ticket) });
  } else if (notOpen) {
    status = isFinite(opening.from) && opening.from > serverNow() ? t('notOpenStatus', { time: when(opening.from) }) : t('joining');
  } else if (state === 'loading') {
    status = page.resuming ? t('resuming') : t('joining');
  } else if (state === 'entered') {
    status = t('turnTitle');
  } else if (state === 'left') {
    status = t('leftTitle');
  } else if (state === 'released') {
    status = t('releasedTitle');
  } else if (state === 'full') {
    status = t('fullTitle');
  } else if (state === 'moved') {
    status = t('movedTitle');
  } else {
    status = t('errorTitle');
  }
  $('status-text').textContent = status;

  // Before the pre-queue window: the countdown to it, and who gets drawn.
  if (notOpen) {
    $('notopen-countdown').textContent = isFinite(opening.from) ? countdown(opening.from - serverNow()) : '–';
    const drawNote = $('notopen-draw');
    drawNote.hidden = !(opening.opens > opening.from);
    drawNote.textContent = drawNote.hidden ? '' : t('notOpenDraw', { from: when(opening.from), opens: when(opening.opens) });
  }

  $('position-box').hidden = inDraw;
  $('draw-box').hidden = !inDraw;
  $('ahead-stat').hidden = inDraw;
  $('eta-stat').hidden = inDraw;
  $('waiting-stat').classList.toggle('stat-wide', inDraw);
  $('progress-wrap').hidden = inDraw;
  if (inDraw) {
    $('draw-text').textContent = drawPending ? t('drawBody', { time: when(drawAt) }) : t('drawing');
    $('draw-countdown-box').hidden = !drawPending;
    $('draw-countdown').textContent = drawPending ? countdown(drawAt - serverNow()) : '';
  }

  if (ticket) {
    // Far back the numbers come from an estimate: "about".
    const about = (n) => (ticket.position_estimated ? t('about', { n: fmt(n) }) : fmt(n));
    $('position').textContent = about(ticket.position);
    $('ahead').textContent = about(Math.max(0, ticket.position - 1));
    $('waiting-total').textContent = fmt(ticket.waiting);
    $('eta').textContent = paused ? t('etaPaused') : waitText(ticket);
    const pct = progressPercent(ticket.position);
    $('progress').value = pct;
    $('progress').textContent = pct + '%';
    $('progress-text').textContent = pct + '%';
  } else {
    ['position', 'ahead', 'waiting-total', 'eta'].forEach((id) => { $(id).textContent = '–'; });
    $('progress').value = 0;
    $('progress-text').textContent = '';
  }
  $('eta').classList.toggle('is-paused', paused);
  const upd = $('updated');
  upd.textContent = page.updatedAt ? clock(page.updatedAt) : '–';
  if (page.updatedAt) upd.setAttribute('datetime', page.updatedAt.toISOString());

  tickClock(notOpen ? opening.from : drawPending ? drawAt : NaN);
}

// tickClock renders again when the countdown to target (a server time,
// ms) shows its next second; nothing when there is no countdown.
function tickClock(target) {
  clearTimeout(clockTimer);
  const left = target - serverNow();
  if (!(left > -1000)) return; // NaN, or long past: the 0:00 has been shown
  clockTimer = setTimeout(render, left > 0 ? (left % 1000) + 20 : 1000);
}

// tickRetry renders again when the countdown to the next try (a local
// time, ms) shows its next second; nothing when there is none.
function tickRetry(at) {
  clearTimeout(retryTimer);
  const left = at - Date.now();
  if (!(left > 0)) return;
  retryTimer = setTimeout(render, (left % 1000) + 20);
}

// How far the user has come since joining at position P: nothing yet on
// arrival (0 %), and each place moved up one P-th of the way. Admission,
// the end of the way, is the turn panel, which has no bar, so the bar
// stays below 100 % while waiting.
function progressPercent(position) {
  const start = Math.max(page.place ? page.place.initial_position : position, position, 1);
  const f = (start - position) / start;
  return Math.min(99, Math.max(0, Math.round(f * 100)));
}

// showCheckProgress shows how far the proof of work has come (%).
export function showCheckProgress(pct) {
  const p = Math.min(100, Math.max(0, Math.round(pct)));
  const el = $('check-progress');
  el.value = p;
  el.textContent = p + '%';
}

// say tells screen readers text, through the live region.
export function say(text) {
  $('live').textContent = text;
}

// announce tells screen readers of a pause, of its end (with the
// position), of the draw and of every move up, once each.
export function announce(tk) {
  const paused = tk.paused === true;
  const drawAt = Date.parse(tk.opens_at || '');
  const what = tk.position > 0 ? String(tk.position) : 'draw:' + drawAt;
  if (what === announced && paused === announcedPaused) return;
  announced = what;
  announcedPaused = paused;
  let text = t(tk.position_estimated ? 'liveAbout' : 'live', { n: fmt(tk.position) });
  if (paused) text = t('paused');
  else if (tk.position === 0) text = drawAt > serverNow() ? t('drawLive', { time: when(drawAt) }) : t('drawing');
  say(text);
}

// forgetAnnounced makes the next announce speak, whatever it says (a new
// place after joining again).
export function forgetAnnounced() {
  announced = '';
  announcedPaused = false;
}
