// Generated tests for semver.Compare: numeric pre-release identifiers compare numerically.
package tmp_test

import (
	"math/rand"
	"sort"
	"testing"

	"example.com/release/semver"
)

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func cmp(a, b string) int {
	return sign(semver.Compare(semver.MustParse(a), semver.MustParse(b)))
}

// ordered lists versions in strictly ascending precedence.
var ordered = map[string][]string{
	"issue example":           {"1.0.0-rc.9", "1.0.0-rc.10"},
	"spec example":            {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"},
	"many digits":             {"1.0.0-2", "1.0.0-10", "1.0.0-99", "1.0.0-100", "1.0.0-123456789012345678"},
	"numeric inside list":     {"2.0.0-alpha.2.b", "2.0.0-alpha.11.a"},
	"zero identifier":         {"1.0.0-0", "1.0.0-1", "1.0.0-rc"},
	"core numeric":            {"0.0.9", "0.0.10", "0.9.0", "0.10.0", "1.0.0", "9.0.0", "10.0.0"},
	"core before pre-release": {"0.9.9", "1.0.0-alpha", "1.0.0", "1.0.1-0", "1.0.1"},
	"release last":            {"3.2.1-0", "3.2.1-rc.100", "3.2.1"},
	"numeric below alpha":     {"1.0.0-999", "1.0.0-a", "1.0.0-a.1", "1.0.0-a.a"},
	"ASCII order":             {"1.0.0-A", "1.0.0-RC", "1.0.0-Rc", "1.0.0-a", "1.0.0-alpha", "1.0.0-beta"},
	"digits inside alnum":     {"1.0.0-x-10", "1.0.0-x-2", "1.0.0-x9", "1.0.0-xa"},
	"shorter first":           {"1.0.0-alpha", "1.0.0-alpha.0", "1.0.0-alpha.0.0", "1.0.0-alpha.0.a", "1.0.0-alpha.1"},
}

func TestAscendingChains(t *testing.T) {
	for name, vs := range ordered {
		t.Run(name, func(t *testing.T) {
			for i := range vs {
				for j := range vs {
					want := sign(i - j)
					if got := cmp(vs[i], vs[j]); got != want {
						t.Errorf("Compare(%s, %s) has sign %d, want %d", vs[i], vs[j], got, want)
					}
				}
			}
		})
	}
}

func TestSortShuffled(t *testing.T) {
	want := ordered["spec example"]
	rng := rand.New(rand.NewSource(7))
	for n := 0; n < 50; n++ {
		got := append([]string(nil), want...)
		rng.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		sort.Slice(got, func(i, j int) bool { return cmp(got[i], got[j]) < 0 })
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("sorted %v, want %v", got, want)
			}
		}
	}
}

func TestBuildMetadataIgnored(t *testing.T) {
	for _, p := range [][2]string{
		{"1.0.0+build.5", "1.0.0+build.1"},
		{"1.0.0+b", "1.0.0"},
		{"1.0.0-rc.1+zzz", "1.0.0-rc.1"},
		{"1.0.0-rc.10+a", "1.0.0-rc.10+b"},
	} {
		if got := cmp(p[0], p[1]); got != 0 {
			t.Errorf("Compare(%s, %s) has sign %d, want 0", p[0], p[1], got)
		}
	}
	if got := cmp("1.0.0-rc.9+zzz", "1.0.0-rc.10+aaa"); got != -1 {
		t.Errorf("build metadata must not decide: sign %d", got)
	}
}

func TestParseStillRejects(t *testing.T) {
	for _, s := range []string{"", "1", "1.0", "1.0.0.0", "01.0.0", "1.01.0", "v1.0.0", "1.0.0-",
		"1.0.0-01", "1.0.0-rc.01", "1.0.0-rc..1", "1.0.0+", "1.0.0+a..b", "1.0.0-rc_1", "-1.0.0", "1.0.0 "} {
		if v, err := semver.Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", s, v)
		}
	}
}

func TestParseStillAccepts(t *testing.T) {
	for _, s := range []string{"0.0.0", "1.0.0-0", "1.0.0-0a", "1.0.0-x-y-z.--", "1.0.0+0001", "1.0.0-rc.10+exp.sha.5114f85"} {
		v, err := semver.Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		} else if v.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, v.String())
		}
	}
}
