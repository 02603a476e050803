package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
)

// A live test against the real `waymark server` test/clients/clients.test.ts starts (it sets
// WAYMARK_ADDRESS; without it the test skips): the workflow remote_probe (test/clients/workflows.ts)
// calls tools this worker serves. A retryable error is dispatched again with the same idempotency
// key and the next attempt; a NonRetryable one fails the call at once, with its name, after one
// attempt.
func TestLiveRetryableAndNonRetryableFailures(t *testing.T) {
	address := os.Getenv("WAYMARK_ADDRESS")
	if address == "" {
		t.Skip("WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a real server")
	}
	client, err := waymark.Dial(address, waymark.WithFailFast(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	flaky, declines := "go_flaky_"+hex.EncodeToString(suffix), "go_declines_"+hex.EncodeToString(suffix)
	var (
		mu       sync.Mutex
		keys     []string
		attempts []uint32
		declined int
	)
	w := New(client, Options{Logger: quiet})
	Register(w, flaky, func(ctx context.Context, in ChargeIn) (ChargeOut, error) {
		task, _ := TaskFrom(ctx)
		mu.Lock()
		keys, attempts = append(keys, task.IdempotencyKey), append(attempts, task.Attempt)
		first := len(keys) == 1
		mu.Unlock()
		if first {
			return ChargeOut{}, errors.New("the provider timed out") // retryable
		}
		return ChargeOut{RefundID: "rf_" + in.Order}, nil
	})
	Register(w, declines, func(context.Context, ChargeIn) (ChargeOut, error) {
		mu.Lock()
		declined++
		mu.Unlock()
		return ChargeOut{}, NonRetryable(Named("CardDeclined", errors.New("card declined")))
	})
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// Runs can call the tools once the server lists them with a live worker.
	for served := 0; served < 2; {
		if ctx.Err() != nil {
			t.Fatal("the tools were never listed as served")
		}
		res, err := client.Workers.ListTools(ctx, &waymarkv1.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		served = 0
		for _, tool := range res.GetTools() {
			if name := tool.GetDeclaration().GetName(); (name == flaky || name == declines) && tool.GetLiveWorkers() > 0 {
				served++
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	probe := func(tool string) map[string]any {
		t.Helper()
		started, err := client.StartRun(ctx, "remote_probe", map[string]any{"tool": tool, "args": map[string]any{"order": "go-remote-1", "amount": 1}}, waymark.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		output, err := client.Result(ctx, started.GetRun().GetId())
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := waymark.DecodeValue(output, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	if out := probe(flaky); out["ok"].(map[string]any)["refundId"] != "rf_go-remote-1" {
		t.Fatalf("flaky: %v", out)
	}
	mu.Lock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] || attempts[0] >= attempts[1] {
		t.Fatalf("the retry must carry the same key and a later attempt: keys %v, attempts %v", keys, attempts)
	}
	mu.Unlock()

	out := probe(declines)
	if out["failed"] != "EFFECT_FAILED" || out["errorName"] != "CardDeclined" || out["errorMessage"] != "card declined" {
		t.Fatalf("declines: %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if declined != 1 {
		t.Fatalf("a non-retryable failure was dispatched %d times", declined)
	}
}
