package waymark

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"
)

// TestLiveTLS calls the harness's TLS server (mTLS required: WAYMARK_TLS_CLIENT_CA_FILE on the
// server) with the CA, a client certificate and a server name from TLSConfig; without the client
// certificate the handshake fails and the call is UNAVAILABLE.
func TestLiveTLS(t *testing.T) {
	address := os.Getenv("WAYMARK_TEST_TLS_ADDRESS")
	if address == "" {
		t.Skip("WAYMARK_TEST_TLS_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a real TLS server")
	}
	files := TLSFiles{
		CAFile:     os.Getenv("WAYMARK_TEST_TLS_CA_FILE"),
		CertFile:   os.Getenv("WAYMARK_TEST_TLS_CLIENT_CERT_FILE"),
		KeyFile:    os.Getenv("WAYMARK_TEST_TLS_CLIENT_KEY_FILE"),
		ServerName: "localhost",
	}
	config, err := TLSConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	client, err := Dial(address, WithTLS(config), WithFailFast(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	workflows, err := client.ListWorkflows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(workflows))
	for _, w := range workflows {
		names = append(names, w.GetName())
	}
	if !slices.Contains(names, "refund") {
		t.Fatalf("the TLS server lists %v, without refund", names)
	}

	anonymous, err := TLSConfig(TLSFiles{CAFile: files.CAFile, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := Dial(address, WithTLS(anonymous), WithRetry(RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = noCert.Close() }()
	_, err = noCert.ListWorkflows(ctx)
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("without a client certificate: got %v, want *UnavailableError", err)
	}
}

func TestTLSConfigRefusesHalfAPair(t *testing.T) {
	if _, err := TLSConfig(TLSFiles{CertFile: "client.crt"}); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
	if _, err := TLSConfig(TLSFiles{CAFile: "/nonexistent/ca.crt"}); err == nil {
		t.Fatal("a missing CA file was accepted")
	}
}
