package statsengine

// Trace is what one call of Engine.Stats read, for tests and benchmarks:
// each call returns its own, so that nothing is counted in package state.
type Trace struct {
	// Plan is the plan the call took, and Costs the estimated cost of each
	// plan it considered (+Inf: not possible, or not known).
	Plan  Plan
	Costs map[Plan]float64
	// KeptHours are the hours counted from the engine's cache.
	KeptHours int
	// Rollups are the minute rollups counted, and Refused those read that
	// could not stand for their minute at now (or that the source did not
	// have), whose messages were streamed.
	Rollups, Refused int
	// MinutesStreamed are the minutes (of one application each) streamed
	// for want of a rollup; MessagesStreamed every message streamed, by any
	// plan.
	MinutesStreamed  int
	MessagesStreamed int64
	// Recounted are the minute rollups a Marked source counted again from
	// the messages (their mark had changed), and MessagesRecounted the
	// messages it read to do so.
	Recounted         int
	MessagesRecounted int64
	// KeepErrors are the times keeping recounted rollups failed: the answer
	// stands, and the next read counts those minutes again.
	KeepErrors int
	// StoreRequests are the requests the call sent to the store's backend,
	// for a store that counts them (Elasticsearch's StatsTraced); the
	// engine leaves it 0.
	StoreRequests int
}

// Add adds o's counts to t, and takes o's plan and costs when o has a plan:
// the trace of several calls.
func (t *Trace) Add(o Trace) {
	if o.Plan != "" {
		t.Plan, t.Costs = o.Plan, o.Costs
	}
	t.KeptHours += o.KeptHours
	t.Rollups += o.Rollups
	t.Refused += o.Refused
	t.MinutesStreamed += o.MinutesStreamed
	t.MessagesStreamed += o.MessagesStreamed
	t.Recounted += o.Recounted
	t.MessagesRecounted += o.MessagesRecounted
	t.KeepErrors += o.KeepErrors
	t.StoreRequests += o.StoreRequests
}
