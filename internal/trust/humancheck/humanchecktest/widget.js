// A stand-in for the widget scripts of Cloudflare Turnstile, hCaptcha and
// Google reCAPTCHA, with the part of their JavaScript API a page uses:
// render(container, params) draws the widget and returns its id; reset(id)
// draws it afresh; remove(id) takes it away; getResponse(id) is its last
// token. The widget is a real button, "I am human": a click fetches a
// token from the stand-in that served this script, and passes it to
// params.callback. The language asked (Turnstile's language, the others'
// hl) is kept on the widget as data-lang, for tests to read. As the real
// scripts do, ?onload=name calls window[name] once the API is ready.
(function () {
  'use strict';
  var script = document.currentScript;
  var base = new URL(script ? script.src : location.href);
  var issueURL = base.origin + '/issue';
  var widgets = {};
  var next = 0;

  function element(container) {
    return typeof container === 'string' ? document.querySelector(container) : container;
  }

  function draw(w) {
    w.el.textContent = '';
    w.token = '';
    var box = document.createElement('div');
    box.className = 'standin-human-check';
    box.setAttribute('data-provider', w.provider);
    box.setAttribute('data-sitekey', w.params.sitekey || '');
    box.setAttribute('data-lang', w.lang || '');
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'standin-human-button';
    button.textContent = 'I am human';
    button.addEventListener('click', function () {
      button.disabled = true;
      fetch(issueURL, { method: 'POST', mode: 'cors', cache: 'no-store' })
        .then(function (res) {
          if (!res.ok) throw new Error('issue: ' + res.status);
          return res.text();
        })
        .then(function (token) {
          w.token = token;
          box.setAttribute('data-solved', 'true');
          if (typeof w.params.callback === 'function') w.params.callback(token);
        })
        .catch(function (err) {
          button.disabled = false;
          var onError = w.params['error-callback'];
          if (typeof onError === 'function') onError(String(err));
        });
    });
    box.appendChild(button);
    w.el.appendChild(box);
  }

  function api(provider, langParam) {
    return {
      render: function (container, params) {
        var el = element(container);
        if (!el) throw new Error(provider + '.render: no container');
        params = params || {};
        var id = provider === 'grecaptcha' ? next++ : provider + '-' + next++;
        var w = { el: el, params: params, provider: provider, lang: params[langParam] || base.searchParams.get('hl') || '' };
        widgets[id] = w;
        draw(w);
        return id;
      },
      reset: function (id) {
        var w = widgets[id === undefined ? Object.keys(widgets)[0] : id];
        if (w) draw(w);
      },
      remove: function (id) {
        var w = widgets[id];
        if (!w) return;
        w.el.textContent = '';
        delete widgets[id];
      },
      getResponse: function (id) {
        var w = widgets[id === undefined ? Object.keys(widgets)[0] : id];
        return w ? w.token : '';
      },
    };
  }

  window.turnstile = api('turnstile', 'language');
  window.hcaptcha = api('hcaptcha', 'hl');
  window.grecaptcha = api('grecaptcha', 'hl');

  var onload = base.searchParams.get('onload');
  if (onload) {
    setTimeout(function () {
      if (typeof window[onload] === 'function') window[onload]();
    }, 0);
  }
})();
