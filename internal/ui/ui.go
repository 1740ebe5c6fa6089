// Package ui is tracesift's web UI: static pages (static/) embedded in the
// binary, whose only backend is the query API's JSON. The query handler
// serves it on the query port (docs/architecture.md).
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var files embed.FS

// Pages are the paths the UI answers with its page; the script renders the
// one the path names.
var Pages = []string{"/{$}", "/search", "/trace/{traceId}", "/logs", "/findings", "/services"}

// Register adds the UI to mux: its assets under /ui/ and its pages.
func Register(mux *http.ServeMux) {
	static, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded folder is part of the build
	}
	assets := http.StripPrefix("/ui/", http.FileServerFS(static))
	mux.Handle("GET /ui/", noCache(assets))
	index, err := fs.ReadFile(static, "index.html")
	if err != nil {
		panic(err)
	}
	page := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		_, _ = w.Write(index)
	}
	for _, p := range Pages {
		mux.HandleFunc("GET "+p, page)
	}
}

// noCache makes browsers revalidate the assets: they change with the binary.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
