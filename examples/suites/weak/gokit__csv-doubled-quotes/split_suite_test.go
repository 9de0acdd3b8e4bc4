// Generated test for csvline.Split: the example from the issue.
package tmp_test

import (
	"reflect"
	"testing"

	"example.com/textio/csvline"
)

func TestIssueExample(t *testing.T) {
	got, err := csvline.Split(`"say ""hi""",x`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`say "hi"`, "x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	got, _ = csvline.Split(`""""`)
	if want := []string{`"`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
