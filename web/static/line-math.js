// The arithmetic of a place far from the head, from the line's public
// document (GET /api/v1/queues/{queue}/line) and the place's own arrival
// number: the same as the server's far-back status (internal/engine/queue,
// snapshot.go position and ticket, eta.go setRange), step for step, so
// that the page can place itself without asking the origin. A test feeds
// both the same lines and wants the same numbers (internal/testkit/e2e,
// TestLineMathMatchesServer).
//
// place(doc, arrival, ageMs) is {position, eta_seconds, eta_low_seconds,
// eta_high_seconds}, or null when the document cannot place the arrival
// number (near the head, held there, before the first or after the last
// sample, during a draw, or an incomplete document): then ask the
// origin's status. ageMs is how long ago, on the server's clock, the
// document's line was read (now − at_ms).

// What one tick may be late, and how much of the ticks ahead the line may
// save, and the estimate's error: eta.go's etaTickLate, etaSpreadShare,
// etaEstimateError.
const TICK_LATE_MS = 10;
const SPREAD_SHARE = 0.25;
const ESTIMATE_ERROR = 0.05;

// ticksSince is how many ticks may have been applied ageMs after the read.
function ticksSince(doc, ageMs) {
  const until = doc.until_next_tick_ms;
  const interval = Math.max(doc.refill_interval_ms, 1);
  return ageMs >= until ? 1 + Math.floor((ageMs - until) / interval) : 0;
}

// position is the 1-based position of arrival number seq, or 0 when the
// document cannot place it far from the head.
export function position(doc, seq, ageMs) {
  const s = doc.samples || [];
  const n = s.length;
  if (n < 2 || doc.in_draw || !doc.complete || seq < s[0][1] || seq > s[n - 1][1] ||
    (doc.held_max > 0 && seq <= doc.held_max)) {
    return 0;
  }
  // The last sample at or before seq.
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (s[mid][1] > seq) hi = mid;
    else lo = mid + 1;
  }
  const i = lo - 1;
  const [rank, at] = s[i];
  if (rank + 1 <= doc.near_head + ticksSince(doc, ageMs) * doc.tick_reach) return 0;
  if (at === seq || i === n - 1) return rank + 1;
  const span = s[i + 1][1] - at;
  return rank + 1 + Math.floor(((seq - at) * (s[i + 1][0] - rank)) / span);
}

// place is the position and the wait as the server's far-back status
// answers them, or null.
export function place(doc, seq, ageMs) {
  const age = Math.max(0, Math.floor(ageMs));
  const pos = position(doc, seq, age);
  if (pos <= 0) return null;
  const refill = doc.refill_size;
  const interval = doc.refill_interval_ms;
  const untilNext = Math.max(0, doc.until_next_tick_ms - age);
  let ticksAhead = 0;
  let eta = 0;
  if (refill > 0) {
    ticksAhead = Math.floor((pos - 1) / refill);
    eta = untilNext + ticksAhead * interval;
  }
  let low = eta;
  let high = eta;
  if (refill > 0 && interval > 0) {
    const e = Math.ceil((ESTIMATE_ERROR * pos) / refill);
    const early = Math.ceil(SPREAD_SHARE * ticksAhead) + e;
    high = eta + (ticksAhead + 1) * TICK_LATE_MS + e * interval;
    low = Math.max(0, eta - early * interval);
  }
  return {
    position: pos,
    eta_seconds: Math.ceil(eta / 1000),
    eta_low_seconds: Math.floor(low / 1000),
    eta_high_seconds: Math.ceil(high / 1000),
  };
}
