// Small DOM helpers shared by the pages. Text is always set with
// textContent, so queue names and server messages cannot inject markup.

// $ is the element with id. The waiting page may come from an operator's
// template (WAITROOM_PAGES_DIR) that leaves parts out: a missing element
// is then a detached one, so the script runs the line all the same and
// draws nothing there.
export const $ = (id) => document.getElementById(id) || detached(id);

const spares = new Map();

function detached(id) {
  if (!spares.has(id)) spares.set(id, document.createElement(id === 'progress' || id === 'check-progress' ? 'progress' : id === 'pass' ? 'textarea' : 'div'));
  return spares.get(id);
}

// html makes an HTML element with a class and, optionally, its text.
export function html(name, cls, text) {
  const node = document.createElement(name);
  node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

let nextId = 0;

// uniqueId is an element id nothing else on the page has (prefix-n), for
// the labels and descriptions of markup cloned from a template.
export function uniqueId(prefix) {
  return prefix + '-' + (++nextId);
}
