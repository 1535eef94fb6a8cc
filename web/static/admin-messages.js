// The back office's words: its catalogs are i18n/admin/{lang}.json
// (i18n.js has the format). admin.html names its static strings by key
// (data-i18n, data-i18n-label); the scripts call t(key, {name: value}),
// with numbers and times already formatted (admin-format.js). Server
// messages, setting names and codes are shown as the server sends them.

import { createI18n } from './i18n.js';

export const i18n = await createI18n('admin');
export const t = i18n.t;
