package waymark

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the PEM files of a TLS connection to a server that serves TLS itself
// (WAYMARK_TLS_CERT_FILE on the server; docs/security.md). Every field is optional.
type TLSFiles struct {
	// CAFile is the CA bundle to trust instead of the system roots (a cluster's own CA).
	CAFile string
	// CertFile and KeyFile are a client certificate, for a server that asks for one (mTLS).
	CertFile string
	KeyFile  string
	// ServerName is the name to verify the server's certificate against when it differs from the
	// address's host (an IP address, a load balancer's name).
	ServerName string
}

// TLSConfig reads the files into a *tls.Config for WithTLS:
//
//	cfg, err := waymark.TLSConfig(waymark.TLSFiles{CAFile: "ca.crt"})
//	client, err := waymark.Dial("waymark.example.com:443", waymark.WithTLS(cfg))
func TLSConfig(files TLSFiles) (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: files.ServerName}
	if files.CAFile != "" {
		pem, err := os.ReadFile(files.CAFile)
		if err != nil {
			return nil, fmt.Errorf("waymark: reading the CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("waymark: %s holds no PEM certificate", files.CAFile)
		}
		config.RootCAs = pool
	}
	if (files.CertFile == "") != (files.KeyFile == "") {
		return nil, errors.New("waymark: a client certificate needs both CertFile and KeyFile")
	}
	if files.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("waymark: loading the client certificate: %w", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}
