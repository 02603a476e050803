// Package waymark is the Go client of Waymark, durable execution for AI-agent runs.
//
// It is a thin layer over the generated gRPC stubs in package waymarkv1: it fills in the
// namespace and default deadlines, converts JSON payloads to and from google.protobuf.Value,
// pages lists into iterators, follows a run's events across dropped connections, and turns
// failed calls into typed errors (RunNotFoundError, FlowDriftError, ...) that errors.As finds.
// Everything the wrapper does not cover is reachable through Client.Runs and Client.Signals.
package waymark

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// DefaultAddress is where `waymark dev` listens.
const DefaultAddress = "127.0.0.1:50051"

// serviceConfig retries calls that are safe to repeat when the server is unavailable (a restart,
// a rollout): reads, cancels, and signals and decisions, which always carry an id that makes a
// repeat a no-op. StartRun and ResumeRun are not retried. round_robin spreads calls over every
// address a "dns:///" target resolves to (a headless Kubernetes Service).
const serviceConfig = `{
  "loadBalancingConfig": [{"round_robin": {}}],
  "methodConfig": [{
    "name": [
      {"service": "waymark.v1.RunService", "method": "GetRun"},
      {"service": "waymark.v1.RunService", "method": "ListRuns"},
      {"service": "waymark.v1.RunService", "method": "GetJournal"},
      {"service": "waymark.v1.RunService", "method": "ListWorkflows"},
      {"service": "waymark.v1.RunService", "method": "CancelRun"},
      {"service": "waymark.v1.SignalService"}
    ],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.2s",
      "maxBackoff": "3s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// Client talks to one Waymark server (or a load-balanced address of several). It is safe for
// concurrent use; Close releases its connection.
type Client struct {
	conn      *grpc.ClientConn
	namespace string
	timeout   time.Duration
	backoff   Backoff

	// Runs and Signals are the generated stubs, for anything the wrapper does not cover.
	Runs    waymarkv1.RunServiceClient
	Signals waymarkv1.SignalServiceClient
}

// Backoff paces the reconnects of an event stream: the first wait is Initial, each further one
// doubles up to Max (with jitter), and the stream gives up once it has failed to reconnect for
// GiveUpAfter in a row. A stream that receives an event starts over at Initial.
type Backoff struct {
	Initial     time.Duration
	Max         time.Duration
	GiveUpAfter time.Duration
}

type options struct {
	tls       *tls.Config
	token     string
	namespace string
	timeout   time.Duration
	backoff   Backoff
	dial      []grpc.DialOption
}

// Option configures Dial.
type Option func(*options)

// WithTLS connects over TLS with the given configuration (nil: the system roots). Without it the
// connection is plaintext HTTP/2, which is what `waymark dev` and in-cluster servers speak.
func WithTLS(config *tls.Config) Option {
	return func(o *options) {
		if config == nil {
			config = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.tls = config
	}
}

// WithToken sends `authorization: Bearer <token>` with every call.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithNamespace sets the namespace of every call (default "default").
func WithNamespace(namespace string) Option { return func(o *options) { o.namespace = namespace } }

// WithTimeout sets the deadline of unary calls whose context has none (default 30s). Event
// streams have no deadline: they live as long as their context.
func WithTimeout(timeout time.Duration) Option { return func(o *options) { o.timeout = timeout } }

// WithReconnectBackoff paces event-stream reconnects (default 100ms doubling to 5s, giving up
// after 2 minutes without a successful reconnect).
func WithReconnectBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// WithDialOptions adds grpc.DialOptions, e.g. interceptors or a custom resolver.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// Dial returns a client for address ("host:port", or any gRPC target such as
// "dns:///waymark-headless:50051"). It does not wait for the server: the first call connects.
func Dial(address string, opts ...Option) (*Client, error) {
	o := options{
		timeout: 30 * time.Second,
		backoff: Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, GiveUpAfter: 2 * time.Minute},
	}
	for _, opt := range opts {
		opt(&o)
	}
	if address == "" {
		return nil, errors.New("waymark: Dial needs an address, e.g. " + DefaultAddress)
	}
	transport := insecure.NewCredentials()
	if o.tls != nil {
		transport = credentials.NewTLS(o.tls)
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		grpc.WithDefaultServiceConfig(serviceConfig),
		// Keep idle follow-streams alive through proxies; 30s is the smallest interval most
		// servers and proxies accept from clients.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16 << 20)),
	}
	if o.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: o.token, secure: o.tls != nil}))
	}
	conn, err := grpc.NewClient(address, append(dial, o.dial...)...)
	if err != nil {
		return nil, err
	}
	return &Client{
		conn:      conn,
		namespace: o.namespace,
		timeout:   o.timeout,
		backoff:   o.backoff,
		Runs:      waymarkv1.NewRunServiceClient(conn),
		Signals:   waymarkv1.NewSignalServiceClient(conn),
	}, nil
}

// Close closes the connection; streams in progress end with an error.
func (c *Client) Close() error { return c.conn.Close() }

// unary gives a call the client's default deadline unless ctx already has one.
func (c *Client) unary(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// bearer sends the token as call metadata. Plaintext is allowed (secure=false) because TLS often
// terminates in a sidecar or ingress in front of the server.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }
