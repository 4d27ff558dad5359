package app

import (
	"context"

	"github.com/reqlog/reqlog/domain"
	"github.com/reqlog/reqlog/domain/rules"
	"github.com/reqlog/reqlog/ports"
)

// LocalSubmitter submits exchanges to the ingest use case in the same process (an
// embedded core), as Principal. Their drafts (domain.DraftsOf) are what the HTTP
// API decodes from the same exchanges sent as JSON, so they get exactly its
// validation and normalisation, and the account's rule set.
type LocalSubmitter struct {
	Ingester  *Ingester
	Principal domain.Principal
	// Source is what captured the exchanges, for rules scoped to sources
	// ("": rules.SourceAPI, as for the Go client and capture middleware).
	Source rules.Source
	// BodyCut holds each body to this many bytes once the rules have run on it
	// (0: keep all); CuttingBodiesAt sets it for a capture.
	BodyCut int
}

var _ ports.BodyCutter = LocalSubmitter{}

// CuttingBodiesAt is s with BodyCut at limit.
func (s LocalSubmitter) CuttingBodiesAt(limit int) ports.ExchangeSubmitter {
	s.BodyCut = limit
	return s
}

var _ ports.ExchangeSubmitter = LocalSubmitter{}

// SubmitExchanges stores exchanges as one batch; see ports.ExchangeSubmitter.
func (s LocalSubmitter) SubmitExchanges(ctx context.Context, exchanges []domain.Exchange) ([]domain.Identity, error) {
	if len(exchanges) == 0 {
		return nil, nil
	}
	src := s.Source
	if src == "" {
		src = rules.SourceAPI
	}
	// No Idempotency-Key: nothing between here and the store retries.
	result, err := s.Ingester.SubmitCaptured(ctx, src, s.BodyCut, s.Principal, domain.DraftsOf(exchanges), "")
	if err != nil {
		return nil, err
	}
	return result.Identities, nil
}
