package httpapi

// Reply texts of the contract.
const (
	msgIngested = "Logs were successfully ingested and should show up shortly"
	msgListed   = "successfully fetched messages"
	msgFetched  = "successfully fetched message"
	msgHealthy  = "ok"
	msgReady    = "ready"
	msgNotReady = "the store is not reachable; retry later"
	// msgStoreFaults begins /readyz's reply when the store names what of
	// it is damaged (ports.Fault).
	msgStoreFaults = "the store is damaged, an operator must act: "
	msgNoEndpoint  = "no such endpoint: the API lives under /v1/messages"
)

// reply is a success body with optional data. Messages and listings are not
// encoded from structs but appended by encode.go.
type reply struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type errorReply struct {
	Status  bool             `json:"status"`
	Message string           `json:"message"`
	Errors  []fieldErrorJSON `json:"errors,omitempty"`
}

type fieldErrorJSON struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}
