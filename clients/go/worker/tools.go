package worker

// Declaring tools: Register, the options of a declaration, and the Task a tool's context carries.

import (
	"context"
	"fmt"
	"reflect"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"github.com/waymark-dev/waymark/clients/go/waymark"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// ToolOption sets a field of a tool's declaration.
type ToolOption func(*waymarkv1.ToolDeclaration)

// Description is what the tool does; agents' models read it.
func Description(text string) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Description = text }
}

// ReadOnly declares that the tool does not change the world: it runs in dry runs too. Tools
// are mutating by default (skipped in dry runs, answering {"__dryRun": true}).
func ReadOnly() ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { f := false; d.Mutating = &f }
}

// Policy says who may call the tool without asking: waymarkv1.ToolPolicy_TOOL_POLICY_ALLOW
// (default), _ASK (the run parks on an approval first) or _DENY.
func Policy(p waymarkv1.ToolPolicy) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Policy = p }
}

// InputSchema replaces the JSON Schema derived from the input type (anything encoding/json
// marshals: a map, a json.RawMessage, a struct).
func InputSchema(schema any) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.InputSchema = mustValue("InputSchema", schema) }
}

// OutputSchema replaces the JSON Schema derived from the output type.
func OutputSchema(schema any) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.OutputSchema = mustValue("OutputSchema", schema) }
}

// Timeout bounds a call in all, from its journaling to its result, across redispatches and
// while no worker is connected; default the server's (10 minutes).
func Timeout(t time.Duration) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.Timeout = durationpb.New(t) }
}

// HeartbeatTimeout is how long a task may go without a heartbeat before the worker loses it;
// default the server's (30 s). The worker heartbeats every third of it while the tool runs.
func HeartbeatTimeout(t time.Duration) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.HeartbeatTimeout = durationpb.New(t) }
}

// MaxAttempts is how many dispatches a call gets when the tool returns retryable errors;
// default the server's (3).
func MaxAttempts(n uint32) ToolOption {
	return func(d *waymarkv1.ToolDeclaration) { d.MaxAttempts = n }
}

func mustValue(what string, schema any) *structpb.Value {
	v, err := waymark.ToValue(schema)
	if err != nil {
		panic(fmt.Sprintf("worker: %s: %v", what, err))
	}
	return v
}

// Register adds a tool to w: fn is called with the task's input decoded into In (as
// encoding/json decodes), and its Out is the call's result. The input and output JSON Schemas
// are derived from In and Out (SchemaOf) unless InputSchema or OutputSchema are given. It is a
// function, not a method, because Go methods cannot have type parameters. Register panics on an
// empty or repeated name, or after Run started: these are mistakes in the program.
func Register[In, Out any](w *Worker, name string, fn func(context.Context, In) (Out, error), opts ...ToolOption) {
	decl := &waymarkv1.ToolDeclaration{
		Name:         name,
		InputSchema:  mustValue("input schema", SchemaOf(reflect.TypeFor[In]())),
		OutputSchema: mustValue("output schema", SchemaOf(reflect.TypeFor[Out]())),
		Queue:        w.opts.Queue,
	}
	for _, opt := range opts {
		opt(decl)
	}
	call := func(ctx context.Context, input *structpb.Value) (*structpb.Value, error) {
		var in In
		if err := waymark.DecodeValue(input, &in); err != nil {
			return nil, Named("InvalidInput", NonRetryable(fmt.Errorf("worker: the input of %s does not decode into %T: %w", name, in, err)))
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		v, err := waymark.ToValue(out)
		if err != nil {
			return nil, Named("InvalidOutput", NonRetryable(err))
		}
		if v == nil {
			v = structpb.NewNullValue()
		}
		return v, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if name == "" {
		panic("worker: Register needs a tool name")
	}
	if _, dup := w.tools[name]; dup {
		panic("worker: tool " + name + " is registered twice")
	}
	w.tools[name] = &tool{decl: decl, call: call}
	w.order = append(w.order, name)
}

// Task is the remote tool call a tool's context carries.
type Task struct {
	ID        string
	RunID     string
	Tool      string
	Namespace string
	// IdempotencyKey is the same on every redispatch of the call: pass it to the downstream API.
	IdempotencyKey string
	// Attempt is 1 for the first dispatch, one more for each redispatch.
	Attempt uint32
	// Deadline is when the call times out; the tool's context has it as its deadline.
	Deadline time.Time
	// Traceparent is the W3C trace context of this task attempt's span when the server traces
	// (docs/tracing.md), or "": give it to an OpenTelemetry propagator to parent the tool's spans,
	// or send it on the calls the tool makes.
	Traceparent string
}

type taskKey struct{}

// TaskFrom returns the task a tool's context carries.
func TaskFrom(ctx context.Context) (Task, bool) {
	t, ok := ctx.Value(taskKey{}).(Task)
	return t, ok
}

// IdempotencyKey is the idempotency key of the task a tool's context carries ("" outside a
// tool): the same on every redispatch of the call, so a downstream API that dedups on it
// applies the call once however often it is delivered.
func IdempotencyKey(ctx context.Context) string {
	t, _ := TaskFrom(ctx)
	return t.IdempotencyKey
}
