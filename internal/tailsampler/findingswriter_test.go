package tailsampler

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
)

// failingWriter fails its first inserts with the errors given, then stores.
type failingWriter struct {
	errs     chan error // taken one per WriteFindings; none left: success
	attempts int
	tried    [][]store.FindingRow // the rows of every attempt
	failed   chan struct{}        // one per failed attempt
	stored   chan []store.FindingRow
}

func newFailingWriter(errs ...error) *failingWriter {
	w := &failingWriter{errs: make(chan error, len(errs)), failed: make(chan struct{}, len(errs)),
		stored: make(chan []store.FindingRow, 10)}
	for _, err := range errs {
		w.errs <- err
	}
	return w
}

func (w *failingWriter) WriteFindings(_ context.Context, rows []store.FindingRow) error {
	w.attempts++
	w.tried = append(w.tried, rows)
	select {
	case err := <-w.errs:
		w.failed <- struct{}{}
		return err
	default:
		w.stored <- rows
		return nil
	}
}

func (w *failingWriter) WriteClockOffsets(context.Context, []store.ClockRow) error { return nil }

func startWriter(t *testing.T, w FindingsWriter) *analyzer {
	t.Helper()
	first := findingsRetryFirst
	findingsRetryFirst = time.Millisecond
	t.Cleanup(func() { findingsRetryFirst = first })
	tel, err := newTelemetry(noop.NewMeterProvider())
	require.NoError(t, err)
	a := &analyzer{writer: w, flush: time.Millisecond, logger: zap.NewNop(), tel: tel,
		queue: make(chan analysisBatch, findingsQueue), done: make(chan struct{})}
	go a.write()
	return a
}

// While the store fails for a reason that may pass, findings wait and are
// written again, the same rows, until the store takes them.
func TestFindingsWriterRetriesUntilTheStoreIsBack(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:9000: connection refused")
	w := newFailingWriter(down, down, down)
	a := startWriter(t, w)
	a.queue <- analysisBatch{findings: []store.FindingRow{{TraceID: "t1", Kind: "slowest_hop"}}}
	<-w.failed
	a.queue <- analysisBatch{findings: []store.FindingRow{{TraceID: "t2", Kind: "timeout"}}}
	<-w.failed
	<-w.failed
	a.stop() // writes what is left
	close(w.stored)
	var ids []string
	for rows := range w.stored {
		for _, r := range rows {
			ids = append(ids, r.TraceID)
		}
	}
	assert.Equal(t, []string{"t1", "t2"}, ids, "the failed rows again, each once, in order")
	require.GreaterOrEqual(t, w.attempts, 5)
	for _, rows := range w.tried[:4] {
		assert.Equal(t, []store.FindingRow{{TraceID: "t1", Kind: "slowest_hop"}}, rows,
			"a retry sends exactly the failed rows (the same deduplication token); later ones follow it")
	}
}

// Findings the store rejects as malformed are not retried.
func TestFindingsWriterDropsWhatTheStoreRejects(t *testing.T) {
	w := newFailingWriter(errors.New("Code: 27. DB::Exception: Cannot parse input"))
	a := startWriter(t, w)
	a.queue <- analysisBatch{findings: []store.FindingRow{{TraceID: "bad"}}}
	<-w.failed
	a.queue <- analysisBatch{findings: []store.FindingRow{{TraceID: "good"}}}
	got := <-w.stored
	a.stop()
	assert.Equal(t, []store.FindingRow{{TraceID: "good"}}, got, "the rejected rows are not written again")
	assert.Equal(t, 2, w.attempts)
}

func TestRetryDelayIsCappedAndJittered(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		5: 16 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 50 {
			d := retryDelay(n, rnd)
			assert.GreaterOrEqual(t, d, want/2, "n=%d", n)
			assert.Less(t, d, want*3/2, "n=%d", n)
			seen[d] = true
		}
		assert.Greater(t, len(seen), 40, "jittered")
	}
}
