package dayfile

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/reqlog/reqlog/conformance"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// queueTest is a day file whose writer the test holds (a transaction of
// its one connection) while Appends queue behind it.
type queueTest struct {
	t    *testing.T
	f    *File
	now  time.Time
	hold *sql.Tx
}

func newQueueTest(t *testing.T) *queueTest {
	d, now := openTestDir(t), time.Now()
	f, err := d.Acquire(t.Context(), Part{Day: DayOf(now)}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Release)
	// The WAL keeps every frame: the test counts the commits in it.
	if _, err := f.Write.ExecContext(t.Context(), `PRAGMA wal_autocheckpoint=0`); err != nil {
		t.Fatal(err)
	}
	return &queueTest{t: t, f: f, now: now}
}

// messages are n messages of batch's own ids, path their path.
func (q *queueTest) messages(batch, n int, path string) []domain.Message {
	msgs := make([]domain.Message, n)
	for i := range msgs {
		msgs[i] = domain.Message{ID: fmt.Sprintf("0190a0b0-c0d0-7e0f-8a0b-%06d%06d", batch, i), Account: "acme",
			Domain: domain.DomainLive, Name: "shop", Method: "GET", Path: path, StatusCode: 200, CreatedAt: q.now,
			ExpiresAt: q.now.Add(time.Hour)}
	}
	return msgs
}

// holdWriter begins a transaction on the file's writer, which Appends then
// wait for until release.
func (q *queueTest) holdWriter() {
	tx, err := q.f.Write.BeginTx(q.t.Context(), nil)
	if err != nil {
		q.t.Fatal(err)
	}
	q.hold = tx
}

func (q *queueTest) release() {
	if err := q.hold.Rollback(); err != nil {
		q.t.Fatal(err)
	}
}

// appendAsync starts an Append of msgs under ctx; its outcome comes on the
// channel returned.
func (q *queueTest) appendAsync(ctx context.Context, msgs []domain.Message) <-chan error {
	done := make(chan error, 1)
	go func() { done <- q.f.Append(ctx, msgs, true) }()
	return done
}

// leaderWaiting waits until an Append leads and waits for the writer the
// test holds, having taken what was queued then.
func (q *queueTest) leaderWaiting() {
	conformance.WaitFor(q.t, "the leading Append to wait for the writer", func() bool { return q.f.Write.Stats().WaitCount >= 1 })
}

// queued waits until n Appends wait behind the leader.
func (q *queueTest) queued(n int) {
	conformance.WaitFor(q.t, fmt.Sprintf("%d Appends to queue", n), func() bool {
		q.f.appends.mu.Lock()
		defer q.f.appends.mu.Unlock()
		return len(q.f.appends.waiting) == n
	})
}

// stored is how many messages the file holds.
func (q *queueTest) stored() int {
	var n int
	if err := q.f.Read.QueryRowContext(q.t.Context(), `SELECT count(*) FROM messages`).Scan(&n); err != nil {
		q.t.Fatal(err)
	}
	return n
}

// commits counts the commit frames of the file's WAL (those of its current
// salts whose header holds the database's size after the commit).
func (q *queueTest) commits() int {
	wal, err := os.ReadFile(q.f.path + "-wal")
	if err != nil {
		q.t.Fatal(err)
	}
	const walHeader, frameHeader = 32, 24
	if len(wal) < walHeader {
		return 0
	}
	pageSize := int(binary.BigEndian.Uint32(wal[8:]))
	salts := string(wal[16:24])
	n := 0
	for off := walHeader; off+frameHeader+pageSize <= len(wal); off += frameHeader + pageSize {
		if string(wal[off+8:off+16]) != salts {
			break
		}
		if binary.BigEndian.Uint32(wal[off+4:]) != 0 {
			n++
		}
	}
	return n
}

// Appends that wait for the file's writer are written together, in one
// transaction, once the one before them commits: each is answered nil with
// its messages stored, and the WAL holds two commits, not four.
func TestAppendsWaitingForTheWriterShareATransaction(t *testing.T) {
	q := newQueueTest(t)
	if err := q.f.Append(t.Context(), q.messages(0, 1, "/"), true); err != nil { // the statements prepared, the file's class known
		t.Fatal(err)
	}
	before := q.commits()
	q.holdWriter()
	outcomes := []<-chan error{q.appendAsync(t.Context(), q.messages(1, 3, "/"))}
	q.leaderWaiting()
	for batch := 2; batch <= 4; batch++ {
		outcomes = append(outcomes, q.appendAsync(t.Context(), q.messages(batch, 3, "/")))
	}
	q.queued(3)
	q.release()
	for i, done := range outcomes {
		if err := <-done; err != nil {
			t.Errorf("Append %d: %v", i+1, err)
		}
	}
	if got := q.stored(); got != 1+4*3 {
		t.Errorf("%d messages stored, want %d", got, 1+4*3)
	}
	if got := q.commits() - before; got != 2 {
		t.Errorf("the four Appends took %d commits, want 2 (the first alone, the three waiting together)", got)
	}
}

// An Append the file refuses, in a transaction shared with others, fails
// alone: the others are written again each in its own transaction.
func TestAnAppendRefusedInASharedTransactionFailsAlone(t *testing.T) {
	q := newQueueTest(t)
	// The writer's connection refuses the messages of path /refused.
	if _, err := q.f.Write.ExecContext(t.Context(), `CREATE TEMP TRIGGER refuse BEFORE INSERT ON messages
		WHEN NEW.path = '/refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	q.holdWriter()
	first := q.appendAsync(t.Context(), q.messages(1, 2, "/"))
	q.leaderWaiting()
	refused := q.appendAsync(t.Context(), q.messages(2, 2, "/refused"))
	q.queued(1)
	kept := q.appendAsync(t.Context(), q.messages(3, 2, "/"))
	q.queued(2)
	q.release()
	if err := <-first; err != nil {
		t.Errorf("the first Append: %v", err)
	}
	if err := <-refused; err == nil {
		t.Error("the refused Append succeeded")
	}
	if err := <-kept; err != nil {
		t.Errorf("the Append that shared the refused one's transaction failed: %v", err)
	}
	if got := q.stored(); got != 4 {
		t.Errorf("%d messages stored, want the 4 of the two Appends kept", got)
	}
}

// An Append whose caller gives up while it waits for the writer fails with
// ErrUnavailable, and nothing of it is written; the Appends around it are.
func TestAWaitingAppendWhoseCallerGaveUpWritesNothing(t *testing.T) {
	q := newQueueTest(t)
	q.holdWriter()
	first := q.appendAsync(t.Context(), q.messages(1, 2, "/"))
	q.leaderWaiting()
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := q.appendAsync(ctx, q.messages(2, 2, "/"))
	q.queued(1)
	kept := q.appendAsync(t.Context(), q.messages(3, 2, "/"))
	q.queued(2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, ports.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("the Append whose caller gave up: %v, want ErrUnavailable and context.Canceled", err)
	}
	q.release()
	for _, done := range []<-chan error{first, kept} {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if got := q.stored(); got != 4 {
		t.Errorf("%d messages stored, want the 4 of the two Appends kept", got)
	}
}
