// Back office at /admin: sign in with the admin token, watch every queue,
// change a queue's refill size and see a chart of its recent ticks.
//
// The token lives in sessionStorage only (gone when the tab closes) and is
// sent as a Bearer header, never in a URL. All text is set with textContent,
// so queue names and server messages cannot inject markup.
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const REQUEST_TIMEOUT_MS = 10000;
  const CHART_WINDOW_MS = 10 * 60 * 1000; // the chart shows the last 10 minutes of ticks
  const TOKEN_KEY = 'waitroom:admin-token';
  const MIN_REFILL = 1;
  const MAX_REFILL = 100000;
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  const num = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
  const secs = new Intl.NumberFormat('en-US', { maximumFractionDigits: 3 });
  const clock = new Intl.DateTimeFormat('en-GB', {
    hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
  });

  const sections = new Map(); // queue name -> per-queue view (see buildSection)
  let timer = 0;
  let session = 0; // bumped on sign-in/out so answers for an old session are dropped
  let nextId = 0;

  // ---- token ----

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function setToken(v) {
    try { sessionStorage.setItem(TOKEN_KEY, v); } catch (e) { /* signed in for this page view only */ }
  }
  function clearToken() {
    try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing stored */ }
  }

  // ---- network ----

  async function api(method, path, body, token) {
    const ctrl = new AbortController();
    const timeout = setTimeout(() => ctrl.abort(), REQUEST_TIMEOUT_MS);
    const headers = { Authorization: 'Bearer ' + (token || getToken()) };
    if (body) headers['Content-Type'] = 'application/json';
    try {
      const res = await fetch(path, {
        method: method,
        headers: headers,
        body: body ? JSON.stringify(body) : undefined,
        cache: 'no-store',
        signal: ctrl.signal,
      });
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        const e = (data && data.error) || {};
        throw Object.assign(new Error(e.message || res.statusText || 'HTTP ' + res.status),
          { status: res.status, code: e.code || 'http_' + res.status });
      }
      return data;
    } catch (err) {
      if (err.status === undefined) {
        err.status = 0;
        err.code = 'network';
      }
      throw err;
    } finally {
      clearTimeout(timeout);
    }
  }

  function authMessage(err) {
    if (err.status === 401) return 'That token was not accepted. Check it and try again.';
    if (err.code === 'admin_disabled') {
      return 'The admin API is turned off on this server. Start it with WAITROOM_ADMIN_TOKEN set to enable it.';
    }
    if (err.status === 0) return 'Could not reach the server. Try again in a moment.';
    return 'The server answered with an error (' + err.code + '): ' + err.message;
  }

  // ---- sign in / out ----

  async function signIn(token, quiet) {
    const mine = ++session;
    const btn = $('login-btn');
    btn.disabled = true;
    try {
      const data = await api('GET', '/admin/v1/queues', null, token);
      if (mine !== session) return;
      setToken(token);
      showDashboard();
      renderQueues(data);
      refreshHistories(mine).catch(() => { /* the next refresh reports it */ });
      schedule(mine);
    } catch (err) {
      if (mine !== session) return;
      clearToken();
      showLogin(quiet && err.status === 401 ? 'Your session has ended. Sign in again.' : authMessage(err));
    } finally {
      btn.disabled = false;
    }
  }

  function signOut(message) {
    session++;
    clearTimeout(timer);
    clearToken();
    sections.clear();
    $('queues').replaceChildren();
    showLogin(message || '');
  }

  function showLogin(message) {
    document.body.setAttribute('data-state', 'signed-out');
    $('dashboard').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    const err = $('login-error');
    err.textContent = message;
    err.hidden = !message;
    $('token').setAttribute('aria-invalid', String(!!message));
    $('token').value = '';
    $('token').focus();
  }

  function showDashboard() {
    document.body.setAttribute('data-state', 'signed-in');
    $('login').hidden = true;
    $('login-error').hidden = true;
    $('dashboard').hidden = false;
    $('signout').hidden = false;
  }

  // ---- refresh loop ----

  function schedule(mine) {
    clearTimeout(timer);
    timer = setTimeout(() => refresh(mine), REFRESH_MS);
  }

  // A new request starts only after the previous one finished, so a slow
  // server never piles requests up.
  async function refresh(mine) {
    try {
      const data = await api('GET', '/admin/v1/queues');
      if (mine !== session) return;
      renderQueues(data);
      await refreshHistories(mine);
      setStatus('');
    } catch (err) {
      if (mine !== session) return;
      if (err.status === 401 || err.status === 403) {
        signOut(authMessage(err));
        return;
      }
      setStatus('Could not refresh (' + err.code + '). Showing the last data; retrying every 2 s.');
    }
    if (mine === session) schedule(mine);
  }

  async function refreshHistories(mine) {
    await Promise.all(Array.from(sections.keys(), async (name) => {
      const h = await api('GET', '/admin/v1/queues/' + encodeURIComponent(name) + '/history');
      const view = sections.get(name);
      if (mine === session && view) drawChart(view.chart, h.points || [], h.refill_interval_ms);
    }));
  }

  function setStatus(text) {
    const el = $('admin-status');
    el.textContent = text;
    el.hidden = !text;
    if (!text) $('refreshed').textContent = 'updated ' + clock.format(new Date());
  }

  // ---- queue sections ----

  function renderQueues(data) {
    const list = (data && data.queues) || [];
    const seen = new Set();
    for (const q of list) {
      seen.add(q.queue);
      let view = sections.get(q.queue);
      if (!view) {
        view = buildSection(q.queue);
        sections.set(q.queue, view);
        $('queues').append(view.root);
      }
      updateSection(view, q);
    }
    for (const [name, view] of sections) {
      if (!seen.has(name)) {
        view.root.remove();
        sections.delete(name);
      }
    }
    $('no-queues').hidden = list.length > 0;
  }

  function buildSection(name) {
    const root = $('queue-template').content.firstElementChild.cloneNode(true);
    root.setAttribute('data-queue', name);
    const q = (sel) => root.querySelector(sel);
    const id = 'refill-input-' + (++nextId);
    const view = {
      name: name,
      root: root,
      chart: q('svg.chart'),
      input: q('.refill-input'),
      submit: q('.refill-submit'),
      error: q('.refill-error'),
      ok: q('.refill-ok'),
      dirty: false, // the operator typed something: stop syncing the input from the server
    };
    q('.queue-name').textContent = name;
    view.input.id = id;
    view.error.id = id + '-error';
    view.ok.id = id + '-ok';
    view.input.setAttribute('aria-describedby', view.error.id + ' ' + view.ok.id);
    q('.refill-label').setAttribute('for', id);
    root.setAttribute('aria-label', 'Queue ' + name);
    view.input.addEventListener('input', () => {
      view.dirty = true;
      view.ok.hidden = true;
    });
    q('.refill-form').addEventListener('submit', (e) => {
      e.preventDefault();
      saveRefill(view);
    });
    return view;
  }

  function updateSection(view, q) {
    const set = (sel, text) => { view.root.querySelector(sel).textContent = text; };
    set('.waiting', num.format(q.waiting));
    set('.entered', num.format(q.entered));
    set('.tokens', num.format(q.tokens));
    set('.refill-size', num.format(q.refill_size));
    set('.interval', secs.format(q.refill_interval_ms / 1000));
    set('.per-minute', num.format(q.admitted_last_minute));
    set('.last-tick', q.last_tick_at_ms ? clock.format(new Date(q.last_tick_at_ms)) + ' (' + ago(q.last_tick_at_ms) + ')' : 'never');
    if (!view.dirty && document.activeElement !== view.input) view.input.value = String(q.refill_size);
  }

  function ago(ms) {
    const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 120 ? s + ' s ago' : Math.round(s / 60) + ' min ago';
  }

  async function saveRefill(view) {
    view.error.hidden = true;
    view.ok.hidden = true;
    const raw = view.input.value.trim();
    const n = Number(raw);
    if (!/^[0-9]+$/.test(raw) || n < MIN_REFILL || n > MAX_REFILL) {
      showFieldError(view, 'Enter a whole number from ' + num.format(MIN_REFILL) + ' to ' + num.format(MAX_REFILL) + '.');
      return;
    }
    const mine = session;
    view.submit.disabled = true;
    try {
      const q = await api('PUT', '/admin/v1/queues/' + encodeURIComponent(view.name) + '/refill-size', { refill_size: n });
      if (mine !== session) return;
      view.dirty = false;
      view.input.setAttribute('aria-invalid', 'false');
      updateSection(view, q);
      view.ok.textContent = 'Saved: ' + num.format(q.refill_size) + ' per tick from the next tick on.';
      view.ok.hidden = false;
    } catch (err) {
      if (mine !== session) return;
      if (err.status === 401 || err.status === 403) {
        signOut(authMessage(err));
        return;
      }
      showFieldError(view, err.status === 0 ? 'Could not reach the server. Try again.' : err.message + ' (' + err.code + ')');
    } finally {
      view.submit.disabled = false;
    }
  }

  function showFieldError(view, text) {
    view.error.textContent = text;
    view.error.hidden = false;
    view.input.setAttribute('aria-invalid', 'true');
    view.input.focus();
  }

  // ---- chart ----

  const W = 640;
  const H = 260;
  const M = { top: 40, right: 52, bottom: 30, left: 64 };

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG_NS, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // niceStep picks 1, 2 or 5 × 10^k so axis labels are round numbers.
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    return Math.max(1, step); // counts of people are whole numbers
  }

  // drawChart redraws the whole chart: people waiting as a line on the left
  // axis, people admitted per tick as bars on the right axis. The two scales
  // differ by orders of magnitude, hence two axes sharing one grid.
  function drawChart(svg, allPoints, intervalMs) {
    svg.replaceChildren();
    const plotW = W - M.left - M.right;
    const plotH = H - M.top - M.bottom;
    const last = allPoints.length ? allPoints[allPoints.length - 1].at_ms : 0;
    const points = allPoints.filter((p) => p.at_ms > last - CHART_WINDOW_MS);

    legend(svg);
    if (!points.length) {
      svg.setAttribute('aria-label', 'No ticks recorded yet.');
      svg.append(el('text', { x: W / 2, y: M.top + plotH / 2, 'text-anchor': 'middle', class: 'chart-empty' }, 'No ticks yet'));
      return;
    }

    // Each tick's bar covers the interval that ended at the tick.
    const slot = intervalMs > 0 ? intervalMs : 1000;
    const t0 = points[0].at_ms - slot;
    const t1 = last;
    const x = (t) => M.left + ((t - t0) / (t1 - t0)) * plotW;

    const maxWaiting = Math.max.apply(null, points.map((p) => p.waiting));
    const maxAdmitted = Math.max.apply(null, points.map((p) => p.admitted));
    const stepW = niceStep(maxWaiting / 4);
    const rows = Math.max(1, Math.ceil(maxWaiting / stepW));
    const topW = stepW * rows;
    const topA = niceStep(maxAdmitted / rows) * rows; // same rows, so both axes share the grid lines
    const yW = (v) => M.top + plotH - (v / topW) * plotH;
    const yA = (v) => M.top + plotH - (v / topA) * plotH;

    for (let i = 0; i <= rows; i++) {
      const y = M.top + plotH - (i / rows) * plotH;
      svg.append(el('line', { x1: M.left, x2: M.left + plotW, y1: y, y2: y, class: 'chart-grid' }));
      svg.append(el('text', { x: M.left - 6, y: y + 5, 'text-anchor': 'end', class: 'chart-label' }, num.format(stepW * i)));
      svg.append(el('text', { x: M.left + plotW + 6, y: y + 5, 'text-anchor': 'start', class: 'chart-label' }, num.format((topA / rows) * i)));
    }
    const xTicks = [t0, (t0 + t1) / 2, t1];
    xTicks.forEach((t, i) => {
      const anchor = i === 0 ? 'start' : i === xTicks.length - 1 ? 'end' : 'middle';
      svg.append(el('text', { x: x(t), y: H - 9, 'text-anchor': anchor, class: 'chart-label' }, clock.format(new Date(t))));
    });

    const barW = Math.max(0.5, (plotW * slot) / (t1 - t0) * 0.8);
    for (const p of points) {
      if (p.admitted <= 0) continue;
      const y = yA(p.admitted);
      const bar = el('rect', { x: x(p.at_ms) - barW, y: y, width: barW, height: M.top + plotH - y, class: 'admitted-bar' });
      bar.append(el('title', {}, clock.format(new Date(p.at_ms)) + ': ' + num.format(p.admitted) + ' admitted'));
      svg.append(bar);
    }

    const d = points.map((p, i) => (i ? 'L' : 'M') + x(p.at_ms).toFixed(1) + ' ' + yW(p.waiting).toFixed(1)).join(' ');
    svg.append(el('path', { d: d, class: 'waiting-line' }));
    if (points.length === 1) {
      // A single point makes an invisible path; mark it with a dot.
      svg.append(el('circle', { cx: x(points[0].at_ms), cy: yW(points[0].waiting), r: 3, class: 'waiting-dot' }));
    }

    svg.append(el('line', { x1: M.left, x2: M.left + plotW, y1: M.top + plotH, y2: M.top + plotH, class: 'chart-axis' }));
    const now = points[points.length - 1];
    svg.setAttribute('aria-label', 'Last ' + Math.round((t1 - t0) / 60000 * 10) / 10 + ' minutes: ' +
      num.format(now.waiting) + ' people waiting now, ' + num.format(now.admitted) + ' admitted in the last tick, ' +
      'at most ' + num.format(maxWaiting) + ' waiting.');
  }

  function legend(svg) {
    const g = el('g', { class: 'chart-legend', transform: 'translate(' + M.left + ',18)' });
    g.append(el('line', { x1: 0, x2: 20, y1: 0, y2: 0, class: 'legend-line' }));
    g.append(el('text', { x: 26, y: 5, class: 'chart-label' }, 'Waiting (left axis)'));
    g.append(el('rect', { x: 200, y: -7, width: 14, height: 14, class: 'legend-bar' }));
    g.append(el('text', { x: 220, y: 5, class: 'chart-label' }, 'Admitted per tick (right axis)'));
    svg.append(g);
  }

  // ---- wiring ----

  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const token = $('token').value.trim();
    if (!token) {
      showLogin('Enter the admin token.');
      return;
    }
    signIn(token, false);
  });
  $('signout').addEventListener('click', () => signOut(''));

  const saved = getToken();
  if (saved) signIn(saved, true);
  else $('token').focus();
})();
