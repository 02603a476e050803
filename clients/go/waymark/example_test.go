package waymark_test

import (
	"context"
	"fmt"
	"log"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
)

// The refund example (examples/refund/main.go is the whole program): start the run, follow its
// events, approve it when it parks, print the result. (Compiled by `go test`; run it against
// `npm start`.)
func Example() {
	ctx := context.Background()
	client, err := waymark.Dial("127.0.0.1:50051")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	started, err := client.StartRun(ctx, "refund", map[string]any{"order": "A-1001", "amount": 42.5},
		waymark.StartOptions{IdempotencyKey: "refund-A-1001"})
	if err != nil {
		log.Fatal(err)
	}
	runID := started.GetRun().GetId()
	fmt.Println("run", runID)

	// Reconnects by itself if the connection drops, resuming after the last seq it delivered.
	for ev, err := range client.Events(ctx, runID, waymark.EventsOptions{FollowSuspended: true}) {
		if err != nil {
			log.Fatal(err)
		}
		switch body := ev.GetBody().(type) {
		case *waymarkv1.RunEvent_Entry:
			fmt.Printf("%3d %s %s %s\n", ev.GetSeq(), body.Entry.GetKind(), body.Entry.GetName(), body.Entry.GetStatus())
		case *waymarkv1.RunEvent_StatusChanged:
			fmt.Printf("%3d run %s\n", ev.GetSeq(), body.StatusChanged.GetStatus())
			switch body.StatusChanged.GetStatus() {
			case waymarkv1.RunStatus_RUN_STATUS_SUSPENDED:
				for approval, err := range client.ListApprovals(ctx, waymark.ApprovalFilter{RunID: runID}) {
					if err != nil {
						log.Fatal(err)
					}
					fmt.Println("approving:", approval.GetTitle())
					if _, err := client.Approve(ctx, approval.GetId(), waymark.Decision{By: "ana@example.com"}); err != nil {
						log.Fatal(err)
					}
				}
			case waymarkv1.RunStatus_RUN_STATUS_SUCCEEDED:
				var result map[string]any
				if err := waymark.DecodeValue(body.StatusChanged.GetOutput(), &result); err != nil {
					log.Fatal(err)
				}
				fmt.Println("result:", result)
			}
		}
	}
}
