// The flow's bookkeeping (waiting-flow.js and the modules of its
// answers): the one timer of the page's next request, the generation of
// the attempt to hold a place, and the counters its answers reset. Only
// the flow's modules write it; waiting-state.js holds what is shown.

export const attempt = {
  generation: 0, // bumped on leave/join so late answers of an old attempt are dropped
  inFlight: false, // a request of the flow is out
  hadPlace: false, // seen WAITING/ENTERED since the last (re)join
  reentered: false, // the single re-enter after losing a place is used up
  failures: 0, // failed requests in a row: the backoff's n
  limited: 0, // rate_limited answers in a row
  // Proof of work (waiting-challenge.js).
  needChallenge: false, // the queue asked for one: later enters solve first
  challengeTries: 0, // challenges fetched since the last ticket or join
  humanTries: 0, // human check widgets drawn since the last ticket or join (waiting-human.js)
  fullAutoUsed: false, // a full line's automatic retry is used since the last ticket or click
};

// The longest timer set at once: longer waits re-arm, since setTimeout
// overflows past ~24.8 days.
export const MAX_TIMER_MS = 3600000;

let timer = 0;

// later makes fn the page's next step, in ms, in place of any other.
export function later(fn, ms) {
  clearTimeout(timer);
  timer = setTimeout(fn, ms);
}

// stopTimer cancels the next step.
export function stopTimer() {
  clearTimeout(timer);
}
