/** Invalid input found before anything was sent (exit 2, exit-codes.ts); the message says what to fix. */
export class UsageError extends Error {}
