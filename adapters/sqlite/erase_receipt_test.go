package sqlite_test

import (
	"slices"
	"testing"
	"time"

	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain/erasure"
)

// The receipt counts per day file what was hidden and deleted there, by
// the file's name.
func TestTheReceiptCountsPerDayFile(t *testing.T) {
	s := openErasingService(t, t.TempDir(), app.ErasureConfig{}, nil)
	now := time.Now().UTC()
	older := now.Add(-49 * time.Hour)
	const ana = "ana.partitions@example.com"
	s.submitMail(t, ana, 2)
	s.submitMailAt(t, ana, older, 1)
	s.submitMail(t, "bob@example.com", 1)
	ctx := opCtx(t)
	e, err := s.core.Erasures.Erase(ctx, erasureKey, erasure.Request{Subjects: []string{ana}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.core.HidePendingNow(ctx); err != nil {
		t.Fatal(err)
	}
	if e, err = s.core.Erasures.Erasure(ctx, erasureKey, e.ID); err != nil {
		t.Fatal(err)
	}
	dayFile := func(t time.Time) string { return "messages-" + t.Format(time.DateOnly) + ".db" }
	want := []erasure.PartitionCounts{
		{Partition: dayFile(older), Counts: erasure.Counts{Hidden: 1}},
		{Partition: dayFile(now.Add(-time.Minute)), Counts: erasure.Counts{Hidden: 2}},
	}
	if !slices.Equal(e.Partitions, want) {
		t.Errorf("the receipt's partitions after the hide = %+v, want %+v", e.Partitions, want)
	}
	if err := s.core.EraseNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	if e, err = s.core.Erasures.Erasure(ctx, erasureKey, e.ID); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Deleted = want[i].Hidden
	}
	if e.State != erasure.StateDeleted || !slices.Equal(e.Partitions, want) {
		t.Errorf("the receipt after the job: %s, partitions %+v; want deleted, %+v", e.State, e.Partitions, want)
	}
}
