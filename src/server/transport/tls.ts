import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';

/*
 * TLS on the API port: the certificate and key come from files (a Kubernetes Secret mounted into
 * the pod, cert-manager's output, files an operator rotates) and are re-read when they change.
 * Files are polled (fs.watchFile) rather than watched with inotify: a mounted Secret is updated by
 * swapping a symlinked directory, which an inotify watch on the old file never reports. A changed
 * pair that does not load (the certificate written, the key not yet) is logged and the previous
 * pair keeps serving; the next change is tried again. Only new connections get the new
 * certificate: connections open at the time keep theirs, as TLS has no way to swap mid-session.
 */

export type ClientAuth = 'require' | 'optional';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** PEM CA bundle client certificates must chain to (mTLS); without it no client certificate is asked for. */
  clientCaFile?: string | undefined;
  /** `require`: a connection without a valid client certificate fails the handshake; `optional`: asked for, recorded when valid. */
  clientAuth?: ClientAuth | undefined;
  /** How often the files are polled for changes. */
  reloadIntervalMs?: number | undefined;
}

export const TLS_DEFAULTS = { reloadIntervalMs: 1_000, clientAuth: 'require' as ClientAuth };

/** A TLS file that cannot be read or does not load; the message names the file and what is wrong. */
export class TlsFileError extends Error {
  constructor(readonly file: string, reason: string) {
    super(`${file}: ${reason}`);
  }
}

/** Reads the files into secure-context options; throws TlsFileError when they do not load together. */
export function loadTlsFiles(files: TlsFiles): SecureContextOptions {
  const read = (file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new TlsFileError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  const options: SecureContextOptions = { cert: read(files.certFile), key: read(files.keyFile) };
  if (files.clientCaFile) options.ca = read(files.clientCaFile);
  try {
    // Throws when the key does not match the certificate or a PEM does not parse.
    createSecureContext(options);
  } catch (err) {
    throw new TlsFileError(files.certFile, `does not load with ${files.keyFile}${files.clientCaFile ? ` and ${files.clientCaFile}` : ''} (${(err as Error).message})`);
  }
  return options;
}

/**
 * Polls the files and calls `apply` with freshly loaded options after each change that loads.
 * Returns the function that stops polling.
 */
export function watchTlsFiles(files: TlsFiles, logger: Logger, apply: (options: SecureContextOptions) => void): () => void {
  const paths = [files.certFile, files.keyFile, ...(files.clientCaFile ? [files.clientCaFile] : [])];
  const interval = files.reloadIntervalMs ?? TLS_DEFAULTS.reloadIntervalMs;
  const onChange = (current: Stats, previous: Stats): void => {
    if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size) return;
    try {
      apply(loadTlsFiles(files));
      logger.info({ certFile: files.certFile }, 'tls certificate reloaded');
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'tls files changed but do not load; the previous certificate keeps serving');
    }
  };
  for (const file of paths) watchFile(file, { interval, persistent: false }, onChange);
  return () => {
    for (const file of paths) unwatchFile(file, onChange);
  };
}
