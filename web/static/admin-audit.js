// A queue's audit log (GET /admin/v1/queues/{queue}/audit), newest first:
// when, what, who (a person, a token, the schedule, the automatic rate),
// from which address, and each field's old → new value.

import { html } from './dom.js';
import { i18n, t } from './admin-messages.js';
import { num, dateClock, utcWhen } from './admin-format.js';
import { overrides, lanesShares } from './admin-saleday.js';

// The log's actions -> their words; another action shows as its name.
const ACTIONS = {
  settings: 'auditSettings',
  automatic: 'auditAutomatic',
  refill_size: 'auditRefill',
  remove_user: 'auditRemoveUser',
};

// renderAudit shows a queue's newest audit entries, redrawn only when
// they changed (entries are never edited: the count and the newest tell)
// or when again is set (the language changed).
export function renderAudit(view, entries, again) {
  const key = entries.length + ':' + (entries.length ? entries[0].at_ms + ':' + entries[0].request_id : '');
  if (view.auditKey === key && !again) return;
  view.auditKey = key;
  view.auditEntries = entries;
  const list = view.root.querySelector('.audit-list');
  list.replaceChildren(...entries.map(auditEntry));
  list.hidden = entries.length === 0;
  view.root.querySelector('.audit-empty').hidden = entries.length > 0;
}

function auditEntry(e) {
  const at = new Date(e.at_ms);
  let what = ACTIONS[e.action] ? t(ACTIONS[e.action]) : e.action;
  if (e.target) what += ' ' + e.target;
  const meta = html('p', 'audit-meta');
  const when = html('time', 'audit-when', dateClock(at));
  when.dateTime = at.toISOString();
  // The schedule's and the controller's changes come from no address.
  const parts = [];
  if (e.actor) parts.push(t('auditBy', { actor: actorName(e.actor) }));
  if (e.client_ip) parts.push(t('auditFrom', { address: e.client_ip }));
  else if (!e.actor) parts.push(t('auditFrom', { address: t('unknownAddress') }));
  meta.append(when, ' · ', html('span', 'audit-what', what), ' ', html('span', 'audit-actor', parts.join(' ')));
  const li = html('li', 'audit-entry');
  li.append(meta);
  const changes = html('ul', 'audit-changes');
  for (const c of e.changes || []) {
    changes.append(html('li', 'audit-change', c.field + ': ' + auditValue(c.old) + ' → ' + auditValue(c.new)));
  }
  if (changes.childElementCount) li.append(changes);
  return li;
}

// actorName is who made a change, as an operator reads it: a person's
// e-mail, a token's name, or what the service itself is.
function actorName(a) {
  switch (a.kind) {
    case 'oidc': return a.name;
    case 'token': return t('actorToken', { name: a.name });
    case 'admin_token': return t('actorAdminToken');
    case 'schedule': return t('actorSchedule');
    case 'automatic': return t('actorAutomatic');
  }
  return a.name || a.kind || String(a);
}

// auditValue is one old or new value as an operator reads it.
function auditValue(v) {
  if (v === null || v === undefined || v === '') return t('auditNone');
  if (Array.isArray(v)) {
    // The schedule's windows and the lanes, as the sale day's section
    // words them, not as JSON.
    if (v.length === 0) return t('auditNone');
    if (v.every((w) => w && w.start && w.end)) {
      return v.map((w) => utcWhen(Date.parse(w.start)) + ' – ' + utcWhen(Date.parse(w.end)) + ' (' + overrides(w) + ')').join('; ');
    }
    if (v.every((l) => l && typeof l.name === 'string' && typeof l.share === 'number')) return lanesShares(v);
    return JSON.stringify(v);
  }
  if (typeof v === 'object') {
    if (v.status) {
      // A status the catalog does not name is shown as the server sends it.
      const status = i18n.has('status' + v.status) ? t('status' + v.status) : v.status;
      return v.position ? t('auditStatusAt', { status: status, position: num(v.position) }) : t('auditStatus', { status: status });
    }
    return JSON.stringify(v);
  }
  if (typeof v === 'number') return num(v);
  return String(v);
}
