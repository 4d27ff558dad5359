package app

import (
	"context"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/ports"
)

// LocalSubmitter submits exchanges to the ingest use case in the same process (an
// embedded core), as Principal. It renders them as the contract's JSON body, so
// they get exactly the validation and normalisation of the HTTP API.
type LocalSubmitter struct {
	Ingester  *Ingester
	Principal domain.Principal
}

var _ ports.ExchangeSubmitter = LocalSubmitter{}

// SubmitExchanges stores exchanges as one batch; see ports.ExchangeSubmitter.
func (s LocalSubmitter) SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error) {
	if len(exchanges) == 0 {
		return nil, nil
	}
	body, err := domain.EncodeExchanges(exchanges)
	if err != nil {
		return nil, err
	}
	// No Idempotency-Key: nothing between here and the store retries.
	result, err := s.Ingester.Submit(ctx, s.Principal, body, "")
	if err != nil {
		return nil, err
	}
	return result.Identities, nil
}
