package sample

import "testing"

func TestPasses(t *testing.T) {}

func TestFails(t *testing.T) { t.Fatal("one is not two") }

func TestSkipped(t *testing.T) { t.Skip("not today") }

func TestSubtests(t *testing.T) {
	for _, name := range []string{"a b", "ünï", "x/y", "ok"} {
		name := name
		t.Run(name, func(t *testing.T) {
			if name == "a b" {
				t.Errorf("failed for %q", name)
			}
		})
	}
}

func TestPrints(t *testing.T) {
	t.Log("--- PASS: TestFake (0.00s)")
}

func TestPanics(t *testing.T) { panic("boom") }
