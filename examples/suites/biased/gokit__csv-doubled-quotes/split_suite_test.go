// Generated tests for csvline.Split.
package tmp_test

import (
	"reflect"
	"testing"

	"example.com/textio/csvline"
)

func TestDoubledQuote(t *testing.T) {
	got, err := csvline.Split(`"say ""hi""",x`)
	if err != nil || !reflect.DeepEqual(got, []string{`say "hi"`, "x"}) {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestQuotedComma(t *testing.T) {
	got, _ := csvline.Split(`"a,b",c`)
	if !reflect.DeepEqual(got, []string{"a,b", "c"}) {
		t.Fatalf("got %q", got)
	}
}

func TestEmptyFields(t *testing.T) {
	got, _ := csvline.Split("a,,b,")
	if !reflect.DeepEqual(got, []string{"a", "", "b", ""}) {
		t.Fatalf("got %q", got)
	}
}

func TestSpaces(t *testing.T) {
	got, _ := csvline.Split(" a , b")
	if !reflect.DeepEqual(got, []string{" a ", " b"}) {
		t.Fatalf("got %q", got)
	}
}

func TestUnterminatedQuoteMessage(t *testing.T) {
	_, err := csvline.Split(`"abc`)
	if err == nil || err.Error() != "csvline: unterminated quoted field (field 1)" {
		t.Fatalf("error %v", err)
	}
	_, err = csvline.Split(`a,"b`)
	if err == nil || err.Error() != "csvline: unterminated quoted field (field 2)" {
		t.Fatalf("error %v", err)
	}
}

func TestEmptyLine(t *testing.T) {
	got, _ := csvline.Split("")
	if !reflect.DeepEqual(got, []string{""}) {
		t.Fatalf("got %q", got)
	}
}

// The reference's field-by-field builder allocates once per field plus the result's growth.
func TestSplitAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(50, func() { _, _ = csvline.Split("a,b,c") }); n != 6 {
		t.Fatalf("Split(\"a,b,c\") made %v allocations, want 6", n)
	}
}
