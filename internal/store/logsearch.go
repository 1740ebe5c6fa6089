package store

import (
	"context"
	"fmt"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// LogsFilter selects the logs SearchLogs returns. Empty fields match all;
// Start and End (Unix nanoseconds) are inclusive.
type LogsFilter struct {
	// Words must all appear in the body as whole tokens, case-insensitively
	// (see SearchWords).
	Words                      []string
	Service, Severity, TraceID string
	// Attributes must each be in the line's attributes or its resource
	// (where a Loki stream's labels are), with the value.
	Attributes []AttributeFilter
	Start, End int64
	Limit      int
}

// MaxSearchWords bounds the words of one search.
const MaxSearchWords = 8

// SearchWords splits a query into the tokens ClickHouse's token index knows:
// runs of ASCII letters and digits, and of bytes beyond ASCII, lowercased;
// everything else separates. A word shorter than two characters matches
// too much to be worth a condition and is skipped.
func SearchWords(q string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return r < 0x80 && !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(w) >= 2 {
			words = append(words, w)
		}
	}
	return words
}

// SearchLogs returns the logs matching f, newest first, in a stable order.
// The range is searched from its end in growing slices (the newest
// sixteenth, the next three sixteenths, then the rest), each for what the
// page still misses: a common word fills the page in the first slice,
// reading a fraction of the data, and only a search with few matches reads
// it all.
func (r *Reader) SearchLogs(ctx context.Context, f LogsFilter) ([]model.LogMatch, error) {
	if len(f.Words) > MaxSearchWords {
		return nil, fmt.Errorf("at most %d search words, got %d", MaxSearchWords, len(f.Words))
	}
	if len(f.Attributes) > MaxAttributeFilters {
		return nil, fmt.Errorf("at most %d attribute filters, got %d", MaxAttributeFilters, len(f.Attributes))
	}
	span := f.End - f.Start
	cuts := []int64{f.End - span/16, f.End - span/4, f.Start}
	if f.TraceID != "" {
		cuts = []int64{f.Start} // one trace's lines are few: one pass
	}
	out := []model.LogMatch{}
	var resources []uint64 // of each line
	to := f.End
	for _, from := range cuts {
		from = max(from, f.Start)
		if from > to {
			continue
		}
		var err error
		if out, resources, err = r.searchLogs(ctx, f, from, to, f.Limit-len(out), out, resources); err != nil {
			return nil, err
		}
		if len(out) >= f.Limit || from == f.Start {
			break
		}
		to = from - 1
	}
	res, err := r.lineResources(ctx, tenant.FromContext(ctx), resources, nil)
	if err != nil {
		return nil, fmt.Errorf("searching logs: reading their resources: %w", err)
	}
	for i, id := range resources {
		if id != 0 {
			out[i].Resource = res[id]
		}
	}
	if err := r.markKept(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// markKept sets Kept on the logs whose trace is stored.
func (r *Reader) markKept(ctx context.Context, logs []model.LogMatch) error {
	kept := map[string]bool{} // the page's trace ids; true once found stored
	var ids []string
	for _, l := range logs {
		if _, seen := kept[l.TraceID]; l.TraceID != "" && !seen {
			kept[l.TraceID] = false
			ids = append(ids, l.TraceID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	p := Params{"trace_ids": strings.Join(ids, ","), "tenant": tenant.FromContext(ctx)}
	err := r.conn.Query(ctx, r.logsKept, p, func(b []byte) error {
		var row struct {
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		kept[row.TraceID] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("searching logs: which traces are stored: %w", err)
	}
	for i := range logs {
		logs[i].Kept = kept[logs[i].TraceID]
	}
	return nil
}

// searchLogs appends the logs matching f between from and to (inclusive),
// at most limit of them, to out, and their resource ids to ids.
func (r *Reader) searchLogs(ctx context.Context, f LogsFilter, from, to int64, limit int, out []model.LogMatch,
	ids []uint64) ([]model.LogMatch, []uint64, error) {
	p := Params{"start_ns": from, "end_ns": to, "service": f.Service, "severity": f.Severity,
		"trace_id": f.TraceID, "limit": int64(limit), "tenant": tenant.FromContext(ctx)}
	var cond strings.Builder
	for i, w := range f.Words {
		name := fmt.Sprintf("w%d", i)
		fmt.Fprintf(&cond, "AND hasToken(lower(logs.body), {%s:String}) ", name)
		p[name] = w
	}
	for i, a := range f.Attributes {
		k, v := fmt.Sprintf("ak%d", i), fmt.Sprintf("av%d", i)
		fmt.Fprintf(&cond, "AND (logs.attributes[{%[1]s:String}] = {%[2]s:String} OR logs.resource[{%[1]s:String}] = {%[2]s:String} "+
			"OR logs.resource_id IN (SELECT resource_id FROM %[3]s WHERE tenant = {tenant:String} AND attributes[{%[1]s:String}] = {%[2]s:String})) ",
			k, v, r.resourceTable)
		p[k], p[v] = a.Key, a.Value
	}
	err := r.conn.Query(ctx, strings.ReplaceAll(r.logSearch, "${conditions}", cond.String()), p, func(b []byte) error {
		var row logRow
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, model.LogMatch{Log: row.log()})
		ids = append(ids, uint64(row.ResourceID))
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("searching logs: %w", err)
	}
	return out, ids, nil
}
