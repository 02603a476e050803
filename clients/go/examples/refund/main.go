// Command refund is the example of clients/go/README.md as an application: start a refund run,
// follow its events, approve it when it parks, wait for its result. Run it against `npm start`
// (waymark dev): `go run ./examples/refund [address] [order]`. Against a server with TLS and
// authentication it reads the variables the CLI reads: WAYMARK_CA_FILE (TLS, trusting that CA),
// WAYMARK_TOKEN (the API key) and WAYMARK_NAMESPACE. test/clients/packaging.test.ts copies it
// into a fresh module outside the repository, which uses this client through a `replace`, and
// runs `go vet` and the program there against a live server; test/clients/refund-tls.test.ts
// runs it over TLS with a key.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
)

func main() {
	address, order := waymark.DefaultAddress, "A-1001"
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	if len(os.Args) > 2 {
		order = os.Args[2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// WithFailFast: Dial fails with *waymark.UnavailableError when no server answers in 10s.
	options := []waymark.Option{waymark.WithFailFast(10 * time.Second)}
	if caFile := os.Getenv("WAYMARK_CA_FILE"); caFile != "" {
		config, err := waymark.TLSConfig(waymark.TLSFiles{CAFile: caFile})
		if err != nil {
			log.Fatal(err)
		}
		options = append(options, waymark.WithTLS(config))
	}
	if token := os.Getenv("WAYMARK_TOKEN"); token != "" {
		options = append(options, waymark.WithToken(token)) // authorization: Bearer <key> on every call
	}
	if namespace := os.Getenv("WAYMARK_NAMESPACE"); namespace != "" {
		options = append(options, waymark.WithNamespace(namespace))
	}
	client, err := waymark.Dial(address, options...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	started, err := client.StartRun(ctx, "refund", map[string]any{"order": order, "amount": 42.5},
		waymark.StartOptions{IdempotencyKey: "refund-" + order})
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
			if body.StatusChanged.GetStatus() == waymarkv1.RunStatus_RUN_STATUS_SUSPENDED {
				for approval, err := range client.ListApprovals(ctx, waymark.ApprovalFilter{RunID: runID}) {
					if err != nil {
						log.Fatal(err)
					}
					fmt.Println("approving:", approval.GetTitle())
					if _, err := client.Approve(ctx, approval.GetId(), waymark.Decision{By: "ana@example.com"}); err != nil {
						log.Fatal(err)
					}
				}
			}
		}
	}

	// Result waits for the end (here it has come already) and returns the output.
	output, err := client.Result(ctx, runID)
	var failed *waymark.RunFailedError
	if errors.As(err, &failed) {
		log.Fatalf("the refund did not go through: %v", failed)
	} else if err != nil {
		log.Fatal(err)
	}
	var result map[string]any
	if err := waymark.DecodeValue(output, &result); err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", result)
}
