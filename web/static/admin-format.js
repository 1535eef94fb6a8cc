// How numbers and times read in the back office, in its language
// (admin-messages.js). English groups numbers the US way and writes
// 24-hour clocks with the day before the month (en-GB).
//
// Most times are this browser's (a tick, an audit entry). A scheduled
// opening's are UTC, labelled so (utcWhen): what the operator types, what
// the server keeps and what the page shows are then the same figures.

import { i18n, t } from './admin-messages.js';

let made = null; // the formatters of made.lang

function formats() {
  const lang = i18n.lang();
  if (made && made.lang === lang) return made;
  const numbers = lang === 'en' ? 'en-US' : i18n.locale();
  const times = lang === 'en' ? 'en-GB' : i18n.locale();
  const time = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
  const date = { day: 'numeric', month: 'short' };
  made = {
    lang: lang,
    num: new Intl.NumberFormat(numbers, { maximumFractionDigits: 2 }),
    secs: new Intl.NumberFormat(numbers, { maximumFractionDigits: 3 }),
    clock: new Intl.DateTimeFormat(times, time),
    dateClock: new Intl.DateTimeFormat(times, Object.assign({}, date, time)),
    utcClock: new Intl.DateTimeFormat(times, Object.assign({ timeZone: 'UTC' }, time)),
    utcDateClock: new Intl.DateTimeFormat(times, Object.assign({ timeZone: 'UTC' }, date, time)),
  };
  return made;
}

// num is a count (up to 2 decimals); secs a number of seconds (up to 3).
export function num(n) {
  return formats().num.format(n);
}
export function secs(s) {
  return formats().secs.format(s);
}

// clock is a local time of day; dateClock the same with the date.
export function clock(d) {
  return formats().clock.format(d);
}
export function dateClock(d) {
  return formats().dateClock.format(d);
}

// when is a local time (ms) of day, with the date when it is not today.
export function when(ms) {
  const d = new Date(ms);
  return d.toDateString() === new Date().toDateString() ? clock(d) : dateClock(d);
}

// utcWhen is a time (ms) in UTC, labelled: the time of day, with the date
// when it is not today in UTC.
export function utcWhen(ms) {
  const d = new Date(ms);
  const f = formats();
  const today = d.toISOString().slice(0, 10) === new Date().toISOString().slice(0, 10);
  return t('utcTime', { time: (today ? f.utcClock : f.utcDateClock).format(d) });
}

// until is the time left to ms: seconds, minutes, then hours.
export function until(ms) {
  const s = Math.max(0, Math.ceil((ms - Date.now()) / 1000));
  if (s < 120) return t('seconds', { s: num(s) });
  if (s < 7200) return t('minutes', { m: num(Math.round(s / 60)) });
  return t('hours', { h: num(Math.round(s / 360) / 10) });
}

// ago is the time since ms.
export function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 120 ? t('secondsAgo', { s: num(s) }) : t('minutesAgo', { m: num(Math.round(s / 60)) });
}

// waitText is a Retry-After (seconds) to wait.
export function waitText(seconds) {
  if (!(seconds > 0)) return t('aWhile');
  if (seconds < 90) return t('seconds', { s: num(seconds) });
  return t('minutes', { m: num(Math.ceil(seconds / 60)) });
}

// fromInputs is the API's value for a date (YYYY-MM-DD) and a time
// (HH:MM or HH:MM:SS) typed in UTC: {value: null} when both are empty,
// {error: key} when only one is. The server judges the rest.
export function fromInputs(date, time) {
  if (!date && !time) return { value: null };
  if (!time) return { error: 'needTime' };
  if (!date) return { error: 'needDate' };
  const hms = time.length === 5 ? time + ':00' : time.slice(0, 8);
  return { value: date + 'T' + hms + 'Z' };
}

// toInputs is a time (ms) as the UTC date and time inputs' values.
export function toInputs(ms) {
  const iso = new Date(ms).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19) };
}
