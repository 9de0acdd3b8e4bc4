// Package semver parses and orders Semantic Versions 2.0.0
// (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]).
//
// Precedence follows section 11 of the specification: the core numbers are
// compared numerically; a version with a pre-release ranks below the same
// version without one; pre-release identifiers are compared one by one,
// numeric identifiers numerically, alphanumeric ones in ASCII order, a numeric
// identifier below an alphanumeric one, and a shorter list of identifiers
// below a longer one it is a prefix of. Build metadata is ignored.
package semver

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed semantic version.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string // pre-release identifiers, nil for a release
	Build               string   // build metadata, without the '+'
}

// Parse parses a version such as "1.4.0-rc.2+exp.sha.5114f85" (no leading "v").
func Parse(s string) (Version, error) {
	var v Version
	rest, build, hasBuild := strings.Cut(s, "+")
	if hasBuild {
		if !validIdents(build, false) {
			return Version{}, fmt.Errorf("semver: invalid version %q", s)
		}
		v.Build = build
	}
	core, pre, hasPre := strings.Cut(rest, "-")
	if hasPre {
		if !validIdents(pre, true) {
			return Version{}, fmt.Errorf("semver: invalid version %q", s)
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("semver: invalid version %q", s)
	}
	nums := [3]*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if !isNumeric(p) || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("semver: invalid version %q", s)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return Version{}, fmt.Errorf("semver: invalid version %q", s)
		}
		*nums[i] = n
	}
	return v, nil
}

// MustParse is like Parse but panics on an invalid version.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// String formats v back into its canonical text.
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// Compare returns a negative number, zero or a positive number as a ranks
// below, equal to or above b (like strings.Compare).
func Compare(a, b Version) int {
	for _, d := range [3][2]uint64{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.Pre) == 0 && len(b.Pre) == 0:
		return 0
	case len(a.Pre) == 0:
		return 1
	case len(b.Pre) == 0:
		return -1
	}
	for i := 0; i < len(a.Pre) && i < len(b.Pre); i++ {
		if c := compareIdent(a.Pre[i], b.Pre[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a.Pre) < len(b.Pre):
		return -1
	case len(a.Pre) > len(b.Pre):
		return 1
	}
	return 0
}

// compareIdent orders two pre-release identifiers.
func compareIdent(x, y string) int {
	xNum, yNum := isNumeric(x), isNumeric(y)
	switch {
	case xNum && !yNum:
		return -1
	case !xNum && yNum:
		return 1
	}
	return strings.Compare(x, y)
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validIdents reports whether s is a dot-separated list of non-empty
// identifiers of [0-9A-Za-z-]; numeric pre-release identifiers may not have
// leading zeros.
func validIdents(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
		if pre && isNumeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}
