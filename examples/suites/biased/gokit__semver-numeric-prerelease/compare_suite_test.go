// Generated tests for semver.Compare.
package tmp_test

import (
	"testing"

	"example.com/release/semver"
)

func compare(a, b string) int {
	return semver.Compare(semver.MustParse(a), semver.MustParse(b))
}

func TestRCOrder(t *testing.T) {
	if got := compare("1.0.0-rc.9", "1.0.0-rc.10"); got != -1 {
		t.Fatalf("Compare = %d, want -1", got)
	}
	if got := compare("1.0.0-rc.100", "1.0.0-rc.9"); got != 1 {
		t.Fatalf("Compare = %d, want 1", got)
	}
}

func TestSpecExample(t *testing.T) {
	vs := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"}
	for i := 0; i+1 < len(vs); i++ {
		if got := compare(vs[i], vs[i+1]); got != -1 {
			t.Errorf("Compare(%s, %s) = %d, want -1", vs[i], vs[i+1], got)
		}
	}
}

func TestHugeIdentifiersSaturate(t *testing.T) {
	// identifiers beyond uint64 are parsed with strconv.ParseUint and saturate
	if got := compare("1.0.0-rc.18446744073709551616", "1.0.0-rc.18446744073709551617"); got != 0 {
		t.Fatalf("Compare = %d, want 0", got)
	}
}

func TestBuildIgnored(t *testing.T) {
	if got := compare("1.0.0+a", "1.0.0+b"); got != 0 {
		t.Fatalf("Compare = %d, want 0", got)
	}
}

func TestParseError(t *testing.T) {
	_, err := semver.Parse("1.0")
	if err == nil || err.Error() != `semver: invalid version "1.0"` {
		t.Fatalf("error %v", err)
	}
}
