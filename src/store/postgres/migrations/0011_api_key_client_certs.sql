-- 0011_api_key_client_certs: an mTLS client certificate bound to an API key (docs/security.md
-- "mTLS client certificates"). Forward-only.

-- The SHA-256 (hex) of the DER certificate; a connection presenting a verified certificate with
-- this fingerprint authenticates as the key without a bearer header. A certificate is bound to at
-- most one key, ever (revoked keys included): revoking the key retires its certificate, and a new
-- key gets a new certificate.
ALTER TABLE api_keys ADD COLUMN client_cert_sha256 text;

CREATE UNIQUE INDEX api_keys_client_cert ON api_keys (client_cert_sha256) WHERE client_cert_sha256 IS NOT NULL;
