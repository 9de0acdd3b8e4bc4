package csvline

import (
	"reflect"
	"testing"
)

func TestSplitPlainFields(t *testing.T) {
	got, err := Split("id,name,city")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"id", "name", "city"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSplitQuotedComma(t *testing.T) {
	got, err := Split(`1,"Smith, John",London`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1", "Smith, John", "London"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestJoinQuotesWhenNeeded(t *testing.T) {
	if got, want := Join([]string{"a", "b,c", `say "hi"`}), `a,"b,c","say ""hi"""`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
