// The waiting page's words: its catalogs are i18n/waiting/{lang}.json
// (i18n.js has the format). The server puts the chosen language's
// catalog in the page (#wr-page), so the page starts without fetching
// it; another language is fetched when the user switches.
// waiting.html names its static strings by key (data-i18n); the scripts
// call t(key, {name: value, ...}).

import { createI18n, pageData } from './i18n.js';

// served is what the server told the script: the language and its
// messages, the queue's title and message in every language they have.
export const served = pageData();
export const i18n = await createI18n('waiting', served);
export const t = i18n.t;
