package waymark

import (
	"fmt"
	"os"
	"regexp"
)

// The environment variables Dial reads for what the code leaves unset, as Temporal's clients read
// TEMPORAL_ADDRESS: the same names in the Go, Python and TypeScript clients and the CLI, so one
// shell set up for `waymark` serves every client (docs/clients.md "Configuration from the
// environment"). An option given in code wins over its variable; empty values count as unset.
const (
	// EnvAddress is the server's host:port when Dial's address is "" (default DefaultAddress).
	EnvAddress = "WAYMARK_ADDRESS"
	// EnvToken is the bearer token (an API key) unless WithToken is given.
	EnvToken = "WAYMARK_TOKEN"
	// EnvNamespace is the namespace unless WithNamespace is given.
	EnvNamespace = "WAYMARK_NAMESPACE"
	// EnvTLS set to 1 (or true, yes) turns TLS on with the system roots unless WithTLS or
	// WithPlaintext is given; so does any of the three files below or EnvServerName.
	EnvTLS = "WAYMARK_TLS"
	// EnvCAFile is a PEM CA bundle to trust instead of the system roots.
	EnvCAFile = "WAYMARK_CA_FILE"
	// EnvCertFile and EnvKeyFile are a PEM client certificate and its key (mTLS).
	EnvCertFile = "WAYMARK_CLIENT_CERT_FILE"
	EnvKeyFile  = "WAYMARK_CLIENT_KEY_FILE"
	// EnvServerName is the name to verify the server's certificate against.
	EnvServerName = "WAYMARK_SERVER_NAME"
)

var truthy = regexp.MustCompile(`^(?i:1|true|yes)$`)

// fromEnvironment fills what the options leave unset from getenv, and the address when "".
func (o *options) fromEnvironment(address string, getenv func(string) string) (string, error) {
	if address == "" {
		address = getenv(EnvAddress)
	}
	if address == "" {
		address = DefaultAddress
	}
	if !o.tokenSet {
		o.token = getenv(EnvToken)
	}
	if !o.namespaceSet {
		o.namespace = getenv(EnvNamespace)
	}
	if o.tlsSet {
		return address, nil
	}
	files := TLSFiles{CAFile: getenv(EnvCAFile), CertFile: getenv(EnvCertFile), KeyFile: getenv(EnvKeyFile), ServerName: getenv(EnvServerName)}
	if files == (TLSFiles{}) && !truthy.MatchString(getenv(EnvTLS)) {
		return address, nil
	}
	config, err := TLSConfig(files)
	if err != nil {
		return "", fmt.Errorf("%w (from %s, %s, %s)", err, EnvCAFile, EnvCertFile, EnvKeyFile)
	}
	o.tls = config
	return address, nil
}

// WithPlaintext connects over plaintext HTTP/2 whatever the environment says (WAYMARK_TLS and the
// files of EnvCAFile and friends are then ignored).
func WithPlaintext() Option {
	return func(o *options) {
		o.tls, o.tlsSet = nil, true
	}
}

var getenv = os.Getenv
