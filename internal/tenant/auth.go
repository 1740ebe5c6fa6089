package tenant

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strings"
)

// Refusal reasons, as Authenticate's errors and their metric's attribute.
var (
	ErrNoToken      = errors.New("missing token: send Authorization: Bearer <token> (or Basic with the tenant and token as user and password)")
	ErrInvalidToken = errors.New("invalid token")
)

// validName is what a tenant may be called: it names rows and appears in
// logs, so no spaces, quotes or separators.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Authenticator says which tenant a request is: the one its bearer token is
// mapped to, or, from a trusted proxy, the one the proxy names in
// X-Scope-OrgID. Without tokens every other request is Default.
type Authenticator struct {
	// tokens maps the SHA-256 of each token to its tenant: a lookup of the
	// hash reveals nothing, by its timing, of how much of a token matched.
	tokens  map[[32]byte]string
	proxies []netip.Prefix
}

// ParseTokens reads "tenant=token,tenant=token,…" (the form of
// TRACESIFT_AUTH_TOKENS): a tenant may have several tokens (to rotate
// them), a token one tenant.
func ParseTokens(s string) (map[string]string, error) {
	out := map[string]string{} // token → tenant
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, token, ok := strings.Cut(item, "=")
		name, token = strings.TrimSpace(name), strings.TrimSpace(token)
		if !ok || token == "" {
			return nil, fmt.Errorf("tokens: %q is not tenant=token", redact(item))
		}
		if !validName.MatchString(name) {
			return nil, fmt.Errorf("tokens: tenant %q: a tenant is 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
		}
		if len(token) < 16 {
			return nil, fmt.Errorf("tokens: the token of tenant %q is %d characters; use at least 16 (e.g. openssl rand -hex 32)", name, len(token))
		}
		if other, dup := out[token]; dup && other != name {
			return nil, fmt.Errorf("tokens: tenants %q and %q have the same token", other, name)
		}
		out[token] = name
	}
	return out, nil
}

// redact shows the tenant part of a malformed tokens item, never a token.
func redact(item string) string {
	if name, _, ok := strings.Cut(item, "="); ok {
		return name + "=…"
	}
	if len(item) > 4 {
		return item[:4] + "…"
	}
	return item
}

// NewAuthenticator returns the authenticator of tokens ("tenant=token,…",
// empty for none) and trusted proxies (addresses or CIDR prefixes).
func NewAuthenticator(tokens string, trustedProxies []string) (*Authenticator, error) {
	byToken, err := ParseTokens(tokens)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{tokens: make(map[[32]byte]string, len(byToken))}
	for token, name := range byToken {
		a.tokens[sha256.Sum256([]byte(token))] = name
	}
	for _, p := range trustedProxies {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("trusted_proxies: %q is neither an address nor a CIDR prefix", p)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		a.proxies = append(a.proxies, prefix.Masked())
	}
	return a, nil
}

// Tokens reports whether tokens are configured, that is whether a request
// without a valid one is refused.
func (a *Authenticator) Tokens() bool { return len(a.tokens) > 0 }

// Authenticate returns the tenant of a request from addr with headers
// (HTTP headers or gRPC metadata; names in any case).
func (a *Authenticator) Authenticate(headers map[string][]string, addr net.Addr) (string, error) {
	if len(a.proxies) > 0 && a.trusted(addr) {
		if org := header(headers, "X-Scope-OrgID"); org != "" {
			if !validName.MatchString(org) {
				return "", fmt.Errorf("X-Scope-OrgID %q is not a tenant name", org)
			}
			return org, nil
		}
	}
	if len(a.tokens) == 0 {
		return Default, nil
	}
	auth := header(headers, "Authorization")
	if auth == "" {
		return "", ErrNoToken
	}
	scheme, token, _ := strings.Cut(auth, " ")
	token = strings.TrimSpace(token)
	user := ""
	switch {
	case strings.EqualFold(scheme, "Bearer"):
	case strings.EqualFold(scheme, "Basic"):
		// Clients with only basic auth (Promtail, Grafana data sources, the
		// Collector's basicauth client) send the token as the password.
		var ok bool
		if user, token, ok = basicCredentials(token); !ok {
			return "", ErrInvalidToken
		}
	default:
		return "", ErrNoToken
	}
	name, ok := a.tokens[sha256.Sum256([]byte(token))]
	if !ok || user != "" && user != name {
		// A user name, when given, must be the token's tenant.
		return "", ErrInvalidToken
	}
	return name, nil
}

// basicCredentials decodes the user and password of Basic credentials.
func basicCredentials(encoded string) (user, password string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}

func (a *Authenticator) trusted(addr net.Addr) bool {
	ip, ok := ipOf(addr)
	if !ok {
		return false
	}
	for _, p := range a.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ipOf returns the IP of a client's address: the Collector's HTTP servers
// give a *net.IPAddr, its gRPC servers a *net.TCPAddr.
func ipOf(addr net.Addr) (netip.Addr, bool) {
	var ip netip.Addr
	var ok bool
	switch v := addr.(type) {
	case nil:
	case *net.TCPAddr:
		ip, ok = netip.AddrFromSlice(v.IP)
	case *net.IPAddr:
		ip, ok = netip.AddrFromSlice(v.IP)
	default:
		if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
			ip, ok = ap.Addr(), true
		} else {
			ip, err = netip.ParseAddr(addr.String())
			ok = err == nil
		}
	}
	return ip.Unmap(), ok
}

// header returns the first value of a header, its name matched in any case
// (gRPC metadata is lower case, HTTP headers canonical).
func header(headers map[string][]string, name string) string {
	if v := headers[name]; len(v) > 0 {
		return v[0]
	}
	for k, v := range headers {
		if len(v) > 0 && strings.EqualFold(k, name) {
			return v[0]
		}
	}
	return ""
}
