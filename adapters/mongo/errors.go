package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/reqlog/reqlog/ports"
)

// ErrReferenceTaken is returned by Append when a message's reference belongs to
// a message with another id: retrying cannot help, so it is not ErrUnavailable.
var ErrReferenceTaken = errors.New("reference already belongs to another message")

// Server error codes.
const (
	codeDuplicateKey   = 11000
	codeNotImplemented = 238
)

// transientCodes are server errors that say "not now" rather than "never":
// elections, shutdowns, unreachable members, time limits, write concern waits.
var transientCodes = []int{
	6,     // HostUnreachable
	7,     // HostNotFound
	64,    // WriteConcernFailed
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	189,   // PrimarySteppedDown
	262,   // ExceededTimeLimit
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
}

// storeError wraps a driver error for op, adding ports.ErrUnavailable when the
// server could not be reached or answer in time. A cancelled caller is not an
// outage and keeps only context.Canceled.
func storeError(ctx context.Context, op string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("mongo: %s: %w", op, ctx.Err())
	}
	if unavailable(err) {
		return fmt.Errorf("mongo: %s: %w: %w", op, ports.ErrUnavailable, err)
	}
	return fmt.Errorf("mongo: %s: %w", op, err)
}

func unavailable(err error) bool {
	if mongodrv.IsNetworkError(err) || mongodrv.IsTimeout(err) ||
		errors.Is(err, mongodrv.ErrClientDisconnected) ||
		errors.As(err, new(topology.ServerSelectionError)) {
		return true
	}
	var labeled mongodrv.LabeledError
	if errors.As(err, &labeled) && (labeled.HasErrorLabel("RetryableWriteError") || labeled.HasErrorLabel("TransientTransactionError")) {
		return true
	}
	var server mongodrv.ServerError
	if errors.As(err, &server) {
		return slices.ContainsFunc(transientCodes, server.HasErrorCode)
	}
	return false
}
