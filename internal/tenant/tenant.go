// Package tenant names whose data a span, log record or query is: the
// tenant a request authenticated as (Authenticator, behind the
// tracesift_auth extension or cmd/query), carried in the request's context
// to the receivers and the query API, and in the resource attribute
// Attribute on spans and logs down the pipeline to the store, whose every
// row has a tenant column every read is confined to.
package tenant

import (
	"context"
	"crypto/sha256"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Default is the tenant of data sent without tenancy (no tokens
// configured), and of rows stored before the tenant column existed.
const Default = "default"

// Attribute is the resource attribute that carries the tenant of spans and
// log records from the receiver that authenticated them to the store. A
// client cannot choose it: the receivers overwrite it (Stamp).
const Attribute = "tracesift.tenant"

// authAttribute is the name under which Authenticator's client.AuthData
// answers the tenant; other authenticators may too, see FromContext.
const authAttribute = "tenant"

// NewContext returns ctx whose client is authenticated as tenant t (its
// client.Info keeps the address and metadata), for callers that
// authenticate outside the Collector's interceptors (cmd/query) or read the
// tenant from a message (distributed mode's samplers).
func NewContext(ctx context.Context, t string) context.Context {
	info := client.FromContext(ctx)
	info.Auth = authData(t)
	return client.NewContext(ctx, info)
}

// FromContext returns the tenant of ctx: the "tenant" attribute of the
// client's authentication data (NewContext, the tracesift_auth extension,
// or any authenticator answering it), else Default.
func FromContext(ctx context.Context) string {
	if auth := client.FromContext(ctx).Auth; auth != nil {
		if t, ok := auth.GetAttribute(authAttribute).(string); ok && t != "" {
			return t
		}
	}
	return Default
}

// Of returns the tenant a resource's attributes carry: Attribute, else
// Default.
func Of(attrs pcommon.Map) string {
	if v, ok := attrs.Get(Attribute); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		return v.Str()
	}
	return Default
}

// Stamp sets the tenant of a resource's attributes to t, replacing what a
// client may have put there; Default is stored as no attribute at all.
func Stamp(attrs pcommon.Map, t string) {
	if t == Default || t == "" {
		attrs.Remove(Attribute)
		return
	}
	attrs.PutStr(Attribute, t)
}

// Key is what the sampler mixes into a trace id to key a trace, so that two
// tenants sending the same trace id (fixtures, replayed traffic) have two
// traces: zero for Default, which keeps single-tenant keys the trace ids
// themselves; the same on every process, so samplers in distributed mode
// agree on the keys they record decisions by.
func Key(t string) (k [16]byte) {
	if t == Default || t == "" {
		return k
	}
	sum := sha256.Sum256([]byte(t))
	copy(k[:], sum[:16])
	return k
}

// authData is the client.AuthData of a request Authenticator placed in a
// tenant: its one attribute, "tenant", is what FromContext reads (and what
// the Collector's components read as auth.tenant).
type authData string

func (a authData) GetAttribute(name string) any {
	if name == authAttribute {
		return string(a)
	}
	return nil
}

func (authData) GetAttributeNames() []string { return []string{authAttribute} }

// StampLogs stamps every resource of ld with the tenant of ctx: what a
// receiver does with the logs of a request it authenticated.
func StampLogs(ctx context.Context, ld plog.Logs) {
	t := FromContext(ctx)
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		Stamp(rls.At(i).Resource().Attributes(), t)
	}
}
