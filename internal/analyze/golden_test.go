package analyze

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/model/modeltest"
)

// golden is one file of testdata/: a trace and the findings expected of it.
type golden struct {
	Description string          `json:"description"`
	Trace       modeltest.Trace `json:"trace"`
	check
	// Variants check the same trace again with other options or kinds.
	Variants []check `json:"variants"`
}

// check is one expectation on a golden trace.
type check struct {
	// Options, when set, are passed to Analyze (else DefaultOptions).
	Options *Options `json:"options"`
	// Kinds, when set, restricts the comparison to findings of these
	// kinds; otherwise every finding is compared.
	Kinds []string    `json:"kinds"`
	Want  []wantFound `json:"want"`
}

// wantFound is an expected finding: kind, spanIds, service and value are
// compared exactly; the summary must be non-empty and contain each of
// Summary's substrings.
type wantFound struct {
	Kind    string   `json:"kind"`
	SpanIDs []string `json:"spanIds"`
	Service string   `json:"service"`
	// Subject, when set, is compared exactly.
	Subject string   `json:"subject"`
	Value   float64  `json:"value"`
	Summary []string `json:"summary"`
}

func loadGolden(t *testing.T) map[string]*golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden traces under testdata/")
	}
	out := make(map[string]*golden, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		g := new(golden)
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = g
	}
	return out
}

func TestGolden(t *testing.T) {
	for name, g := range loadGolden(t) {
		for k, c := range append([]check{g.check}, g.Variants...) {
			sub := name
			if k > 0 {
				sub += "/variant" + itoa(k)
			}
			t.Run(sub, func(t *testing.T) {
				opts := DefaultOptions()
				if c.Options != nil {
					opts = *c.Options
				}
				got := Analyze(&g.Trace.Trace, opts)
				checkFindings(t, got, c)
				checkSane(t, got)
			})
		}
	}
}

// checkFindings compares got, restricted to c.Kinds, with c.Want in order.
func checkFindings(t *testing.T, got []model.Finding, c check) {
	t.Helper()
	var sel []model.Finding
	for _, f := range got {
		if len(c.Kinds) == 0 || slices.Contains(c.Kinds, f.Kind) {
			sel = append(sel, f)
		}
	}
	if len(sel) != len(c.Want) {
		t.Errorf("got %d findings, want %d:\n%s", len(sel), len(c.Want), dump(sel))
	}
	for k := 0; k < min(len(sel), len(c.Want)); k++ {
		g, w := sel[k], c.Want[k]
		if g.Kind != w.Kind || g.Service != w.Service || g.Value != w.Value || !slices.Equal(g.SpanIDs, w.SpanIDs) ||
			w.Subject != "" && g.Subject != w.Subject {
			t.Errorf("finding %d:\n got  %s\n want %s", k, dump(g), dump(w))
		}
		if g.Summary == "" {
			t.Errorf("finding %d: empty summary", k)
		}
		for _, s := range w.Summary {
			if !strings.Contains(g.Summary, s) {
				t.Errorf("finding %d: summary %q lacks %q", k, g.Summary, s)
			}
		}
	}
}

// checkSane checks what must hold of any finding.
func checkSane(t *testing.T, got []model.Finding) {
	t.Helper()
	for _, f := range got {
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value < 0 {
			t.Errorf("%s: bad value %v", f.Kind, f.Value)
		}
		if f.SpanIDs == nil {
			t.Errorf("%s: nil spanIds", f.Kind)
		}
		if f.Summary == "" || strings.ContainsAny(f.Summary, "\n\x00") {
			t.Errorf("%s: bad summary %q", f.Kind, f.Summary)
		}
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
