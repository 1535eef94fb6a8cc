// Waiting page for /q/{queue}: joins the line, polls the user's place and
// moves them on when it is their turn.
//
// The place belongs to whoever holds its credential, which the server keeps
// in an HttpOnly cookie (wr_place_{queue}): this script never sees it and
// names nobody. It asks for "my" status, enters with an empty body (or a
// site's join token from ?join=) and leaves with DELETE .../place; the
// browser sends the cookie with each. The member id in a ticket's user_id
// only keys the progress kept in localStorage; it proves nothing.
//
// The rule that shapes this file: a failed request never re-enters the line.
// Entering again puts the user at the back, so after any error we only ask
// for the status, and only a successful answer that we hold no place
// (NOT_WAITING, or a status that finds no valid cookie) may lead to a new
// enter. Three refusals of an enter are definite answers that changed
// nothing, not failures, and are the only ones answered with another enter:
//
//   - challenge_required: the queue asks for proof of work. The page gets
//     a challenge, solves it in a Web Worker (pow-worker.js, same origin as
//     the CSP wants) while it says it is checking the browser, and enters
//     with {challenge, nonce}. A challenge that expires before it is
//     solved, or a solution refused again, gets a new challenge, at most
//     CHALLENGE_ATTEMPTS in all, then the error panel. Once asked, every
//     later enter of this page solves one first.
//   - queue_full: the line is at its cap. The page says when to try again
//     (Retry-After, shown as local time) with a button, and tries once by
//     itself at that time, with jitter so full pages do not return at once.
//   - rate_limited (also for a status): the call is made again after
//     Retry-After, with jitter and growing if it repeats, and nothing is
//     shown: it is the server pacing us, not a lost connection.
//
// While the operator pauses the line, WAITING tickets say paused: true.
// Nobody is admitted then and every place is kept, so the page says so,
// promises no wait time, and goes on polling as the server suggests; the
// first ticket without the flag brings the estimate back.
//
// A scheduled opening. Before its pre-queue window an enter answers 403
// not_open with prequeue_from and opens_at: a definite "not yet", not a
// failure, and no place is held. The page counts down to prequeue_from and
// then enters once (a not_open answer again only reschedules). In the
// window a WAITING ticket has position 0 and opens_at: the user is in the
// draw, and at opens_at everyone in it gets a place in a random order, so
// the page shows no number, only the countdown. Times are counted on the
// server's clock, estimated from the Date header of its answers.
//
// A place not heard from for a while (no enter or status: the page was
// closed, frozen or asleep) is dropped when the line reaches it, and the
// ticket then says NOT_WAITING with reason "abandoned". The page does not
// rejoin by itself then: it explains, and one click joins again at the back.
'use strict';

(function () {
  const FALLBACK_POLL_MS = 2000;
  const MIN_POLL_MS = 250; // guards against a server hint of 0 hammering us
  const BACKOFF_START_MS = 1000;
  const BACKOFF_CAP_MS = 30000;
  const BACKOFF_JITTER = 0.2; // ±20 %, so clients cut off together do not return together
  const REQUEST_TIMEOUT_MS = 10000;
  const DELETE_ATTEMPTS = 4;
  const MAX_TIMER_MS = 3600000; // longer waits re-arm: setTimeout overflows past ~24.8 days
  // Before a scheduled opening's pre-queue window the page enters at a
  // random moment within this much of the window's start (at most a tenth
  // of the window): nothing is gained by being first in a draw, so a crowd
  // of open pages need not hit the server in the same instant.
  const SPREAD_MAX_MS = 3000;
  const CLOCK_JUMP_MS = 3000; // a clock estimate this far below the last one means the local clock moved
  // Proof of work: challenges fetched for one join before the page gives
  // up; a solve is abandoned this long before its challenge expires.
  const CHALLENGE_ATTEMPTS = 3;
  const CHALLENGE_MARGIN_MS = 2000;
  const WORKER_URL = '/_waitroom/static/pow-worker.js';
  // A full line's automatic retry comes up to this much after its time
  // (at most a tenth of the wait, at least a second's spread).
  const FULL_SPREAD_MAX_MS = 5000;
  const LIMIT_JITTER = 0.2; // a rate-limited call waits Retry-After plus up to 20 %
  // Why a place ended (NOT_WAITING reason) -> the notice shown after the
  // single automatic re-enter. "abandoned" is not here: it never re-enters.
  const REJOIN_NOTICES = {
    expired: 'rejoinedExpired',
    done: 'rejoinedDone',
    removed: 'rejoinedRemoved',
    left: 'rejoinedLeft',
  };

  // Plural-sensitive or parameterised strings are functions.
  const STRINGS = {
    en: {
      pageTitle: 'Waiting line',
      title: "You're in line",
      lede: 'Lots of people are trying to get in right now, so we let them in a few at a time. ' +
        'Keep this page open: your place is saved, even if you reload.',
      yourNumber: 'Your number in line',
      ahead: 'People ahead of you',
      waitingTotal: 'People waiting',
      eta: 'Estimated wait',
      progress: 'Your progress since you joined',
      updated: 'Last updated',
      leave: 'Leave the line',
      leaveTitle: 'Leave the line?',
      leaveBody: 'You will give up your place. If you come back later, you start again at the back of the line.',
      leaveCancel: 'Stay in line',
      leaveConfirm: 'Leave the line',
      turnTitle: "It's your turn",
      turnBody: 'Thanks for waiting. You can go in now.',
      turnLink: 'Continue',
      passLabel: 'Entry pass',
      passHint: 'The site you are entering checks this pass. It works until your turn ends.',
      leftTitle: 'You left the line',
      leftBody: 'You gave up your place. If you join again, you start at the back of the line.',
      joinAgain: 'Join again',
      errorTitle: 'Something went wrong',
      joining: 'Joining the line…',
      resuming: 'Checking your place in line…',
      checking: 'Checking your browser… (this takes a second)',
      errChallenge: 'We could not check your browser. Please try again.',
      // The line is at its cap (queue_full); time is HH:MM, local. The
      // panel reads: fullTitle, then fullBody.
      fullTitle: 'The line is full right now',
      fullBody: (time) => 'Try again at ' + time + ' (local time).',
      fullAuto: 'This page will try once more by itself at that time.',
      fullRetry: 'Try again',
      // n is formatted, count the number (for plurals); eta is humanEta's
      // text, the same as the Estimated wait card shows.
      summary: (n, count, eta) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; estimated wait ' + eta,
      // While the line is paused: no estimate, and no promise of one.
      summaryPaused: (n, count) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the line is paused',
      paused: 'The line is paused. You keep your place, and it will move again when the line resumes.',
      etaPaused: 'Paused',
      reconnecting: (s) => 'Connection lost. Reconnecting… (next try in ' + s + ' s)',
      live: (n) => 'You are number ' + n + ' in line',
      rejoined: 'Your earlier place had expired, so you joined the line again at the back.',
      rejoinedExpired: 'Your earlier turn had run out of time, so you joined the line again at the back.',
      rejoinedDone: 'You had finished your earlier turn, so you joined the line again at the back.',
      rejoinedRemoved: 'The site removed your earlier place, so you joined the line again at the back.',
      rejoinedLeft: 'You had given up your earlier place, so you joined the line again at the back.',
      // Shown in every waiting state: nobody needs to click anything.
      autoNote: 'Please wait: you will be let in automatically, in order. Keep this page open.',
      // A scheduled opening, before its pre-queue window.
      notOpenTitle: 'The line is not open yet',
      notOpenLede: 'This line opens at a set time. Keep this page open: you will join it automatically.',
      notOpenStatus: (time) => 'The line opens for joining at ' + time,
      notOpenIn: 'Opens for joining in',
      // Everyone in the window is drawn in a random order: no need to hurry.
      notOpenDraw: (from, opens) => 'Everyone who joins between ' + from + ' and ' + opens +
        ' gets a place in a random order at ' + opens + ', so there is no need to hurry.',
      notOpenLive: (time) => 'The line opens for joining at ' + time + '. This page will join it automatically.',
      // In the draw: no number yet.
      drawTitle: 'You are in the draw',
      drawLede: 'Everyone who joins before the line opens gets a place in a random order, so there is no need to hurry. ' +
        'Keep this page open: your place in the draw is saved, even if you reload.',
      drawLabel: 'You are in the draw',
      drawBody: (time) => 'At ' + time + ' everyone here gets a place in a random order.',
      drawIn: 'The draw is in',
      drawing: 'The order is being drawn. Your number comes in a moment.',
      summaryDraw: (n, count, time) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the draw is at ' + time,
      summaryDrawing: (n, count) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the order is being drawn',
      drawLive: (time) => 'You are in the draw. At ' + time + ' everyone here gets a place in a random order.',
      // The place was dropped as abandoned.
      releasedTitle: 'Your place was released',
      releasedBody: "We didn't hear from this page for a while, so your place was released. " +
        'This happens when the page is closed, or the device sleeps, when the line reaches you.',
      rejoin: 'Join again at the back',
      days: (d) => d + (d === 1 ? ' day' : ' days'),
      errQueue: 'This waiting line does not exist. Please check the address.',
      errJoin: 'This link to the waiting line is not valid or has expired. Go back to the site and open the waiting line again.',
      errLost: 'We could not keep your place in line.',
      errGeneric: (code) => 'The waiting room answered with an error (' + code + ').',
      etaSoon: 'less than a minute',
      etaMin: (m) => 'about ' + m + ' min',
      etaHours: (h, m) => 'about ' + h + ' h' + (m ? ' ' + m + ' min' : ''),
    },
    ko: {
      pageTitle: '접속 대기',
      title: '접속 대기 중입니다',
      lede: '지금 접속하려는 사람이 많아 순서대로 입장하고 있습니다. ' +
        '이 페이지를 열어 두세요. 새로고침해도 순번은 유지됩니다.',
      yourNumber: '나의 대기 순번',
      ahead: '내 앞 대기 인원',
      waitingTotal: '전체 대기 인원',
      eta: '예상 대기 시간',
      progress: '대기 진행률',
      updated: '마지막 업데이트',
      leave: '대기 취소',
      leaveTitle: '대기를 취소할까요?',
      leaveBody: '지금 순번을 잃게 됩니다. 나중에 다시 들어오면 맨 뒤에서부터 기다려야 합니다.',
      leaveCancel: '계속 기다리기',
      leaveConfirm: '대기 취소',
      turnTitle: '입장할 차례입니다',
      turnBody: '기다려 주셔서 감사합니다. 지금 입장할 수 있습니다.',
      turnLink: '입장하기',
      passLabel: '입장권',
      passHint: '입장할 사이트에서 이 입장권을 확인합니다. 입장 시간이 끝날 때까지 유효합니다.',
      leftTitle: '대기를 취소했습니다',
      leftBody: '순번을 반납했습니다. 다시 줄을 서면 맨 뒤에서부터 시작합니다.',
      joinAgain: '다시 줄 서기',
      errorTitle: '문제가 발생했습니다',
      joining: '대기열에 들어가는 중…',
      resuming: '대기 순번을 확인하는 중…',
      checking: '브라우저를 확인하는 중… (잠시면 됩니다)',
      errChallenge: '브라우저 확인을 마치지 못했습니다. 다시 시도해 주세요.',
      fullTitle: '지금은 대기열이 가득 찼습니다',
      fullBody: (time) => time + '(현지 시각)에 다시 시도해 주세요.',
      fullAuto: '그 시각에 이 페이지가 한 번 더 자동으로 시도합니다.',
      fullRetry: '다시 시도',
      summary: (n, count, eta) => '현재 대기 인원 ' + n + '명, 예상 대기 시간 ' + eta,
      summaryPaused: (n) => '현재 대기 인원 ' + n + '명, 대기열 일시 정지 중',
      paused: '대기열이 잠시 멈췄습니다. 순번은 그대로 유지되며, 대기열이 다시 움직이면 이어서 진행됩니다.',
      etaPaused: '일시 정지',
      reconnecting: (s) => '연결이 끊겼습니다. 다시 연결하는 중… (' + s + '초 후 재시도)',
      live: (n) => '대기 순번 ' + n + '번입니다',
      rejoined: '이전 순번이 만료되어 맨 뒤에서 다시 줄을 섰습니다.',
      rejoinedExpired: '이전 입장 시간이 끝나 맨 뒤에서 다시 줄을 섰습니다.',
      rejoinedDone: '이전 입장을 마치셨기 때문에 맨 뒤에서 다시 줄을 섰습니다.',
      rejoinedRemoved: '사이트에서 이전 순번을 삭제하여 맨 뒤에서 다시 줄을 섰습니다.',
      rejoinedLeft: '이전 순번을 취소하셨기 때문에 맨 뒤에서 다시 줄을 섰습니다.',
      autoNote: '잠시만 기다리시면 순서대로 자동 접속됩니다. 이 페이지를 닫지 마세요.',
      notOpenTitle: '아직 대기열이 열리지 않았습니다',
      notOpenLede: '이 대기열은 정해진 시각에 열립니다. 이 페이지를 열어 두시면 자동으로 줄을 섭니다.',
      notOpenStatus: (time) => time + '부터 줄을 설 수 있습니다',
      notOpenIn: '줄서기 시작까지',
      notOpenDraw: (from, opens) => from + '부터 ' + opens + ' 사이에 들어온 분은 모두 ' + opens +
        '에 무작위 추첨으로 순번을 받습니다. 서두르지 않으셔도 됩니다.',
      notOpenLive: (time) => time + '부터 줄을 설 수 있습니다. 이 페이지가 자동으로 줄을 섭니다.',
      drawTitle: '추첨 대기 중입니다',
      drawLede: '대기열이 열리기 전에 들어온 분은 모두 무작위 추첨으로 순번을 받으므로 서두르지 않으셔도 됩니다. ' +
        '이 페이지를 열어 두세요. 새로고침해도 추첨 참여는 유지됩니다.',
      drawLabel: '추첨에 참여했습니다',
      drawBody: (time) => time + '에 이곳의 모든 분이 무작위 순서로 순번을 받습니다.',
      drawIn: '추첨까지',
      drawing: '순번을 추첨하고 있습니다. 잠시 후 순번이 표시됩니다.',
      summaryDraw: (n, count, time) => '현재 대기 인원 ' + n + '명, ' + time + ' 추첨',
      summaryDrawing: (n) => '현재 대기 인원 ' + n + '명, 순번 추첨 중',
      drawLive: (time) => '추첨에 참여했습니다. ' + time + '에 모든 분이 무작위 순서로 순번을 받습니다.',
      releasedTitle: '대기 순번이 해제되었습니다',
      releasedBody: '한동안 이 페이지의 응답이 없어 순번이 해제되었습니다. ' +
        '차례가 왔을 때 페이지가 닫혀 있거나 기기가 절전 상태이면 이렇게 됩니다.',
      rejoin: '맨 뒤에서 다시 줄 서기',
      days: (d) => d + '일',
      errQueue: '존재하지 않는 대기열입니다. 주소를 확인해 주세요.',
      errJoin: '대기열 링크가 올바르지 않거나 만료되었습니다. 사이트로 돌아가 대기열에 다시 들어와 주세요.',
      errLost: '대기 순번을 유지하지 못했습니다.',
      errGeneric: (code) => '대기열 서버가 오류로 응답했습니다 (' + code + ').',
      etaSoon: '1분 미만',
      etaMin: (m) => '약 ' + m + '분',
      etaHours: (h, m) => '약 ' + h + '시간' + (m ? ' ' + m + '분' : ''),
    },
  };

  const $ = (id) => document.getElementById(id);
  const queue = queueFromPath(location.pathname);
  const base = '/api/v1/queues/' + encodeURIComponent(queue);
  const keys = {
    place: 'waitroom:place:' + queue,
    lang: 'waitroom:lang',
    oldUser: 'waitroom:user:' + queue, // the plain user id of earlier versions
  };

  let lang = pickLang();
  let state = 'loading'; // mirrors body[data-state]: loading|notopen|waiting|entered|left|released|full|error
  let resuming = false; // loading text: checking an old place vs joining fresh
  // A site's join token (?join=): the first enter sends it, so one account
  // holds one place on every device. Dropped once an enter with it is
  // answered; from then on the cookie names the place.
  let joinToken = new URLSearchParams(location.search).get('join') || '';
  // Where the gate in front of the order page sent the user from: once
  // admitted, they go back there with the pass (instead of target_url).
  const returnPath = sameSitePath(new URLSearchParams(location.search).get('return'));
  let member = ''; // the member id of the last ticket: whose place we hold
  let ticket = null; // last WAITING ticket, kept on screen while reconnecting
  let pass = ''; // the entry pass of an ENTERED ticket
  let target = ''; // where an ENTERED ticket sends the user; '' when nowhere
  let updatedAt = null;
  let place = null; // {user_id, initial_position, joined_at}: the progress of member's place
  let hadPlace = false; // seen WAITING/ENTERED since the last (re)join
  let reentered = false; // the single re-enter after losing a place is used up
  let notice = ''; // string key shown under the status line
  let errorText = '';
  let canRetry = true; // the error panel offers "Join again"
  let failures = 0;
  let retryInMs = 0; // >0 while reconnecting
  let timer = 0;
  let inFlight = false;
  let generation = 0; // bumped on leave/join so late answers of an old attempt are dropped
  let pendingDelete = Promise.resolve();
  let announced = ''; // what the live region last told: a position, or the draw
  let announcedPaused = false; // the live region last told of a pause
  // A scheduled opening that answered not_open: {from, opens} in ms (NaN
  // when not given). enterAt is the local time of the enter it waits for.
  let opening = null;
  let enterAt = 0;
  let notOpenAgain = 0; // not_open answers in a row after the window should have opened
  let skew = null; // the server's clock is at least Date.now() + skew (from Date headers)
  let clockTimer = 0; // re-renders a countdown on the second
  // Proof of work (see the top of the file).
  let needChallenge = false; // the queue asked for one: later enters solve first
  let challengeTries = 0; // challenges fetched since the last ticket or join
  let checking = false; // solving one: the page says it checks the browser
  let solver = null; // {worker, cancel} of the solve in progress
  let limited = 0; // rate_limited answers in a row
  // A full line: the local time to try again at (shown), when the
  // automatic retry comes (with its jitter; 0: none pending), and whether
  // it has been used since the last ticket or click.
  let fullAt = 0;
  let fullRetryAt = 0;
  let fullAutoUsed = false;

  // ---- storage: localStorage can throw (private mode, disabled storage) ----

  function storageGet(key) {
    try { return localStorage.getItem(key); } catch (e) { return null; }
  }
  function storageSet(key, value) {
    try { localStorage.setItem(key, value); } catch (e) { /* the page still works; a reload restarts the progress bar */ }
  }
  function storageRemove(key) {
    try { localStorage.removeItem(key); } catch (e) { /* see storageSet */ }
  }

  // storedPlace is the progress this browser saved for the queue, whoever's
  // place it was; readPlace only member's.
  function storedPlace() {
    try {
      const p = JSON.parse(storageGet(keys.place) || 'null');
      return p && typeof p === 'object' ? p : null;
    } catch (e) {
      return null;
    }
  }
  function readPlace(id) {
    const p = storedPlace();
    return p && p.user_id === id ? p : null;
  }
  function savePlace(p) {
    place = p;
    storageSet(keys.place, JSON.stringify(p));
  }
  function clearPlace() {
    place = null;
    storageRemove(keys.place);
  }

  function queueFromPath(path) {
    const m = /^\/q\/([^/]+)\/?$/.exec(path);
    if (!m) return 'default'; // e.g. the file opened from disk while developing
    try { return decodeURIComponent(m[1]); } catch (e) { return m[1]; }
  }

  // ---- language ----

  function pickLang() {
    const saved = storageGet(keys.lang);
    if (saved === 'ko' || saved === 'en') return saved;
    return /^ko\b/i.test(navigator.language || '') ? 'ko' : 'en';
  }

  function t(key) {
    const s = STRINGS[lang][key];
    if (typeof s !== 'function') return s;
    return s.apply(null, Array.prototype.slice.call(arguments, 1));
  }

  function setLang(l) {
    lang = l;
    storageSet(keys.lang, l);
    applyLang();
    render();
  }

  function applyLang() {
    document.documentElement.lang = lang;
    document.title = t('pageTitle');
    document.querySelectorAll('[data-i18n]').forEach((el) => {
      el.textContent = t(el.getAttribute('data-i18n'));
    });
    $('lang-ko').setAttribute('aria-pressed', String(lang === 'ko'));
    $('lang-en').setAttribute('aria-pressed', String(lang === 'en'));
  }

  function locale() {
    return lang === 'ko' ? 'ko-KR' : 'en-US';
  }
  function fmt(n) {
    return new Intl.NumberFormat(locale()).format(n);
  }
  function clock(d) {
    return new Intl.DateTimeFormat(locale(), {
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    }).format(d);
  }

  // when formats a moment (ms) for a sentence: the time of day, with the
  // date when it is not today.
  function when(ms) {
    const d = new Date(ms);
    const today = d.toDateString() === new Date().toDateString();
    return new Intl.DateTimeFormat(locale(), today
      ? { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }
      : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
  }

  // hhmm formats a local time to try again at as HH:MM, rounded up to the
  // minute (trying at the time shown is never too early), with the date
  // when it is not today.
  function hhmm(ms) {
    const d = new Date(Math.ceil(ms / 60000) * 60000);
    const today = d.toDateString() === new Date().toDateString();
    return new Intl.DateTimeFormat(locale(), today
      ? { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }
      : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(d);
  }

  // countdown formats a time left (ms) as m:ss or h:mm:ss, with days in
  // front when there are any; whole seconds rounded up, so it reads 0:00
  // only once the moment has come.
  function countdown(ms) {
    const total = Math.max(0, Math.ceil(ms / 1000));
    const days = Math.floor(total / 86400);
    const h = Math.floor((total % 86400) / 3600);
    const m = Math.floor((total % 3600) / 60);
    const pad = (n) => String(n).padStart(2, '0');
    const clockPart = (h || days ? h + ':' + pad(m) : String(m)) + ':' + pad(total % 60);
    return days ? t('days', days) + ' ' + clockPart : clockPart;
  }

  function humanEta(seconds) {
    if (!(seconds >= 60)) return t('etaSoon');
    // Rounded up: an estimate that errs, errs long. The summary line shows
    // this same text, so the two never disagree.
    const minutes = Math.ceil(seconds / 60);
    if (minutes < 60) return t('etaMin', fmt(minutes));
    return t('etaHours', fmt(Math.floor(minutes / 60)), minutes % 60);
  }

  // ---- network ----

  async function api(method, url, body) {
    const ctrl = new AbortController();
    const timeout = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    try {
      const res = await fetch(url, {
        method: method,
        headers: body ? { 'Content-Type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
        cache: 'no-store',
        keepalive: method === 'DELETE', // let a leave finish even if the tab closes
        signal: ctrl.signal,
      });
      noteServerTime(res.headers.get('Date'), Date.now());
      if (res.status === 204) return null;
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const err = new Error((data && data.error && data.error.message) || res.statusText);
        err.status = res.status;
        err.code = (data && data.error && data.error.code) || 'http_' + res.status;
        err.detail = (data && data.error) || {};
        const after = Number(res.headers.get('Retry-After'));
        err.retryAfterMs = after > 0 ? after * 1000 : 0; // seconds; an HTTP date is not sent
        throw err;
      }
      if (!data) throw Object.assign(new Error('empty response'), { status: 0, code: 'bad_response' });
      return data;
    } catch (err) {
      if (err.status === undefined) err.status = 0; // network failure or timeout
      throw err;
    } finally {
      clearTimeout(timeout);
    }
  }

  // noteServerTime keeps an estimate of the server's clock, which decides
  // a scheduled opening: users' clocks can be minutes off. The Date header
  // is in whole seconds and written before the answer arrived, so each one
  // gives a lower bound; the highest is kept, unless one far below says
  // the local clock itself was changed.
  function noteServerTime(header, localAt) {
    const d = Date.parse(header || '');
    if (!isFinite(d)) return;
    const s = d - localAt;
    if (skew === null || s > skew || s < skew - CLOCK_JUMP_MS) skew = s;
  }

  // serverNow is the server's time now, at the earliest: a moment counted
  // down on it is never reached before the server reaches it.
  function serverNow() {
    return Date.now() + (skew || 0);
  }

  // Worth retrying later: no answer, overload, or a server/Redis failure.
  function transient(err) {
    return err.status === 0 || err.status === 408 || err.status === 429 || err.status >= 500;
  }

  function backoff(n) {
    const raw = Math.min(BACKOFF_CAP_MS, BACKOFF_START_MS * Math.pow(2, n - 1));
    return Math.round(raw * (1 + (Math.random() * 2 - 1) * BACKOFF_JITTER));
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(() => step('status'), ms);
  }

  // enter joins the line, with a solved challenge first when the queue
  // has asked this page for one.
  function enter() {
    if (needChallenge) solveAndEnter();
    else step('enter');
  }

  // step runs one request; every answer or error decides the next one.
  // An enter carries the join token while there is one, and solution, a
  // solved challenge {challenge, nonce}, when given.
  async function step(action, solution) {
    clearTimeout(timer);
    const gen = generation;
    inFlight = true;
    let tk;
    try {
      if (action === 'enter') {
        const body = joinToken ? { join_token: joinToken } : {};
        if (solution) {
          body.challenge = solution.challenge;
          body.nonce = solution.nonce;
        }
        tk = await api('POST', base + '/enter', body);
      } else {
        tk = await api('GET', base + '/status');
      }
    } catch (err) {
      if (gen !== generation) return;
      checking = false;
      if (err.code === 'rate_limited') {
        onLimited(action, solution, err);
        return;
      }
      limited = 0;
      if (action === 'enter' && err.code === 'challenge_required') {
        // Definite: no place was made. Solve one (again) and enter.
        failures = 0;
        retryInMs = 0;
        needChallenge = true;
        solveAndEnter();
        return;
      }
      if (action === 'enter' && err.code === 'queue_full') {
        failures = 0;
        retryInMs = 0;
        onFull(err);
        return;
      }
      if (action === 'enter' && err.code === 'not_open') {
        // A definite "not yet": no place is held, nothing failed. The
        // answer set the place cookie, which the later enter proves.
        failures = 0;
        retryInMs = 0;
        dropJoinToken();
        onNotOpen(err.detail);
        return;
      }
      if (action === 'status' && err.code === 'invalid_place') {
        // A definite answer: this browser proves no place (no cookie yet,
        // or it expired). Not a failure to back off from.
        failures = 0;
        retryInMs = 0;
        onNoPlace(action);
        return;
      }
      onError(err);
      return;
    } finally {
      if (gen === generation) inFlight = false;
    }
    if (gen !== generation) return;
    failures = 0;
    retryInMs = 0;
    limited = 0;
    checking = false;
    challengeTries = 0;
    fullAutoUsed = false;
    if (action === 'enter') dropJoinToken();
    onTicket(tk, action);
  }

  // onLimited makes a rate-limited call again once the server allows it:
  // a 429 changed nothing, so an enter is made again (with the same
  // solution: its challenge was not used) and a status asked again. The
  // wait is Retry-After plus jitter, never less, and grows like a backoff
  // if the refusals go on; the page shows nothing, its last answer stands.
  function onLimited(action, solution, err) {
    limited++;
    const wait = Math.max(err.retryAfterMs || 0, backoff(limited)) * (1 + Math.random() * LIMIT_JITTER);
    clearTimeout(timer);
    timer = setTimeout(() => step(action, solution), Math.min(MAX_TIMER_MS, Math.round(wait)));
  }

  // solveAndEnter gets a challenge, solves it in the worker and enters
  // with the solution. A challenge that expires first, a failed fetch or
  // an unusable answer gets another after a backoff, at most
  // CHALLENGE_ATTEMPTS since the last ticket; then the error panel.
  async function solveAndEnter() {
    clearTimeout(timer);
    stopSolver();
    const gen = generation;
    if (challengeTries >= CHALLENGE_ATTEMPTS) {
      checking = false;
      fail(t('errChallenge'));
      return;
    }
    challengeTries++;
    checking = true;
    render();
    setCheckProgress(0);
    inFlight = true;
    let solution;
    try {
      const ch = await api('GET', base + '/challenge');
      if (gen !== generation) return;
      if (typeof ch.challenge !== 'string' || !(ch.difficulty >= 0)) {
        throw Object.assign(new Error('bad challenge'), { status: 0, code: 'bad_response' });
      }
      solution = await solve(ch);
    } catch (err) {
      if (gen !== generation || err.code === 'cancelled') return;
      inFlight = false;
      if (err.code === 'queue_not_found' || err.code === 'no_worker') {
        checking = false;
        fail(err.code === 'queue_not_found' ? t('errQueue') : t('errChallenge'));
        return;
      }
      // Expired, a failed fetch, a solver error: another challenge, later.
      const wait = err.code === 'rate_limited' ? Math.max(err.retryAfterMs, backoff(challengeTries)) : backoff(challengeTries);
      timer = setTimeout(solveAndEnter, Math.round(wait));
      return;
    }
    if (gen !== generation) return;
    setCheckProgress(100);
    step('enter', solution);
  }

  // solve runs the challenge ch in a worker and resolves to the solution,
  // or rejects (code expired) when the challenge would expire before the
  // enter could use it. stopSolver cancels it (code cancelled).
  function solve(ch) {
    return new Promise((resolve, reject) => {
      const fault = (code, msg) => Object.assign(new Error(msg), { status: -1, code: code });
      let worker;
      try {
        worker = new Worker(WORKER_URL);
      } catch (e) {
        reject(fault('no_worker', String(e)));
        return;
      }
      const expected = Math.pow(2, ch.difficulty);
      // expires_at is on the server's clock; at the latest 5 minutes.
      const expires = Date.parse(ch.expires_at || '') - (skew || 0);
      const left = isFinite(expires) ? expires - Date.now() - CHALLENGE_MARGIN_MS : 300000;
      let expiry = 0;
      const finish = (fn, v) => {
        clearTimeout(expiry);
        worker.terminate();
        if (solver && solver.worker === worker) solver = null;
        fn(v);
      };
      solver = { worker: worker, cancel: () => finish(reject, fault('cancelled', 'cancelled')) };
      expiry = setTimeout(() => finish(reject, fault('expired', 'challenge expired')), Math.max(0, left));
      worker.onmessage = (e) => {
        const m = e.data || {};
        if (m.type === 'progress') {
          // The chance of having found a solution by now: it rises
          // steadily and reaches 100 % only when one is found.
          setCheckProgress(100 * (1 - Math.exp(-m.tried / expected)));
        } else if (m.type === 'done') {
          finish(resolve, { challenge: ch.challenge, nonce: String(m.nonce) });
        } else {
          finish(reject, fault('solver', m.message || 'solver failed'));
        }
      };
      // A worker that cannot load (blocked, missing) fails here.
      worker.onerror = (e) => {
        e.preventDefault();
        finish(reject, fault('no_worker', e.message || 'worker failed'));
      };
      worker.postMessage({ challenge: ch.challenge, difficulty: ch.difficulty });
    });
  }

  function stopSolver() {
    if (solver) solver.cancel();
  }

  function setCheckProgress(pct) {
    const p = Math.min(100, Math.max(0, Math.round(pct)));
    const el = $('check-progress');
    el.value = p;
    el.textContent = p + '%';
  }

  // onFull shows that the line is at its cap and when to try again, and
  // arms the one automatic retry: at that time, plus jitter. After that
  // one, a line still full leaves the retry to the button.
  function onFull(err) {
    clearTimeout(timer);
    let wait = err.retryAfterMs;
    if (!(wait > 0)) wait = Date.parse((err.detail && err.detail.retry_at) || '') - serverNow();
    if (!(wait > 0)) wait = backoff(1);
    fullAt = Date.now() + wait;
    fullRetryAt = 0;
    if (!fullAutoUsed) {
      fullAutoUsed = true;
      fullRetryAt = fullAt + Math.random() * Math.min(FULL_SPREAD_MAX_MS, Math.max(1000, wait / 10));
    }
    hadPlace = false;
    ticket = null;
    clearPlace();
    state = 'full';
    resuming = false;
    render();
    $('live').textContent = t('fullTitle') + '. ' + t('fullBody', hhmm(fullAt));
    if (fullRetryAt) armFull();
  }

  function armFull() {
    clearTimeout(timer);
    timer = setTimeout(fullWhenDue, Math.min(MAX_TIMER_MS, Math.max(0, fullRetryAt - Date.now())));
  }

  function fullWhenDue() {
    if (state !== 'full' || inFlight || !fullRetryAt) return;
    if (Date.now() < fullRetryAt) {
      armFull();
      return;
    }
    retryFull(false);
  }

  // retryFull enters again from the full panel: by itself once, or when
  // the user asks (which earns one more automatic retry if still full).
  function retryFull(byUser) {
    if (state !== 'full' || inFlight) return;
    clearTimeout(timer);
    fullRetryAt = 0;
    if (byUser) {
      fullAutoUsed = false;
      challengeTries = 0;
    }
    state = 'loading';
    render();
    enter();
  }

  // dropJoinToken forgets the join token once the server has answered an
  // enter with it: the cookie now names the account's place, and a reload
  // (or a bookmark) must not send a token that may have expired meanwhile.
  function dropJoinToken() {
    if (!joinToken) return;
    joinToken = '';
    try {
      const u = new URL(location.href);
      u.searchParams.delete('join');
      history.replaceState(history.state, '', u.pathname + u.search + u.hash);
    } catch (e) { /* the address keeps the token; the page still works */ }
  }

  function onError(err) {
    if (!transient(err)) {
      if (err.code === 'invalid_join_token') {
        // Entering again with the same link would fail the same way.
        fail(t('errJoin'), false);
        return;
      }
      fail(err.code === 'queue_not_found' ? t('errQueue') : t('errGeneric', err.code));
      return;
    }
    failures++;
    retryInMs = backoff(failures);
    render();
    schedule(retryInMs); // always a status poll, never an enter (see top of file)
  }

  function onTicket(tk, action) {
    updatedAt = new Date();
    if (tk.user_id !== member) {
      member = tk.user_id || '';
      place = readPlace(member);
    }
    switch (tk.status) {
      case 'WAITING':
        hadPlace = true;
        opening = null;
        notOpenAgain = 0;
        // In a draw (position 0) there is no number to measure progress
        // from yet; the first real position starts it.
        if (tk.position > 0 && (!place || tk.position > place.initial_position)) {
          savePlace({ queue: queue, user_id: member, initial_position: tk.position, joined_at: Date.now() });
        }
        ticket = tk;
        state = 'waiting';
        render();
        announce(tk);
        schedule(tk.poll_after_ms > 0 ? Math.max(MIN_POLL_MS, tk.poll_after_ms) : FALLBACK_POLL_MS);
        return;
      case 'ENTERED':
        enterTurn(tk);
        return;
      case 'NOT_WAITING':
        onNoPlace(action, tk.reason || '');
        return;
      default:
        onError(Object.assign(new Error('unknown status'), { status: 0, code: 'bad_response' }));
    }
  }

  // onNoPlace handles a successful answer that we hold no place. Before we
  // ever held one in this attempt this is just the first join (or a place
  // from an earlier visit that has gone); after holding one we allow exactly
  // one re-enter. An enter answered with NOT_WAITING would loop, so it ends
  // here too. A place dropped as abandoned is never rejoined by itself: the
  // user was away, and decides.
  function onNoPlace(action, reason) {
    if (action === 'status' && reason === 'abandoned') {
      release();
      return;
    }
    if ((hadPlace && reentered) || action === 'enter') {
      clearPlace();
      fail(t('errLost'));
      return;
    }
    if (hadPlace || storedPlace() || REJOIN_NOTICES[reason]) notice = REJOIN_NOTICES[reason] || 'rejoined';
    if (hadPlace) reentered = true;
    hadPlace = false;
    clearPlace();
    ticket = null;
    resuming = false;
    render();
    enter();
  }

  // release shows that the place was dropped as abandoned and offers to
  // join again at the back (joinAgain: one click, one enter).
  function release() {
    clearTimeout(timer);
    clearPlace();
    hadPlace = false;
    ticket = null;
    notice = '';
    state = 'released';
    retryInMs = 0;
    render();
    $('live').textContent = t('releasedTitle') + '. ' + t('releasedBody');
  }

  // onNotOpen waits for a scheduled opening's pre-queue window and then
  // enters once. An answer that it is still not open, when by our estimate
  // the window should have opened (the clocks disagree, or the operator
  // moved it), backs off like a failure would, so no page hammers.
  function onNotOpen(detail) {
    clearTimeout(timer);
    const from = Date.parse(detail.prequeue_from || '');
    const opens = Date.parse(detail.opens_at || '');
    opening = { from: from, opens: opens };
    hadPlace = false;
    ticket = null;
    clearPlace();
    let wait = from - serverNow();
    if (wait > 0) {
      notOpenAgain = 0;
      const span = opens - from; // the pre-queue window
      wait += Math.random() * Math.min(SPREAD_MAX_MS, span > 0 ? span / 10 : 0);
    } else {
      notOpenAgain++;
      wait = backoff(notOpenAgain); // also when the answer gave no time
    }
    enterAt = Date.now() + wait;
    state = 'notopen';
    resuming = false;
    render();
    if (isFinite(from)) $('live').textContent = t('notOpenLive', when(from));
    armEnter();
  }

  // armEnter sets the timer for the scheduled enter, in steps of at most
  // MAX_TIMER_MS.
  function armEnter() {
    clearTimeout(timer);
    timer = setTimeout(enterWhenDue, Math.min(MAX_TIMER_MS, Math.max(0, enterAt - Date.now())));
  }

  function enterWhenDue() {
    if (state !== 'notopen' || inFlight) return;
    if (Date.now() < enterAt) {
      armEnter();
      return;
    }
    state = 'loading';
    render();
    enter();
  }

  // enterTurn shows the turn. The place stays ours (the server keeps the
  // admission until the session ends), so a reload asks for the status and
  // lands here again, with a fresh pass, instead of entering anew. The
  // redirect replaces this page in the history: coming back to it would
  // only send the user forward again.
  function enterTurn(tk) {
    clearTimeout(timer);
    hadPlace = true;
    state = 'entered';
    pass = tk.pass || '';
    target = returnPath && pass ? withPass(returnPath, pass) : safeUrl(tk.target_url);
    render();
    $('live').textContent = t('turnTitle');
    if (target) location.replace(target);
  }

  // sameSitePath returns r if it is a path on this site (the gate's
  // ?return=), else '': never another origin, so the waiting page cannot
  // be used to send anyone elsewhere (the server refuses such a return too).
  function sameSitePath(r) {
    if (!r || r[0] !== '/' || r[1] === '/' || r.indexOf('\\') >= 0 || /[\u0000-\u001f\u007f]/.test(r)) return '';
    try {
      const u = new URL(r, location.origin);
      return u.origin === location.origin ? u.pathname + u.search + u.hash : '';
    } catch (e) {
      return '';
    }
  }

  // withPass is the path with the entry pass added as wr_pass, which the
  // gate there moves into a cookie.
  function withPass(path, p) {
    const u = new URL(path, location.origin);
    u.searchParams.set('wr_pass', p);
    return u.pathname + u.search + u.hash;
  }

  // target_url comes from server config; still refuse anything but http(s).
  function safeUrl(u) {
    if (!u) return '';
    try {
      const url = new URL(u, location.href);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : '';
    } catch (e) {
      return '';
    }
  }

  function fail(text, retry) {
    clearTimeout(timer);
    errorText = text;
    canRetry = retry !== false;
    state = 'error';
    retryInMs = 0;
    render();
  }

  // announce tells screen readers of a pause, of its end (with the
  // position), of the draw and of every move up, once each.
  function announce(tk) {
    const paused = tk.paused === true;
    const drawAt = Date.parse(tk.opens_at || '');
    const what = tk.position > 0 ? String(tk.position) : 'draw:' + drawAt;
    if (what === announced && paused === announcedPaused) return;
    announced = what;
    announcedPaused = paused;
    let text = t('live', fmt(tk.position));
    if (paused) text = t('paused');
    else if (tk.position === 0) text = drawAt > serverNow() ? t('drawLive', when(drawAt)) : t('drawing');
    $('live').textContent = text;
  }

  // ---- leave / join again ----

  function leave() {
    generation++;
    clearTimeout(timer);
    stopSolver();
    checking = false;
    inFlight = false;
    clearPlace();
    state = 'left';
    retryInMs = 0;
    notice = '';
    render();
    $('live').textContent = t('leftTitle');
    pendingDelete = deleteWithRetry(generation);
  }

  // DELETE is idempotent, so retrying it is safe; stop if the user joins again.
  // The server clears the place cookie when it answers.
  async function deleteWithRetry(gen) {
    const url = base + '/place';
    for (let i = 1; i <= DELETE_ATTEMPTS && gen === generation; i++) {
      try {
        await api('DELETE', url);
        return;
      } catch (err) {
        if (!transient(err) || i === DELETE_ATTEMPTS) return;
        await new Promise((r) => setTimeout(r, backoff(i)));
      }
    }
  }

  async function joinAgain() {
    if (state !== 'left' && state !== 'error' && state !== 'released') return; // a double click joins once
    stopSolver();
    state = 'loading';
    resuming = false;
    render();
    // Wait for an earlier leave to land so it cannot delete the new place.
    await pendingDelete.catch(() => {});
    generation++;
    hadPlace = false;
    reentered = false;
    failures = 0;
    retryInMs = 0;
    limited = 0;
    challengeTries = 0;
    checking = false;
    fullAutoUsed = false;
    ticket = null;
    pass = '';
    target = '';
    notice = '';
    announced = '';
    announcedPaused = false;
    errorText = '';
    render();
    enter();
  }

  // Poll at once when the tab comes back (shown, thawed or restored) or
  // the network returns: browsers throttle timers in background tabs and
  // stop them in frozen ones, and a backoff may be long. Before an opening
  // the only request is the scheduled enter, made if it is due; on a full
  // line, the automatic retry if it is due.
  function pollSoon() {
    if (state === 'notopen') enterWhenDue();
    else if (state === 'full') fullWhenDue();
    else if ((state === 'waiting' || state === 'loading') && !inFlight) step('status');
  }

  // ---- rendering: everything is derived from the state variables above ----

  function render() {
    document.body.setAttribute('data-state', state);
    const active = state === 'loading' || state === 'waiting';
    const notOpen = state === 'notopen';
    $('intro').hidden = !active && !notOpen; // #status-text keeps its text for scripts and tests
    $('waiting-panel').hidden = !active;
    $('notopen-panel').hidden = !notOpen;
    $('turn').hidden = state !== 'entered';
    $('left').hidden = state !== 'left';
    $('released').hidden = state !== 'released';
    $('full').hidden = state !== 'full';
    if (state === 'full') {
      $('full-text').textContent = t('fullBody', hhmm(fullAt));
      $('full-auto').hidden = !fullRetryAt;
    }
    $('checking').hidden = !((state === 'loading' || state === 'waiting') && checking);
    $('error').hidden = state !== 'error';
    $('error-text').textContent = errorText;
    $('retry').hidden = !canRetry;

    // The turn: a link only to where the server sends us. Without a target
    // there is nowhere to go from here (a link back to this site would only
    // enter the line again), so show the pass for the site to check.
    const link = $('turn-link');
    link.hidden = !target;
    if (target) link.href = target;
    else link.removeAttribute('href');
    $('pass-box').hidden = !!target || !pass;
    if ($('pass').value !== pass) $('pass').value = pass;

    $('reconnecting').hidden = !(active && retryInMs > 0);
    $('reconnecting-text').textContent = t('reconnecting', fmt(Math.max(1, Math.round(retryInMs / 1000))));

    const noticeEl = $('notice');
    noticeEl.hidden = !((active || notOpen) && notice);
    noticeEl.textContent = notice ? t(notice) : '';

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
    if (active && checking) {
      status = t('checking'); // also when a lost place is entered again from 'waiting'
    } else if (state === 'waiting' && ticket && paused) {
      status = t('summaryPaused', fmt(ticket.waiting), ticket.waiting);
    } else if (state === 'waiting' && ticket && inDraw) {
      status = drawPending
        ? t('summaryDraw', fmt(ticket.waiting), ticket.waiting, when(drawAt))
        : t('summaryDrawing', fmt(ticket.waiting), ticket.waiting);
    } else if (state === 'waiting' && ticket) {
      status = t('summary', fmt(ticket.waiting), ticket.waiting, humanEta(ticket.eta_seconds));
    } else if (notOpen) {
      status = isFinite(opening.from) && opening.from > serverNow() ? t('notOpenStatus', when(opening.from)) : t('joining');
    } else if (state === 'loading') {
      status = resuming ? t('resuming') : t('joining');
    } else if (state === 'entered') {
      status = t('turnTitle');
    } else if (state === 'left') {
      status = t('leftTitle');
    } else if (state === 'released') {
      status = t('releasedTitle');
    } else if (state === 'full') {
      status = t('fullTitle');
    } else {
      status = t('errorTitle');
    }
    $('status-text').textContent = status;

    // Before the pre-queue window: the countdown to it, and who gets drawn.
    if (notOpen) {
      $('notopen-countdown').textContent = isFinite(opening.from) ? countdown(opening.from - serverNow()) : '–';
      const drawNote = $('notopen-draw');
      drawNote.hidden = !(opening.opens > opening.from);
      drawNote.textContent = drawNote.hidden ? '' : t('notOpenDraw', when(opening.from), when(opening.opens));
    }

    $('position-box').hidden = inDraw;
    $('draw-box').hidden = !inDraw;
    $('ahead-stat').hidden = inDraw;
    $('eta-stat').hidden = inDraw;
    $('waiting-stat').classList.toggle('stat-wide', inDraw);
    $('progress-wrap').hidden = inDraw;
    if (inDraw) {
      $('draw-text').textContent = drawPending ? t('drawBody', when(drawAt)) : t('drawing');
      $('draw-countdown-box').hidden = !drawPending;
      $('draw-countdown').textContent = drawPending ? countdown(drawAt - serverNow()) : '';
    }

    if (ticket) {
      $('position').textContent = fmt(ticket.position);
      $('ahead').textContent = fmt(Math.max(0, ticket.position - 1));
      $('waiting-total').textContent = fmt(ticket.waiting);
      $('eta').textContent = paused ? t('etaPaused') : humanEta(ticket.eta_seconds);
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
    upd.textContent = updatedAt ? clock(updatedAt) : '–';
    if (updatedAt) upd.setAttribute('datetime', updatedAt.toISOString());

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

  // How far the user has come since joining. Joining at position P is the
  // first of P + 1 steps and each place moved up is one more; the last step,
  // admission, is the turn panel, which has no bar. So the bar shows
  // (P - position + 1) / (P + 1): a start above 0 % on arrival (the user is
  // in line: 1 / (P + 1)), 50 % for someone who joins at position 1 (the
  // next tick admits them, but it has not yet), and never 100 % while
  // waiting. Rounding is kept within 1 – 99 %, so a long line's first
  // screen does not read 0 % and its front does not read 100 %.
  function progressPercent(position) {
    const start = Math.max(place ? place.initial_position : position, position, 1);
    const f = (start - position + 1) / (start + 1);
    return Math.min(99, Math.max(1, Math.round(f * 100)));
  }

  // ---- wiring ----

  function init() {
    applyLang();
    $('lang-ko').addEventListener('click', () => setLang('ko'));
    $('lang-en').addEventListener('click', () => setLang('en'));

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
    $('join-again').addEventListener('click', joinAgain);
    $('retry').addEventListener('click', joinAgain);
    $('rejoin').addEventListener('click', joinAgain);
    $('full-retry').addEventListener('click', () => retryFull(true));
    $('pass').addEventListener('focus', (e) => e.target.select());

    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') pollSoon();
    });
    window.addEventListener('online', pollSoon);
    // A frozen page (a background tab the browser froze) runs again.
    document.addEventListener('resume', pollSoon);
    window.addEventListener('pageshow', (e) => {
      if (e.persisted) pollSoon(); // restored from the back/forward cache
    });

    storageRemove(keys.oldUser); // names no place any more
    resuming = !joinToken && !!storedPlace();
    render();
    // The cookie may hold a place from an earlier visit (or an admission):
    // ask first, never enter blindly. A join token enters at once, which
    // keeps the account's place if it holds one already.
    if (joinToken) enter();
    else step('status');
  }

  function closeDialog(dialog) {
    if (typeof dialog.close === 'function') dialog.close();
    else dialog.removeAttribute('open');
  }

  init();
})();
