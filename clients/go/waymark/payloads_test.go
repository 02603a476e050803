package waymark

import (
	"context"
	"testing"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
)

// journalServer answers GetJournal with two pages, the first holding an entry whose payload is
// stored out of line unless the request asks for it, and records the requests.
type journalServer struct {
	waymarkv1.UnimplementedRunServiceServer
	errorScript
}

func (s *journalServer) GetJournal(_ context.Context, req *waymarkv1.GetJournalRequest) (*waymarkv1.GetJournalResponse, error) {
	if err := s.next(req); err != nil {
		return nil, err
	}
	if req.GetPageToken() == "" {
		entry := &waymarkv1.JournalEntry{Seq: 0, Kind: "step", Name: "big"}
		if req.GetIncludeLargePayloads() {
			entry.Payload = structpb.NewStringValue("a large result")
		} else {
			entry.PayloadRef = &waymarkv1.PayloadRef{Sha256: "ab12", SizeBytes: 5 << 20}
		}
		return &waymarkv1.GetJournalResponse{Entries: []*waymarkv1.JournalEntry{entry}, NextPageToken: "next"}, nil
	}
	return &waymarkv1.GetJournalResponse{Entries: []*waymarkv1.JournalEntry{{Seq: 1, Kind: "status"}}}, nil
}

// Journal asks for large payloads on every page only when IncludeLargePayloads is set; without it
// an out-of-line entry comes with its reference.
func TestJournalIncludeLargePayloads(t *testing.T) {
	s := &journalServer{}
	addr := serveGRPC(t, func(srv *grpc.Server) { waymarkv1.RegisterRunServiceServer(srv, s) })
	client := dialTest(t, addr)
	ctx := context.Background()

	var refs []*waymarkv1.PayloadRef
	for entry, err := range client.Journal(ctx, "run-1", JournalOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, entry.GetPayloadRef())
	}
	if len(refs) != 2 || refs[0].GetSizeBytes() != 5<<20 || refs[1] != nil {
		t.Fatalf("references by default: got %v", refs)
	}

	var payloads []string
	for entry, err := range client.Journal(ctx, "run-1", JournalOptions{IncludeLargePayloads: true}) {
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, entry.GetPayload().GetStringValue())
	}
	if len(payloads) != 2 || payloads[0] != "a large result" {
		t.Fatalf("payloads when asked: got %q", payloads)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	asked := []bool{}
	for _, r := range s.requests {
		asked = append(asked, r.(*waymarkv1.GetJournalRequest).GetIncludeLargePayloads())
	}
	if len(asked) != 4 || asked[0] || asked[1] || !asked[2] || !asked[3] {
		t.Fatalf("include_large_payloads per request: got %v, want [false false true true]", asked)
	}
}
