package storeextension

import (
	"bufio"
	"strings"
	"testing"
)

func TestEffectiveCap(t *testing.T) {
	for _, c := range []struct {
		status string
		want   bool
	}{
		{"Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n", true}, // root
		{"CapPrm:\t0000000000800000\nCapEff:\t0000000000000000\n", false},                                     // permitted, not effective
		{"CapEff:\t0000000000800000\n", true},                                                                 // setcap cap_sys_nice+ep
		{"CapEff:\t00000000a80425fb\n", false},                                                                // a container's default set
		{"CapEff:\tzz\n", false},
		{"Name:\tx\n", false},
	} {
		if got := effectiveCap(bufio.NewScanner(strings.NewReader(c.status)), capSysNice); got != c.want {
			t.Errorf("%q: %v, want %v", c.status, got, c.want)
		}
	}
}
