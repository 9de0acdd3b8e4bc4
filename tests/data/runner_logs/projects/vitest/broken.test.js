// A test file that cannot load: Vitest reports the file, not a test.
import "./does-not-exist.js";
import { test } from "vitest";
test("never runs", () => {});
