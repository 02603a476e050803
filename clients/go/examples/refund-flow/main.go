// Command refund-flow is the flow example of clients/go/README.md as an application: register
// the refund flow (a declarative flow written in YAML: approve, branch on the decision, charge
// back, end), start a run of it, follow its events, approve it when it parks, print its result.
// No TypeScript and no redeploy: the flow lives in the server's store. Run it against
// `npm start` (waymark dev): `go run ./examples/refund-flow [address] [order]`; it reads
// WAYMARK_CA_FILE, WAYMARK_TOKEN and WAYMARK_NAMESPACE as examples/refund does.
// test/clients/flow-clients.test.ts runs it, once plainly and once with its server killed
// (SIGKILL) while the charge_back tool is in flight.
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

// refundFlow is examples/refund.ts as a flow, in the protobuf JSON form of waymark.v1.Flow written
// as YAML (proto field names work as well as lowerCamelCase ones). `charge_back` is a tool the
// server registers; "{{ state.x }}" templates read the run's state, and a string that is only
// one template keeps the value's JSON type (amount stays a number).
const refundFlow = `
name: refund-flow
description: Refunds an order after a person approves it.
stateSchema:
  type: object
  properties:
    order: {type: string, minLength: 1}
    amount: {type: number, exclusiveMinimum: 0}
    decision: {type: object}
    refund: {type: object}
  required: [order, amount]
start: approve
nodes:
  - id: approve
    approval:
      title: "Refund ${{ state.amount }} for order {{ state.order }}?"
      deadline: 86400s
      onTimeout: APPROVAL_TIMEOUT_DECISION_DENY
      into: decision
  - {id: approved, branch: {}}
  - id: charge
    tool: {tool: charge_back, arguments: {order: "{{ state.order }}", amount: "{{ state.amount }}"}, into: refund}
  - {id: refunded, end: {output: {status: refunded, refundId: "{{ state.refund.refundId }}"}}}
  - {id: declined, end: {output: {status: declined, by: "{{ state.decision.by }}"}}}
edges:
  - {from: approve, to: approved}
  - {from: approved, to: charge, condition: state.decision.approved}
  - {from: approved, to: declined}
  - {from: charge, to: refunded}
`

func main() {
	address, order := waymark.DefaultAddress, "A-1001"
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	if len(os.Args) > 2 {
		order = os.Args[2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	options := []waymark.Option{waymark.WithFailFast(10 * time.Second)}
	if caFile := os.Getenv("WAYMARK_CA_FILE"); caFile != "" {
		config, err := waymark.TLSConfig(waymark.TLSFiles{CAFile: caFile})
		if err != nil {
			log.Fatal(err)
		}
		options = append(options, waymark.WithTLS(config))
	}
	if token := os.Getenv("WAYMARK_TOKEN"); token != "" {
		options = append(options, waymark.WithToken(token))
	}
	if namespace := os.Getenv("WAYMARK_NAMESPACE"); namespace != "" {
		options = append(options, waymark.WithNamespace(namespace))
	}
	client, err := waymark.Dial(address, options...)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Registering the same content again is a no-op answering the same version, so a program
	// (or a deploy step) may register its flows every time it starts.
	registered, err := client.RegisterFlowDocument(ctx, []byte(refundFlow))
	var invalid *waymark.InvalidFlowError
	if errors.As(err, &invalid) {
		for _, v := range invalid.FieldViolations {
			fmt.Printf("invalid flow: %s: %s\n", v.Field, v.Description)
		}
		os.Exit(1)
	} else if err != nil {
		log.Fatal(err)
	}
	flow := registered.GetFlow()
	fmt.Printf("flow %s version %s %s (created: %t)\n", flow.GetFlow().GetName(), flow.GetVersion(), flow.GetDigest(), registered.GetCreated())

	// A flow starts like a code workflow, by name; the run pins this version's digest.
	started, err := client.StartRun(ctx, "refund-flow", map[string]any{"order": order, "amount": 42.5},
		waymark.StartOptions{IdempotencyKey: "refund-flow-" + order})
	if err != nil {
		log.Fatal(err)
	}
	runID := started.GetRun().GetId()
	fmt.Println("run", runID)

	// The journal shows each node entered and each branch decision (emit entries flow.node and
	// flow.branch) beside the effects: the approval, then charge_back.
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
