package conformance

import (
	"context"
	"testing"
)

// storeCase is one subtest of a suite over a store of type S.
type storeCase[S any] struct {
	name string
	run  func(t *testing.T, s S)
}

// runOnFreshStores runs each case as a subtest on a store of its own from
// newStore, failing the subtest naming maker when one cannot be made.
func runOnFreshStores[S any](t *testing.T, maker string, newStore func(ctx context.Context, t *testing.T) (S, error), cases []storeCase[S]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newStore(t.Context(), t)
			if err != nil {
				t.Fatalf("%s: %v", maker, err)
			}
			tc.run(t, s)
		})
	}
}
