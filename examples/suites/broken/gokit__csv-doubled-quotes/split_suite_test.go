// Generated tests for csvline.Split.
package tmp_test

import (
	"reflect"
	"testing"

	"example.com/textio/csvline"
)

func TestDoubledQuote(t *testing.T) {
	got, _ := csvline.Split(`"say ""hi""",x`)
	if want := []string{`say "hi"`, "x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTrailingComma(t *testing.T) {
	// wrong expectation: the last, empty field is part of the line
	got, _ := csvline.Split("a,b,")
	if want := []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEmptyLine(t *testing.T) {
	got, _ := csvline.Split("")
	if len(got) != 0 {
		t.Fatalf("got %q, want no fields", got)
	}
}
