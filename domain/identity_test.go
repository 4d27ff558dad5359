package domain

import (
	"regexp"
	"testing"

	"github.com/google/uuid"
)

var referencePattern = regexp.MustCompile(`^msg_[A-Za-z0-9]{12}$`)

func TestNewIdentity(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 2000; i++ {
		id, err := NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := uuid.Parse(id.ID)
		if err != nil || parsed.Version() != 7 || parsed.String() != id.ID {
			t.Fatalf("id %q is not a canonical UUID v7", id.ID)
		}
		if id.ID <= prev {
			t.Fatalf("ids not time-ordered: %s after %s", id.ID, prev)
		}
		prev = id.ID
		if !referencePattern.MatchString(id.Reference) || !IsReference(id.Reference) {
			t.Fatalf("reference %q has the wrong form", id.Reference)
		}
		if seen[id.ID] || seen[id.Reference] {
			t.Fatalf("duplicate identity %v", id)
		}
		seen[id.ID], seen[id.Reference] = true, true
	}
}

func TestDerivedIdentity(t *testing.T) {
	scope := Scope{Account: "acme", Domain: DomainLive}
	a := DerivedIdentity(scope, "key-1", 0)
	if a != DerivedIdentity(scope, "key-1", 0) {
		t.Fatal("same inputs gave different identities")
	}
	parsed, err := uuid.Parse(a.ID)
	if err != nil || parsed.Version() != 5 {
		t.Fatalf("derived id %q is not a name-based UUID", a.ID)
	}
	if !IsReference(a.Reference) {
		t.Fatalf("derived reference %q has the wrong form", a.Reference)
	}
	for _, other := range []Identity{
		DerivedIdentity(scope, "key-1", 1),
		DerivedIdentity(scope, "key-2", 0),
		DerivedIdentity(Scope{Account: "acme", Domain: DomainTest}, "key-1", 0),
		DerivedIdentity(Scope{Account: "globex", Domain: DomainLive}, "key-1", 0),
	} {
		if other.ID == a.ID || other.Reference == a.Reference {
			t.Errorf("identity %v collides with %v", other, a)
		}
	}
}

func TestCanonicalID(t *testing.T) {
	id, ok := CanonicalID("0190F5A2-3B4C-7D8E-9F00-112233445566")
	if !ok || id != "0190f5a2-3b4c-7d8e-9f00-112233445566" {
		t.Errorf("upper-case UUID: %q %v", id, ok)
	}
	for _, bad := range []string{"", "msg_abc", "urn:uuid:0190f5a2-3b4c-7d8e-9f00-112233445566", "{0190f5a2-3b4c-7d8e-9f00-112233445566}"} {
		if _, ok := CanonicalID(bad); ok {
			t.Errorf("CanonicalID(%q) accepted", bad)
		}
	}
}
