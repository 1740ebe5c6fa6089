// Command tracesift is the tracesift collector: an OpenTelemetry Collector
// distribution with tracesift's tail sampler, store and query API. With no
// --config it runs the all-in-one configuration (default.yaml) on the
// embedded ClickHouse engine.
package main

import (
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/otelcol"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	cmd := otelcol.NewCommand(collectorSettings(version))
	if args := os.Args[1:]; !hasConfigFlag(args) && (len(args) == 0 || strings.HasPrefix(args[0], "-")) {
		cmd.SetArgs(append([]string{"--config", defaultConfigURI}, args...))
	}
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func hasConfigFlag(args []string) bool {
	for _, a := range args {
		if a == "--config" || strings.HasPrefix(a, "--config=") {
			return true
		}
	}
	return false
}
