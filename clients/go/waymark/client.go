// Package waymark is the Go client of Waymark, durable execution for AI-agent runs.
//
// It is a thin layer over the generated gRPC stubs in package waymarkv1: it fills in the
// namespace and default deadlines, converts JSON payloads to and from google.protobuf.Value,
// pages lists into iterators, follows a run's events across dropped connections, and turns
// failed calls into typed errors (RunNotFoundError, FlowDriftError, ...) that errors.As finds.
// Everything the wrapper does not cover is reachable through Client.Runs, Client.Signals and
// Client.Flows.
package waymark

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// DefaultAddress is where `waymark dev` listens.
const DefaultAddress = "127.0.0.1:50051"

// serviceConfig: round_robin spreads calls over every address a "dns:///" target resolves to (a
// headless Kubernetes Service). Retries are not grpc-go's: unaryInterceptor (retry.go) applies
// the policy of docs/clients.md, which needs the request to decide what is safe to repeat.
const serviceConfig = `{"loadBalancingConfig": [{"round_robin": {}}]}`

// Client talks to one Waymark server (or a load-balanced address of several). It is safe for
// concurrent use; Close releases its connection.
type Client struct {
	conn      *grpc.ClientConn
	namespace string
	timeout   time.Duration
	backoff   Backoff
	retry     RetryPolicy

	// Runs, Signals and Flows are the generated stubs, for anything the wrapper does not cover.
	Runs    waymarkv1.RunServiceClient
	Signals waymarkv1.SignalServiceClient
	Flows   waymarkv1.FlowServiceClient
	// Mcp is the McpService stub (MCP servers whose tools runs call, docs/mcp.md).
	Mcp waymarkv1.McpServiceClient
	// Schedules is the ScheduleService stub (docs/schedules.md); CreateSchedule … DeleteSchedule wrap it.
	Schedules waymarkv1.ScheduleServiceClient
	// Workers is the WorkerService stub, which package worker (clients/go/worker) serves tools
	// through; ListTools is the call an application makes itself.
	Workers waymarkv1.WorkerServiceClient
}

// Backoff paces the reconnects of an event stream: the first wait is up to Initial, each further
// one up to twice as long, capped at Max (full jitter). The stream gives up only when, for
// GiveUpAfter, no reconnect succeeded and no event arrived; a reconnect succeeds when the server
// accepts the stream's connection, so a follower of a parked run (which gets no events) survives
// any number of restarts as long as each one ends within GiveUpAfter.
type Backoff struct {
	Initial     time.Duration
	Max         time.Duration
	GiveUpAfter time.Duration
}

type options struct {
	tls       *tls.Config
	token     string
	namespace string
	// Set by the options given in code, which win over the environment (env.go).
	tlsSet, tokenSet, namespaceSet bool
	timeout                        time.Duration
	backoff                        Backoff
	retry                          RetryPolicy
	failFast                       time.Duration
	dial                           []grpc.DialOption
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
		o.tls, o.tlsSet = config, true
	}
}

// WithToken sends `authorization: Bearer <token>` with every call (default: WAYMARK_TOKEN, else
// none; WithToken("") sends none whatever the environment says).
func WithToken(token string) Option {
	return func(o *options) { o.token, o.tokenSet = token, true }
}

// WithNamespace sets the namespace of every call (default: WAYMARK_NAMESPACE, else the server's,
// "default").
func WithNamespace(namespace string) Option {
	return func(o *options) { o.namespace, o.namespaceSet = namespace, true }
}

// WithTimeout sets the deadline of each attempt of a unary call whose context has none (default
// 30s); the retry policy bounds the call as a whole. A context with a deadline bounds everything:
// attempts and retries. Event streams have no deadline: they live as long as their context.
func WithTimeout(timeout time.Duration) Option { return func(o *options) { o.timeout = timeout } }

// WithReconnectBackoff paces event-stream reconnects (default 100ms doubling to 5s, giving up
// after 2 minutes with neither a successful reconnect nor an event).
func WithReconnectBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// WithRetry sets the retry policy of unary calls (default DefaultRetryPolicy; a zero Budget turns
// retries off). docs/clients.md lists which calls retry and on which codes.
func WithRetry(p RetryPolicy) Option { return func(o *options) { o.retry = p } }

// WithFailFast makes Dial check the server before it returns: one grpc.health.v1 Check, which
// must answer SERVING within timeout; an unreachable server (refused, no answer in time) or one
// not serving fails Dial with *UnavailableError. Without it Dial returns at once and the first
// call connects.
func WithFailFast(timeout time.Duration) Option { return func(o *options) { o.failFast = timeout } }

// WithDialOptions adds grpc.DialOptions, e.g. interceptors or a custom resolver.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// Dial returns a client for address ("host:port", or any gRPC target such as
// "dns:///waymark-headless:50051"; "" reads WAYMARK_ADDRESS, else DefaultAddress). What the
// options leave unset comes from the environment (env.go: WAYMARK_TOKEN, WAYMARK_NAMESPACE, the
// TLS files). It does not wait for the server (the first call connects) unless WithFailFast is
// given.
func Dial(address string, opts ...Option) (*Client, error) {
	o := options{
		timeout: 30 * time.Second,
		backoff: Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, GiveUpAfter: 2 * time.Minute},
		retry:   DefaultRetryPolicy,
	}
	for _, opt := range opts {
		opt(&o)
	}
	address, err := o.fromEnvironment(address, getenv)
	if err != nil {
		return nil, err
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
		// Reconnect as fast as calls retry (grpc-go's default starts at 1s and grows to 2 min), so
		// a server back from a restart is found within the retry policy's own backoff.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: o.backoff.Initial, Multiplier: 1.6, Jitter: 0.2, MaxDelay: o.backoff.Max},
			MinConnectTimeout: 10 * time.Second,
		}),
	}
	if o.token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(bearer{token: o.token, secure: o.tls != nil}))
	}
	c := &Client{namespace: o.namespace, timeout: o.timeout, backoff: o.backoff, retry: o.retry}
	dial = append(dial, grpc.WithChainUnaryInterceptor(c.unaryInterceptor))
	conn, err := grpc.NewClient(address, append(dial, o.dial...)...)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	c.Runs = waymarkv1.NewRunServiceClient(conn)
	c.Signals = waymarkv1.NewSignalServiceClient(conn)
	c.Workers = waymarkv1.NewWorkerServiceClient(conn)
	c.Flows = waymarkv1.NewFlowServiceClient(conn)
	c.Mcp = waymarkv1.NewMcpServiceClient(conn)
	c.Schedules = waymarkv1.NewScheduleServiceClient(conn)
	if o.failFast > 0 {
		if err := c.waitReady(address, o.failFast); err != nil {
			_ = conn.Close()
			return nil, err
		}
	}
	return c, nil
}

// waitReady is the readiness check of docs/clients.md: one grpc.health.v1 Check of the whole
// server (service ""), which must answer SERVING within timeout.
func (c *Client) waitReady(address string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), noRetry{}, true), timeout)
	defer cancel()
	res, err := healthpb.NewHealthClient(c.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	msg := ""
	switch {
	case status.Code(err) == codes.DeadlineExceeded:
		msg = fmt.Sprintf("%s did not answer within %s", address, timeout)
	case err != nil:
		msg = fmt.Sprintf("%s cannot be reached: %s", address, status.Convert(err).Message())
	case res.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		msg = fmt.Sprintf("%s is %s", address, res.GetStatus())
	default:
		return nil
	}
	return &UnavailableError{APIError: &APIError{
		Code: codes.Unavailable, Message: msg, Metadata: map[string]string{}, status: status.New(codes.Unavailable, msg),
	}}
}

// Namespace is the namespace the client's calls name (WithNamespace; "" is "default").
func (c *Client) Namespace() string { return c.namespace }

// Close closes the connection; streams in progress end with an error.
func (c *Client) Close() error { return c.conn.Close() }

// unary gives an attempt the client's default deadline unless ctx already has one.
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
