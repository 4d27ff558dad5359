package memory

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// table holds one kind of alerting record of an account (rules, endpoints) by
// id, copied in and out; the AlertStore's mutex guards it.
type table[T any] struct {
	what  string // "rule", "endpoint": named in errors
	byID  map[string]T
	key   func(T) tableKey
	clone func(T) T
}

// tableKey is what a table reads of a record.
type tableKey struct {
	id      string
	scope   domain.Scope
	created time.Time
}

func (t *table[T]) notFound(id string) error {
	return fmt.Errorf("memory: %s %q: %w", t.what, id, ports.ErrNotFound)
}

func (t *table[T]) create(v T) error {
	id := t.key(v).id
	if _, taken := t.byID[id]; taken {
		return fmt.Errorf("memory: %s %q: %w", t.what, id, ports.ErrExists)
	}
	t.byID[id] = t.clone(v)
	return nil
}

// update replaces a stored record of the same scope.
func (t *table[T]) update(v T) error {
	k := t.key(v)
	if old, ok := t.byID[k.id]; !ok || t.key(old).scope != k.scope {
		return t.notFound(k.id)
	}
	t.byID[k.id] = t.clone(v)
	return nil
}

func (t *table[T]) get(scope domain.Scope, id string) (T, error) {
	v, ok := t.byID[id]
	if !ok || t.key(v).scope != scope {
		var zero T
		return zero, t.notFound(id)
	}
	return t.clone(v), nil
}

// list returns the records of scope (of every scope when nil), oldest first.
func (t *table[T]) list(scope *domain.Scope) []T {
	out := []T{}
	for _, v := range t.byID {
		if scope == nil || t.key(v).scope == *scope {
			out = append(out, t.clone(v))
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		ka, kb := t.key(a), t.key(b)
		return cmp.Or(ka.created.Compare(kb.created), cmp.Compare(ka.id, kb.id))
	})
	return out
}

func (t *table[T]) delete(scope domain.Scope, id string) error {
	if _, err := t.get(scope, id); err != nil {
		return err
	}
	delete(t.byID, id)
	return nil
}
