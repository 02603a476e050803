package waymark

import (
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// errorScript is embedded by the scripted test servers: each request is recorded and answered with
// the next error of the script, then with success.
type errorScript struct {
	mu       sync.Mutex
	script   []error
	requests []any
}

func (s *errorScript) next(req any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if len(s.script) == 0 {
		return nil
	}
	err := s.script[0]
	s.script = s.script[1:]
	return err
}

// serveGRPC serves what register adds on a loopback port until the test ends, and returns its address.
func serveGRPC(t *testing.T, register func(srv *grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// calls is how many requests arrived so far.
func (s *errorScript) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// dialFast connects to a scripted server with a reconnect backoff of tens of milliseconds that
// gives up after giveUp; the client is closed when the test ends.
func dialFast(t *testing.T, addr string, giveUp time.Duration) *Client {
	t.Helper()
	client, err := Dial(addr, WithReconnectBackoff(Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, GiveUpAfter: giveUp}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}
