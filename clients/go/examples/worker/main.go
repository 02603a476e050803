// Command worker serves the refund example's charge_back tool from a Go service (a remote tool,
// docs/workers.md): `go run ./examples/worker [address]`. It registers charge_back, long-polls
// for tasks and POSTs each refund to WAYMARK_EXAMPLE_SINK_URL (when set) with the task's
// idempotency key in the Idempotency-Key header, as a payment provider integration would. It
// reads WAYMARK_CA_FILE, WAYMARK_TOKEN and WAYMARK_NAMESPACE as the CLI does, and stops
// gracefully on SIGINT or SIGTERM (the task in progress finishes first).
// WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT (a Go duration, e.g. 2s) declares a shorter heartbeat
// timeout than the server's 30 s, so that test/clients/remote-refund.test.ts, which kills a
// worker holding the task, sees another worker take it soon.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waymark-dev/waymark/clients/go/waymark"
	"github.com/waymark-dev/waymark/clients/go/worker"
)

// ChargeIn is charge_back's input; its JSON Schema is derived from the type.
type ChargeIn struct {
	Order  string  `json:"order" description:"the order to refund"`
	Amount float64 `json:"amount" description:"the amount, in the order's currency"`
}

// ChargeOut is charge_back's result.
type ChargeOut struct {
	RefundID string  `json:"refundId"`
	Order    string  `json:"order"`
	Amount   float64 `json:"amount"`
}

func chargeBack(ctx context.Context, in ChargeIn) (ChargeOut, error) {
	if in.Amount <= 0 {
		// Retrying cannot fix it: the call fails at once.
		return ChargeOut{}, worker.NonRetryable(fmt.Errorf("amount must be positive, got %v", in.Amount))
	}
	key := worker.IdempotencyKey(ctx) // the same on every redispatch of this call
	if sink := os.Getenv("WAYMARK_EXAMPLE_SINK_URL"); sink != "" {
		body, _ := json.Marshal(in)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sink, bytes.NewReader(body))
		if err != nil {
			return ChargeOut{}, err
		}
		req.Header.Set("content-type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return ChargeOut{}, err // retryable: the engine dispatches it again, same key
		}
		_ = res.Body.Close()
		if res.StatusCode >= 400 {
			return ChargeOut{}, fmt.Errorf("the payment provider answered %s", res.Status)
		}
	}
	// A provider derives the refund from the key, so a redispatch returns the same refund.
	return ChargeOut{RefundID: "rf_" + key[max(0, len(key)-16):], Order: in.Order, Amount: in.Amount}, nil
}

func main() {
	address := waymark.DefaultAddress
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	var options []waymark.Option
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

	tool := []worker.ToolOption{worker.Description("Refunds an order through the payment provider.")}
	if s := os.Getenv("WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			log.Fatalf("WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT: %v", err)
		}
		tool = append(tool, worker.HeartbeatTimeout(d))
	}
	w := worker.New(client, worker.Options{})
	worker.Register(w, "charge_back", chargeBack, tool...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}
