package sub

import "testing"

func TestAfterPanic(t *testing.T) {}
