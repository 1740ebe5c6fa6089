package store

import "go.opentelemetry.io/collector/pdata/pcommon"

// ServiceName is the service a resource's spans and logs are stored under:
// service.name, or "unknown_service" as the OpenTelemetry SDKs name an unnamed
// one.
func ServiceName(attrs pcommon.Map) string {
	if v, ok := attrs.Get("service.name"); ok && v.AsString() != "" {
		return v.AsString()
	}
	return "unknown_service"
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
