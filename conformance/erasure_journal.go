package conformance

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/erasure"
	"github.com/reqlog/reqlog/ports"
)

// ErasureJournalMaker returns a fresh, empty journal for one subtest and
// registers its own cleanup with t.Cleanup, as StoreMaker does.
type ErasureJournalMaker func(ctx context.Context, t *testing.T) (ports.ErasureJournal, error)

// RunErasureJournalTests checks newJournal's journals against the
// ports.ErasureJournal contract: an erasure round trips every field, a save
// replaces it, another account's id is not found, the audit list pages
// newest first, and AllErasures holds every account's.
func RunErasureJournalTests(t *testing.T, newJournal ErasureJournalMaker) {
	runOnFreshStores(t, "ErasureJournalMaker", newJournal, []storeCase[ports.ErasureJournal]{
		{"RoundTripEveryFieldAndReplace", testErasureRoundTrip},
		{"AnotherAccountsErasureIsNotFound", testErasureOtherAccount},
		{"ListNewestFirstByPages", testErasureList},
	})
}

// fullErasure sets every field of an erasure of account.
func fullErasure(t *testing.T, account string) erasure.Erasure {
	t.Helper()
	id, err := erasure.NewID()
	if err != nil {
		t.Fatal(err)
	}
	at := domain.Micro(time.Now())
	return erasure.Erasure{ID: id, Account: account, KeyID: "key_0123456789ab", Reason: "ticket ü 42", State: erasure.StateDeleted,
		Future: erasure.FutureRedact, Hashes: []string{subjectAna, subjectBob}, Subjects: 2,
		Message: &erasure.MessageRef{ID: "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f1011", Domain: domain.DomainTest, CreatedAt: at.Add(-time.Hour), Partition: "day-1"},
		Counts:  erasure.Counts{Hidden: 3, Deleted: 3, Reapplied: 1},
		Partitions: []erasure.PartitionCounts{{Partition: "day-1", Counts: erasure.Counts{Hidden: 1, Deleted: 1}},
			{Partition: "day-2", Counts: erasure.Counts{Hidden: 2, Deleted: 2, Reapplied: 1}}},
		At: at, HiddenAt: at.Add(time.Millisecond), DeletedAt: at.Add(time.Hour)}
}

func mustSaveErasure(t *testing.T, j ports.ErasureJournal, e erasure.Erasure) {
	t.Helper()
	if err := j.SaveErasure(t.Context(), e); err != nil {
		t.Fatalf("SaveErasure(%s): %v", e.ID, err)
	}
}

func assertErasure(t *testing.T, j ports.ErasureJournal, want erasure.Erasure) {
	t.Helper()
	got, err := j.Erasure(t.Context(), want.Account, want.ID)
	if err != nil {
		t.Fatalf("Erasure(%s): %v", want.ID, err)
	}
	if !got.At.Equal(want.At) || !got.HiddenAt.Equal(want.HiddenAt) || !got.DeletedAt.Equal(want.DeletedAt) {
		t.Errorf("Erasure(%s) times = %s, %s, %s; want %s, %s, %s", want.ID, got.At, got.HiddenAt, got.DeletedAt, want.At, want.HiddenAt, want.DeletedAt)
	}
	got.At, got.HiddenAt, got.DeletedAt = want.At, want.HiddenAt, want.DeletedAt
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Erasure(%s) = %+v\nwant %+v", want.ID, got, want)
	}
}

func testErasureRoundTrip(t *testing.T, j ports.ErasureJournal) {
	e := fullErasure(t, scopeLive.Account)
	e.State, e.Deleted, e.DeletedAt = erasure.StateHidden, 0, time.Time{}
	mustSaveErasure(t, j, e)
	assertErasure(t, j, e)
	e.State, e.Deleted, e.DeletedAt = erasure.StateDeleted, 3, e.At.Add(time.Hour)
	mustSaveErasure(t, j, e)
	assertErasure(t, j, e)
	all, err := j.AllErasures(t.Context())
	if err != nil || len(all) != 1 {
		t.Errorf("AllErasures after two saves of one = %d, %v; want 1", len(all), err)
	}
}

func testErasureOtherAccount(t *testing.T, j ports.ErasureJournal) {
	e := fullErasure(t, scopeLive.Account)
	mustSaveErasure(t, j, e)
	for _, k := range [][2]string{{scopeOtherLive.Account, e.ID}, {e.Account, "0193a0c4-0000-7000-8000-000000000000"}} {
		if _, err := j.Erasure(t.Context(), k[0], k[1]); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("Erasure(%s, %s) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	if es, err := j.Erasures(t.Context(), scopeOtherLive.Account, "", 10); err != nil || len(es) != 0 {
		t.Errorf("Erasures of another account = %d, %v; want none", len(es), err)
	}
}

func testErasureList(t *testing.T, j ports.ErasureJournal) {
	var saved []erasure.Erasure
	for range 5 {
		e := fullErasure(t, scopeLive.Account)
		mustSaveErasure(t, j, e)
		saved = append(saved, e)
	}
	mustSaveErasure(t, j, fullErasure(t, scopeOtherLive.Account))
	erasure.SortNewestFirst(saved)
	var got []string
	before := ""
	for range 5 {
		page, err := j.Erasures(t.Context(), scopeLive.Account, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			got = append(got, e.ID)
		}
		if len(page) < 2 {
			break
		}
		before = page[len(page)-1].ID
	}
	var want []string
	for _, e := range saved {
		want = append(want, e.ID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Erasures by pages of 2 = %v\nwant %v", got, want)
	}
	all, err := j.AllErasures(t.Context())
	if err != nil || len(all) != 6 {
		t.Errorf("AllErasures = %d, %v; want 6", len(all), err)
	}
}
