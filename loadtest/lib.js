// Shared helpers for the k6 scenarios in this folder (spike.js, crowd.js,
// operator.js). Every knob is an environment variable read once here, so a
// run is reproducible from its command line:
//
//   BASE_URL     server root             (default http://127.0.0.1:8080)
//   QUEUE        queue id                (default "default")
//   ADMIN_TOKEN  bearer token for /admin  (admin checks are skipped without it)
//   RUN_ID       prefix for user ids      (default: Date.now() taken in setup)
//
// enter() and status() name users by plain ids ({"user_id":...},
// ?user_id=), which the server refuses (400 user_ids_disabled) unless it
// runs with WAITROOM_INSECURE_USER_IDS=true, as scripts/loadtest.sh starts
// it: load tests only, never production. None of the scenarios reads the
// entry pass (pass, target_url's wr_pass) of an ENTERED ticket.
//
// Both take the caller's client address (clientAddr), sent as
// X-Forwarded-For: the server limits enter and status per client address
// (5/s burst 300 and 200/s burst 2000 by default), and a crowd comes from
// many addresses, not from k6's one. The server believes the header only
// from a trusted proxy: scripts/lib.sh starts it trusting loopback.
import http from 'k6/http';
import { sleep } from 'k6';

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
export const QUEUE = __ENV.QUEUE || 'default';
export const ADMIN_TOKEN = __ENV.ADMIN_TOKEN || '';

const JSON_HEADERS = { 'Content-Type': 'application/json' };

// envInt reads a positive integer, failing loudly on junk instead of running
// a silently different test.
export function envInt(name, def) {
  const raw = __ENV[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}=${raw}: want a non-negative integer`);
  return n;
}

// durationMs parses the k6/Go style durations used in our env vars
// ("500ms", "90s", "3m", "1m30s", "1h").
export function durationMs(s) {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000 };
  let total = 0;
  let matched = '';
  let m;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * unit[m[2]];
    matched += m[0];
  }
  if (matched !== s || matched === '') throw new Error(`bad duration "${s}"`);
  return total;
}

const q = encodeURIComponent(QUEUE);

// clientAddr returns a pseudo-random unicast IPv4 address for the integer
// n >= 0, distinct for every n below 100 * 2^24 and never loopback: the
// same as client_addr in wrk/clients.lua (scripts/lib.sh wr_client_addr).
export function clientAddr(n) {
  const lo = ((n % 16777216) * 40503) % 16777216; // < 2^40: exact in a double
  const hi = 11 + (Math.floor(n / 16777216) % 100);
  return `${hi}.${lo >>> 16}.${(lo >>> 8) & 255}.${lo & 255}`;
}

// xff returns the headers that make a request come from client (none when
// client is empty).
function xff(client, headers) {
  return client ? Object.assign({ 'X-Forwarded-For': client }, headers) : headers || {};
}

// enter enters userId from the client address client (clientAddr; '' for
// k6's own address).
export function enter(userId, client, tags) {
  return http.post(`${BASE_URL}/api/v1/queues/${q}/enter`, JSON.stringify({ user_id: userId }), {
    headers: xff(client, JSON_HEADERS),
    tags: Object.assign({ name: 'enter' }, tags),
  });
}

// status asks for userId's place from the client address client.
export function status(userId, client, tags) {
  return http.get(`${BASE_URL}/api/v1/queues/${q}/status?user_id=${encodeURIComponent(userId)}`, {
    headers: xff(client),
    tags: Object.assign({ name: 'status' }, tags),
  });
}

// ticket returns the decoded Ticket of a 200 response, or null.
export function ticket(res) {
  if (res.status !== 200) return null;
  try {
    const t = res.json();
    return t && typeof t.status === 'string' ? t : null;
  } catch (e) {
    return null;
  }
}

function adminParams(name) {
  return { headers: Object.assign({ Authorization: `Bearer ${ADMIN_TOKEN}` }, JSON_HEADERS), tags: { name } };
}

// adminGet fetches an /admin/v1 path below the queue ('' for the queue itself,
// '/history' for its history) and returns the decoded body, or null.
export function adminGet(suffix) {
  const res = http.get(`${BASE_URL}/admin/v1/queues/${q}${suffix}`, adminParams(`admin${suffix || '_queue'}`));
  if (res.status !== 200) {
    console.error(`GET /admin/v1/queues/${QUEUE}${suffix}: HTTP ${res.status} ${res.body}`);
    return null;
  }
  return res.json();
}

export function putRefillSize(n) {
  const res = http.put(`${BASE_URL}/admin/v1/queues/${q}/refill-size`, JSON.stringify({ refill_size: n }), adminParams('admin_refill_size'));
  if (res.status !== 200) {
    console.error(`PUT refill-size ${n}: HTTP ${res.status} ${res.body}`);
    return null;
  }
  return res.json();
}

// waitReady polls /readyz for up to 10 s so a run never starts against a
// server that is still connecting to Redis.
export function waitReady() {
  for (let i = 0; i < 100; i++) {
    const res = http.get(`${BASE_URL}/readyz`, { tags: { name: 'readyz' } });
    if (res.status === 200) return;
    sleep(0.1);
  }
  throw new Error(`${BASE_URL}/readyz never answered 200`);
}

export function runId() {
  return __ENV.RUN_ID || String(Date.now());
}
