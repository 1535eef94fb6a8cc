// The price of a place in force and what people paid for theirs over the
// last minutes (GET /admin/v1/queues/{queue}/defences): the ceiling, the
// network price's base, the network classes loaded, the human check and
// its provider's health, then every replica's counts of places, bits
// paid, challenges and human checks. Read with each queue's history, so
// it refreshes as the queue view does.

import { t } from './admin-messages.js';
import { num, clock, ago } from './admin-format.js';
import { api, currentSession } from './admin-api.js';

// refreshDefences reads view's queue's defences, for session mine; a
// failed read keeps what was shown.
export async function refreshDefences(view, mine) {
  let d;
  try {
    d = await api('GET', '/admin/v1/queues/' + encodeURIComponent(view.name) + '/defences');
  } catch (e) {
    return;
  }
  if (mine !== currentSession()) return;
  view.defences = d;
  showDefences(view);
}

// showDefences shows what the server last said of view's defences (and
// the price in the queue's stats, where "Proof of work" stands).
export function showDefences(view) {
  const d = view.defences;
  if (!d) return;
  const el = (sel) => view.root.querySelector(sel);
  const set = (sel, text) => { el(sel).textContent = text; };
  const p = d.policy;
  const bits = (n) => t('bitsValue', { n: num(n) });
  set('.def-ceiling', bits(p.ceiling_bits));
  set('.def-network', p.network_bits > 0
    ? (p.calm_arrivals > 0 ? t('defNetworkCalm', { n: num(p.network_bits), calm: num(p.calm_arrivals) }) : bits(p.network_bits))
    : t('defNetworkOff'));
  set('.def-networks', networks(p.networks));
  set('.def-human', human(p.human_check));
  el('.def-human').classList.toggle('at-cap', p.human_check.mode !== 'off' && !p.human_check.healthy);

  // The price as the queue's stats show it: what everyone pays (the
  // queue's challenge_difficulty) and what a network's next place costs.
  const all = view.last ? view.last.challenge_difficulty : 0;
  if (p.network_bits > 0) {
    set('.pow', all > 0
      ? t('powPolicyAll', { d: num(all), base: num(p.network_bits), max: num(p.ceiling_bits) })
      : t('powPolicy', { base: num(p.network_bits), max: num(p.ceiling_bits) }));
  }

  const s = d.paid;
  const spread = (b) => t('paidSpread', { mid: num(b.p50), high: num(b.p99), top: num(b.max) });
  set('.paid-title', t('paidTitle', { m: num(d.last_minutes) }));
  set('.paid-places', t('paidPlacesValue', { n: num(s.places), priced: num(s.priced) }));
  set('.paid-bits', s.places > 0 ? spread(s.bits_paid) : t('paidNone'));
  set('.paid-challenges', s.challenges > 0 ? t('paidChallengesValue', { n: num(s.challenges), spread: spread(s.bits_asked) }) : t('paidNone'));
  set('.paid-human', t('paidHumanValue', { asked: num(s.human_checks.asked), failed: num(s.human_checks.failed) }));
}

// networks is the networks file's state: none, not read yet, or its
// classes' sizes and when it was read.
function networks(n) {
  if (!n.file) return t('defNetworksNone');
  if (!n.loaded_at) return t('defNetworksPending');
  const at = new Date(n.loaded_at).getTime();
  return t('defNetworksLoaded', {
    shared: num(n.prefixes.shared || 0),
    hosting: num(n.prefixes.hosting || 0),
    time: clock(new Date(at)),
    ago: ago(at),
  });
}

// human is the queue's human check and its provider's health.
function human(h) {
  const mode = t('humanMode.' + h.mode);
  if (h.mode === 'off') return mode;
  if (h.provider === 'off') return t('defHumanNoProvider', { mode: mode });
  const health = h.healthy ? t('humanHealthy') : t('humanAway', { n: num(h.consecutive_failures) });
  return t('defHumanValue', { mode: mode, provider: h.provider, health: health });
}
