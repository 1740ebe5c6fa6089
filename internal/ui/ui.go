// Package ui is tracesift's web UI: static pages (static/) embedded in the
// binary, whose only backend is the query API's JSON. The query handler
// serves it on the query port (docs/architecture.md).
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"net/http"
	"strings"
)

//go:embed static
var files embed.FS

// Pages are the paths the UI answers with its page; the script renders the
// one the path names.
var Pages = []string{"/{$}", "/search", "/trace/{traceId}", "/logs", "/findings", "/services"}

// Register adds the UI's pages to mux. Each is one response: the style and
// the script are inlined (a page costs no further requests, which a cold
// browser pays for dearly), the script allowed by its hash.
func Register(mux *http.ServeMux) {
	page, csp := inline()
	handle := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", csp)
		_, _ = w.Write(page)
	}
	for _, p := range Pages {
		mux.HandleFunc("GET "+p, handle)
	}
}

// inline returns index.html with app.css and app.js in it, and the content
// security policy that lets that script, and no other, run.
func inline() (page []byte, csp string) {
	read := func(name string) string {
		b, err := files.ReadFile("static/" + name)
		if err != nil {
			panic(err) // the embedded folder is part of the build
		}
		return string(b)
	}
	script := read("app.js")
	sum := sha256.Sum256([]byte(script))
	html := read("index.html")
	for _, r := range [][2]string{
		{`<link rel="stylesheet" href="app.css">`, "<style>\n" + read("app.css") + "</style>"},
		{`<script src="app.js"></script>`, "<script>" + script + "</script>"},
	} {
		if !strings.Contains(html, r[0]) {
			panic("ui: index.html lacks " + r[0])
		}
		html = strings.Replace(html, r[0], r[1], 1)
	}
	return []byte(html), "default-src 'self'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"
}
