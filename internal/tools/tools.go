//go:build tools

// Package tools pins the code generators `make generate` runs, in a module of
// their own so that they add nothing to the product's dependencies.
package tools

import (
	_ "go.opentelemetry.io/collector/cmd/mdatagen"
)
