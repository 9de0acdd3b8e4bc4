package sub

import "testing"

// The same name as a test of the parent package: only the package tells them apart.
func TestPasses(t *testing.T) {}
