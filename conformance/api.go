package conformance

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// RunAPITests checks the whole service, black-box, against the API contract
// (shared/spec/CONTRACT.md): every subtest wires serve on a fresh store from
// newStore and a fake clock, serves it on a real listener and speaks only HTTP,
// decoding replies generically so the exact wire format is what gets checked.
// Its alerting and rule set cases test the store's own alert and rule set
// stores only when the store newStore returns is one too: httpapitest.Serve
// otherwise runs them on memory stores and logs so (httpapitest.Fallbacks).
func RunAPITests(t *testing.T, newStore StoreMaker, serve ServeFunc) {
	suite := apiSuite{newStore: newStore, serve: serve}
	for _, test := range []struct {
		name string
		run  func(t *testing.T, s apiSuite)
	}{
		{"SubmitSingleObject", apiTestSubmitSingleObject},
		{"SubmitArray", apiTestSubmitArray},
		{"SubmitEnvelope", apiTestSubmitEnvelope},
		{"SubmitContentTypeHeader", apiTestSubmitContentTypeHeader},
		{"MessageWireFormat", apiTestMessageWireFormat},
		{"CreatedAtFormats", apiTestCreatedAtFormats},
		{"Normalisation", apiTestNormalisation},
		{"HeaderMasking", apiTestHeaderMasking},
		{"ContentTypeAndBodies", apiTestContentTypeAndBodies},
		{"BoundaryValuesAccepted", apiTestBoundaryValuesAccepted},
		{"ListEmpty", apiTestListEmpty},
		{"ListOrder", apiTestListOrder},
		{"ListLimit", apiTestListLimit},
		{"ListCursorWalk", apiTestListCursorWalk},
		{"ListFilters", apiTestListFilters},
		{"VisibilityDelay", apiTestVisibilityDelay},
		{"Retention", apiTestRetention},
		{"Scoping", apiTestScoping},
		{"Authentication", apiTestAuthentication},
		{"BadSubmissions", apiTestBadSubmissions},
		{"BadQueryParameters", apiTestBadQueryParameters},
		{"BadInputNeverBreaksServer", apiTestBadInputNeverBreaksServer},
		{"UnknownRoutes", apiTestUnknownRoutes},
		{"MethodNotAllowed", apiTestMethodNotAllowed},
		{"SizeLimits", apiTestSizeLimits},
		{"IdempotencyKey", apiTestIdempotencyKey},
		{"StoreUnavailable", apiTestStoreUnavailable},
		{"DurationAndSizes", apiTestDurationAndSizes},
		{"Search", apiTestSearch},
		{"DurationBounds", apiTestDurationBounds},
		{"ExplorerScoping", apiTestExplorerScoping},
		{"Stats", apiTestStats},
		{"StatsOutliveMessages", apiTestStatsOutliveMessages},
		{"Export", apiTestExport},
		{"ExplorerBadInput", apiTestExplorerBadInput},
		{"ExplorerRoutes", apiTestExplorerRoutes},
		{"ExplorerRetention", apiTestExplorerRetention},
		{"Routes", apiTestRoutes},
		// Alerting (api_alerts.go).
		{"AlertRules", apiTestAlertRules},
		{"AlertBadInput", apiTestAlertBadInput},
		{"AlertScoping", apiTestAlertScoping},
		{"AlertTestEvent", apiTestAlertTestEvent},
		{"AlertFiresAndResolves", apiTestAlertFiresAndResolves},
		// Rule sets (api_rules.go).
		{"RuleSets", apiTestRuleSets},
		{"DroppedMessages", apiTestDroppedMessages},
		{"SampledCountsStayTrue", apiTestSampledCountsStayTrue},
		{"Rescrub", apiTestRescrub},
		{"RetryAfterRulesChanged", apiTestRetryAfterRulesChanged},
		{"RetryOfDroppedAfterRulesChanged", apiTestRetryOfDroppedAfterRulesChanged},
		// Erasures (api_erasures.go).
		{"Erasures", apiTestErasures},
		{"ErasuresByMessageID", apiTestErasuresByMessageID},
		{"SubjectBackfill", apiTestSubjectBackfill},
	} {
		t.Run(test.name, func(t *testing.T) { test.run(t, suite) })
	}
}

// The service's keys in every subtest: two accounts, both domains.
var (
	apiAcmeLive   = APIKey{Account: "acme", Domain: domain.DomainLive, Key: "rk_acme_live_Q7m2Xv9LpT4w"}
	apiAcmeTest   = APIKey{Account: "acme", Domain: domain.DomainTest, Key: "rk_acme_test_B3n8Kd1RzY6s"}
	apiGlobexLive = APIKey{Account: "globex", Domain: domain.DomainLive, Key: "rk_globex_live_H5c0Wf2JuN8e"}
)

// apiStart is where every subtest's clock starts: near the real time, because a
// real MongoDB's TTL monitor deletes what expired by the wall clock. The
// nanoseconds check that the service keeps microseconds.
var apiStart = time.Now().UTC().Truncate(time.Second).Add(123456789)

// apiDefaultMaxBody is the contract's default body limit.
const apiDefaultMaxBody = 5 << 20

type apiSuite struct {
	newStore StoreMaker
	serve    ServeFunc
}

// apiEnv is one running service under test.
type apiEnv struct {
	cfg   APIConfig
	clock *FakeClock
	store ports.MessageStore
	base  string
	srv   *httptest.Server
}

// start serves a fresh store; tweaks adjust the configuration first.
func (s apiSuite) start(t *testing.T, tweaks ...func(*APIConfig)) *apiEnv {
	t.Helper()
	return s.startWrapped(t, nil, tweaks...)
}

// startWrapped is start with the store decorated by wrap (nil: as it is).
func (s apiSuite) startWrapped(t *testing.T, wrap func(ports.MessageStore) ports.MessageStore, tweaks ...func(*APIConfig)) *apiEnv {
	t.Helper()
	// Not t.Context(): that is cancelled before the store's own cleanups run.
	store, err := s.newStore(context.Background(), t)
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	if wrap != nil {
		store = wrap(store)
	}
	clock := NewFakeClock(apiStart)
	policy := domain.DefaultPolicy()
	policy.VisibilityDelay = 5 * time.Second
	cfg := APIConfig{
		Keys:         []APIKey{apiAcmeLive, apiAcmeTest, apiGlobexLive},
		Policy:       policy,
		Clock:        clock,
		MaxBodyBytes: apiDefaultMaxBody,
	}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	srv := httptest.NewServer(s.serve(t, store, cfg))
	t.Cleanup(srv.Close)
	return &apiEnv{cfg: cfg, clock: clock, store: store, base: srv.URL, srv: srv}
}
