package waymark

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// unsetWaymarkEnv clears every variable Dial reads, so a developer's shell cannot leak into a test.
func unsetWaymarkEnv(t *testing.T) {
	for _, name := range []string{EnvAddress, EnvToken, EnvNamespace, EnvTLS, EnvCAFile, EnvCertFile, EnvKeyFile, EnvServerName} {
		t.Setenv(name, "")
	}
}

func TestEnvironmentFillsWhatTheCodeLeavesUnset(t *testing.T) {
	env := map[string]string{EnvAddress: "env-host:1", EnvToken: "env-token", EnvNamespace: "env-ns"}
	o := options{}
	address, err := o.fromEnvironment("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if address != "env-host:1" || o.token != "env-token" || o.namespace != "env-ns" || o.tls != nil {
		t.Fatalf("from the environment: address %q token %q namespace %q tls %v", address, o.token, o.namespace, o.tls)
	}

	o = options{}
	for _, opt := range []Option{WithToken("code-token"), WithNamespace("code-ns")} {
		opt(&o)
	}
	address, err = o.fromEnvironment("code-host:2", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if address != "code-host:2" || o.token != "code-token" || o.namespace != "code-ns" {
		t.Fatalf("the code's options must win: address %q token %q namespace %q", address, o.token, o.namespace)
	}

	o = options{}
	WithToken("")(&o) // explicitly no token
	if _, err := o.fromEnvironment("", func(k string) string { return env[k] }); err != nil || o.token != "" {
		t.Fatalf("WithToken(\"\") must send none, got %q (%v)", o.token, err)
	}

	o = options{}
	if address, _ := o.fromEnvironment("", func(string) string { return "" }); address != DefaultAddress {
		t.Fatalf("no address anywhere: got %q, want %q", address, DefaultAddress)
	}
}

func TestEnvironmentTurnsTLSOnUnlessTheCodeSaysPlaintext(t *testing.T) {
	env := map[string]string{EnvTLS: "1", EnvServerName: "waymark.internal"}
	o := options{}
	if _, err := o.fromEnvironment("", func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if o.tls == nil || o.tls.ServerName != "waymark.internal" {
		t.Fatalf("WAYMARK_TLS=1 with a server name: tls %+v", o.tls)
	}
	o = options{}
	WithPlaintext()(&o)
	if _, err := o.fromEnvironment("", func(k string) string { return env[k] }); err != nil || o.tls != nil {
		t.Fatalf("WithPlaintext must win over the environment: tls %+v (%v)", o.tls, err)
	}
	o = options{}
	_, err := o.fromEnvironment("", func(k string) string { return map[string]string{EnvCertFile: "c.pem"}[k] })
	if err == nil {
		t.Fatal("a client certificate without its key must be refused")
	}
}

// TestLiveEnvironmentAuth dials "" with nothing but WAYMARK_ADDRESS and WAYMARK_TOKEN set, against
// the harness's server with authentication on: the decision records the key read from the
// environment; a WithToken in code wins over it (a wrong one is UNAUTHENTICATED).
func TestLiveEnvironmentAuth(t *testing.T) {
	address, token := os.Getenv("WAYMARK_TEST_AUTH_ADDRESS"), os.Getenv("WAYMARK_TEST_TOKEN")
	if address == "" {
		t.Skip("WAYMARK_TEST_AUTH_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a server with authentication on")
	}
	unsetWaymarkEnv(t)
	t.Setenv(EnvAddress, address)
	t.Setenv(EnvToken, token)
	client, err := Dial("", WithFailFast(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	approveRefundWithKey(ctx, t, client, "go-env", "go-env")

	wrong, err := Dial("", WithToken("wm_not-a-key"), WithRetry(RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = wrong.Close() }()
	_, err = wrong.ListWorkflows(ctx)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.GRPCStatus().Code() != codes.Unauthenticated {
		t.Fatalf("WithToken in code must win over WAYMARK_TOKEN: got %v, want UNAUTHENTICATED", err)
	}
}

// TestLiveEnvironmentTLS dials "" with the CA, the client certificate and the server name in the
// environment, against the harness's mTLS server; WithPlaintext in code wins and cannot connect.
func TestLiveEnvironmentTLS(t *testing.T) {
	address := os.Getenv("WAYMARK_TEST_TLS_ADDRESS")
	if address == "" {
		t.Skip("WAYMARK_TEST_TLS_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a real TLS server")
	}
	ca, cert, key := os.Getenv("WAYMARK_TEST_TLS_CA_FILE"), os.Getenv("WAYMARK_TEST_TLS_CLIENT_CERT_FILE"), os.Getenv("WAYMARK_TEST_TLS_CLIENT_KEY_FILE")
	unsetWaymarkEnv(t)
	t.Setenv(EnvAddress, address)
	t.Setenv(EnvCAFile, ca)
	t.Setenv(EnvCertFile, cert)
	t.Setenv(EnvKeyFile, key)
	t.Setenv(EnvServerName, "localhost")
	client, err := Dial("", WithFailFast(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.ListWorkflows(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial("", WithPlaintext(), WithFailFast(5*time.Second)); err == nil {
		t.Fatal("WithPlaintext must win over the TLS files in the environment: the TLS server answered plaintext")
	}
}
