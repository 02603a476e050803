// Command tokens follows the text of a run's model calls as the models write it (Client.Tokens,
// docs/clients.md "Token streams") and prints each token as one JSON object a line: an attempt's
// start, each text delta, and each call's journaled result. Through a restart or a crash of the
// server it reconnects by itself and resumes after the last delta it printed; when an attempt
// starts that supersedes another, drop what that older attempt printed.
//
//	go run ./examples/tokens ADDRESS RUN_ID
//
// test/chaos/token-streams.test.ts runs it as a reader while it SIGKILLs the replica making the call.
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/waymark-dev/waymark/clients/go/waymark"
)

// line is what a token prints as: the fields of the TypeScript client's token events.
type line struct {
	Type       string `json:"type"`
	CallSeq    int64  `json:"callSeq"`
	Attempt    *int64 `json:"attempt"`
	Supersedes *int64 `json:"supersedes,omitempty"`
	Index      *int32 `json:"index,omitempty"`
	Offset     *int64 `json:"offset,omitempty"`
	Text       string `json:"text"`
}

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: tokens ADDRESS RUN_ID")
	}
	address, runID := os.Args[1], os.Args[2]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client, err := waymark.Dial(address, waymark.WithFailFast(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	out := json.NewEncoder(os.Stdout)
	opts := waymark.TokensOptions{EventsOptions: waymark.EventsOptions{
		FollowSuspended: true,
		OnReconnect: func(r waymark.Reconnect) {
			log.Printf("reconnecting after seq %d, offset %d: %v", r.AfterSeq, r.AfterOffset, r.Err)
		},
	}}
	for tok, err := range client.Tokens(ctx, runID, opts) {
		if err != nil {
			log.Fatal(err)
		}
		l := line{Type: tok.Kind.String(), CallSeq: tok.CallSeq, Text: tok.Text}
		if tok.Attempt >= 0 {
			l.Attempt = &tok.Attempt
		}
		switch tok.Kind {
		case waymark.TokenAttempt:
			if tok.Supersedes >= 0 {
				l.Supersedes = &tok.Supersedes
			}
		case waymark.TokenText, waymark.TokenToolInput:
			l.Index, l.Offset = &tok.Index, &tok.Offset
		}
		if err := out.Encode(l); err != nil {
			log.Fatal(err)
		}
	}
}
