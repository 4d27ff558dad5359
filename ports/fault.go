package ports

import "errors"

// A Fault is an error that names the part of a store that is damaged, in
// words a client may read: a file's name and what is wrong with it, never
// a path. The HTTP API puts it in its 503 and in /readyz's reply. A
// store's error that carries one wraps ErrUnavailable too: what needs the
// damaged part is refused until an operator acts.
type Fault interface {
	error
	Fault() string
}

// Faults lists what the faults err carries say, a joined error's each.
func Faults(err error) []string {
	switch e := err.(type) {
	case nil:
		return nil
	case Fault:
		return []string{e.Fault()}
	case interface{ Unwrap() []error }:
		var all []string
		for _, inner := range e.Unwrap() {
			all = append(all, Faults(inner)...)
		}
		return all
	}
	return Faults(errors.Unwrap(err))
}
