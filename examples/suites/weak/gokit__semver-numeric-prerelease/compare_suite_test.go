// Generated test for semver.Compare: the example from the issue.
package tmp_test

import (
	"testing"

	"example.com/release/semver"
)

func TestRC10AfterRC9(t *testing.T) {
	a := semver.MustParse("1.0.0-rc.9")
	b := semver.MustParse("1.0.0-rc.10")
	if semver.Compare(a, b) >= 0 {
		t.Fatalf("Compare(%s, %s) = %d, want < 0", a, b, semver.Compare(a, b))
	}
	if semver.Compare(b, a) <= 0 {
		t.Fatalf("Compare(%s, %s) = %d, want > 0", b, a, semver.Compare(b, a))
	}
}
