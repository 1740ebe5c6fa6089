package storeexporter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
)

// storeHealth reports the store as the exporter sees it in the exporter's
// component status (which the health_check extension can answer):
// StatusRecoverableError once an insert fails with an error worth retrying
// (the store down or slow), StatusOK once one succeeds again. Only changes
// are reported: a batch costs one atomic load while nothing changes.
type storeHealth struct {
	failing atomic.Bool
	mu      sync.Mutex // orders the reports with failing's changes
	host    component.Host
	stopped bool
}

func (h *storeHealth) start(host component.Host) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.host = host
}

// stop ends the reports: the Collector reports the exporter stopping and
// then stopped, which no report may come between.
func (h *storeHealth) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
}

// observe takes the outcome of writing a batch.
func (h *storeHealth) observe(ctx context.Context, err error) {
	switch {
	case err == nil:
		if h.failing.Load() {
			h.set(false, nil)
		}
	case consumererror.IsPermanent(err):
		// The store answered: it refused these records for good.
	case errors.Is(ctx.Err(), context.Canceled):
		// The caller went away (no queue): nothing to say of the store.
	default:
		if !h.failing.Load() {
			h.set(true, err)
		}
	}
}

func (h *storeHealth) set(failing bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.host == nil || h.failing.Load() == failing {
		return
	}
	h.failing.Store(failing)
	ev := componentstatus.NewEvent(componentstatus.StatusOK)
	if failing {
		ev = componentstatus.NewRecoverableErrorEvent(err)
	}
	componentstatus.ReportStatus(h.host, ev)
}
