package waymark

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// TestLiveAuth runs the refund scenario against the harness's server with authentication on
// (WAYMARK_TEST_AUTH_ADDRESS), with the API key in WAYMARK_TEST_TOKEN sent by WithToken: the
// decision records the key's id. Without the key the call is UNAUTHENTICATED.
func TestLiveAuth(t *testing.T) {
	address := os.Getenv("WAYMARK_TEST_AUTH_ADDRESS")
	if address == "" {
		t.Skip("WAYMARK_TEST_AUTH_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a server with authentication on")
	}
	client, err := Dial(address, WithToken(os.Getenv("WAYMARK_TEST_TOKEN")), WithFailFast(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	approveRefundWithKey(ctx, t, client, "go-auth", "go-client")

	anonymous, err := Dial(address, WithRetry(RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = anonymous.Close() }()
	_, err = anonymous.ListWorkflows(ctx)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.GRPCStatus().Code() != codes.Unauthenticated {
		t.Fatalf("without a key: got %v, want UNAUTHENTICATED", err)
	}
}

// approveRefundWithKey starts the refund example as order, approves it as by, and checks that the
// decision records the id of the key the client sends (WAYMARK_TEST_KEY_ID).
func approveRefundWithKey(ctx context.Context, t *testing.T, client *Client, order, by string) {
	t.Helper()
	started, err := client.StartRun(ctx, "refund", map[string]any{"order": order, "amount": 3}, StartOptions{Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(started.GetWaitingOn()) != 1 {
		t.Fatalf("the refund run waits on %v, not one approval", started.GetWaitingOn())
	}
	decided, err := client.Approve(ctx, started.GetWaitingOn()[0].GetApprovalId(), Decision{By: by})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := decided.GetApproval().GetDecidedByKeyId(), os.Getenv("WAYMARK_TEST_KEY_ID"); got != want {
		t.Fatalf("decided_by_key_id = %q, want the key's id %q", got, want)
	}
}
