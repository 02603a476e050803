package worker

import (
	"errors"
	"reflect"
	"time"

	waymarkv1 "github.com/waymark-dev/waymark/clients/go/gen/waymark/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// NonRetryable marks a tool's error as final: the call fails at once with the engine's
// non-retryable failure (the workflow sees a NonRetryableError) instead of being dispatched
// again. Return it for what a retry cannot fix: a declined card, an unknown order, bad input.
// errors.Is and errors.As see through it to err. NonRetryable(nil) is nil.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &toolError{err: err, nonRetryable: true}
}

// RetryAfter marks a tool's error as retryable no sooner than after d (a rate limit's
// Retry-After): the engine dispatches the call again after at least d, while attempts remain.
// RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &toolError{err: err, retryAfter: d}
}

// Named gives a tool's error the name the workflow sees (TaskFailure.name, e.g. "CardDeclined");
// without it the name is the error's Go type name, or "Error" for the standard library's errors.
func Named(name string, err error) error {
	if err == nil {
		return nil
	}
	return &toolError{err: err, name: name}
}

type toolError struct {
	err          error
	nonRetryable bool
	retryAfter   time.Duration
	name         string
}

func (e *toolError) Error() string { return e.err.Error() }
func (e *toolError) Unwrap() error { return e.err }

// IsNonRetryable reports whether err, or an error it wraps, was marked with NonRetryable.
func IsNonRetryable(err error) bool {
	for err != nil {
		var te *toolError
		if !errors.As(err, &te) {
			return false
		}
		if te.nonRetryable {
			return true
		}
		err = te.err
	}
	return false
}

// failure is how a tool's error is reported to the server.
func failure(err error) *waymarkv1.TaskFailure {
	f := &waymarkv1.TaskFailure{Message: err.Error(), NonRetryable: IsNonRetryable(err)}
	for e := err; e != nil; {
		var te *toolError
		if !errors.As(e, &te) {
			break
		}
		if f.Name == "" && te.name != "" {
			f.Name = te.name
		}
		if f.RetryAfter == nil && te.retryAfter > 0 {
			f.RetryAfter = durationpb.New(te.retryAfter)
		}
		e = te.err
	}
	if f.Name == "" {
		f.Name = typeName(err)
	}
	return f
}

// typeName is the name of the first error in err's chain whose type is the application's (not
// the worker's wrappers, nor the standard library's errors.New and fmt.Errorf): "Error" if none.
func typeName(err error) string {
	for ; err != nil; err = errors.Unwrap(err) {
		t := reflect.TypeOf(err)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if _, ours := err.(*toolError); ours || t.Name() == "" {
			continue
		}
		switch t.PkgPath() {
		case "errors", "fmt", "context":
			continue
		}
		return t.Name()
	}
	return "Error"
}
