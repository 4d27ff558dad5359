// Package sqlitealert is the SQLite store's ports.AlertStore: one database
// file, reqlog-alerts.sqlite, in the message store's data directory.
package sqlitealert

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/reqlog/reqlog/adapters/alertrecord"
	"github.com/reqlog/reqlog/adapters/sqlite/sqlitedb"
	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/alerting"
	"github.com/reqlog/reqlog/ports"
)

var _ ports.AlertStore = (*AlertStore)(nil)

// FileName is alerting's database in the data directory: not a day file
// (no "messages-" prefix, no ".db" suffix), so the message store leaves it
// alone, and under the directory's lock like the day files.
const FileName = "reqlog-alerts.sqlite"

// alertApplicationID marks a database file as reqlog's alert file
// (PRAGMA application_id, "rqla").
const alertApplicationID = 0x72716c61

// alertSchemaFiles are the alert file's migrations, one file a version.
//
//go:embed schema/alert-*.sql
var alertSchemaFiles embed.FS

// alertSchema is the alert file's kind: its mark and its one ordered list of
// migrations. A file without marks is the alert file of a reqlog before
// version 1, whose tables 1 makes if they are missing.
func alertSchema() sqlitedb.Schema {
	sql := func(name string) string { return sqlitedb.SQLFile(alertSchemaFiles, "schema/"+name) }
	return sqlitedb.Schema{Kind: "alert file", ApplicationID: alertApplicationID, AdoptUnmarked: true,
		Migrations: []sqlitedb.Migration{
			{To: 1, SQL: sql("alert-1.sql")}, // rules, endpoints, states, transitions, deliveries, attempts, leases
			{To: 2, SQL: sql("alert-2.sql")}, // rule_sets: the accounts' rule sets (domain/rules), one row a version
			{To: 3, SQL: sql("alert-3.sql")}, // rescrub_jobs: the accounts' re-scrub jobs, one row a job
			{To: 4, SQL: sql("alert-4.sql")}, // erasures: the journal of erasures (domain/erasure), one row each
		}}
}

// AlertStore is the SQLite ports.AlertStore: one database file beside the day
// files, reqlog-alerts.sqlite, in WAL mode with synchronous=FULL. Every
// compare-and-set is a transaction begun IMMEDIATE on the one writer
// connection, so it reads and writes with no other write in between; reads
// have a pool of query-only connections and see every committed write.
type AlertStore struct {
	path  string
	write *sql.DB
	read  *sql.DB
}

// OpenAlertStore opens (creating if needed) the alert file in the data
// directory dir, which the caller holds (the message store's lock), with
// o's connection settings; its connections stay open. Close releases the
// file.
func OpenAlertStore(ctx context.Context, dir string, o sqlitedb.Options) (*AlertStore, error) {
	o.IdleTime = 0
	// Endpoints hold webhook secrets: the owner's only, as the day files.
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, FileName), o, alertSchema(), true)
	if err != nil {
		return nil, err
	}
	return &AlertStore{path: db.Path, write: db.Write, read: db.Read}, nil
}

// Close closes the alert file.
func (a *AlertStore) Close() error {
	return sqlitedb.CloseDBs(a.read, a.write)
}

// storeError is sqlitedb.Error: the one classifier of SQLite's errors.
func storeError(ctx context.Context, op string, err error) error {
	return sqlitedb.Error(ctx, op, err)
}

func alertNotFound(what, id string) error {
	return fmt.Errorf("sqlite: %s %q: %w", what, id, ports.ErrNotFound)
}

func encodeDoc(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode alert record: %w", err)
	}
	return string(raw), nil
}

// inTx runs f in a write transaction (BEGIN IMMEDIATE) and commits it.
func (a *AlertStore) inTx(ctx context.Context, op string, f func(tx *sql.Tx) error) error {
	tx, err := a.write.BeginTx(ctx, nil)
	if err != nil {
		return storeError(ctx, op, err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return storeError(ctx, op, err)
	}
	return nil
}

// exec runs one write statement and returns the rows it changed.
func (a *AlertStore) exec(ctx context.Context, op, stmt string, args ...any) (int64, error) {
	res, err := a.write.ExecContext(ctx, stmt, args...)
	if err != nil {
		return 0, storeError(ctx, op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, storeError(ctx, op, err)
	}
	return n, nil
}

// querier is a connection pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// docs reads the doc column of query's rows into records of R, each turned
// into a T by convert.
func docs[R any, T any](ctx context.Context, db querier, op, query string, convert func(R) (T, error), args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, storeError(ctx, op, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, storeError(ctx, op, err)
		}
		var rec R
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return nil, fmt.Errorf("sqlite: %s: decode: %w", op, err)
		}
		v, err := convert(rec)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(ctx, op, err)
	}
	return out, nil
}

func plain[R any, T any](f func(R) T) func(R) (T, error) {
	return func(r R) (T, error) { return f(r), nil }
}

// one is docs of a query for one row: ErrNotFound when there is none.
func one[R any, T any](ctx context.Context, db *sql.DB, what, id, query string, convert func(R) (T, error), args ...any) (T, error) {
	found, err := docs(ctx, db, what, query, convert, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	if len(found) == 0 {
		var zero T
		return zero, alertNotFound(what, id)
	}
	return found[0], nil
}

// isConstraint reports a UNIQUE or PRIMARY KEY violation.
func isConstraint(err error) bool {
	return err != nil && strings.Contains(err.Error(), "constraint failed")
}

// insertConfig stores a new rule or endpoint (table) as doc; a taken id is
// ErrExists.
func (a *AlertStore) insertConfig(ctx context.Context, table, what, id string, scope domain.Scope, createdAt int64, doc any) error {
	raw, err := encodeDoc(doc)
	if err != nil {
		return err
	}
	_, err = a.write.ExecContext(ctx, "INSERT INTO "+table+" (id, account, domain, created_at, doc) VALUES (?, ?, ?, ?, ?)",
		id, scope.Account, scope.Domain, createdAt, raw)
	if isConstraint(err) {
		return fmt.Errorf("sqlite: %s %q: %w", what, id, ports.ErrExists)
	}
	if err != nil {
		return storeError(ctx, "create "+what, err)
	}
	return nil
}

// updateConfig replaces the doc of a stored rule or endpoint of scope; none is
// ErrNotFound.
func (a *AlertStore) updateConfig(ctx context.Context, table, what, id string, scope domain.Scope, doc any) error {
	raw, err := encodeDoc(doc)
	if err != nil {
		return err
	}
	n, err := a.exec(ctx, "update "+what, "UPDATE "+table+" SET doc = ? WHERE id = ? AND account = ? AND domain = ?",
		raw, id, scope.Account, scope.Domain)
	if err == nil && n == 0 {
		err = alertNotFound(what, id)
	}
	return err
}

// CreateRule stores a new rule.
func (a *AlertStore) CreateRule(ctx context.Context, r alerting.Rule) error {
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	return a.insertConfig(ctx, "rules", "rule", r.ID, r.Scope, rec.CreatedAt, rec)
}

// UpdateRule replaces a stored rule.
func (a *AlertStore) UpdateRule(ctx context.Context, r alerting.Rule) error {
	rec, err := alertrecord.RuleOf(r)
	if err != nil {
		return err
	}
	return a.updateConfig(ctx, "rules", "rule", r.ID, r.Scope, rec)
}

// Rule returns one rule of scope.
func (a *AlertStore) Rule(ctx context.Context, scope domain.Scope, id string) (alerting.Rule, error) {
	return one(ctx, a.read, "rule", id, "SELECT doc FROM rules WHERE id = ? AND account = ? AND domain = ?",
		alertrecord.Rule.ToDomain, id, scope.Account, scope.Domain)
}

// Rules returns scope's rules, oldest first.
func (a *AlertStore) Rules(ctx context.Context, scope domain.Scope) ([]alerting.Rule, error) {
	return docs(ctx, a.read, "rules", "SELECT doc FROM rules WHERE account = ? AND domain = ? ORDER BY created_at, id",
		alertrecord.Rule.ToDomain, scope.Account, scope.Domain)
}

// AllRules returns every rule.
func (a *AlertStore) AllRules(ctx context.Context) ([]alerting.Rule, error) {
	return docs(ctx, a.read, "rules", "SELECT doc FROM rules ORDER BY created_at, id", alertrecord.Rule.ToDomain)
}

// DeleteRule deletes a rule with its state and history, in one transaction.
func (a *AlertStore) DeleteRule(ctx context.Context, scope domain.Scope, id string) error {
	return a.inTx(ctx, "delete rule", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM rules WHERE id = ? AND account = ? AND domain = ?", id, scope.Account, scope.Domain)
		if err != nil {
			return storeError(ctx, "delete rule", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return alertNotFound("rule", id)
		}
		for _, stmt := range []string{"DELETE FROM states WHERE rule_id = ?", "DELETE FROM transitions WHERE rule_id = ?"} {
			if _, err := tx.ExecContext(ctx, stmt, id); err != nil {
				return storeError(ctx, "delete rule", err)
			}
		}
		return nil
	})
}

// CreateEndpoint stores a new endpoint.
func (a *AlertStore) CreateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	return a.insertConfig(ctx, "endpoints", "endpoint", e.ID, e.Scope, alertrecord.Micros(e.CreatedAt), alertrecord.EndpointOf(e))
}

// UpdateEndpoint replaces a stored endpoint.
func (a *AlertStore) UpdateEndpoint(ctx context.Context, e alerting.Endpoint) error {
	return a.updateConfig(ctx, "endpoints", "endpoint", e.ID, e.Scope, alertrecord.EndpointOf(e))
}

// Endpoint returns one endpoint of scope.
func (a *AlertStore) Endpoint(ctx context.Context, scope domain.Scope, id string) (alerting.Endpoint, error) {
	return one(ctx, a.read, "endpoint", id, "SELECT doc FROM endpoints WHERE id = ? AND account = ? AND domain = ?",
		plain(alertrecord.Endpoint.ToDomain), id, scope.Account, scope.Domain)
}

// Endpoints returns scope's endpoints, oldest first.
func (a *AlertStore) Endpoints(ctx context.Context, scope domain.Scope) ([]alerting.Endpoint, error) {
	return docs(ctx, a.read, "endpoints", "SELECT doc FROM endpoints WHERE account = ? AND domain = ? ORDER BY created_at, id",
		plain(alertrecord.Endpoint.ToDomain), scope.Account, scope.Domain)
}

// DeleteEndpoint deletes an endpoint.
func (a *AlertStore) DeleteEndpoint(ctx context.Context, scope domain.Scope, id string) error {
	n, err := a.exec(ctx, "delete endpoint", "DELETE FROM endpoints WHERE id = ? AND account = ? AND domain = ?",
		id, scope.Account, scope.Domain)
	if err == nil && n == 0 {
		err = alertNotFound("endpoint", id)
	}
	return err
}

// States returns the states of scope's rules.
func (a *AlertStore) States(ctx context.Context, scope domain.Scope) ([]alerting.State, error) {
	return docs(ctx, a.read, "states", "SELECT doc FROM states WHERE account = ? AND domain = ? ORDER BY rule_id",
		alertrecord.State.ToDomain, scope.Account, scope.Domain)
}

// AllStates returns every state.
func (a *AlertStore) AllStates(ctx context.Context) ([]alerting.State, error) {
	return docs(ctx, a.read, "states", "SELECT doc FROM states ORDER BY rule_id", alertrecord.State.ToDomain)
}

// SwapState stores next if the stored version is prev and the rule exists,
// in one transaction.
func (a *AlertStore) SwapState(ctx context.Context, next alerting.State, prev int64) error {
	rec, err := alertrecord.StateOf(next, prev+1)
	if err != nil {
		return err
	}
	doc, err := encodeDoc(rec)
	if err != nil {
		return err
	}
	return a.inTx(ctx, "swap state", func(tx *sql.Tx) error {
		var exists int
		err := tx.QueryRowContext(ctx, "SELECT count(*) FROM rules WHERE id = ? AND account = ? AND domain = ?",
			next.RuleID, next.Scope.Account, next.Scope.Domain).Scan(&exists)
		if err != nil {
			return storeError(ctx, "swap state", err)
		}
		if exists == 0 {
			return alertNotFound("rule", next.RuleID)
		}
		var version int64
		switch err := tx.QueryRowContext(ctx, "SELECT version FROM states WHERE rule_id = ?", next.RuleID).Scan(&version); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return storeError(ctx, "swap state", err)
		}
		if version != prev {
			return fmt.Errorf("sqlite: state of rule %q is not at version %d: %w", next.RuleID, prev, ports.ErrStale)
		}
		_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO states (rule_id, account, domain, version, doc) VALUES (?, ?, ?, ?, ?)",
			next.RuleID, next.Scope.Account, next.Scope.Domain, prev+1, doc)
		if err != nil {
			return storeError(ctx, "swap state", err)
		}
		return nil
	})
}

// AppendTransitions adds transitions not stored yet.
func (a *AlertStore) AppendTransitions(ctx context.Context, trs []alerting.Transition) error {
	if len(trs) == 0 {
		return nil
	}
	return a.inTx(ctx, "append transitions", func(tx *sql.Tx) error {
		for _, tr := range trs {
			doc, err := encodeDoc(alertrecord.TransitionOf(tr))
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO transitions (rule_id, seq, account, domain, at, doc) VALUES (?, ?, ?, ?, ?, ?)",
				tr.RuleID, tr.Seq, tr.Scope.Account, tr.Scope.Domain, alertrecord.Micros(tr.At), doc); err != nil {
				return storeError(ctx, "append transitions", err)
			}
		}
		return nil
	})
}

// Transitions returns a rule's history, newest first.
func (a *AlertStore) Transitions(ctx context.Context, scope domain.Scope, ruleID string, q ports.TransitionQuery) ([]alerting.Transition, error) {
	if q.Limit <= 0 {
		return []alerting.Transition{}, nil
	}
	query := "SELECT doc FROM transitions WHERE rule_id = ? AND account = ? AND domain = ?"
	args := []any{ruleID, scope.Account, scope.Domain}
	if q.Before > 0 {
		query += " AND seq < ?"
		args = append(args, q.Before)
	}
	if !q.From.IsZero() {
		query += " AND at >= ?"
		args = append(args, alertrecord.Micros(q.From))
	}
	if !q.To.IsZero() {
		query += " AND at < ?"
		args = append(args, alertrecord.Micros(q.To))
	}
	query += " ORDER BY seq DESC LIMIT ?"
	args = append(args, q.Limit)
	return docs(ctx, a.read, "transitions", query, plain(alertrecord.Transition.ToDomain), args...)
}

// AcquireLease takes or renews a lease in one transaction.
func (a *AlertStore) AcquireLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	held := false
	err := a.inTx(ctx, "lease", func(tx *sql.Tx) error {
		var current string
		var currentUntil int64
		switch err := tx.QueryRowContext(ctx, "SELECT owner, until FROM leases WHERE name = ?", name).Scan(&current, &currentUntil); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return storeError(ctx, "lease", err)
		case current != owner && currentUntil > alertrecord.Micros(now):
			return nil
		}
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO leases (name, owner, until) VALUES (?, ?, ?)",
			name, owner, alertrecord.Micros(until)); err != nil {
			return storeError(ctx, "lease", err)
		}
		held = true
		return nil
	})
	return held, err
}

// putDelivery writes d as its row, in tx.
func putDelivery(ctx context.Context, tx *sql.Tx, stmt string, d alerting.Delivery) error {
	rec, err := alertrecord.DeliveryOf(d)
	if err != nil {
		return err
	}
	doc, err := encodeDoc(rec)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, stmt+" INTO deliveries (id, account, domain, status, next_attempt_at, lease_owner, lease_until, updated_at, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		d.ID, d.Scope.Account, d.Scope.Domain, string(d.Status), rec.NextAttemptAt, d.LeaseOwner, rec.LeaseUntil, rec.UpdatedAt, doc)
	if err != nil {
		return storeError(ctx, "write delivery", err)
	}
	return nil
}

// Enqueue adds deliveries not queued yet.
func (a *AlertStore) Enqueue(ctx context.Context, ds []alerting.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	return a.inTx(ctx, "enqueue", func(tx *sql.Tx) error {
		for _, d := range ds {
			if err := putDelivery(ctx, tx, "INSERT OR IGNORE", d); err != nil {
				return err
			}
		}
		return nil
	})
}

// dueWhere selects the deliveries Claim may take at now; its arguments
// follow.
const dueWhere = "status = ? AND next_attempt_at <= ? AND lease_until <= ?"

func dueArgs(now time.Time) []any {
	return []any{string(alerting.DeliveryPending), alertrecord.Micros(now), alertrecord.Micros(now)}
}

// DueAccounts returns the accounts with deliveries due at now.
func (a *AlertStore) DueAccounts(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := a.read.QueryContext(ctx, "SELECT DISTINCT account FROM deliveries WHERE "+dueWhere+" LIMIT ?",
		append(dueArgs(now), limit)...)
	if err != nil {
		return nil, storeError(ctx, "due accounts", err)
	}
	defer rows.Close()
	accounts := []string{}
	for rows.Next() {
		var account string
		if err := rows.Scan(&account); err != nil {
			return nil, storeError(ctx, "due accounts", err)
		}
		accounts = append(accounts, account)
	}
	if err := rows.Err(); err != nil {
		return nil, storeError(ctx, "due accounts", err)
	}
	return accounts, nil
}

// Claim leases due deliveries of one account to owner, in one transaction.
// The endpoint id is read from the doc: the few deliveries of one account
// due at once are no index's worth.
func (a *AlertStore) Claim(ctx context.Context, owner string, now, until time.Time, q ports.ClaimQuery) ([]alerting.Delivery, error) {
	claimed := []alerting.Delivery{}
	if q.Limit <= 0 {
		return claimed, nil
	}
	query := "SELECT doc FROM deliveries WHERE account = ? AND " + dueWhere
	args := append([]any{q.Account}, dueArgs(now)...)
	if len(q.ExceptEndpoints) > 0 {
		query += " AND json_extract(doc, '$.endpoint_id') NOT IN (?" + strings.Repeat(", ?", len(q.ExceptEndpoints)-1) + ")"
		for _, id := range q.ExceptEndpoints {
			args = append(args, id)
		}
	}
	query += " ORDER BY next_attempt_at, id LIMIT ?"
	args = append(args, q.Limit)
	err := a.inTx(ctx, "claim deliveries", func(tx *sql.Tx) error {
		due, err := docs(ctx, tx, "claim deliveries", query, alertrecord.Delivery.ToDomain, args...)
		if err != nil {
			return err
		}
		for _, d := range due {
			d.LeaseOwner, d.LeaseUntil = owner, domain.Micro(until)
			if err := putDelivery(ctx, tx, "INSERT OR REPLACE", d); err != nil {
				return err
			}
			claimed = append(claimed, d)
		}
		return nil
	})
	if err != nil {
		return []alerting.Delivery{}, err
	}
	return claimed, nil
}

// DropExcess deletes an account's pending deliveries beyond limit, down to
// keep, in one transaction. Only an account over its limit has its queue
// read whole.
func (a *AlertStore) DropExcess(ctx context.Context, account string, limit, keep int, now time.Time) ([]alerting.Delivery, error) {
	dropped := []alerting.Delivery{}
	err := a.inTx(ctx, "drop excess deliveries", func(tx *sql.Tx) error {
		pendingOf := []any{account, string(alerting.DeliveryPending)}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM deliveries WHERE account = ? AND status = ?", pendingOf...).Scan(&n); err != nil {
			return storeError(ctx, "drop excess deliveries", err)
		}
		if n <= limit {
			return nil
		}
		pending, err := docs(ctx, tx, "drop excess deliveries", "SELECT doc FROM deliveries WHERE account = ? AND status = ?",
			alertrecord.Delivery.ToDomain, pendingOf...)
		if err != nil {
			return err
		}
		for _, d := range alerting.Excess(pending, keep, now) {
			if _, err := tx.ExecContext(ctx, "DELETE FROM deliveries WHERE id = ?", d.ID); err != nil {
				return storeError(ctx, "drop excess deliveries", err)
			}
			dropped = append(dropped, d)
		}
		return nil
	})
	if err != nil {
		return []alerting.Delivery{}, err
	}
	return dropped, nil
}

// Finish stores the outcome of owner's attempt if owner holds the lease, in
// one transaction.
func (a *AlertStore) Finish(ctx context.Context, d alerting.Delivery, owner string) error {
	return a.inTx(ctx, "finish delivery", func(tx *sql.Tx) error {
		var current string
		switch err := tx.QueryRowContext(ctx, "SELECT lease_owner FROM deliveries WHERE id = ?", d.ID).Scan(&current); {
		case errors.Is(err, sql.ErrNoRows):
			return alertNotFound("delivery", d.ID)
		case err != nil:
			return storeError(ctx, "finish delivery", err)
		case current != owner:
			return fmt.Errorf("sqlite: delivery %q is leased to another worker: %w", d.ID, ports.ErrStale)
		}
		return putDelivery(ctx, tx, "INSERT OR REPLACE", d)
	})
}

// Delivery returns one delivery of scope.
func (a *AlertStore) Delivery(ctx context.Context, scope domain.Scope, id string) (alerting.Delivery, error) {
	return one(ctx, a.read, "delivery", id, "SELECT doc FROM deliveries WHERE id = ? AND account = ? AND domain = ?",
		alertrecord.Delivery.ToDomain, id, scope.Account, scope.Domain)
}

// LogAttempt adds an attempt to the log.
func (a *AlertStore) LogAttempt(ctx context.Context, at alerting.Attempt) error {
	doc, err := encodeDoc(alertrecord.AttemptOf(at))
	if err != nil {
		return err
	}
	_, err = a.exec(ctx, "log attempt", "INSERT OR IGNORE INTO attempts (id, account, domain, endpoint_id, at, doc) VALUES (?, ?, ?, ?, ?, ?)",
		at.ID, at.Scope.Account, at.Scope.Domain, at.EndpointID, alertrecord.Micros(at.At), doc)
	return err
}

// Attempts returns an endpoint's log, newest first.
func (a *AlertStore) Attempts(ctx context.Context, scope domain.Scope, endpointID string, limit int) ([]alerting.Attempt, error) {
	if limit <= 0 {
		return []alerting.Attempt{}, nil
	}
	return docs(ctx, a.read, "attempts", `SELECT doc FROM attempts WHERE account = ? AND domain = ? AND endpoint_id = ?
		ORDER BY at DESC, id DESC LIMIT ?`, plain(alertrecord.Attempt.ToDomain), scope.Account, scope.Domain, endpointID, limit)
}

// PruneAlerts deletes old transitions, finished deliveries and attempts, in
// one transaction.
func (a *AlertStore) PruneAlerts(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	cut := alertrecord.Micros(before)
	err := a.inTx(ctx, "prune alerts", func(tx *sql.Tx) error {
		for _, del := range []struct {
			stmt string
			args []any
		}{
			{"DELETE FROM transitions WHERE at < ?", []any{cut}},
			{"DELETE FROM deliveries WHERE status != ? AND updated_at < ?", []any{string(alerting.DeliveryPending), cut}},
			{"DELETE FROM attempts WHERE at < ?", []any{cut}},
		} {
			res, err := tx.ExecContext(ctx, del.stmt, del.args...)
			if err != nil {
				return storeError(ctx, "prune alerts", err)
			}
			n, _ := res.RowsAffected()
			total += n
		}
		return nil
	})
	return total, err
}
