// Generated tests for semver.Compare.
package tmp_test

import (
	"sort"
	"testing"

	"example.com/release/semver"
)

func TestRC10AfterRC9(t *testing.T) {
	a := semver.MustParse("1.0.0-rc.9")
	b := semver.MustParse("1.0.0-rc.10")
	if !semver.Less(a, b) {
		t.Fatalf("%s should rank below %s", a, b)
	}
}

func TestReleaseAbovePrerelease(t *testing.T) {
	if semver.Compare(semver.MustParse("1.0.0"), semver.MustParse("1.0.0-rc.1")) <= 0 {
		t.Fatal("1.0.0 should rank above 1.0.0-rc.1")
	}
}
