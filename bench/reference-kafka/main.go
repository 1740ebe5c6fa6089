// Command reference-kafka is the comparison point of `make bench-kafka`:
// the OpenTelemetry Collector's own Kafka path for tail sampling — the
// contrib kafka exporter with traces partitioned by trace id, the kafka
// receiver and the tail_sampling processor — and the otlp exporter that
// hands what it keeps to the benchmark's sink. A module of its own, so that
// contrib never reaches tracesift's binaries.
package main

import (
	"fmt"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/nopexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory(), kafkareceiver.NewFactory()); err != nil {
		return f, fmt.Errorf("receivers: %w", err)
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](tailsamplingprocessor.NewFactory()); err != nil {
		return f, fmt.Errorf("processors: %w", err)
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](kafkaexporter.NewFactory(), otlphttpexporter.NewFactory(),
		nopexporter.NewFactory()); err != nil {
		return f, fmt.Errorf("exporters: %w", err)
	}
	return f, nil
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "tracesift-bench-reference-kafka",
			Description: "OpenTelemetry Collector with otlp and kafka receivers, tail_sampling, kafka and otlphttp exporters (benchmark reference)",
			Version:     "bench",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			ProviderFactories: []confmap.ProviderFactory{
				envprovider.NewFactory(), fileprovider.NewFactory(), yamlprovider.NewFactory(),
			},
			DefaultScheme: "env",
		}},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
