import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';

/*
 * Throwaway certificates for TLS tests, made with the machine's `openssl` in a temporary folder:
 * a CA, server certificates for 127.0.0.1 / ::1 / localhost signed by it, and client
 * certificates. Nothing is committed; every test run makes its own keys.
 */

export const opensslAvailable = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

export interface Issued {
  certFile: string;
  keyFile: string;
  /** SHA-256 of the DER certificate, lowercase hex without colons. */
  fingerprint256: string;
  cert: string;
  key: string;
}

export class TestCertificates {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'waymark-tls-'));
  readonly caFile: string;
  readonly caKeyFile: string;
  private serial = 1;

  constructor(caName = 'Waymark Test CA') {
    this.caFile = path.join(this.dir, `${slug(caName)}.crt`);
    this.caKeyFile = path.join(this.dir, `${slug(caName)}.key`);
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
      '-subj', `/CN=${caName}`, '-keyout', this.caKeyFile, '-out', this.caFile,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  }

  get ca(): string {
    return readFileSync(this.caFile, 'utf8');
  }

  /** A server certificate for the loopback names, signed by this CA. */
  server(name = 'server'): Issued {
    return this.issue(name, 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  }

  /** A client certificate (mTLS) with this common name. */
  client(commonName: string): Issued {
    return this.issue(commonName, 'extendedKeyUsage=clientAuth\n');
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private issue(commonName: string, extensions: string): Issued {
    const base = path.join(this.dir, `${slug(commonName)}-${this.serial}`);
    const ext = `${base}.ext`;
    writeFileSync(ext, extensions);
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${commonName}/O=Waymark Tests`,
      '-keyout', `${base}.key`, '-out', `${base}.csr`]);
    openssl(['x509', '-req', '-in', `${base}.csr`, '-CA', this.caFile, '-CAkey', this.caKeyFile, '-set_serial', String(1000 + this.serial++),
      '-days', '2', '-extfile', ext, '-out', `${base}.crt`]);
    const cert = readFileSync(`${base}.crt`, 'utf8');
    return { certFile: `${base}.crt`, keyFile: `${base}.key`, cert, key: readFileSync(`${base}.key`, 'utf8'), fingerprint256: fingerprintOf(cert) };
  }
}

/** SHA-256 of a PEM certificate's DER bytes, lowercase hex without colons. */
export function fingerprintOf(pem: string | Buffer): string {
  return new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function slug(s: string): string {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}
