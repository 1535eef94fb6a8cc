// The pages' safety net: a classic script (not a module), which
// script.html and admin.html run before their modules. If one of them fails to
// load, none of them runs, and the page would stay on the server's
// "Joining the line…" for good. Chromium drops every request in flight
// when the network changes under it (a phone moving from Wi-Fi to mobile
// data, an interface coming or going: net::ERR_NETWORK_CHANGED), and the
// page tests saw it whenever Docker started a container.
//
// A browser keeps a module that failed for the document's life, so only
// a reload fetches it again: the page reloads after 1 s, 2 s, 4 s ... up
// to 30 s, counted in sessionStorage so that a script that is really
// missing does not reload in a tight loop. waiting.js forgets the count
// once the page runs. The place is in its cookie: a reload keeps it.
(function () {
  var KEY = 'waitroom:reloads';
  var MAX_WAIT_MS = 30000;
  var armed = false;
  window.addEventListener('error', function (e) {
    var el = e.target;
    if (armed || !el || el.tagName !== 'SCRIPT' || el.type !== 'module') return;
    armed = true;
    var n = 0;
    try {
      n = Number(sessionStorage.getItem(KEY)) || 0;
      sessionStorage.setItem(KEY, String(n + 1));
    } catch (err) { /* no storage: the first wait each time */ }
    setTimeout(function () { location.reload(); }, Math.min(MAX_WAIT_MS, 1000 * Math.pow(2, n)));
  }, true);
})();
