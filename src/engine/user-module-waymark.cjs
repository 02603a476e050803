// engine/: what require('waymark') gets in a user's CommonJS module when its folder has no waymark.
// Must not load anything: user-module.ts puts the server's own (ES module) waymark here first.
/* global module */
module.exports = globalThis[Symbol.for('waymark.for-require')];
