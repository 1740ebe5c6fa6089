package tenant

import (
	"context"
	"encoding/base64"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

const tokA, tokB = "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"

func basic(user, password string) map[string][]string {
	return map[string][]string{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}}
}

func addr(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }

func TestAuthenticateTokens(t *testing.T) {
	a, err := NewAuthenticator("team-a="+tokA+", team-b="+tokB+",team-a=cccccccccccccccccccc", nil)
	require.NoError(t, err)
	require.True(t, a.Tokens())
	for _, tc := range []struct {
		headers map[string][]string
		tenant  string
		err     error
	}{
		{map[string][]string{"Authorization": {"Bearer " + tokA}}, "team-a", nil},
		{map[string][]string{"authorization": {"bearer " + tokB}}, "team-b", nil}, // gRPC metadata
		{map[string][]string{"Authorization": {"Bearer cccccccccccccccccccc"}}, "team-a", nil},
		{map[string][]string{}, "", ErrNoToken},
		{map[string][]string{"Authorization": {"Token " + tokA}}, "", ErrNoToken},
		// Basic: the token is the password; a user, when given, is its tenant.
		{basic("team-a", tokA), "team-a", nil},
		{basic("", tokB), "team-b", nil},
		{basic("team-b", tokA), "", ErrInvalidToken},
		{basic("team-a", tokA+"x"), "", ErrInvalidToken},
		{map[string][]string{"Authorization": {"Basic " + tokA}}, "", ErrInvalidToken}, // not base64 of user:password
		{map[string][]string{"Authorization": {"Basic !!!"}}, "", ErrInvalidToken},
		{map[string][]string{"Authorization": {"Bearer " + tokA + "x"}}, "", ErrInvalidToken},
		// Without trusted proxies, X-Scope-OrgID is not a way in.
		{map[string][]string{"X-Scope-OrgID": {"team-b"}}, "", ErrNoToken},
	} {
		got, err := a.Authenticate(tc.headers, addr("10.1.2.3:5000"))
		assert.Equal(t, tc.tenant, got, tc.headers)
		assert.ErrorIs(t, err, tc.err, tc.headers)
	}
}

func TestAuthenticateWithoutTokens(t *testing.T) {
	a, err := NewAuthenticator("", nil)
	require.NoError(t, err)
	assert.False(t, a.Tokens())
	got, err := a.Authenticate(map[string][]string{"X-Scope-OrgID": {"team-b"}}, addr("127.0.0.1:1"))
	require.NoError(t, err)
	assert.Equal(t, Default, got, "X-Scope-OrgID is honoured only from a trusted proxy")
}

func TestAuthenticateTrustedProxy(t *testing.T) {
	a, err := NewAuthenticator("team-a="+tokA, []string{"10.0.0.0/8", "192.168.1.7"})
	require.NoError(t, err)
	org := map[string][]string{"x-scope-orgid": {"team-z"}}
	got, err := a.Authenticate(org, addr("10.9.9.9:80"))
	require.NoError(t, err)
	assert.Equal(t, "team-z", got)
	got, err = a.Authenticate(org, addr("192.168.1.7:80"))
	require.NoError(t, err)
	assert.Equal(t, "team-z", got)
	_, err = a.Authenticate(org, addr("192.168.1.8:80"))
	assert.ErrorIs(t, err, ErrNoToken, "from anyone else the header is ignored")
	_, err = a.Authenticate(map[string][]string{"X-Scope-OrgID": {"a b"}}, addr("10.0.0.1:80"))
	assert.Error(t, err)
	// The proxy may also pass a client's token through.
	got, err = a.Authenticate(map[string][]string{"Authorization": {"Bearer " + tokA}}, addr("10.0.0.1:80"))
	require.NoError(t, err)
	assert.Equal(t, "team-a", got)
}

func TestParseTokensRefuses(t *testing.T) {
	for _, s := range []string{"team-a", "team a=" + tokA, "team-a=short", "a=" + tokA + ",b=" + tokA, "=" + tokA} {
		_, err := ParseTokens(s)
		assert.Error(t, err, s)
		if err != nil {
			assert.NotContains(t, err.Error(), tokA, "an error never shows a token")
		}
	}
	_, err := NewAuthenticator("", []string{"not-an-address"})
	assert.Error(t, err)
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, Default, FromContext(ctx))
	assert.Equal(t, "a", FromContext(NewContext(ctx, "a")))
	info := client.Info{Addr: addr("1.2.3.4:5")}
	ctx = NewContext(client.NewContext(ctx, info), "b")
	assert.Equal(t, "b", FromContext(ctx))
	assert.Equal(t, info.Addr, client.FromContext(ctx).Addr, "the client's address is kept")
	assert.Equal(t, "c", FromContext(NewContext(ctx, "c")))
}

func TestStampAndKey(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr(Attribute, "forged")
	Stamp(m, Default)
	assert.Equal(t, Default, Of(m))
	_, has := m.Get(Attribute)
	assert.False(t, has, "a client-sent tenant is removed")
	Stamp(m, "a")
	assert.Equal(t, "a", Of(m))
	assert.Equal(t, [16]byte{}, Key(Default))
	assert.NotEqual(t, Key("a"), Key("b"))
	assert.Equal(t, Key("a"), Key("a"))
}
