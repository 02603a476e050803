import { pino, type Logger } from 'pino';

/** JSON lines on stdout, one object per event; the level as a word so log tools need no mapping. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'waymark', pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: ['databaseUrl', 'password', 'authorization', '*.authorization', 'apiKey'], censor: '[redacted]' },
  });
}
