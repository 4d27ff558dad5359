package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/reqlog/reqlog/domain"
)

// sweepInterval is how often buckets that have refilled are dropped.
const sweepInterval = time.Minute

// RateLimiter is a token bucket per key: on average perSecond requests a second,
// up to burst at once. A full bucket behaves exactly like a new one, so full
// buckets are dropped now and then and memory follows the keys active lately, not
// every key ever seen. It is safe for concurrent use.
type RateLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
}

// NewRateLimiter returns a limiter of perSecond requests a second with bursts of
// burst per key (perSecond > 0, burst ≥ 1); now is its clock (nil: time.Now).
func NewRateLimiter(perSecond float64, burst int, now func() time.Time) *RateLimiter {
	if now == nil {
		now = time.Now
	}
	return &RateLimiter{limit: rate.Limit(perSecond), burst: burst, now: now,
		buckets: map[string]*rate.Limiter{}, lastSweep: now()}
}

// Allow takes a token from key's bucket. Without one it returns false and how long
// until the next token.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= sweepInterval {
		l.sweep(now)
	}
	bucket := l.buckets[key]
	if bucket == nil {
		bucket = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = bucket
	}
	r := bucket.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now) // a refused request must not use up future tokens
		return false, wait
	}
	return true, 0
}

// Len is the number of buckets held.
func (l *RateLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

func (l *RateLimiter) sweep(now time.Time) {
	for key, bucket := range l.buckets {
		if bucket.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, key)
		}
	}
	l.lastSweep = now
}

// limiterKey is a principal's bucket: its scope and, for portal sessions, its
// application.
func limiterKey(p domain.Principal) string {
	return p.Account + "\x00" + p.Domain + "\x00" + p.Name
}

// rateLimit answers 429 with Retry-After to an authenticated principal over its
// rate. It runs after authentication, so unknown keys never get a bucket.
func (a *api) rateLimit(next http.HandlerFunc) http.HandlerFunc {
	if a.limiter == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if refused := a.overRate(r); refused != nil {
			writeError(w, *refused)
			return
		}
		next(w, r)
	}
}

// overRate is the 429 of an authenticated request over its principal's rate,
// nil when it may go on.
func (a *api) overRate(r *http.Request) *apiError {
	if a.limiter == nil {
		return nil
	}
	if ok, wait := a.limiter.Allow(limiterKey(principalOf(r.Context()))); !ok {
		retry := retryAfterSeconds(wait)
		return &apiError{status: http.StatusTooManyRequests, retryAfter: retry,
			message: fmt.Sprintf("too many requests for this API key: retry in %d s", retry/time.Second)}
	}
	return nil
}

// retryAfterSeconds rounds wait up to whole seconds, at least one, for Retry-After.
func retryAfterSeconds(wait time.Duration) time.Duration {
	return max(time.Second, (wait + time.Second - 1).Truncate(time.Second))
}
