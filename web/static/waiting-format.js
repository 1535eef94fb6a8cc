// How numbers, times and waits read on the waiting page, in the language
// it shows (waiting-messages.js).

import { i18n, t } from './waiting-messages.js';

export function fmt(n) {
  return new Intl.NumberFormat(i18n.locale()).format(n);
}

export function clock(d) {
  return new Intl.DateTimeFormat(i18n.locale(), {
    hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  }).format(d);
}

// when formats a moment (ms) for a sentence: the time of day, with the
// date when it is not today.
export function when(ms) {
  const d = new Date(ms);
  const today = d.toDateString() === new Date().toDateString();
  return new Intl.DateTimeFormat(i18n.locale(), today
    ? { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }
    : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
}

// hhmm formats a local time to try again at as HH:MM, rounded up to the
// minute (trying at the time shown is never too early), with the date
// when it is not today.
export function hhmm(ms) {
  const d = new Date(Math.ceil(ms / 60000) * 60000);
  const today = d.toDateString() === new Date().toDateString();
  return new Intl.DateTimeFormat(i18n.locale(), today
    ? { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }
    : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
}

// countdown formats a time left (ms) as m:ss or h:mm:ss, with days in
// front when there are any; whole seconds rounded up, so it reads 0:00
// only once the moment has come.
export function countdown(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(total / 86400);
  const h = Math.floor((total % 86400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const pad = (n) => String(n).padStart(2, '0');
  const clockPart = (h || days ? h + ':' + pad(m) : String(m)) + ':' + pad(total % 60);
  return days ? t('days', { n: fmt(days), count: days }) + ' ' + clockPart : clockPart;
}

export function humanEta(seconds) {
  if (!(seconds >= 60)) return t('etaSoon');
  // Rounded up: an estimate that errs, errs long. The summary line shows
  // this same text, so the two never disagree.
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 60) return t('etaMin', { m: fmt(minutes) });
  const h = fmt(Math.floor(minutes / 60));
  return minutes % 60 ? t('etaHoursMin', { h: h, m: fmt(minutes % 60) }) : t('etaHours', { h: h });
}

// etaRange formats the wait as a range of whole minutes, its low end
// (seconds) rounded down and its high end up, so the range only widens
// and low ≤ high: "about 12–15 min", "up to 3 min" when the low end is
// under a minute, "less than a minute" when the high end is. Past two
// hours the ends are in half hours ("about 2.5–3.5 hr"). Intl puts the
// range and its unit in the page's language (ko: "12~15분").
export function etaRange(low, high) {
  if (!(high >= 60)) return t('etaSoon');
  let lo = Math.floor(Math.max(0, Math.min(low, high)) / 60);
  let hi = Math.ceil(high / 60);
  let unit = 'minute';
  if (hi > 120) {
    unit = 'hour';
    lo = Math.floor(lo / 30) / 2;
    hi = Math.ceil(hi / 30) / 2;
  }
  const f = new Intl.NumberFormat(i18n.locale(), { style: 'unit', unit: unit, unitDisplay: 'short', maximumFractionDigits: 1 });
  if (lo <= 0) return t('etaUpTo', { max: f.format(hi) });
  return t('etaAbout', { range: lo === hi ? f.format(hi) : f.formatRange(lo, hi) });
}

// waitText is a waiting ticket's wait: the range when the server gives
// one, else its single estimate (an older server).
export function waitText(ticket) {
  const low = ticket.eta_low_seconds;
  const high = ticket.eta_high_seconds;
  if (typeof low === 'number' && typeof high === 'number') return etaRange(low, high);
  return humanEta(ticket.eta_seconds);
}

// checkText is what the page says while it solves a proof of work, with
// the time the solve is expected to take yet (ms; waiting-pow.js
// checkLeft): the plain words until the worker's rate is known, then
// "about N s left" (minutes, hours for a long one), "a few seconds left"
// at the end, and past the expectation that it is taking longer, never a
// negative time. Rounded up, as the wait is.
export function checkText(leftMs) {
  if (!isFinite(leftMs)) return t('checking'); // no rate yet
  if (leftMs < 0) return t('checkingLong');
  const s = Math.ceil(leftMs / 1000);
  if (s <= 2) return t('checkingFew');
  if (s < 90) return t('checkingLeft', { s: fmt(s) });
  const m = Math.ceil(s / 60);
  if (m < 90) return t('checkingLeftMin', { m: fmt(m) });
  return t('checkingLeftHours', { h: fmt(Math.ceil(m / 60)) });
}
