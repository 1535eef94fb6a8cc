// Counts down to the next try, then asks the same address again (HEAD: no
// body, no side effect) and reloads it once the answer is not "still
// away" (502, 503, 504). Each try waits about twice as long as the one
// before, from data-start seconds up to data-cap, with ±20 % jitter so
// that pages that lost the room together do not come back together; the
// first waits the Retry-After this page came with (data-first).
(function () {
  'use strict';
  var el = document.getElementById('wr-retry');
  var d = el.dataset;
  var first = Number(d.first) * 1000;
  var start = Number(d.start) * 1000;
  var cap = Number(d.cap) * 1000;
  var tries = 0;
  var due = 0;

  function wait(n, floor) {
    if (n === 1) return first;
    var w = Math.min(cap, start * Math.pow(2, n - 1)) * (0.8 + Math.random() * 0.4);
    return Math.min(cap, Math.max(w, floor));
  }

  function arm(floor) {
    tries++;
    due = Date.now() + wait(tries, floor);
    document.body.setAttribute('data-tries', String(tries));
    tick();
  }

  function tick() {
    var left = due - Date.now();
    if (left <= 0) {
      probe();
      return;
    }
    el.textContent = d.in.replace('{s}', String(Math.ceil(left / 1000)));
    setTimeout(tick, left % 1000 || 1000);
  }

  function probe() {
    el.textContent = d.now;
    var ctrl = new AbortController();
    var timeout = setTimeout(function () { ctrl.abort(); }, 10000);
    fetch(location.href, { method: 'HEAD', cache: 'no-store', credentials: 'same-origin', redirect: 'manual', signal: ctrl.signal })
      .then(function (res) {
        clearTimeout(timeout);
        if (res.status >= 502 && res.status <= 504) {
          arm(Number(res.headers.get('Retry-After')) * 1000 || 0);
          return;
        }
        location.reload();
      }, function () {
        clearTimeout(timeout);
        arm(0);
      });
  }

  arm(0);
})();
