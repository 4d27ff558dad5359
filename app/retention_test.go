package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/reqlog/reqlog/adapters/memory"
	"github.com/reqlog/reqlog/app"
	"github.com/reqlog/reqlog/domain"
)

func TestRetentionRulesAreBoundedAndStamped(t *testing.T) {
	ctx := t.Context()
	cfg := app.DefaultRulesConfig()
	cfg.MaxRetention = 100 * 24 * time.Hour // the store's cap
	f := newRulesFixture(t, memory.NewRuleSetStore(), cfg)
	f.replace(t, `{"retention": [{"id": "payments", "scope": {"applications": ["shop"]}, "keep": "7d", "bodies": "2d"}]}`, 0)
	for _, tc := range []struct{ name, doc, field string }{
		{"over the store's cap", `{"retention": [{"id": "r", "keep": "101d"}]}`, "retention[0].keep"},
		{"negative", `{"retention": [{"id": "r", "keep": "-1d"}]}`, "retention[0].keep"},
		{"bodies longer than keep", `{"retention": [{"id": "r", "keep": "7d", "bodies": "8d"}]}`, "retention[0].bodies"},
		{"overlap of one specificity", `{"retention": [{"id": "a", "scope": {"applications": ["shop"]}, "keep": "7d"},
			{"id": "b", "scope": {"applications": ["shop", "ledger"]}, "keep": "9d"}]}`, "retention[1]"},
	} {
		_, err := f.rules.Replace(ctx, ruleKey, []byte(tc.doc), "why", 1)
		var invalid *domain.ValidationError
		if !errors.As(err, &invalid) || len(invalid.Fields) == 0 || invalid.Fields[0].Field != tc.field {
			t.Errorf("%s: %v, want a validation error naming %s", tc.name, err, tc.field)
		}
	}
	if v, err := f.store.RuleSet(ctx, "acme"); err != nil || v.Number != 1 {
		t.Fatalf("after the refusals the store holds version %d (%v), want 1", v.Number, err)
	}

	if _, err := f.ingest.Submit(ctx, ruleKey, draftsOf("["+item("shop", "/pay")+","+item("ledger", "/pay")+"]"), ""); err != nil {
		t.Fatal(err)
	}
	written := f.written.appended
	if len(written) != 2 {
		t.Fatalf("%d messages written, want 2", len(written))
	}
	shop, ledger := written[0], written[1]
	created := shop.CreatedAt
	if shop.RetentionRule != "payments" || !shop.ExpiresAt.Equal(created.Add(7*24*time.Hour)) || !shop.BodiesExpireAt.Equal(created.Add(2*24*time.Hour)) {
		t.Errorf("the shop's message: rule %q, expires %s, bodies %s; want payments, 7 days, 2 days",
			shop.RetentionRule, shop.ExpiresAt, shop.BodiesExpireAt)
	}
	if ledger.RetentionRule != "" || !ledger.BodiesExpireAt.IsZero() {
		t.Errorf("the ledger's message: rule %q, bodies %s; want the policy's class", ledger.RetentionRule, ledger.BodiesExpireAt)
	}

	keep, bodies, ok, err := f.book.CurrentRetention(3*24*time.Hour)(ctx, shop.RetentionClass())
	if err != nil || !ok || keep != 3*24*time.Hour || bodies != 2*24*time.Hour {
		t.Errorf("CurrentRetention under a 3-day policy = %s, %s, %v, %v; want 72h, 48h, true", keep, bodies, ok, err)
	}
	if _, _, ok, err := f.book.CurrentRetention(time.Hour)(ctx, domain.RetentionClass{Account: "acme", Rule: "gone"}); ok || err != nil {
		t.Errorf("CurrentRetention of a rule the set lacks = %v, %v; want false, nil", ok, err)
	}
}
