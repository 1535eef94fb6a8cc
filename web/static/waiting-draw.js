// A scheduled opening's draw that anyone can check (docs/DRAW.md). In
// the pre-queue the answers carry the draw's commitment, the SHA-256 of
// its sealed seed: the page shows it ("the draw is sealed: …") and keeps
// it. Once drawn, a place the draw placed is told its draw key and place
// in the draw: the page shows them with a link to the verifier page,
// which recomputes the whole order from the seed revealed at the opening
// and checks it against the commitment this page saw before, and this
// member's key against its id. Kept in localStorage per queue, so a
// reload, or a ticket worked out from the line's document (which carries
// no draw), still shows them.

import { local } from './storage.js';
import { page, queue } from './waiting-state.js';

const key = 'waitroom:draw:' + queue;

// stored is what this browser kept of member's draw (null: nothing).
function stored(member) {
  try {
    const d = JSON.parse(local.get(key) || 'null');
    return d && typeof d === 'object' && d.member === member ? d : null;
  } catch (e) {
    return null;
  }
}

// noteDraw keeps what tk (an answer of the origin) says of the draw.
export function noteDraw(tk) {
  const member = tk.user_id || '';
  let d = page.draw && page.draw.member === member ? page.draw : stored(member);
  const hex = (v) => (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v : '');
  const commitment = hex(tk.draw_commitment);
  if (tk.status === 'WAITING' && tk.position === 0 && commitment) {
    // Sealed: what the page saw before the opening, the one to check by.
    d = { member: member, sealed: commitment, key: '', place: 0, commitment: commitment };
  } else if (tk.status === 'WAITING' && tk.draw_place > 0 && hex(tk.draw_key)) {
    d = Object.assign({ member: member, sealed: '' }, d || {}, {
      key: hex(tk.draw_key), place: tk.draw_place, commitment: commitment,
    });
  } else {
    return;
  }
  page.draw = d;
  local.set(key, JSON.stringify(d));
}

// drawnFor is the draw placed member was told (null: none): key, place.
export function drawnFor(member) {
  const d = page.draw && page.draw.member === member ? page.draw : null;
  return d && d.key && d.place > 0 ? d : null;
}

// checkLink is the verifier page's address for d: the member id, the
// commitment seen before the opening and the place told, in the fragment
// (never sent to a server, nor in its logs).
export function checkLink(d) {
  const f = new URLSearchParams({ member: d.member, commitment: d.sealed || d.commitment, place: String(d.place) });
  return '/q/' + encodeURIComponent(queue) + '/verify#' + f.toString();
}
