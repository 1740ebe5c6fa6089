package red

import (
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// population makes a series of n requests of which errs failed, slowN of the
// healthy ones slow (2 s), the rest 30 ms.
func population(instance, version string, n, errs, slowN int) model.RED {
	all, bad := Sketch{}, Sketch{}
	for i := range n {
		d := uint64(30 * time.Millisecond)
		if i >= errs && i < errs+slowN {
			d = uint64(2 * time.Second)
		}
		all.Add(d)
		if i < errs {
			bad.Add(d)
		}
	}
	return model.RED{Service: "cat", Operation: "GET /cat", Instance: instance,
		Dimensions: map[string]string{"service.version": version, "cloud.region": "eu"},
		Requests:   uint64(n), Errors: uint64(errs), Latency: all, ErrorLatency: bad}
}

// A canary version on one instance fails most; it tops the comparison, the
// region every request shares does not stand out.
func TestCompareFindsTheCanary(t *testing.T) {
	pop := []model.RED{
		population("cat-1", "1.0", 1000, 5, 5),
		population("cat-2", "1.0", 1000, 5, 5),
		population("cat-3", "1.0", 1000, 5, 5),
		population("cat-4", "1.1", 300, 90, 30), // the canary: errors and slow
	}
	c := Compare(Tally(pop, uint64(time.Second)))
	if c.Failing != 3*10+120 || c.Healthy != 3300-150 {
		t.Fatalf("failing %d healthy %d", c.Failing, c.Healthy)
	}
	top := c.Values[0]
	if !(top.Key == "instance" && top.Value == "cat-4" || top.Key == "service.version" && top.Value == "1.1") {
		t.Fatalf("top %+v", top)
	}
	if top.Failing != 120 || top.FailingShare < 0.72 || top.Lift < 5 {
		t.Errorf("top %+v", top)
	}
	for _, v := range c.Values {
		if v.Key == "cloud.region" && (v.Lift < 0.99 || v.Lift > 1.01) {
			t.Errorf("a value every request has is no signal: %+v", v)
		}
		if v.Key == "instance" && v.Value == "cat-1" && v.Lift > 0.5 {
			t.Errorf("a healthy instance: %+v", v)
		}
	}
}

func TestCompareEmptyAndAllHealthy(t *testing.T) {
	if c := Compare(nil); c.Failing != 0 || c.Healthy != 0 || len(c.Values) != 0 {
		t.Errorf("%+v", c)
	}
	c := Compare(Tally([]model.RED{population("a", "1", 10, 0, 0)}, uint64(time.Second)))
	if c.Failing != 0 || c.Healthy != 10 || c.Values[0].Lift != 0 {
		t.Errorf("%+v", c)
	}
}
