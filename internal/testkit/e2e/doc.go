// Package e2e drives the waiting page and the back office in a real
// Chromium against the real stack: Redis (redistest), the queue store, the
// scheduler and the HTTP server, all started in-process by the tests.
//
// The tests need a Chromium binary: /usr/bin/chromium, or the one named by
// CHROMIUM_PATH. Without one they skip, except when CI=true, where they
// fail. Screenshots of the key states go to $WAITROOM_ARTIFACTS, by default
// artifacts/e2e/ under the repository root.
package e2e
