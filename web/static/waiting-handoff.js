// The hand-off: where the user goes when their turn comes, with the entry
// pass. The page never leaves a bare token as the next step: it sends the
// user on, links them on, or tells them to go back to the site.

// turnStep decides the next step of the ENTERED ticket tk; returnPath is
// the gate's ?return= (already checked with sameSitePath). In order:
//
//   - back where the gate sent the user from, with the pass: {href, go: true}
//   - the server's target_url: {href, go: true}
//   - a same-site path the server names (next_path), with the pass:
//     {href, go: false}, a link the user follows
//   - null: nowhere known. The user goes back to the site they came from
//     and reloads it; the pass is only there for developers.
//
// go means the page goes there by itself, replacing itself in the history.
export function turnStep(tk, returnPath) {
  const pass = tk.pass || '';
  if (returnPath && pass) return { href: withPass(returnPath, pass), go: true };
  const target = safeUrl(tk.target_url);
  if (target) return { href: target, go: true };
  const next = sameSitePath(tk.next_path);
  if (next) return { href: pass ? withPass(next, pass) : next, go: false };
  return null;
}

// sameSitePath returns r if it is a path on this site (the gate's
// ?return=, a ticket's next_path), else '': never another origin, so the
// waiting page cannot be used to send anyone elsewhere (the server refuses
// such a return too).
export function sameSitePath(r) {
  if (typeof r !== 'string' || !r || r[0] !== '/' || r[1] === '/' || r.indexOf('\\') >= 0 || /[\u0000-\u001f\u007f]/.test(r)) return '';
  try {
    const u = new URL(r, location.origin);
    return u.origin === location.origin ? u.pathname + u.search + u.hash : '';
  } catch (e) {
    return '';
  }
}

// withPass is the path with the entry pass added as wr_pass, which the
// gate there moves into a cookie.
function withPass(path, p) {
  const u = new URL(path, location.origin);
  u.searchParams.set('wr_pass', p);
  return u.pathname + u.search + u.hash;
}

// target_url comes from server config; still refuse anything but http(s).
function safeUrl(u) {
  if (!u) return '';
  try {
    const url = new URL(u, location.href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : '';
  } catch (e) {
    return '';
  }
}
