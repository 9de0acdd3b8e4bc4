// Generated tests for csvline.Split: a doubled quote inside a quoted field is one literal quote.
package tmp_test

import (
	"errors"
	"math/rand"
	"reflect"
	"testing"

	"example.com/textio/csvline"
)

func mustSplit(t *testing.T, line string) []string {
	t.Helper()
	got, err := csvline.Split(line)
	if err != nil {
		t.Fatalf("Split(%q): unexpected error %v", line, err)
	}
	return got
}

func TestSplitCases(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []string
	}{
		{"issue example", `"say ""hi""",x`, []string{`say "hi"`, "x"}},
		{"only a doubled quote", `""""`, []string{`"`}},
		{"quoted quotes between fields", `a,"""x""",b`, []string{"a", `"x"`, "b"}},
		{"doubled quote at field end", `"x"""`, []string{`x"`}},
		{"doubled quote at field start", `"""x"`, []string{`"x`}},
		{"doubled quote next to comma", `""",""",z`, []string{`","`, "z"}},
		{"empty quoted field", `a,"",b`, []string{"a", "", "b"}},
		{"empty quoted line", `""`, []string{""}},
		{"quoted comma", `"a,b",c`, []string{"a,b", "c"}},
		{"only commas quoted", `x,",,",y`, []string{"x", ",,", "y"}},
		{"plain fields", "id,name,city", []string{"id", "name", "city"}},
		{"empty fields inside", "a,,b", []string{"a", "", "b"}},
		{"empty last field", "a,b,", []string{"a", "b", ""}},
		{"empty first field", ",a", []string{"", "a"}},
		{"only a comma", ",", []string{"", ""}},
		{"spaces kept", " a , b ,c", []string{" a ", " b ", "c"}},
		{"spaces only", "  ,", []string{"  ", ""}},
		{"spaces inside quotes", `" a ",b`, []string{" a ", "b"}},
		{"non-ASCII", `"héllo, wörld",ü`, []string{"héllo, wörld", "ü"}},
		{"empty line", "", []string{""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustSplit(t, c.line); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Split(%q) = %q, want %q", c.line, got, c.want)
			}
		})
	}
}

func TestUnterminatedQuote(t *testing.T) {
	for _, line := range []string{`"abc`, `a,"b,c`, `"`, `"say ""hi""`, `x,""",y`} {
		if _, err := csvline.Split(line); !errors.Is(err, csvline.ErrUnterminatedQuote) {
			t.Errorf("Split(%q): error %v, want ErrUnterminatedQuote", line, err)
		}
	}
}

func TestJoinThenSplitRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewSource(20240611))
	alphabet := []string{"a", "b", " ", ",", `"`, "é"}
	for n := 0; n < 500; n++ {
		fields := make([]string, 1+rng.Intn(4))
		for i := range fields {
			for k := rng.Intn(5); k > 0; k-- {
				fields[i] += alphabet[rng.Intn(len(alphabet))]
			}
		}
		line := csvline.Join(fields)
		if got := mustSplit(t, line); !reflect.DeepEqual(got, fields) {
			t.Fatalf("Split(%q) = %q, want %q", line, got, fields)
		}
	}
}
