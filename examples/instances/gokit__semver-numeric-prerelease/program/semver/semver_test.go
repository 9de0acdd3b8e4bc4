package semver

import "testing"

func TestParseFull(t *testing.T) {
	v, err := Parse("1.4.0-rc.2+exp.sha.5114f85")
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 1 || v.Minor != 4 || v.Patch != 0 || len(v.Pre) != 2 || v.Pre[0] != "rc" || v.Build != "exp.sha.5114f85" {
		t.Fatalf("got %#v", v)
	}
	if s := v.String(); s != "1.4.0-rc.2+exp.sha.5114f85" {
		t.Fatalf("String() = %s", s)
	}
}

func TestCompareCore(t *testing.T) {
	if Compare(MustParse("1.2.3"), MustParse("1.10.0")) != -1 {
		t.Fatal("1.2.3 should rank below 1.10.0")
	}
	if Compare(MustParse("2.0.0"), MustParse("2.0.0")) != 0 {
		t.Fatal("equal versions")
	}
}

func TestCompareReleaseAbovePrerelease(t *testing.T) {
	if Compare(MustParse("1.0.0"), MustParse("1.0.0-alpha")) != 1 {
		t.Fatal("1.0.0 should rank above 1.0.0-alpha")
	}
}
