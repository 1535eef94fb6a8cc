// Small DOM helpers shared by the pages. Text is always set with
// textContent, so queue names and server messages cannot inject markup.

export const $ = (id) => document.getElementById(id);

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
