package store

import "go.opentelemetry.io/collector/pdata/pcommon"

// UnknownService names the service of a resource without service.name, as
// the OpenTelemetry SDKs name an unnamed one.
const UnknownService = "unknown_service"

// ServiceName is the service a resource's spans and logs are stored under:
// service.name, or UnknownService.
func ServiceName(attrs pcommon.Map) string {
	if v, ok := attrs.Get("service.name"); ok && v.AsString() != "" {
		return v.AsString()
	}
	return UnknownService
}

// HostKeys are the resource attributes that name a host, best first.
var HostKeys = []string{"host.name", "host.id", "k8s.pod.name"}

// HostName is the host a resource's spans and logs are stored under: the
// first of HostKeys that is set, or "".
func HostName(attrs pcommon.Map) string {
	for _, k := range HostKeys {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}
