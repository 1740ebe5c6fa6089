package main

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/bearertokenauthextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/oidcauthextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/pprofextension"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/nopexporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"

	"github.com/tracesift/tracesift/internal/exporter/kafkaexporter"
	"github.com/tracesift/tracesift/internal/exporter/storeexporter"
	"github.com/tracesift/tracesift/internal/extension/authextension"
	"github.com/tracesift/tracesift/internal/extension/limitsextension"
	"github.com/tracesift/tracesift/internal/extension/queryextension"
	"github.com/tracesift/tracesift/internal/extension/storeextension"
	"github.com/tracesift/tracesift/internal/processor/logsprocessor"
	"github.com/tracesift/tracesift/internal/receiver/kafkareceiver"
	"github.com/tracesift/tracesift/internal/receiver/loki"
	"github.com/tracesift/tracesift/internal/receiver/otlpraw"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// The health check answers from the components' statuses (the store's
// among them) only with this gate on; --feature-gates can still turn it off.
func init() {
	_ = featuregate.GlobalRegistry().Set("extension.healthcheck.useComponentStatus", true)
}

// defaultConfigURI names the built-in all-in-one configuration.
const defaultConfigURI = "tracesift:default"

//go:embed default.yaml
var defaultConfig []byte

func components() (otelcol.Factories, error) {
	f := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpraw.NewFactory(), otlpreceiver.NewFactory(),
		filelogreceiver.NewFactory(), loki.NewFactory(), kafkareceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](tailsampler.NewFactory(), logsprocessor.NewFactory()); err != nil {
		return f, err
	}
	// nop: a gateway's traces pipeline ends in its receiver, which produces
	// to Kafka itself.
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](storeexporter.NewFactory(), kafkaexporter.NewFactory(),
		nopexporter.NewFactory()); err != nil {
		return f, err
	}
	// file_storage: lets exporter sending queues and file_log checkpoints
	// survive a restart. bearertokenauth and oidc: for an identity provider
	// (their requests are the default tenant; tracesift_auth maps tokens to tenants).
	if f.Extensions, err = otelcol.MakeFactoryMap[extension.Factory](storeextension.NewFactory(), queryextension.NewFactory(), limitsextension.NewFactory(),
		authextension.NewFactory(), bearertokenauthextension.NewFactory(), oidcauthextension.NewFactory(),
		healthcheckextension.NewFactory(), pprofextension.NewFactory(), filestorage.NewFactory()); err != nil {
		return f, err
	}
	return f, nil
}

func providerSettings(uris ...string) otelcol.ConfigProviderSettings {
	return otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
		URIs: uris,
		ProviderFactories: []confmap.ProviderFactory{
			envprovider.NewFactory(), fileprovider.NewFactory(), yamlprovider.NewFactory(),
			confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return builtinProvider{} }),
			confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return newMemoryProvider() }),
		},
		DefaultScheme: "env",
	}}
}

func collectorSettings(version string) otelcol.CollectorSettings {
	return otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "tracesift",
			Description: "tracesift collector: OTLP in, tail sampling, traces and logs in ClickHouse, query API",
			Version:     version,
		},
		Factories:              components,
		ConfigProviderSettings: providerSettings(),
	}
}

// builtinProvider serves the all-in-one configuration under the scheme
// "tracesift", so the binary runs with no file at all.
type builtinProvider struct{}

func (builtinProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	if uri != defaultConfigURI {
		return nil, fmt.Errorf("unknown built-in configuration %q (the only one is %q)", uri, defaultConfigURI)
	}
	return confmap.NewRetrievedFromYAML(defaultConfig)
}

func (builtinProvider) Scheme() string                 { return "tracesift" }
func (builtinProvider) Shutdown(context.Context) error { return nil }
