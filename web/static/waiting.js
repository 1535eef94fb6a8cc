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
// enter.
//
// While the operator pauses the line, WAITING tickets say paused: true.
// Nobody is admitted then and every place is kept, so the page says so,
// promises no wait time, and goes on polling as the server suggests; the
// first ticket without the flag brings the estimate back.
'use strict';

(function () {
  const FALLBACK_POLL_MS = 2000;
  const MIN_POLL_MS = 250; // guards against a server hint of 0 hammering us
  const BACKOFF_START_MS = 1000;
  const BACKOFF_CAP_MS = 30000;
  const BACKOFF_JITTER = 0.2; // ±20 %, so clients cut off together do not return together
  const REQUEST_TIMEOUT_MS = 10000;
  const DELETE_ATTEMPTS = 4;

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
      // n and m are formatted; count and minutes are the numbers, for plurals.
      summary: (n, count, m, minutes) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') +
        '; up to ' + (minutes === 1 ? '1 minute' : m + ' minutes'),
      // While the line is paused: no estimate, and no promise of one.
      summaryPaused: (n, count) =>
        (count === 1 ? '1 person is waiting' : n + ' people are waiting') + '; the line is paused',
      paused: 'The line is paused. You keep your place, and it will move again when the line resumes.',
      etaPaused: 'Paused',
      reconnecting: (s) => 'Connection lost. Reconnecting… (next try in ' + s + ' s)',
      live: (n) => 'You are number ' + n + ' in line',
      rejoined: 'Your earlier place had expired, so you joined the line again at the back.',
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
      summary: (n, count, m) => '현재 대기 인원 ' + n + '명, 최대 ' + m + '분 소요 예상',
      summaryPaused: (n) => '현재 대기 인원 ' + n + '명, 대기열 일시 정지 중',
      paused: '대기열이 잠시 멈췄습니다. 순번은 그대로 유지되며, 대기열이 다시 움직이면 이어서 진행됩니다.',
      etaPaused: '일시 정지',
      reconnecting: (s) => '연결이 끊겼습니다. 다시 연결하는 중… (' + s + '초 후 재시도)',
      live: (n) => '대기 순번 ' + n + '번입니다',
      rejoined: '이전 순번이 만료되어 맨 뒤에서 다시 줄을 섰습니다.',
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
  let state = 'loading'; // mirrors body[data-state]: loading|waiting|entered|left|error
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
  let announced = 0;
  let announcedPaused = false; // the live region last told of a pause

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

  function humanEta(seconds) {
    if (!(seconds >= 60)) return t('etaSoon');
    // Rounded up like the "up to N minutes" summary, so the two never disagree.
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
      if (res.status === 204) return null;
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const err = new Error((data && data.error && data.error.message) || res.statusText);
        err.status = res.status;
        err.code = (data && data.error && data.error.code) || 'http_' + res.status;
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

  // step runs one request; every answer or error decides the next one.
  async function step(action) {
    clearTimeout(timer);
    const gen = generation;
    inFlight = true;
    let tk;
    try {
      tk = action === 'enter'
        ? await api('POST', base + '/enter', joinToken ? { join_token: joinToken } : {})
        : await api('GET', base + '/status');
    } catch (err) {
      if (gen !== generation) return;
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
    if (action === 'enter') dropJoinToken();
    onTicket(tk, action);
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
        if (!place || tk.position > place.initial_position) {
          savePlace({ queue: queue, user_id: member, initial_position: tk.position, joined_at: Date.now() });
        }
        ticket = tk;
        state = 'waiting';
        render();
        announce(tk.position, tk.paused === true);
        schedule(tk.poll_after_ms > 0 ? Math.max(MIN_POLL_MS, tk.poll_after_ms) : FALLBACK_POLL_MS);
        return;
      case 'ENTERED':
        enterTurn(tk);
        return;
      case 'NOT_WAITING':
        onNoPlace(action);
        return;
      default:
        onError(Object.assign(new Error('unknown status'), { status: 0, code: 'bad_response' }));
    }
  }

  // onNoPlace handles a successful answer that we hold no place. Before we
  // ever held one in this attempt this is just the first join (or a place
  // from an earlier visit that has gone); after holding one we allow exactly
  // one re-enter. An enter answered with NOT_WAITING would loop, so it ends
  // here too.
  function onNoPlace(action) {
    if ((hadPlace && reentered) || action === 'enter') {
      clearPlace();
      fail(t('errLost'));
      return;
    }
    if (hadPlace || storedPlace()) notice = 'rejoined';
    if (hadPlace) reentered = true;
    hadPlace = false;
    clearPlace();
    ticket = null;
    resuming = false;
    render();
    step('enter');
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
  // position) and of every move up, once each.
  function announce(position, paused) {
    if (position === announced && paused === announcedPaused) return;
    announced = position;
    announcedPaused = paused;
    $('live').textContent = paused ? t('paused') : t('live', fmt(position));
  }

  // ---- leave / join again ----

  function leave() {
    generation++;
    clearTimeout(timer);
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
    if (state !== 'left' && state !== 'error') return; // a double click joins once
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
    ticket = null;
    pass = '';
    target = '';
    notice = '';
    announced = 0;
    announcedPaused = false;
    errorText = '';
    render();
    step('enter');
  }

  // Poll at once when the tab comes back or the network returns: browsers
  // throttle timers in background tabs, and a backoff may be long.
  function pollSoon() {
    if ((state === 'waiting' || state === 'loading') && !inFlight) step('status');
  }

  // ---- rendering: everything is derived from the state variables above ----

  function render() {
    document.body.setAttribute('data-state', state);
    const active = state === 'loading' || state === 'waiting';
    $('intro').hidden = !active; // #status-text keeps its text for scripts and tests
    $('waiting-panel').hidden = !active;
    $('turn').hidden = state !== 'entered';
    $('left').hidden = state !== 'left';
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
    noticeEl.hidden = !(active && notice);
    noticeEl.textContent = notice ? t(notice) : '';

    // The last ticket's word, kept while reconnecting like the position.
    const paused = active && !!ticket && ticket.paused === true;
    $('paused').hidden = !paused;

    let status;
    if (state === 'waiting' && ticket && paused) {
      status = t('summaryPaused', fmt(ticket.waiting), ticket.waiting);
    } else if (state === 'waiting' && ticket) {
      const minutes = Math.max(1, Math.ceil(ticket.eta_seconds / 60));
      status = t('summary', fmt(ticket.waiting), ticket.waiting, fmt(minutes), minutes);
    } else if (state === 'loading') {
      status = resuming ? t('resuming') : t('joining');
    } else if (state === 'entered') {
      status = t('turnTitle');
    } else if (state === 'left') {
      status = t('leftTitle');
    } else {
      status = t('errorTitle');
    }
    $('status-text').textContent = status;

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
  }

  // How far the user has come since joining: 0 % at the first position seen,
  // 100 % at the front of the line.
  function progressPercent(position) {
    const start = place ? place.initial_position : position;
    if (start <= 1) return 100;
    const f = (start - position) / (start - 1);
    return Math.round(Math.min(1, Math.max(0, f)) * 100);
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
    $('pass').addEventListener('focus', (e) => e.target.select());

    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') pollSoon();
    });
    window.addEventListener('online', pollSoon);

    storageRemove(keys.oldUser); // names no place any more
    resuming = !joinToken && !!storedPlace();
    render();
    // The cookie may hold a place from an earlier visit (or an admission):
    // ask first, never enter blindly. A join token enters at once, which
    // keeps the account's place if it holds one already.
    step(joinToken ? 'enter' : 'status');
  }

  function closeDialog(dialog) {
    if (typeof dialog.close === 'function') dialog.close();
    else dialog.removeAttribute('open');
  }

  init();
})();
