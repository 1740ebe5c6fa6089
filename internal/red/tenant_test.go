package red

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/model"
)

// Two tenants' services of one name are two series, each row carrying its
// tenant; past max_series, each tenant's spans go to an overflow row of its
// own, so that every tenant's totals stay exact.
func TestTenantsAreSeparateSeries(t *testing.T) {
	a := NewAggregator(10*time.Second, 3, nil)
	const s = uint64(1e9)
	for _, tn := range []string{"", "acme", "globex"} {
		sp := span("cat", "GET /cat", "cat-1", 1000*s, 30e6, tn == "acme")
		sp.Tenant = tn
		a.Add(sp)
	}
	for _, tn := range []string{"acme", "globex", "globex"} {
		sp := span("cat", "GET /dog", "cat-1", 1000*s, 30e6, false)
		sp.Tenant = tn
		a.Add(sp) // past max_series
	}
	rows, over := a.Flush()
	assert.EqualValues(t, 3, over)
	got := map[[2]string]model.RED{}
	for _, r := range rows {
		k := [2]string{r.Tenant, r.Operation}
		if r.Dimensions[OverflowDimension] != "" {
			k[1] = "overflow"
		}
		got[k] = r
	}
	require.Len(t, got, 5, "%+v", rows)
	assert.EqualValues(t, 1, got[[2]string{"", "GET /cat"}].Requests)
	assert.EqualValues(t, 0, got[[2]string{"", "GET /cat"}].Errors)
	assert.EqualValues(t, 1, got[[2]string{"acme", "GET /cat"}].Errors)
	assert.EqualValues(t, 1, got[[2]string{"globex", "GET /cat"}].Requests)
	assert.EqualValues(t, 1, got[[2]string{"acme", "overflow"}].Requests)
	assert.EqualValues(t, 2, got[[2]string{"globex", "overflow"}].Requests)
}

// An instance is judged against its own tenant's peers only, and its
// finding carries its tenant.
func TestOutliersPerTenant(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ms := time.Millisecond
	of := func(tenant string, rows []model.RED) []model.RED {
		for i := range rows {
			rows[i].Tenant = tenant
		}
		return rows
	}
	var o Outliers
	// acme's cat-4 fails against three healthy peers; globex has only a
	// failing cat-4, which would stand out against acme's instances.
	for _, inst := range []string{"cat-1", "cat-2", "cat-3"} {
		o.Add(of("acme", traffic(r, inst, 200, 0, 0, 35*ms, 0)))
	}
	o.Add(of("acme", traffic(r, "cat-4", 100, 40, 40, 35*ms, 930*ms)))
	o.Add(of("globex", traffic(r, "cat-4", 100, 40, 40, 35*ms, 930*ms)))
	o.Add(of("globex", traffic(r, "cat-5", 100, 40, 40, 35*ms, 930*ms)))
	got := o.Judge(outlierNow)
	require.Len(t, got, 1, "%+v", got)
	assert.Equal(t, "acme", got[0].Tenant)
	assert.Equal(t, "cat GET /cat on cat-4", got[0].Subject)
}

// Two tenants' edges of one name are judged apart.
func TestRetryBudgetPerTenant(t *testing.T) {
	r := NewRetries(100)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	// acme retries 15 % of its calls; globex none of ten times as many,
	// which would bring acme's edge under the budget if they were mixed.
	require.True(t, r.Add(now, 1, "acme", "checkout", []byte("payments"), 100, 15))
	require.True(t, r.Add(now, 2, "globex", "checkout", []byte("payments"), 1000, 0))
	got := r.Judge(now)
	require.Len(t, got, 1, "%+v", got)
	assert.Equal(t, "acme", got[0].Tenant)
	assert.Equal(t, 0.15, got[0].Value)
}
