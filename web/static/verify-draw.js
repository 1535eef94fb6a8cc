// The draw's verifier page (verify-draw.html, at /q/{queue}/verify):
// reads the queue's last draw, page by page, and checks it in this
// browser with WebCrypto, as client.VerifyDraw does in Go (and `waitroom
// verify-draw` on a command line; docs/DRAW.md):
//
//   - the seed revealed is the one sealed: its SHA-256 is the draw's
//     commitment, and the commitment the participant saw before the
//     draw, when given;
//   - every line's places run 1..n, their draw keys strictly ascending
//     (the order is lowest key first: no two places can be swapped), the
//     lines add up to the draw's count and no member id's hash comes
//     twice;
//   - with a member id, it holds a place under its own draw key,
//     HMAC-SHA256(seed, member id), at the place it was told.
//
// What the waiting page knew comes in the fragment, which no server
// sees: #member=…&commitment=…&place=…. The result is the body's
// data-result (checking, ok, fail), for people and tests alike.

import { $ } from './dom.js';
import { createI18n } from './i18n.js';

const i18n = await createI18n('waiting', {});
const t = i18n.t;
document.documentElement.lang = i18n.lang();
document.title = t('verifyTitle');
i18n.translate(document);

const m = /^\/q\/([^/]+)\/verify\/?$/.exec(location.pathname);
const queue = m ? decodeURIComponent(m[1]) : 'default';
const listURL = '/api/v1/queues/' + encodeURIComponent(queue) + '/draw';

const enc = new TextEncoder();

function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
}

function bytes(h) {
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.substr(2 * i, 2), 16);
  return out;
}

const isHex64 = (v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);

async function sha256(data) {
  return hex(await crypto.subtle.digest('SHA-256', data));
}

// fetchDraw reads every page of the draw; each page's record must be the
// first's (a draw made while it was read is refused).
async function fetchDraw() {
  let all = null;
  let cursor = '';
  for (let page = 0; page < 100000; page++) {
    const u = listURL + '?limit=5000' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    const r = await fetch(u, { headers: { Accept: 'application/json' } });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) {
      const code = (body.error && body.error.code) || String(r.status);
      throw new Error(code === 'no_draw' ? t('verifyNoDraw') : t('verifyUnreadable', { code: code }));
    }
    if (!all) {
      all = Object.assign({}, body, { entries: [] });
    } else if (body.draw_commitment !== all.draw_commitment || body.draw_seed !== all.draw_seed || body.count !== all.count) {
      throw new Error('the draw changed while it was read');
    }
    all.entries.push(...(body.entries || []));
    if (!body.next_cursor) return all;
    if (body.next_cursor === cursor) throw new Error('the draw\'s pages do not end');
    cursor = body.next_cursor;
  }
  throw new Error('the draw\'s pages do not end');
}

// verify checks d (every entry read) and returns the checks passed, as
// [key, params], or throws an Error naming the first that failed.
async function verify(d, want) {
  const passed = [];
  if (!d.complete) throw new Error(t('verifyPlacing'));
  if (!isHex64(d.draw_seed) || !isHex64(d.draw_commitment)) throw new Error('the draw has no revealed seed: it was not sealed');
  const seed = bytes(d.draw_seed);
  const sum = await sha256(seed);
  if (sum !== d.draw_commitment) throw new Error('the seed\'s SHA-256 is ' + sum + ', not the commitment ' + d.draw_commitment);
  if (want.commitment && want.commitment.toLowerCase() !== d.draw_commitment) {
    throw new Error('the draw\'s commitment ' + d.draw_commitment + ' is not the one shown before the draw, ' + want.commitment);
  }
  passed.push(['verifySealOK', {}]);
  const memberID = want.member ? await sha256(enc.encode(want.member)) : '';
  let found = null;
  const seen = new Set();
  let i = 0;
  let total = 0;
  for (const line of d.lines || []) {
    let prev = '';
    for (let place = 1; place <= line.count; place++) {
      const e = d.entries[i++];
      const lane = line.lane || '';
      if (!e) throw new Error('line "' + lane + '": place ' + place + ' is missing');
      if ((e.lane || '') !== lane || e.place !== place) throw new Error('line "' + lane + '": place ' + place + ' is listed as place ' + e.place);
      if (!isHex64(e.id_sha256) || !isHex64(e.draw_key)) throw new Error('line "' + lane + '" place ' + place + ': not 64 hex digits');
      if (prev && e.draw_key <= prev) throw new Error('line "' + lane + '": place ' + place + '\'s draw key is not above place ' + (place - 1) + '\'s: the order is not lowest key first');
      prev = e.draw_key;
      if (seen.has(e.id_sha256)) throw new Error('line "' + lane + '" place ' + place + ': a member listed twice');
      seen.add(e.id_sha256);
      if (memberID && e.id_sha256 === memberID) found = e;
    }
    total += line.count;
  }
  if (i !== d.entries.length) throw new Error((d.entries.length - i) + ' entries beyond the lines\' places');
  if (total !== d.count) throw new Error('the lines hold ' + total + ' places, the draw says ' + d.count);
  passed.push(['verifyOrderOK', { n: d.count.toLocaleString(i18n.locale()), count: d.count }]);
  if (want.member) {
    if (!found) throw new Error(t('verifyMissing'));
    const key = await crypto.subtle.importKey('raw', seed, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const mine = hex(await crypto.subtle.sign('HMAC', key, enc.encode(want.member)));
    if (mine !== found.draw_key) throw new Error('your place holds the draw key ' + found.draw_key + ', not HMAC-SHA256(seed, your id) = ' + mine);
    if (want.place > 0 && want.place !== found.place) throw new Error('you were told place ' + want.place + '; the list has you at ' + found.place);
    passed.push(['verifyMemberOK', { place: found.place.toLocaleString(i18n.locale()) }]);
  }
  return passed;
}

function show(result, text, passed) {
  document.body.dataset.result = result;
  $('verify-status').textContent = text;
  const ul = $('verify-checks');
  ul.textContent = '';
  for (const [key, params] of passed) {
    const li = document.createElement('li');
    li.textContent = '✓ ' + t(key, params);
    ul.appendChild(li);
  }
}

async function run() {
  const want = {
    commitment: $('verify-commitment').value.trim(),
    member: $('verify-member').value,
    place: Number($('verify-place').value) || 0,
  };
  show('checking', t('verifyChecking'), []);
  $('verify-seed').hidden = true;
  let d;
  try {
    d = await fetchDraw();
    if (isHex64(d.draw_seed)) {
      $('verify-seed-hex').textContent = d.draw_seed;
      $('verify-seed').hidden = false;
    }
    const passed = await verify(d, want);
    show('ok', t('verifyOK'), passed);
  } catch (err) {
    show('fail', t('verifyFailed', { why: err.message }), []);
  }
}

const f = new URLSearchParams(location.hash.slice(1));
$('verify-commitment').value = f.get('commitment') || '';
$('verify-member').value = f.get('member') || '';
$('verify-place').value = f.get('place') || '';
$('verify-form').addEventListener('submit', (e) => {
  e.preventDefault();
  run();
});
run();
