// Proof-of-work solver for the waiting page, run as a Web Worker so the
// page stays responsive while it hashes.
//
// The protocol (package internal/trust/challenge): a solution is a nonce such
// that SHA-256(challenge + ":" + nonce) starts with `difficulty` zero
// bits. Nonces are counted up in decimal from 0, like challenge.Solve.
//
// In:  {challenge, difficulty, batch?, pureJS?}  (batch: digests per
//      await; pureJS: use the fallback below even with WebCrypto, to
//      measure it)
// Out: {type: 'progress', tried, ms}     about every PROGRESS_MS: the
//                                        hashes tried and the ms spent so
//                                        far, from which the page reckons
//                                        the rate and the time left
//      {type: 'done', nonce, tried, ms}
//      {type: 'error', message}
//
// WebCrypto's digest is asynchronous, and one await per hash would spend
// most of the time in the event loop; so each round starts `batch`
// digests and awaits them together. Browsers offer crypto.subtle only in a
// secure context (https, or http on localhost): over plain http elsewhere
// the worker falls back to the small SHA-256 below, which is slower but
// gives the same answers.
'use strict';

const DEFAULT_BATCH = 256;
const MAX_BATCH = 4096;
const PROGRESS_MS = 250; // often enough for a countdown in seconds

self.onmessage = (e) => {
  const m = e.data || {};
  solve(String(m.challenge || ''), m.difficulty | 0, m.batch | 0, m.pureJS === true).catch((err) => {
    self.postMessage({ type: 'error', message: String((err && err.message) || err) });
  });
};

async function solve(challenge, difficulty, batch, pureJS) {
  if (difficulty < 0 || difficulty > 256) throw new Error('bad difficulty ' + difficulty);
  batch = Math.min(MAX_BATCH, batch > 0 ? batch : DEFAULT_BATCH);
  const subtle = pureJS ? null : self.crypto && self.crypto.subtle;
  const prefix = new TextEncoder().encode(challenge + ':');
  const started = performance.now();
  let lastReport = started;
  let tried = 0;
  for (let next = 0; ; next += batch) {
    // The messages of this round, each prefix + the nonce's decimal digits.
    const msgs = new Array(batch);
    for (let i = 0; i < batch; i++) msgs[i] = message(prefix, String(next + i));
    let sums;
    if (subtle) {
      sums = await Promise.all(msgs.map((b) => subtle.digest('SHA-256', b)));
    } else {
      sums = msgs.map(sha256);
    }
    for (let i = 0; i < batch; i++) {
      if (leadingZeros(new Uint8Array(sums[i]), difficulty)) {
        tried += i + 1;
        self.postMessage({ type: 'done', nonce: String(next + i), tried: tried, ms: performance.now() - started });
        return;
      }
    }
    tried += batch;
    const now = performance.now();
    if (now - lastReport >= PROGRESS_MS) {
      lastReport = now;
      self.postMessage({ type: 'progress', tried: tried, ms: now - started });
    }
  }
}

function message(prefix, nonce) {
  const b = new Uint8Array(prefix.length + nonce.length);
  b.set(prefix);
  for (let i = 0; i < nonce.length; i++) b[prefix.length + i] = nonce.charCodeAt(i);
  return b;
}

// leadingZeros says whether sum starts with n zero bits.
function leadingZeros(sum, n) {
  let i = 0;
  for (; n >= 8; n -= 8, i++) {
    if (sum[i] !== 0) return false;
  }
  return n === 0 || (sum[i] >> (8 - n)) === 0;
}

// ---- SHA-256 (FIPS 180-4) for when crypto.subtle is missing ----

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Uint32Array(64);

function sha256(msg) {
  const len = msg.length;
  const blocks = ((len + 9 + 63) >> 6) << 6;
  const p = new Uint8Array(blocks);
  p.set(msg);
  p[len] = 0x80;
  const bits = len * 8;
  p[blocks - 4] = bits >>> 24;
  p[blocks - 3] = bits >>> 16;
  p[blocks - 2] = bits >>> 8;
  p[blocks - 1] = bits;
  let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a;
  let h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
  for (let off = 0; off < blocks; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + 4 * i;
      W[i] = (p[j] << 24) | (p[j + 1] << 16) | (p[j + 2] << 8) | p[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], b = W[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      W[i] = W[i - 16] + s0 + W[i - 7] + s1;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0;
      d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
  }
  const out = new Uint8Array(32);
  [h0, h1, h2, h3, h4, h5, h6, h7].forEach((v, i) => {
    out[4 * i] = v >>> 24;
    out[4 * i + 1] = v >>> 16;
    out[4 * i + 2] = v >>> 8;
    out[4 * i + 3] = v;
  });
  return out;
}
