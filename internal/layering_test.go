package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tracesift/tracesift/"

// allowedImports is, for each package of the module (by folder), the
// module's packages its non-test files may import: imports point down the
// data flow of docs/architecture.md. A new package needs an entry here.
var allowedImports = map[string][]string{
	"cmd/collector": {"internal/exporter/storeexporter", "internal/extension/limitsextension",
		"internal/extension/queryextension", "internal/extension/storeextension", "internal/processor/logsprocessor",
		"internal/receiver/loki", "internal/receiver/otlpraw", "internal/tailsampler",
		"internal/receiver/kafkareceiver", "internal/exporter/kafkaexporter", "internal/extension/authextension"},
	"cmd/runkafka": {"internal/kafka/broker"},
	"cmd/query":    {"internal/query", "internal/store", "internal/store/server", "internal/tenant"},
	"bench":        {"internal/kafka/broker"},

	// The domain model every stage shares: imports nothing of ours.
	"internal/model":           {},
	"internal/model/modeltest": {"internal/model"},

	// Shared infrastructure: imports nothing of ours.
	"internal/otlpwire": {},
	"internal/httpbody": {},
	"internal/traceid":  {},
	"internal/testutil": {},
	// Whose data it is: the tenant of a request, a resource, a query.
	"internal/tenant": {},

	// Receivers hand on what they read: the OTLP one to the sampler.
	"internal/receiver/otlpraw":          {"internal/otlpwire", "internal/httpbody", "internal/tailsampler", "internal/kafka", "internal/tenant"},
	"internal/receiver/kafkareceiver":    {"internal/kafka", "internal/tailsampler"},
	"internal/exporter/kafkaexporter":    {"internal/kafka"},
	"internal/kafka":                     {"internal/otlpwire", "internal/tailsampler", "internal/tenant"},
	"internal/kafka/broker":              {},
	"internal/receiver/loki":             {"internal/httpbody", "internal/traceid", "internal/tenant"},
	"internal/extension/authextension":   {"internal/tenant"},
	"internal/extension/limitsextension": {"internal/httpbody"},
	"internal/processor/logsprocessor":   {"internal/traceid"},

	// The sampler. It writes nothing: internal/store gives it the rows of
	// findings and clock offsets and how they travel with the kept spans
	// (store.AppendAnalysis) to the exporter.
	"internal/tailsampler": {"internal/otlpwire", "internal/tailsampler/s2dict", "internal/model", "internal/analyze",
		"internal/clockskew", "internal/red", "internal/store", "internal/tenant"},
	"internal/tailsampler/s2dict": {},
	"internal/analyze":            {"internal/model"},
	"internal/red":                {"internal/model"},
	"internal/clockskew":          {"internal/model", "internal/analyze"},

	// The store and what writes to it or serves from it.
	"internal/store":                    {"internal/model", "internal/tenant"},
	"internal/store/embedded":           {"internal/store"},
	"internal/store/server":             {"internal/store"},
	"internal/extension/storeextension": {"internal/store", "internal/store/embedded", "internal/store/server"},
	"internal/exporter/storeexporter":   {"internal/store", "internal/extension/storeextension"},
	"internal/query": {"internal/model", "internal/analyze", "internal/red", "internal/clockskew", "internal/store",
		"internal/ui", "internal/tenant"},
	// The web UI: static pages the query handler serves; they read the API's JSON only.
	"internal/ui":                       {},
	"internal/extension/queryextension": {"internal/query", "internal/extension/storeextension"},
}

// moduleImports walks the module from root and returns, for each folder
// with non-test Go files, the module's packages they import.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[rel], dep) {
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImportsPointDownTheFlow(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not at %s: %v", root, err)
	}
	imports := moduleImports(t, root)
	if len(imports) < 20 {
		t.Fatalf("found only %d packages under %s", len(imports), root)
	}
	for pkg, deps := range imports {
		allowed, ok := allowedImports[pkg]
		if component, generated := generatedMetadata(pkg); generated {
			allowed, ok = nil, true
			if strings.HasSuffix(pkg, "test") {
				allowed = []string{component + "/internal/metadata"}
			}
		}
		if !ok {
			t.Errorf("package %s has no entry in allowedImports: add one, with the packages it may import (docs/architecture.md)", pkg)
			continue
		}
		for _, dep := range deps {
			// A Collector component reads its own generated metadata.
			if c, generated := generatedMetadata(dep); generated && c == pkg {
				continue
			}
			if !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which it may not (docs/architecture.md, \"Imports\")", pkg, dep)
			}
		}
	}
	for pkg := range allowedImports {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("allowedImports names %s, which is not a package", pkg)
		}
	}
}

// generatedMetadata reports whether pkg is the code mdatagen generates for
// a Collector component from its metadata.yaml (internal/metadata and
// internal/metadatatest under the component's folder), and which component.
func generatedMetadata(pkg string) (component string, ok bool) {
	for _, suffix := range []string{"/internal/metadata", "/internal/metadatatest"} {
		if c, found := strings.CutSuffix(pkg, suffix); found {
			return c, true
		}
	}
	return "", false
}
