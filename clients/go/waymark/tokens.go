package waymark

import (
	"context"
	"iter"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
)

// TokenKind says what a Token is.
type TokenKind int

const (
	// TokenAttempt: an attempt of a model call began. Supersedes names the older attempt of the
	// same call it replaces (that one was aborted: its replica died); drop the text collected for it.
	TokenAttempt TokenKind = iota + 1
	// TokenText: text the model produced.
	TokenText
	// TokenToolInput: a piece of the arguments of a tool call the model is making.
	TokenToolInput
	// TokenResult: the call's result was journaled; Text is the recorded answer, the truth.
	TokenResult
)

func (k TokenKind) String() string {
	switch k {
	case TokenAttempt:
		return "attempt"
	case TokenText:
		return "text"
	case TokenToolInput:
		return "tool-input"
	case TokenResult:
		return "result"
	}
	return "unknown"
}

// Token is one item of a token stream (Tokens): an attempt's start, a delta, or a call's result.
type Token struct {
	Kind TokenKind
	// CallSeq is the seq of the model call's running entry: which call this belongs to.
	CallSeq int64
	// Attempt is the call's attempt (the lease epoch it ran under; a redispatch after a crash has
	// a higher one). For TokenResult: the last attempt seen, -1 when none was.
	Attempt int64
	// Supersedes (TokenAttempt): the older attempt of the same call this one replaces, -1 when none.
	Supersedes int64
	// Index (TokenText, TokenToolInput) is the position within the attempt, from 1 (0 is its
	// start); a gap means deltas were lost (the result still has all of it).
	Index int32
	// Text is the delta's text, or the recorded answer for TokenResult.
	Text string
	// ToolCallID and ToolName name the tool call of a TokenToolInput.
	ToolCallID, ToolName string
	// Offset (TokenText, TokenToolInput) is the stream's delta cursor: pass the last one as
	// TokensOptions.AfterOffset to resume in a new stream.
	Offset int64
}

// TokensOptions select and shape a token stream.
type TokensOptions struct {
	EventsOptions
	// AfterOffset starts after this delta offset (the last Token.Offset a previous stream
	// delivered); nil starts at the run's first delta still kept.
	AfterOffset *int64
}

// Tokens streams the text of a run's model calls as the models write it (docs/clients.md "Token
// streams"): for each call and attempt a TokenAttempt, then its deltas (TokenText,
// TokenToolInput), and a TokenResult when the call's result is journaled. A TokenAttempt whose
// Supersedes is set says that older attempt was aborted (its replica died mid-call): drop its
// text. It reconnects as Events does and resumes after the last seq and delta offset it
// delivered, so across reconnects and replicas every delta arrives once and in order. Iteration
// ends when the run ends (or parks, without FollowSuspended), with an error as Events', or when
// the loop breaks.
//
//	text := map[int64]string{}
//	for tok, err := range client.Tokens(ctx, runID, waymark.TokensOptions{}) {
//		if err != nil { return err }
//		switch tok.Kind {
//		case waymark.TokenAttempt: text[tok.CallSeq] = ""
//		case waymark.TokenText: text[tok.CallSeq] += tok.Text
//		}
//	}
func (c *Client) Tokens(ctx context.Context, runID string, opts TokensOptions) iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		var t tokenizer
		for ev, err := range c.followEvents(ctx, runID, opts.EventsOptions, true, opts.AfterOffset) {
			if err != nil {
				yield(Token{}, err)
				return
			}
			for _, tok := range t.tokens(ev) {
				if !yield(tok, nil) {
					return
				}
			}
		}
	}
}

// tokenizer turns the events of a stream with deltas into Tokens; it keeps the newest attempt
// seen per call.
type tokenizer struct {
	current map[int64]int64
}

func (t *tokenizer) tokens(ev *waymarkv1.RunEvent) []Token {
	if t.current == nil {
		t.current = map[int64]int64{}
	}
	if e := ev.GetEntry(); e != nil {
		// A model call's result: its ok entry, pointing at the call's running entry.
		if e.GetKind() != "model" || e.GetStatus() != waymarkv1.EntryStatus_ENTRY_STATUS_OK || e.RefSeq == nil {
			return nil
		}
		attempt, seen := t.current[e.GetRefSeq()]
		if !seen {
			attempt = -1
		}
		text := e.GetPayload().GetStructValue().GetFields()["text"].GetStringValue()
		return []Token{{Kind: TokenResult, CallSeq: e.GetRefSeq(), Attempt: attempt, Supersedes: -1, Text: text}}
	}
	d := ev.GetModelDelta()
	if d == nil {
		return nil
	}
	newest, seen := t.current[d.GetCallSeq()]
	if seen && d.GetAttempt() < newest {
		return nil // a stale replica's late delta of an aborted attempt
	}
	supersedes := int64(-1)
	if seen {
		supersedes = newest
	}
	start := Token{Kind: TokenAttempt, CallSeq: d.GetCallSeq(), Attempt: d.GetAttempt(), Supersedes: supersedes}
	if d.GetKind() == waymarkv1.ModelDeltaKind_MODEL_DELTA_KIND_ATTEMPT_START {
		if seen && newest == d.GetAttempt() {
			return nil
		}
		t.current[d.GetCallSeq()] = d.GetAttempt()
		return []Token{start}
	}
	var out []Token
	if !seen || newest != d.GetAttempt() {
		// Its start was swept, or read before this stream began: the attempt still counts as begun.
		t.current[d.GetCallSeq()] = d.GetAttempt()
		out = append(out, start)
	}
	kind := TokenText
	if d.GetKind() == waymarkv1.ModelDeltaKind_MODEL_DELTA_KIND_TOOL_INPUT {
		kind = TokenToolInput
	}
	return append(out, Token{
		Kind: kind, CallSeq: d.GetCallSeq(), Attempt: d.GetAttempt(), Supersedes: -1, Index: d.GetIndex(),
		Text: d.GetText(), ToolCallID: d.GetToolCallId(), ToolName: d.GetToolName(), Offset: d.GetOffset(),
	})
}
