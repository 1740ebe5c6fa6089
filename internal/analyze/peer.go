package analyze

import (
	"cmp"
	"strings"

	"github.com/tracesift/tracesift/internal/model"
)

// peerID names what a call calls, from its attributes: one attribute's
// value, or a database system and namespace (kept apart so that building
// the key does not allocate).
type peerID struct{ a, b string }

// String renders the peer: "payment", "postgresql/orders".
func (p peerID) String() string {
	if p.b == "" {
		return p.a
	}
	return p.a + "/" + p.b
}

// compare orders peers.
func (p peerID) compare(q peerID) int {
	if c := strings.Compare(p.a, q.a); c != 0 {
		return c
	}
	return strings.Compare(p.b, q.b)
}

// attrPeer names the peer of a call from its attributes, the first set of:
// peer.service, server.address, net.peer.name, rpc.service,
// db.system(.name) with db.namespace (or db.name),
// messaging.destination(.name); zero when none is.
func attrPeer(s *model.Span) peerID {
	a := s.Attributes
	if len(a) == 0 {
		return peerID{}
	}
	for _, key := range [...]string{"peer.service", "server.address", "net.peer.name", "rpc.service"} {
		if v := a[key]; v != "" {
			return peerID{a: v}
		}
	}
	if sys := dbSystem(s); sys != "" {
		return peerID{sys, cmp.Or(a["db.namespace"], a["db.name"])}
	}
	return peerID{a: cmp.Or(a["messaging.destination.name"], a["messaging.destination"])}
}

// dbSystem is the database system of a database call, "" when not one.
func dbSystem(s *model.Span) string {
	if len(s.Attributes) == 0 {
		return ""
	}
	if v := s.Attributes["db.system.name"]; v != "" {
		return v
	}
	return s.Attributes["db.system"]
}

// calleeService is the service of the callee of call span i: the service of
// its first child (by start) from another service, "" when the callee never
// reported.
func (ix *index) calleeService(i int32) string {
	own := ix.span(i).Service
	for _, c := range ix.children(i) {
		if svc := ix.span(c).Service; svc != "" && svc != own {
			return svc
		}
	}
	return ""
}

// isCall reports whether span i is a downstream call: a CLIENT or PRODUCER
// span.
func (ix *index) isCall(i int32) bool {
	k := ix.span(i).Kind
	return k == model.KindClient || k == model.KindProducer
}

// isEntry reports whether span i is an entry span: SERVER, CONSUMER, or a
// top-level span.
func (ix *index) isEntry(i int32) bool {
	k := ix.span(i).Kind
	return k == model.KindServer || k == model.KindConsumer || ix.parent[i] < 0
}
