package waymark

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/proto"
)

// Register a flow from YAML, register it again (a no-op answering the same version), register an
// edit (version 2), read both versions back and list them; an invalid flow is refused with its
// field path and nothing stored; an unknown version is *FlowNotFoundError; a code workflow's name
// is *FlowNameTakenError. Running a flow is test/clients/flow-clients.test.ts's must-show.
func TestLiveFlowRegisterGetList(t *testing.T) {
	client := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	name := uniqueKey("go-flow")
	doc := strings.Replace(refundFlowYAML, "name: refund-flow", "name: "+name, 1)
	first, err := client.RegisterFlowDocument(ctx, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !first.GetCreated() || first.GetFlow().GetVersion() != "1" || first.GetFlow().GetDigest() == "" {
		t.Fatalf("first registration: %v", first)
	}
	again, err := client.RegisterFlowDocument(ctx, []byte(doc))
	if err != nil || again.GetCreated() || again.GetFlow().GetVersion() != "1" || again.GetFlow().GetDigest() != first.GetFlow().GetDigest() {
		t.Fatalf("the same content again must be a no-op returning version 1: %v %v", again, err)
	}
	edited, err := ParseFlow([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	edited.Description = "Refunds an order after a person approves it (edited)."
	second, err := client.RegisterFlow(ctx, edited)
	if err != nil || !second.GetCreated() || second.GetFlow().GetVersion() != "2" || second.GetFlow().GetDigest() == first.GetFlow().GetDigest() {
		t.Fatalf("an edit must be version 2 with another digest: %v %v", second, err)
	}

	latest, err := client.GetFlow(ctx, name, "")
	if err != nil || latest.GetVersion() != "2" || !proto.Equal(latest.GetFlow(), edited) {
		t.Fatalf("GetFlow latest: %v %v", latest, err)
	}
	v1, err := client.GetFlow(ctx, name, "1")
	if err != nil || v1.GetDigest() != first.GetFlow().GetDigest() || v1.GetFlow().GetDescription() == edited.Description {
		t.Fatalf("GetFlow version 1: %v %v", v1, err)
	}
	listed, err := client.ListFlows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range listed {
		if f.GetFlow().GetName() == name {
			found++
			if f.GetVersion() != "2" {
				t.Fatalf("ListFlows lists the latest version, got %v", f)
			}
		}
	}
	if found != 1 {
		t.Fatalf("ListFlows has %d entries for %s", found, name)
	}

	broken := proto.Clone(edited).(*waymarkv1.Flow)
	broken.Name = uniqueKey("go-flow-broken")
	broken.Edges[1].Condition = "state.nope == 1"
	_, err = client.RegisterFlow(ctx, broken)
	var invalid *InvalidFlowError
	if !errors.As(err, &invalid) || len(invalid.FieldViolations) == 0 || invalid.FieldViolations[0].Field != "flow.edges[1].condition" {
		t.Fatalf("want InvalidFlowError naming flow.edges[1].condition, got %#v", err)
	}
	var missing *FlowNotFoundError
	if _, err := client.GetFlow(ctx, broken.Name, ""); !errors.As(err, &missing) {
		t.Fatalf("a refused flow must not be stored: %v", err)
	}
	if _, err := client.GetFlow(ctx, name, "9"); !errors.As(err, &missing) || missing.Version != "9" {
		t.Fatalf("want FlowNotFoundError for version 9, got %#v", err)
	}
	taken := proto.Clone(edited).(*waymarkv1.Flow)
	taken.Name = "refund"
	var nameTaken *FlowNameTakenError
	if _, err := client.RegisterFlow(ctx, taken); !errors.As(err, &nameTaken) {
		t.Fatalf("want FlowNameTakenError for a code workflow's name, got %#v", err)
	}
}
