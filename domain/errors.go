package domain

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrTooLarge marks input beyond a configured size limit (HTTP 413).
var ErrTooLarge = errors.New("too large")

// FieldError names one field at fault and what is wrong with it.
type FieldError struct {
	Field   string // path such as "response.status_code" or "[3].method"
	Message string
}

// ValidationError is bad input: a summary for a person plus the fields at fault.
// Nothing is stored when a submission yields one.
type ValidationError struct {
	Message string
	Fields  []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + " " + f.Message
	}
	return e.Message + ": " + strings.Join(parts, "; ")
}

// invalid returns a ValidationError without field details.
func invalid(format string, args ...any) *ValidationError {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

// FieldErrors collects the problems of one submission or query.
type FieldErrors struct {
	prefix string
	List   []FieldError
}

// Add records what is wrong with field.
func (fe *FieldErrors) Add(field, format string, args ...any) {
	fe.List = append(fe.List, FieldError{Field: fe.prefix + field, Message: fmt.Sprintf(format, args...)})
}

// Err is the problems found as a ValidationError with message, sorted by
// field, or nil when there are none.
func (fe *FieldErrors) Err(message string) error {
	if len(fe.List) == 0 {
		return nil
	}
	list := slices.Clone(fe.List)
	slices.SortStableFunc(list, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return &ValidationError{Message: message, Fields: list}
}
