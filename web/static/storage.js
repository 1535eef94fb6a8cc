// Web storage that never throws. localStorage and sessionStorage throw in
// private modes and when storage is disabled; the pages work without them
// (a reload then forgets what they kept), so a failure reads as "nothing
// stored" and a write that fails is dropped.

function safe(area) {
  return {
    get(key) {
      try { return area().getItem(key); } catch (e) { return null; }
    },
    set(key, value) {
      try { area().setItem(key, value); } catch (e) { /* kept for this page view only */ }
    },
    remove(key) {
      try { area().removeItem(key); } catch (e) { /* nothing stored */ }
    },
  };
}

// local outlives the tab (the waiting page's progress, the language);
// session ends with it (the back office's token).
export const local = safe(() => localStorage);
export const session = safe(() => sessionStorage);
