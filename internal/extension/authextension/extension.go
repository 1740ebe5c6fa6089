// Package authextension is the `tracesift_auth` extension: the server
// authenticator of the receivers and the query API that places each request
// in a tenant, by its bearer token or, from a trusted proxy, X-Scope-OrgID
// (internal/tenant).
package authextension

//go:generate mdatagen metadata.yaml

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/extension/authextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/tenant"
)

// Config is the configuration of the tracesift_auth extension:
//
//	extensions:
//	  tracesift_auth:
//	    tokens: ${env:TRACESIFT_AUTH_TOKENS:-}   # team-a=<token>,team-b=<token>
//	    trusted_proxies: [10.0.0.0/8]
//	receivers:
//	  tracesift_otlp:
//	    protocols:
//	      http:
//	        auth: {authenticator: tracesift_auth}
type Config struct {
	// Tokens maps bearer tokens to tenants, "tenant=token,tenant=token,…";
	// a tenant may have several tokens. When set, a request without one of
	// them (as a bearer token, or the password of basic credentials whose
	// user is empty or the tenant) is refused (401 / Unauthenticated). Empty: every request is the
	// tenant "default" (or, from a trusted proxy, its X-Scope-OrgID).
	Tokens configopaque.String `mapstructure:"tokens"`
	// TrustedProxies are the addresses or CIDR prefixes of proxies that
	// authenticate clients themselves and name their tenant in
	// X-Scope-OrgID; from anyone else the header is ignored.
	TrustedProxies []string `mapstructure:"trusted_proxies"`
}

var _ component.Config = (*Config)(nil)

// Validate reports malformed tokens or proxies (never showing a token).
func (c *Config) Validate() error {
	_, err := tenant.NewAuthenticator(string(c.Tokens), c.TrustedProxies)
	return err
}

func createDefaultConfig() component.Config { return &Config{} }

// NewFactory returns the factory of the tracesift_auth extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("tracesift_auth: unexpected config type %T", cfg)
	}
	a, err := tenant.NewAuthenticator(string(c.Tokens), c.TrustedProxies)
	if err != nil {
		return nil, fmt.Errorf("tracesift_auth: %w", err)
	}
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("tracesift_auth: creating self-metrics: %w", err)
	}
	e := &authExtension{auth: a, logger: set.Logger, tel: tel}
	for i, r := range reasonNames {
		e.byReason[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	return e, nil
}

const (
	reasonNoToken = iota
	reasonInvalidToken
	reasonBadOrgID
	numReasons
)

var reasonNames = [numReasons]string{"no_token", "invalid_token", "bad_org_id"}

type authExtension struct {
	auth     *tenant.Authenticator
	logger   *zap.Logger
	tel      *metadata.TelemetryBuilder
	byReason [numReasons]metric.AddOption
	// warned keeps the explanation to one log line; the counter says how often.
	warned atomic.Bool
}

var _ extensionauth.Server = (*authExtension)(nil)

// Start logs whether requests are authenticated, so that running open is a
// choice seen in the log.
func (e *authExtension) Start(context.Context, component.Host) error {
	if e.auth.Tokens() {
		e.logger.Info("Requests need a bearer token of a tenant (tracesift_auth tokens).")
	} else {
		e.logger.Info("No tokens configured (TRACESIFT_AUTH_TOKENS): every request is the tenant \"default\"; " +
			"anyone who reaches the ports reads and writes it.")
	}
	return nil
}

// Shutdown implements component.Component.
func (e *authExtension) Shutdown(context.Context) error {
	e.tel.Shutdown()
	return nil
}

// Authenticate implements extensionauth.Server: the client's address is in
// ctx (the Collector's servers add it before calling authenticators).
func (e *authExtension) Authenticate(ctx context.Context, headers map[string][]string) (context.Context, error) {
	t, err := e.auth.Authenticate(headers, client.FromContext(ctx).Addr)
	if err != nil {
		reason := reasonBadOrgID
		switch {
		case errors.Is(err, tenant.ErrNoToken):
			reason = reasonNoToken
		case errors.Is(err, tenant.ErrInvalidToken):
			reason = reasonInvalidToken
		}
		e.tel.TracesiftAuthRefused.Add(ctx, 1, e.byReason[reason])
		if e.warned.CompareAndSwap(false, true) {
			e.logger.Warn("Refusing a request that has no valid tenant token: it is answered 401 (gRPC Unauthenticated) "+
				"and counted in otelcol_tracesift_auth_refused by reason (this message is logged once).",
				zap.String("reason", reasonNames[reason]), zap.Error(err))
		}
		return ctx, err
	}
	return tenant.NewContext(ctx, t), nil
}
