// An invitation code. "I have an invitation code" sends the code typed
// with an enter (invite_code): a valid one moves this page's place into
// the code's lane at its arrival number (or makes the place there), and
// the answer's lane says which; a wrong, spent or revoked one changes
// nothing (invalid_code), and after many wrong ones from this network
// the server refuses for a while (too_many_code_attempts). Either way
// the place is kept and the page goes on asking for it.
//
// The enter is the flow's (waiting-flow.js), passed to bindCode: this
// module imports nothing of the flow, which reads page.inviteCode into
// its enter's body and tells this module how it went.

import { $ } from './dom.js';
import { t } from './waiting-messages.js';
import { page } from './waiting-state.js';
import { attempt, stopTimer } from './waiting-attempt.js';
import { say } from './waiting-render.js';

// bindCode wires the form. enter makes the flow's enter, which carries
// page.inviteCode while it is set.
export function bindCode(enter) {
  $('code-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const code = $('code-input').value.trim();
    if (!code || attempt.inFlight) return;
    attempt.generation++;
    stopTimer();
    page.inviteCode = code;
    $('code-submit').disabled = true;
    note('');
    enter();
  });
}

// codeAnswered tells the page how the enter with a code went: tk when
// it went through (its lane says where the place is), else the refusal's
// error. It returns true when the refusal was the code's, which changed
// nothing: the flow then goes on with a status.
export function codeAnswered(tk, err) {
  if (!page.inviteCode) return false;
  page.inviteCode = '';
  $('code-submit').disabled = false;
  if (tk) {
    $('code-input').value = '';
    $('code-use').open = false;
    note(tk.lane ? t('codeAccepted', { lane: tk.lane }) : '');
    return false;
  }
  if (err.code === 'invalid_code') {
    note(t('codeInvalid'), true);
    return true;
  }
  if (err.code === 'too_many_code_attempts') {
    note(t('codeLocked'), true);
    return true;
  }
  return false;
}

// note shows text under the form (and to screen readers): a warning
// when bad.
function note(text, bad) {
  const el = $('code-note');
  el.textContent = text;
  el.hidden = !text;
  el.classList.toggle('banner-warn', !!bad);
  if (text) say(text);
}
