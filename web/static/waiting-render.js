// Drawing the waiting page: everything shown is derived from the state in
// waiting-state.js, so render() can run at any time (a language switch, a
// countdown's next second) and shows the same thing for the same state.
// Screen readers hear changes through the live region (say, announce).

import { $ } from './dom.js';
import { t } from './waiting-messages.js';
import { page } from './waiting-state.js';
import { serverNow } from './waiting-api.js';
import { fmt, clock, when, hhmm, countdown, waitText, checkText } from './waiting-format.js';
import { drawnFor, checkLink } from './waiting-draw.js';

let clockTimer = 0; // re-renders a countdown on the second
let retryTimer = 0; // re-renders the seconds to the next try while reconnecting
let announced = ''; // what the live region last told: a position, or the draw
let announcedPaused = false; // the live region last told of a pause
let movedSaidAt = 0; // when it last told a move up (Date.now() ms)

// A move up is told at most this often: near the head the number changes
// every few seconds, and a screen reader speaking each one would talk over
// everything else. The turn, a pause and the draw are told at once.
const LIVE_EVERY_MS = 30000;

// render draws the whole page from the state, part by part, in the order
// below.
export function render() {
  const s = scene();
  document.body.setAttribute('data-state', s.state);
  showPanels(s);
  showFull(s);
  showChecks(s);
  showError(s);
  showTurn();
  showMove(s);
  showReconnecting(s);
  showNotice(s);
  $('paused').hidden = !s.paused;
  showHeading(s);
  $('status-text').textContent = statusText(s);
  showNotOpen(s);
  showDraw(s);
  showNumbers(s);
  showUpdated();
  tickClock(s.notOpen ? page.opening.from : s.drawPending ? s.drawAt : NaN);
}

// scene works out, once a render, what more than one part of the page
// depends on.
function scene() {
  const state = page.state;
  const ticket = page.ticket;
  const active = state === 'loading' || state === 'waiting';
  // In a scheduled opening's draw (position 0): no number yet, only the
  // time of the draw. drawAt is NaN when the ticket gives none.
  const inDraw = active && !!ticket && ticket.position === 0;
  const drawAt = inDraw ? Date.parse(ticket.opens_at || '') : NaN;
  return {
    state: state,
    ticket: ticket,
    active: active, // in line, or joining it
    notOpen: state === 'notopen',
    human: active && !!page.human,
    // The last ticket's word, kept while reconnecting like the position.
    paused: active && !!ticket && ticket.paused === true,
    inDraw: inDraw,
    drawAt: drawAt,
    drawPending: drawAt > serverNow(),
  };
}

// showPanels shows the panel of the state and hides the others.
function showPanels(s) {
  $('intro').hidden = !s.active && !s.notOpen; // #status-text keeps its text for scripts and tests
  $('waiting-panel').hidden = !s.active;
  $('notopen-panel').hidden = !s.notOpen;
  $('turn').hidden = s.state !== 'entered';
  $('left').hidden = s.state !== 'left';
  $('released').hidden = s.state !== 'released';
  $('moved').hidden = s.state !== 'moved';
  $('full').hidden = s.state !== 'full';
  $('closed').hidden = s.state !== 'closed';
  if (s.state === 'closed') showClosed();
}

// showClosed shows the operator's message when the sale is closed (sold
// out), and when sales reopen if the operator said.
function showClosed() {
  const c = page.closed || {};
  $('closed-text').textContent = c.message || t('closedBody');
  const at = Date.parse(c.reopens_at || '');
  $('closed-reopens').hidden = !isFinite(at);
  $('closed-reopens').textContent = isFinite(at) ? t('closedReopens', { time: when(at) }) : '';
}

// showFull says when a full line may be tried again, and whether the page
// will try by itself.
function showFull(s) {
  if (s.state !== 'full') return;
  $('full-text').textContent = t('fullBody', { time: hhmm(page.fullAt) });
  $('full-auto').hidden = !page.fullRetryAt;
}

// showChecks shows the checks before an enter: the proof of work's
// progress, and the human check's words.
function showChecks(s) {
  $('checking').hidden = !(s.active && page.checking);
  $('human-check').hidden = !s.human;
  $('human-check-text').textContent = s.human ? t(page.human.failed ? 'humanFailed' : 'humanCheck') : '';
}

function showError(s) {
  $('error').hidden = s.state !== 'error';
  $('error-text').textContent = page.errorText;
  $('retry').hidden = !page.canRetry;
}

// showTurn shows the turn's next step (waiting-handoff.js) as a link, or,
// when the page knows of none, the words to go back to the site. The pass
// is then tucked away for developers: a bare token is no next step.
function showTurn() {
  const next = page.next;
  const link = $('turn-link');
  link.hidden = !next;
  if (next) link.href = next.href;
  else link.removeAttribute('href');
  $('turn-body').textContent = next ? t('turnBody') : t('turnNowhere');
  $('pass-box').hidden = !!next || !page.pass;
  if ($('pass').value !== page.pass) $('pass').value = page.pass;
}

// showMove offers to continue on another device while the place waits in
// line.
function showMove(s) {
  const canMove = s.state === 'waiting' && !!s.ticket;
  $('move-btn').hidden = !canMove || !$('move-box').hidden;
  if (!canMove) $('move-box').hidden = true;
}

// showReconnecting shows the seconds to the next try, counted down; while
// the room says it is away, that it is, and that the place is kept.
function showReconnecting(s) {
  const retrying = s.active && page.retryInMs > 0;
  $('reconnecting').hidden = !retrying;
  const left = { s: fmt(Math.max(1, Math.ceil((page.retryAt - Date.now()) / 1000))) };
  $('reconnecting-text').textContent = page.unavailable ? t('unavailableBanner', left) : t('reconnecting', left);
  tickRetry(retrying ? page.retryAt : NaN);
}

function showNotice(s) {
  const noticeEl = $('notice');
  noticeEl.hidden = !((s.active || s.notOpen) && page.notice);
  noticeEl.textContent = page.notice ? t(page.notice) : '';
}

// showHeading titles the page: the line, a scheduled opening, or its draw.
function showHeading(s) {
  $('title').textContent = s.notOpen ? t('notOpenTitle') : s.inDraw ? t('drawTitle') : t('title');
  $('lede').textContent = s.notOpen ? t('notOpenLede') : s.inDraw ? t('drawLede') : t('lede');
}

// The status line of the states that have only their title to say.
const STATUS_TITLES = {
  entered: 'turnTitle',
  left: 'leftTitle',
  released: 'releasedTitle',
  full: 'fullTitle',
  moved: 'movedTitle',
  closed: 'closedTitle',
};

// statusText is the status line: what the page is doing, or how the line
// stands.
function statusText(s) {
  // Checking also when a lost place is entered again from 'waiting'.
  if (s.active && page.checking) return checkText(page.checkLeftMs);
  if (s.human) return t('humanCheck');
  if (s.state === 'waiting' && s.ticket) return lineSummary(s);
  if (s.notOpen) {
    const from = page.opening.from;
    return isFinite(from) && from > serverNow() ? t('notOpenStatus', { time: when(from) }) : t('joining');
  }
  if (s.state === 'loading') return page.resuming ? t('resuming') : t('joining');
  return t(STATUS_TITLES[s.state] || 'errorTitle');
}

// lineSummary says how many wait, and how long: paused, in the draw, or
// the estimate.
function lineSummary(s) {
  const n = s.ticket.waiting;
  if (s.paused) return t('summaryPaused', { n: fmt(n), count: n });
  if (s.inDraw) {
    return s.drawPending
      ? t('summaryDraw', { n: fmt(n), count: n, time: when(s.drawAt) })
      : t('summaryDrawing', { n: fmt(n), count: n });
  }
  return t('summary', { n: fmt(n), count: n, eta: waitText(s.ticket) });
}

// showNotOpen shows, before the pre-queue window, the countdown to it and
// who gets drawn.
function showNotOpen(s) {
  if (!s.notOpen) return;
  const opening = page.opening;
  $('notopen-countdown').textContent = isFinite(opening.from) ? countdown(opening.from - serverNow()) : '–';
  const drawNote = $('notopen-draw');
  drawNote.hidden = !(opening.opens > opening.from);
  drawNote.textContent = drawNote.hidden ? '' : t('notOpenDraw', { from: when(opening.from), opens: when(opening.opens) });
}

// showDraw shows the draw in place of the numbers while the place is in
// it, and the countdown to it.
function showDraw(s) {
  $('position-box').hidden = s.inDraw;
  $('draw-box').hidden = !s.inDraw;
  showDrawn(s);
  $('ahead-stat').hidden = s.inDraw;
  $('eta-stat').hidden = s.inDraw;
  $('waiting-stat').classList.toggle('stat-wide', s.inDraw);
  $('progress-wrap').hidden = s.inDraw;
  if (!s.inDraw) return;
  $('draw-text').textContent = s.drawPending ? t('drawBody', { time: when(s.drawAt) }) : t('drawing');
  $('draw-countdown-box').hidden = !s.drawPending;
  $('draw-countdown').textContent = s.drawPending ? countdown(s.drawAt - serverNow()) : '';
  const sealed = s.ticket.draw_commitment || '';
  $('draw-seal').hidden = !sealed;
  $('draw-seal-text').textContent = sealed ? t('drawSealed') : '';
  $('draw-commitment').textContent = sealed;
}

// showDrawn shows, to a place the draw placed, its draw key and place,
// and the link to check the draw.
function showDrawn(s) {
  const d = s.active && !s.inDraw ? drawnFor(page.member) : null;
  $('drawn-box').hidden = !d;
  if (!d) return;
  $('drawn-text').textContent = t('drawnPlace', { place: fmt(d.place) });
  $('drawn-key').textContent = d.key;
  $('drawn-check').href = checkLink(d);
}

// showNumbers shows the last ticket's numbers: position, how many are
// ahead and wait, the wait, and the progress since joining; dashes
// without a ticket.
function showNumbers(s) {
  const ticket = s.ticket;
  if (ticket) {
    // Far back the numbers come from an estimate: "about".
    const about = (n) => (ticket.position_estimated ? t('about', { n: fmt(n) }) : fmt(n));
    $('position').textContent = about(ticket.position);
    $('ahead').textContent = about(Math.max(0, ticket.position - 1));
    $('waiting-total').textContent = fmt(ticket.waiting);
    $('eta').textContent = s.paused ? t('etaPaused') : waitText(ticket);
    const pct = progressPercent(ticket.position);
    $('progress').value = pct;
    $('progress').textContent = pct + '%';
    $('progress-text').textContent = pct + '%';
  } else {
    ['position', 'ahead', 'waiting-total', 'eta'].forEach((id) => { $(id).textContent = '–'; });
    $('progress').value = 0;
    $('progress-text').textContent = '';
  }
  $('eta').classList.toggle('is-paused', s.paused);
}

// showUpdated shows when the last answer came.
function showUpdated() {
  const upd = $('updated');
  upd.textContent = page.updatedAt ? clock(page.updatedAt) : '–';
  if (page.updatedAt) upd.setAttribute('datetime', page.updatedAt.toISOString());
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
// position), of the draw, once each, and of a move up at most every
// LIVE_EVERY_MS.
export function announce(tk) {
  const paused = tk.paused === true;
  const drawAt = Date.parse(tk.opens_at || '');
  const what = tk.position > 0 ? String(tk.position) : 'draw:' + drawAt;
  if (what === announced && paused === announcedPaused) return;
  const moveUp = tk.position > 0 && !paused && !announcedPaused && /^[0-9]+$/.test(announced);
  if (moveUp && Date.now() - movedSaidAt < LIVE_EVERY_MS) return; // told at a later answer
  if (tk.position > 0) movedSaidAt = Date.now();
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
  movedSaidAt = 0;
}
