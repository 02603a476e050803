package waymark

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// statusFixture decodes a google.rpc.Status from test/wire, as a grpc-status-details-bin trailer
// carries it.
func statusFixture(t *testing.T, name string) *status.Status {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "test", "wire", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	wire, _ := base64.StdEncoding.DecodeString(f.Binary)
	pb := &spb.Status{}
	if err := proto.Unmarshal(wire, pb); err != nil {
		t.Fatal(err)
	}
	return status.FromProto(pb)
}

func TestErrorsFromStatusDetails(t *testing.T) {
	err := mapError(statusFixture(t, "error_run_not_found").Err())
	var notFound *RunNotFoundError
	if !errors.As(err, &notFound) || notFound.RunID != "run_01JD8Z6Q4W8K7M2N3P5R6S7T8V" || notFound.Code != codes.NotFound {
		t.Fatalf("want RunNotFoundError with the run id, got %#v", err)
	}
	var api *APIError
	if !errors.As(err, &api) || api.Reason != ReasonRunNotFound || status.Code(err) != codes.NotFound {
		t.Fatalf("want the APIError underneath, got %#v", err)
	}

	err = mapError(statusFixture(t, "error_invalid_input").Err())
	var invalid *InvalidArgumentError
	if !errors.As(err, &invalid) || len(invalid.FieldViolations) != 2 || invalid.FieldViolations[0].Field != "input.amount" {
		t.Fatalf("want InvalidArgumentError with two field violations, got %#v", err)
	}

	err = mapError(statusFixture(t, "error_flow_drift").Err())
	var drift *FlowDriftError
	if !errors.As(err, &drift) || !slices.Equal(drift.Choices, []string{"restart", "abandon"}) || drift.PinnedDigest != "sha256:5f1e0c2a" {
		t.Fatalf("want FlowDriftError with its choices, got %#v", err)
	}

	// LEASE_LOST reaches a client only in a race no test can stage against a real server (another
	// worker taking over a run mid-call), so its mapping is proven on the server's bytes here.
	err = mapError(statusFixture(t, "error_lease_lost").Err())
	var leaseLost *LeaseLostError
	if !errors.As(err, &leaseLost) || leaseLost.RunID != "run_01JD8Z6Q4W8K7M2N3P5R6S7T8V" || leaseLost.Code != codes.Aborted {
		t.Fatalf("want LeaseLostError, got %#v", err)
	}

	err = mapError(statusFixture(t, "error_payload_too_large").Err())
	var tooLarge *PayloadTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.LimitBytes != 1<<20 || tooLarge.SizeBytes != 2<<20 || tooLarge.Field != "input" {
		t.Fatalf("want PayloadTooLargeError with sizes, got %#v", err)
	}
}

func TestErrorsWithoutDetailsKeepTheCode(t *testing.T) {
	err := mapError(status.Error(codes.Unavailable, "server shutting down"))
	var api *APIError
	if !errors.As(err, &api) || api.Code != codes.Unavailable || !api.Retryable() {
		t.Fatalf("want a retryable APIError, got %#v", err)
	}
	if mapError(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}
